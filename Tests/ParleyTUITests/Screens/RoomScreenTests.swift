import ParleyMedia
import ParleyRoom
import ParleyWire
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Room screen")
struct RoomScreenTests {
    static let theme = Theme(depth: .palette256)
    static let names = ["bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"]

    static let corners: Set<Character> = ["┌", "┏", "╔"]
    static let endCorners: Set<Character> = ["┘", "┛", "╝"]

    struct Grid: Sendable, CustomTestStringConvertible {
        var size: TerminalSize
        var people: Int
        var testDescription: String { "\(people) people at \(size.columns)x\(size.rows)" }
    }

    static let grids: [Grid] = [
        TerminalSize(columns: 80, rows: 24), TerminalSize(columns: 160, rows: 48),
        TerminalSize(columns: 200, rows: 60), TerminalSize(columns: 100, rows: 30),
    ]
    .flatMap { size in [1, 2, 3, 4, 9].map { Grid(size: size, people: $0) } }

    @Test("the header says when media goes over TCP, and stops saying it when it is back on UDP")
    func headerSaysMediaOverTCP() {
        var room = RoomFixture.withPeers(["bob"])
        #expect(!room.render(RoomFixture.small).text(row: 0).contains("media over TCP"))
        _ = room.send(.event(.mediaOverTCP(true)))
        #expect(room.render(RoomFixture.small).text(row: 0).contains("media over TCP"))
        _ = room.send(.event(.mediaOverTCP(false)))
        #expect(!room.render(RoomFixture.small).text(row: 0).contains("media over TCP"))
    }

    @Test("the container the reducer gets is where the tiles are drawn", arguments: grids)
    func containerMatchesTiles(_ grid: Grid) throws {
        var room = RoomFixture.withPeers(Array(Self.names.prefix(grid.people - 1)))
        let screen = room.render(grid.size)
        let layout = RoomScreenLayout(size: grid.size, state: room.state)
        let container = try #require(room.state.container)
        #expect(container == layout.video)
        let tiles = room.state.layout(in: container).tiles
        #expect(!tiles.isEmpty)
        for tile in tiles {
            let rect = tile.rect
            #expect(container.contains(rect), "\(rect) outside \(container)")
            #expect(Self.corners.contains(screen[rect.x, rect.y].character), "no tile corner at \(rect)")
            #expect(Self.endCorners.contains(screen[rect.maxX - 1, rect.maxY - 1].character), "no end at \(rect)")
            let name = try #require(room.state.session(tile.id)).name
            #expect(screen.text(row: rect.y).contains(name), "\(name) missing from the top edge of \(rect)")
        }
        // Nothing of the tiles leaks into the header or the rows below the container.
        #expect(!screen.text(row: 0).contains("┌"))
        if container.maxY < grid.size.rows {
            #expect(!Self.corners.contains(where: { screen.text(row: container.maxY).contains($0) }))
        }
    }

    @Test(
        "a double-click on a drawn tile fullscreens that participant",
        arguments: [RoomFixture.small, RoomFixture.large])
    func doubleClickHitsDrawnTile(size: TerminalSize) throws {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        let screen = room.render(size)
        let column = try #require(screen.column(of: "carol", row: screen.rows(containing: "carol").first ?? 0))
        let row = try #require(screen.rows(containing: "carol").first)
        room.press(.mouseDoubleClick(column: column + 2, row: row + 3))
        #expect(room.state.fullscreen == ParticipantID(3))
        let full = room.render(size)
        let container = try #require(room.state.container)
        #expect(full.text(row: container.y).contains("3 carol"))
        #expect(full[container.x, container.y].character == "╔")
    }

    @Test(
        "the control bar says mic off after m, in the inactive colour",
        arguments: [RoomFixture.small, RoomFixture.large])
    func micOff(size: TerminalSize) throws {
        var room = RoomFixture.withPeers(["bob"])
        var screen = room.render(size)
        let bar = size.rows - 1
        #expect(!screen.text(row: bar).contains("Mic off"))
        #expect(room.press(.char("m")) == [.setMicrophoneMuted(true)])
        screen = room.render(size)
        let column = try #require(screen.column(of: "Mic off", row: bar))
        let inactive = Self.theme.style(.controlBar).overlaid(with: Self.theme.style(.controlBarInactive))
        for offset in 0..<7 {
            #expect(screen[column + offset, bar].style == inactive)
        }
        #expect(screen[column - 2, bar].character == "m")
        #expect(screen[column - 2, bar].style.background == Self.theme.style(.controlBarKey).background)
        // The own tile says so too.
        #expect(screen.rows(containing: "mic off").count == 1)
    }

