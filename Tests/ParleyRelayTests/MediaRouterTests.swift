import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

@Suite(.lane(.timing))
struct MediaRouterTests {
    static let alice = MemberSSRCs(block: 0x100)
    static let bob = MemberSSRCs(block: 0x200)
    static let carol = MemberSSRCs(block: 0x300)

    /// Alice, Bob and Carol in "r"; Alice and Bob bound, Carol not yet.
    func router() -> MediaRouter<String> {
        var router = MediaRouter<String>()
        router.add(member: 1, room: "r", ssrcs: Self.alice, role: .broadcaster)
        router.add(member: 2, room: "r", ssrcs: Self.bob, role: .broadcaster)
        router.add(member: 3, room: "r", ssrcs: Self.carol, role: .audience)
        router.bind(member: 1, to: "a:1")
        router.bind(member: 2, to: "b:1")
        return router
    }

    @Test func forwardsToEveryOtherBoundMember() {
        var router = router()
        var out: [String] = []
        router.destinations(from: 1, in: "r", into: &out)
        #expect(out == ["b:1"])
        router.bind(member: 3, to: "c:1")
        router.destinations(from: 1, in: "r", into: &out)
        #expect(out == ["b:1", "c:1"])
        router.forget(member: 2)
        router.destinations(from: 1, in: "r", into: &out)
        #expect(out == ["c:1"])
    }

    static let senders: [(String, UInt32, String, UInt32?, DropReason?)] = [
        ("audio from its bound address", alice.audio, "a:1", 1, nil),
        ("video from its bound address", alice.video, "a:1", 1, nil),
        ("reserved SSRC of the block: never handed out", alice.videoLow + 1, "a:1", nil, .unallottedSSRC),
        ("SSRC of nobody", 0x999, "a:1", nil, .unknownSource),
        ("Alice's SSRC from Bob's address", alice.video, "b:1", nil, .unprovenAddress),
        ("Carol before binding", carol.audio, "c:1", nil, .unprovenAddress),
    ]

    @Test(arguments: senders)
    func senderNeedsBlockAndProvenAddress(
        name: String, ssrc: UInt32, address: String, member: UInt32?,
        drop: DropReason?
    ) {
        var router = router()
        #expect(router.sender(ssrc: ssrc, from: address)?.member == member, "\(name)")
        #expect(router.dropped == (drop.map { [$0: 1] } ?? [:]), "\(name)")
    }

    @Test func rebindingMovesTheAddress() {
        var router = router()
        router.bind(member: 1, to: "a:2")
        #expect(router.sender(ssrc: Self.alice.audio, from: "a:1") == nil)
        #expect(router.sender(ssrc: Self.alice.audio, from: "a:2")?.member == 1)
    }

    @Test func keyframeRequestsReachTheSenderAtMostOncePer500ms() {
        var router = router()
        let bob = router.route(of: 2)!
        let pli = RTCPPacket.pictureLossIndication(
            PictureLossIndication(
                senderSSRC: Self.bob.audio,
                mediaSSRC: Self.alice.video))
        var delivered: [Duration] = []
        for ms in stride(from: 0, through: 1000, by: 50) {
            let now = Duration.milliseconds(ms)
            for action in router.feedback([pli], from: bob, at: now) {
                if case .sendToMember(1, _) = action { delivered.append(now) }
            }
            for (member, _) in router.dueKeyframeRequests(at: now) where member == 1 { delivered.append(now) }
        }
        #expect(delivered == [.zero, .milliseconds(500), .milliseconds(1000)])
        #expect(router.throttledKeyframeRequests == 18)
    }

    /// A member's media starting asks its cameras for keyframes at once, but a member rebinding from address after
    /// address is held to the throttle like any request (it cannot make every camera send keyframe after keyframe).
    @Test func aMemberRebindingWithinTheIntervalIsNotAFirstReceiverAgain() {
        var router = router()
        var starts: [Bool] = []
        for ms in [0, 100, 499, 1000, 1400, 2000] {
            starts.append(router.mediaStarted(member: 2, at: .milliseconds(ms)))
        }
        #expect(starts == [true, false, false, true, false, true], "each start measured from the one before")
        let other = router.mediaStarted(member: 1, at: .milliseconds(2000))
        #expect(other, "another member's is its own")
        router.forget(member: 2)
        let back = router.mediaStarted(member: 2, at: .milliseconds(2100))
        #expect(back, "a member who left and came back is new")
    }

