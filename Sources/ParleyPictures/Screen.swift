import ParleyRoom

/// One character cell: a grapheme cluster and how it is painted.
public struct Cell: Hashable, Sendable {
    /// What the cell shows, as plain bytes (see `Glyph`).
    public var glyph: Glyph
    /// Colours and attributes.
    public var style: CellStyle
    /// True for the right half of a wide character; the terminal skips it, the text dump leaves it out.
    public internal(set) var isContinuation: Bool

    /// A cell showing one character.
    public init(_ character: Character = " ", style: CellStyle = .plain) {
        self.init(Glyph(character), style: style)
    }

    /// A cell showing a glyph.
    @inline(__always)
    public init(_ glyph: Glyph, style: CellStyle = .plain) {
        self.glyph = glyph
        self.style = style
        self.isContinuation = false
    }

    /// The grapheme cluster shown (a space for empty cells). Wide characters take this cell and the next.
    public var character: Character {
        get { glyph.character }
        set { glyph = Glyph(newValue) }
    }

    /// A space in the terminal's default colours.
    public static let blank = Cell()

    /// The colours a viewer sees in the top and bottom halves of a block cell ('▀', '▄', '█' or a space); nil for
    /// any other character. Video cells are read back through this, whichever of the four drew them.
    public var visibleHalves: (top: TerminalColor, bottom: TerminalColor)? {
        switch glyph.raw {
        case 0x2580: return (style.foreground, style.background)  // ▀
        case 0x2584: return (style.background, style.foreground)  // ▄
        case 0x2588: return (style.foreground, style.foreground)  // █
        case 0x20: return (style.background, style.background)
        default: return nil
        }
    }

    static func continuation(style: CellStyle) -> Cell {
        var cell = Cell(" ", style: style)
        cell.isContinuation = true
        return cell
    }
}

/// The six characters of a box border.
public struct BoxLines: Hashable, Sendable {
    /// Corners and edges, in the order top-left, top-right, bottom-left, bottom-right, horizontal, vertical.
    public var topLeft, topRight, bottomLeft, bottomRight, horizontal, vertical: Character

    /// A border from its six characters.
    public init(
        topLeft: Character, topRight: Character, bottomLeft: Character, bottomRight: Character,
        horizontal: Character, vertical: Character
    ) {
        self.topLeft = topLeft
        self.topRight = topRight
        self.bottomLeft = bottomLeft
        self.bottomRight = bottomRight
        self.horizontal = horizontal
        self.vertical = vertical
    }

    /// ┌─┐ thin lines.
    public static let light = BoxLines(
        topLeft: "┌", topRight: "┐", bottomLeft: "└", bottomRight: "┘",
        horizontal: "─", vertical: "│")
    /// ┏━┓ thick lines (e.g. the speaking tile, visible without colour).
    public static let heavy = BoxLines(
        topLeft: "┏", topRight: "┓", bottomLeft: "┗", bottomRight: "┛",
        horizontal: "━", vertical: "┃")
    /// ▛━▜ thick lines with solid corners: the dominant speaker's tile, unlike plain speaking even without colour.
    public static let dominant = BoxLines(
        topLeft: "▛", topRight: "▜", bottomLeft: "▙", bottomRight: "▟",
        horizontal: "━", vertical: "┃")
    /// ╭─╮ rounded corners.
    public static let rounded = BoxLines(
        topLeft: "╭", topRight: "╮", bottomLeft: "╰", bottomRight: "╯",
        horizontal: "─", vertical: "│")
    /// ╔═╗ double lines.
    public static let double = BoxLines(
        topLeft: "╔", topRight: "╗", bottomLeft: "╚", bottomRight: "╝",
        horizontal: "═", vertical: "║")
    /// +-+ plain ASCII.
    public static let ascii = BoxLines(
        topLeft: "+", topRight: "+", bottomLeft: "+", bottomRight: "+",
        horizontal: "-", vertical: "|")
}

/// A grid of cells the views draw into; pure data, so tests render without a terminal.
///
/// Writing is clipped to the grid (and to an optional rectangle), is width-aware (CJK and emoji take two cells)
/// and keeps wide characters whole: overwriting half of one blanks the other half.
public struct Screen: Hashable, Sendable {
    /// Width in columns.
    public let width: Int
    /// Height in rows.
    public let height: Int
    /// Cells row by row, `width * height` of them.
    public internal(set) var cells: [Cell]
    /// Pictures drawn in real pixels over placeholder cells (pixel modes), in drawing order.
    public internal(set) var pixelTiles: [PixelTile] = []

