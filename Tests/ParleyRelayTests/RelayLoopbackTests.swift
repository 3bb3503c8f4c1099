import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// The real relay on loopback: real WebSockets, real UDP.
@Suite(.serialized, .lane(.timing))
struct RelayLoopbackTests {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    func startRelay(liveness: Duration = .seconds(10), media: MediaLimits = MediaLimits()) async throws -> Relay {
        var logger = Logger(label: "test.relay")
        logger.logLevel = .critical
        return try await Relay.start(
            RelayConfiguration(
                host: "127.0.0.1", port: 0, limits: SignalingLimits(livenessTimeout: liveness), media: media,
                logger: logger))
    }

    /// A relay keeping packets for NACKs 10 s rather than 500 ms: what is tested is that the relay answers from its
    /// buffer, not how long the buffer keeps (the table tests of `RetransmissionBuffer` do), so a test scheduled
    /// late on a busy machine still finds the packets it NACKs.
    func startRelayKeepingPackets() async throws -> Relay {
        try await startRelay(media: MediaLimits(retransmissionWindow: .seconds(10)))
    }

    /// Whether `packet` holds a keyframe request for `ssrc`.
    func isKeyframeRequest(_ packet: [UInt8], for ssrc: UInt32) -> Bool {
        keyframeRequests([packet], for: ssrc) == 1
    }

    func rtp(
        ssrc: UInt32, sequence: UInt16, payloadType: UInt8 = 96, payload: [UInt8] = [0x90, 0x80, 0x81, 0x23, 0x50]
    )
        -> [UInt8]
    {
        RTPPacket(
            header: RTPHeader(
                marker: true, payloadType: payloadType, sequenceNumber: sequence,
                timestamp: 1000, ssrc: ssrc), payload: payload
        ).serialized()
    }

    /// How many of `packets` hold a keyframe request for `ssrc`.
    func keyframeRequests(_ packets: [[UInt8]], for ssrc: UInt32) -> Int {
        packets.filter {
            (try? RTCPPacket.parseCompound($0))?.contains {
                if case .pictureLossIndication(let pli) = $0 { pli.mediaSSRC == ssrc } else { false }
            } ?? false
        }.count
    }

    @Test func membersSeeEachOtherAndChatInOneOrder() async throws {
        let relay = try await startRelay()
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let carol = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let a = try await alice.join("alice")
        let b = try await bob.join("bob")
        let c = try await carol.join("carol")
        #expect(c.members.map(\.name) == ["alice", "bob"])
        _ = try await alice.wait(for: "carol joined") {
            if case .memberJoined(let joined) = $0, joined.member.id == c.you.id { true } else { nil }
        }
        for (index, member) in [alice, bob, carol].enumerated() {
            for line in 0..<5 { member.send(.chat(ChatSend(text: "\(index)-\(line)"))) }
        }
        for member in [alice, bob, carol] {
            let ok = await eventually {
                member.messages.filter { if case .chat = $0 { true } else { false } }.count == 15
            }
            #expect(ok)
        }
        func order(_ member: TestMember) -> [String] {
            member.messages.compactMap { if case .chat(let chat) = $0 { "\(chat.seq):\(chat.text)" } else { nil } }
        }
        #expect(order(alice) == order(bob))
        #expect(order(bob) == order(carol))
        #expect(order(alice).map { $0.split(separator: ":")[0] } == (1...15).map { "\($0)" })

        bob.send(.mute(MuteChange(audio: true)))
        let mute = try await alice.wait(for: "bob's mute") { if case .mute(let mute) = $0 { mute } else { nil } }
        #expect(mute == MemberMute(id: b.you.id, audio: true, video: false))
        #expect(try await relay.member(b.you.id)?.audioMuted == true)

        alice.send(.leave)
        let left = try await carol.wait(for: "alice left") {
            if case .memberLeft(let left) = $0 { left } else { nil }
        }
        #expect(left == MemberLeft(id: a.you.id, reason: .quit))
    }

