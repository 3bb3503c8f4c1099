import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Room screen layout")
struct RoomScreenLayoutTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var size: TerminalSize
        var hidden = false
        var chatOpen = false
        var video: CellRect
        var placement: RoomScreenLayout.ChatPlacement?
        var pane: CellRect?
        var lines: CellRect?
        var input: CellRect?
        var bar: CellRect?
        var testDescription: String { name }
    }

    static func rect(_ column: Int, _ row: Int, _ width: Int, _ height: Int) -> CellRect {
        CellRect(x: column, y: row, width: width, height: height)
    }

    static let cases: [Case] = [
        Case(
            name: "80x24: bottom strip of 4 lines", size: TerminalSize(columns: 80, rows: 24),
            video: CellRect(x: 0, y: 1, width: 80, height: 17), placement: .bottom, pane: rect(0, 18, 80, 5),
            lines: rect(1, 19, 78, 4), bar: rect(0, 23, 80, 1)),
        Case(
            name: "80x24 typing: the input takes the last line, the video stays",
            size: TerminalSize(columns: 80, rows: 24),
            chatOpen: true, video: CellRect(x: 0, y: 1, width: 80, height: 17), placement: .bottom,
            pane: rect(0, 18, 80, 5), lines: rect(1, 19, 78, 3), input: rect(1, 22, 78, 1), bar: rect(0, 23, 80, 1)),
        Case(
            name: "80x24 hidden: video below the header to the bottom", size: TerminalSize(columns: 80, rows: 24),
            hidden: true, video: CellRect(x: 0, y: 1, width: 80, height: 23)),
        Case(
            name: "100x48: the strip grows to 8 lines", size: TerminalSize(columns: 100, rows: 48),
            video: CellRect(x: 0, y: 1, width: 100, height: 37), placement: .bottom, pane: rect(0, 38, 100, 9),
            lines: rect(1, 39, 98, 8), bar: rect(0, 47, 100, 1)),
        Case(
            name: "119x30: still a strip, of 5 lines", size: TerminalSize(columns: 119, rows: 30),
            video: CellRect(x: 0, y: 1, width: 119, height: 22), placement: .bottom, pane: rect(0, 23, 119, 6),
            lines: rect(1, 24, 117, 5), bar: rect(0, 29, 119, 1)),
        Case(
            name: "120x30: a right column of 30", size: TerminalSize(columns: 120, rows: 30),
            video: CellRect(x: 0, y: 1, width: 90, height: 28), placement: .right, pane: rect(90, 1, 30, 28),
            lines: rect(92, 2, 27, 27), bar: rect(0, 29, 120, 1)),
        Case(
            name: "160x48: a right column of 40", size: TerminalSize(columns: 160, rows: 48),
            video: CellRect(x: 0, y: 1, width: 120, height: 46), placement: .right, pane: rect(120, 1, 40, 46),
            lines: rect(122, 2, 37, 45), bar: rect(0, 47, 160, 1)),
        Case(
            name: "160x48 typing", size: TerminalSize(columns: 160, rows: 48), chatOpen: true,
            video: CellRect(x: 0, y: 1, width: 120, height: 46), placement: .right, pane: rect(120, 1, 40, 46),
            lines: rect(122, 2, 37, 44), input: rect(122, 46, 37, 1), bar: rect(0, 47, 160, 1)),
        Case(
            name: "200x60: the column stops at 48", size: TerminalSize(columns: 200, rows: 60),
            video: CellRect(x: 0, y: 1, width: 152, height: 58), placement: .right, pane: rect(152, 1, 48, 58),
            lines: rect(154, 2, 45, 57), bar: rect(0, 59, 200, 1)),
    ]

    @Test("regions for a size", arguments: cases)
    func regions(_ row: Case) {
        let layout = RoomScreenLayout(size: row.size, flowViewsHidden: row.hidden, chatInputOpen: row.chatOpen)
        #expect(!layout.isTooSmall)
        #expect(layout.header == Self.rect(0, 0, row.size.columns, 1))
        #expect(layout.video == row.video)
        #expect(layout.chatPlacement == row.placement)
        #expect(layout.chatPane == row.pane)
        #expect(layout.chatLines == row.lines)
        #expect(layout.chatInput == row.input)
        #expect(layout.controlBar == row.bar)
    }

    @Test(
        "below 80x24 nothing is laid out",
        arguments: [
            TerminalSize(columns: 79, rows: 24), TerminalSize(columns: 80, rows: 23), TerminalSize(columns: 0, rows: 0),
        ])
    func tooSmall(size: TerminalSize) {
        let layout = RoomScreenLayout(size: size, flowViewsHidden: false, chatInputOpen: false)
        #expect(layout.isTooSmall)
        #expect(layout.video.isEmpty)
        #expect(layout.chatPane == nil && layout.controlBar == nil && layout.chatInput == nil)
    }

    @Test("regions never overlap and stay on screen", arguments: cases)
    func disjoint(_ row: Case) {
        let layout = RoomScreenLayout(size: row.size, flowViewsHidden: row.hidden, chatInputOpen: row.chatOpen)
        let screen = CellRect(x: 0, y: 0, width: row.size.columns, height: row.size.rows)
        let regions =
            [layout.header, layout.video] + [layout.chatPane, layout.controlBar].compactMap { $0 }
        for (index, region) in regions.enumerated() {
            #expect(screen.intersection(region) == region, "\(region) leaves the screen")
            for other in regions[(index + 1)...] {
                #expect(region.intersection(other).isEmpty, "\(region) overlaps \(other)")
            }
        }
    }
}

@Suite("Field window")
struct FieldWindowTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var cursor: Int
        var width: Int
        var shown: String
        var column: Int
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "short text, cursor at the end", text: "hello", cursor: 5, width: 10, shown: "hello", column: 5),
        Case(name: "cursor inside", text: "hello", cursor: 2, width: 10, shown: "hello", column: 2),
        Case(
            name: "full field scrolls one early", text: "0123456789", cursor: 10, width: 10, shown: "123456789",
            column: 9),
        Case(
            name: "long text, cursor at the end", text: "abcdefghijklmnop", cursor: 16, width: 6, shown: "lmnop",
            column: 5),
        Case(
            name: "long text, cursor at the start", text: "abcdefghijklmnop", cursor: 0, width: 6, shown: "abcdef",
            column: 0),
        Case(
            name: "wide characters count two cells", text: "日本語です", cursor: 5, width: 6, shown: "です",
            column: 4),
        Case(name: "empty", text: "", cursor: 0, width: 4, shown: "", column: 0),
    ]

    @Test("visible text and cursor column", arguments: cases)
    func window(_ row: Case) {
        let window = FieldWindow(text: row.text, cursor: row.cursor, width: row.width)
        #expect(window.text == row.shown)
        #expect(window.cursorColumn == row.column)
        #expect(DisplayWidth.of(window.text) <= row.width)
    }
}
