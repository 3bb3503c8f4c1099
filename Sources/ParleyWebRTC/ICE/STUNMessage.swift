/// One STUN message (RFC 8489) as ICE uses it: a binding request, its success or error response, an indication.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |0 0|     STUN Message Type     |         Message Length        |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                  Magic Cookie (0x2112A442)                    |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                  Transaction ID (96 bits)                     |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// MESSAGE-INTEGRITY and FINGERPRINT are not kept among `attributes`: `encoded(integrityKey:)` writes them, and
/// `ReceivedSTUN` checks them against the bytes that arrived.
public struct STUNMessage: Equatable, Sendable {
    /// The two class bits of the message type.
    public enum Kind: UInt16, Sendable {
        case request = 0b00
        case indication = 0b01
        case success = 0b10
        case error = 0b11
    }

    /// The method: 0x001 is Binding, the only one ICE uses.
    public var method: UInt16
    /// Request, indication, success or error response.
    public var kind: Kind
    /// 12 bytes that pair a response with its request.
    public var transactionID: [UInt8]
    /// Every attribute in order, MESSAGE-INTEGRITY and FINGERPRINT excepted.
    public var attributes: [STUNAttribute]

    /// The Binding method.
    public static let binding: UInt16 = 0x001
    /// RFC 8489's fixed second word.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// The largest message read: a browser's binding request is about 100 bytes.
    public static let maximumSize = 1_280
    /// The most attributes read from one message.
    public static let maximumAttributes = 24

    /// A message of `kind` with no attributes yet.
    public init(method: UInt16 = binding, kind: Kind, transactionID: [UInt8], attributes: [STUNAttribute] = []) {
        self.method = method
        self.kind = kind
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// The first attribute of `type`, if any.
    public func attribute(_ type: STUNAttribute.Kind) -> STUNAttribute? {
        attributes.first { $0.type == type.rawValue }
    }

    /// The 14-bit message type: method bits interleaved with the two class bits (RFC 8489 §5).
    var messageType: UInt16 {
        let c = kind.rawValue
        return (method & 0x000F) | (method & 0x0070) << 1 | (method & 0x0F80) << 2 | (c & 1) << 4 | (c & 2) << 7
    }

    /// The message as sent: attributes padded to words, then MESSAGE-INTEGRITY (HMAC-SHA1 with `integrityKey`) when
    /// a key is given, then FINGERPRINT (CRC-32 xor 0x5354554E) when `fingerprint` is set.
    public func encoded(integrityKey: [UInt8]? = nil, fingerprint: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        bytes.appendBigEndian16(messageType)
        bytes.appendBigEndian16(0)
        bytes.appendBigEndian32(Self.magicCookie)
        bytes += transactionID
        for attribute in attributes { attribute.append(to: &bytes) }
        if let integrityKey {
            Self.setLength(of: &bytes, to: bytes.count - 20 + 24)
            let code = STUNIntegrity.code(of: bytes, key: integrityKey)
            STUNAttribute(type: STUNAttribute.Kind.messageIntegrity.rawValue, value: code).append(to: &bytes)
        }
        if fingerprint {
            Self.setLength(of: &bytes, to: bytes.count - 20 + 8)
            let crc = CRC32.checksum(bytes) ^ 0x5354_554E
            var value: [UInt8] = []
            value.appendBigEndian32(crc)
            STUNAttribute(type: STUNAttribute.Kind.fingerprint.rawValue, value: value).append(to: &bytes)
        }
        Self.setLength(of: &bytes, to: bytes.count - 20)
        return bytes
    }

    static func setLength(of bytes: inout [UInt8], to length: Int) {
        bytes[2] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: length)
    }
}

/// A STUN message as it arrived: the parsed message and where its MESSAGE-INTEGRITY and FINGERPRINT sit, so both can
/// be checked against the bytes they cover.
public struct ReceivedSTUN: Sendable {
    /// The parsed message (without MESSAGE-INTEGRITY and FINGERPRINT).
    public let message: STUNMessage
    /// The bytes that arrived.
    public let bytes: [UInt8]
    /// Where the MESSAGE-INTEGRITY attribute's header starts, if there is one.
    public let integrityOffset: Int?
    /// Where the FINGERPRINT attribute's header starts, if there is one.
    public let fingerprintOffset: Int?