    @Test func mediaFlowsOnlyAfterTheBindAndIsCounted() async throws {
        let relay = try await startRelay()
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let a = try await alice.join("alice")
        let b = try await bob.join("bob")
        let aliceUDP = try await TestUDPSocket.open()
        let bobUDP = try await TestUDPSocket.open()
        let stranger = try await TestUDPSocket.open()

        // Before binding nothing is forwarded.
        await aliceUDP.send(rtp(ssrc: a.media.ssrcs.video, sequence: 1), toPort: a.media.udpPort)
        #expect(try await bindMedia(bobUDP, joined: b) == .bound)
        #expect(await bobUDP.receive(for: .milliseconds(200)).isEmpty)

        #expect(try await bindMedia(aliceUDP, joined: a) == .bound)
        let packet = rtp(ssrc: a.media.ssrcs.video, sequence: 2)
        await aliceUDP.send(packet, toPort: a.media.udpPort)
        #expect(await bobUDP.receive(until: { $0 == packet }) != nil, "bound sender's RTP reaches the other member")

        // A stranger using Alice's SSRC, garbage and a wrong token are dropped and counted.
        await stranger.send(rtp(ssrc: a.media.ssrcs.video, sequence: 3), toPort: a.media.udpPort)
        await stranger.send([0x00, 0x01, 0x02], toPort: a.media.udpPort)
        await stranger.send([0x80], toPort: a.media.udpPort)
        var wrong = try #require(BindToken(hex: a.media.credential)).bytes
        wrong[0] ^= 0xFF
        let badBind = BindRequest(ssrc: a.media.ssrcs.audio, memberID: a.you.id, token: BindToken(bytes: wrong)!)
        await stranger.send(badBind.serialized(), toPort: a.media.udpPort)
        let refusal = try #require(await stranger.receive(until: { Bind.isBindPacket($0) }))
        #expect(try BindAcknowledgement(parsing: refusal).status == .wrongToken)
        #expect(await bobUDP.receive(for: .milliseconds(200)).isEmpty, "nothing from the stranger reaches bob")
        let counters = try await relay.counters()
        #expect(counters.packetsDropped >= 4)
        #expect(counters.bindFailures == 1)

        // Alice is still bound: the stranger's bind did not steal her address.
        let later = rtp(ssrc: a.media.ssrcs.audio, sequence: 9, payloadType: 111, payload: [0xF8, 0xFF, 0xFE])
        await aliceUDP.send(later, toPort: a.media.udpPort)
        #expect(await bobUDP.receive(until: { $0 == later }) != nil)
    }

