import Logging
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyRelay

extension Harness {
    /// A harness whose relay has these limits.
    init(limits: SignalingLimits) {
        self.init()
        state = RelayState(
            limits: limits, udpPort: 7878, roomRule: { .success($0) }, nameRule: { .success($0) },
            random: SeededRandom(state: 1), wallClock: { 1_700_000_000_000 })
    }
}

/// Every limit the relay enforces: a default, a refusal that names the limit and its option, a count.
@Suite(.lane(.timing))
struct RelayLimitsTests {
    func errors(to connection: ConnectionID, in actions: [RelayAction]) -> [String] {
        messages(to: connection, in: actions).compactMap {
            if case .error(let error) = $0, error.code == .limitReached { error.message } else { nil }
        }
    }

    @Test func aConnectionThatNeverJoinsIsClosedAfterTheJoinTimeout() {
        var relay = Harness()
        #expect(relay.state.limits.joinTimeout == .seconds(10))
        let idle = relay.connect(1)
        let member = relay.connect(2)
        let leaver = relay.connect(3)
        _ = relay.join("alice", on: member)
        _ = relay.join("bob", on: leaver)
        _ = relay.send(.leave, on: leaver)
        relay.now = .seconds(9)
        _ = relay.send(.ping(KeepAlive(token: 1)), on: member)
        #expect(relay.state.tick(now: relay.now).isEmpty)
        relay.now = .milliseconds(10_500)
        _ = relay.send(.ping(KeepAlive(token: 2)), on: member)
        let actions = relay.state.tick(now: relay.now)
        #expect(errors(to: idle, in: actions) == ["no join within 10 s of connecting (the join timeout)"])
        #expect(actions.contains(.close(idle)))
        #expect(!actions.contains(.close(member)) && !actions.contains(.close(leaver)), "joined once: not timed out")
        #expect(relay.state.counters.joinTimeouts == 1)
        #expect(relay.state.tick(now: .seconds(11)).isEmpty, "closed once")
    }

    @Test func aFloodOfIdleConnectionsIsClosedAFewHundredATickOldestFirst() {
        var limits = SignalingLimits()
        limits.connectionsPerAddress = 10_000
        var relay = Harness(limits: limits)
        let idle = (1...600).map { relay.connect(UInt64($0)) }
        relay.now = .seconds(11)
        func closed(_ actions: [RelayAction]) -> [ConnectionID] {
            actions.compactMap { if case .close(let connection) = $0 { connection } else { nil } }
        }
        let first = closed(relay.state.tick(now: relay.now))
        #expect(first == Array(idle.prefix(RelayState.joinTimeoutClosesPerTick)))
        let second = closed(relay.state.tick(now: relay.now + .milliseconds(250)))
        #expect(second == Array(idle.dropFirst(250).prefix(250)))
        let third = closed(relay.state.tick(now: relay.now + .milliseconds(500)))
        #expect(third.count == 100)
        #expect(relay.state.counters.joinTimeouts == 600)
    }

