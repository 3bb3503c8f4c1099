import ParleyRoom
import Testing

private let me = ParticipantID(1)
private func peer(_ n: UInt32) -> ParticipantID { ParticipantID(n) }

/// A room driven only through `reduce`, with a hand-advanced clock.
private struct Room {
    var state: RoomState
    var clock: Duration = .zero

    /// Joined as "me" (id 1) with peers 2…(peers+1) named p2, p3, …; the video area is 80x20 at row 1.
    init(
        peers: Int = 0, container: CellRect? = CellRect(x: 0, y: 1, width: 80, height: 20),
        settings: RoomSettings = RoomSettings(), role: Role = .broadcaster
    ) {
        state = RoomState(roomName: "standup", localName: "me", role: role, settings: settings)
        if let container { _ = reduce(&state, .container(container)) }
        _ = reduce(&state, .event(.joined(localID: me)))
        for n in 0..<peers {
            let id = UInt32(n + 2)
            _ = reduce(&state, .event(.userJoined(peer(id), name: "p\(id)", role: .broadcaster)))
        }
    }

    @discardableResult
    mutating func send(_ event: RoomEvent) -> [RoomEffect] {
        reduce(&state, .event(event))
    }

    /// Presses a key `after` milliseconds after the previous input.
    @discardableResult
    mutating func press(_ key: Key, after ms: Int64 = 10) -> [RoomEffect] {
        clock += .milliseconds(ms)
        return reduce(&state, .key(key, at: clock))
    }

    @discardableResult
    mutating func type(_ text: String) -> [RoomEffect] {
        text.flatMap { press(.char($0)) }
    }

    mutating func tick(after ms: Int64) {
        clock += .milliseconds(ms)
        _ = reduce(&state, .tick(clock))
    }

    var lastChat: ChatEntry? { state.chatLog.last }
    var notice: String? { state.notice?.text }
}

@Suite("Room reducer: fullscreen and tiles")
struct FullscreenTests {
    @Test("a tile number pressed twice within the window fullscreens that participant; again returns to the grid")
    func doubleKey() {
        var room = Room(peers: 3)
        room.press(.char("2"), after: 1000)
        #expect(room.state.selected == peer(2) && room.state.fullscreen == nil)
        room.press(.char("2"), after: 250)
        #expect(room.state.fullscreen == peer(2))
        room.press(.char("2"), after: 1000)
        room.press(.char("2"), after: 100)
        #expect(room.state.fullscreen == nil)
    }

    @Test(
        "window boundary: 400 ms triggers, 401 ms does not (the slow press starts a new pair)",
        arguments: [(Int64(399), true), (400, true), (401, false), (1500, false)])
    func window(gap: Int64, triggers: Bool) {
        var room = Room(peers: 2)
        room.press(.char("3"), after: 1000)
        room.press(.char("3"), after: gap)
        #expect((room.state.fullscreen == peer(3)) == triggers)
        if !triggers {
            // The slow second press counts as a new first press.
            room.press(.char("3"), after: 100)
            #expect(room.state.fullscreen == peer(3))
        }
    }

    @Test("the window is configurable")
    func configurableWindow() {
        var settings = RoomSettings()
        settings.doubleKeyWindow = .milliseconds(150)
        var room = Room(peers: 2, settings: settings)
        room.press(.char("1"))
        room.press(.char("1"), after: 200)
        #expect(room.state.fullscreen == nil)
        room.press(.char("1"), after: 150)
        #expect(room.state.fullscreen == me)
    }

    @Test("different numbers do not pair; a tick past the window clears the pending press")
    func pending() {
        var room = Room(peers: 2)
        room.press(.char("2"))
        room.press(.char("3"), after: 50)
        #expect(room.state.fullscreen == nil && room.state.selected == peer(3))
        #expect(room.state.pendingDigit == PendingDigit(number: 3, at: room.clock))
        room.tick(after: 401)
        #expect(room.state.pendingDigit == nil)
    }

    @Test("Esc returns to the grid")
    func escape() {
        var room = Room(peers: 2)
        room.press(.char("1"))
        room.press(.char("1"))
        #expect(room.state.fullscreen == me)
        room.press(.escape)
        #expect(room.state.fullscreen == nil)
    }

    @Test("fullscreen needs 3 or more sessions")
    func needsThree() {
        var room = Room(peers: 1)
        room.press(.char("2"))
        room.press(.char("2"))
        #expect(room.state.fullscreen == nil)
        #expect(room.notice == "Fullscreen needs 3 or more people on screen")
        #expect(!ControlBar.isEnabled(.fullscreen, room.state))
    }

    @Test("fullscreen is dropped when the fullscreen participant leaves")
    func fullscreenLeaves() {
        var room = Room(peers: 3)
        room.press(.char("3"))
        room.press(.char("3"))
        #expect(room.state.fullscreen == peer(3))
        room.send(.userOffline(peer(3), reason: .quit))
        #expect(room.state.fullscreen == nil && room.state.selected == nil)
    }

    @Test("fullscreen is dropped when fewer than 3 sessions remain")
    func fewerThanThree() {
        var room = Room(peers: 2)
        room.press(.char("2"))
        room.press(.char("2"))
        #expect(room.state.fullscreen == peer(2))
        room.send(.userOffline(peer(3), reason: .timeout))
        #expect(room.state.fullscreen == nil)
    }

    @Test("a local switch to the audience drops a fullscreen self view")
    func audienceDropsSelf() {
        var room = Room(peers: 3)
        room.press(.char("1"))
        room.press(.char("1"))
        #expect(room.state.fullscreen == me)
        #expect(room.press(.char("b")) == [.setRole(.audience)])
        #expect(room.state.fullscreen == nil)
        #expect(room.state.selfViewHidden)
    }

    @Test("mouse double-click on a tile fullscreens it; a second double-click anywhere returns")
    func doubleClick() {
        // 80x20 at row 1 with 3 tiles: 2 columns x 2 rows; tile 2 (peer 2) is the top right one.
        var room = Room(peers: 2)
        room.press(.mouseDoubleClick(column: 60, row: 5))
        #expect(room.state.fullscreen == peer(2))
        room.press(.mouseDoubleClick(column: 1, row: 2))
        #expect(room.state.fullscreen == nil)
        // Outside every tile: nothing.
        room.press(.mouseDoubleClick(column: 5, row: 18))
        #expect(room.state.fullscreen == nil)
    }

    @Test("z fullscreens the selected tile")
    func zoomCommand() {
        var room = Room(peers: 2)
        room.press(.char("z"))
        #expect(room.notice == "Press a tile's number first (twice quickly to fullscreen it)")
        room.press(.char("3"), after: 1000)
        room.press(.char("z"), after: 1000)
        #expect(room.state.fullscreen == peer(3))
        room.press(.char("z"))
        #expect(room.state.fullscreen == nil)
    }

