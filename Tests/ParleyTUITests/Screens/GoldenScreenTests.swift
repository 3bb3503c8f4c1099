import ParleyEngine
import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyTUI

/// Whole screens at 80x24 and 160x48 compared with the text files in Golden/ (characters only).
@Suite("Golden screens")
struct GoldenScreenTests {
    static let sizes = [RoomFixture.small, RoomFixture.large]
    static let names = ["bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"]

    static func name(_ base: String, _ size: TerminalSize) -> String {
        "\(base)_\(size.columns)x\(size.rows)"
    }

    @Test("alone in the room: self view fills the container", arguments: sizes)
    func alone(size: TerminalSize) {
        var room = RoomFixture()
        room.advance(to: 5)
        Golden.check(room.render(size), Self.name("room_1", size))
    }

    @Test("one peer: the peer fills, self is the top-right inset", arguments: sizes)
    func twoPeople(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob"])
        Golden.check(room.render(size), Self.name("room_2", size))
    }

    @Test("four people: live video, camera off, waiting for video, a muted mic, bob speaking", arguments: sizes)
    func fourPeople(size: TerminalSize) {
        var room = RoomFixture()
        let bob = room.addPeer("bob")
        room.addPeer("carol", video: .off, muted: true)
        room.addPeer("dave", video: .waiting)
        room.send(.event(.audioLevel(bob, 0.6)))
        room.advance(to: 3725)
        Golden.check(room.render(size), Self.name("room_4", size))
    }

    @Test("nine people: two pages at 80x24, one at 160x48", arguments: sizes)
    func ninePeople(size: TerminalSize) {
        var room = RoomFixture.withPeers(Self.names)
        Golden.check(room.render(size), Self.name("room_9", size))
    }

    @Test("nine people at 80x24, second page")
    func ninePeopleSecondPage() {
        var room = RoomFixture.withPeers(Self.names)
        room.fit(RoomFixture.small)
        room.press(.char("]"))
        Golden.check(room.render(RoomFixture.small), "room_9_page2_80x24")
    }

    @Test("fullscreen: the selected tile fills the container beside a strip", arguments: sizes)
    func fullscreen(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave", "erin"])
        room.fit(size)
        room.press(.char("2"))
        room.press(.char("2"))
        #expect(room.state.fullscreen == ParticipantID(2))
        Golden.check(room.render(size), Self.name("room_fullscreen", size))
    }

    @Test("chat open with text typed, history with system lines, a wrapped message and an alert", arguments: sizes)
    func chatOpen(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.send(.event(.chatMessage(from: ParticipantID(2), text: "morning! can everyone hear me?")))
        room.send(
            .event(
                .chatMessage(
                    from: ParticipantID(3),
                    text: "yes, loud and clear. I will share the release notes after the demo, give me a minute")))
        room.send(.event(.alert(.interrupted)))
        room.send(.event(.alert(.reconnected)))
        room.press(.char("t"))
        for character in "sounds good" { room.press(.char(character)) }
        room.press(.enter)
        room.press(.char("t"))
        for character in "see you at ten" { room.press(.char(character)) }
        Golden.check(room.render(size), Self.name("room_chat", size))
    }

    @Test("help overlay", arguments: sizes)
    func help(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.press(.char("?"))
        Golden.check(room.render(size), Self.name("room_help", size))
    }

    @Test("help overlay scrolled to its end: the last keys and the chat commands")
    func helpScrolledToTheEnd() {
        let size = TerminalSize(columns: 80, rows: 24)
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.fit(size)
        room.press(.char("?"))
        room.press(.end)
        Golden.check(room.render(size), "room_help_end_80x24")
    }

    @Test("roster and activity, with the count as of a lost connection", arguments: sizes)
    func roster(size: TerminalSize) {
        var room = RoomFixture()
        room.advance(to: 5)
        let bob = room.addPeer("bob ✓", muted: true)
        room.advance(to: 65)
        room.addPeer("carol", video: .off)
        room.send(.event(.hostChanged(RoomFixture.localID)))
        room.send(.event(.roleChanged(bob, .audience)))
        room.advance(to: 125)
        room.send(.event(.alert(.interrupted)))
        room.advance(to: 137)
        room.press(.char("r"))
        Golden.check(room.render(size), Self.name("room_roster", size))
    }

    @Test("leave confirmation", arguments: sizes)
    func leave(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.press(.char("q"))
        Golden.check(room.render(size), Self.name("room_leave", size))
    }

    @Test("stats on every tile", arguments: sizes)
    func stats(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        room.send(
            .event(
                .localStats(
                    MediaInfo(
                        resolution: VideoSize(width: 640, height: 360), fps: 30,
                        bitrateKbps: 598.4, lossPercent: 0))))
        room.send(
            .event(
                .remoteStats(
                    ParticipantID(2),
                    MediaInfo(
                        resolution: VideoSize(width: 1280, height: 720),
                        fps: 29.7, bitrateKbps: 1480, lossPercent: 1.25))))
        room.send(
            .event(
                .remoteStats(
                    ParticipantID(3),
                    MediaInfo(
                        resolution: VideoSize(width: 320, height: 180),
                        fps: 15, bitrateKbps: 140, lossPercent: 12))))
        room.press(.char("i"))
        Golden.check(room.render(size), Self.name("room_stats", size))
    }

