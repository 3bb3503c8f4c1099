import NIOCore
import NIOEmbedded
import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's send-time marks and downlink probes, on embedded channels.
extension RelayHandlerEmbeddedTests {
    /// alice and bob (who asked for counts, so for marks too) bound at their addresses.
    static func boundPair(_ relay: Relay) throws -> (
        alice: (channel: EmbeddedChannel, joined: JoinedRoom, address: SocketAddress),
        bob: (channel: EmbeddedChannel, joined: JoinedRoom, address: SocketAddress)
    ) {
        let (alice, aliceJoined) = try relay.join("alice")
        let bob = try relay.connect()
        try bob.writeInbound(
            frame(.text, ClientMessage.join(JoinRequest(room: "standup", name: "bob", downlinkCounts: true)).encoded()))
        let bobJoined = try #require(joined(messages(try written(bob))))
        let aliceAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 41_021)
        let bobAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 41_022)
        for (joined, address) in [(aliceJoined, aliceAddress), (bobJoined, bobAddress)] {
            try relay.bind(joined, at: address)
        }
        return ((alice, aliceJoined, aliceAddress), (bob, bobJoined, bobAddress))
    }

    /// The marks among datagrams written out.
    static func marks(_ out: [AddressedEnvelope<ByteBuffer>]) -> [SendTimeMark] {
        out.flatMap { envelope -> [SendTimeMark] in
            let packets = (try? RTCPPacket.parseCompound(Array(envelope.data.readableBytesView))) ?? []
            return packets.compactMap { packet in
                guard case .application(let app) = packet else { return nil }
                return SendTimeMark(app)
            }
        }
    }

    @Test func aMemberSentMediaIsMarkedOnceAndOnlyIfItAskedForCounts() throws {
        let relay = try Relay()
        let (alice, bob) = try Self.boundPair(relay)
        _ = try relay.media.readOutbound(as: AddressedEnvelope<ByteBuffer>.self)
        let sound = RTPPacket(
            header: RTPHeader(
                payloadType: MediaPayloadType.opus, sequenceNumber: 9, timestamp: 960,
                ssrc: alice.joined.media.ssrcs.audio),
            payload: [0xF8, 0xFF, 0xFE])
        _ = try relay.udp(sound.serialized(), from: alice.address)
        relay.core.value.sendSendTimeMarks()
        relay.core.value.flushWrites()
        var out: [AddressedEnvelope<ByteBuffer>] = []
        while let envelope: AddressedEnvelope<ByteBuffer> = try relay.media.readOutbound() { out.append(envelope) }
        let marks = Self.marks(out)
        #expect(marks.count == 1 && out.map(\.remoteAddress) == [bob.address])
        #expect(marks.first?.mediaSSRC == bob.joined.media.ssrcs.audio && marks.first?.probe == nil)
        // Nothing sent to bob since: no mark. (alice asked for no counts: never marked.)
        relay.core.value.sendSendTimeMarks()
        relay.core.value.flushWrites()
        #expect(try relay.media.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) == nil)
        withExtendedLifetime((alice.channel, bob.channel)) {}
    }

    @Test func aProbeRequestStartsPaddedMarksAndASecondWithinASecondIsRefused() throws {
        let relay = try Relay()
        let (alice, bob) = try Self.boundPair(relay)
        let request = ProbeRequest(ssrc: bob.joined.media.ssrcs.audio, cluster: 7, kbps: 800)
        let first = Self.marks(try relay.udp(request.rtcpPacket.serialized(), from: bob.address))
        // 800 kbit/s for 150 ms in kilobyte marks: 15, the first at once.
        let mark = try #require(first.first)
        #expect(mark.probe?.cluster == 7 && mark.probe?.index == 0 && mark.probe?.count == 15 && mark.size == 1_000)
        #expect(relay.core.value.downlinks.probes[bob.joined.you.id] != nil)
        let refused = relay.core.value.media.dropped[.probeRefused] ?? 0
        #expect(try relay.udp(request.rtcpPacket.serialized(), from: bob.address).isEmpty)
        #expect(relay.core.value.media.dropped[.probeRefused] == refused + 1)
        // A request naming alice's SSRC from bob's address is no request of bob's.
        let forged = ProbeRequest(ssrc: alice.joined.media.ssrcs.audio, cluster: 8, kbps: 800)
        #expect(try relay.udp(forged.rtcpPacket.serialized(), from: bob.address).isEmpty)
        #expect(relay.core.value.downlinks.probes[alice.joined.you.id] == nil)
        relay.core.value.probePacing?.cancel()
        withExtendedLifetime((alice.channel, bob.channel)) {}
    }

    @Test func aReceiverWithALimitIsPacedAndItsSoundStillLeavesAtOnce() throws {
        let relay = try Relay()
        let (alice, bob) = try Self.boundPair(relay)
        try bob.channel.writeInbound(
            Self.frame(.text, ClientMessage.tiles(TileReport(tiles: [], downlinkKbps: 300)).encoded()))
        #expect(relay.core.value.output.pacing.paces(bob.joined.you.id))
        #expect(relay.core.value.receiverPacing != nil)
        let sound = RTPPacket(
            header: RTPHeader(
                payloadType: MediaPayloadType.opus, sequenceNumber: 9, timestamp: 960,
                ssrc: alice.joined.media.ssrcs.audio),
            payload: [0xF8, 0xFF, 0xFE])
        #expect(try relay.udp(sound.serialized(), from: alice.address).map(\.remoteAddress) == [bob.address])
        // The limit gone: no pacing, and the release stops.
        try bob.channel.writeInbound(
            Self.frame(.text, ClientMessage.tiles(TileReport(tiles: [], downlinkKbps: nil)).encoded()))
        #expect(!relay.core.value.output.pacing.paces(bob.joined.you.id) && relay.core.value.receiverPacing == nil)
        withExtendedLifetime((alice.channel, bob.channel)) {}
    }
}