    @Test("a live toggle shows in the active colour with its state at 160 columns")
    func micOnActive() throws {
        var room = RoomFixture.withPeers(["bob"])
        let screen = room.render(RoomFixture.large)
        let column = try #require(screen.column(of: "Mic on", row: 47))
        let active = Self.theme.style(.controlBar).overlaid(with: Self.theme.style(.controlBarActive))
        #expect(screen[column, 47].style == active)
    }

    struct BarCase: Sendable, CustomTestStringConvertible {
        var name: String
        var width: Int
        var keys: [Key]
        var text: String
        var testDescription: String { name }
    }

    static let barCases: [BarCase] = [
        BarCase(
            name: "wide: every state, two-cell gaps", width: 160, keys: [],
            text: " m Mic on  v Video on  c Switch  s Speaker on  f Sepia off  b Live on"
                + "  t Chat  i Stats  R Rec off  ? Help  q Leave"
        ),
        BarCase(
            name: "110: one-cell gaps", width: 110, keys: [],
            text: " m Mic on v Video on c Switch s Speaker on f Sepia off b Live on t Chat i Stats R Rec off ? Help"
                + " q Leave"),
        BarCase(
            name: "100: key and label only, Rec kept", width: 100, keys: [],
            text: " m Mic v Video c Switch s Speaker f Sepia b Live t Chat i Stats R Rec ? Help q Leave"),

        BarCase(
            name: "80, filter on: only unusual states, Switch dropped", width: 80, keys: [.char("f")],
            text: " m Mic v Video s Speaker f Sepia on b Live t Chat i Stats ? Help q Leave"),
        BarCase(
            name: "80, muted and camera off: Switch goes first", width: 80, keys: [.char("m"), .char("v")],
            text: " m Mic off v Video off s Speaker f Sepia b Live t Chat i Stats ? Help q Leave"),
        BarCase(
            name: "80 as a call starts: key and label only", width: 80, keys: [],
            text: " m Mic v Video c Switch s Speaker f Sepia b Live t Chat i Stats ? Help q Leave"),
        BarCase(
            name: "40: only the most used buttons", width: 40, keys: [.char("m")],
            text: " m Mic off v Video t Chat ? Help q Leave"),
    ]

    @Test("the bar drops words, then buttons, to fit", arguments: barCases)
    func barArrangement(_ row: BarCase) {
        var room = RoomFixture.withPeers(["bob"])
        for key in row.keys { room.press(key) }
        let runs = ControlBarView.runs(items: ControlBar.items(for: room.state), width: row.width, theme: Self.theme)
        let text = runs.map(\.text).joined()
        #expect(text == row.text)
        #expect(DisplayWidth.of(text) <= row.width)
    }

