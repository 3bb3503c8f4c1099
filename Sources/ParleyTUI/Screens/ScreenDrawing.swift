import ParleyPictures
import ParleyRoom

/// A cell on the screen where the shell should show the text cursor (for typing).
public struct CursorPosition: Hashable, Sendable {
    /// Column, 0-based.
    public var column: Int
    /// Row, 0-based.
    public var row: Int

    /// A cursor position.
    public init(column: Int, row: Int) {
        self.column = column
        self.row = row
    }

    /// The tuple `Terminal.draw(_:cursor:)` takes.
    public var tuple: (column: Int, row: Int) { (column, row) }
}

extension CellStyle {
    /// This style with `top` laid over it: `top`'s colours where it sets one, the attributes of both.
    func overlaid(with top: CellStyle) -> CellStyle {
        CellStyle(
            foreground: top.foreground == .default ? foreground : top.foreground,
            background: top.background == .default ? background : top.background,
            attributes: attributes.union(top.attributes))
    }
}

/// The message every screen shows instead of itself when the terminal is below the minimum size.
public enum TooSmallMessage {
    /// "Parley needs at least 80x24; this terminal is 70x20".
    public static func text(size: TerminalSize, minimum: TerminalSize) -> String {
        "Parley needs at least \(minimum.columns)x\(minimum.rows); this terminal is \(size.columns)x\(size.rows)"
    }

    /// A screen of `size` with the message centred, plus `extra` lines (e.g. a pending question) below it.
    static func render(size: TerminalSize, minimum: TerminalSize, theme: Theme, extra: [String] = []) -> Screen {
        var screen = Screen(width: size.columns, height: size.rows)
        guard screen.width > 0, screen.height > 0 else { return screen }
        var lines = DisplayWidth.wrap(text(size: size, minimum: minimum), width: screen.width)
        var styles = [CellStyle](repeating: theme.style(.statusWarning), count: lines.count)
        for line in extra {
            let wrapped = DisplayWidth.wrap(line, width: screen.width)
            lines += wrapped
            styles += [CellStyle](repeating: theme.style(.text), count: wrapped.count)
        }
        let top = max(0, (screen.height - lines.count) / 2)
        for (offset, line) in lines.enumerated() {
            screen.writeCentered(line, row: top + offset, in: screen.bounds, style: styles[offset])
        }
        return screen
    }
}

extension Screen {
    /// Writes text centred in `rect` on `row`, cut with "…" to the rectangle's width.
    @discardableResult
    mutating func writeCentered(_ text: String, row: Int, in rect: CellRect, style: CellStyle) -> Int {
        let fitted = DisplayWidth.truncate(text, toWidth: rect.width)
        let column = rect.x + max(0, (rect.width - DisplayWidth.of(fitted)) / 2)
        return write(fitted, column: column, row: row, style: style, clip: rect)
    }

    /// Writes text at a cell, cut with "…" to `width` columns; returns the column after it.
    @discardableResult
    mutating func writeFitted(_ text: String, column: Int, row: Int, width: Int, style: CellStyle) -> Int {
        guard width > 0 else { return column }
        let fitted = DisplayWidth.truncate(text, toWidth: width)
        return write(
            fitted, column: column, row: row, style: style,
            clip: CellRect(x: column, y: row, width: width, height: 1))
    }

    /// Draws a box filled with `style` (an overlay's background) with a border and optional title.
    mutating func drawPanel(_ rect: CellRect, style: CellStyle, title: String?, titleStyle: CellStyle? = nil) {
        fill(rect, style: style)
        drawBox(rect, style: style, lines: .rounded, title: title, titleStyle: titleStyle)
    }
}

/// A piece of text in one style; lines built from runs are measured once and written run by run.
struct StyledRun {
    var text: String
    var style: CellStyle

    init(_ text: String, _ style: CellStyle) {
        self.text = text
        self.style = style
    }

    var width: Int { DisplayWidth.of(text) }
}

extension Screen {
    /// Writes runs one after another from a cell, clipped to `width` columns; returns the column after them.
    @discardableResult
    mutating func write(_ runs: [StyledRun], column: Int, row: Int, width: Int) -> Int {
        let clip = CellRect(x: column, y: row, width: max(0, width), height: 1)
        var current = column
        for run in runs where current < clip.maxX {
            current = write(run.text, column: current, row: row, style: run.style, clip: clip)
        }
        return min(current, clip.maxX)
    }
}

/// What part of a one-line text field is visible, scrolled sideways so the cursor stays inside the field.
struct FieldWindow: Equatable {
    /// The visible text.
    var text: String
    /// The cursor's column inside the field (0 = the field's first cell).
    var cursorColumn: Int

    /// The window over `text` (cursor after `cursor` characters) for a field `width` cells wide; the cursor may
    /// sit one past the last character, so a full field scrolls one cell early.
    init(text: String, cursor: Int, width: Int) {
        guard width > 0 else {
            self.text = ""
            self.cursorColumn = 0
            return
        }
        let characters = Array(text)
        let cursor = min(max(0, cursor), characters.count)
        var cursorCells = 0
        for character in characters[..<cursor] { cursorCells += DisplayWidth.of(character) }
        // Scroll so the cursor lands on the last cell at most.
        let wantedSkip = max(0, cursorCells - (width - 1))
        var skipped = 0
        var start = 0
        while start < characters.count, skipped < wantedSkip {
            skipped += DisplayWidth.of(characters[start])
            start += 1
        }
        var shown = ""
        var used = 0
        for character in characters[start...] {
            let cells = DisplayWidth.of(character)
            if used + cells > width { break }
            shown.append(character)
            used += cells
        }
        self.text = shown
        self.cursorColumn = min(width - 1, cursorCells - skipped)
    }
}
