// The wire format of a shared terminal's screen (issue 52; docs/protocol.md "Terminal share updates"). Big-endian:
//
//   version u8 (2) | kind u8 (0 full screen, 1 changes) | sequence u32 | base u32 (the update changes apply to)
//   rows u16 | columns u16 | cursor row u16 | cursor column u16 | cursor flags u8 (1: visible) | spans u16
//   span: row u16 | column u16 | cells u16 | style | cells × (u8 width << 6 | text bytes, then the text's UTF-8)
//         or, with the cell count's top bit set (a run of plain text): one byte a cell, 0x21...0x7E or 0x20 a blank
//   style: attributes u8 | foreground colour | background colour
//   colour: u8 kind (0 the terminal's default; 1 palette, then its index u8; 2 24-bit, then red, green, blue)
//
// A span is a run of cells of one row in one style. A full screen starts blank and its spans fill it; changes apply
// to the screen as the update numbered `base` left it, at the same size. Every count and size is bounded before
// anything is read or allocated, and every byte is accounted for: garbage is an error naming what was wrong.

/// What a share update found wrong.
public enum ShareUpdateError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(what: String, needed: Int, available: Int)
    case unsupportedVersion(Int)
    case unknownKind(Int)
    case badSize(rows: Int, columns: Int)
    case cursorOutside(row: Int, column: Int, rows: Int, columns: Int)
    case spanOutside(row: Int, column: Int, cells: Int, rows: Int, columns: Int)
    case tooManyCells(Int)
    case badWidth(Int)
    case textTooLong(Int)
    case badText(row: Int, column: Int)
    case badTextRun(row: Int, column: Int, byte: UInt8)
    case unknownColorKind(Int)
    case trailingBytes(Int)
    case noBase(expected: UInt32, have: UInt32?)
    case sizeChanged(rows: Int, columns: Int, baseRows: Int, baseColumns: Int)
    case badFrameFlags(Int)

    public var description: String {
        switch self {
        case .truncated(let what, let needed, let available):
            "share update: \(what) needs \(needed) bytes, \(available) left"
        case .unsupportedVersion(let version):
            "share update: version \(version), this Parley reads version \(ShareUpdate.version)"
        case .unknownKind(let kind): "share update: kind \(kind) is neither a full screen (0) nor changes (1)"
        case .badSize(let rows, let columns):
            "share update: a \(columns)x\(rows) screen is outside 1...\(ShareUpdate.maxColumns) columns and "
                + "1...\(ShareUpdate.maxRows) rows"
        case .cursorOutside(let row, let column, let rows, let columns):
            "share update: the cursor at row \(row), column \(column) is outside the \(columns)x\(rows) screen"
        case .spanOutside(let row, let column, let cells, let rows, let columns):
            "share update: \(cells) cells at row \(row), column \(column) run outside the \(columns)x\(rows) screen"
        case .tooManyCells(let cells):
            "share update: \(cells) cells is more than the \(ShareUpdate.maxCells) an update may carry"
        case .badWidth(let width): "share update: a cell \(width) columns wide (0, 1 or 2)"
        case .textTooLong(let bytes):
            "share update: a cell's text of \(bytes) bytes is longer than \(ShareUpdate.maxTextBytes)"
        case .badText(let row, let column): "share update: the text at row \(row), column \(column) is not UTF-8"
        case .badTextRun(let row, let column, let byte):
            "share update: a text run's byte \(byte) at row \(row), column \(column) is not printable ASCII"
        case .unknownColorKind(let kind): "share update: colour kind \(kind) (0 default, 1 palette, 2 24-bit)"
        case .trailingBytes(let count): "share update: \(count) bytes after the last span"
        case .noBase(let expected, let have):
            "share update: changes to update \(expected), but the screen held is "
                + (have.map { "update \($0)" } ?? "none") + ": a full screen is needed"
        case .sizeChanged(let rows, let columns, let baseRows, let baseColumns):
            "share update: changes for a \(columns)x\(rows) screen to a \(baseColumns)x\(baseRows) one"
        case .badFrameFlags(let flags):
            "share frame: flags \(flags) (0 a full screen, 1 changes) do not match the update it carries"
        }
    }
}

