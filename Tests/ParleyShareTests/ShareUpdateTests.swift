import ParleyWire
import Testing

/// The share update's wire format: round trips, the changes between two screens, and garbage refused by name.
@Suite("Share updates")
struct ShareUpdateTests {
    static let green = ShareStyle(foreground: .indexed(2), attributes: [.bold])
    static let deep = ShareStyle(background: .rgb(red: 1, green: 2, blue: 3))

    /// A 3x8 screen: a prompt, a bold green word, a wide character on a 24-bit background.
    static func screen() -> TerminalScreen {
        var screen = TerminalScreen(rows: 3, columns: 8, cursor: ShareCursor(row: 1, column: 2))
        screen[0, 0] = ShareCell("$")
        for (offset, letter) in "ls".enumerated() { screen[0, 2 + offset] = ShareCell(String(letter), style: green) }
        screen[1, 0] = ShareCell("日", width: 2, style: deep)
        screen[1, 1] = ShareCell("", width: 0, style: deep)
        return screen
    }

    @Test func aFullScreenRoundTripsAndRebuildsTheScreen() throws {
        let screen = Self.screen()
        let update = ShareUpdate.between(nil, screen, sequence: 7)
        #expect(update.kind == .fullScreen)
        let decoded = try ShareUpdate(decoding: update.encoded())
        #expect(decoded == update)
        #expect(try decoded.apply(to: nil, heldSequence: nil) == screen)
    }

    @Test func changesCarryOnlyWhatChanged() throws {
        let before = Self.screen()
        var after = before
        after[2, 5] = ShareCell("x")
        after[0, 3] = ShareCell("a", style: Self.green)
        after.cursor = ShareCursor(row: 2, column: 6, visible: false)
        let update = ShareUpdate.between(before, after, sequence: 8)
        #expect(update.kind == .changes && update.base == 7)
        #expect(update.spans.map(\.cells.count).reduce(0, +) == 2)
        let decoded = try ShareUpdate(decoding: update.encoded())
        #expect(try decoded.apply(to: before, heldSequence: 7) == after)
    }

    @Test func nearbyChangesInOneStyleShareASpan() {
        var before = TerminalScreen(rows: 1, columns: 20)
        var after = before
        after[0, 2] = ShareCell("a")
        after[0, 5] = ShareCell("b")  // three unchanged cells between: carried in the same span
        after[0, 15] = ShareCell("c")  // far: a span of its own
        before.cursor = after.cursor
        let spans = ShareUpdate.between(before, after, sequence: 2).spans
        #expect(spans.map(\.column) == [2, 15])
        #expect(spans.map(\.cells.count) == [4, 1])
    }