    @Test func connectionsPerAddressAreCapped() {
        var limits = SignalingLimits()
        limits.connectionsPerAddress = 2
        var relay = Harness(limits: limits)
        #expect(relay.state.connected(ConnectionID(1), from: "10.0.0.1", now: .zero).isEmpty)
        #expect(relay.state.connected(ConnectionID(2), from: "10.0.0.1", now: .zero).isEmpty)
        let refused = relay.state.connected(ConnectionID(3), from: "10.0.0.1", now: .zero)
        #expect(
            errors(to: ConnectionID(3), in: refused) == [
                "too many connections from 10.0.0.1: 2 is the limit per address (--max-connections-per-address)"
            ])
        #expect(refused.contains(.close(ConnectionID(3))))
        #expect(relay.state.connected(ConnectionID(4), from: "10.0.0.2", now: .zero).isEmpty, "another address")
        _ = relay.state.disconnected(ConnectionID(1), now: .zero)
        #expect(relay.state.connected(ConnectionID(5), from: "10.0.0.1", now: .zero).isEmpty, "a slot came free")
        #expect(relay.state.counters.limitsReached == 1)
    }

    /// Past about 80 members the list in `joined` would be over the size every client reads: the answer lists as
    /// many as fit, and each other member follows as `memberJoined`, every message within the limit.
    @Test func aLargeRoomsAnswerComesInMessagesAClientReads() {
        var limits = SignalingLimits()
        limits.membersPerRoom = 1_000
        limits.connectionsPerAddress = 1_000
        var relay = Harness(limits: limits)
        let ids = (1...400).map { relay.join("viewer\($0)", on: relay.connect(UInt64($0))) }
        let last = relay.connect(1_000)
        let answer = messages(to: last, in: relay.send(.join(JoinRequest(room: "standup", name: "late")), on: last))
        guard case .joined(let joined)? = answer.first else {
            Issue.record("the answer does not start with joined: \(answer.map(\.type))")
            return
        }
        #expect(joined.members.count > 50 && joined.members.count < 400, "\(joined.members.count) in joined")
        let followers = answer.dropFirst().compactMap { if case .memberJoined(let m) = $0 { m.member.id } else { nil } }
        #expect(Set(joined.members.map(\.id) + followers) == Set(ids), "every member, once")
        #expect(joined.members.count + followers.count == ids.count)
        for message in answer {
            #expect(message.encoded().utf8.count <= maxSignalingMessageBytes, "\(message.type)")
        }
        // A small room's answer is one message, as before.
        var small = Harness()
        _ = small.join("alice", on: small.connect(1))
        let bob = small.connect(2)
        let smallAnswer = messages(to: bob, in: small.send(.join(JoinRequest(room: "standup", name: "bob")), on: bob))
        #expect(smallAnswer.count == 1)
    }

    @Test func roomsPerRelayAndMembersPerRoomAreCapped() {
        var limits = SignalingLimits()
        limits.rooms = 2
        limits.membersPerRoom = 2
        var relay = Harness(limits: limits)
        _ = relay.join("a", room: "one", on: relay.connect(1))
        _ = relay.join("b", room: "two", on: relay.connect(2))
        let third = relay.connect(3)
        #expect(
            errors(to: third, in: relay.send(.join(JoinRequest(room: "three", name: "c")), on: third)) == [
                "the relay holds 2 rooms, its limit (--max-rooms); join an existing room or try later"
            ])
        _ = relay.join("c", room: "one", on: third)
        let fourth = relay.connect(4)
        #expect(
            errors(to: fourth, in: relay.send(.join(JoinRequest(room: "one", name: "d")), on: fourth)) == [
                "room one is full: 2 members is its limit (--max-members)"
            ])
        #expect(relay.state.rooms["one"]?.members.count == 2 && relay.state.rooms["three"] == nil)
        #expect(relay.state.counters.limitsReached == 2)
    }

    @Test func aMembersMediaRateIsCappedWithABurstOfOneSecond() {
        var limits = MediaLimits()
        #expect(limits.memberKbps == 3200)
        limits.memberKbps = 80  // 10,000 bytes a second
        var router = MediaRouter<String>(limits: limits)
        let first = router.admitMedia(from: 1, bytes: 6000, at: .zero)
        let second = router.admitMedia(from: 1, bytes: 4000, at: .zero)
        let third = router.admitMedia(from: 1, bytes: 1, at: .zero)
        let other = router.admitMedia(from: 2, bytes: 10_000, at: .zero)
        let later = router.admitMedia(from: 1, bytes: 5000, at: .milliseconds(500))
        let tooMuch = router.admitMedia(from: 1, bytes: 100, at: .milliseconds(500))
        #expect(first && second && !third, "a second's worth, then nothing")
        #expect(other, "another member has its own allowance")
        #expect(later && !tooMuch, "half a second refills half")
        #expect(router.dropped[.overRate] == 2)
        var unlimited = MediaRouter<String>(
            limits: {
                var l = MediaLimits()
                l.memberKbps = 0
                return l
            }())
        var admitted = 0
        for _ in 0..<100 where unlimited.admitMedia(from: 1, bytes: 1 << 20, at: .zero) { admitted += 1 }
        #expect(admitted == 100)
    }

    @Test(arguments: [
        // (declared video kbit/s, relay-wide cap, expected cap): twice the profile's video plus the audio share.
        (Int?.none, 3200, 3200), (65, 3200, 330), (600, 3200, 1400), (1500, 3200, 3200), (5000, 3200, 3200),
        (65, 200, 200), (65, 0, 0),
    ])
    func aMemberIsHeldToTwiceTheProfileItDeclared(declared: Int?, relayCap: Int, expected: Int) {
        var limits = MediaLimits()
        limits.memberKbps = relayCap
        #expect(limits.memberKbps(video: declared) == expected)
        var router = MediaRouter<String>(limits: limits)
        router.add(member: 1, room: "r", ssrcs: MemberSSRCs(block: 0x1000), role: .broadcaster, videoKbps: declared)
        // A second's worth is the burst: exactly that passes, one byte more does not (0: no limit at all).
        let burst = expected * 1000 / 8
        if expected > 0 {
            let whole = router.admitMedia(from: 1, bytes: burst, at: .zero)
            let more = router.admitMedia(from: 1, bytes: 1, at: .zero)
            #expect(whole && !more)
        } else {
            let huge = router.admitMedia(from: 1, bytes: 1 << 30, at: .zero)
            #expect(huge)
        }
    }

    @Test func aJoinDeclaringAnImpossibleVideoRateIsRefusedSayingWhy() throws {
        for bad in [0, -5, 20_001] {
            let text = #"{"v":1,"type":"join","room":"r","name":"a","videoKbps":\#(bad)}"#
            #expect(throws: SignalingError.self) { try ClientMessage.decode(text) }
            do { _ = try ClientMessage.decode(text) } catch {
                #expect("\(error)".contains("videoKbps \(bad) is outside 1…20000"), "\(error)")
            }
        }
        let good = #"{"v":1,"type":"join","room":"r","name":"a","videoKbps":65}"#
        guard case .join(let request) = try ClientMessage.decode(good) else {
            Issue.record("not a join")
            return
        }
        #expect(request.videoKbps == 65)
    }

    @Test func aRelayDropsWhatAMemberSendsBeyondTwiceItsDeclaredProfile() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger))
        defer { Task { await relay.shutdown() } }
        let member = try await TestMember.connect(port: relay.signalingPort, group: RelayLoopbackTests.group)
        // 20 kbit/s of video declared: (20 + 100) × 2 = 240 kbit/s, 30,000 bytes of burst.
        let joined = try await member.join("slow", room: "capped", videoKbps: 20)
        let socket = try await TestUDPSocket.open()
        #expect(try await bindMedia(socket, joined: joined) == .bound)
        // 120 packets of 1,012 bytes. The bucket refills at 30,000 bytes a second while they are sent and read, so
        // what passes is bounded by the burst plus the refill over the time the whole exchange took, whatever the
        // machine's load: on an idle machine about 30 pass and 90 are dropped.
        let sent = 120
        let started = ContinuousClock.now
        let packets = (UInt16(0)..<UInt16(sent)).map { sequence in
            RTPPacket(
                header: RTPHeader(
                    marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: sequence,
                    timestamp: 0, ssrc: joined.media.ssrcs.video),
                payload: [0x10] + Array(repeating: 0, count: 999)
            ).serialized()
        }
        await socket.sendAll(packets, toPort: joined.media.udpPort)
        // Every packet is either dropped over the rate or kept for retransmission.
        let read = try await eventually {
            let counters = try await relay.counters()
            return counters.limitsReached + counters.retainedPackets + counters.releasedPackets >= sent
        }
        let elapsed = ContinuousClock.now - started
        let counters = try await relay.counters()
        let passed = sent - counters.limitsReached
        let refill = Int(30_000 * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        let mostThatCanPass = (30_000 + refill) / 1_012 + 1
        #expect(read, "\(counters)")
        #expect(
            passed >= 29 && passed <= mostThatCanPass,
            "\(passed) of \(sent) passed in \(elapsed): the burst (29) at least, at most \(mostThatCanPass); \(counters)"
        )
    }

    /// A connection the relay closes itself (after a goodbye) gives its place in its address's count back: with two
    /// places an address, one client leaves and comes back five times over.
    @Test func aConnectionTheRelayClosesFreesItsPlaceForItsAddress() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var limits = SignalingLimits()
        limits.connectionsPerAddress = 2
        let relay = try await Relay.start(
            RelayConfiguration(host: "127.0.0.1", port: 0, limits: limits, logger: logger))
        defer { Task { await relay.shutdown() } }
        for round in 1...5 {
            let member = try await TestMember.connect(port: relay.signalingPort, group: RelayLoopbackTests.group)
            let joined = try? await member.join("alice")
            #expect(joined != nil, "round \(round): \(member.messages)")
            member.send(.leave)
            #expect(await eventually { member.isClosed }, "round \(round): the relay closes after the goodbye")
        }
    }

    @Test func aSourceThatWentQuietHasItsHeldBackCountWrittenWhenItsWindowEnds() {
        var throttle = LogThrottle<String>(window: .seconds(60), capacity: 8)
        #expect(throttle.admit("a", at: .zero) == 0)
        for second in 1...5 { _ = throttle.admit("a", at: .seconds(second)) }
        #expect(throttle.admit("b", at: .seconds(10)) == 0)
        #expect(throttle.expire(at: .seconds(59)).isEmpty, "both still in their window")
        let due = throttle.expire(at: .seconds(60))
        #expect(due.map(\.key) == ["a"] && due.map(\.heldBack) == [5])
        #expect(throttle.count == 1, "a forgotten; b (nothing held back) stays until its window ends")
        #expect(throttle.expire(at: .seconds(70)).isEmpty && throttle.count == 0)
        #expect(throttle.admit("a", at: .seconds(71)) == 0, "a new line after the summary starts a fresh count")
    }

    @Test func repeatedLogLinesAreOnePerSourceAMinuteWithACount() {
        var throttle = LogThrottle<String>(window: .seconds(60), capacity: 2)
        #expect(throttle.admit("a", at: .zero) == 0)
        #expect(throttle.admit("a", at: .seconds(1)) == nil)
        #expect(throttle.admit("a", at: .seconds(59)) == nil)
        #expect(throttle.admit("b", at: .seconds(2)) == 0)
        #expect(throttle.admit("c", at: .seconds(3)) == nil, "full of keys still in their window")
        #expect(throttle.unlogged == 1)
        #expect(throttle.admit("a", at: .seconds(60)) == 2, "the next line says how many were held back")
        #expect(throttle.admit("c", at: .seconds(63)) == 0, "b's window ended: it is forgotten to make room")
        #expect(throttle.count == 2)
    }
}

