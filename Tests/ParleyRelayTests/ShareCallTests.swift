import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyShare
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// The newest shared screen of each member, as a viewer's draw loop would take it.
final class ScreenSink: VideoFrameSink {
    private let screens = Mutex<[ParticipantID: TerminalScreen]>([:])

    func deliver(_ frame: VideoFrame, from participant: ParticipantID) {}

    func deliver(_ screen: TerminalScreen, from participant: ParticipantID) {
        screens.withLock { $0[participant] = screen }
    }

    /// The text of every row of every screen held.
    var text: String {
        screens.withLock { screens in
            screens.values.map { screen in (0..<screen.rows).map(screen.text(ofRow:)).joined(separator: "\n") }
                .joined(separator: "\n")
        }
    }
}

/// A shared terminal in a real call: the real relay, engines on loopback; the sharer's screen published as
/// `parley share` publishes it. Viewers (one joining late) see it; in an end-to-end encrypted room a capture of the
/// sharer's traffic holds none of its text, while in a plain room the same capture does (the control).
@Suite(.serialized, .lane(.timing))
struct ShareCallTests {
    static let secretLine = "the vault code is 8147"

    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func member(_ name: String, port: Int, encrypted: Bool) throws -> CallConfiguration {
        var configuration = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "vault", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150), audioSource: .silence,
            showsSelfView: false, logger: quietLogger())
        if encrypted {
            configuration.encryption = try CallEncryption(
                secret: "correct horse battery", room: "vault", suite: .aes128GCM)
        }
        return configuration
    }

    static func screen(_ lines: [String], columns: Int = 40) -> TerminalScreen {
        var screen = TerminalScreen(rows: 5, columns: columns)
        for (row, line) in lines.enumerated() {
            for (column, letter) in line.enumerated() { screen[row, column] = ShareCell(String(letter)) }
        }
        return screen
    }

    /// alice shares through a recording proxy; bob watches from the start, carol joins once the screen is up.
    func shareCall(encrypted: Bool) async throws -> (capture: [[UInt8]], bob: String, carol: String) {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let udp = try await LossyUDPProxy.start(relayPort: relay.mediaPort, lossPercent: 0, seed: 1)
        let feed = TerminalShareFeed()
        var sharer = try member("alice", port: relay.signalingPort, encrypted: encrypted)
        sharer.share = feed
        sharer.microphoneMuted = true
        sharer.mediaAddressOverride = ServerAddress(host: "127.0.0.1", port: udp.port)
        // alice is in the call herself too: her terminal joins under her name as a member of its own.
        let alicePerson = try CallEngine(try member("alice", port: relay.signalingPort, encrypted: encrypted))
        let terminal = try CallEngine(sharer)
        let bobSink = ScreenSink()
        let bob = try CallEngine(try member("bob", port: relay.signalingPort, encrypted: encrypted), videoSink: bobSink)
        let bobLog = EventLog()
        let tasks = [bobLog.consume(bob)]
        for engine in [alicePerson, terminal, bob] { engine.start() }
        feed.publish(Self.screen(["$ cat notes", Self.secretLine, "$"]))

        let seen = await eventually(within: .seconds(10)) { bobSink.text.contains(Self.secretLine) }
        #expect(seen, "bob never saw alice's terminal (encrypted: \(encrypted)): \(bobSink.text)")
        let joinedAsTerminal = bobLog.all.contains {
            if case .sharesTerminal(_, let owner) = $0 { owner == "alice" } else { false }
        }
        #expect(joinedAsTerminal, "bob was not told the member is alice's terminal: \(bobLog.all)")

        // A late joiner gets the screen as it is now, not what changed before it came.
        feed.publish(Self.screen(["$ cat notes", Self.secretLine, "$ date", "Tue Dec  1"]))
        let carolSink = ScreenSink()
        let carol = try CallEngine(
            try member("carol", port: relay.signalingPort, encrypted: encrypted), videoSink: carolSink)
        carol.start()
        let carolSaw = await eventually(within: .seconds(10)) { carolSink.text.contains("Tue Dec  1") }
        #expect(carolSaw, "carol, joining late, never saw the current screen: \(carolSink.text)")
        let stats = await terminal.statistics()
        #expect(stats.videoFramesSent == 0, "a share sends no camera")

        for engine in [alicePerson, terminal, bob, carol] { await engine.leave() }
        tasks.forEach { $0.cancel() }
        let capture = try await udp.capture().filter(\.fromClient).map(\.bytes)
        await udp.stop()
        await relay.shutdown()
        return (capture, bobSink.text, carolSink.text)
    }

    @Test func aSharedTerminalIsSeenByEveryViewerAndSealedInAnEncryptedRoom() async throws {
        // The line as the update format carries it: each cell's width-and-length byte (width 1, 1 byte), then its
        // letter.
        let needle = Self.secretLine.utf8.flatMap { [UInt8(1 << 6 | 1), $0] }
        func holdsText(_ capture: [[UInt8]]) -> Bool {
            capture.contains { datagram in
                datagram.count >= needle.count
                    && (0...(datagram.count - needle.count)).contains {
                        Array(datagram[$0..<$0 + needle.count]) == needle
                    }
            }
        }
        // The control: a plain room's capture holds the text, so the search can find it.
        let plain = try await shareCall(encrypted: false)
        #expect(holdsText(plain.capture), "the plain capture of \(plain.capture.count) datagrams lacks the text")
        let sealed = try await shareCall(encrypted: true)
        #expect(!sealed.capture.isEmpty)
        #expect(!holdsText(sealed.capture), "the encrypted capture holds the shared screen's text")
        #expect(sealed.bob.contains(Self.secretLine) && sealed.carol.contains(Self.secretLine))
    }

    @Test func aSecondShareUnderOneNameIsRefusedAndATerminalNeverHosts() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        var first = try member("alice", port: relay.signalingPort, encrypted: false)
        first.share = TerminalShareFeed()
        let terminal = try CallEngine(first)
        let terminalLog = EventLog()
        let tasks = [terminalLog.consume(terminal)]
        terminal.start()
        let joined = await eventually(within: .seconds(10)) {
            terminalLog.all.contains { if case .joined = $0 { true } else { false } }
        }
        #expect(joined)
        let person = try CallEngine(try member("alice", port: relay.signalingPort, encrypted: false))
        let personLog = EventLog()
        let more = personLog.consume(person)
        person.start()
        // alice herself joins beside her terminal, and hosts the room it was in first.
        func own(_ log: EventLog) -> ParticipantID? {
            log.all.lazy.compactMap { if case .joined(let id) = $0 { id } else { nil } }.first
        }
        func hosts(_ log: EventLog) -> Bool {
            guard let me = own(log) else { return false }
            return log.all.contains { if case .hostChanged(let id) = $0 { id == me } else { false } }
        }
        let personHosts = await eventually(within: .seconds(10)) { hosts(personLog) }
        #expect(personHosts, "\(personLog.all)")
        #expect(!hosts(terminalLog), "the terminal hosts: \(terminalLog.all)")

        var second = try member("alice", port: relay.signalingPort, encrypted: false)
        second.share = TerminalShareFeed()
        let again = try CallEngine(second)
        let againLog = EventLog()
        let last = againLog.consume(again)
        again.start()
        let refused = await eventually(within: .seconds(10)) {
            againLog.all.contains {
                if case .joinFailed(let reason) = $0 {
                    reason.contains("alice already shares a terminal")
                } else {
                    false
                }
            }
        }
        #expect(refused, "\(againLog.all)")
        for engine in [terminal, person, again] { await engine.leave() }
        (tasks + [more, last]).forEach { $0.cancel() }
        await relay.shutdown()
    }

    /// Typing: only the sharer gives it, only the member given it types, and their leaving takes it back; in an
    /// encrypted room the keys travel sealed.
    @Test func onlyTheSharerGivesTypingAndOnlyTheMemberGivenItTypes() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let feed = TerminalShareFeed()
        var sharer = try member("alice", port: relay.signalingPort, encrypted: true)
        sharer.share = feed
        let terminal = try CallEngine(sharer)
        let alice = try CallEngine(try member("alice", port: relay.signalingPort, encrypted: true))
        let bob = try CallEngine(try member("bob", port: relay.signalingPort, encrypted: true))
        let carol = try CallEngine(try member("carol", port: relay.signalingPort, encrypted: true))
        let logs = [EventLog(), EventLog(), EventLog(), EventLog()]
        let engines = [terminal, alice, bob, carol]
        let tasks = zip(logs, engines).map { $0.consume($1) }
        for engine in engines { engine.start() }
        func id(_ log: EventLog) -> ParticipantID? {
            log.all.lazy.compactMap { if case .joined(let id) = $0 { id } else { nil } }.first
        }
        func seesAll(_ log: EventLog) -> Bool {
            log.all.filter { if case .userJoined = $0 { true } else { false } }.count >= 3
        }
        let everyone = await eventually(within: .seconds(10)) { logs.allSatisfy(seesAll) }
        #expect(everyone)
        let (terminalID, bobID) = (try #require(id(logs[0])), try #require(id(logs[2])))
        func controller(in log: EventLog) -> ParticipantID?? {
            log.all.lazy.compactMap { if case .shareController(_, let who) = $0 { .some(who) } else { nil } }.last
        }

        // bob cannot give himself typing in alice's terminal: nobody is told anything, his keys go nowhere.
        bob.perform(.grantControl(terminal: terminalID, to: bobID))
        bob.perform(.typeIntoShare(terminalID, Array("rm -rf /\r".utf8)))
        try await Task.sleep(for: .milliseconds(300))
        #expect(controller(in: logs[3]) == nil && feed.takeInput().isEmpty)

        // alice gives it to bob: the room is told, his keys reach the program, carol's do not.
        alice.perform(.grantControl(terminal: terminalID, to: bobID))
        let told = await eventually(within: .seconds(10)) { controller(in: logs[3]) == .some(bobID) }
        #expect(told, "carol was not told bob may type: \(logs[3].all)")
        carol.perform(.typeIntoShare(terminalID, Array("carol".utf8)))
        bob.perform(.typeIntoShare(terminalID, Array("ls -l\r".utf8)))
        var typed: [UInt8] = []
        let arrived = await eventually(within: .seconds(10)) {
            typed += feed.takeInput()
            return typed == Array("ls -l\r".utf8)
        }
        #expect(arrived, "the program got \(String(decoding: typed, as: UTF8.self).debugDescription)")
        #expect(feed.controller == "bob")

        // bob leaves: nobody may type any more, and the room hears it.
        await bob.leave()
        let revoked = await eventually(within: .seconds(10)) { controller(in: logs[3]) == .some(nil) }
        #expect(revoked, "\(logs[3].all)")
        #expect(feed.controller == nil)
        for engine in [terminal, alice, carol] { await engine.leave() }
        tasks.forEach { $0.cancel() }
        await relay.shutdown()
    }

    /// bob records the call: alice's terminal is written as an asciicast beside his WebM, from the screen it showed
    /// when he started to what it shows when he stops, on the recording's timeline; played back by libvterm it ends
    /// on alice's screen.
    @Test func aRecordingKeepsTheShareAsAnAsciicastBesideTheWebM() async throws {
        let folder = NSTemporaryDirectory() + "parley-share-rec-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let feed = TerminalShareFeed()
        var sharer = try member("alice", port: relay.signalingPort, encrypted: false)
        sharer.share = feed
        let terminal = try CallEngine(sharer)
        var recorder = try member("bob", port: relay.signalingPort, encrypted: false)
        recorder.recording = RecordingSettings(path: folder + "/call.webm")
        let sink = ScreenSink()
        let bob = try CallEngine(recorder, videoSink: sink)
        let bobLog = EventLog()
        let task = bobLog.consume(bob)
        terminal.start()
        bob.start()
        let first = Self.screen(["$ make", "building…"])
        feed.publish(first)
        let seen = await eventually(within: .seconds(10)) { sink.text.contains("building") }
        #expect(seen)
        bob.setRecording(true)
        try await Task.sleep(for: .milliseconds(200))
        let last = Self.screen(["$ make", "building…", "done in 3 s", "$ "], columns: 50)
        feed.publish(last)
        let shown = await eventually(within: .seconds(10)) { sink.text.contains("done in 3 s") }
        #expect(shown)
        bob.setRecording(false)
        let saved = await eventually(within: .seconds(10)) {
            bobLog.all.contains {
                if case .notice(let text) = $0 { text.contains("call-alice-terminal.cast") } else { false }
            }
        }
        #expect(saved, "\(bobLog.all)")
        for engine in [terminal, bob] { await engine.leave() }
        task.cancel()
        await relay.shutdown()

        let cast = try String(contentsOfFile: folder + "/call-alice-terminal.cast", encoding: .utf8)
        let lines = cast.split(separator: "\n").map { Data($0.utf8) }
        let header = try #require(try JSONSerialization.jsonObject(with: lines[0]) as? [String: Any])
        #expect(header["version"] as? Int == 2 && header["width"] as? Int == 40 && header["height"] as? Int == 5)
        #expect(header["title"] as? String == "alice's terminal")
        var player = try TerminalEmulator(rows: 5, columns: 40)
        var times: [Double] = []
        for line in lines.dropFirst() {
            let event = try #require(try JSONSerialization.jsonObject(with: line) as? [Any])
            times.append(try #require((event[0] as? NSNumber)?.doubleValue))
            switch event[1] as? String {
            case "o": player.write(Array(try #require(event[2] as? String).utf8))
            case "r":
                let size = try #require(event[2] as? String).split(separator: "x").compactMap { Int($0) }
                player = try TerminalEmulator(rows: size[1], columns: size[0])
            default: Issue.record("an event of kind \(event[1])")
            }
        }
        // The screen alice showed when bob started comes first, at the recording's start; it ends on her last.
        #expect(times.first.map { $0 < 0.2 } == true && times == times.sorted(), "\(times)")
        #expect(times.count >= 3, "a full screen, a resize and the last changes: \(times)")
        // Row by row as text (the emulator reads a printed space as a blank cell).
        let played = player.screen()
        #expect(played.columns == 50 && played.cursor == last.cursor)
        #expect((0..<5).map { played.text(ofRow: $0) } == (0..<5).map { last.text(ofRow: $0) })
    }
}

/// A shared terminal in a room spread over two relays of a cluster: its screen crosses the trunk like a camera, and
/// the viewer on the other node knows the member for a terminal.
@Suite(.serialized, .lane(.processes))
struct ShareAcrossNodesTests {
    @Test func aShareOnOneNodeIsSeenOnAnother() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let cluster = try await InProcessCluster.start(nodes: 2, logger: logger)
        try await cluster.connect()
        func member(_ name: String, node: Int) -> CallConfiguration {
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: cluster.relays[node].signalingPort), room: "across",
                name: name, profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150),
                audioSource: .silence, showsSelfView: false, logger: logger)
        }
        let feed = TerminalShareFeed()
        var sharer = member("alice", node: 0)
        sharer.share = feed
        let terminal = try CallEngine(sharer)
        let sink = ScreenSink()
        let bob = try CallEngine(member("bob", node: 1), videoSink: sink)
        let bobLog = EventLog()
        let task = bobLog.consume(bob)
        terminal.start()
        try await Task.sleep(for: .milliseconds(200))
        bob.start()
        feed.publish(ShareCallTests.screen(["$ uname", "Linux across the trunk"]))
        let seen = await eventually(within: .seconds(15)) { sink.text.contains("Linux across the trunk") }
        #expect(seen, "bob on node 1 never saw the share from node 0: \(sink.text)")
        // The event goes through bob's event stream to the log, a task of its own that a loaded machine runs later
        // than the picture reaches the sink (it was not in the log yet when the picture was, under `make test`).
        let known = await eventually(within: .seconds(5)) {
            bobLog.all.contains { if case .sharesTerminal(_, let owner) = $0 { owner == "alice" } else { false } }
        }
        #expect(known, "\(bobLog.all)")
        for engine in [terminal, bob] { await engine.leave() }
        task.cancel()
        await cluster.shutdown()
    }
}