    @Test("the roster shows each member's time in the call as the relay counts it, not since this client joined")
    func rosterJoinTimes() throws {
        var room = RoomFixture()
        room.advance(to: 20)
        // Present before us: the relay says alice-host has been there 9 minutes, dan 30 seconds.
        room.send(.event(.userJoined(ParticipantID(7), name: "ana", role: .broadcaster, inCallFor: .seconds(540))))
        room.send(.event(.userJoined(ParticipantID(8), name: "dan", role: .broadcaster, inCallFor: .seconds(30))))
        room.advance(to: 40)
        room.send(.event(.userJoined(ParticipantID(9), name: "eve", role: .broadcaster)))
        room.advance(to: 60)
        room.press(.char("r"))
        let screen = room.render(RoomFixture.large)
        func line(_ name: String) throws -> String {
            screen.text(row: try #require(screen.rows(containing: name + "  broadcaster").first))
        }
        let (ana, dan, eve, alice) = (try line("ana"), try line("dan"), try line("eve"), try line("alice (you)"))
        #expect(ana.contains("09:40 in the call"), "\(ana)")
        #expect(dan.contains("01:10 in the call"), "\(dan)")
        #expect(eve.contains("00:20 in the call"), "\(eve)")
        #expect(alice.contains("01:00 in the call"), "\(alice)")
    }

    @Test("alert lines fill their row in the alert style; system lines are dim")
    func alertStyle() throws {
        var room = RoomFixture.withPeers(["bob"])
        room.send(.event(.alert(.lost)))
        let screen = room.render(RoomFixture.small)
        let row = try #require(screen.rows(containing: "! Still reconnecting").first)
        let alert = Self.theme.style(.chatAlert)
        let lines = try #require(RoomScreenLayout(size: RoomFixture.small, state: room.state).chatLines)
        for column in lines.x..<lines.maxX {
            #expect(screen[column, row].style == alert)
        }
        let system = try #require(screen.rows(containing: "* bob joined").first)
        #expect(screen[lines.x, system].style == Self.theme.style(.chatSystem))
        #expect(screen[lines.x - 1, row].style != alert)
    }

    @Test(
        "sender names and tile names take each participant's colour; own lines use the own colour",
        arguments: [RoomFixture.small, RoomFixture.large])
    func participantColours(size: TerminalSize) throws {
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.send(.event(.chatMessage(from: ParticipantID(2), text: "hi")))
        room.send(.event(.chatMessage(from: ParticipantID(3), text: "hello")))
        room.press(.char("t"))
        for character in "hey" { room.press(.char(character)) }
        room.press(.enter)
        room.press(.escape)
        let screen = room.render(size)
        let lines = try #require(RoomScreenLayout(size: size, state: room.state).chatLines)
        func colour(of text: String, inChat: Bool) throws -> TerminalColor {
            let row = try #require(screen.rows(containing: text).last)
            let column = try #require(screen.column(of: text, row: row))
            if inChat { #expect(column == lines.x) }
            return screen[column, row].style.foreground
        }
        let bob = try colour(of: "bob: hi", inChat: true)
        let carol = try colour(of: "carol: hello", inChat: true)
        let alice = try colour(of: "alice: hey", inChat: true)
        #expect(bob == Self.theme.participantColor(1))
        #expect(carol == Self.theme.participantColor(2))
        #expect(alice == Self.theme.participantColor(0))
        #expect(Set([bob, carol, alice]).count == 3)
        // The text after the name: other people plain, own lines in the own colour.
        let ownRow = try #require(screen.rows(containing: "alice: hey").last)
        let ownColumn = try #require(screen.column(of: "hey", row: ownRow))
        #expect(screen[ownColumn, ownRow].style == Self.theme.style(.chatOwn))
        let bobRow = try #require(screen.rows(containing: "bob: hi").last)
        let bobText = try #require(screen.column(of: " hi", row: bobRow))
        #expect(screen[bobText + 1, bobRow].style == Self.theme.style(.chatText))
        // Tile titles use the same colours.
        let tileRow = try #require(screen.rows(containing: "2 bob").first)
        let tileColumn = try #require(screen.column(of: "bob", row: tileRow))
        #expect(screen[tileColumn, tileRow].style.foreground == bob)
    }

    @Test("the speaking tile has a heavy border in the speaking colour; the selected one double lines")
    func speakingAndSelected() throws {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        room.send(.event(.audioLevel(ParticipantID(2), 0.5)))
        room.fit(RoomFixture.small)
        room.press(.char("3"))
        let screen = room.render(RoomFixture.small)
        let layout = room.state.layout(in: try #require(room.state.container))
        let bob = try #require(layout.rect(of: ParticipantID(2)))
        let carol = try #require(layout.rect(of: ParticipantID(3)))
        let dave = try #require(layout.rect(of: ParticipantID(4)))
        #expect(screen[bob.x, bob.y] == Cell("┏", style: Self.theme.style(.tileBorderSpeaking)))
        #expect(screen[carol.x, carol.y] == Cell("╔", style: Self.theme.style(.tileBorderFocused)))
        #expect(screen[dave.x, dave.y] == Cell("┌", style: Self.theme.style(.tileBorder)))
        // Silence (or muting) drops the highlight.
        room.send(.event(.audioLevel(ParticipantID(2), 0.0)))
        #expect(room.render(RoomFixture.small)[bob.x, bob.y].character == "┌")
    }

    @Test("placeholders name the participant and the reason")
    func placeholders() throws {
        var room = RoomFixture(cameraOn: false)
        room.addPeer("bob", video: .off)
        room.addPeer("carol", video: .waiting)
        let screen = room.render(RoomFixture.small)
        #expect(screen.occurrences(of: "camera off (v turns it on)") == 1)
        #expect(screen.occurrences(of: "camera off") == 2)
        #expect(screen.occurrences(of: "waiting for video…") == 1)
        // A session that shows video but whose frame has not reached the screen yet also waits.
        room.frames[ParticipantID(1)] = nil
        room.press(.char("v"))
        room.send(.event(.firstLocalFrame(VideoSize(width: 64, height: 36))))
        #expect(room.render(RoomFixture.small).occurrences(of: "waiting for video…") == 2)
    }

    @Test("an audience member alone sees why the grid is empty")
    func emptyStage() {
        var room = RoomFixture(role: .audience)
        let screen = room.render(RoomFixture.small)
        #expect(screen.rows(containing: "Nobody is broadcasting yet").count == 1)
        #expect(screen.text(row: 0).contains("audience"))
    }

    @Test(
        "the chat cursor sits after the typed text, scrolls with long lines, and hides under overlays",
        arguments: [RoomFixture.small, RoomFixture.large])
    func cursor(size: TerminalSize) throws {
        var room = RoomFixture.withPeers(["bob"])
        #expect(RoomScreen.cursor(state: room.state, size: size) == nil)
        room.press(.char("t"))
        for character in "hello" { room.press(.char(character)) }
        let input = try #require(RoomScreenLayout(size: size, state: room.state).chatInput)
        let screen = room.render(size)
        #expect(screen.text(row: input.y).hasSuffix("> hello"))
        #expect(
            RoomScreen.cursor(state: room.state, size: size) == CursorPosition(column: input.x + 7, row: input.y)
        )
        room.press(.left)
        room.press(.left)
        #expect(
            RoomScreen.cursor(state: room.state, size: size) == CursorPosition(column: input.x + 5, row: input.y)
        )
        room.press(.end)
        for _ in 0..<200 { room.press(.char("x")) }
        let far = try #require(RoomScreen.cursor(state: room.state, size: size))
        #expect(far == CursorPosition(column: input.maxX - 1, row: input.y))
        #expect(room.render(size).text(row: input.y).hasSuffix("xxxx"))
        room.press(.escape)
        #expect(RoomScreen.cursor(state: room.state, size: size) == nil)
    }

    struct DepthCase: Sendable, CustomTestStringConvertible {
        var depth: ColorDepth
        var testDescription: String { "\(depth)" }
    }

    @Test(
        "every colour depth renders only colours it has",
        arguments: ColorDepth.allCases.map { DepthCase(depth: $0) })
    func colourDepths(_ row: DepthCase) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave"])
        room.send(.event(.alert(.reconnecting)))
        room.send(.event(.chatMessage(from: ParticipantID(2), text: "hi")))
        room.press(.char("i"))
        let screen = room.render(RoomFixture.large, theme: Theme(depth: row.depth))
        var sawRGB = false
        for cell in screen.cells {
            for colour in [cell.style.foreground, cell.style.background] {
                switch (row.depth, colour) {
                case (_, .default): break
                case (.monochrome, _): Issue.record("colour \(colour) in monochrome")
                case (.ansi8, .palette(let index)): #expect(index < 8)
                case (.ansi16, .palette(let index)): #expect(index < 16)
                case (.palette256, .palette): break
                case (.direct, .palette): break
                case (.direct, .rgb): sawRGB = true
                default: Issue.record("colour \(colour) at \(row.depth)")
                }
            }
        }
        #expect(sawRGB == (row.depth == .direct))
        if row.depth == .monochrome {
            // Without colour the alert still stands out, by attributes.
            let alertRow = screen.rows(containing: "! Reconnecting").first ?? 0
            let column = screen.column(of: "! Reconnecting", row: alertRow) ?? 0
            #expect(screen[column, alertRow].style.attributes.contains(.reverse))
        }
    }

