import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Glyph")
struct GlyphTests {
    struct RoundTrip: CustomTestStringConvertible, Sendable {
        var name: String
        var character: Character
        var inline: Bool
        var testDescription: String { name }
    }

    static let roundTrips: [RoundTrip] = [
        RoundTrip(name: "ASCII", character: "a", inline: true),
        RoundTrip(name: "space", character: " ", inline: true),
        RoundTrip(name: "upper half block", character: "▀", inline: true),
        RoundTrip(name: "sextant", character: Character(Unicode.Scalar(0x1FB2D)!), inline: true),
        RoundTrip(name: "CJK", character: "日", inline: true),
        RoundTrip(name: "emoji scalar", character: "👍", inline: true),
        RoundTrip(name: "precomposed é", character: "\u{E9}", inline: true),
        RoundTrip(name: "decomposed é", character: "e\u{301}", inline: false),
        RoundTrip(name: "flag", character: "🇳🇱", inline: false),
        RoundTrip(name: "family emoji (25 bytes)", character: "👨‍👩‍👧‍👦", inline: false),
    ]

    @Test(
        "a glyph gives back its character, one scalar inline and clusters through the table",
        arguments: roundTrips)
    func roundTrip(_ c: RoundTrip) {
        let glyph = Glyph(c.character)
        #expect(glyph.character == c.character)
        #expect(Array(String(glyph.character).utf8) == Array(String(c.character).utf8))
        #expect((glyph.scalar != nil) == c.inline)
        var cell = Cell(c.character, style: .plain)
        #expect(cell.character == c.character)
        cell.character = "x"
        #expect(cell.glyph == Glyph("x"))
    }

    @Test("glyphs are equal exactly when the bytes are: two spellings of é stay apart")
    func equalityByBytes() {
        #expect(Glyph("e\u{301}") == Glyph("e\u{301}"))
        #expect(Glyph("e\u{301}") != Glyph("\u{E9}"))
        #expect(Cell("🇳🇱", style: .plain) == Cell("🇳🇱", style: .plain))
        #expect(Cell("🇳🇱", style: .plain) != Cell("🇩🇪", style: .plain))
    }

    @Test("a full table shows new clusters as U+FFFD, counts them, and keeps the ones it holds")
    func tableLimit() {
        let table = GraphemeTable(limit: 2)
        let first = Glyph("e\u{301}", table: table)
        let second = Glyph("a\u{301}", table: table)
        #expect(table.count == 2 && table.overflows == 0)
        let third = Glyph("o\u{301}", table: table)
        #expect(third == Glyph("\u{FFFD}"))
        #expect(table.overflows == 1 && table.count == 2)
        #expect(Glyph("e\u{301}", table: table) == first)
        #expect(first.character(in: table) == "e\u{301}")
        #expect(second.character(in: table) == "a\u{301}")
    }

    @Test("half-block halves read through the glyph")
    func visibleHalves() {
        let red = TerminalColor.palette(1)
        let blue = TerminalColor.palette(4)
        let style = CellStyle(foreground: red, background: blue)
        #expect(Cell("▀", style: style).visibleHalves! == (red, blue))
        #expect(Cell("▄", style: style).visibleHalves! == (blue, red))
        #expect(Cell("█", style: style).visibleHalves! == (red, red))
        #expect(Cell(" ", style: style).visibleHalves! == (blue, blue))
        #expect(Cell("x", style: style).visibleHalves == nil)
    }
}

@Suite("Chat pane lines")
struct ChatPaneLinesTests {
    static func entry(_ text: String, _ second: Int) -> ChatEntry {
        ChatEntry(sender: "bob", text: text, time: .seconds(second), kind: .chat)
    }

    @Test("the kept lines are always what the log wraps to now: after new lines, a resize, another log")
    func followsLogAndSize() {
        var wrapped = ChatPaneLines()
        var log = ChatLog()
        var direct = ChatLog()
        direct.append(Self.entry("a direct message", 1))
        // (step, line appended to the room log first, pane width, pane height, shows the direct log)
        let steps: [(String, String?, Int, Int, Bool)] = [
            ("empty", nil, 20, 5, false),
            ("one line", "hello there", 20, 5, false),
            ("same again", nil, 20, 5, false),
            ("a long line", "a longer line that wraps over several rows", 20, 5, false),
            ("narrower", nil, 12, 5, false),
            ("shorter", nil, 12, 2, false),
            ("the direct log", nil, 12, 2, true),
            ("back, with a new line", "and one more", 12, 2, false),
        ]
        for (index, (name, line, width, height, showsDirect)) in steps.enumerated() {
            if let line { log.append(Self.entry(line, index)) }
            let shown = showsDirect ? direct : log
            #expect(
                wrapped.lines(of: shown, width: width, height: height)
                    == shown.paneLines(width: width, height: height), "\(name)")
        }
    }
}