    @Test func feedbackIsRoutedByMediaSSRC() {
        var router = router()
        let bob = router.route(of: 2)!
        let block = ReportBlock(
            ssrc: Self.alice.video, fractionLost: 3, cumulativeLost: 4,
            extendedHighestSequenceNumber: 5, jitter: 6, lastSenderReport: 0,
            delaySinceLastSenderReport: 0)
        let packets: [RTCPPacket] = [
            .receiverReport(ReceiverReport(ssrc: Self.bob.audio, reports: [block])),
            .sourceDescription(SourceDescription(ssrc: Self.bob.audio, cname: "bob")),
            .nack(GenericNACK(senderSSRC: Self.bob.audio, mediaSSRC: Self.alice.video, lost: [7, 9])),
        ]
        let actions = router.feedback(packets, from: bob, at: .zero)
        #expect(
            actions == [
                .forwardToRoom,
                .sendToMember(
                    1,
                    RTCPPacket.receiverReport(ReceiverReport(ssrc: Self.bob.audio, reports: [block]))
                        .serialized()),
                .retransmit(ssrc: Self.alice.video, sequenceNumbers: [7, 9]),
            ])
    }

    @Test func ownStreamsAndStrangersGetNoFeedback() {
        var router = router()
        let bob = router.route(of: 2)!
        let selfPLI = RTCPPacket.pictureLossIndication(
            PictureLossIndication(
                senderSSRC: Self.bob.audio,
                mediaSSRC: Self.bob.video))
        let strangerPLI = RTCPPacket.pictureLossIndication(
            PictureLossIndication(
                senderSSRC: Self.bob.audio,
                mediaSSRC: 0x999))
        #expect(router.feedback([selfPLI, strangerPLI], from: bob, at: .zero).isEmpty)
    }

    static let dave = MemberSSRCs(block: 0x400)

    /// Feedback from Dave, alone in room "s", about streams of room "r", and compounds naming other senders.
    static let isolation: [(String, [RTCPPacket], DropReason?, Int)] = [
        (
            "NACK for another room's stream",
            [.nack(GenericNACK(senderSSRC: dave.audio, mediaSSRC: alice.video, lost: [1]))], .otherRoom, 1
        ),
        (
            "PLI for another room's stream",
            [.pictureLossIndication(PictureLossIndication(senderSSRC: dave.audio, mediaSSRC: alice.video))], .otherRoom,
            1
        ),
        (
            "report block about another room's stream",
            [
                .receiverReport(
                    ReceiverReport(
                        ssrc: dave.audio,
                        reports: [
                            ReportBlock(
                                ssrc: alice.video, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0,
                                jitter: 0,
                                lastSenderReport: 0, delaySinceLastSenderReport: 0)
                        ]))
            ], .otherRoom, 1
        ),
        (
            "second packet of a compound names Bob as its sender",
            [
                .receiverReport(ReceiverReport(ssrc: dave.audio, reports: [])),
                .pictureLossIndication(PictureLossIndication(senderSSRC: bob.audio, mediaSSRC: alice.video)),
            ],
            .forgedFeedback, 1
        ),
        (
            "sender report in Alice's name",
            [
                .senderReport(
                    SenderReport(
                        ssrc: alice.audio, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: 0,
                        octetCount: 0, reports: []))
            ], .forgedFeedback, 1
        ),
        (
            "SDES with a second chunk for Alice",
            [
                .sourceDescription(
                    SourceDescription(chunks: [
                        .init(ssrc: dave.audio, items: []), .init(ssrc: alice.audio, items: []),
                    ]))
            ], .forgedFeedback, 1
        ),
        (
            "BYE for Dave and Bob",
            [.goodbye(Goodbye(ssrcs: [dave.audio, bob.audio]))], .forgedFeedback, 1
        ),
    ]

    @Test(arguments: isolation)
    func feedbackStaysInsideTheSendersRoom(name: String, packets: [RTCPPacket], drop: DropReason?, count: Int) {
        var router = router()
        router.add(member: 4, room: "s", ssrcs: Self.dave, role: .broadcaster)
        router.bind(member: 4, to: "d:1")
        let dave = router.route(of: 4)!
        #expect(router.feedback(packets, from: dave, at: .zero).isEmpty, "\(name)")
        #expect(router.dropped == (drop.map { [$0: count] } ?? [:]), "\(name)")
    }
}