    struct TimeCase: Sendable, CustomTestStringConvertible {
        var seconds: Int64
        var text: String
        var testDescription: String { "\(seconds) s" }
    }

    @Test(
        "call time: mm:ss, then h:mm:ss",
        arguments: [
            TimeCase(seconds: 0, text: "00:00"), TimeCase(seconds: 59, text: "00:59"),
            TimeCase(seconds: 61, text: "01:01"),
            TimeCase(seconds: 3599, text: "59:59"), TimeCase(seconds: 3600, text: "1:00:00"),
            TimeCase(seconds: 3725, text: "1:02:05"), TimeCase(seconds: 36_000, text: "10:00:00"),
            TimeCase(seconds: -5, text: "00:00"),
        ])
    func callTime(_ row: TimeCase) {
        #expect(RoomScreen.callTime(.seconds(row.seconds)) == row.text)
    }

    struct ConnectionCase: Sendable, CustomTestStringConvertible {
        var alert: RoomAlert?
        var text: String
        var role: ColorRole?
        var testDescription: String { text }
    }

    @Test(
        "the header colours the connection state",
        arguments: [
            ConnectionCase(alert: nil, text: "connected", role: nil),
            ConnectionCase(alert: .interrupted, text: "interrupted", role: .statusWarning),
            ConnectionCase(alert: .reconnecting, text: "reconnecting…", role: .statusWarning),
            ConnectionCase(alert: .lost, text: "still reconnecting…", role: .statusError),
        ])
    func connectionColour(_ row: ConnectionCase) throws {
        var room = RoomFixture.withPeers(["bob"])
        if let alert = row.alert { room.send(.event(.alert(alert))) }
        let screen = room.render(RoomFixture.small)
        let column = try #require(screen.column(of: row.text, row: 0))
        let header = Self.theme.style(.header)
        let expected = row.role.map { header.overlaid(with: Self.theme.style($0)) } ?? header
        #expect(screen[column, 0].style == expected)
    }