    @Test("numbers address tiles on the current page; ] and [ flip pages")
    func paging() {
        // 40x14 holds 4 readable tiles (2x2 of 20x7); 6 tiles make 2 pages.
        var room = Room(peers: 5, container: CellRect(x: 0, y: 0, width: 40, height: 14))
        #expect(room.state.layout(in: room.state.container!).pageCount == 2)
        room.press(.char("]"))
        #expect(room.state.page == 1)
        room.press(.char("2"), after: 1000)
        #expect(room.state.selected == peer(6))
        room.press(.char("3"), after: 1000)
        #expect(room.notice == "No tile 3 on this page")
        room.press(.char("]"))
        #expect(room.state.page == 0, "next wraps around")
        room.press(.pageUp)
        #expect(room.state.page == 1)
        // Shrinking the room clamps the page.
        room.send(.userOffline(peer(6), reason: .quit))
        room.send(.userOffline(peer(5), reason: .quit))
        #expect(room.state.page == 0)
        room.press(.char("]"))
        #expect(room.notice == "All tiles fit on one page")
    }
}

@Suite("Room reducer: sessions and engine events")
struct EventTests {
    @Test("join, peers arriving and leaving write system lines")
    func presence() {
        var room = Room()
        #expect(room.state.connection == .connected)
        #expect(room.state.localID == me)
        #expect(room.state.callStartedAt == .zero)
        #expect(room.lastChat == ChatEntry(sender: nil, text: "You joined standup as me", time: .zero, kind: .system))
        room.send(.userJoined(peer(2), name: "ann", role: .broadcaster))
        room.send(.userJoined(peer(3), name: "viewer", role: .audience))
        #expect(room.state.sessions.map(\.name) == ["me", "ann", "viewer"])
        #expect(room.state.visibleTiles.map(\.id) == [me, peer(2)], "the audience has no tile")
        let lines = [
            (OfflineReason.quit, "ann left"),
            (.timeout, "ann stopped responding and was removed"),
            (.dropped, "ann lost the connection: reconnecting…"),
        ]
        for (reason, text) in lines {
            room.send(.userJoined(peer(2), name: "ann", role: .broadcaster))
            room.send(.userOffline(peer(2), reason: reason))
            #expect(room.lastChat?.text == text)
        }
        #expect(
            room.state.chatLog.entries.map(\.text).prefix(3)
                == ["You joined standup as me", "ann joined", "viewer joined the audience"])
    }

    @Test("a member whose connection dropped keeps a reconnecting tile, and is back under a new id in its place")
    func droppedAndBack() throws {
        var room = Room(peers: 3)
        room.press(.char("3"), after: 1000)
        room.press(.char("3"), after: 100)
        #expect(room.state.fullscreen == peer(3))
        room.send(.firstRemoteFrame(peer(3), size: VideoSize(width: 320, height: 240)))
        room.send(.userOffline(peer(3), reason: .dropped))
        let waiting = try #require(room.state.sessions.first { $0.id == peer(3) })
        #expect(waiting.connection == .reconnecting && waiting.tileContent == .waitingForVideo)
        #expect(room.state.fullscreen == peer(3), "the tile stays fullscreen while they reconnect")
        #expect(room.lastChat?.text == "p3 lost the connection: reconnecting…")
        // Back through another relay, with a new id: the same place, still fullscreen.
        room.tick(after: 500)
        room.send(.userJoined(peer(9), name: "p3", role: .broadcaster))
        #expect(room.state.sessions.map(\.id) == [me, peer(2), peer(9), peer(4)])
        #expect(room.state.fullscreen == peer(9))
        #expect(room.lastChat?.text == "p3 is back")
        // Their media may arrive before the relay says who they are: the early tile gives way to theirs.
        room.send(.userOffline(peer(4), reason: .dropped))
        room.send(.firstRemoteFrame(peer(10), size: VideoSize(width: 160, height: 120)))
        room.send(.userJoined(peer(10), name: "p4", role: .broadcaster))
        #expect(room.state.sessions.map(\.id) == [me, peer(2), peer(9), peer(10)])
        #expect(room.state.sessions.last?.videoSize == VideoSize(width: 160, height: 120))
        #expect(room.state.sessions.last?.connection == .connected)
        // One who does not come back is gone once the window passes.
        room.send(.userOffline(peer(2), reason: .dropped))
        room.tick(after: 14_000)
        #expect(room.state.sessions.contains { $0.id == peer(2) })
        room.tick(after: 1_000)
        #expect(!room.state.sessions.contains { $0.id == peer(2) })
        #expect(room.lastChat?.text == "p2 dropped out of the call")
    }

    @Test("join failure is an alert and blocks sending")
    func joinFailed() {
        var state = RoomState(roomName: "standup", localName: "me")
        _ = reduce(&state, .event(.joinFailed(reason: "relay refused: room full")))
        #expect(state.connection == .failed(reason: "relay refused: room full"))
        #expect(state.chatLog.last?.kind == .alert)
        #expect(state.chatLog.last?.text == "Could not join standup: relay refused: room full")
        _ = reduce(&state, .key(.char("t"), at: .seconds(1)))
        _ = reduce(&state, .key(.char("x"), at: .seconds(1)))
        #expect(reduce(&state, .key(.enter, at: .seconds(1))) == [])
        #expect(state.notice?.text == "Not connected: the message is kept, press Enter again once connected")
        #expect(state.chatInput.text == "x")
    }

    @Test(
        "alerts go to the chat pane and set the connection state",
        arguments: [
            (RoomAlert.interrupted, "Connection interrupted", ConnectionState.interrupted),
            (.reconnecting, "Reconnecting…", .reconnecting),
            (.reconnected, "Reconnected", .connected),
            (.lost, "Still reconnecting: the relay has not answered for a while", .lost),
            (.message("Camera not found"), "Camera not found", .connected),
        ])
    func alerts(alert: RoomAlert, text: String, connection: ConnectionState) {
        var room = Room(peers: 1)
        room.send(.alert(alert))
        #expect(room.lastChat == ChatEntry(sender: nil, text: text, time: .zero, kind: .alert))
        #expect(room.state.connection == connection)
    }

    @Test("an interruption marks peers reconnecting until reconnected")
    func peersReconnect() {
        var room = Room(peers: 2)
        room.send(.firstRemoteFrame(peer(2), size: VideoSize(width: 640, height: 360)))
        room.send(.alert(.interrupted))
        #expect(room.state.peers.map(\.connection) == [.reconnecting, .reconnecting])
        room.send(.alert(.reconnected))
        #expect(room.state.peers.map(\.connection) == [.connected, .connecting])
    }

    @Test("a peer's video mute shows a placeholder; unmuting asks for a key frame")
    func videoMute() {
        var room = Room(peers: 1)
        #expect(room.state.session(peer(2))?.tileContent == .waitingForVideo)
        room.send(.firstRemoteFrame(peer(2), size: VideoSize(width: 640, height: 360)))
        #expect(room.state.session(peer(2))?.tileContent == .video)
        #expect(room.state.session(peer(2))?.videoSize == VideoSize(width: 640, height: 360))
        #expect(room.send(.remoteVideoMuted(peer(2), true)) == [])
        #expect(room.state.session(peer(2))?.tileContent == .videoOff)
        #expect(room.send(.remoteVideoMuted(peer(2), false)) == [.requestKeyframe(peer(2))])
        #expect(room.send(.remoteVideoMuted(peer(2), false)) == [], "no change, no request")
    }

    @Test("a peer's audio mute, stats and speaking level update its session")
    func peerUpdates() {
        var room = Room(peers: 1)
        room.send(.remoteAudioMuted(peer(2), true))
        #expect(room.state.session(peer(2))?.audioMuted == true)
        let info = MediaInfo(
            resolution: VideoSize(width: 320, height: 180), fps: 15, bitrateKbps: 250, lossPercent: 1.5)
        room.send(.remoteStats(peer(2), info))
        #expect(room.state.session(peer(2))?.media == info)
        room.send(.remoteAudioMuted(peer(2), false))
        room.send(.audioLevel(peer(2), 0.5))
        #expect(room.state.session(peer(2))?.isSpeaking == true)
        room.send(.audioLevel(peer(2), 7))
        #expect(room.state.session(peer(2))?.speakingLevel == 1)
        room.send(.localStats(info))
        #expect(room.state.localSession.media == info)
    }

    @Test("media before presence creates a provisional session that userJoined names")
    func mediaFirst() {
        var room = Room()
        room.send(.firstRemoteFrame(peer(9), size: VideoSize(width: 640, height: 480)))
        #expect(room.state.session(peer(9))?.name == "#9")
        room.send(.userJoined(peer(9), name: "zed", role: .broadcaster))
        #expect(room.state.sessions.count == 2 && room.state.session(peer(9))?.name == "zed")
    }

    @Test("chat messages are logged with the sender's name; the relay's echo of our own is ignored")
    func chat() {
        var room = Room(peers: 1)
        room.send(.chatMessage(from: peer(2), text: "hello"))
        #expect(room.lastChat == ChatEntry(sender: "p2", text: "hello", time: .zero, kind: .chat))
        let count = room.state.chatLog.count
        room.send(.chatMessage(from: me, text: "echo"))
        room.send(.chatMessage(from: peer(2), text: "  "))
        #expect(room.state.chatLog.count == count)
    }

    @Test("role changes are announced and move tiles")
    func roles() {
        var room = Room(peers: 2)
        room.send(.roleChanged(peer(3), .audience))
        #expect(room.lastChat?.text == "p3 is now in the audience")
        #expect(room.state.visibleTiles.map(\.id) == [me, peer(2)])
        room.send(.roleChanged(me, .audience))
        #expect(room.lastChat?.text == "You are now in the audience")
        #expect(room.state.visibleTiles.map(\.id) == [peer(2)])
    }

    @Test("the call timer runs from the join")
    func timer() {
        var room = Room()
        room.tick(after: 61_000)
        #expect(room.state.callDuration == .seconds(61))
    }
}