/// A run of cells of one row in one style.
public struct ShareSpan: Hashable, Sendable {
    public var row: Int
    public var column: Int
    public var style: ShareStyle
    /// Each cell's text and width.
    public var cells: [(text: String, width: UInt8)]

    public init(row: Int, column: Int, style: ShareStyle, cells: [(text: String, width: UInt8)]) {
        self.row = row
        self.column = column
        self.style = style
        self.cells = cells
    }

    public static func == (lhs: ShareSpan, rhs: ShareSpan) -> Bool {
        lhs.row == rhs.row && lhs.column == rhs.column && lhs.style == rhs.style
            && lhs.cells.elementsEqual(rhs.cells) { $0.text == $1.text && $0.width == $1.width }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(row)
        hasher.combine(column)
        hasher.combine(style)
        for cell in cells {
            hasher.combine(cell.text)
            hasher.combine(cell.width)
        }
    }
}

/// One numbered update of a shared screen: a full screen, or the cells that changed since update `base`.
public struct ShareUpdate: Hashable, Sendable {
    public enum Kind: UInt8, Sendable {
        case fullScreen = 0
        case changes = 1
    }

    /// The largest screen shared (columns, rows), and the cells one update carries at most (a whole such screen).
    public static let maxColumns = 400
    public static let maxRows = 200
    public static let maxCells = maxColumns * maxRows
    /// A cell's text at most: a character and its combining marks in UTF-8.
    public static let maxTextBytes = 24
    /// The format's version.
    public static let version: UInt8 = 2

    public var kind: Kind
    public var sequence: UInt32
    /// For changes: the update they apply to.
    public var base: UInt32
    public var rows: Int
    public var columns: Int
    public var cursor: ShareCursor
    public var spans: [ShareSpan]

    public init(
        kind: Kind, sequence: UInt32, base: UInt32 = 0, rows: Int, columns: Int, cursor: ShareCursor,
        spans: [ShareSpan]
    ) {
        self.kind = kind
        self.sequence = sequence
        self.base = base
        self.rows = rows
        self.columns = columns
        self.cursor = cursor
        self.spans = spans
    }

    // MARK: - Building updates

    /// The update that takes a viewer from `old` (the screen update `sequence - 1` left; nil: none) to `new`: a full
    /// screen when there is no old one or its size differs, otherwise the cells that changed.
    public static func between(_ old: TerminalScreen?, _ new: TerminalScreen, sequence: UInt32) -> ShareUpdate {
        guard let old, old.rows == new.rows, old.columns == new.columns else {
            return ShareUpdate(
                kind: .fullScreen, sequence: sequence, rows: new.rows, columns: new.columns, cursor: new.cursor,
                spans: spans(of: new) { _, cell in cell != .blank })
        }
        return ShareUpdate(
            kind: .changes, sequence: sequence, base: sequence &- 1, rows: new.rows, columns: new.columns,
            cursor: new.cursor, spans: spans(of: new) { index, cell in old.cells[index] != cell })
    }

    /// Spans covering every cell `include` picks, row by row; a gap of up to 3 cells in the same style is carried
    /// along rather than starting a new span (a span's header costs more).
    static func spans(of screen: TerminalScreen, include: (Int, ShareCell) -> Bool) -> [ShareSpan] {
        var spans: [ShareSpan] = []
        for row in 0..<screen.rows {
            var current: ShareSpan?
            // The cells left out since the current span's end, while they could still ride along; nil once one of
            // another style came between.
            var gap: [(text: String, width: UInt8)]? = []
            for column in 0..<screen.columns {
                let index = row * screen.columns + column
                let cell = screen.cells[index]
                if include(index, cell) {
                    if var span = current, let carried = gap, carried.count <= 3, span.style == cell.style {
                        span.cells += carried
                        span.cells.append((cell.text, cell.width))
                        current = span
                    } else {
                        if let span = current { spans.append(span) }
                        current = ShareSpan(
                            row: row, column: column, style: cell.style, cells: [(cell.text, cell.width)])
                    }
                    gap = []
                } else if let span = current, cell.style == span.style {
                    gap?.append((cell.text, cell.width))
                } else {
                    gap = nil
                }
            }
            if let span = current { spans.append(span) }
        }
        return spans
    }