    @Test("● REC in the header names who records, you included, in the error colour; gone when they stop")
    func recordingInTheHeader() throws {
        var room = RoomFixture.withPeers(["bob", "carol"])
        let bob = ParticipantID(2)
        room.send(.event(.recording(bob, name: "bob", active: true, encrypted: false)))
        room.send(.event(.recording(RoomFixture.localID, name: "me", active: true, encrypted: false)))
        var screen = room.render(RoomFixture.small)
        #expect(screen.text(row: 0).contains(" · ● REC bob, you · 3 people · connected"), "\(screen.text(row: 0))")
        let column = try #require(screen.column(of: "● REC", row: 0))
        #expect(
            screen[column, 0].style == Self.theme.style(.header).overlaid(with: Self.theme.style(.statusError)))
        room.send(.event(.recording(bob, name: "bob", active: false, encrypted: false)))
        room.send(.event(.recording(RoomFixture.localID, name: "me", active: false, encrypted: false)))
        screen = room.render(RoomFixture.small)
        #expect(!screen.text(row: 0).contains("REC"))
    }

    @Test("joining and failing show in the header and the empty grid")
    func joiningAndFailing() {
        var state = RoomState(roomName: "standup", localName: "alice", role: .audience)
        var screen = RoomScreen.render(state: state, frames: [:], size: RoomFixture.small, theme: Self.theme)
        #expect(screen.text(row: 0).contains("connecting…"))
        #expect(screen.rows(containing: "Joining standup…").count == 1)
        _ = reduce(&state, .event(.joinFailed(reason: "relay refused: room full")))
        screen = RoomScreen.render(state: state, frames: [:], size: RoomFixture.small, theme: Self.theme)
        #expect(screen.text(row: 0).contains("join failed"))
        #expect(screen.rows(containing: "Could not join standup: relay refused: room full").count >= 1)
    }

    @Test("too small: the message names both sizes; a pending leave question still shows")
    func tooSmall() {
        var room = RoomFixture.withPeers(["bob"])
        let size = TerminalSize(columns: 79, rows: 24)
        var screen = room.render(size)
        #expect(screen.rows(containing: "Parley needs at least 80x24; this terminal is 79x24").count == 1)
        room.press(.char("q"))
        screen = room.render(size)
        #expect(screen.rows(containing: "Leave the call? y/n").count == 1)
        let tiny = room.render(TerminalSize(columns: 20, rows: 6)).text
        #expect(tiny.contains("80x24;") && tiny.contains("20x6"))
    }

    @Test("stats text: resolution, rounded rate and bitrate, loss to a tenth")
    func statsText() {
        #expect(RoomScreen.statsParts(MediaInfo()) == ["no stats yet"])
        let media = MediaInfo(
            resolution: VideoSize(width: 640, height: 360), fps: 29.6, bitrateKbps: 612.4,
            lossPercent: 0.25)
        #expect(RoomScreen.statsParts(media) == ["640x360", "30fps", "612kb/s", "loss 0.3%"])
        var jittery = media
        jittery.jitterMilliseconds = 3.4
        #expect(RoomScreen.statsParts(jittery) == ["640x360", "30fps", "612kb/s", "loss 0.3%", "jitter 3ms"])
        // Why audio broke: how long it waits, what was concealed, how often the own speaker ran dry.
        var broken = jittery
        broken.audioDelayMilliseconds = 41.6
        broken.audioConcealed = 3
        broken.speakerUnderruns = 2
        #expect(
            RoomScreen.statsParts(broken) == [
                "640x360", "30fps", "612kb/s", "loss 0.3%", "jitter 3ms", "audio 42ms", "concealed 3", "underruns 2",
            ])
    }

    @Test("the own tile's stats name the layers its camera is sent in, not the camera's size")
    func ownStatsNameTheLayersSent() {
        var own = MediaInfo(resolution: VideoSize(width: 640, height: 360), fps: 30, bitrateKbps: 196)
        own.sentLayers = [VideoSize(width: 320, height: 180)]
        #expect(RoomScreen.statsParts(own) == ["sends 320x180", "30fps", "196kb/s", "loss 0.0%"])
        own.sentLayers = [VideoSize(width: 640, height: 360), VideoSize(width: 160, height: 90)]
        #expect(RoomScreen.statsParts(own).first == "sends 640x360+160x90")
        own.sentLayers = []
        #expect(RoomScreen.statsParts(own).first == "sends no video (nobody watches)")
    }

    @Test("the link's limits: the own tile gives both estimates, a held peer says what the downlink holds it to")
    func linkLimitsInTheStats() {
        var own = MediaInfo(resolution: VideoSize(width: 640, height: 360), fps: 30, bitrateKbps: 596)
        own.uplinkKbps = 1_203.6
        own.downlinkKbps = 870.2
        #expect(RoomScreen.statsParts(own).suffix(2) == ["uplink ~1204kb/s", "downlink ~870kb/s"])
        var peer = MediaInfo(resolution: VideoSize(width: 320, height: 180), fps: 30, bitrateKbps: 150)
        peer.heldByDownlinkKbps = 870
        peer.heldToSize = VideoSize(width: 320, height: 180)
        #expect(RoomScreen.statsParts(peer).last == "held to 320x180: your downlink ~870kb/s")
        peer.heldToSize = nil
        #expect(RoomScreen.statsParts(peer).last == "paused: your downlink ~870kb/s")
    }

    @Test("render keeps the video renderer's scratch between frames and draws the same screen")
    func repeatedRender() {
        var room = RoomFixture.withPeers(Self.names)
        room.fit(RoomFixture.large)
        var screen = RoomScreen(theme: Self.theme)
        let first = screen.render(state: room.state, frames: room.frames, size: RoomFixture.large)
        let second = screen.render(state: room.state, frames: room.frames, size: RoomFixture.large)
        #expect(first == second)
        #expect(
            first
                == RoomScreen.render(
                    state: room.state, frames: room.frames, size: RoomFixture.large,
                    theme: Self.theme))
    }
}

