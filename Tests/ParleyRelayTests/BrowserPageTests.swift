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
    struct Encryption: Decodable {
        var suite: String
        var safetyCode: String
        var lock: String
        /// Members whose frames stopped opening here.
        var failing: [UInt32]
    }
    /// The room's end-to-end encryption as the page has it, nil without.
    var encryption: Encryption?

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

    /// A member with real codecs; `mediaPort`: its media goes through a proxy there (a capture's vantage point).
    func client(
        _ name: String, port: Int, width: Int = 640, height: Int = 360, mediaPort: Int? = nil,
        recording: String? = nil
    ) throws -> CallEngine {
        var settings = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "standup", name: name,
            profile: VideoProfile(width: width, height: height, fps: 15, bitrateKbps: 600),
            audioSource: .synthetic, showsSelfView: false, logger: quietLogger())
        settings.mediaAddressOverride = mediaPort.map { ServerAddress(host: "127.0.0.1", port: $0) }
        if let recording { settings.recording.path = recording }
        return try CallEngine(settings)
    }

    /// Pictures GStreamer (EncryptionCaptureTests' independent stack) decodes of the busiest VP8 stream the relay sent
    /// through `proxy`: what an eavesdropper between the relay and that member would get of the page's camera.
    static func eavesdropped(_ proxy: LossyUDPProxy) async throws -> Int {
        try #require(
            FileManager.default.isExecutableFile(atPath: EncryptionCaptureTests.gstLaunch),
            "\(EncryptionCaptureTests.gstLaunch) is missing: run `make deps`")
        let toMember = try await proxy.capture().filter { !$0.fromClient }.map(\.bytes)
        let recorded = EncryptionCaptureTests.Recorded(
            datagramsFromAlice: toMember, signaling: [], aliceFramesSent: 0, bobDecodedOfAlice: 0, bobChats: [])
        return try await EncryptionCaptureTests().independentlyDecodedFrames(recorded)
    }

    static func snapshot(_ page: DevToolsPage) async throws -> PageSnapshot {
        try await page.evaluate("window.parley.snapshot()", as: PageSnapshot.self)
    }

    /// What the page shows and what Chromium said, for a failure's message.
    static func failure(_ page: DevToolsPage) async -> String {
        let text = (try? await page.evaluate("window.parley.snapshot()")) ?? "no snapshot"
        return "page: \(text.prefix(3_000)); chromium: \(page.process.output.suffix(1_500))"
    }

    /// Until the page joined with `member` alone in its slots (an error it shows ends the wait); its own id.
    static func joined(_ page: DevToolsPage, with member: UInt32) async throws -> UInt32 {
        try await waitUntil(
            "the page joined with \(member) in a slot", timeout: .seconds(30), every: .milliseconds(200)
        ) {
            let now = try await snapshot(page)
            if !now.errors.isEmpty { throw BrowserPageFailure(await failure(page)) }
            return now.you != nil && now.slots.map(\.member) == [member]
        }
        return try #require(try await snapshot(page).you)
    }

    /// Until `alice` decodes and hears the page's `guest` (30 frames, 50 packets) and the page decodes and hears her;
    /// false, with an issue saying what each had, when that does not happen within 45 s.
    static func eachDecodesAndHears(_ page: DevToolsPage, alice: CallEngine, aliceID: UInt32, guest: UInt32) async
        -> Bool
    {
        do {
            try await waitUntil("each decodes and hears the other", timeout: .seconds(45), every: .milliseconds(250)) {
                let now = try await snapshot(page)
                let atAlice = await alice.statistics().peers[guest]
                return (atAlice?.framesDecoded ?? 0) >= 30 && (atAlice?.audioPacketsReceived ?? 0) >= 50
                    && (now.frames["\(aliceID)"]?.decoded ?? 0) >= 30 && (now.heard["\(aliceID)"] ?? 0) > 0
            }
            return true
        } catch {
            let atAlice = await alice.statistics().peers[guest]
            let why = await failure(page)
            Issue.record("\(error); at alice: \(String(describing: atAlice)); \(why)")
            return false
        }
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
        let proxy = try await LossyUDPProxy.start(relayPort: relay.mediaPort, lossPercent: 0, seed: 1)
        let alice = try client(
            "alice", port: relay.signalingPort, mediaPort: proxy.port,
            recording: NSTemporaryDirectory() + "parley-page-\(getpid()).webm")
        let log = EventLog()
        let events = log.consume(alice)
        alice.start()
        let page = try await DevToolsPage.open(
            "http://127.0.0.1:\(relay.signalingPort)/standup?name=bea&join=1", tag: "bea")
        defer {
            page.stop()
            events.cancel()
        }
        func snapshot() async throws -> PageSnapshot { try await Self.snapshot(page) }
        func failure() async -> String { await Self.failure(page) }

        try await Self.waitForScript(page)
        // The link joins at once: alice is in the page's first slot.
        let aliceID = await alice.statistics().localID
        let beaID = try await Self.joined(page, with: aliceID)
        #expect(try await snapshot().member(beaID)?.name == "bea")

        // Each decodes and hears the other.
        alice.reportTiles([TileSize(id: beaID, width: 320, height: 180)])
        guard await Self.eachDecodesAndHears(page, alice: alice, aliceID: aliceID, guest: beaID) else {
            await alice.leave()
            await relay.shutdown()
            return
        }
        #expect(await alice.statistics().peers[beaID]?.decodeErrors == 0)
        #expect(try await snapshot().frames["\(aliceID)"]?.width == 640, "alice's full layer in the page's big tile")
        // The control of the encrypted room's capture: in a room without encryption, GStreamer decodes the page's
        // camera from what the relay sent alice.
        let overheard = try await Self.eavesdropped(proxy)
        #expect(overheard >= 10, "GStreamer decoded \(overheard) pictures of the page's camera in a plain room")

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

        // Bea joins again: refused until alice lets her back in (/allow bea), then in.
        func rejoin() async throws {
            _ = try await page.evaluate(#"(() => { document.getElementById("join").click(); return true; })()"#)
        }
        try await rejoin()
        let keptOut = await eventually(within: .seconds(10)) {
            ((try? await snapshot().lobby) ?? nil)?.contains("only the host can let you back in") == true
        }
        why = await failure()
        #expect(keptOut, "\(why)")
        alice.perform(.readmit("bea"))
        try await Task.sleep(for: .milliseconds(300))
        try await rejoin()
        let back = await eventually(within: .seconds(15)) {
            let now = try? await snapshot()
            return now?.you != nil && now?.lobby == nil && now?.slots.map(\.member) == [aliceID]
        }
        why = await failure()
        #expect(back, "\(why)")

        // Alice records: the page says so in its header and its chat, as a terminal does; her file is written.
        let file = NSTemporaryDirectory() + "parley-page-\(getpid()).webm"
        defer { unlink(file) }
        alice.perform(.setRecording(true))
        let notice = await eventually(within: .seconds(10)) {
            let header = (try? await page.evaluate(#"document.getElementById("recording").textContent"#)) ?? ""
            let chat = (try? await snapshot().chat) ?? []
            return header.contains("recording") && chat.contains("alice started recording")
        }
        why = await failure()
        #expect(notice, "\(why)")
        try await Task.sleep(for: .seconds(2))
        alice.perform(.setRecording(false))
        let written = await eventually(within: .seconds(10)) {
            ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 20_000
        }
        #expect(written, "alice's recording of bea at \(file)")
        await alice.leave()
        await proxy.stop()
        await relay.shutdown()
    }

    /// Over the relay's TLS (its self-signed certificate, which the test's Chromium is told to accept as a user
    /// who compared the fingerprint would): a room alice made with a password asks the page for it, refuses a
    /// wrong one, and takes the right one, proven with the page's WebCrypto as `parley join` proves it (a proof the
    /// relay checks with Swift's `RoomPassword`); the page then decodes alice over `wss://` and DTLS. A room whose
    /// members encrypt end to end refuses the page that has no secret and says what to type; a secret too short, and
    /// a browser without encoded transforms, are refused before anything is sent, saying why.
    @Test func aPasswordRoomOverTLSAndAnEncryptedRoomAsksForItsSecret() async throws {
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

        // The encrypted room, joined without its secret: refused, with what to do.
        _ = try? await page.evaluate(#"location.assign("/sealed?name=dana&join=1")"#)
        try await Self.waitForScript(page)
        let refused = await eventually(within: .seconds(10)) {
            await lobby().contains("This room is end-to-end encrypted: type its secret")
        }
        said = await lobby()
        #expect(refused, "\(said)")
        // A secret too short for a room secret, then a browser without encoded transforms: each refused before
        // anything is sent, saying why.
        func joinWith(secret: String) async throws {
            _ = try await page.evaluate(
                """
                (() => { document.getElementById("secret").value = \(Self.quoted(secret));
                  document.getElementById("join").click(); return true; })()
                """)
        }
        try await joinWith(secret: "short")
        let tooShort = await eventually(within: .seconds(10)) {
            await lobby().contains("The room secret has 5 characters; it needs at least 8")
        }
        said = await lobby()
        #expect(tooShort, "\(said)")
        _ = try await page.evaluate("delete window.RTCRtpScriptTransform")
        try await joinWith(secret: "a long shared secret")
        let unable = await eventually(within: .seconds(10)) {
            await lobby().contains("This browser cannot take part in end-to-end encryption")
        }
        said = await lobby()
        #expect(unable, "\(said)")
        await alice.leave()
        await carl.leave()
        await relay.shutdown()
    }

    /// An end-to-end encrypted room (AES-256-GCM) with a terminal member and the page: the secret typed into the
    /// page (never sent), each decodes and hears the other through the relay, which forwards frames it cannot read;
    /// the page shows the lock with the terminal's safety code; chat sealed both ways; a member with another secret
    /// is shown on the page as one whose frames do not open.
    @Test func anEncryptedRoomWithATerminalMember() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        let relay = try await relayWithPage()
        let proxy = try await LossyUDPProxy.start(relayPort: relay.mediaPort, lossPercent: 0, seed: 1)
        func member(_ name: String, secret: String, mediaPort: Int? = nil) throws -> CallEngine {
            var settings = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: "sealed", name: name,
                profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600), audioSource: .synthetic,
                showsSelfView: false, logger: quietLogger())
            settings.encryption = try CallEncryption(secret: secret, room: "sealed", suite: .aes256GCM)
            settings.mediaAddressOverride = mediaPort.map { ServerAddress(host: "127.0.0.1", port: $0) }
            return try CallEngine(settings)
        }
        let alice = try member("alice", secret: "a long shared secret", mediaPort: proxy.port)
        let log = EventLog()
        let events = log.consume(alice)
        alice.start()
        let page = try await DevToolsPage.open("http://127.0.0.1:\(relay.signalingPort)/sealed", tag: "sealed")
        defer {
            page.stop()
            events.cancel()
        }
        func snapshot() async throws -> PageSnapshot { try await Self.snapshot(page) }
        func failure() async -> String { await Self.failure(page) }
        try await Self.waitForScript(page)
        _ = try await page.evaluate(
            """
            (() => { document.getElementById("name").value = "bea";
              document.getElementById("secret").value = "a long shared secret";
              document.getElementById("cipher").value = "AES-256-GCM";
              document.getElementById("join").click(); return true; })()
            """)
        let aliceID = await alice.statistics().localID
        let beaID = try await Self.joined(page, with: aliceID)
        alice.reportTiles([TileSize(id: beaID, width: 320, height: 180)])
        guard await Self.eachDecodesAndHears(page, alice: alice, aliceID: aliceID, guest: beaID) else {
            await alice.leave()
            await relay.shutdown()
            return
        }
        let atAlice = await alice.statistics().peers[beaID]
        #expect(atAlice?.decodeErrors == 0 && atAlice?.decryptFailures == 0, "\(String(describing: atAlice))")
        let safety = try CallEncryption(secret: "a long shared secret", room: "sealed", suite: .aes256GCM).safetyCode
        var why = await failure()
        #expect(try await snapshot().encryption?.lock == "🔒 \(safety)", "\(why)")
        // What the relay sent alice of the page's camera, captured between them: GStreamer decodes none of it.
        let overheard = try await Self.eavesdropped(proxy)
        #expect(overheard == 0, "GStreamer decoded \(overheard) pictures of the page's camera without the secret")

        // Chat sealed both ways.
        alice.perform(.sendChat("sealed hello from the terminal"))
        try await page.press("t")
        try await page.type("sealed hello from chrome")
        try await page.press("Enter")
        let chatted = await eventually(within: .seconds(10)) {
            let atPage = (try? await snapshot().chat) ?? []
            return atPage.contains("alice: sealed hello from the terminal")
                && log.chats.contains("sealed hello from chrome")
        }
        why = await failure()
        #expect(chatted, "alice: \(log.chats); \(why)")

        // Carl has another secret: the page sees his frames fail and says so (and alice does too).
        let carl = try member("carl", secret: "not the room's secret")
        carl.start()
        _ = await eventually(within: .seconds(10)) { await carl.statistics().localID != 0 }
        let carlID = await carl.statistics().localID
        let flagged = await eventually(within: .seconds(20)) {
            let failing = (try? await snapshot().encryption?.failing) ?? []
            return failing.contains(carlID) && log.all.contains { $0 == .cannotDecrypt(ParticipantID(carlID), true) }
        }
        why = await failure()
        #expect(flagged, "\(why)")
        await carl.leave()
        await alice.leave()
        await proxy.stop()
        await relay.shutdown()
    }

    /// The page's sframe.js against ParleySecurity, in both suites: the same safety code from the same secret and
    /// room; keyframes, other frames, sound and chat sealed by each are opened by the other, byte for byte.
    @Test func thePagesSFrameIsParleys() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        let relay = try await relayWithPage()
        let page = try await DevToolsPage.open("http://127.0.0.1:\(relay.signalingPort)/standup", tag: "sframe")
        defer { page.stop() }
        try await Self.waitForScript(page)
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        func bytes(_ hex: String) -> [UInt8] {
            let digits = Array(hex.utf8)
            return stride(from: 0, to: digits.count - 1, by: 2).map {
                UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0
            }
        }
        let keyframe: [UInt8] =
            [0x50, 0x42, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] + (0..<300).map { UInt8($0 % 251) }
        let delta: [UInt8] = [0x31, 0x07, 0x00] + (0..<200).map { UInt8($0 % 13) }
        let opus: [UInt8] = [0xFC] + (0..<60).map { UInt8($0) }
        struct Result: Decodable {
            var safety: String
            var opened: [String]
            var sealed: [String]
        }
        for suite in SFrameCipherSuite.allCases {
            let encryption = try CallEncryption(secret: "a long shared secret", room: "standup", suite: suite)
            let sealer = MediaSealer(encryption: encryption, senderID: 0x1234_5678_9ABC)
            let fromSwift = [
                try sealer.sealVideoFrame(keyframe), try sealer.sealVideoFrame(delta), try sealer.sealAudioFrame(opus),
            ].map(hex)
            let chat = try sealer.sealChat("héllo 🙂 from the terminal")
            let script = """
                (async () => {
                  const sf = await import("/web/sframe.js");
                  const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
                  const unhex = (t) => new Uint8Array((t.match(/../g) || []).map((p) => parseInt(p, 16)));
                  const none = new Uint8Array(0);
                  const suite = sf.suites["\(suite.name)"];
                  const master = await sf.roomMaster("a long shared secret", "standup");
                  const opener = new sf.SFrameOpener(master, suite);
                  const opened = [
                    hex(await sf.openVideoFrame(opener, unhex("\(fromSwift[0])"))),
                    hex(await sf.openVideoFrame(opener, unhex("\(fromSwift[1])"))),
                    hex((await opener.open(unhex("\(fromSwift[2])"), none)).plaintext),
                    (await sf.openChat(opener, "\(chat)")).text,
                  ];
                  const video = await sf.SFrameSender.make(master, suite, "99", sf.streams.video);
                  const audio = await sf.SFrameSender.make(master, suite, "99", sf.streams.audio);
                  const chat = await sf.SFrameSender.make(master, suite, "99", sf.streams.chat);
                  const sealed = [
                    hex(await sf.sealVideoFrame(video, unhex("\(hex(keyframe))"))),
                    hex(await sf.sealVideoFrame(video, unhex("\(hex(delta))"))),
                    hex(await audio.seal(unhex("\(hex(opus))"), none)),
                    await sf.sealChat(chat, "hello from chrome ✓"),
                  ];
                  return { safety: await sf.safetyCode(master, suite), opened, sealed };
                })()
                """
            let result = try await page.evaluate(script, as: Result.self)
            #expect(result.safety == encryption.safetyCode, "\(suite)")
            #expect(result.opened == [hex(keyframe), hex(delta), hex(opus), "héllo 🙂 from the terminal"], "\(suite)")
            try #require(result.sealed.count == 4)
            var opener = MediaOpener(encryption: encryption)
            #expect(try opener.openVideoFrame(bytes(result.sealed[0])) == keyframe, "\(suite)")
            #expect(try opener.openVideoFrame(bytes(result.sealed[1])) == delta, "\(suite)")
            #expect(try opener.openAudioFrame(bytes(result.sealed[2])) == opus, "\(suite)")
            #expect(try opener.openChat(result.sealed[3]) == "hello from chrome ✓", "\(suite)")
            #expect(Array(bytes(result.sealed[0])[3..<6]) == [0, 0, 0], "the start code does not travel")
        }
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
