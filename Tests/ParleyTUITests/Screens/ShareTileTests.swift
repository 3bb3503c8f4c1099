import ParleyMedia
import ParleyRoom
import ParleyWire
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

/// A shared terminal's tile: its cells drawn at size when they fit, panned when shown large and larger than the
/// tile, a window by the cursor in a smaller grid tile (the edge says which); colours and wide characters kept; nothing of the
/// share's text reaching the screen as anything but cells.
@Suite("Shared terminal tiles")
struct ShareTileTests {
    static let red = ShareStyle(foreground: .rgb(red: 255, green: 0, blue: 0), attributes: [.bold])

    /// A share of `columns` x `rows`: row r says "row r" from column 0, row 0 also a red word and a wide character,
    /// and the last column of every row holds "|".
    static func share(columns: Int, rows: Int) -> TerminalScreen {
        var screen = TerminalScreen(rows: rows, columns: columns, cursor: ShareCursor(row: 1, column: 0))
        for row in 0..<rows {
            for (offset, letter) in "row \(row)".enumerated() { screen[row, offset] = ShareCell(String(letter)) }
            screen[row, columns - 1] = ShareCell("|")
        }
        for (offset, letter) in "red".enumerated() { screen[0, 8 + offset] = ShareCell(String(letter), style: red) }
        screen[0, 12] = ShareCell("日", width: 2)
        screen[0, 13] = ShareCell("", width: 0)
        return screen
    }

    /// alice in a call with bob, and carol's terminal; rendered at `size` with the share of that size.
    static func render(
        share: TerminalScreen, size: TerminalSize, large: Bool = false, keys: [Key] = []
    ) -> (Screen, RoomFixture) {
        var room = RoomFixture()
        room.addPeer("bob")
        let terminal = room.addPeer("carol's terminal", video: .waiting)
        room.send(.event(.sharesTerminal(terminal, owner: "carol")))
        room.send(.event(.firstRemoteFrame(terminal, size: VideoSize(width: share.columns, height: share.rows))))
        room.fit(size)
        if large {
            room.press(.char("3"))
            room.press(.char("3"))
        }
        for key in keys { room.press(key) }
        room.fit(size)
        let screen = RoomScreen.render(
            state: room.state, frames: room.frames, screens: [terminal: share], size: size,
            theme: Theme(depth: .palette256))
        return (screen, room)
    }

    @Test func aShareThatFitsIsDrawnCellForCellWithItsColours() throws {
        let share = Self.share(columns: 30, rows: 6)
        let (screen, _) = Self.render(share: share, size: TerminalSize(columns: 160, rows: 48))
        let row = try #require(screen.rows(containing: "row 0").first)
        let column = try #require(screen.column(of: "row 0", row: row))
        #expect(screen.text(row: row).contains("row 0   red 日"))
        #expect(screen.text(row: row + 5).contains("row 5"))
        #expect(screen[column + 8, row].style.foreground == .rgb(255, 0, 0))
        #expect(screen[column + 8, row].style.attributes.contains(.bold))
        // The share's last column is there: nothing cut.
        #expect(screen[column + 29, row].character == "|")
        // The cursor (row 1, column 0) is a reversed cell.
        #expect(screen[column, row + 1].style.attributes.contains(.reverse))
        #expect(screen.rows(containing: "scaled").isEmpty && screen.rows(containing: "arrows pan").isEmpty)
    }

    @Test func aLargerShareInAGridTileShowsTheCursorsPartAtSizeAndSaysSo() throws {
        var share = Self.share(columns: 200, rows: 60)
        let (first, _) = Self.render(share: share, size: TerminalSize(columns: 100, rows: 30))
        // The cursor on row 1: the window starts at the top left, every letter there.
        #expect(!first.rows(containing: "row 0   red 日").isEmpty, "\(first.text)")
        let note = try #require(first.rows(containing: "part by the cursor: 1-").first)
        #expect(first.text(row: note).contains("of 200"))
        // The cursor far down and right (a long line being typed): the window keeps it in view.
        share.cursor = ShareCursor(row: 59, column: 190)
        let (moved, _) = Self.render(share: share, size: TerminalSize(columns: 100, rows: 30))
        #expect(moved.occurrences(of: "|") >= 5, "the share's last column: \(moved.text)")
        #expect(moved.rows(containing: "row 0").isEmpty)
        let movedNote = try #require(moved.rows(containing: "part by the cursor:").first)
        #expect(moved.text(row: movedNote).contains(#/-200 of 200, rows \d+-60 /#), "\(moved.text(row: movedNote))")
    }