@Suite("Room reducer: self view")
struct SelfViewTests {
    @Test(
        "with exactly 2 sessions and the camera off the self view is hidden",
        arguments: [(0, false), (1, true), (2, false), (4, false)])
    func hidden(peers: Int, hidden: Bool) {
        var room = Room(peers: peers)
        #expect(room.press(.char("v")) == [.setCameraEnabled(false)])
        #expect(room.state.selfViewHidden == hidden)
        #expect(room.state.localSession.tileContent == .videoOff)
        let layout = room.state.layout(in: CellRect(x: 0, y: 0, width: 80, height: 24))
        #expect(layout.tiles.contains { $0.id == me } == !hidden)
        room.press(.char("v"))
        #expect(!room.state.selfViewHidden)
    }

    @Test(
        "V hides the own picture whatever the room holds, the camera still sending; tiles renumber from the peers",
        arguments: [0, 1, 2, 4])
    func hiddenByTheUser(peers: Int) {
        var room = Room(peers: peers)
        #expect(room.press(.char("V")) == [], "hiding the self view asks the engine for nothing")
        #expect(room.state.selfViewHidden && room.state.cameraEnabled)
        #expect(room.notice == "Self view hidden: the others still see your camera")
        #expect(ControlBar.isOn(.selfView, room.state) == false)
        let layout = room.state.layout(in: CellRect(x: 0, y: 0, width: 80, height: 24))
        #expect(!layout.tiles.contains { $0.id == me })
        #expect(layout.tiles.count == peers)
        #expect(room.state.visibleTiles.first?.id == (peers > 0 ? peer(2) : nil), "tile 1 is the first peer")
        room.press(.char("V"))
        #expect(!room.state.selfViewHidden)
        #expect(room.notice == "Self view shown")
        #expect(room.state.layout(in: CellRect(x: 0, y: 0, width: 80, height: 24)).tiles.contains { $0.id == me })
    }

    @Test("hiding a fullscreen self view returns to the grid; --hide-self-view starts with it hidden")
    func hidingFullscreenSelf() {
        var room = Room(peers: 3)
        room.press(.char("1"))
        room.press(.char("1"))
        #expect(room.state.fullscreen == me)
        room.press(.char("V"))
        #expect(room.state.fullscreen == nil && room.state.selected == nil)

        let hidden = Room(peers: 1, settings: RoomSettings(showsSelfView: false))
        #expect(hidden.state.selfViewHidden && hidden.state.selfViewOff)
        #expect(!hidden.state.layout(in: CellRect(x: 0, y: 0, width: 80, height: 24)).tiles.contains { $0.id == me })
    }
}

@Suite("Room reducer: commands and keys")
struct CommandTests {
    @Test("controls return effects for the engine")
    func controls() {
        var room = Room()
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(true)])
        #expect(room.state.microphoneMuted)
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(false)])
        #expect(room.press(.char("c")) == [.switchCamera])
        #expect(room.press(.char("s")) == [.setSpeakerEnabled(false)])
        #expect(room.press(.char("f")) == [.setFilter(true)])
        #expect(room.press(.char("v")) == [.setCameraEnabled(false)])
        #expect(room.press(.char("c")) == [])
        #expect(room.notice == "Camera is off: press v to turn it on first")
        #expect(room.press(.char("i")) == [] && room.state.statsShown)
        room.press(.escape)
        #expect(!room.state.statsShown)
        #expect(room.press(.char("x")) == [], "unbound keys do nothing")
    }

    @Test("the audience cannot use microphone or camera")
    func audience() {
        var room = Room(role: .audience)
        #expect(room.press(.char("m")) == [])
        #expect(room.notice == "You are in the audience: press b to broadcast, then use the microphone")
        #expect(!ControlBar.isEnabled(.microphone, room.state))
        #expect(room.press(.char("b")) == [.setRole(.broadcaster)])
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(true)])
    }

    @Test("notices expire with the clock")
    func noticeExpiry() {
        var room = Room()
        room.press(.char("z"))
        #expect(room.notice != nil)
        room.tick(after: 2999)
        #expect(room.notice != nil)
        room.tick(after: 1)
        #expect(room.notice == nil)
    }

    @Test("rebound keys drive dispatch")
    func rebound() throws {
        var settings = RoomSettings()
        settings.keymap = try Keymap.parse("mic = x\nstats = m")
        var room = Room(settings: settings)
        #expect(room.press(.char("x")) == [.setMicrophoneMuted(true)])
        room.press(.char("m"))
        #expect(room.state.statsShown)
    }

    @Test("a click hides and shows the controls and chat; h does the same")
    func flowViews() {
        var room = Room()
        room.press(.mouseClick(column: 3, row: 3))
        #expect(room.state.flowViewsHidden)
        room.press(.char("h"))
        #expect(!room.state.flowViewsHidden)
    }

    @Test("toggling flow views is ignored while typing a chat line")
    func flowIgnoredWhileTyping() {
        var room = Room()
        room.press(.char("t"))
        room.press(.mouseClick(column: 3, row: 3))
        room.press(.char("h"))
        #expect(!room.state.flowViewsHidden)
        #expect(room.state.chatInput.text == "h")
    }

    @Test("opening the chat shows hidden flow views")
    func chatShowsFlow() {
        var room = Room()
        room.press(.char("h"))
        room.press(.enter)
        #expect(room.state.isChatInputOpen && !room.state.flowViewsHidden)
    }

    @Test("help captures keys until closed")
    func help() {
        var room = Room()
        room.press(.char("?"))
        #expect(room.state.helpShown)
        #expect(room.press(.char("m")) == [])
        #expect(!room.state.microphoneMuted)
        room.press(.function(1))
        #expect(!room.state.helpShown)
        room.press(.function(1))
        room.press(.escape)
        #expect(!room.state.helpShown)
        #expect(room.state.fullscreen == nil)
        room.press(.char("?"))
        room.press(.char("q"))
        #expect(!room.state.helpShown && !room.state.leavePending, "q closes help like a pager")
        room.press(.char("?"))
        room.press(.control("c"))
        #expect(!room.state.helpShown && room.state.leavePending, "Ctrl-C goes on to the leave question")
    }

    @Test(
        "leaving asks first: n/Esc stay, y/Enter/Ctrl-C leave",
        arguments: [
            ([Key.char("y")], true), ([.enter], true), ([.control("c")], true), ([.char("Y")], true),
            ([.char("n")], false), ([.escape], false), ([.char("m"), .char("n")], false),
        ])
    func leave(answer: [Key], leaves: Bool) {
        var room = Room()
        #expect(room.press(.char("q")) == [])
        #expect(room.state.leavePending)
        var effects: [RoomEffect] = []
        for key in answer { effects += room.press(key) }
        #expect(effects == (leaves ? [.leave] : []))
        #expect(!room.state.leavePending)
        #expect((room.state.connection == .left) == leaves)
        #expect(!room.state.microphoneMuted, "keys are captured while confirming")
        if leaves {
            #expect(room.press(.char("m")) == [], "nothing happens after leaving")
        }
    }

    @Test("Ctrl-C asks to leave too")
    func controlC() {
        var room = Room()
        room.press(.control("c"))
        #expect(room.state.leavePending)
        #expect(room.press(.control("c")) == [.leave])
    }
}