extension RelayLimitsTests {
    @Test func messageSizeAndChatLengthCanBeLoweredAndSaySo() {
        var limits = SignalingLimits()
        #expect(limits.messageBytes == 16_384 && limits.chatCharacters == 2000)
        limits.messageBytes = 2048
        limits.chatCharacters = 10
        var relay = Harness(limits: limits)
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        let long = relay.send(.chat(ChatSend(text: "eleven char")), on: a)
        #expect(messages(to: b, in: long).isEmpty, "nothing reached bob")
        #expect(
            messages(to: a, in: long).contains {
                if case .error(let error) = $0 {
                    error.message
                        == "chat line has 11 characters; this relay's limit is 10 characters (--max-chat-characters)"
                } else {
                    false
                }
            })
        #expect(!messages(to: b, in: relay.send(.chat(ChatSend(text: "ten chars!")), on: a)).isEmpty)
        let big = relay.state.received(
            ClientMessage.chat(ChatSend(text: String(repeating: "x", count: 9))).encoded()
                + String(repeating: " ", count: 2100), on: a, now: relay.now)
        #expect(
            messages(to: a, in: big).contains {
                if case .error(let error) = $0 {
                    error.code == .tooLarge && error.message.hasSuffix("(--max-message-bytes)")
                } else {
                    false
                }
            })
    }
}