@Suite("The layer a fullscreen tile asks for")
struct FullscreenLayerTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var cells: PictureCells
        var columns: Int
        var rows: Int
        var layer: String
        var testDescription: String { "\(cells.rawValue) at \(columns)x\(rows): \(layer)" }
    }

    /// The layer the relay forwards for a request: the smallest of a 640x360 camera's three that covers it.
    static func layer(for request: TileSize) -> String {
        let layers = [(160, 90), (320, 180), (640, 360)]
        let (width, height) = layers.first { $0.0 >= request.width && $0.1 >= request.height } ?? layers[2]
        return "\(width)x\(height)"
    }

    @Test(
        "every cell mode asks for twice the pixels it draws, so a fullscreen tile gets a bigger layer as it grows",
        arguments: [
            Case(cells: .halfBlocks, columns: 120, rows: 40, layer: "160x90"),
            Case(cells: .halfBlocks, columns: 200, rows: 60, layer: "320x180"),
            Case(cells: .quadrants, columns: 120, rows: 40, layer: "320x180"),
            Case(cells: .quadrants, columns: 200, rows: 60, layer: "640x360"),
            Case(cells: .sextants, columns: 120, rows: 40, layer: "320x180"),
            Case(cells: .sextants, columns: 200, rows: 60, layer: "640x360"),
        ])
    func fullscreenLayer(_ row: Case) throws {
        var room = RoomFixture.withPeers(["bob", "carol"])
        room.send(.event(.firstRemoteFrame(ParticipantID(3), size: VideoSize(width: 640, height: 360))))
        room.fit(TerminalSize(columns: row.columns, rows: row.rows))
        room.press(.char("3"))
        room.press(.char("3"))
        let layout = room.state.currentLayout
        #expect(room.state.fullscreen == ParticipantID(3))
        let drawn = try #require(
            RoomScreen.drawnSizes(state: room.state, layout: layout, cells: row.cells).first { $0.id == 3 })
        let request = try #require(
            RoomScreen.layerRequests(state: room.state, layout: layout, cells: row.cells).first { $0.id == 3 })
        #expect(request.width == 2 * drawn.width && request.height == 2 * drawn.height)
        #expect(Self.layer(for: request) == row.layer, "drawn \(drawn.width)x\(drawn.height)")
        let pixels = PixelCanvas(kind: .kitty, cell: CellPixelSize(width: 10, height: 20))
        let onCanvas = try #require(
            RoomScreen.layerRequests(state: room.state, layout: layout, pixels: pixels).first { $0.id == 3 })
        let drawnOnCanvas = try #require(
            RoomScreen.drawnSizes(state: room.state, layout: layout, pixels: pixels).first { $0.id == 3 })
        #expect(onCanvas == drawnOnCanvas, "real pixels ask for what they show")
    }
}