@Suite("Room reducer: chat input")
struct ChatInputKeyTests {
    @Test("type UTF-8, edit, send with Enter; Enter closes the line")
    func send() {
        var room = Room(peers: 1)
        room.press(.char("t"))
        room.type("héllo wörld")
        room.press(.backspace)
        room.press(.left)
        room.press(.left)
        room.type("🙂")
        #expect(room.state.chatInput.text == "héllo wö🙂rl")
        #expect(room.state.chatInput.cursor == 9)
        room.press(.end)
        room.type("  ")
        #expect(room.press(.enter) == [.sendChat("héllo wö🙂rl")])
        #expect(room.lastChat == ChatEntry(sender: "me", text: "héllo wö🙂rl", time: room.clock, kind: .own))
        #expect(!room.state.isChatInputOpen && room.state.chatInput.text.isEmpty)
        // Enter on an empty line closes the input too.
        room.press(.char("t"))
        #expect(room.press(.enter) == [])
        #expect(!room.state.isChatInputOpen)
    }

    @Test(
        "after a sent line the bar's hotkeys work again",
        arguments: [
            (Key.char("m"), [RoomEffect.setMicrophoneMuted(true)]), (.char("v"), [.setCameraEnabled(false)]),
        ])
    func hotkeyAfterSending(key: Key, effects: [RoomEffect]) {
        var room = Room(peers: 1)
        room.press(.char("t"))
        room.type("hi")
        #expect(room.press(.enter) == [.sendChat("hi")])
        #expect(room.press(key) == effects)
        #expect(room.state.chatInput.text.isEmpty, "the hotkey was not typed into the chat")
        room.press(.char("q"))
        #expect(room.state.leavePending)
    }

    struct HostCase: Sendable, CustomTestStringConvertible {
        var line: String
        var host: Bool
        var effects: [RoomEffect]
        var notice: String?
        var testDescription: String { "\(line) as \(host ? "host" : "member")" }
    }

    @Test(
        "the host's commands in the chat line",
        arguments: [
            HostCase(line: "/allow p2", host: true, effects: [.allowBroadcast(peer(2))]),
            HostCase(line: "/remove P3", host: true, effects: [.removeParticipant(peer(3))]),
            HostCase(line: "/allow m2", host: true, effects: [.readmit("m2")]),
            HostCase(
                line: "/remove m2", host: true, effects: [], notice: "Nobody called m2 is in the room"),
            HostCase(
                line: "/remove p2", host: false, effects: [],
                notice: "Only the host can remove members; the host is p3"),
            HostCase(
                line: "/kick p2", host: true, effects: [],
                notice:
                    "/kick is not a chat command. Chat commands: /dm NAME [TEXT], /room, /allow NAME, /remove NAME, "
                    + "/norecord [off], /control NAME (? lists what they do)"),
            HostCase(line: "/norecord", host: true, effects: [.setRecordingAllowed(false)]),
            HostCase(line: "/norecord off", host: true, effects: [.setRecordingAllowed(true)]),
            HostCase(
                line: "/norecord p2", host: true, effects: [],
                notice:
                    "Host commands: /allow NAME: let NAME broadcast, or back in after a removal; /remove NAME: remove "
                    + "NAME from the room until allowed back; /norecord [off]: forbid recording in the room "
                    + "(/norecord off allows it)"),
            HostCase(
                line: "/allow", host: true, effects: [],
                notice:
                    "Host commands: /allow NAME: let NAME broadcast, or back in after a removal; /remove NAME: remove "
                    + "NAME from the room until allowed back; /norecord [off]: forbid recording in the room "
                    + "(/norecord off allows it)"),
            HostCase(
                line: "/norecord", host: false, effects: [],
                notice: "Only the host can forbid or allow recording; the host is p3"),
        ])
    func hostCommands(_ row: HostCase) {
        var room = Room(peers: 2)
        room.send(.hostChanged(row.host ? me : peer(3)))
        room.press(.char("t"))
        room.type(row.line)
        #expect(room.press(.enter) == row.effects)
        #expect(room.notice == row.notice)
    }

    @Test("a greeting is said once, after the members already there and the host: the newest line as the call starts")
    func greetingComesLast() {
        var state = RoomState(roomName: "demo", localName: "you")
        state.greeting = "Welcome to the demo"
        _ = reduce(&state, .event(.joined(localID: me)))
        _ = reduce(&state, .event(.userJoined(peer(2), name: "ana", role: .broadcaster)))
        #expect(state.chatLog.last?.text == "ana joined")
        _ = reduce(&state, .event(.hostChanged(peer(2))))
        #expect(state.chatLog.entries.suffix(2).map(\.text) == ["ana is the host", "Welcome to the demo"])
        _ = reduce(&state, .event(.hostChanged(me)))
        #expect(state.chatLog.entries.filter { $0.text == "Welcome to the demo" }.count == 1, "once")
    }