    @Test func changesToAScreenNotHeldOrOfAnotherSizeAreRefused() throws {
        let screen = Self.screen()
        let update = ShareUpdate.between(screen, screen, sequence: 9)
        #expect(throws: ShareUpdateError.noBase(expected: 8, have: 5)) { try update.apply(to: screen, heldSequence: 5) }
        #expect(throws: ShareUpdateError.noBase(expected: 8, have: nil)) {
            try update.apply(to: nil, heldSequence: nil)
        }
        #expect(throws: ShareUpdateError.sizeChanged(rows: 3, columns: 8, baseRows: 2, baseColumns: 8)) {
            try update.apply(to: TerminalScreen(rows: 2, columns: 8), heldSequence: 8)
        }
    }

    /// Every edit of a random walk over a screen, sent as changes and applied, rebuilds the sharer's screen.
    @Test func aWalkOfEditsIsRebuiltUpdateByUpdate() throws {
        var generator = SplitMix(seed: 52)
        let texts = ["a", "Z", "é", "e\u{301}", " ", "", "│", "█"]
        let styles = [ShareStyle.plain, Self.green, Self.deep, ShareStyle(foreground: .rgb(red: 9, green: 9, blue: 9))]
        var sharer = TerminalScreen(rows: 6, columns: 10)
        var viewer = try ShareUpdate(decoding: ShareUpdate.between(nil, sharer, sequence: 1).encoded())
            .apply(to: nil, heldSequence: nil)
        for sequence in UInt32(2)...200 {
            let previous = sharer
            for _ in 0..<Int(generator.next() % 12) {
                let row = Int(generator.next() % 6)
                let column = Int(generator.next() % 10)
                sharer[row, column] = ShareCell(
                    texts[Int(generator.next() % UInt64(texts.count))],
                    style: styles[Int(generator.next() % UInt64(styles.count))])
            }
            sharer.cursor = ShareCursor(row: Int(generator.next() % 6), column: Int(generator.next() % 10))
            let bytes = ShareUpdate.between(previous, sharer, sequence: sequence).encoded()
            viewer = try ShareUpdate(decoding: bytes).apply(to: viewer, heldSequence: sequence - 1)
            #expect(viewer == sharer, "after update \(sequence)")
        }
    }

    struct Garbage: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var error: String
        var testDescription: String { name }
    }

    /// A valid 2x4 full screen with one span of one cell "x": header, then the span.
    static let header: [UInt8] = [2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 4, 0, 0, 0, 0, 1, 0, 1]
    static let span: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0x41, 0x78]

    static let garbage: [Garbage] = [
        Garbage(name: "empty", bytes: [], error: "share update: the header needs 1 bytes, 0 left"),
        Garbage(
            name: "version 1", bytes: [1] + header.dropFirst() + span,
            error: "share update: version 1, this Parley reads version 2"),
        Garbage(
            name: "kind 5", bytes: [2, 5] + header.dropFirst(2) + span,
            error: "share update: kind 5 is neither a full screen (0) nor changes (1)"),
        Garbage(
            name: "a screen of 0 rows", bytes: Array(header[..<10]) + [0, 0] + Array(header[12...]) + span,
            error: "share update: a 4x0 screen is outside 1...400 columns and 1...200 rows"),
        Garbage(
            name: "a cursor below the screen", bytes: Array(header[..<14]) + [0, 9] + Array(header[16...]) + span,
            error: "share update: the cursor at row 9, column 0 is outside the 4x2 screen"),
        Garbage(
            name: "a span past the right edge", bytes: header + [0, 0, 0, 3, 0, 2, 0, 0, 0, 0x41, 0x78, 0x41, 0x79],
            error: "share update: 2 cells at row 0, column 3 run outside the 4x2 screen"),
        Garbage(
            name: "a cell 3 columns wide", bytes: header + [0, 0, 0, 0, 0, 1, 0, 0, 0, 0xC1, 0x78],
            error: "share update: a cell 3 columns wide (0, 1 or 2)"),
        Garbage(
            name: "a text of 30 bytes", bytes: header + [0, 0, 0, 0, 0, 1, 0, 0, 0, 0x40 | 30],
            error: "share update: a cell's text of 30 bytes is longer than 24"),
        Garbage(
            name: "text that is not UTF-8", bytes: header + [0, 0, 0, 0, 0, 1, 0, 0, 0, 0x41, 0xFF],
            error: "share update: the text at row 0, column 0 is not UTF-8"),
        Garbage(
            name: "a colour of kind 7", bytes: header + [0, 0, 0, 0, 0, 1, 0, 7, 0, 0x41, 0x78],
            error: "share update: colour kind 7 (0 default, 1 palette, 2 24-bit)"),
        Garbage(
            name: "a 24-bit colour cut short", bytes: header + [0, 0, 0, 0, 0, 1, 0, 2, 1],
            error: "share update: a 24-bit colour needs 3 bytes, 1 left"),
        Garbage(
            name: "a text run with a control character", bytes: header + [0, 0, 0, 0, 0x80, 2, 0, 0, 0, 0x78, 0x1B],
            error: "share update: a text run's byte 27 at row 0, column 1 is not printable ASCII"),
        Garbage(
            name: "a text run cut short", bytes: header + [0, 0, 0, 0, 0x80, 3, 0, 0, 0, 0x78],
            error: "share update: a span's text needs 3 bytes, 1 left"),
        Garbage(
            name: "bytes after the last span", bytes: header + span + [0],
            error: "share update: 1 bytes after the last span"),
        Garbage(
            // A 400x200 screen's every cell, then a span more.
            name: "more cells than a screen holds",
            bytes: everyCellAndOneSpanMore(),
            error: "share update: 80400 cells is more than the 80000 an update may carry"),
    ]

    /// A 400x200 full screen's header announcing 201 spans, 200 rows of 400 blank cells, and the 201st span's head.
    static func everyCellAndOneSpanMore() -> [UInt8] {
        var bytes: [UInt8] = [2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 200, 0x01, 0x90, 0, 0, 0, 0, 1, 0, 201]
        for row in 0..<201 {
            bytes += [0, UInt8(row % 200), 0, 0, 0x01, 0x90, 0, 0, 0]
            if row < 200 { bytes += [UInt8](repeating: 0x40, count: 400) }
        }
        return bytes
    }

    @Test("garbage is refused with what was wrong", arguments: garbage)
    func garbageIsRefused(_ row: Garbage) {
        #expect(throws: Never.self) { try ShareUpdate(decoding: Self.header + Self.span) }
        let error = #expect(throws: ShareUpdateError.self) { try ShareUpdate(decoding: row.bytes) }
        #expect(error?.description == row.error)
    }

    /// What a whole screen of text costs on the wire: a 200x60 terminal full of 80-column lines, plain text sent a
    /// byte a cell.
    @Test func aFullScreenOfTextIsAboutAByteACell() {
        var screen = TerminalScreen(rows: 60, columns: 200)
        for row in 0..<60 {
            for column in 0..<80 {
                screen[row, column] = ShareCell(String(UnicodeScalar(UInt8(65 + (row + column) % 26))))
            }
        }
        let bytes = ShareUpdate.between(nil, screen, sequence: 1).encoded().count
        #expect(bytes == 21 + 60 * (9 + 80), "\(bytes) bytes")
    }
}

/// A small deterministic generator for the tests' random walks.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