    /// A blank screen of the given size, filled with spaces in `style`.
    public init(width: Int, height: Int, style: CellStyle = .plain) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = [Cell](repeating: Cell(" ", style: style), count: self.width * self.height)
    }

    /// The whole screen as a rectangle.
    public var bounds: CellRect { CellRect(x: 0, y: 0, width: width, height: height) }

    /// The cell at a position; the position must be on the screen.
    public subscript(column: Int, row: Int) -> Cell {
        precondition(bounds.contains(column: column, row: row), "cell (\(column),\(row)) is outside \(bounds)")
        return cells[row * width + column]
    }

    /// What a control or other zero-width character shows as.
    static let replacementGlyph = Glyph(DisplayWidth.replacement)

    /// Puts one character at a cell and returns the columns it took (0 when the cell is off the screen).
    ///
    /// Controls become U+FFFD. A wide character that would stick out past `limit` (default: the right edge)
    /// becomes a space.
    @discardableResult
    public mutating func put(
        _ character: Character, column: Int, row: Int, style: CellStyle,
        limit: Int? = nil
    ) -> Int {
        guard bounds.contains(column: column, row: row) else { return 0 }
        // One scalar (nearly every cell): its glyph and width without a grapheme cluster's lookups.
        var scalars = character.unicodeScalars.makeIterator()
        let first = scalars.next()
        var columns: Int
        var glyph: Glyph
        if let first, scalars.next() == nil {
            columns = DisplayWidth.of(lone: first)
            glyph = Glyph(first)
        } else {
            columns = DisplayWidth.of(character)
            glyph = columns == 0 ? Self.replacementGlyph : Glyph(character)
        }
        if columns == 0 {
            glyph = Self.replacementGlyph
            columns = 1
        }
        if columns == 2 && column + 1 >= min(width, limit ?? width) {
            glyph = .space
            columns = 1
        }
        let index = row * width + column
        breakWideCharacter(at: index, column: column)
        cells[index] = Cell(glyph, style: style)
        if columns == 2 {
            breakWideCharacter(at: index + 1, column: column + 1)
            cells[index + 1] = .continuation(style: style)
        }
        return columns
    }

    /// Writes text starting at a cell, clipped to `clip` (default: the whole screen); returns the column after it.
    ///
    /// Text is not wrapped: newlines and other controls show as U+FFFD. Use `DisplayWidth.wrap` first.
    @discardableResult
    public mutating func write(
        _ text: String, column: Int, row: Int, style: CellStyle,
        clip: CellRect? = nil
    ) -> Int {
        let area = (clip ?? bounds).intersection(bounds)
        var current = column
        guard !area.isEmpty, row >= area.y, row < area.maxY else { return column + DisplayWidth.of(text) }
        // Printable ASCII (nearly all of the chrome, drawn again for every video frame): one cell a byte, without
        // the grapheme breaking and width lookups a Character costs.
        if DisplayWidth.isPrintableASCII(text) {
            for byte in text.utf8 {
                if current >= area.maxX { break }
                if current >= area.x {
                    let index = row * width + current
                    breakWideCharacter(at: index, column: current)
                    cells[index] = Cell(Glyph(Unicode.Scalar(byte)), style: style)
                }
                current += 1
            }
            return current
        }
        for character in text {
            let columns = max(1, DisplayWidth.of(character))
            if current >= area.maxX { break }
            if current < area.x {
                // A wide character cut by the left edge leaves a blank where its right half would be.
                if current + columns > area.x {
                    put(" ", column: area.x, row: row, style: style)
                }
                current += columns
                continue
            }
            current += put(character, column: current, row: row, style: style, limit: area.maxX)
        }
        return current
    }

    /// Fills a rectangle (clipped to the screen) with one character in one style.
    public mutating func fill(_ rect: CellRect, with character: Character = " ", style: CellStyle) {
        let area = rect.intersection(bounds)
        guard !area.isEmpty else { return }
        if DisplayWidth.of(character) == 1 {
            // One narrow character: the cell is made once.
            let cell = Cell(character, style: style)
            for row in area.y..<area.maxY {
                for column in area.x..<area.maxX {
                    let index = row * width + column
                    breakWideCharacter(at: index, column: column)
                    cells[index] = cell
                }
            }
            return
        }
        for row in area.y..<area.maxY {
            var column = area.x
            while column < area.maxX {
                column += max(1, put(character, column: column, row: row, style: style, limit: area.maxX))
            }
        }
    }

    /// Draws a border around the inside edge of `rect`, with an optional title in the top edge.
    ///
    /// Rectangles smaller than 2x2 draw nothing. The title is cut with "…" to fit between the corners.
    public mutating func drawBox(
        _ rect: CellRect, style: CellStyle, lines: BoxLines = .light,
        title: String? = nil, titleStyle: CellStyle? = nil
    ) {
        guard rect.width >= 2, rect.height >= 2 else { return }
        let right = rect.maxX - 1
        let bottom = rect.maxY - 1
        put(lines.topLeft, column: rect.x, row: rect.y, style: style)
        put(lines.topRight, column: right, row: rect.y, style: style)
        put(lines.bottomLeft, column: rect.x, row: bottom, style: style)
        put(lines.bottomRight, column: right, row: bottom, style: style)
        for column in (rect.x + 1)..<right {
            put(lines.horizontal, column: column, row: rect.y, style: style)
            put(lines.horizontal, column: column, row: bottom, style: style)
        }
        for row in (rect.y + 1)..<bottom {
            put(lines.vertical, column: rect.x, row: row, style: style)
            put(lines.vertical, column: right, row: row, style: style)
        }
        if let title, rect.width >= 5 {
            let text = " " + DisplayWidth.truncate(title, toWidth: rect.width - 4) + " "
            let clip = CellRect(x: rect.x + 1, y: rect.y, width: rect.width - 2, height: 1)
            write(text, column: rect.x + 1, row: rect.y, style: titleStyle ?? style, clip: clip)
        }
    }

    /// Draws a horizontal line of `length` cells from a cell.
    public mutating func drawHorizontalLine(
        column: Int, row: Int, length: Int, style: CellStyle,
        character: Character = "─"
    ) {
        fill(CellRect(x: column, y: row, width: length, height: 1), with: character, style: style)
    }

    /// Draws a vertical line of `length` cells from a cell.
    public mutating func drawVerticalLine(
        column: Int, row: Int, length: Int, style: CellStyle,
        character: Character = "│"
    ) {
        fill(CellRect(x: column, y: row, width: 1, height: length), with: character, style: style)
    }

    /// The characters of one row, without the right halves of wide characters and without trailing spaces.
    public func text(row: Int) -> String {
        precondition(row >= 0 && row < height, "row \(row) is outside 0..<\(height)")
        var line = ""
        for cell in cells[(row * width)..<((row + 1) * width)] where !cell.isContinuation {
            line.append(cell.character)
        }
        while line.last == " " { line.removeLast() }
        return line
    }

    /// Every row's characters joined with newlines, trailing spaces removed (as `tmux capture-pane -p` prints).
    /// This is what golden files hold.
    public var text: String {
        (0..<height).map { text(row: $0) }.joined(separator: "\n")
    }

    /// Blanks the other half of a wide character that the cell at `index` is part of, before it is overwritten.
    mutating func breakWideCharacter(at index: Int, column: Int) {
        if cells[index].isContinuation, column > 0 {
            cells[index - 1] = Cell(" ", style: cells[index - 1].style)
        }
        if column + 1 < width, cells[index + 1].isContinuation {
            cells[index + 1] = Cell(" ", style: cells[index + 1].style)
        }
    }

    /// Repairs wide characters cut by the edges of a rectangle that was just overwritten cell by cell in bulk.
    mutating func repairWideCharacters(around rect: CellRect) {
        let area = rect.intersection(bounds)
        guard !area.isEmpty else { return }
        for row in area.y..<area.maxY {
            let left = row * width + area.x
            if area.x > 0, !cells[left - 1].isContinuation, DisplayWidth.of(cells[left - 1].character) == 2 {
                cells[left - 1] = Cell(" ", style: cells[left - 1].style)
            }
            let right = row * width + area.maxX
            if area.maxX < width, cells[right].isContinuation {
                cells[right] = Cell(" ", style: cells[right].style)
            }
        }
    }
}
