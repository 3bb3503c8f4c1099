// RTCP (RFC 3550 §6) and its feedback messages (RFC 4585 §6), parsed from and serialized to compound datagrams.
//
// Every RTCP packet starts with this header; `length` counts 32-bit words minus one, header included:
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|  count  |      PT       |             length            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// `count` is the report count (SR, RR), source count (SDES, BYE), subtype (APP) or FMT (RTPFB, PSFB).

/// RTCP packet type numbers.
public enum RTCPPacketType {
    /// Sender report.
    public static let senderReport: UInt8 = 200
    /// Receiver report.
    public static let receiverReport: UInt8 = 201
    /// Source description.
    public static let sourceDescription: UInt8 = 202
    /// Goodbye.
    public static let goodbye: UInt8 = 203
    /// Application-defined (Parley's bind packet).
    public static let application: UInt8 = 204
    /// Transport-layer feedback (RFC 4585): FMT 1 is generic NACK.
    public static let transportFeedback: UInt8 = 205
    /// Payload-specific feedback (RFC 4585): FMT 1 is PLI.
    public static let payloadFeedback: UInt8 = 206
}

/// A four-character RTCP APP name such as "PRLY", stored as its 32 big-endian bits.
public struct RTCPAppName: RawRepresentable, Sendable, Hashable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The four ASCII bytes as a big-endian integer.
    public var rawValue: UInt32

    /// A name from its 32 bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A name from four ASCII characters; nil for any other length or non-ASCII text.
    public init?(ascii text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A name from a four-character literal; any other literal is a programming error.
    public init(stringLiteral value: String) {
        guard let name = RTCPAppName(ascii: value) else {
            preconditionFailure("RTCP APP name must be 4 ASCII: \(value)")
        }
        self = name
    }

    /// The name as text, with non-printable bytes shown as "?".
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0)) }
        return String(decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : 0x3F }, as: UTF8.self)
    }
}

/// One reception report block (RFC 3550 §6.4.1), 24 bytes.
public struct ReportBlock: Sendable, Equatable {
    /// The source this block reports on.
    public var ssrc: UInt32
    /// Fraction of packets lost since the previous report, in 1/256.
    public var fractionLost: UInt8
    /// Packets lost since reception began (24-bit signed on the wire, clamped).
    public var cumulativeLost: Int32
    /// Highest sequence number received, with the wrap count in the high 16 bits.
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR received from this source (0 if none).
    public var lastSenderReport: UInt32
    /// Delay since that SR in 1/65536 s (0 if none).
    public var delaySinceLastSenderReport: UInt32

    /// A report block.
    public init(
        ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequenceNumber: UInt32,
        jitter: UInt32, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> ReportBlock {
        let lost = bytes.u24(at: offset + 5)
        return ReportBlock(
            ssrc: bytes.u32(at: offset), fractionLost: bytes[offset + 4],
            cumulativeLost: Int32(bitPattern: lost << 8) >> 8,  // sign-extend 24 bits
            extendedHighestSequenceNumber: bytes.u32(at: offset + 8), jitter: bytes.u32(at: offset + 12),
            lastSenderReport: bytes.u32(at: offset + 16), delaySinceLastSenderReport: bytes.u32(at: offset + 20))
    }

    func serialize(into out: inout [UInt8]) {
        out.appendU32(ssrc)
        out.append(fractionLost)
        let clamped = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        out.appendU24(UInt32(bitPattern: clamped) & 0xFF_FFFF)
        out.appendU32(extendedHighestSequenceNumber)
        out.appendU32(jitter)
        out.appendU32(lastSenderReport)
        out.appendU32(delaySinceLastSenderReport)
    }
}

/// Sender report (PT 200): sender info plus reception reports.
public struct SenderReport: Sendable, Equatable {
    /// The sender's SSRC.
    public var ssrc: UInt32
    /// Wallclock time of this report as 64-bit NTP (seconds since 1900 in the high 32 bits).
    public var ntpTimestamp: UInt64
    /// The same instant in the stream's RTP clock.
    public var rtpTimestamp: UInt32
    /// Packets sent since the stream began.
    public var packetCount: UInt32
    /// Payload octets sent since the stream began.
    public var octetCount: UInt32
    /// Reception reports; more than 31 continue in extra RR packets when serialized.
    public var reports: [ReportBlock]