    @Test func aLargerShareShownLargeIsPannedWithTheArrows() throws {
        let share = Self.share(columns: 200, rows: 60)
        var (screen, room) = Self.render(share: share, size: TerminalSize(columns: 100, rows: 30), large: true)
        #expect(room.state.largeShare != nil)
        #expect(!screen.rows(containing: "columns 1-").isEmpty, "\(screen.text)")
        #expect(!screen.rows(containing: "row 0   red 日").isEmpty)
        (screen, room) = Self.render(
            share: share, size: TerminalSize(columns: 100, rows: 30), large: true, keys: [.end])
        // At the far corner: the last rows and the last column show at size.
        let last = try #require(screen.rows(containing: "of 200, rows").first)
        #expect(screen.text(row: last).contains("of 60: arrows pan"), "\(screen.text(row: last))")
        #expect(screen.occurrences(of: "|") >= 10, "\(screen.text)")
        #expect(screen.rows(containing: "row 0").isEmpty)
    }

    /// A 200x60 share with 24-bit colours, CJK and emoji, on an 80x24 viewer in a two-person call (the share shown
    /// large): the golden screens at the top left and panned to the far corner, and the colours cell by cell.
    @Test func aLargeShareWithColoursAndWideCharactersOnASmallViewerMatchesItsGoldenScreens() throws {
        var share = TerminalScreen(rows: 60, columns: 200, cursor: ShareCursor(row: 59, column: 10))
        let sky = ShareStyle(foreground: .rgb(red: 30, green: 144, blue: 255))
        let rose = ShareStyle(
            foreground: .rgb(red: 255, green: 0, blue: 127), background: .rgb(red: 20, green: 20, blue: 20))
        for row in 0..<60 {
            let label = String(format: "%02d ", row)
            for (offset, letter) in label.enumerated() { share[row, offset] = ShareCell(String(letter), style: sky) }
            // 日本語 and 👍 as wide cells, each followed by its right half.
            for (index, wide) in ["日", "本", "語", "👍"].enumerated() {
                share[row, 3 + index * 2] = ShareCell(wide, width: 2, style: rose)
                share[row, 4 + index * 2] = ShareCell("", width: 0, style: rose)
            }
            share[row, 199] = ShareCell("#", style: rose)
        }
        var room = RoomFixture()
        let terminal = room.addPeer("carol's terminal", video: .waiting)
        room.send(.event(.sharesTerminal(terminal, owner: "carol")))
        room.send(.event(.firstRemoteFrame(terminal, size: VideoSize(width: 200, height: 60))))
        let size = TerminalSize(columns: 80, rows: 24)
        room.fit(size)
        #expect(room.state.largeShare == terminal)
        let theme = Theme(depth: .direct)
        let top = RoomScreen.render(
            state: room.state, frames: room.frames, screens: [terminal: share], size: size, theme: theme)
        Golden.check(top, "share-200x60-on-80x24")
        let row = try #require(top.rows(containing: "00 日本語👍").first)
        let column = try #require(top.column(of: "00 ", row: row))
        #expect(top[column, row].style.foreground == .rgb(30, 144, 255))
        #expect(top[column + 3, row].style.foreground == .rgb(255, 0, 127))
        #expect(top[column + 3, row].style.background == .rgb(20, 20, 20))
        room.press(.end)
        let corner = RoomScreen.render(
            state: room.state, frames: room.frames, screens: [terminal: share], size: size, theme: theme)
        Golden.check(corner, "share-200x60-on-80x24-panned")
        #expect(!corner.rows(containing: "#").isEmpty && corner.rows(containing: "00 日").isEmpty)
    }
}