    @Test func nacksAreAnsweredByTheRelayAndPLIsAreThrottled() async throws {
        let relay = try await startRelayKeepingPackets()
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let a = try await alice.join("alice")
        let b = try await bob.join("bob")
        let aliceUDP = try await TestUDPSocket.open()
        let bobUDP = try await TestUDPSocket.open()
        #expect(try await bindMedia(aliceUDP, joined: a) == .bound)
        #expect(try await bindMedia(bobUDP, joined: b) == .bound)
        let video = a.media.ssrcs.video
        #expect(await aliceUDP.receive(until: { isKeyframeRequest($0, for: video) }) != nil, "bob's bind asks alice")

        let packets = (100..<105).map { rtp(ssrc: a.media.ssrcs.video, sequence: UInt16($0)) }
        for packet in packets { await aliceUDP.send(packet, toPort: a.media.udpPort) }
        #expect(await bobUDP.receive(count: 5) == packets)

        let nack = GenericNACK(senderSSRC: b.media.ssrcs.audio, mediaSSRC: a.media.ssrcs.video, lost: [101, 103])
        await bobUDP.send(RTCPPacket.nack(nack).serialized(), toPort: b.media.udpPort)
        let resent = await bobUDP.receive(count: 2)
        #expect(resent == [packets[1], packets[3]], "answered from the relay's buffer, unchanged")
        #expect(await aliceUDP.receive(for: .milliseconds(100)).isEmpty, "the sender is not bothered")

        let pli = RTCPPacket.pictureLossIndication(
            PictureLossIndication(
                senderSSRC: b.media.ssrcs.audio,
                mediaSSRC: a.media.ssrcs.video)
        ).serialized()
        let started = ContinuousClock.now
        for _ in 0..<30 {
            await bobUDP.send(pli, toPort: b.media.udpPort)
            try await Task.sleep(for: .milliseconds(10))
        }
        // One request per 500 ms window passes (the first window began with the relay's own request when bob's
        // receiving began): ~300 ms of PLIs give one or two, more on a busy machine where the sleeps stretch (the
        // bound follows the time the sending really took).
        let elapsed = ContinuousClock.now - started
        let windows = 2 + Int(elapsed / .milliseconds(500))
        let requests = keyframeRequests(await aliceUDP.receive(for: .milliseconds(700)), for: a.media.ssrcs.video)
        #expect((1...windows).contains(requests), "30 PLIs in \(elapsed) became \(requests) (at most \(windows))")
        #expect(try await relay.counters().keyframeRequestsThrottled >= 30 - windows)
    }