    /// A sender report.
    public init(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reports: [ReportBlock] = []
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
    }
}

/// Receiver report (PT 201).
public struct ReceiverReport: Sendable, Equatable {
    /// The reporter's SSRC.
    public var ssrc: UInt32
    /// Reception reports; more than 31 continue in extra RR packets when serialized.
    public var reports: [ReportBlock]

    /// A receiver report.
    public init(ssrc: UInt32, reports: [ReportBlock]) {
        self.ssrc = ssrc
        self.reports = reports
    }
}

/// Source description (PT 202): chunks of items such as CNAME.
public struct SourceDescription: Sendable, Equatable {
    /// One SDES item: type (1 = CNAME, 2 = NAME, ...) and UTF-8 text of at most 255 bytes.
    public struct Item: Sendable, Equatable {
        /// Item type.
        public var type: UInt8
        /// Item text; longer text is cut at 255 bytes when serialized.
        public var text: String

        /// The CNAME item type.
        public static let cname: UInt8 = 1

        /// An item.
        public init(type: UInt8, text: String) {
            self.type = type
            self.text = text
        }
    }

    /// The items about one source.
    public struct Chunk: Sendable, Equatable {
        /// The source described.
        public var ssrc: UInt32
        /// Its items.
        public var items: [Item]

        /// A chunk.
        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }
    }

    /// The chunks; more than 31 continue in extra SDES packets when serialized.
    public var chunks: [Chunk]

    /// An SDES packet from chunks.
    public init(chunks: [Chunk]) { self.chunks = chunks }

    /// An SDES packet with one CNAME.
    public init(ssrc: UInt32, cname: String) {
        chunks = [Chunk(ssrc: ssrc, items: [Item(type: Item.cname, text: cname)])]
    }

    /// The CNAME of the first chunk that has one.
    public var cname: String? {
        for chunk in chunks {
            if let item = chunk.items.first(where: { $0.type == Item.cname }) { return item.text }
        }
        return nil
    }
}

/// Goodbye (PT 203): the sources leaving and an optional reason.
public struct Goodbye: Sendable, Equatable {
    /// Sources leaving (at most 31 are serialized).
    public var ssrcs: [UInt32]
    /// Reason text; cut at 255 bytes when serialized.
    public var reason: String?

    /// A BYE packet.
    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }
}

/// Application-defined packet (PT 204): subtype, SSRC, four-character name and data.
public struct ApplicationPacket: Sendable, Equatable {
    /// Subtype, 0...31.
    public var subtype: UInt8
    /// SSRC or CSRC of the sender.
    public var ssrc: UInt32
    /// Four-character name.
    public var name: RTCPAppName
    /// Application data; padded with zeros to a multiple of 4 bytes when serialized.
    public var data: [UInt8]

    /// An APP packet.
    public init(subtype: UInt8, ssrc: UInt32, name: RTCPAppName, data: [UInt8]) {
        self.subtype = subtype
        self.ssrc = ssrc
        self.name = name
        self.data = data
    }
}

/// Generic NACK (RTPFB FMT 1, RFC 4585 §6.2.1): sequence numbers a receiver is missing.
public struct GenericNACK: Sendable, Equatable {
    /// One FCI entry: a lost packet id and a bitmask of the 16 following packets also lost.
    public struct Item: Sendable, Equatable {
        /// Packet id (PID): a lost sequence number.
        public var packetID: UInt16
        /// Bitmask of following lost packets (BLP): bit i set means PID + i + 1 is lost.
        public var lostBitmask: UInt16

        /// An FCI entry.
        public init(packetID: UInt16, lostBitmask: UInt16) {
            self.packetID = packetID
            self.lostBitmask = lostBitmask
        }
    }

    /// SSRC of the receiver asking.
    public var senderSSRC: UInt32
    /// SSRC of the stream the packets belong to.
    public var mediaSSRC: UInt32
    /// FCI entries.
    public var items: [Item]