/// The relay's routing of typing for a shared terminal: only to a terminal, only a terminal says who types, with the
/// sender stamped on, and no more than `typingPerSecond` a second from one member (the rest dropped and counted).
@Suite struct ShareRoutingTests {
    @Test func controlAndTypingGoToTheTerminalAloneWithinTheirBounds() throws {
        var relay = Harness()
        relay.state = RelayState(
            limits: SignalingLimits(livenessTimeout: .seconds(10), burst: 1_000, messagesPerSecond: 1_000),
            udpPort: 7878, roomRule: { .success($0) }, nameRule: { .success($0) }, random: SeededRandom(state: 1),
            wallClock: { 1_700_000_000_000 })
        let (alice, bob, shared) = (relay.connect(1), relay.connect(2), relay.connect(3))
        _ = relay.join("alice", on: alice)
        let bobID = relay.join("bob", on: bob)
        let joined = relay.send(.join(JoinRequest(room: "standup", name: "alice", kind: .terminal)), on: shared)
        let terminal = try #require(joinedAnswer(to: shared, in: joined)).you.id

        let wrong = relay.send(.control(ControlGrant(terminal: bobID, to: bobID)), on: bob)
        #expect(
            errorAnswer(to: bob, in: wrong)?.message == "member \(bobID) is not a shared terminal in this room (here)")
        let notTerminal = relay.send(.controller(ControllerChange(controller: bobID)), on: bob)
        #expect(errorAnswer(to: bob, in: notTerminal)?.message == "only a shared terminal says who types in it")