    @Test("a member the host removes while they reconnect (a relay restart) is removed under their new id")
    func removalWhileReconnecting() {
        var room = Room(peers: 2)
        room.send(.hostChanged(me))
        room.send(.userOffline(peer(2), reason: .dropped))
        room.press(.char("t"))
        room.type("/remove p2")
        #expect(room.press(.enter) == [], "the old id is gone with the old connection: nothing to send yet")
        #expect(room.lastChat?.text == "p2 is reconnecting: they will be removed as soon as they are back")
        // Back under a new id (the restarted relay gave them one): the removal goes out for it.
        #expect(room.send(.userJoined(peer(7), name: "p2", role: .broadcaster)) == [.removeParticipant(peer(7))])
        #expect(room.lastChat?.text == "You removed p2 from the room")
        #expect(room.state.removalsAwaitingReturn.isEmpty)
        // Once only: a later join of that name is not removed again.
        room.send(.userOffline(peer(7), reason: .dropped))
        #expect(room.send(.userJoined(peer(8), name: "p2", role: .broadcaster)) == [])

        // Someone who never comes back: the pending removal is said to be dropped with them.
        room.send(.userOffline(peer(3), reason: .dropped))
        room.press(.char("t"))
        room.type("/remove p3")
        room.press(.enter)
        room.tick(after: 16_000)
        #expect(room.state.removalsAwaitingReturn.isEmpty)
        #expect(room.lastChat?.text == "p3 was not removed: they did not come back (/remove them if they do)")
    }

    @Test("the help overlay scrolls within an 80x24 screen, so every key and every chat command can be read")
    func helpScrolls() throws {
        var room = Room(peers: 1)
        _ = reduce(&room.state, .screen(columns: 80, rows: 24))
        room.press(.char("?"))
        let layout = try #require(room.state.helpLayout)
        #expect(layout.visibleRows == 22)
        #expect(layout.maximumScroll > 0, "the help is taller than 24 rows")
        let text = layout.rows.map { $0.keys + " " + $0.text }.joined(separator: "\n")
        for command in RoomCommand.allCases {
            #expect(text.contains(room.state.settings.keymap.keyLabels(for: command)), "\(command) listed")
        }
        for command in ChatCommand.allCases {
            #expect(layout.rows.contains { $0.keys == command.usage }, "\(command.usage) listed")
        }
        let steps: [(Key, Int)] = [
            (.down, 1), (.char("j"), 2), (.up, 1), (.char("k"), 0), (.up, 0), (.pageDown, 21),
            (.end, layout.maximumScroll),
            (.down, layout.maximumScroll), (.pageUp, layout.maximumScroll - 21), (.home, 0),
        ]
        for (key, expected) in steps {
            room.press(key)
            #expect(room.state.helpScroll == max(0, expected), "after \(key)")
            #expect(room.state.helpShown)
        }
        room.press(.end)
        room.press(.escape)
        #expect(!room.state.helpShown)
        room.press(.char("?"))
        #expect(room.state.helpScroll == 0, "help opens at its top")
        // A taller screen that fits it all: nothing to scroll, and an offset beyond it is pulled back.
        room.press(.end)
        _ = reduce(&room.state, .screen(columns: 160, rows: 60))
        #expect(room.state.helpLayout?.maximumScroll == 0)
        #expect(room.state.helpScroll == 0)
    }

    @Test("chat arriving while the chat pane is hidden is counted in the header until it is shown")
    func unseenChat() {
        var room = Room(peers: 1)
        room.send(.chatMessage(from: peer(2), text: "seen"))
        #expect(room.state.unseenChat == 0)
        room.press(.char("h"))
        room.send(.chatMessage(from: peer(2), text: "one"))
        room.send(.channelMessage(sender: "carol", text: "two"))
        room.send(.chatMessage(from: peer(2), text: "   "))
        #expect(room.state.unseenChat == 2)
        #expect(room.state.takeChanges().contains(.status))
        room.press(.char("h"))
        #expect(room.state.unseenChat == 0)
        room.press(.char("h"))
        room.send(.chatMessage(from: peer(2), text: "three"))
        room.press(.char("t"))
        #expect(room.state.unseenChat == 0, "opening the chat line shows the pane")
    }

    @Test("keys that are commands elsewhere are text while typing")
    func commandsAreText() {
        var room = Room(peers: 2)
        room.press(.enter)
        #expect(room.type("mq12") == [])
        #expect(room.state.chatInput.text == "mq12")
        #expect(!room.state.microphoneMuted && !room.state.leavePending && room.state.selected == nil)
    }

    @Test("Esc closes and keeps the draft; Ctrl-C discards it; Ctrl-U clears; Ctrl-W deletes a word")
    func closing() {
        var room = Room()
        room.press(.char("t"))
        room.type("draft one")
        room.press(.escape)
        #expect(!room.state.isChatInputOpen && room.state.chatInput.text == "draft one")
        room.press(.char("t"))
        room.press(.control("w"))
        #expect(room.state.chatInput.text == "draft ")
        room.press(.control("u"))
        #expect(room.state.chatInput.text.isEmpty)
        room.type("gone")
        room.press(.control("c"))
        #expect(!room.state.isChatInputOpen && room.state.chatInput.text.isEmpty && !room.state.leavePending)
    }

    @Test("the message length is limited")
    func limit() {
        var settings = RoomSettings()
        settings.maximumChatBytes = 4
        var room = Room(settings: settings)
        room.press(.char("t"))
        room.type("abcde")
        #expect(room.state.chatInput.text == "abcd")
        #expect(room.notice == "Messages are limited to 4 bytes")
    }

    @Test("a double-click still fullscreens while typing")
    func doubleClickWhileTyping() {
        var room = Room(peers: 2)
        room.press(.char("t"))
        room.press(.mouseDoubleClick(column: 60, row: 5))
        #expect(room.state.fullscreen == peer(2) && room.state.isChatInputOpen)
    }
}

@Suite("Room reducer: redraw flags")
struct ChangeTests {
    @Test("inputs say what changed")
    func changes() {
        var room = Room(peers: 1)
        _ = room.state.takeChanges()
        room.send(.chatMessage(from: peer(2), text: "hi"))
        #expect(room.state.takeChanges() == .chat)
        room.press(.char("m"))
        #expect(room.state.takeChanges() == [.controls, .tiles])
        room.press(.char("?"))
        #expect(room.state.takeChanges() == .overlay)
        #expect(room.state.takeChanges() == [])
    }

    @Test("ticks change the header only when the call's length reaches a new second")
    func ticksPerSecond() throws {
        var room = Room(peers: 1)
        let started = try #require(room.state.callStartedAt)
        _ = room.state.takeChanges()
        // From the next whole second of the call on, ten ticks of 100 ms: one new second, at the tenth.
        let intoSecond = room.state.now - started
        room.tick(after: 1000 - Int64(intoSecond.components.attoseconds / 1_000_000_000_000_000))
        #expect(room.state.takeChanges() == .status)
        var changed: [Int] = []
        for tick in 1...10 {
            room.tick(after: 100)
            if room.state.takeChanges().contains(.status) { changed.append(tick) }
        }
        #expect(changed == [10])
    }
}

