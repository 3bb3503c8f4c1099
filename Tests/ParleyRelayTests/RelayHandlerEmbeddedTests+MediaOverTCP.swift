import NIOCore
import NIOEmbedded
import NIOWebSocket
import ParleyWire
import Testing

@testable import ParleyRelay

/// Media over a member's signaling connection (UDP blocked), on embedded channels.
extension RelayHandlerEmbeddedTests {
    /// The binary frames a handler wrote, as bytes.
    static func binaryFrames(_ frames: [WebSocketFrame]) -> [[UInt8]] {
        frames.filter { $0.opcode == .binary }.map { Array($0.unmaskedData.readableBytesView) }
    }

    static func binary(_ bytes: [UInt8]) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(bytes: bytes))
    }

    static func audioPacket(ssrc: UInt32, sequence: UInt16) -> [UInt8] {
        RTPPacket(
            header: RTPHeader(payloadType: MediaPayloadType.opus, sequenceNumber: sequence, timestamp: 960, ssrc: ssrc),
            payload: [0xF8, 0xFF, 0xFE]
        ).serialized()
    }

    @Test func mediaOverTheSignalingConnectionIsBoundAndForwardedLikeUDP() throws {
        let relay = try Relay()
        let (alice, aliceJoined) = try relay.join("alice")
        let (bob, bobJoined) = try relay.join("bob")
        _ = try Self.written(alice)
        let aliceToken = try #require(BindToken(hex: aliceJoined.media.credential))
        let bobToken = try #require(BindToken(hex: bobJoined.media.credential))
        let bobAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 41_001)
        let aliceUDP = try SocketAddress(ipAddress: "127.0.0.1", port: 41_002)

        // Alice binds over her connection: the answer comes back as a binary frame.
        let aliceBind = BindRequest(
            ssrc: aliceJoined.media.ssrcs.audio, memberID: aliceJoined.you.id, token: aliceToken)
        try alice.writeInbound(Self.binary(aliceBind.serialized()))
        let answers = Self.binaryFrames(try Self.written(alice))
        #expect(answers.count == 1)
        #expect(try answers.first.map { try BindAcknowledgement(parsing: $0).status } == .bound)
        #expect(relay.core.value.counters.membersWithMediaOverTCP == 1)
        // Bob binds over UDP.
        let bobBind = BindRequest(ssrc: bobJoined.media.ssrcs.audio, memberID: bobJoined.you.id, token: bobToken)
        #expect(try relay.udp(bobBind.serialized(), from: bobAddress).count == 1)
        // Bob can receive now: alice is asked for a keyframe, over her connection.
        let requests = Self.binaryFrames(try Self.written(alice))
        #expect(requests.count == 1 && requests.allSatisfy { MediaPacketKind.classify($0) == .rtcp })

        // A probe from alice over UDP is answered over UDP and binds nothing: her media stays on the connection.
        var probe = aliceBind
        probe.isProbe = true
        let probeAnswers = try relay.udp(probe.serialized(), from: aliceUDP)
        #expect(probeAnswers.map(\.remoteAddress) == [aliceUDP])
        #expect(
            try relay.udp(Self.audioPacket(ssrc: aliceJoined.media.ssrcs.audio, sequence: 1), from: aliceUDP).isEmpty)

        // Alice's audio over the connection reaches bob over UDP; bob's reaches alice as a binary frame.
        let fromAlice = Self.audioPacket(ssrc: aliceJoined.media.ssrcs.audio, sequence: 2)
        try alice.writeInbound(Self.binary(fromAlice))
        var toBob: [AddressedEnvelope<ByteBuffer>] = []
        while let envelope: AddressedEnvelope<ByteBuffer> = try relay.media.readOutbound() { toBob.append(envelope) }
        #expect(toBob.map(\.remoteAddress) == [bobAddress])
        #expect(toBob.first.map { Array($0.data.readableBytesView) } == fromAlice)
        let fromBob = Self.audioPacket(ssrc: bobJoined.media.ssrcs.audio, sequence: 7)
        #expect(try relay.udp(fromBob, from: bobAddress).isEmpty, "nothing for bob's own address")
        #expect(Self.binaryFrames(try Self.written(alice)) == [fromBob])
        #expect(relay.core.value.counters.mediaOverTCPReceived == 2)
        #expect(relay.core.value.counters.mediaOverTCPSent == 3)

        // A frame larger than any media datagram is dropped and counted; the connection stays.
        let droppedBefore = relay.core.value.counters.packetsDropped
        try alice.writeInbound(Self.binary([UInt8](repeating: 0x80, count: MediaStreams.maxDatagramBytes + 1)))
        #expect(relay.core.value.counters.packetsDropped == droppedBefore + 1)
        #expect(try Self.written(alice).isEmpty && alice.isActive)

        // A real bind over UDP moves alice's media there.
        #expect(try relay.udp(aliceBind.serialized(), from: aliceUDP).count == 1)
        #expect(try relay.udp(fromBob, from: bobAddress).map(\.remoteAddress) == [aliceUDP])
        #expect(Self.binaryFrames(try Self.written(alice)).isEmpty)

        // Her connection closing forgets its address.
        withExtendedLifetime(bob) {}
        try alice.close().wait()
        #expect(relay.core.value.counters.membersWithMediaOverTCP == 0)
    }
}