    /// A member whose media starts just after another's keyframe request was answered: the relay asks the camera
    /// for a keyframe at its bind, not when the throttle's interval (5 s here) ends; a second member binding while
    /// that keyframe is on its way adds no request.
    @Test func aMemberWhoseMediaStartsIsSentAKeyframeAtOnce() async throws {
        var logger = Logger(label: "test.relay")
        logger.logLevel = .critical
        let relay = try await Relay.start(
            RelayConfiguration(
                host: "127.0.0.1", port: 0, media: MediaLimits(keyframeRequestInterval: .seconds(5)), logger: logger))
        defer { Task { await relay.shutdown() } }
        var joined: [JoinedRoom] = []
        var members: [TestMember] = []
        for name in ["alice", "bob", "carol", "dave"] {
            let member = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
            members.append(member)
            joined.append(try await member.join(name))
        }
        let (a, b) = (joined[0], joined[1])
        var sockets: [TestUDPSocket] = []
        for _ in 0..<4 { sockets.append(try await TestUDPSocket.open()) }
        let video = a.media.ssrcs.video
        func requests(_ packets: [[UInt8]]) -> Int { keyframeRequests(packets, for: video) }
        func asked() async -> Bool { await sockets[0].receive(until: { isKeyframeRequest($0, for: video) }) != nil }
        #expect(try await bindMedia(sockets[0], joined: a) == .bound)
        #expect(try await bindMedia(sockets[1], joined: b) == .bound)
        #expect(await asked(), "bob's bind asks alice for a keyframe")
        // Bob's own request, the keyframe that answers it; then bob asks again (held: it is within 5 s).
        await sockets[1].send(
            RTCPPacket.pictureLossIndication(
                PictureLossIndication(senderSSRC: b.media.ssrcs.audio, mediaSSRC: a.media.ssrcs.video)
            ).serialized(), toPort: b.media.udpPort)
        await sockets[0].send(rtp(ssrc: a.media.ssrcs.video, sequence: 1), toPort: a.media.udpPort)
        #expect(await sockets[1].receive(until: { $0 == rtp(ssrc: a.media.ssrcs.video, sequence: 1) }) != nil)
        #expect(requests(await sockets[0].receive(for: .milliseconds(200))) == 0, "within the interval")

        // Carol's media starts: alice is asked at once, though bob's request was forwarded under 5 s ago.
        #expect(try await bindMedia(sockets[2], joined: joined[2]) == .bound)
        #expect(await asked(), "carol's first keyframe is asked for")
        // Dave's starts before alice answered: the keyframe on its way reaches him too.
        #expect(try await bindMedia(sockets[3], joined: joined[3]) == .bound)
        #expect(requests(await sockets[0].receive(for: .milliseconds(300))) == 0, "one keyframe serves carol and dave")
        let keyframe = rtp(ssrc: a.media.ssrcs.video, sequence: 2)
        await sockets[0].send(keyframe, toPort: a.media.udpPort)
        for socket in sockets[2...] { #expect(await socket.receive(until: { $0 == keyframe }) != nil) }
        #expect(try await relay.counters().keyframeRequestsThrottled >= 2)
    }

    @Test func aMemberOfAnotherRoomGetsNothingAndCausesNothing() async throws {
        // Alice and Bob talk in room A; Mallory, in room B, knows their SSRCs (say, from a capture) and asks for
        // their packets and keyframes, and forges reports in their name.
        let relay = try await startRelayKeepingPackets()
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let mallory = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let a = try await alice.join("alice", room: "room-a")
        let b = try await bob.join("bob", room: "room-a")
        let m = try await mallory.join("mallory", room: "room-b")
        let aliceUDP = try await TestUDPSocket.open()
        let bobUDP = try await TestUDPSocket.open()
        let malloryUDP = try await TestUDPSocket.open()
        for (socket, joined) in [(aliceUDP, a), (bobUDP, b), (malloryUDP, m)] {
            #expect(try await bindMedia(socket, joined: joined) == .bound)
        }
        // Bob's media started: the relay asked alice for his first keyframe (mallory's asked nobody in room A).
        let video = a.media.ssrcs.video
        #expect(await aliceUDP.receive(until: { isKeyframeRequest($0, for: video) }) != nil)
        let packets = (100..<105).map { rtp(ssrc: a.media.ssrcs.video, sequence: UInt16($0)) }
        for packet in packets { await aliceUDP.send(packet, toPort: a.media.udpPort) }
        #expect(await bobUDP.receive(count: 5) == packets)
        let before = try await relay.counters()

        let own = m.media.ssrcs.audio
        let attacks: [[RTCPPacket]] = [
            [.nack(GenericNACK(senderSSRC: own, mediaSSRC: a.media.ssrcs.video, lost: [100, 101, 102]))],
            [.pictureLossIndication(PictureLossIndication(senderSSRC: own, mediaSSRC: a.media.ssrcs.video))],
            [
                .receiverReport(
                    ReceiverReport(
                        ssrc: own,
                        reports: [
                            ReportBlock(
                                ssrc: a.media.ssrcs.video, fractionLost: 255, cumulativeLost: 1000,
                                extendedHighestSequenceNumber: 1,
                                jitter: 0, lastSenderReport: 0, delaySinceLastSenderReport: 0)
                        ]))
            ],
            // Her own report first, then a NACK and PLI claiming to come from Bob: every packet is checked.
            [
                .receiverReport(ReceiverReport(ssrc: own, reports: [])),
                .nack(GenericNACK(senderSSRC: b.media.ssrcs.audio, mediaSSRC: a.media.ssrcs.video, lost: [103])),
                .pictureLossIndication(
                    PictureLossIndication(
                        senderSSRC: b.media.ssrcs.audio,
                        mediaSSRC: a.media.ssrcs.video)),
            ],
            [
                .sourceDescription(
                    SourceDescription(chunks: [
                        .init(ssrc: own, items: [.init(type: SourceDescription.Item.cname, text: "mallory")]),
                        .init(
                            ssrc: a.media.ssrcs.audio, items: [.init(type: SourceDescription.Item.cname, text: "alice")]
                        ),
                    ]))
            ],
        ]
        for attack in attacks { await malloryUDP.send(RTCPPacket.serializeCompound(attack), toPort: m.media.udpPort) }

        #expect(await malloryUDP.receive(for: .milliseconds(300)).isEmpty, "room A's packets never reach room B")
        #expect(
            await aliceUDP.receive(for: .milliseconds(600)).isEmpty, "no keyframe request, NACK or report reached alice"
        )
        #expect(await bobUDP.receive(for: .milliseconds(100)).isEmpty, "nothing forged reached bob")
        let after = try await relay.counters()
        #expect(after.retransmissionsServed == before.retransmissionsServed)
        #expect(after.nacksForwardedToSenders == before.nacksForwardedToSenders)
        #expect(after.packetsDropped - before.packetsDropped == 2, "the two forged compounds, each counted once")
        #expect(after.crossRoomFeedback - before.crossRoomFeedback == 3, "NACK, PLI and report block about room A")

        // The same request from Bob, in room A, is answered: the rules stop Mallory, not the room.
        let fresh = (200..<203).map { rtp(ssrc: a.media.ssrcs.video, sequence: UInt16($0)) }
        for packet in fresh { await aliceUDP.send(packet, toPort: a.media.udpPort) }
        #expect(await bobUDP.receive(count: 3) == fresh)
        let nack = GenericNACK(senderSSRC: b.media.ssrcs.audio, mediaSSRC: a.media.ssrcs.video, lost: [201])
        await bobUDP.send(RTCPPacket.nack(nack).serialized(), toPort: b.media.udpPort)
        #expect(await bobUDP.receive(count: 1) == [fresh[1]])
        #expect(await bobUDP.receive(for: .milliseconds(100)).isEmpty, "once")
    }