    // MARK: - Applying

    /// The screen after this update: a full screen on its own, changes on `screen` as update `base` left it
    /// (`heldSequence`). Throws when the changes do not fit what is held (a lost update: ask for a full screen).
    public func apply(to screen: TerminalScreen?, heldSequence: UInt32?) throws(ShareUpdateError) -> TerminalScreen {
        var next: TerminalScreen
        switch kind {
        case .fullScreen:
            next = TerminalScreen(rows: rows, columns: columns)
        case .changes:
            guard let screen, heldSequence == base else { throw .noBase(expected: base, have: heldSequence) }
            guard screen.rows == rows, screen.columns == columns else {
                throw .sizeChanged(rows: rows, columns: columns, baseRows: screen.rows, baseColumns: screen.columns)
            }
            next = screen
        }
        for span in spans {
            for (offset, cell) in span.cells.enumerated() {
                next[span.row, span.column + offset] = ShareCell(cell.text, width: cell.width, style: span.style)
            }
        }
        next.cursor = cursor
        return next
    }

    // MARK: - Wire

    /// The update's bytes.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [Self.version, kind.rawValue]
        bytes.appendU32(sequence)
        bytes.appendU32(base)
        bytes.appendU16(UInt16(clamping: rows))
        bytes.appendU16(UInt16(clamping: columns))
        bytes.appendU16(UInt16(clamping: cursor.row))
        bytes.appendU16(UInt16(clamping: cursor.column))
        bytes.append(cursor.visible ? 1 : 0)
        bytes.appendU16(UInt16(clamping: spans.count))
        for span in spans {
            bytes.appendU16(UInt16(clamping: span.row))
            bytes.appendU16(UInt16(clamping: span.column))
            let isText = Self.isTextRun(span)
            bytes.appendU16(UInt16(clamping: span.cells.count) | (isText ? Self.textRunFlag : 0))
            bytes.append(span.style.attributes.rawValue)
            Self.append(span.style.foreground, to: &bytes)
            Self.append(span.style.background, to: &bytes)
            if isText {
                for cell in span.cells { bytes.append(cell.text.utf8.first ?? 0x20) }
                continue
            }
            for cell in span.cells {
                let text = Array(cell.text.utf8.prefix(Self.maxTextBytes))
                bytes.append(min(cell.width, 2) << 6 | UInt8(text.count))
                bytes += text
            }
        }
        return bytes
    }

    /// Set in a span's cell count: its cells are plain text, one byte each (version 2).
    static let textRunFlag: UInt16 = 0x8000

    /// Whether every cell of `span` is one column of printable ASCII or blank: sent one byte a cell.
    static func isTextRun(_ span: ShareSpan) -> Bool {
        span.cells.allSatisfy { cell in
            guard cell.width == 1 else { return false }
            let utf8 = cell.text.utf8
            return utf8.isEmpty || (utf8.count == 1 && (0x21...0x7E).contains(utf8.first!))
        }
    }

    static func append(_ color: ShareColor, to bytes: inout [UInt8]) {
        switch color {
        case .terminalDefault: bytes.append(0)
        case .indexed(let index): bytes += [1, index]
        case .rgb(let red, let green, let blue): bytes += [2, red, green, blue]
        }
    }

    /// Reads an update, every field checked against its bounds.
    public init(decoding bytes: [UInt8]) throws(ShareUpdateError) {
        var reader = ShareReader(bytes: bytes)
        let version = try reader.u8("the header")
        guard version == Self.version else { throw .unsupportedVersion(Int(version)) }
        let kindByte = try reader.u8("the header")
        guard let kind = Kind(rawValue: kindByte) else { throw .unknownKind(Int(kindByte)) }
        self.kind = kind
        sequence = try reader.u32("the header")
        base = try reader.u32("the header")
        rows = Int(try reader.u16("the header"))
        columns = Int(try reader.u16("the header"))
        guard (1...Self.maxRows).contains(rows), (1...Self.maxColumns).contains(columns) else {
            throw .badSize(rows: rows, columns: columns)
        }
        let cursorRow = Int(try reader.u16("the cursor"))
        let cursorColumn = Int(try reader.u16("the cursor"))
        let visible = try reader.u8("the cursor") & 1 == 1
        guard cursorRow < rows, cursorColumn <= columns else {
            throw .cursorOutside(row: cursorRow, column: cursorColumn, rows: rows, columns: columns)
        }
        cursor = ShareCursor(row: cursorRow, column: cursorColumn, visible: visible)
        let spanCount = Int(try reader.u16("the span count"))
        guard spanCount <= Self.maxCells else { throw .tooManyCells(spanCount) }
        var spans: [ShareSpan] = []
        var cellsSeen = 0
        for _ in 0..<spanCount {
            let row = Int(try reader.u16("a span"))
            let column = Int(try reader.u16("a span"))
            let countField = try reader.u16("a span")
            let isText = countField & Self.textRunFlag != 0
            let count = Int(countField & ~Self.textRunFlag)
            guard count >= 1, row < rows, column + count <= columns else {
                throw .spanOutside(row: row, column: column, cells: count, rows: rows, columns: columns)
            }
            cellsSeen += count
            guard cellsSeen <= Self.maxCells else { throw .tooManyCells(cellsSeen) }
            let attributes = ShareAttributes(rawValue: try reader.u8("a span's style"))
            let foreground = try reader.color()
            let background = try reader.color()
            var cells: [(text: String, width: UInt8)] = []
            cells.reserveCapacity(count)
            if isText {
                // A run of plain text: one byte a cell, a space for a blank.
                for (offset, byte) in try reader.bytes(count, "a span's text").enumerated() {
                    guard (0x20...0x7E).contains(byte) else {
                        throw .badTextRun(row: row, column: column + offset, byte: byte)
                    }
                    cells.append((byte == 0x20 ? "" : String(UnicodeScalar(byte)), 1))
                }
            }
            for offset in 0..<(isText ? 0 : count) {
                let header = try reader.u8("a cell")
                let width = header >> 6
                guard width <= 2 else { throw .badWidth(Int(width)) }
                let length = Int(header & 0x3F)
                guard length <= Self.maxTextBytes else { throw .textTooLong(length) }
                let textBytes = try reader.bytes(length, "a cell's text")
                guard let text = String(validating: textBytes, as: UTF8.self) else {
                    throw .badText(row: row, column: column + offset)
                }
                cells.append((text, width))
            }
            spans.append(
                ShareSpan(
                    row: row, column: column,
                    style: ShareStyle(foreground: foreground, background: background, attributes: attributes),
                    cells: cells))
        }
        guard reader.remaining == 0 else { throw .trailingBytes(reader.remaining) }
        self.spans = spans
    }
}