    /// A NACK from its FCI entries.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, items: [Item]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.items = items
    }

    /// A NACK for lost sequence numbers given oldest first; each number within 16 of an entry's PID joins its mask.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost: [UInt16]) {
        var items: [Item] = []
        for sequenceNumber in lost {
            if var last = items.last {
                let distance = SequenceNumber.distance(from: last.packetID, to: sequenceNumber)
                if distance == 0 { continue }
                if (1...16).contains(distance) {
                    last.lostBitmask |= 1 << (distance - 1)
                    items[items.count - 1] = last
                    continue
                }
            }
            items.append(Item(packetID: sequenceNumber, lostBitmask: 0))
        }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, items: items)
    }

    /// Every sequence number the entries name, in entry order.
    public var lostSequenceNumbers: [UInt16] {
        var result: [UInt16] = []
        for item in items {
            result.append(item.packetID)
            for bit in 0..<16 where item.lostBitmask & (1 << bit) != 0 {
                result.append(item.packetID &+ UInt16(bit + 1))
            }
        }
        return result
    }
}

/// Picture loss indication (PSFB FMT 1, RFC 4585 §6.3.1): the receiver needs a keyframe.
public struct PictureLossIndication: Sendable, Equatable {
    /// SSRC of the receiver asking.
    public var senderSSRC: UInt32
    /// SSRC of the video stream that needs a keyframe.
    public var mediaSSRC: UInt32

    /// A PLI.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }
}

/// An RTCP packet Parley does not interpret (XR, REMB, FIR, ...), kept so it can be forwarded unchanged.
public struct RTCPRawPacket: Sendable, Equatable {
    /// Packet type.
    public var packetType: UInt8
    /// The 5-bit count/FMT/subtype field.
    public var count: UInt8
    /// Everything after the 4-byte header, padding removed; padded with zeros to 4 bytes when serialized.
    public var body: [UInt8]

    /// A raw packet.
    public init(packetType: UInt8, count: UInt8, body: [UInt8]) {
        self.packetType = packetType
        self.count = count
        self.body = body
    }

    /// For RTPFB/PSFB packets, the media source SSRC the feedback is about (to route it to that sender).
    public var feedbackMediaSSRC: UInt32? {
        guard packetType == RTCPPacketType.transportFeedback || packetType == RTCPPacketType.payloadFeedback,
            body.count >= 8
        else { return nil }
        return body[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// One packet of an RTCP compound datagram.
public enum RTCPPacket: Sendable, Equatable {
    /// SR, PT 200.
    case senderReport(SenderReport)
    /// RR, PT 201.
    case receiverReport(ReceiverReport)
    /// SDES, PT 202.
    case sourceDescription(SourceDescription)
    /// BYE, PT 203.
    case goodbye(Goodbye)
    /// APP, PT 204 (including Parley's bind packets; see `BindRequest`).
    case application(ApplicationPacket)
    /// Generic NACK, PT 205 FMT 1.
    case nack(GenericNACK)
    /// PLI, PT 206 FMT 1.
    case pictureLossIndication(PictureLossIndication)
    /// Any other type or FMT, kept raw.
    case other(RTCPRawPacket)
}

extension RTCPPacket {
    /// Every SSRC this packet speaks for as its sender: the reporter of SR, RR, APP and feedback packets, each SDES
    /// chunk's source, each BYE source. A relay checks them all, not only the first of a compound.
    public var claimedSenderSSRCs: [UInt32] {
        switch self {
        case .sourceDescription(let description): return description.chunks.map(\.ssrc)
        case .goodbye(let bye): return bye.ssrcs
        default: return senderSSRC.map { [$0] } ?? []
        }
    }

    /// The SSRC of whoever sent this packet (for the relay to check it against the sender's SSRC block).
    public var senderSSRC: UInt32? {
        switch self {
        case .senderReport(let report): return report.ssrc
        case .receiverReport(let report): return report.ssrc
        case .sourceDescription(let description): return description.chunks.first?.ssrc
        case .goodbye(let bye): return bye.ssrcs.first
        case .application(let app): return app.ssrc
        case .nack(let nack): return nack.senderSSRC
        case .pictureLossIndication(let pli): return pli.senderSSRC
        case .other(let raw):
            guard raw.body.count >= 4 else { return nil }
            return raw.body[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
        }
    }

    /// For feedback (NACK, PLI, other RTPFB/PSFB), the SSRC of the stream it is about: route it to that sender.
    public var feedbackMediaSSRC: UInt32? {
        switch self {
        case .nack(let nack): return nack.mediaSSRC
        case .pictureLossIndication(let pli): return pli.mediaSSRC
        case .other(let raw): return raw.feedbackMediaSSRC
        default: return nil
        }
    }
}