/// Log lines a relay writes, for tests that count them.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    /// Everything logged so far, as "message key=value …" with sorted metadata.
    var all: [String] { lines.withLock { $0 } }

    /// A logger that writes here at `level` and above.
    func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "captured") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            log.lines.withLock { $0.append("\(event.message) \(fields)") }
        }
    }
}

@Suite(.lane(.timing)) struct RefusedBindLogTests {
    @Test func aSprayOfBadBindsWritesOneLineThenItsCountWhenTheWindowEnds() async throws {
        let log = CapturedLog()
        var media = MediaLimits()
        media.refusedBindLogWindow = .seconds(2)
        let relay = try await Relay.start(
            RelayConfiguration(
                host: "127.0.0.1", port: 0, media: media,
                logger: log.logger()))
        let member = try await TestMember.connect(port: relay.signalingPort, group: RelayLoopbackTests.group)
        let joined = try await member.join("target", room: "sprayed")
        let socket = try await TestUDPSocket.open()
        let wrong = try #require(BindToken(hex: String(repeating: "0", count: 32)))
        // All 200 leave at once, well within the 2 s window.
        let request = BindRequest(ssrc: joined.media.ssrcs.audio, memberID: joined.you.id, token: wrong)
        await socket.sendAll(Array(repeating: request.serialized(), count: 200), toPort: joined.media.udpPort)
        let refusedAll = try await eventually { try await relay.counters().bindFailures == 200 }
        let counters = try await relay.counters()
        #expect(refusedAll, "\(counters)")
        let first = log.all.filter { $0.hasPrefix("bind refused ") }
        #expect(first.count == 1, "one line for the spray so far:\n\(first.joined(separator: "\n"))")
        // The window ends: the 199 held back are written once, even though the spray stopped.
        let summarized = await eventually { log.all.contains { $0.hasPrefix("bind refused, held back") } }
        let summary = log.all.filter { $0.hasPrefix("bind refused, held back") }
        #expect(summarized && summary.count == 1 && summary[0].contains("held_back=199"), "\(log.all)")
        await relay.shutdown()
    }
}