@Suite("Room reducer: local devices")
struct LocalDeviceTests {
    @Test("the microphone meter appears with the first level, redraws only when its step changes, and goes with nil")
    func meter() {
        var room = Room()
        #expect(room.state.microphoneLevel == nil)
        _ = room.state.takeChanges()
        room.send(.microphoneLevel(0.5))
        #expect(room.state.microphoneLevel == 0.5)
        #expect(room.state.takeChanges().contains(.tiles))
        room.send(.microphoneLevel(0.51))
        #expect(!room.state.takeChanges().contains(.tiles), "same step of the meter: nothing to redraw")
        room.send(.microphoneLevel(0.9))
        #expect(room.state.takeChanges().contains(.tiles))
        room.send(.microphoneLevel(7))
        #expect(room.state.microphoneLevel == 1, "levels are clamped to 0…1")
        room.send(.microphoneLevel(.nan))
        #expect(room.state.microphoneLevel == 0)
        room.send(.microphoneLevel(nil))
        #expect(room.state.microphoneLevel == nil)
    }

    @Test("a notice shows in the status line and expires; an empty one is ignored")
    func notice() {
        var room = Room()
        room.send(.notice(""))
        #expect(room.notice == nil)
        room.send(.notice("Camera: Integrated Webcam"))
        #expect(room.notice == "Camera: Integrated Webcam")
        #expect(room.lastChat?.text != "Camera: Integrated Webcam", "a notice is not a chat line")
        room.tick(after: 3100)
        #expect(room.notice == nil)
    }

    @Test("a camera that stopped turns the local camera off and says why in the chat pane")
    func cameraStopped() {
        var room = Room()
        #expect(room.state.cameraEnabled)
        room.send(.cameraStopped("Camera Webcam stopped (disconnected): your camera is off"))
        #expect(!room.state.cameraEnabled)
        #expect(room.lastChat?.text == "Camera Webcam stopped (disconnected): your camera is off")
        #expect(room.lastChat?.kind == .alert)
        #expect(room.press(.char("v")) == [.setCameraEnabled(true)], "v turns it back on (the next source)")
    }
}

@Suite("Room reducer: direct messages and the room's kept chat in the chat pane")
struct DirectChatTests {
    @Test("/dm NAME shows the conversation, lines typed there go to NAME, /room goes back")
    func slashCommands() {
        var room = Room(peers: 1)
        room.press(.char("t"))
        room.type("/dm bob")
        #expect(room.press(.enter) == [.openDirect("bob")])
        #expect(room.state.directPeer == "bob" && room.state.chatTitle == "DM · bob")
        room.send(
            .directConversation(peer: "bob", [ChatEntry(sender: "bob", text: "lunch?", time: .zero, kind: .chat)]))
        #expect(room.state.shownChat.entries.map(\.formatted) == ["bob: lunch?"])
        room.press(.char("t"))
        room.type("yes")
        #expect(room.press(.enter) == [.sendDirect(to: "bob", text: "yes")])
        #expect(room.state.shownChat.last?.formatted == "me: yes" && room.state.shownChat.last?.kind == .own)
        #expect(room.state.chatLog.entries.allSatisfy { $0.text != "yes" }, "the room never saw it")
        room.press(.char("t"))
        room.type("/room")
        #expect(room.press(.enter).isEmpty)
        #expect(room.state.directPeer == nil && room.state.chatTitle == "Chat")
        room.press(.char("t"))
        room.type("hello room")
        #expect(room.press(.enter) == [.sendChat("hello room")])
        // One step: open and send.
        room.press(.char("t"))
        room.type("/dm carol see you at 3")
        #expect(room.press(.enter) == [.openDirect("carol"), .sendDirect(to: "carol", text: "see you at 3")])
        room.press(.char("t"))
        room.type("/dm")
        room.press(.enter)
        #expect(room.notice?.contains("/dm NAME") == true)
    }

    @Test("a message from someone not shown is counted and announced; the dm key opens it and switches back")
    func unreadAndTheKey() {
        var room = Room(peers: 1)
        room.press(.char("d"))
        #expect(room.notice?.contains("/dm NAME") == true, "nobody to switch to yet")
        room.send(.directMessage(peer: "bob", sender: "bob", text: "got a minute?"))
        #expect(room.state.directUnread == 1 && room.state.chatTitle == "Chat · 1 new DM")
        #expect(room.notice == "Message from bob: press d to read and answer")
        room.send(.directMessage(peer: "bob", sender: "bob", text: "it's quick"))
        #expect(room.state.chatTitle == "Chat · 2 new DMs")
        #expect(room.press(.char("d")) == [.openDirect("bob")])
        #expect(room.state.directPeer == "bob" && room.state.directUnread == 0)
        // Live while shown; our own lines from another device show as ours.
        room.send(.directMessage(peer: "bob", sender: "bob", text: "still there?"))
        room.send(.directMessage(peer: "bob", sender: "me", text: "yes (from my phone)"))
        #expect(room.state.shownChat.entries.suffix(2).map(\.kind) == [.chat, .own])
        room.send(.directProblem("Not sent: no account is named bobb"))
        #expect(room.state.shownChat.last?.kind == .alert)
        #expect(room.press(.char("d")).isEmpty)
        #expect(room.state.directPeer == nil)
        #expect(room.press(.char("M")) == [.openMessages])
    }

    @Test("the room's kept lines go above what arrived since, marked")
    func earlierChat() {
        var room = Room(peers: 1)
        room.send(.chatMessage(from: peer(2), text: "live line"))
        room.send(
            .earlierChat([
                ChatEntry(sender: "carol (guest)", text: "agenda: demo first", time: .zero, kind: .chat),
                ChatEntry(
                    sender: nil, text: "carol (guest) joined the call (1 in the call)", time: .zero, kind: .system),
            ]))
        #expect(
            room.state.chatLog.entries.map(\.formatted) == [
                "carol (guest): agenda: demo first", "* carol (guest) joined the call (1 in the call)",
                "* earlier in standup above", "* You joined standup as me", "* p2 joined", "p2: live line",
            ])
        room.send(.channelMessage(sender: "bob ✓", text: "joining in 5"))
        #expect(room.lastChat?.formatted == "bob ✓: joining in 5")
    }
}

@Suite("Room reducer: the invite link")
struct InviteTests {
    @Test(
        "l shows the meeting link in the chat and asks the shell to copy it, again the web form; without one it says so"
    )
    func invite() {
        var room = Room(peers: 1)
        #expect(room.press(.char("l")).isEmpty)
        #expect(room.notice == "No meeting link for this call")
        room.state.inviteLink = "parley://relay.example:7878/standup"
        #expect(room.press(.char("l")) == [.copyToClipboard("parley://relay.example:7878/standup")])
        #expect(room.lastChat?.text.hasPrefix("Invite: parley://relay.example:7878/standup") == true)
        #expect(room.notice == "Copied parley://relay.example:7878/standup")
        // With the web form known, the first press names both and copies the meeting link, the next the web form.
        room.state.webLink = "https://relay.example:7878/standup"
        #expect(room.press(.char("l")) == [.copyToClipboard("parley://relay.example:7878/standup")])
        #expect(room.lastChat?.text == "From a browser: https://relay.example:7878/standup (l again copies it)")
        #expect(room.notice == "Copied parley://relay.example:7878/standup (l again: the browser link)")
        #expect(room.press(.char("l")) == [.copyToClipboard("https://relay.example:7878/standup")])
        #expect(room.notice == "Copied https://relay.example:7878/standup (for a browser)")
        #expect(room.press(.char("l")) == [.copyToClipboard("parley://relay.example:7878/standup")])
    }
}