@Suite("The layer every tile asks for")
struct TileLayerTableTests {
    /// A 1:1 call and a 5-party grid, at three terminal sizes, in every picture mode: the layer of a 640x360
    /// camera (160x90, 320x180, 640x360) each peer's tile gets. Bigger tiles and finer cells never get a smaller one.
    @Test func everyModeAndSize() throws {
        let modes: [(String, PictureCells, PixelCanvas?)] = [
            ("half", .halfBlocks, nil), ("quadrant", .quadrants, nil), ("sextant", .sextants, nil),
            ("kitty 10x20", .halfBlocks, PixelCanvas(kind: .kitty, cell: CellPixelSize(width: 10, height: 20))),
        ]
        var seen: [String] = []
        for peers in [1, 4] {
            for (columns, rows) in [(80, 24), (120, 40), (200, 60)] {
                var room = RoomFixture.withPeers((0..<peers).map { "p\($0)" })
                for id in 2..<(2 + peers) {
                    room.send(
                        .event(.firstRemoteFrame(ParticipantID(UInt32(id)), size: VideoSize(width: 640, height: 360))))
                }
                room.fit(TerminalSize(columns: columns, rows: rows))
                let layout = room.state.currentLayout
                var line = "\(peers + 1)-party \(columns)x\(rows):"
                for (name, cells, pixels) in modes {
                    let requests = RoomScreen.layerRequests(
                        state: room.state, layout: layout, cells: cells, pixels: pixels)
                    line += " \(name) " + requests.map { FullscreenLayerTests.layer(for: $0) }.joined(separator: ",")
                }
                seen.append(line)
            }
        }
        #expect(seen == Self.expected, "\n\(seen.joined(separator: "\n"))")
    }

    static let expected = [
        "2-party 80x24: half 160x90 quadrant 320x180 sextant 320x180 kitty 10x20 640x360",
        "2-party 120x40: half 320x180 quadrant 640x360 sextant 640x360 kitty 10x20 640x360",
        "2-party 200x60: half 320x180 quadrant 640x360 sextant 640x360 kitty 10x20 640x360",
        "5-party 80x24: half 160x90,160x90,160x90,160x90 quadrant 160x90,160x90,160x90,160x90 "
            + "sextant 160x90,160x90,160x90,160x90 kitty 10x20 320x180,320x180,320x180,320x180",
        "5-party 120x40: half 160x90,160x90,160x90,160x90 quadrant 160x90,160x90,160x90,160x90 "
            + "sextant 160x90,160x90,160x90,160x90 kitty 10x20 320x180,320x180,320x180,320x180",
        "5-party 200x60: half 160x90,160x90,160x90,160x90 quadrant 320x180,320x180,320x180,320x180 "
            + "sextant 320x180,320x180,320x180,320x180 kitty 10x20 640x360,640x360,640x360,640x360",
    ]
}
