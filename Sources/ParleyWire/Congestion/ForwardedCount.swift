// What the relay forwarded to one member, so the member can tell loss on its own downlink from loss upstream.
//
// A receiver that judged its downlink by gaps in the senders' sequence numbers would blame its own link for packets
// a sender's uplink lost before they reached the relay (and ask for less of everyone). The relay therefore tells
// each member, once a second over the media path, how many RTP packets it has written to it so far; the member
// compares that with what arrived. The count travels behind the packets it counts on the same path, so it arrives
// after them.
//
// An RTCP APP packet (PT 204), 20 bytes:
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P| subtype=0 |   PT=204      |          length=4             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |          SSRC: the receiving member's audio SSRC                |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                   name: "PFWD" (0x50465744)                     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |        RTP packets written to this member so far (wraps)        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |        their bytes so far (wraps)                               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// The relay's running count of the RTP packets (and their bytes) it wrote to one member.
public struct ForwardedCount: Sendable, Equatable {
    /// The APP packet's name.
    public static let name: RTCPAppName = "PFWD"

    /// The member's audio SSRC: whom the count is about.
    public var mediaSSRC: UInt32
    /// Packets written so far, modulo 2^32.
    public var packets: UInt32
    /// Their bytes so far, modulo 2^32.
    public var bytes: UInt32

    /// A count.
    public init(mediaSSRC: UInt32, packets: UInt32, bytes: UInt32) {
        self.mediaSSRC = mediaSSRC
        self.packets = packets
        self.bytes = bytes
    }

    /// Reads a count from an APP packet; nil for another APP packet or a count of the wrong size.
    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Self.name, packet.subtype == 0, packet.data.count == 8 else { return nil }
        mediaSSRC = packet.ssrc
        (packets, bytes) = packet.data.withUnsafeBytes { ($0.u32(at: 0), $0.u32(at: 4)) }
    }

    /// The count as an RTCP packet.
    public var rtcpPacket: RTCPPacket {
        var data: [UInt8] = []
        data.reserveCapacity(8)
        data.appendU32(packets)
        data.appendU32(bytes)
        return .application(ApplicationPacket(subtype: 0, ssrc: mediaSSRC, name: Self.name, data: data))
    }
}