/// Reads big-endian fields off an update, each read checked.
struct ShareReader {
    let bytes: [UInt8]
    var offset = 0

    var remaining: Int { bytes.count - offset }

    mutating func bytes(_ count: Int, _ what: String) throws(ShareUpdateError) -> ArraySlice<UInt8> {
        guard remaining >= count else { throw .truncated(what: what, needed: count, available: remaining) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8(_ what: String) throws(ShareUpdateError) -> UInt8 {
        let one = try bytes(1, what)
        return one[one.startIndex]
    }

    mutating func u16(_ what: String) throws(ShareUpdateError) -> UInt16 {
        let two = try bytes(2, what)
        return UInt16(two[two.startIndex]) << 8 | UInt16(two[two.startIndex + 1])
    }

    mutating func u32(_ what: String) throws(ShareUpdateError) -> UInt32 {
        UInt32(try u16(what)) << 16 | UInt32(try u16(what))
    }

    mutating func color() throws(ShareUpdateError) -> ShareColor {
        let kind = try u8("a colour")
        switch kind {
        case 0: return .terminalDefault
        case 1: return .indexed(try u8("a palette colour"))
        case 2:
            let rgb = try bytes(3, "a 24-bit colour")
            return .rgb(red: rgb[rgb.startIndex], green: rgb[rgb.startIndex + 1], blue: rgb[rgb.startIndex + 2])
        default: throw .unknownColorKind(Int(kind))
        }
    }
}