@Suite("Room reducer: roster and activity")
struct RosterTests {
    @Test(
        "r toggles the roster and Esc hides it; joins, leaves, roles, the host and the connection are logged with their times"
    )
    func rosterAndActivity() {
        var room = Room()
        room.tick(after: 1000)
        room.send(.userJoined(peer(2), name: "bob", role: .broadcaster))
        room.send(.hostChanged(me))
        room.send(.roleChanged(peer(2), .audience))
        room.send(.alert(.interrupted))
        #expect(room.state.disconnectedAt == room.clock, "the member list is as of now")
        room.send(.alert(.reconnected))
        #expect(room.state.disconnectedAt == nil)
        room.send(.userOffline(peer(2), reason: .quit))
        #expect(
            room.state.activity.map(\.text) == [
                "You joined standup as me", "bob joined", "You are the host", "bob is now in the audience",
                "Connection interrupted", "Reconnected", "bob left",
            ])
        #expect(room.state.activity[1].at == .milliseconds(1000))
        #expect(room.state.sessions[0].joinedAt == .zero)
        room.press(.char("r"))
        #expect(room.state.rosterShown)
        room.press(.escape)
        #expect(!room.state.rosterShown)
        room.press(.char("r"))
        room.press(.char("r"))
        #expect(!room.state.rosterShown)
    }

    @Test("the activity log is bounded, the oldest going first")
    func bounded() {
        var room = Room()
        for n in 0..<(RoomState.activityLimit + 10) {
            let id = peer(UInt32(n + 2))
            room.send(.userJoined(id, name: "p\(n)", role: .broadcaster))
            room.send(.userOffline(id, reason: .quit))
        }
        #expect(room.state.activity.count == RoomState.activityLimit)
        #expect(room.state.activity.last?.text == "p\(RoomState.activityLimit + 9) left")
    }
}

@Suite("Room reducer: speaker view")
struct SpeakerViewTests {
    @Test("a shows the dominant speaker large; the large tile changes at most every 2 s; Esc returns to the grid")
    func followsTheFloorWithAHold() {
        var room = Room(peers: 3)
        room.press(.char("a"))
        #expect(room.state.speakerView && room.state.largeTile == peer(2), "nobody spoke yet: the first peer")
        room.send(.dominantSpeaker(peer(3)))
        #expect(room.state.largeTile == peer(3))
        #expect(room.state.currentLayout.tiles.first { $0.id == peer(3) }?.kind == .full)
        // The floor changes hands twice within a second: the view holds p3 until 2 s have passed, then shows p4.
        room.tick(after: 500)
        room.send(.dominantSpeaker(peer(4)))
        room.tick(after: 500)
        room.send(.dominantSpeaker(peer(2)))
        room.send(.dominantSpeaker(peer(4)))
        #expect(room.state.largeTile == peer(3), "held: 1 s since the last change")
        room.tick(after: 999)
        #expect(room.state.largeTile == peer(3), "held: 1.999 s")
        room.tick(after: 1)
        #expect(room.state.largeTile == peer(4), "2 s: the speaker who now holds the floor")
        // The local user holding the floor never fills the screen.
        room.tick(after: 3000)
        room.send(.dominantSpeaker(me))
        room.tick(after: 3000)
        #expect(room.state.largeTile == peer(4))
        // The featured speaker leaves: the next speaker is shown at once, hold or not.
        room.send(.dominantSpeaker(peer(2)))
        room.tick(after: 2000)
        #expect(room.state.largeTile == peer(2))
        room.send(.dominantSpeaker(peer(3)))
        room.send(.userOffline(peer(2), reason: .quit))
        #expect(room.state.largeTile == peer(3), "p2 left: p3 at once")
        room.press(.escape)
        #expect(!room.state.speakerView && room.state.largeTile == nil)
    }

    @Test("a fullscreen chosen by hand wins over speaker view; a again clears it")
    func fullscreenWins() {
        var room = Room(peers: 3)
        room.press(.char("a"))
        room.send(.dominantSpeaker(peer(3)))
        room.press(.char("4"), after: 1000)
        room.press(.char("4"), after: 100)
        #expect(room.state.largeTile == peer(4))
        room.press(.char("a"))
        #expect(!room.state.speakerView && room.state.fullscreen == nil && room.state.largeTile == nil)
    }

    @Test("the audience's control bar has no microphone, camera or filter buttons")
    func audienceControls() {
        let audience = Room(peers: 2, role: .audience)
        let commands = ControlBar.items(for: audience.state).map(\.command)
        #expect(!commands.contains(.microphone) && !commands.contains(.camera) && !commands.contains(.filter))
        #expect(commands.contains(.broadcast), "Live stays: asking to broadcast")
        let broadcaster = Room(peers: 2)
        #expect(ControlBar.items(for: broadcaster.state).map(\.command).contains(.microphone))
    }
}

/// Recording as the room sees it: R asks the engine, the relay's notices fill the header's ● REC and the activity,
/// and a room that forbids recording refuses R with the reason.
struct RecordingReducerTests {
    struct NoticeCase: Sendable, CustomTestStringConvertible {
        var who: String?
        var active: Bool
        var encrypted: Bool
        var text: String
        var testDescription: String { text }
    }

    @Test(
        "the words for a recording starting and stopping",
        arguments: [
            NoticeCase(who: "p2", active: true, encrypted: false, text: "p2 started recording the call"),
            NoticeCase(
                who: "p2", active: true, encrypted: true,
                text: "p2 started recording the call (their decrypted view of this end-to-end encrypted room)"),
            NoticeCase(
                who: nil, active: true, encrypted: true,
                text: "You started recording the call (your decrypted view of this end-to-end encrypted room)"),
            NoticeCase(who: "p2", active: false, encrypted: true, text: "p2 stopped recording"),
            NoticeCase(who: nil, active: false, encrypted: false, text: "You stopped recording"),
        ])
    func words(_ row: NoticeCase) {
        #expect(RoomState.recordingText(who: row.who, active: row.active, encrypted: row.encrypted) == row.text)
    }

    @Test func rAsksTheEngineAndTheRelaysNoticeMarksTheRecorders() {
        var room = Room(peers: 2)
        #expect(room.press(.char("R")) == [.setRecording(true)])
        #expect(!room.state.isRecording)
        room.send(.recording(peer(2), name: "p2", active: true, encrypted: false))
        room.send(.recording(me, name: "me", active: true, encrypted: false))
        #expect(room.state.recorders.map(\.id) == [peer(2), me])
        #expect(room.state.isRecording)
        #expect(
            room.state.activity.map(\.text).suffix(2) == [
                "p2 started recording the call", "You started recording the call",
            ])
        #expect(room.press(.char("R")) == [.setRecording(false)])
        // A recorder who leaves records no more.
        room.send(.userOffline(peer(2), reason: .quit))
        #expect(room.state.recorders.map(\.id) == [me])
        room.send(.recording(me, name: "me", active: false, encrypted: false))
        #expect(room.state.recorders.isEmpty)
    }

    @Test func aRoomThatForbidsRecordingRefusesRWithTheReason() {
        var room = Room(peers: 1)
        room.send(.recordingRule(forbidden: "the relay's rooms file forbids it", by: nil))
        #expect(room.press(.char("R")) == [])
        #expect(room.notice == "Recording is not allowed in this room: the relay's rooms file forbids it")
        room.send(.recordingRule(forbidden: nil, by: "p2"))
        #expect(room.state.activity.last?.text == "p2 allows recording again")
        #expect(room.press(.char("R")) == [.setRecording(true)])
    }
}

