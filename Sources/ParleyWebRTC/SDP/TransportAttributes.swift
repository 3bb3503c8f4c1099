// `make fuzz` compiles the parsers and ParleyBytes as one module, where there is nothing to import.
#if canImport(ParleyBytes)
import ParleyBytes
#endif

/// a=fingerprint: a hash of the DTLS certificate, "sha-256 AB:CD:..." (RFC 8122 §5).
public struct Fingerprint: SDPAttributeValue {
    public static let attributeName = "fingerprint"
    /// The hash function's name in lowercase ("sha-256").
    public var hashFunction: String
    /// The hash.
    public var bytes: [UInt8]

    /// A fingerprint from its hash function and bytes.
    public init(hashFunction: String, bytes: [UInt8]) {
        self.hashFunction = hashFunction.lowercased()
        self.bytes = bytes
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let fields = SDPScan.fields(text)
        guard fields.count == 2 else { throw SDPScan.failure(name, "expected \"<hash> <XX:XX:...>\"") }
        hashFunction = try SDPScan.token(fields[0], name, "hash function").lowercased()
        let pairs = fields[1].split(separator: ":", omittingEmptySubsequences: false)
        guard pairs.count <= SDPLimits.maxFingerprintBytes else {
            throw SDPScan.failure(name, "more than \(SDPLimits.maxFingerprintBytes) bytes")
        }
        var bytes: [UInt8] = []
        for pair in pairs {
            guard pair.count == 2, let byte = Hex.decode(String(pair)) else {
                throw SDPScan.failure(name, "\"\(pair)\" is not two hex digits")
            }
            bytes += byte
        }
        self.bytes = bytes
    }

    /// "sha-256 AB:CD:...", the bytes in uppercase hex as browsers write them.
    public var attributeValue: String {
        "\(hashFunction) " + bytes.map { Hex.encode([$0]).uppercased() }.joined(separator: ":")
    }

    /// Whether this is a SHA-256 fingerprint of the right length (32 bytes).
    public var isSHA256: Bool { hashFunction == "sha-256" && bytes.count == 32 }
}

/// a=setup: which side starts DTLS (RFC 4145 §4, RFC 8842).
public enum SetupRole: String, SDPAttributeValue, CaseIterable {
    public static let attributeName = "setup"
    /// Either role; an offer says this.
    case actpass
    /// The DTLS client.
    case active
    /// The DTLS server.
    case passive
    /// No connection yet.
    case holdconn

    public init(attributeValue text: String) throws(SDPError) {
        guard let role = SetupRole(rawValue: text) else {
            throw SDPScan.failure(Self.attributeName, "\"\(text)\" is not actpass, active, passive or holdconn")
        }
        self = role
    }

    public var attributeValue: String { rawValue }
}

/// a=group: sections grouped by a semantics, "BUNDLE 0 1 2" (RFC 5888, RFC 8843).
public struct MediaGroup: SDPAttributeValue {
    public static let attributeName = "group"
    /// "BUNDLE", "LS", ...
    public var semantics: String
    /// The mids in order; for BUNDLE the first is the tag whose transport every section shares.
    public var mids: [String]

    /// A group from its fields.
    public init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }

    public init(attributeValue text: String) throws(SDPError) {
        let fields = SDPScan.fields(text)
        guard let first = fields.first else { throw SDPScan.failure(Self.attributeName, "no semantics") }
        semantics = try SDPScan.token(first, Self.attributeName, "semantics")
        var mids: [String] = []
        for field in fields.dropFirst() { mids.append(try SDPScan.token(field, Self.attributeName, "mid")) }
        self.mids = try SDPScan.bounded(mids, Self.attributeName, "mids")
    }

    public var attributeValue: String { ([semantics] + mids).joined(separator: " ") }
}

/// A candidate's type (RFC 8445 §5.1.1).
public enum CandidateType: Sendable, Equatable, CustomStringConvertible {
    /// An address of the maker's own interface.
    case host
    /// A server-reflexive address (seen by a STUN server).
    case srflx
    /// A peer-reflexive address (seen by the peer).
    case prflx
    /// A TURN relay's address.
    case relay
    /// Another token, kept as written.
    case other(String)

    /// The type for a candidate line's token after "typ".
    public init(_ token: String) {
        switch token {
        case "host": self = .host
        case "srflx": self = .srflx
        case "prflx": self = .prflx
        case "relay": self = .relay
        default: self = .other(token)
        }
    }

    /// The token as written after "typ".
    public var description: String {
        switch self {
        case .host: "host"
        case .srflx: "srflx"
        case .prflx: "prflx"
        case .relay: "relay"
        case .other(let token): token
        }
    }
}

/// a=candidate: an ICE candidate (RFC 8839 §5.1),
/// "1 1 udp 2130706431 203.0.113.7 40000 typ host generation 0".
public struct Candidate: SDPAttributeValue {
    public static let attributeName = "candidate"
    /// Groups candidates of the same type, interface and server.
    public var foundation: String
    /// 1 for RTP (the only one with rtcp-mux).
    public var component: UInt16
    /// "udp" or "tcp", as written.
    public var transport: String
    /// The candidate's priority (RFC 8445 §5.1.2).
    public var priority: UInt32
    /// An IP address or an mDNS name ("<uuid>.local").
    public var address: String
    /// The port.
    public var port: UInt16
    /// host, srflx, prflx or relay.
    public var type: CandidateType
    /// The pairs after the type, in order ("raddr", "rport", "generation", "network-id", ...).
    public var extensions: [SDPParameter]

    /// A candidate from its fields.
    public init(
        foundation: String, component: UInt16 = 1, transport: String = "udp", priority: UInt32, address: String,
        port: UInt16, type: CandidateType, extensions: [SDPParameter] = []
    ) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.extensions = extensions
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let fields = SDPScan.fields(text)
        guard fields.count >= 8, fields[6] == "typ", fields.count % 2 == 0 else {
            throw SDPScan.failure(
                name,
                "expected \"<foundation> <component> <transport> <priority> <address> <port> typ <type>\" and pairs")
        }
        foundation = try SDPScan.token(fields[0], name, "foundation")
        component = try SDPScan.number(fields[1], UInt16.self, in: 1...256, name, "component")
        transport = try SDPScan.token(fields[2], name, "transport")
        priority = try SDPScan.number(fields[3], UInt32.self, in: 1...UInt32.max, name, "priority")
        address = try SDPScan.token(fields[4], name, "address")
        port = try SDPScan.number(fields[5], UInt16.self, name, "port")
        type = CandidateType(try SDPScan.token(fields[7], name, "type"))
        var extensions: [SDPParameter] = []
        for pair in stride(from: 8, to: fields.count, by: 2) {
            let key = try SDPScan.token(fields[pair], name, "extension name")
            extensions.append(SDPParameter(key, try SDPScan.token(fields[pair + 1], name, "extension value")))
        }
        self.extensions = try SDPScan.bounded(extensions, name, "extensions")
    }

    public var attributeValue: String {
        var fields = [foundation, "\(component)", transport, "\(priority)", address, "\(port)", "typ", "\(type)"]
        for pair in extensions { fields += [pair.name, pair.value ?? ""] }
        return fields.joined(separator: " ")
    }
}
