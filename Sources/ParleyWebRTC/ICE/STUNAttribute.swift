/// One STUN attribute: its type and value as sent (the value unpadded).
public struct STUNAttribute: Equatable, Sendable {
    /// The attribute types ICE uses (RFC 8489 §18.3, RFC 8445 §16.1).
    public enum Kind: UInt16, Sendable {
        case mappedAddress = 0x0001
        case username = 0x0006
        case messageIntegrity = 0x0008
        case errorCode = 0x0009
        case xorMappedAddress = 0x0020
        case priority = 0x0024
        case useCandidate = 0x0025
        case software = 0x8022
        case fingerprint = 0x8028
        case iceControlled = 0x8029
        case iceControlling = 0x802A
    }

    /// The 16-bit type.
    public var type: UInt16
    /// The value, without padding.
    public var value: [UInt8]

    /// An attribute of any type.
    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    /// USERNAME: "their ufrag:our ufrag" in a check sent to us.
    public static func username(_ text: String) -> STUNAttribute {
        STUNAttribute(type: Kind.username.rawValue, value: Array(text.utf8))
    }

    /// XOR-MAPPED-ADDRESS: where a request came from, masked with the magic cookie (and, for IPv6, the transaction).
    public static func xorMappedAddress(_ address: TransportAddress, transactionID: [UInt8]) -> STUNAttribute {
        var value: [UInt8] = [0, address.isIPv6 ? 0x02 : 0x01]
        value.appendBigEndian16(address.port ^ UInt16(STUNMessage.magicCookie >> 16))
        value += zip(address.host, mask(transactionID: transactionID)).map { $0 ^ $1 }
        return STUNAttribute(type: Kind.xorMappedAddress.rawValue, value: value)
    }

    /// ERROR-CODE: class and number (400, 401, 487) and a reason phrase.
    public static func errorCode(_ code: Int, reason: String) -> STUNAttribute {
        var value: [UInt8] = [0, 0, UInt8(code / 100), UInt8(code % 100)]
        value += Array(reason.utf8.prefix(128))
        return STUNAttribute(type: Kind.errorCode.rawValue, value: value)
    }

    /// The USERNAME text, if this is one and it is UTF-8 of at most 513 bytes.
    public var username: String? {
        guard type == Kind.username.rawValue, value.count <= 513 else { return nil }
        return String(validating: value, as: UTF8.self)
    }

    /// The address an XOR-MAPPED-ADDRESS carries, unmasked.
    public func xorMappedAddress(transactionID: [UInt8]) -> TransportAddress? {
        guard type == Kind.xorMappedAddress.rawValue, value.count == 8 || value.count == 20 else { return nil }
        guard (value[1] == 0x01 && value.count == 8) || (value[1] == 0x02 && value.count == 20) else { return nil }
        let port = value.bigEndianU16(at: 2) ^ UInt16(STUNMessage.magicCookie >> 16)
        let host = zip(value[4...], Self.mask(transactionID: transactionID)).map { $0 ^ $1 }
        return TransportAddress(host: host, port: port)
    }

    /// The error code of an ERROR-CODE attribute (class × 100 + number).
    public var errorCode: Int? {
        guard type == Kind.errorCode.rawValue, value.count >= 4 else { return nil }
        return Int(value[2] & 0x07) * 100 + Int(value[3])
    }

    /// The 32-bit value of PRIORITY.
    public var priority: UInt32? {
        guard type == Kind.priority.rawValue, value.count == 4 else { return nil }
        return value.bigEndianU32(at: 0)
    }

    func append(to bytes: inout [UInt8]) {
        bytes.appendBigEndian16(type)
        bytes.appendBigEndian16(UInt16(value.count))
        bytes += value
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    private static func mask(transactionID: [UInt8]) -> [UInt8] {
        var mask: [UInt8] = []
        mask.appendBigEndian32(STUNMessage.magicCookie)
        return mask + transactionID
    }
}

/// An IP address and port: where a browser's checks come from, where its media goes.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let host: [UInt8]
    /// The UDP port.
    public let port: UInt16

    /// An address; nil unless `host` holds 4 or 16 bytes.
    public init?(host: [UInt8], port: UInt16) {
        guard host.count == 4 || host.count == 16 else { return nil }
        self.host = host
        self.port = port
    }

    /// Whether the host is an IPv6 address.
    public var isIPv6: Bool { host.count == 16 }

    public var description: String {
        if isIPv6 {
            let groups = stride(from: 0, to: 16, by: 2).map {
                String(UInt16(host[$0]) << 8 | UInt16(host[$0 + 1]), radix: 16)
            }
            return "[\(groups.joined(separator: ":"))]:\(port)"
        }
        return host.map(String.init).joined(separator: ".") + ":\(port)"
    }
}