@Suite("Room reducer: shared terminals")
struct SharedTerminalTests {
    /// me and p2, then alice's terminal (id 9, 200x60) joined: the room knows it is a terminal, and whose.
    fileprivate static func room() -> Room {
        var room = Room(peers: 1)
        room.send(.userJoined(peer(9), name: "alice's terminal", role: .broadcaster))
        room.send(.sharesTerminal(peer(9), owner: "alice"))
        room.send(.firstRemoteFrame(peer(9), size: VideoSize(width: 200, height: 60)))
        return room
    }

    @Test func aTerminalIsKnownAsOneAndSSaysWhoSharesAndHow() {
        var room = Self.room()
        #expect(room.state.sessions.first { $0.id == peer(9) }?.sharedBy == "alice")
        #expect(room.state.sessions.first { $0.id == peer(2) }?.isTerminal == false)
        room.press(.char("S"))
        let lines = room.state.chatLog.entries.suffix(2).map(\.text)
        #expect(lines.first?.contains("alice shares a terminal") == true, "\(lines)")
        #expect(lines.last?.contains("parley share ROOM --server HOST:PORT") == true, "\(lines)")
    }

    @Test func nobodySharingIsSaid() {
        var room = Room(peers: 1)
        room.press(.char("S"))
        #expect(room.state.chatLog.entries.suffix(2).first?.text == "Nobody shares a terminal in this call")
    }

    /// Rows: a key, then the pan it leaves (fullscreen beside the strip, the tile's inside is 58x18; 200x60 shared).
    static let pans: [(Key, SharePan)] = [
        (.down, SharePan(column: 0, row: 1)),
        (.right, SharePan(column: 8, row: 1)),
        (.left, SharePan(column: 0, row: 1)),
        (.left, SharePan(column: 0, row: 1)),
        (.pageDown, SharePan(column: 0, row: 19)),
        (.end, SharePan(column: 142, row: 42)),
        (.pageDown, SharePan(column: 142, row: 42)),
        (.home, SharePan()),
    ]

    @Test func arrowsPanATerminalShownLargeWithinItsEdges() {
        var room = Self.room()
        // In the grid the arrows pan nothing.
        room.press(.down)
        #expect(room.state.sharePan == SharePan())
        room.press(.char("3"), after: 1000)
        room.press(.char("3"), after: 100)
        #expect(room.state.largeShare == peer(9))
        for (key, pan) in Self.pans {
            room.press(key)
            #expect(room.state.sharePan == pan, "after \(key)")
        }
        room.press(.down)
        // Back to the grid: the pan starts again at the top left next time.
        room.press(.escape)
        #expect(room.state.fullscreen == nil && room.state.sharePan == SharePan())
    }
}

@Suite("Room reducer: typing in a shared terminal")
struct ShareControlTests {
    /// me (id 1) with p2, and my own terminal (id 9) shared: "me's terminal".
    fileprivate static func room() -> Room {
        var room = Room(peers: 1)
        room.send(.userJoined(peer(9), name: "me's terminal", role: .broadcaster))
        room.send(.sharesTerminal(peer(9), owner: "me"))
        room.send(.firstRemoteFrame(peer(9), size: VideoSize(width: 80, height: 24)))
        return room
    }

    fileprivate static func chat(_ room: inout Room, _ line: String) -> [RoomEffect] {
        room.press(.char("t"))
        room.type(line)
        return room.press(.enter)
    }

    @Test func theSharerGivesTypingByNameAndTakesItBack() {
        var room = Self.room()
        #expect(Self.chat(&room, "/control P2") == [.grantControl(terminal: peer(9), to: peer(2))])
        #expect(Self.chat(&room, "/control off") == [.grantControl(terminal: peer(9), to: nil)])
        #expect(Self.chat(&room, "/control zed").isEmpty)
        #expect(room.notice == "Nobody called zed is in the call")
        #expect(Self.chat(&room, "/control").isEmpty)
        #expect(room.notice?.hasPrefix("/control NAME: ") == true)
    }

    @Test func withoutAShareOfOnesOwnThereIsNothingToGive() {
        var room = Room(peers: 1)
        room.send(.userJoined(peer(9), name: "p2's terminal", role: .broadcaster))
        room.send(.sharesTerminal(peer(9), owner: "p2"))
        #expect(Self.chat(&room, "/control p2").isEmpty)
        #expect(room.notice?.hasPrefix("You share no terminal in this call") == true, "\(room.notice ?? "")")
    }

    @Test func keysGoToATerminalOnlyWhileLetTypeAndShownLargeAndCtrlBracketGivesThemBack() {
        var room = Room(peers: 2)
        room.send(.userJoined(peer(9), name: "p2's terminal", role: .broadcaster))
        room.send(.sharesTerminal(peer(9), owner: "p2"))
        room.send(.firstRemoteFrame(peer(9), size: VideoSize(width: 80, height: 24)))
        // Not let type: m mutes as ever.
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(true)])
        room.send(.shareController(peer(9), controller: me))
        #expect(room.state.chatLog.last?.text.hasPrefix("You can type in p2's terminal") == true)
        // Let type, but the terminal is not large: still the call's keys.
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(false)])
        room.press(.char("4"), after: 1000)
        room.press(.char("4"), after: 100)
        #expect(room.state.typingInto == peer(9))
        #expect(room.press(.char("m")) == [.typeIntoShare(peer(9), [0x6D])])
        #expect(room.press(.control("c")) == [.typeIntoShare(peer(9), [0x03])])
        #expect(room.press(.up) == [.typeIntoShare(peer(9), Array("\u{1B}[A".utf8))])
        #expect(room.press(.char("日")) == [.typeIntoShare(peer(9), Array("日".utf8))])
        // Ctrl-] gives the keys back to the call, and takes them again.
        #expect(room.press(.control("]")).isEmpty && room.state.typingInto == nil)
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(true)])
        room.press(.control("]"))
        #expect(room.press(.enter) == [.typeIntoShare(peer(9), [0x0D])])
        // Taken back by the sharer: the keys are the call's again.
        room.send(.shareController(peer(9), controller: nil))
        #expect(room.state.chatLog.last?.text == "Nobody can type in p2's terminal now")
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(false)])
    }

    @Test(
        "keys as a terminal sends them",
        arguments: [
            (Key.char("a"), [UInt8]([0x61])), (.enter, [0x0D]), (.escape, [0x1B]), (.tab, [0x09]),
            (.backspace, [0x7F]), (.delete, Array("\u{1B}[3~".utf8)), (.left, Array("\u{1B}[D".utf8)),
            (.home, Array("\u{1B}[H".utf8)), (.pageDown, Array("\u{1B}[6~".utf8)),
            (.function(1), Array("\u{1B}OP".utf8)),
            (.function(12), Array("\u{1B}[24~".utf8)), (.control("a"), [0x01]), (.control("Z"), [0x1A]),
        ])
    func terminalKeys(key: Key, bytes: [UInt8]) {
        #expect(TerminalKeys.bytes(for: key) == bytes)
    }

    @Test func mouseAndResizeAreNotTyped() {
        #expect(TerminalKeys.bytes(for: .resize) == nil)
        #expect(TerminalKeys.bytes(for: .mouseClick(column: 1, row: 1)) == nil)
    }
}
