// The relay's send time on the downlink, and a receiver's request for a probe of it.
//
// A receiver judges its own downlink (`DownlinkEstimator`). Loss alone finds the link's capacity only by overflowing
// it; the delay trend finds a queue filling before anything is lost, but needs each packet's send time, and the relay
// cannot stamp the packets it forwards (SFrame authenticates the RTP header, extensions included). So the relay sends
// marks of its own: every 50 ms while it forwards media to a member, an RTCP APP packet with the time it wrote it.
// They queue behind the media on the same path, so their arrivals trace the queue (`DelayTrend`) as a sender's
// transport-wide feedback does for the uplink.
//
// The same packet, padded, is the downlink's probe: asked for by the receiver (`ProbeRequest`), the relay sends
// `count` marks of about a kilobyte over 150 ms beside the media, each numbered within its cluster; the receiver
// judges from their arrivals whether the link carried the rate (`DownlinkProbe`).
//
// A mark, RTCP APP (PT 204), 28 bytes and the padding:
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P| subtype=0 |   PT=204      |          length               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |          SSRC: the receiving member's audio SSRC                |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                   name: "PSTM" (0x5053544D)                     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |          send time, µs on the relay's clock (64 bits)           |
// |                                                                 |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |     probe cluster (0: none)   |     index within the cluster    |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |     the cluster's packets     |           zero                  |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                 padding (zeros), a probe's only                 |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// Which packet of a downlink probe a mark is.
public struct ProbeTag: Sendable, Equatable {
    /// The cluster's number, as the receiver asked for it (never 0).
    public var cluster: UInt16
    /// This mark's place in it, from 0.
    public var index: UInt16
    /// How many marks the cluster has.
    public var count: UInt16

    public init(cluster: UInt16, index: UInt16, count: UInt16) {
        self.cluster = cluster
        self.index = index
        self.count = count
    }
}

/// The relay's send time, on the path to one member; padded, a packet of a downlink probe.
public struct SendTimeMark: Sendable, Equatable {
    /// The APP packet's name.
    public static let name: RTCPAppName = "PSTM"
    /// Bytes of the APP packet without padding.
    public static let markBytes = 28
    /// The most padding a mark carries.
    public static let largestPadding = 1_200

    /// The receiving member's audio SSRC: whom the mark is for.
    public var mediaSSRC: UInt32
    /// When the relay wrote it (µs on its own clock).
    public var sentAt: UInt64
    /// The probe it belongs to; nil for a plain mark.
    public var probe: ProbeTag?
    /// Zero bytes after the fields (a multiple of 4), to give a probe its size.
    public var padding: Int

    /// A mark.
    public init(mediaSSRC: UInt32, sentAt: UInt64, probe: ProbeTag? = nil, padding: Int = 0) {
        self.mediaSSRC = mediaSSRC
        self.sentAt = sentAt
        self.probe = probe
        self.padding = min(max(0, padding), Self.largestPadding) / 4 * 4
    }

    /// Reads a mark from an APP packet; nil for another APP packet, or a mark whose fields are malformed (too short,
    /// too long, not whole 32-bit words, a probe tag whose index is not within its count).
    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Self.name, packet.subtype == 0, packet.data.count >= 16,
            packet.data.count <= 16 + Self.largestPadding, packet.data.count % 4 == 0
        else { return nil }
        let (sentAt, cluster, index, count) = packet.data.withUnsafeBytes {
            (UInt64($0.u32(at: 0)) << 32 | UInt64($0.u32(at: 4)), $0.u16(at: 8), $0.u16(at: 10), $0.u16(at: 12))
        }
        if cluster == 0 {
            guard index == 0, count == 0 else { return nil }
            probe = nil
        } else {
            guard count > 0, index < count else { return nil }
            probe = ProbeTag(cluster: cluster, index: index, count: count)
        }
        mediaSSRC = packet.ssrc
        self.sentAt = sentAt
        padding = packet.data.count - 16
    }

    /// The mark as an RTCP packet.
    public var rtcpPacket: RTCPPacket {
        var data: [UInt8] = []
        data.reserveCapacity(16 + padding)
        data.appendU32(UInt32(truncatingIfNeeded: sentAt >> 32))
        data.appendU32(UInt32(truncatingIfNeeded: sentAt))
        data.appendU16(probe?.cluster ?? 0)
        data.appendU16(probe?.index ?? 0)
        data.appendU16(probe?.count ?? 0)
        data.appendU16(0)
        data.append(contentsOf: repeatElement(0, count: padding))
        return .application(ApplicationPacket(subtype: 0, ssrc: mediaSSRC, name: Self.name, data: data))
    }

    /// Its size on the wire (bytes, without UDP and IP).
    public var size: Int { Self.markBytes + padding }
}

/// A member asking the relay to probe its downlink: a cluster of padded marks at `kbps` beside the media for 150 ms.
///
/// RTCP APP (PT 204), name "PPRB", 20 bytes: the member's audio SSRC, then the cluster's number (16 bits, not 0),
/// 16 zero bits, and the padding's rate in kbit/s (32 bits).
public struct ProbeRequest: Sendable, Equatable {
    /// The APP packet's name.
    public static let name: RTCPAppName = "PPRB"
    /// The rates a request may ask for (kbit/s of padding).
    public static let rates = 50...5_000

    /// The asking member's audio SSRC.
    public var ssrc: UInt32
    /// The cluster's number, echoed in its marks.
    public var cluster: UInt16
    /// The padding's rate (kbit/s), beside the media the relay sends anyway.
    public var kbps: Int

    /// A request; the rate is kept within `rates`.
    public init(ssrc: UInt32, cluster: UInt16, kbps: Int) {
        self.ssrc = ssrc
        self.cluster = cluster
        self.kbps = min(max(kbps, Self.rates.lowerBound), Self.rates.upperBound)
    }

    /// Reads a request from an APP packet; nil for another APP packet or a request out of bounds (cluster 0, a rate
    /// outside `rates`).
    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Self.name, packet.subtype == 0, packet.data.count == 8 else { return nil }
        let (cluster, reserved, kbps) = packet.data.withUnsafeBytes { ($0.u16(at: 0), $0.u16(at: 2), $0.u32(at: 4)) }
        guard cluster != 0, reserved == 0, Self.rates.contains(Int(kbps)) else { return nil }
        ssrc = packet.ssrc
        self.cluster = cluster
        self.kbps = Int(kbps)
    }

    /// The request as an RTCP packet.
    public var rtcpPacket: RTCPPacket {
        var data: [UInt8] = []
        data.appendU16(cluster)
        data.appendU16(0)
        data.appendU32(UInt32(kbps))
        return .application(ApplicationPacket(subtype: 0, ssrc: ssrc, name: Self.name, data: data))
    }
}
