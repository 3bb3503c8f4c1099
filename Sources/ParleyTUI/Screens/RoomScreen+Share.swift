import ParleyPictures
import ParleyRoom
import ParleyWire

/// How a shared terminal fits its tile.
enum ShareFit: Equatable {
    /// Every cell at its size (the tile is as large as the share, or larger).
    case exact
    /// A window of the share at its size, from `column`, `row` (fullscreen, smaller than the share: arrows pan).
    case panned(column: Int, row: Int)
    /// A window at size that keeps the cursor in view, from `column`, `row` (a grid tile smaller than the share).
    /// Sampling cells down drops letters from every word, so a window is what stays readable.
    case byCursor(column: Int, row: Int)
}

extension RoomScreen {
    /// Draws a shared terminal's screen in `rect` from its cells (never from the shared program's bytes): at size
    /// when it fits, panned when shown large, a window by the cursor in a smaller grid tile; the cursor as a reversed
    /// cell. Returns how it fit,
    /// for the tile's edge to say.
    func drawShare(
        _ share: TerminalScreen, fullscreen: Bool, pan: (column: Int, row: Int), into screen: inout Screen,
        in rect: CellRect
    ) -> ShareFit {
        screen.fill(rect, style: .plain)
        guard !rect.isEmpty else { return .exact }
        let fits = share.columns <= rect.width && share.rows <= rect.height
        let fit: ShareFit =
            fits
            ? .exact
            : fullscreen
                ? .panned(
                    column: max(0, min(pan.column, share.columns - rect.width)),
                    row: max(0, min(pan.row, share.rows - rect.height)))
                : .byCursor(
                    column: Self.windowStart(showing: share.cursor.column, of: share.columns, width: rect.width),
                    row: Self.windowStart(showing: share.cursor.row, of: share.rows, width: rect.height, fromEnd: true))
        let columns = min(rect.width, share.columns)
        let rows = min(rect.height, share.rows)
        for y in 0..<rows {
            var x = 0
            while x < columns {
                let (sourceRow, sourceColumn): (Int, Int)
                switch fit {
                case .exact: (sourceRow, sourceColumn) = (y, x)
                case .panned(let column, let row), .byCursor(let column, let row):
                    (sourceRow, sourceColumn) = (row + y, column + x)
                }
                var cell = share[sourceRow, sourceColumn]
                // The right half of a wide character cut off by the window's edge shows as a blank.
                if cell.width == 0 { cell = ShareCell("", width: 1, style: cell.style) }
                var style = Self.cellStyle(cell.style)
                if share.cursor.visible, share.cursor.row == sourceRow, share.cursor.column == sourceColumn {
                    style.attributes.formSymmetricDifference(.reverse)
                }
                // One grapheme at most: a hostile share's cell of several draws as its first.
                let character = cell.text.first ?? " "
                let limit = rect.x + columns
                let taken = screen.put(character, column: rect.x + x, row: rect.y + y, style: style, limit: limit)
                x += max(1, taken)
            }
        }
        return fit
    }

    /// Where a window of `width` over `length` cells starts so that `position` is in it: at 0 while it can be,
    /// else with `position` at its end (`fromEnd`: the cursor's row at the bottom, as a shell's prompt is) or its
    /// middle.
    static func windowStart(showing position: Int, of length: Int, width: Int, fromEnd: Bool = false) -> Int {
        guard length > width else { return 0 }
        let start = fromEnd ? position - width + 1 : position - width / 2
        return max(0, min(start, length - width))
    }

    /// A share's style in the viewer's terms: its default colours are the viewer's terminal's own, a palette or
    /// 24-bit colour is mapped to what the viewer's terminal shows when drawn; attributes the screen has no room
    /// for (italic, blink, strike) are left out.
    static func cellStyle(_ style: ShareStyle) -> CellStyle {
        var attributes: CellAttributes = []
        if style.attributes.contains(.bold) { attributes.insert(.bold) }
        if style.attributes.contains(.reverse) { attributes.insert(.reverse) }
        if !style.attributes.isDisjoint(with: [.underline, .doubleUnderline]) { attributes.insert(.underline) }
        return CellStyle(
            foreground: color(style.foreground), background: color(style.background), attributes: attributes)
    }

    static func color(_ color: ShareColor) -> TerminalColor {
        switch color {
        case .terminalDefault: .default
        case .indexed(let index): .palette(index)
        case .rgb(let red, let green, let blue): .rgb(red, green, blue)
        }
    }

    /// What the tile's bottom edge says of a share that does not fit at size.
    static func shareFitNote(_ fit: ShareFit, share: TerminalScreen, shown: CellRect) -> String? {
        switch fit {
        case .exact:
            return nil
        case .byCursor(let column, let row):
            let lastColumn = min(share.columns, column + shown.width)
            let lastRow = min(share.rows, row + shown.height)
            return " part by the cursor: \(column + 1)-\(lastColumn) of \(share.columns), rows \(row + 1)-\(lastRow) "
        case .panned(let column, let row):
            let lastColumn = min(share.columns, column + shown.width)
            let lastRow = min(share.rows, row + shown.height)
            return " columns \(column + 1)-\(lastColumn) of \(share.columns), rows \(row + 1)-\(lastRow) of "
                + "\(share.rows): arrows pan "
        }
    }
}