        // A grant reaches the terminal alone, stamped with who sent it: the terminal decides.
        let grant = relay.send(.control(ControlGrant(terminal: terminal, to: bobID)), on: bob)
        #expect(messages(to: shared, in: grant) == [.control(ControlGrant(terminal: terminal, to: bobID, from: bobID))])
        #expect(messages(to: alice, in: grant).isEmpty)
        // The terminal's word on who types goes to the room.
        let told = relay.send(.controller(ControllerChange(controller: bobID)), on: shared)
        #expect(messages(to: alice, in: told) == [.controller(ControllerChange(controller: bobID, terminal: terminal))])

        var passed = 0
        for _ in 0..<(RelayState.typingPerSecond + 20) {
            let actions = relay.send(.typing(TerminalTyping(terminal: terminal, keys: "eA==")), on: bob)
            passed += messages(to: shared, in: actions).count
        }
        #expect(passed == RelayState.typingPerSecond)
        #expect(relay.state.counters.typingDropped == 20)
        relay.now += .seconds(1)
        let later = relay.send(.typing(TerminalTyping(terminal: terminal, keys: "eA==")), on: bob)
        #expect(
            messages(to: shared, in: later) == [.typing(TerminalTyping(terminal: terminal, keys: "eA==", from: bobID))])
    }
}
