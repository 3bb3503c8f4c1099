// A shared terminal's screen as cells (issue 52): what a sharer's emulator holds and a viewer draws. Viewers never
// see the program's bytes, only these values, so no escape sequence of the shared program reaches their terminal.

/// A cell's colour: the terminal's default, an entry of the 256-colour palette, or 24-bit.
public enum ShareColor: Hashable, Sendable {
    case terminalDefault
    case indexed(UInt8)
    case rgb(red: UInt8, green: UInt8, blue: UInt8)
}

/// A cell's attributes.
public struct ShareAttributes: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let bold = ShareAttributes(rawValue: 1)
    public static let underline = ShareAttributes(rawValue: 2)
    public static let doubleUnderline = ShareAttributes(rawValue: 4)
    public static let italic = ShareAttributes(rawValue: 8)
    public static let blink = ShareAttributes(rawValue: 16)
    public static let reverse = ShareAttributes(rawValue: 32)
    public static let strike = ShareAttributes(rawValue: 64)
}

/// How a cell is drawn: its colours and attributes.
public struct ShareStyle: Hashable, Sendable {
    public var foreground: ShareColor
    public var background: ShareColor
    public var attributes: ShareAttributes

    public init(
        foreground: ShareColor = .terminalDefault, background: ShareColor = .terminalDefault,
        attributes: ShareAttributes = []
    ) {
        self.foreground = foreground
        self.background = background
        self.attributes = attributes
    }

    public static let plain = ShareStyle()
}

/// One cell: its text (a character and its combining marks; empty for a blank), how many columns it takes (2 for a
/// wide character, 0 for the column a wide character's right half covers) and its style.
public struct ShareCell: Hashable, Sendable {
    public var text: String
    public var width: UInt8
    public var style: ShareStyle

    public init(_ text: String = "", width: UInt8 = 1, style: ShareStyle = .plain) {
        self.text = text
        self.width = width
        self.style = style
    }

    /// An empty cell in the default style.
    public static let blank = ShareCell()
}

/// Where the cursor is, and whether the program shows it.
public struct ShareCursor: Hashable, Sendable {
    public var row: Int
    public var column: Int
    public var visible: Bool

    public init(row: Int = 0, column: Int = 0, visible: Bool = true) {
        self.row = row
        self.column = column
        self.visible = visible
    }
}

/// A terminal's screen: `rows` × `columns` cells, row by row, and the cursor.
public struct TerminalScreen: Hashable, Sendable {
    public private(set) var rows: Int
    public private(set) var columns: Int
    public private(set) var cells: [ShareCell]
    public var cursor: ShareCursor

    /// A blank screen.
    public init(rows: Int, columns: Int, cursor: ShareCursor = ShareCursor()) {
        self.rows = max(0, rows)
        self.columns = max(0, columns)
        cells = Array(repeating: .blank, count: self.rows * self.columns)
        self.cursor = cursor
    }

    /// The cell at `row`, `column` (both in range).
    public subscript(row: Int, column: Int) -> ShareCell {
        get { cells[row * columns + column] }
        set { cells[row * columns + column] = newValue }
    }

    /// One row's text, wide characters once, trailing blanks kept.
    public func text(ofRow row: Int) -> String {
        var line = ""
        for column in 0..<columns {
            let cell = self[row, column]
            if cell.width == 0 { continue }
            line += cell.text.isEmpty ? " " : cell.text
        }
        return line
    }
}
