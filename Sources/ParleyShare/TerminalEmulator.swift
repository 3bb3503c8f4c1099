import CVTermShim
import ParleyWire

/// Why an emulator could not be made.
public enum TerminalEmulatorError: Error, Equatable, Sendable, CustomStringConvertible {
    case badSize(rows: Int, columns: Int)
    case outOfMemory

    public var description: String {
        switch self {
        case .badSize(let rows, let columns):
            "a shared terminal is 1...\(ShareUpdate.maxColumns) columns by 1...\(ShareUpdate.maxRows) rows, "
                + "not \(columns)x\(rows)"
        case .outOfMemory: "libvterm could not make a terminal"
        }
    }
}

/// The sharer's terminal emulator (libvterm's screen layer): takes the shared program's output and holds its screen
/// as cells. Owned by one task; not thread-safe, as libvterm is not.
public final class TerminalEmulator {
    private let term: OpaquePointer
    public private(set) var rows: Int
    public private(set) var columns: Int

    /// A blank terminal of `rows` × `columns` (within `ShareUpdate`'s bounds).
    public init(rows: Int, columns: Int) throws(TerminalEmulatorError) {
        try Self.check(rows: rows, columns: columns)
        guard let term = parley_vterm_new(Int32(rows), Int32(columns)) else { throw .outOfMemory }
        self.term = term
        self.rows = rows
        self.columns = columns
    }

    deinit { parley_vterm_free(term) }

    /// A size within `ShareUpdate`'s bounds, or the error naming them.
    static func check(rows: Int, columns: Int) throws(TerminalEmulatorError) {
        guard (1...ShareUpdate.maxRows).contains(rows), (1...ShareUpdate.maxColumns).contains(columns) else {
            throw .badSize(rows: rows, columns: columns)
        }
    }

    /// The start of a UTF-8 character the last write ended inside (a pseudo-terminal's reads cut anywhere; libvterm
    /// would draw each part as a replacement character), held for the next write.
    private var partialCharacter: [UInt8] = []

    /// Feeds the program's output.
    public func write(_ output: [UInt8]) {
        let bytes = partialCharacter + output
        let complete = Self.completeUTF8Prefix(bytes)
        partialCharacter = Array(bytes[complete...])
        feed(Array(bytes[..<complete]))
    }

    /// How many of `bytes` end on a character boundary: all but a last character's start that is not all there.
    static func completeUTF8Prefix(_ bytes: [UInt8]) -> Int {
        guard !bytes.isEmpty else { return 0 }
        for back in 1...min(3, bytes.count) {
            let byte = bytes[bytes.count - back]
            guard byte & 0xC0 == 0x80 else {
                // A lead byte: 110xxxxx starts 2 bytes, 1110xxxx 3, 11110xxx 4; ASCII ends what came before.
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                return length > back ? bytes.count - back : bytes.count
            }
        }
        return bytes.count
    }

    private func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                var offset = 0
                while offset < chars.count, let base = chars.baseAddress {
                    let taken = parley_vterm_write(term, base + offset, chars.count - offset)
                    if taken == 0 { break }
                    offset += taken
                }
            }
        }
    }

    /// Changes the terminal's size (the program is told through its pseudo-terminal by whoever owns that).
    public func resize(rows: Int, columns: Int) throws(TerminalEmulatorError) {
        try Self.check(rows: rows, columns: columns)
        parley_vterm_resize(term, Int32(rows), Int32(columns))
        self.rows = rows
        self.columns = columns
    }

    /// What the terminal answered the program with since the last call (device attribute and cursor position
    /// reports): the owner writes it to the program's input.
    public func takeReplies() -> [UInt8] {
        var replies: [UInt8] = []
        var chunk = [CChar](repeating: 0, count: 4_096)
        while true {
            let taken = chunk.withUnsafeMutableBufferPointer { buffer in
                parley_vterm_take_replies(term, buffer.baseAddress, buffer.count)
            }
            if taken == 0 { return replies }
            replies += chunk[0..<taken].map { UInt8(bitPattern: $0) }
        }
    }

    /// Reply bytes dropped because 64 KiB were already waiting (a program that asks and never reads).
    public var repliesDropped: Int { parley_vterm_replies_dropped(term) }

    /// The title the program last set (OSC 0 or 2).
    public var title: String { String(cString: parley_vterm_title(term)) }

    /// The screen now.
    public func screen() -> TerminalScreen {
        var cursorRow: Int32 = 0
        var cursorColumn: Int32 = 0
        var visible: Int32 = 1
        parley_vterm_cursor(term, &cursorRow, &cursorColumn, &visible)
        var screen = TerminalScreen(
            rows: rows, columns: columns,
            cursor: ShareCursor(row: Int(cursorRow), column: Int(cursorColumn), visible: visible != 0))
        var cell = ParleyVTermCell()
        for row in 0..<rows {
            for column in 0..<columns where parley_vterm_cell(term, Int32(row), Int32(column), &cell) != 0 {
                screen[row, column] = Self.shareCell(cell)
            }
            Self.mendWideCharacters(in: &screen, row: row)
        }
        return screen
    }

    /// Makes every wide character a pair a terminal can draw: its right half (width 0) takes its style, and a half
    /// left alone (libvterm keeps a wide character whose right half was written over, and the right half of one
    /// whose left half was) is a blank, as a terminal shows it.
    static func mendWideCharacters(in screen: inout TerminalScreen, row: Int) {
        for column in 0..<screen.columns {
            var cell = screen[row, column]
            // libvterm keeps a wide cell's width when a narrow character or an erase takes its place.
            if cell.width == 2, cell.text.unicodeScalars.first.map({ parley_char_width($0.value) != 2 }) ?? true {
                cell.width = 1
                screen[row, column] = cell
            }
            if cell.width == 2 {
                if column + 1 < screen.columns, screen[row, column + 1].width == 0 {
                    screen[row, column + 1].style = cell.style
                } else {
                    screen[row, column] = ShareCell("", width: 1, style: cell.style)
                }
            } else if cell.width == 0, column == 0 || screen[row, column - 1].width != 2 {
                screen[row, column] = ShareCell("", width: 1, style: cell.style)
            }
        }
    }

    static func shareCell(_ cell: ParleyVTermCell) -> ShareCell {
        let scalars = withUnsafeBytes(of: cell.chars) { raw in Array(raw.bindMemory(to: UInt32.self)) }
        let style = ShareStyle(
            foreground: color(kind: cell.fg_kind, value: cell.fg),
            background: color(kind: cell.bg_kind, value: cell.bg),
            attributes: ShareAttributes(rawValue: UInt8(truncatingIfNeeded: cell.attributes)))
        if scalars[0] == UInt32.max { return ShareCell("", width: 0, style: style) }
        var text = ""
        for value in scalars {
            guard value != 0, let scalar = Unicode.Scalar(value) else { break }
            text.unicodeScalars.append(scalar)
        }
        // A space printed and a cell erased look the same: both are blank (and cost nothing in an update).
        if text == " " { text = "" }
        return ShareCell(text, width: UInt8(clamping: max(1, Int(cell.width))), style: style)
    }

    static func color(kind: Int32, value: UInt32) -> ShareColor {
        switch Int(kind) {
        case Int(PARLEY_VTERM_COLOR_INDEXED): .indexed(UInt8(truncatingIfNeeded: value))
        case Int(PARLEY_VTERM_COLOR_RGB):
            .rgb(
                red: UInt8(truncatingIfNeeded: value >> 16), green: UInt8(truncatingIfNeeded: value >> 8),
                blue: UInt8(truncatingIfNeeded: value))
        default: .terminalDefault
        }
    }
}
