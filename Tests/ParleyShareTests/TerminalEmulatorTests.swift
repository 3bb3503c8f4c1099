import ParleyWire
import Testing

@testable import ParleyShare

/// The sharer's emulator (libvterm) against known screens: what the program wrote, read back as cells.
@Suite("Terminal emulator")
struct TerminalEmulatorTests {
    func screen(_ output: String, rows: Int = 4, columns: Int = 12) throws -> (TerminalScreen, TerminalEmulator) {
        let emulator = try TerminalEmulator(rows: rows, columns: columns)
        emulator.write(Array(output.utf8))
        return (emulator.screen(), emulator)
    }

    struct Known: CustomTestStringConvertible, Sendable {
        var name: String
        var output: String
        /// Row, column and the cell expected there.
        var cells: [(Int, Int, ShareCell)]
        var testDescription: String { name }
    }

    static let known: [Known] = [
        Known(
            name: "plain text on two lines", output: "ls\r\nok",
            cells: [(0, 0, ShareCell("l")), (0, 1, ShareCell("s")), (0, 2, .blank), (1, 1, ShareCell("k"))]),
        Known(
            name: "bold red, then reset", output: "\u{1B}[1;31mE\u{1B}[0mx",
            cells: [
                (0, 0, ShareCell("E", style: ShareStyle(foreground: .indexed(1), attributes: [.bold]))),
                (0, 1, ShareCell("x")),
            ]),
        Known(
            name: "a 256-colour background and a 24-bit foreground",
            output: "\u{1B}[48;5;200mA\u{1B}[0m\u{1B}[38;2;10;20;30mB",
            cells: [
                (0, 0, ShareCell("A", style: ShareStyle(background: .indexed(200)))),
                (0, 1, ShareCell("B", style: ShareStyle(foreground: .rgb(red: 10, green: 20, blue: 30)))),
            ]),
        Known(
            name: "underline, italic, reverse, strike", output: "\u{1B}[4;3;7;9mu",
            cells: [(0, 0, ShareCell("u", style: ShareStyle(attributes: [.underline, .italic, .reverse, .strike])))]),
        Known(
            name: "wide characters take two columns, the second empty", output: "日本x",
            cells: [
                (0, 0, ShareCell("日", width: 2)), (0, 1, ShareCell("", width: 0)), (0, 2, ShareCell("本", width: 2)),
                (0, 4, ShareCell("x")),
            ]),
        Known(name: "an emoji is wide", output: "😀", cells: [(0, 0, ShareCell("😀", width: 2))]),
        Known(
            name: "a combining mark stays with its letter", output: "e\u{301}!",
            cells: [(0, 0, ShareCell("e\u{301}")), (0, 1, ShareCell("!"))]),
        Known(
            name: "the alternate screen (htop, an editor) and back", output: "main\u{1B}[?1049halt\u{1B}[?1049l",
            cells: [(0, 0, ShareCell("m")), (0, 3, ShareCell("n"))]),
        Known(
            name: "cursor addressing and erasing", output: "abcdef\u{1B}[1;3H\u{1B}[K\u{1B}[3;5HZ",
            cells: [(0, 1, ShareCell("b")), (0, 2, .blank), (0, 5, .blank), (2, 4, ShareCell("Z"))]),
    ]

    @Test("known output reads back as these cells", arguments: known)
    func knownScreens(_ row: Known) throws {
        let (screen, _) = try screen(row.output)
        for (line, column, expected) in row.cells {
            #expect(screen[line, column] == expected, "row \(line), column \(column)")
        }
    }

    @Test func cursorPositionAndVisibility() throws {
        var (screen, emulator) = try screen("hello\r\nwo")
        #expect(screen.cursor == ShareCursor(row: 1, column: 2, visible: true))
        emulator.write(Array("\u{1B}[?25l".utf8))
        screen = emulator.screen()
        #expect(screen.cursor.visible == false)
    }

    @Test func moreLinesThanRowsScroll() throws {
        let output = (1...10).map { "line \($0)" }.joined(separator: "\r\n")
        let (screen, _) = try screen(output, rows: 4, columns: 10)
        #expect((0..<4).map { screen.text(ofRow: $0) } == ["line 7    ", "line 8    ", "line 9    ", "line 10   "])
    }

    @Test func titleAndRepliesToTheProgram() throws {
        let (_, emulator) = try screen("\u{1B}]2;make test\u{07}\u{1B}[6n")
        #expect(emulator.title == "make test")
        // A cursor position report, which a shell's line editor asks for, goes back to the program.
        #expect(String(decoding: emulator.takeReplies(), as: UTF8.self) == "\u{1B}[1;1R")
        #expect(emulator.takeReplies().isEmpty)
    }

    @Test func aResizeKeepsTheTextThatFits() throws {
        let (_, emulator) = try screen("abcdef", rows: 2, columns: 10)
        try emulator.resize(rows: 3, columns: 4)
        let screen = emulator.screen()
        #expect(screen.rows == 3 && screen.columns == 4)
        #expect(screen.text(ofRow: 0) == "abcd")
    }

    @Test func aSizeOutsideTheBoundsIsRefusedSayingWhy() {
        #expect(throws: TerminalEmulatorError.badSize(rows: 0, columns: 80)) {
            try TerminalEmulator(rows: 0, columns: 80)
        }
        let error = #expect(throws: TerminalEmulatorError.self) { try TerminalEmulator(rows: 24, columns: 401) }
        #expect(error?.description == "a shared terminal is 1...400 columns by 1...200 rows, not 401x24")
    }

    /// Bytes cut anywhere, a UTF-8 character split between two writes included, read as when written at once.
    @Test func outputSplitAnywhereReadsTheSame() throws {
        let output = Array("\u{1B}[1;32mgrün 日本\u{1B}[0m done\r\n$ ".utf8)
        let (whole, _) = try screen(String(decoding: output, as: UTF8.self))
        // Nothing written is nothing changed.
        let empty = try TerminalEmulator(rows: 4, columns: 12)
        empty.write([])
        #expect(empty.screen() == TerminalScreen(rows: 4, columns: 12))
        for cut in 1..<output.count {
            let emulator = try TerminalEmulator(rows: 4, columns: 12)
            emulator.write(Array(output[..<cut]))
            emulator.write(Array(output[cut...]))
            #expect(emulator.screen() == whole, "cut at \(cut)")
        }
    }
}