    @Test func silentMembersAreReportedAsTimedOut() async throws {
        let relay = try await startRelay(liveness: .seconds(1))
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        _ = try await alice.join("alice")
        let b = try await bob.join("bob")
        bob.connection.abort()
        // Alice's keep-alives come from an event loop's timer, not a task: with a 1 s liveness timeout, a task on the
        // shared cooperative pool (two threads here, which other suites' blocking socket reads can hold for seconds)
        // would go quiet long enough for the relay to time alice out too, and she would never hear about bob.
        let tokens = Atomic<UInt64>(0)
        let pinger = Self.group.next().scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(100)) { task in
            let token = tokens.add(1, ordering: .relaxed).oldValue
            guard token < 100 else { return task.cancel() }
            alice.send(.ping(KeepAlive(token: token)))
        }
        defer { pinger.cancel() }
        let left = try await alice.wait(for: "bob timed out", within: .seconds(8)) {
            if case .memberLeft(let left) = $0 { left } else { nil }
        }
        #expect(left == MemberLeft(id: b.you.id, reason: .timeout))
    }

    @Test func garbageOnTheWebSocketLeavesTheCallIntact() async throws {
        let relay = try await startRelay()
        defer { Task { await relay.shutdown() } }
        let alice = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let bob = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        let vandal = try await TestMember.connect(port: relay.signalingPort, group: Self.group)
        _ = try await alice.join("alice")
        _ = try await bob.join("bob")
        let barrage = [
            "", "{", "[]", "null", #"{"v":1}"#, #"{"v":9,"type":"join"}"#, #"{"v":1,"type":"chat","text":"x"}"#,
            #"{"v":1,"type":"join","room":"","name":"x"}"#, String(repeating: "x", count: 20_000),
        ]
        for text in barrage { vandal.connection.sendRawText(text) }
        _ = try await vandal.wait(for: "an error") { if case .error(let error) = $0 { error } else { nil } }
        alice.send(.chat(ChatSend(text: "still here")))
        let chat = try await bob.wait(for: "chat after the barrage") {
            if case .chat(let chat) = $0 { chat.text } else { nil }
        }
        #expect(chat == "still here")
        let counters = try await relay.counters()
        #expect(counters.signalingErrors + counters.rateLimited >= 8)
        #expect(try await relay.rooms()["standup"]?.count == 2)
    }
}
