import NIOCore
import NIOEmbedded
import ParleyWire
import Testing

@testable import ParleyRelay

/// A probe's padding (payload type 127), on embedded channels.
extension RelayHandlerEmbeddedTests {
    @Test func probePaddingIsAcknowledgedAndReachesNobody() throws {
        let relay = try Relay()
        let (alice, aliceJoined) = try relay.join("alice")
        let (bob, bobJoined) = try relay.join("bob")
        let aliceAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 41_011)
        let bobAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 41_012)

        for (joined, address) in [(aliceJoined, aliceAddress), (bobJoined, bobAddress)] {
            try relay.bind(joined, at: address)
        }

        // Padding numbered 0...4 reaches nobody; alice's sound numbered 5 reaches bob.
        let audio = aliceJoined.media.ssrcs.audio
        for sequence in UInt16(0)...4 {
            let padding = ProbePadding.packet(
                ssrc: audio, sequenceNumber: sequence, transportSequence: sequence, size: 600)
            #expect(padding.serialized().count == 600)
            let out = try relay.udp(padding.serialized(), from: aliceAddress)
            #expect(out.allSatisfy { MediaPacketKind.classify(Array($0.data.readableBytesView)) == .rtcp })
        }
        var sound = RTPPacket(
            header: RTPHeader(payloadType: MediaPayloadType.opus, sequenceNumber: 9, timestamp: 960, ssrc: audio),
            payload: [0xF8, 0xFF, 0xFE])
        sound.header.headerExtension = TransportSequence.stamp(5, onto: nil)
        let forwarded = try relay.udp(sound.serialized(), from: aliceAddress)
        #expect(forwarded.map(\.remoteAddress) == [bobAddress])

        // The feedback about alice's uplink acknowledges all six.
        let due = relay.core.value.uplinks.due { _ in audio }
        let feedback = try #require(due.first { $0.member == aliceJoined.you.id }?.feedback)
        #expect(
            feedback.baseSequence == 0 && feedback.arrivals.count == 6 && feedback.arrivals.allSatisfy { $0 != nil })
        withExtendedLifetime((alice, bob)) {}  // their connections stay open throughout
    }
}
