import Foundation
import Logging
import ParleyMedia
import ParleyProcesses
import ParleySecurity
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay
@testable import ParleyRoom

/// What the guests' page (Resources/web) shows, read with `window.parley.snapshot()`.
struct PageSnapshot: Decodable {
    struct Member: Decodable {
        var id: UInt32
        var name: String
        var audioMuted: Bool?
        var videoMuted: Bool?
    }
    struct Slot: Decodable {
        var member: UInt32
    }
    struct Frames: Decodable {
        var decoded: Int
        var width: Int
    }
    struct Layout: Decodable {
        var numbered: [UInt32]
    }
    var you: UInt32?
    var host: UInt32?
    var members: [Member]
    var slots: [Slot]
    var frames: [String: Frames]
    var heard: [String: Double]
    var micMuted: Bool
    var fullscreen: UInt32?
    var layout: Layout?
    var chat: [String]
    var errors: [String]
    var lobby: String?
    /// Each tile's `i` figures by member id, nil while they are hidden.
    var info: [String: String]?

    func member(_ id: UInt32) -> Member? { members.first { $0.id == id } }
}

/// The guests' page itself, served by the relay, in a real headless Chromium driven as a user drives it (keys
/// through the DevTools protocol): it joins from its link's `?name=&join=1` beside a Parley client with real
/// codecs; each decodes and hears the other; `i` shows each tile's figures; chat both ways (typed into the page); mute both ways (`m`); with a
/// third member a tile's number twice is fullscreen and `Esc` the grid; the host removes the page, which says so.
@Suite(.serialized, .lane(.browsers), .timeLimit(.minutes(3)))
struct BrowserPageTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    static var webFolder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Resources/web").path
    }

    func relayWithPage() async throws -> Relay {
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger())
        configuration.webPage = try WebPage(folder: Self.webFolder)
        return try await Relay.start(configuration)
    }

    func client(_ name: String, port: Int, width: Int = 640, height: Int = 360) throws -> CallEngine {
        try CallEngine(
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: port), room: "standup", name: name,
                profile: VideoProfile(width: width, height: height, fps: 15, bitrateKbps: 600),
                audioSource: .synthetic, showsSelfView: false, logger: quietLogger()))
    }

    /// Until the page's module has run (`window.parley` is set).
    static func waitForScript(_ page: DevToolsPage) async throws {
        try await waitUntil("the page's script ran", timeout: .seconds(20), every: .milliseconds(100)) {
            (try? await page.evaluate("typeof window.parley?.snapshot")) == "\"function\""
        }
    }

    @Test func aGuestJoinsFromItsLinkSeesHearsChatsMutesFullscreensAndIsRemoved() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        let relay = try await relayWithPage()
        let alice = try client("alice", port: relay.signalingPort)
        let log = EventLog()
        let events = log.consume(alice)
        alice.start()
        let page = try await DevToolsPage.open(
            "http://127.0.0.1:\(relay.signalingPort)/standup?name=bea&join=1", tag: "bea")
        defer {
            page.stop()
            events.cancel()
        }
        func snapshot() async throws -> PageSnapshot {
            try await page.evaluate("window.parley.snapshot()", as: PageSnapshot.self)
        }
        func failure() async -> String {
            let text = (try? await page.evaluate("window.parley.snapshot()")) ?? "no snapshot"
            return "page: \(text.prefix(3_000)); chromium: \(page.process.output.suffix(1_500))"
        }

        try await Self.waitForScript(page)
        // The link joins at once: alice is in the page's first slot.
        let aliceID = await alice.statistics().localID
        try await waitUntil("the page joined with alice in a slot", timeout: .seconds(30), every: .milliseconds(200)) {
            let now = try await snapshot()
            if !now.errors.isEmpty { throw BrowserPageFailure(await failure()) }
            return now.you != nil && now.slots.map(\.member) == [aliceID]
        }
        let beaID = try #require(try await snapshot().you)
        #expect(try await snapshot().member(beaID)?.name == "bea")

        // Each decodes and hears the other.
        alice.reportTiles([TileSize(id: beaID, width: 320, height: 180)])
        do {
            try await waitUntil("each decodes and hears the other", timeout: .seconds(45), every: .milliseconds(250)) {
                let now = try await snapshot()
                let atAlice = await alice.statistics().peers[beaID]
                return (atAlice?.framesDecoded ?? 0) >= 30 && (atAlice?.audioPacketsReceived ?? 0) >= 50
                    && (now.frames["\(aliceID)"]?.decoded ?? 0) >= 30 && (now.heard["\(aliceID)"] ?? 0) > 0
            }
        } catch {
            let atAlice = await alice.statistics().peers[beaID]
            let why = await failure()
            Issue.record("\(error); at alice: \(String(describing: atAlice)); \(why)")
            await alice.leave()
            await relay.shutdown()
            return
        }
        #expect(await alice.statistics().peers[beaID]?.decodeErrors == 0)
        #expect(try await snapshot().frames["\(aliceID)"]?.width == 640, "alice's full layer in the page's big tile")

        // i: each tile's figures, as the terminal's: alice's 640x360 as it arrives, the layers the page sends.
        try await page.press("i")
        let figures = await eventually(within: .seconds(10)) {
            let info = (try? await snapshot().info) ?? nil
            return info?["\(aliceID)"]?.hasPrefix("640x360 · ") == true
                && info?["\(beaID)"]?.contains("sent as") == true
        }
        var why = await failure()
        #expect(figures, "\(why)")
        try await page.press("i")
        #expect(try await snapshot().info == nil)

        // Chat both ways: typed into the page's chat (t, the text, Enter).
        alice.perform(.sendChat("hello from the terminal"))
        try await page.press("t")
        try await page.type("hello from chrome")
        try await page.press("Enter")
        let chatted = await eventually(within: .seconds(10)) {
            let atPage = (try? await snapshot().chat) ?? []
            return atPage.contains("alice: hello from the terminal") && log.chats.contains("hello from chrome")
        }
        why = await failure()
        #expect(chatted, "alice: \(log.chats); \(why)")

        // Mute both ways: m on the page; alice mutes hers.
        try await page.press("Escape")  // out of the chat field
        try await page.press("m")
        alice.perform(.setMicrophoneMuted(true))
        let muted = await eventually(within: .seconds(10)) {
            let now = try? await snapshot()
            return now?.micMuted == true && now?.member(aliceID)?.audioMuted == true
                && log.all.contains { $0 == .remoteAudioMuted(ParticipantID(beaID), true) }
        }
        why = await failure()
        #expect(muted, "alice: \(log.all.filter { "\($0)".contains("Muted") }); \(why)")

        // A third member: the grid numbers three tiles; carl's number twice fullscreens him, Esc goes back.
        let carl = try client("carl", port: relay.signalingPort, width: 320, height: 180)
        carl.start()
        let three = await eventually(within: .seconds(10)) {
            (try? await snapshot().layout?.numbered.count) == 3
        }
        why = await failure()
        #expect(three, "\(why)")
        let numbered = try await snapshot().layout?.numbered ?? []
        let carlID = await carl.statistics().localID
        let carlNumber = try #require(numbered.firstIndex(of: carlID)).advanced(by: 1)
        try await page.press("\(carlNumber)")
        try await page.press("\(carlNumber)")
        why = await failure()
        #expect(try await snapshot().fullscreen == carlID, "\(why)")
        try await page.press("Escape")
        #expect(try await snapshot().fullscreen == nil)
        await carl.leave()

        // Alice hosts (she came first): she removes bea, whose page says who did.
        alice.perform(.removeParticipant(ParticipantID(beaID)))
        let removed = await eventually(within: .seconds(10)) {
            ((try? await snapshot().lobby) ?? nil)?.contains("alice removed you") == true
                && log.all.contains { $0 == .userOffline(ParticipantID(beaID), reason: .removed) }
        }
        why = await failure()
        #expect(removed, "\(why)")
        await alice.leave()
        await relay.shutdown()
    }

    /// Over the relay's TLS (its self-signed certificate, which the test's Chromium is told to accept as a user
    /// who compared the fingerprint would): a room alice made with a password asks the page for it, refuses a
    /// wrong one, and takes the right one, proven with the page's WebCrypto as `parley join` proves it (a proof the
    /// relay checks with Swift's `RoomPassword`); the page then decodes alice over `wss://` and DTLS. A room whose
    /// members encrypt end to end refuses the page and says why.
    @Test func aPasswordRoomOverTLSAndAnEncryptedRoomRefused() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger())
        configuration.webPage = try WebPage(folder: Self.webFolder)
        configuration.tls = try RelayIdentity.selfSigned(hosts: ["127.0.0.1"])
        let relay = try await Relay.start(configuration)
        let store = try RelayTrustStore(path: nil)
        func member(_ name: String, room: String, password: String? = nil, secret: String? = nil) throws -> CallEngine {
            var settings = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: room, name: name,
                profile: VideoProfile(width: 320, height: 180, fps: 15, bitrateKbps: 300), audioSource: .synthetic,
                showsSelfView: false, logger: quietLogger())
            settings.signalingSecurity = .tls(store)
            settings.signalingTimeout = .seconds(15)
            settings.password = password
            settings.encryption = try secret.map { try CallEncryption(secret: $0, room: room, suite: .aes128GCM) }
            let engine = try CallEngine(settings)
            engine.start()
            return engine
        }
        let alice = try member("alice", room: "locked", password: "correct horse")
        let carl = try member("carl", room: "sealed", secret: "a long shared secret")
        try await waitUntil("alice and carl are in", timeout: .seconds(20), every: .milliseconds(100)) {
            let aliceID = await alice.statistics().localID
            let carlID = await carl.statistics().localID
            return aliceID != 0 && carlID != 0
        }
        let aliceID = await alice.statistics().localID

        let page = try await DevToolsPage.open("https://127.0.0.1:\(relay.signalingPort)/locked", tag: "locked")
        defer { page.stop() }
        try await Self.waitForScript(page)
        func joinWith(name: String, password: String) async throws {
            _ = try await page.evaluate(
                """
                (() => { document.getElementById("name").value = \(Self.quoted(name));
                  document.getElementById("password").value = \(Self.quoted(password));
                  document.getElementById("join").click(); return true; })()
                """)
        }
        func lobby() async -> String {
            (try? await page.evaluate(#"document.getElementById("lobby-status").textContent"#)) ?? ""
        }
        try await joinWith(name: "bea", password: "")
        let asked = await eventually(within: .seconds(10)) { await lobby().contains("This room has a password") }
        var said = await lobby()
        #expect(asked, "\(said)")
        try await joinWith(name: "bea", password: "wrong horse")
        let wrong = await eventually(within: .seconds(10)) { await lobby().contains("not the room's password") }
        said = await lobby()
        #expect(wrong, "\(said)")
        try await joinWith(name: "bea", password: "correct horse")
        let decoded = await eventually(within: .seconds(30)) {
            let now = try? await page.evaluate("window.parley.snapshot()", as: PageSnapshot.self)
            return (now?.frames["\(aliceID)"]?.decoded ?? 0) >= 10
        }
        let text = (try? await page.evaluate("window.parley.snapshot()")) ?? ""
        #expect(decoded, "\(text.prefix(3_000))")

        // The encrypted room: refused, with what to do.
        _ = try? await page.evaluate(#"location.assign("/sealed?name=dana&join=1")"#)
        try await Self.waitForScript(page)
        let refused = await eventually(within: .seconds(10)) {
            await lobby().contains("end-to-end encrypted and this page cannot take part")
        }
        said = await lobby()
        #expect(refused, "\(said)")
        await alice.leave()
        await carl.leave()
        await relay.shutdown()
    }

    /// A JavaScript string literal of `text`.
    static func quoted(_ text: String) -> String {
        (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? #""""#
    }

    /// The page's layout.js against the terminal's VideoViewLayouter, case by case: the same tiles, numbers and
    /// pages for the same input (in cells with the terminal's options, and in pixels as the page calls it).
    @Test func thePagesLayoutIsTheTerminals() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        let relay = try await relayWithPage()
        let page = try await DevToolsPage.open("http://127.0.0.1:\(relay.signalingPort)/standup", tag: "layout")
        defer { page.stop() }
        try await Self.waitForScript(page)
        struct Case {
            var selfSize: VideoSize??  // nil: no self tile; .some(nil): a self tile without a frame yet
            var peers: Int
            var full: Int?  // an index into self + peers
            var page = 0
            var container: CellRect
            var options = LayoutOptions()
        }
        let pixels = LayoutOptions(cellAspect: 1, minimumTileWidth: 160, minimumTileHeight: 90)
        var cases: [Case] = []
        for peers in 0...12 {
            for container in [
                CellRect(x: 0, y: 0, width: 120, height: 40), CellRect(x: 2, y: 1, width: 50, height: 30),
            ] {
                cases.append(Case(selfSize: .some(nil), peers: peers, full: nil, container: container))
                cases.append(Case(selfSize: nil, peers: peers, full: nil, container: container))
            }
            cases.append(
                Case(
                    selfSize: .some(VideoSize(width: 640, height: 360)), peers: peers, full: peers >= 2 ? 2 : nil,
                    container: CellRect(x: 0, y: 0, width: 1000, height: 600), options: pixels))
            cases.append(
                Case(
                    selfSize: .some(VideoSize(width: 480, height: 640)), peers: peers, full: nil, page: 1,
                    container: CellRect(x: 0, y: 0, width: 400, height: 300), options: pixels))
            cases.append(
                Case(
                    selfSize: .some(nil), peers: peers, full: peers >= 2 ? 0 : nil,
                    container: CellRect(x: 0, y: 0, width: 40, height: 50)))
        }
        for (index, test) in cases.enumerated() {
            let selfTile = test.selfSize.map { TileSource(id: ParticipantID(1), videoSize: $0) }
            let peers = (0..<test.peers).map { TileSource(id: ParticipantID(UInt32(2 + $0))) }
            let order = (selfTile.map { [$0] } ?? []) + peers
            let full = test.full.flatMap { $0 < order.count ? order[$0].id : nil }
            let swift = VideoViewLayouter.layout(
                self: selfTile, peers: peers, full: full, page: test.page, in: test.container, options: test.options)

            func tileJS(_ tile: TileSource) -> String {
                let size = tile.videoSize.map { "{width: \($0.width), height: \($0.height)}" } ?? "null"
                return "{id: \(tile.id.rawValue), videoSize: \(size)}"
            }
            let c = test.container
            let o = test.options
            let expression = """
                window.parley.layout(\(selfTile.map(tileJS) ?? "null"), [\(peers.map(tileJS).joined(separator: ", "))], \
                \(full.map { "\($0.rawValue)" } ?? "null"), \(test.page), \
                {x: \(c.x), y: \(c.y), width: \(c.width), height: \(c.height)}, \
                {cellAspect: \(o.cellAspect), minimumTileWidth: \(o.minimumTileWidth), \
                minimumTileHeight: \(o.minimumTileHeight), stripCapacity: \(o.stripCapacity)})
                """
            let js = try await page.evaluate(expression, as: JSLayout.self)
            #expect(js.layout == swift, "case \(index): \(expression)")
        }
        await relay.shutdown()
    }
}

/// layout.js's answer, read as the Swift layouter's.
struct JSLayout: Decodable {
    struct Rect: Decodable {
        var x, y, width, height: Int
    }
    struct Tile: Decodable {
        var id: UInt32
        var rect: Rect
        var kind: String
        var number: Int?
    }
    var tiles: [Tile]
    var numbered: [UInt32]
    var page: Int
    var pageCount: Int
    var pageSize: Int
    var fullscreen: UInt32?

    /// Nil when a tile's kind is none of the layouter's.
    var layout: VideoLayout? {
        let kinds = tiles.compactMap { TileKind(rawValue: $0.kind) }
        guard kinds.count == tiles.count else { return nil }
        return VideoLayout(
            tiles: zip(tiles, kinds).map { tile, kind in
                LayoutTile(
                    id: ParticipantID(tile.id),
                    rect: CellRect(x: tile.rect.x, y: tile.rect.y, width: tile.rect.width, height: tile.rect.height),
                    kind: kind, number: tile.number)
            }, numbered: numbered.map(ParticipantID.init), page: page, pageCount: pageCount, pageSize: pageSize,
            fullscreen: fullscreen.map(ParticipantID.init))
    }
}