    /// Parses one datagram; throws `STUNError` naming what was wrong.
    public init(parsing bytes: [UInt8]) throws(STUNError) {
        guard bytes.count <= STUNMessage.maximumSize else {
            throw .tooLarge(bytes: bytes.count, limit: STUNMessage.maximumSize)
        }
        guard bytes.count >= 20 else { throw .truncated(bytes: bytes.count) }
        let type = bytes.bigEndianU16(at: 0)
        guard type & 0xC000 == 0 else { throw .notSTUN("the first two bits are not zero") }
        guard bytes.bigEndianU32(at: 4) == STUNMessage.magicCookie else { throw .notSTUN("no magic cookie") }
        let length = Int(bytes.bigEndianU16(at: 2))
        guard length % 4 == 0 else { throw .badLength(length, reason: "not a multiple of 4") }
        guard length == bytes.count - 20 else {
            throw .badLength(length, reason: "the datagram holds \(bytes.count - 20) bytes after the header")
        }
        let method = (type & 0x000F) | (type & 0x00E0) >> 1 | (type & 0x3E00) >> 2
        let kindBits = (type & 0x0010) >> 4 | (type & 0x0100) >> 7
        var attributes: [STUNAttribute] = []
        var integrityOffset: Int?
        var fingerprintOffset: Int?
        var offset = 20
        while offset < bytes.count {
            guard fingerprintOffset == nil else { throw .misplaced("an attribute after FINGERPRINT") }
            guard offset + 4 <= bytes.count else { throw .truncated(bytes: bytes.count) }
            let attributeType = bytes.bigEndianU16(at: offset)
            let attributeLength = Int(bytes.bigEndianU16(at: offset + 2))
            let end = offset + 4 + attributeLength
            guard end <= bytes.count else {
                throw .badAttribute(type: attributeType, reason: "\(attributeLength) bytes run past the message")
            }
            let value = Array(bytes[(offset + 4)..<end])
            switch attributeType {
            case STUNAttribute.Kind.messageIntegrity.rawValue:
                guard integrityOffset == nil else { throw .misplaced("a second MESSAGE-INTEGRITY") }
                guard attributeLength == 20 else {
                    throw .badAttribute(type: attributeType, reason: "\(attributeLength) bytes, not 20")
                }
                integrityOffset = offset
            case STUNAttribute.Kind.fingerprint.rawValue:
                guard attributeLength == 4 else {
                    throw .badAttribute(type: attributeType, reason: "\(attributeLength) bytes, not 4")
                }
                fingerprintOffset = offset
            default:
                guard integrityOffset == nil else { throw .misplaced("an attribute after MESSAGE-INTEGRITY") }
                guard attributes.count < STUNMessage.maximumAttributes else {
                    throw .tooManyAttributes(limit: STUNMessage.maximumAttributes)
                }
                attributes.append(STUNAttribute(type: attributeType, value: value))
            }
            offset = end + (4 - attributeLength % 4) % 4
        }
        guard offset == bytes.count else { throw .truncated(bytes: bytes.count) }
        message = STUNMessage(
            method: method, kind: STUNMessage.Kind(rawValue: kindBits)!, transactionID: Array(bytes[8..<20]),
            attributes: attributes)
        self.bytes = bytes
        self.integrityOffset = integrityOffset
        self.fingerprintOffset = fingerprintOffset
    }

    /// Whether FINGERPRINT is present and matches the bytes before it.
    public var fingerprintIsValid: Bool {
        guard let fingerprintOffset else { return false }
        var covered = Array(bytes[..<fingerprintOffset])
        STUNMessage.setLength(of: &covered, to: fingerprintOffset - 20 + 8)
        return CRC32.checksum(covered) ^ 0x5354_554E == bytes.bigEndianU32(at: fingerprintOffset + 4)
    }

    /// Whether MESSAGE-INTEGRITY is present and is the HMAC-SHA1 of the bytes before it under `key` (ICE: the
    /// password of whoever the message is for).
    public func integrityIsValid(key: [UInt8]) -> Bool {
        guard let integrityOffset else { return false }
        var covered = Array(bytes[..<integrityOffset])
        STUNMessage.setLength(of: &covered, to: integrityOffset - 20 + 24)
        let code = bytes[(integrityOffset + 4)..<(integrityOffset + 24)]
        return STUNIntegrity.isValid(Array(code), of: covered, key: key)
    }
}

/// Why a datagram was not a STUN message ICE-lite could answer.
public enum STUNError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)
    case truncated(bytes: Int)
    case notSTUN(String)
    case badLength(Int, reason: String)
    case badAttribute(type: UInt16, reason: String)
    case misplaced(String)
    case tooManyAttributes(limit: Int)
    case missingFingerprint
    case badFingerprint
    case notABindingRequest
    case missingAttribute(String)
    case unknownUsername(String)
    case badIntegrity
    case roleConflict

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): "STUN message of \(bytes) bytes exceeds the limit of \(limit)"
        case .truncated(let bytes): "STUN message truncated at \(bytes) bytes"
        case .notSTUN(let reason): "not a STUN message: \(reason)"
        case .badLength(let length, let reason): "STUN length \(length) is wrong: \(reason)"
        case .badAttribute(let type, let reason): "STUN attribute 0x\(String(type, radix: 16)): \(reason)"
        case .misplaced(let what): "STUN message has \(what)"
        case .tooManyAttributes(let limit): "STUN message has more than \(limit) attributes"
        case .missingFingerprint: "STUN message without FINGERPRINT (ICE requires one)"
        case .badFingerprint: "STUN FINGERPRINT does not match the message"
        case .notABindingRequest: "STUN message is not a binding request"
        case .missingAttribute(let name): "STUN binding request without \(name)"
        case .unknownUsername(let name): "STUN USERNAME \(name) is not this session's"
        case .badIntegrity: "STUN MESSAGE-INTEGRITY does not match this session's password"
        case .roleConflict: "STUN binding request claims ICE-CONTROLLED; a lite relay is always controlled"
        }
    }
}

extension Array where Element == UInt8 {
    func bigEndianU16(at offset: Int) -> UInt16 { UInt16(self[offset]) << 8 | UInt16(self[offset + 1]) }

    func bigEndianU32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8
            | UInt32(self[offset + 3])
    }

    mutating func appendBigEndian16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian32(_ value: UInt32) {
        appendBigEndian16(UInt16(truncatingIfNeeded: value >> 16))
        appendBigEndian16(UInt16(truncatingIfNeeded: value))
    }
}
