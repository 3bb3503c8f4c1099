/// A part of a packet a parser was reading when it found a problem, named in error messages.
public enum WirePart: String, Sendable, Equatable, CaseIterable {
    case rtpHeader = "RTP header"
    case csrcList = "RTP CSRC list"
    case headerExtension = "RTP header extension"
    case headerExtensionElement = "RTP header extension element"
    case rtpPayload = "RTP payload"
    case rtcpHeader = "RTCP header"
    case senderReport = "RTCP sender report"
    case receiverReport = "RTCP receiver report"
    case reportBlock = "RTCP report block"
    case sourceDescription = "RTCP SDES"
    case sdesItem = "RTCP SDES item"
    case goodbye = "RTCP BYE"
    case byeReason = "RTCP BYE reason"
    case application = "RTCP APP"
    case feedback = "RTCP feedback"
    case genericNACK = "RTCP generic NACK"
    case transportFeedback = "RTCP transport-wide feedback"
    case bindPacket = "Parley bind packet"
    case vp8Descriptor = "VP8 payload descriptor"
    case vp8PayloadHeader = "VP8 payload header"
    case opusPacket = "Opus packet"
}

/// Everything ParleyWire can reject; each case carries the numbers a user needs to see what was wrong.
public enum WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A structure needed more bytes than the packet had left.
    case truncated(WirePart, needed: Int, available: Int)
    /// The version field was not 2.
    case unsupportedVersion(WirePart, version: Int)
    /// The padding bit was set but the padding count was 0 or more than the bytes after the header.
    case invalidPadding(WirePart, count: Int, available: Int)
    /// An RTCP length field pointed past the end of the datagram.
    case rtcpLengthExceedsData(lengthField: Int, remaining: Int)
    /// A packet of another RTCP type was found where one type was required.
    case unexpectedRTCPType(found: UInt8, expected: UInt8)
    /// A one- or two-byte header extension element ran past the end of the extension.
    case extensionElementOverflow(id: Int, length: Int, available: Int)
    /// A compound RTCP datagram held no packet at all.
    case emptyCompound
    /// An RTCP APP packet with another name or subtype than a Parley bind packet.
    case notBindPacket(name: UInt32, subtype: UInt8)
    /// A bind packet's body had the wrong size.
    case bindLength(expected: Int, found: Int)
    /// A bind acknowledgement carried a status code Parley does not define.
    case unknownBindStatus(UInt8)
    /// The largest payload allowed cannot hold the VP8 descriptor and at least one byte.
    case maxPayloadTooSmall(Int, minimum: Int)
    /// A frame with no bytes was given to a payloader.
    case emptyFrame
    /// Packets given to the frame assembler were not a whole frame: first packet without S=1 and PID=0.
    case frameMissingStart(sequenceNumber: UInt16)
    /// Packets given to the frame assembler skipped a sequence number.
    case frameSequenceGap(expected: UInt16, found: UInt16)
    /// Packets given to the frame assembler had different RTP timestamps.
    case frameTimestampMismatch(expected: UInt32, found: UInt32, sequenceNumber: UInt16)
    /// The last packet given to the frame assembler did not have the marker bit.
    case frameMissingMarker(lastSequenceNumber: UInt16)
    /// An Opus packet's code-3 frame count was 0 or its duration exceeded 120 ms.
    case invalidOpusFrameCount(Int)
    /// A transport-wide feedback packet described more packets than one may.
    case feedbackPacketCount(Int, limit: Int)
    /// A transport-wide feedback packet used the reserved status symbol 3.
    case reservedFeedbackSymbol(sequenceNumber: UInt16)
    /// Two arrivals in a row were further apart than a feedback packet's 16-bit delta holds.
    case feedbackDeltaRange(sequenceNumber: UInt16, ticks: Int64)

    /// A sentence naming what was wrong, with the numbers involved.
    public var description: String {
        switch self {
        case .truncated(let part, let needed, let available):
            return "\(part.rawValue) needs \(Self.bytes(needed)), only \(available) available"
        case .unsupportedVersion(let part, let version):
            return "\(part.rawValue) has version \(version), expected 2"
        case .invalidPadding(let part, let count, let available):
            if count == 0 { return "\(part.rawValue): padding bit set but padding count is 0" }
            return "\(part.rawValue): padding count \(count) exceeds \(available) bytes after the header"
        case .rtcpLengthExceedsData(let lengthField, let remaining):
            return "RTCP length \(lengthField) words (\((lengthField + 1) * 4) bytes with header) exceeds "
                + "\(remaining) remaining bytes"
        case .unexpectedRTCPType(let found, let expected):
            return "RTCP packet type \(found), expected \(expected)"
        case .extensionElementOverflow(let id, let length, let available):
            return "RTP header extension element id \(id) has length \(length), only \(available) bytes left"
        case .emptyCompound:
            return "RTCP datagram is empty"
        case .notBindPacket(let name, let subtype):
            return "RTCP APP name \(RTCPAppName(rawValue: name)) subtype \(subtype) is not a Parley bind packet"
        case .bindLength(let expected, let found):
            return "Parley bind packet data is \(Self.bytes(found)), expected \(expected)"
        case .unknownBindStatus(let status):
            return "Parley bind acknowledgement has unknown status \(status)"
        case .maxPayloadTooSmall(let size, let minimum):
            return "largest payload \(Self.bytes(size)) is below the minimum of \(minimum)"
        case .emptyFrame:
            return "frame has no bytes"
        case .frameMissingStart(let sequenceNumber):
            return "packet \(sequenceNumber) does not start a VP8 frame (needs S=1, PID=0)"
        case .frameSequenceGap(let expected, let found):
            return "frame is missing packet \(expected) (next was \(found))"
        case .frameTimestampMismatch(let expected, let found, let sequenceNumber):
            return "packet \(sequenceNumber) has timestamp \(found), frame has \(expected)"
        case .frameMissingMarker(let lastSequenceNumber):
            return "frame ends at packet \(lastSequenceNumber) without the marker bit"
        case .invalidOpusFrameCount(let count):
            return "Opus packet declares \(count) frames"
        case .feedbackPacketCount(let count, let limit):
            return "transport-wide feedback describes \(count) packets, more than the limit of \(limit)"
        case .reservedFeedbackSymbol(let sequenceNumber):
            return "transport-wide feedback gives packet \(sequenceNumber) the reserved status 3"
        case .feedbackDeltaRange(let sequenceNumber, let ticks):
            return "transport-wide feedback: packet \(sequenceNumber) arrived \(ticks / 4) ms from the one before, "
                + "more than a delta holds (±8191 ms)"
        }
    }

    private static func bytes(_ count: Int) -> String { count == 1 ? "1 byte" : "\(count) bytes" }
}
