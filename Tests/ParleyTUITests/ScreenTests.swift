import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Screen")
struct ScreenTests {
    struct WriteCase: CustomTestStringConvertible, Sendable {
        var name: String
        var text: String
        var column: Int
        var clip: CellRect?
        var expected: String
        var returned: Int
        var testDescription: String { name }
    }

    static let writeCases: [WriteCase] = [
        WriteCase(name: "plain ASCII", text: "hello", column: 1, clip: nil, expected: " hello", returned: 6),
        WriteCase(
            name: "cut at the right edge", text: "abcdefghijkl", column: 5, clip: nil,
            expected: "     abcde", returned: 10),
        WriteCase(
            name: "cut by a clip rectangle", text: "abcdefgh", column: 2,
            clip: CellRect(x: 3, y: 0, width: 4, height: 1), expected: "   bcde", returned: 7),
        WriteCase(
            name: "starts left of the screen", text: "abcdef", column: -2, clip: nil,
            expected: "cdef", returned: 4),
        WriteCase(
            name: "CJK takes two cells each", text: "日本語", column: 0, clip: nil, expected: "日本語",
            returned: 6),
        WriteCase(
            name: "wide character that does not fit becomes a space", text: "abcdefgh日", column: 1, clip: nil,
            expected: " abcdefgh", returned: 10),
        WriteCase(
            name: "wide character cut by the left clip edge", text: "日本", column: 1,
            clip: CellRect(x: 2, y: 0, width: 8, height: 1), expected: "   本", returned: 5),
        WriteCase(
            name: "emoji presentation is two cells", text: "👍x", column: 0, clip: nil, expected: "👍x",
            returned: 3),
        WriteCase(
            name: "combining accent stays with its letter", text: "e\u{301}t\u{e9}", column: 0, clip: nil,
            expected: "e\u{301}t\u{e9}", returned: 3),
        WriteCase(
            name: "controls and escapes become U+FFFD", text: "a\u{1B}[31mb\tc", column: 0, clip: nil,
            expected: "a\u{FFFD}[31mb\u{FFFD}c", returned: 9),
        WriteCase(
            name: "row outside the clip writes nothing", text: "abc", column: 0,
            clip: CellRect(x: 0, y: 1, width: 10, height: 1), expected: "", returned: 3),
    ]

    @Test("write clips and measures", arguments: writeCases)
    func write(_ c: WriteCase) {
        var screen = Screen(width: 10, height: 2)
        let end = screen.write(c.text, column: c.column, row: 0, style: .plain, clip: c.clip)
        #expect(screen.text(row: 0) == c.expected)
        #expect(end == c.returned)
    }

    @Test("a wide character occupies its cell and a continuation cell")
    func wideCells() {
        var screen = Screen(width: 6, height: 1)
        let style = CellStyle(foreground: .palette(9))
        screen.write("a日b", column: 0, row: 0, style: style)
        #expect(screen[1, 0].character == "日")
        #expect(!screen[1, 0].isContinuation)
        #expect(screen[2, 0].isContinuation)
        #expect(screen[2, 0].style == style)
        #expect(screen[3, 0].character == "b")
    }

    struct OverwriteCase: CustomTestStringConvertible, Sendable {
        var name: String
        var column: Int
        var expected: String
        var testDescription: String { name }
    }

    @Test(
        "overwriting half of a wide character blanks the other half",
        arguments: [
            OverwriteCase(name: "left half", column: 1, expected: "ax b"),
            OverwriteCase(name: "right half", column: 2, expected: "a xb"),
        ])
    func overwriteHalf(_ c: OverwriteCase) {
        var screen = Screen(width: 5, height: 1)
        screen.write("a日b", column: 0, row: 0, style: .plain)
        screen.write("x", column: c.column, row: 0, style: .plain)
        #expect(screen.text(row: 0) == c.expected)
        #expect(screen.cells.allSatisfy { !$0.isContinuation })
    }

    @Test("boxes draw corners, edges and a truncated title")
    func box() {
        var screen = Screen(width: 12, height: 4)
        screen.drawBox(CellRect(x: 0, y: 0, width: 12, height: 4), style: .plain, title: "Alexandra Smith")
        screen.drawBox(CellRect(x: 1, y: 1, width: 3, height: 2), style: .plain, lines: .heavy)
        #expect(
            screen.text == """
                ┌ Alexand… ┐
                │┏━┓       │
                │┗━┛       │
                └──────────┘
                """)
    }

    @Test("boxes smaller than 2x2 and boxes off the screen draw nothing")
    func degenerateBoxes() {
        var screen = Screen(width: 4, height: 3)
        screen.drawBox(CellRect(x: 0, y: 0, width: 1, height: 3), style: .plain)
        screen.drawBox(CellRect(x: 0, y: 0, width: 4, height: 1), style: .plain)
        screen.drawBox(CellRect(x: 10, y: 10, width: 4, height: 4), style: .plain)
        #expect(screen.text == "\n\n")
    }

    @Test("a box partly off the screen is clipped")
    func clippedBox() {
        var screen = Screen(width: 4, height: 3)
        screen.drawBox(CellRect(x: 2, y: 1, width: 5, height: 5), style: .plain, lines: .ascii)
        #expect(screen.text == "\n  +-\n  |")
    }

    @Test("fill paints a clipped rectangle")
    func fill() {
        var screen = Screen(width: 5, height: 3)
        let style = CellStyle(background: .palette(4))
        screen.fill(CellRect(x: 3, y: 1, width: 9, height: 9), with: "#", style: style)
        #expect(screen.text == "\n   ##\n   ##")
        #expect(screen[4, 2].style == style)
        #expect(screen[2, 2].style == .plain)
    }

    @Test("lines are drawn with box characters")
    func lines() {
        var screen = Screen(width: 4, height: 3)
        screen.drawHorizontalLine(column: 0, row: 0, length: 4, style: .plain)
        screen.drawVerticalLine(column: 1, row: 1, length: 5, style: .plain)
        #expect(screen.text == "────\n │\n │")
    }

    @Test("text dump trims trailing spaces but keeps inner ones")
    func textDump() {
        var screen = Screen(width: 8, height: 2)
        screen.write("a  b", column: 1, row: 1, style: .plain)
        #expect(screen.text == "\n a  b")
    }

    @Test("rectangles intersect and inset")
    func rects() {
        let a = CellRect(x: 0, y: 0, width: 10, height: 5)
        let b = CellRect(x: 8, y: 3, width: 10, height: 10)
        #expect(a.intersection(b) == CellRect(x: 8, y: 3, width: 2, height: 2))
        #expect(a.intersection(CellRect(x: 20, y: 0, width: 1, height: 1)).isEmpty)
        #expect(a.inset(by: 1) == CellRect(x: 1, y: 1, width: 8, height: 3))
        #expect(a.inset(by: 3) == CellRect(x: 3, y: 3, width: 4, height: 0))
        #expect(a.contains(column: 9, row: 4))
        #expect(!a.contains(column: 10, row: 4))
    }
}

@Suite("Clipboard (OSC 52)")
struct ClipboardTests {
    @Test("the sequence is ESC ] 52 ; c ; base64 BEL, byte for byte")
    func osc52() {
        #expect(
            Terminal.clipboardSequence("parley://h:1/a") == [0x1B] + Array("]52;c;cGFybGV5Oi8vaDoxL2E=".utf8) + [0x07])
        #expect(Terminal.clipboardSequence("") == [0x1B] + Array("]52;c;".utf8) + [0x07])
    }
}