    @Test("flow views hidden: no chat pane or control bar, video takes their rows", arguments: sizes)
    func flowViewsHidden(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        room.press(.char("h"))
        Golden.check(room.render(size), Self.name("room_hidden", size))
    }

    @Test("a notice shows at the bottom of the video")
    func notice() {
        var room = RoomFixture.withPeers(["bob"])
        room.press(.char("z"))
        Golden.check(room.render(RoomFixture.small), "room_notice_80x24")
    }

    @Test("as an audience member: no self view, role in the header, no mic, camera or filter buttons")
    func audience() {
        var room = RoomFixture(role: .audience)
        room.addPeer("bob")
        room.addPeer("carol")
        room.advance(to: 42)
        Golden.check(room.render(RoomFixture.small), "room_audience_80x24")
    }

    @Test("speaker view: the dominant speaker large with solid corners, the others in the strip")
    func speakerView() {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        let carol = ParticipantID(3)
        room.press(.char("a"))
        room.send(.event(.dominantSpeaker(carol)))
        room.send(.event(.audioLevel(ParticipantID(4), 0.6)))
        Golden.check(room.render(RoomFixture.small), "room_speaker_view_80x24")
        let screen = room.render(RoomFixture.small)
        #expect(!screen.rows(containing: "▛ 3 carol").isEmpty, "the dominant speaker's tile has solid corners")
        #expect(!screen.rows(containing: "┏").isEmpty, "dave, speaking but not dominant, keeps the heavy border")
    }

    @Test("the size each peer is drawn at, for the relay's choice of layers")
    func drawnSizes() {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        _ = room.render(RoomFixture.large)
        let grid = RoomScreen.drawnSizes(state: room.state, layout: room.state.currentLayout)
        #expect(grid.map(\.id) == [2, 3, 4])
        #expect(grid.allSatisfy { $0.width > 0 && $0.height > 0 }, "\(grid)")
        room.press(.char("3"))
        room.press(.char("3"))
        let full = RoomScreen.drawnSizes(state: room.state, layout: room.state.currentLayout)
        let carol = full.first { $0.id == 3 }!
        let bob = full.first { $0.id == 2 }!
        #expect(carol.width > 2 * bob.width, "fullscreen: carol's tile is the big one (\(carol) against \(bob))")
        #expect(abs(Double(carol.width) / Double(carol.height) - 64.0 / 36.0) < 0.05, "letterboxed to the picture")
    }

    @Test("too small: a message instead of a broken screen")
    func tooSmall() {
        var room = RoomFixture.withPeers(["bob"])
        Golden.check(room.render(TerminalSize(columns: 70, rows: 20)), "room_too_small_70x20")
    }

    @Test("monochrome (NO_COLOR): video as shade characters", arguments: sizes)
    func monochrome(size: TerminalSize) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        Golden.check(room.render(size, theme: Theme(depth: .monochrome)), Self.name("room_4_nocolor", size))
    }

    @Test("lobby as it opens", arguments: sizes)
    func lobby(size: TerminalSize) {
        let lobby = LobbyState(name: "alice")
        Golden.check(LobbyScreen.render(lobby, size: size, theme: Theme(depth: .palette256)), Self.name("lobby", size))
    }

    @Test("lobby with an error after Enter", arguments: sizes)
    func lobbyError(size: TerminalSize) {
        var lobby = LobbyState(name: "alice smith", room: "standup")
        #expect(reduce(&lobby, .enter) == nil)
        Golden.check(
            LobbyScreen.render(lobby, size: size, theme: Theme(depth: .palette256)), Self.name("lobby_error", size))
    }

    @Test("lobby after a failed connect, with encryption chosen")
    func lobbyFailed() {
        var lobby = LobbyState(name: "alice", room: "standup")
        lobby.focus = .encryptionKey
        for character in "s3cret phrase" { _ = reduce(&lobby, .char(character)) }
        _ = reduce(&lobby, .tab)
        _ = reduce(&lobby, .right)
        guard case .join = reduce(&lobby, .enter) else {
            Issue.record("Enter did not join")
            return
        }
        lobby.fail("cannot reach the relay at 127.0.0.1:7878: connection refused")
        Golden.check(
            LobbyScreen.render(lobby, size: RoomFixture.small, theme: Theme(depth: .palette256)),
            "lobby_failed_80x24")
    }

    @Test("settings with the standard profile in use and another highlighted", arguments: sizes)
    func settings(size: TerminalSize) {
        var settings = SettingsState(current: .standard)
        #expect(reduce(&settings, .down) == nil)
        Golden.check(
            SettingsScreen.render(settings, size: size, theme: Theme(depth: .palette256)), Self.name("settings", size))
    }
}
