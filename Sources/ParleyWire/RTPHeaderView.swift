// RFC 3550 §5.1 fixed header, read in place for the relay's forwarding path (no allocation, no copy).
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                           timestamp                           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |           synchronization source (SSRC) identifier            |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |            contributing source (CSRC) identifiers (CC × 32)   |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  defined by profile (if X)    |       length (32-bit words)   |
// |                        header extension                       |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                 payload ...   | padding ... | padding count   |

/// What a UDP datagram on the media port carries, from its first two bytes (RFC 5761 §4, RFC 7983).
public enum MediaPacketKind: Sendable, Equatable {
    /// An RTP packet (version 2, second byte outside RTCP's 192...223).
    case rtp
    /// An RTCP packet or compound (version 2, packet type 192...223); the bind packet is one of these.
    case rtcp
    /// Anything else: shorter than 2 bytes or not RTP version 2.
    case unknown

    /// Classifies a datagram by its first two bytes.
    @inlinable
    public static func classify(_ bytes: UnsafeRawBufferPointer) -> MediaPacketKind {
        guard bytes.count >= 2, bytes[0] >> 6 == 2 else { return .unknown }
        return (192...223).contains(bytes[1]) ? .rtcp : .rtp
    }

    /// Classifies a datagram by its first two bytes.
    @inlinable
    public static func classify(_ bytes: [UInt8]) -> MediaPacketKind {
        bytes.withUnsafeBytes { classify($0) }
    }
}

/// The RTP fixed header and the payload's position, read in place; validates every length, allocates nothing.
public struct RTPHeaderView: Sendable, Equatable {
    /// The padding bit (P).
    public let hasPadding: Bool
    /// The extension bit (X).
    public let hasExtension: Bool
    /// Number of CSRC identifiers (CC), 0...15.
    public let csrcCount: Int
    /// The marker bit (M): last packet of a video frame.
    public let marker: Bool
    /// Payload type, 0...127.
    public let payloadType: UInt8
    /// Sequence number.
    public let sequenceNumber: UInt16
    /// Media timestamp in the payload format's clock.
    public let timestamp: UInt32
    /// Synchronization source.
    public let ssrc: UInt32
    /// Bytes before the payload: 12 + 4 × CC + the header extension (4 + 4 × its length) when X is set.
    public let headerLength: Int
    /// Padding bytes at the end, padding count byte included; 0 without the padding bit.
    public let paddingLength: Int
    /// The whole packet's length in bytes.
    public let packetLength: Int

    /// Byte offsets of the payload within the parsed bytes (from 0, also for a slice).
    @inlinable
    public var payloadRange: Range<Int> { headerLength..<(packetLength - paddingLength) }

    /// Payload bytes, padding excluded.
    @inlinable
    public var payloadLength: Int { packetLength - paddingLength - headerLength }

    /// Reads an RTP header; throws naming the first length or field that is wrong.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        let count = bytes.count
        guard count >= 12 else { throw .truncated(.rtpHeader, needed: 12, available: count) }
        let first = bytes[0]
        let version = Int(first >> 6)
        guard version == 2 else { throw .unsupportedVersion(.rtpHeader, version: version) }
        hasPadding = first & 0x20 != 0
        hasExtension = first & 0x10 != 0
        csrcCount = Int(first & 0x0F)
        let second = bytes[1]
        marker = second & 0x80 != 0
        payloadType = second & 0x7F
        sequenceNumber = bytes.u16(at: 2)
        timestamp = bytes.u32(at: 4)
        ssrc = bytes.u32(at: 8)
        var length = 12 + 4 * csrcCount
        guard count >= length else { throw .truncated(.csrcList, needed: length, available: count) }
        if hasExtension {
            guard count >= length + 4 else {
                throw .truncated(.headerExtension, needed: length + 4, available: count)
            }
            let words = Int(bytes.u16(at: length + 2))
            length += 4 + 4 * words
            guard count >= length else { throw .truncated(.headerExtension, needed: length, available: count) }
        }
        headerLength = length
        packetLength = count
        if hasPadding {
            let padding = count > length ? Int(bytes[count - 1]) : 0
            guard padding >= 1, padding <= count - length else {
                throw .invalidPadding(.rtpHeader, count: padding, available: count - length)
            }
            paddingLength = padding
        } else {
            paddingLength = 0
        }
    }

    /// Reads an RTP header from an array.
    @inlinable
    public init(parsing bytes: [UInt8]) throws(WireError) {
        self = try withBytes(bytes) { raw throws(WireError) in try RTPHeaderView(parsing: raw) }
    }

    /// Reads an RTP header from a slice; `payloadRange` counts from the slice's first byte.
    @inlinable
    public init(parsing bytes: ArraySlice<UInt8>) throws(WireError) {
        self = try withBytes(bytes) { raw throws(WireError) in try RTPHeaderView(parsing: raw) }
    }
}

extension RTPHeaderView {
    /// Where the data of the RFC 8285 one-byte element `id` lies in `bytes` (the packet this view was read from), read
    /// in place; nil without a one-byte extension, without that element, or when an element before it overruns.
    public func oneByteElement(_ id: UInt8, in bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        guard hasExtension else { return nil }
        let start = 12 + 4 * csrcCount
        guard headerLength >= start + 4, bytes.count >= headerLength,
            bytes.u16(at: start) == RTPHeaderExtension.oneByteProfile
        else { return nil }
        var offset = start + 4
        while offset < headerLength {
            let elementID = bytes[offset] >> 4
            let length = Int(bytes[offset] & 0x0F) + 1
            if elementID == 0 {
                offset += 1
                continue
            }
            if elementID == 15 || offset + length >= headerLength { return nil }
            if elementID == id { return (offset + 1)..<(offset + 1 + length) }
            offset += 1 + length
        }
        return nil
    }
}
