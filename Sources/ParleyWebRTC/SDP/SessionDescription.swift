/// A session description (RFC 8866) as values: what the parser reads and the printer writes, never edited as text.
/// Every line kept is a field here, so `try SessionDescription(parsing: description.description) == description`.
public struct SessionDescription: Sendable, Equatable, SDPAttributeHolder {
    /// The v= line; always 0.
    public var version: Int = 0
    /// The o= line: who made the description and its version.
    public var origin: Origin
    /// The s= line; browsers write "-".
    public var sessionName: String = "-"
    /// The session's i= line, if any.
    public var information: String?
    /// The u= line, if any.
    public var uri: String?
    /// The e= lines.
    public var emails: [String] = []
    /// The p= lines.
    public var phones: [String] = []
    /// The session-level c= line, if any.
    public var connection: ConnectionData?
    /// The session-level b= lines.
    public var bandwidths: [Bandwidth] = []
    /// The t= lines, each with its r= lines; WebRTC has one, "0 0".
    public var timings: [Timing] = [Timing()]
    /// The z= line's text, if any.
    public var timeZones: String?
    /// The session-level k= line's text, if any (obsolete, kept so it prints back).
    public var encryptionKey: String?
    /// The session-level a= lines, in order.
    public var attributes: [SDPAttribute] = []
    /// The m= sections, in order.
    public var media: [MediaDescription] = []

    /// A description with the given origin and parts; the rest as WebRTC writes it (s=-, t=0 0).
    public init(
        origin: Origin, sessionName: String = "-", timings: [Timing] = [Timing()], attributes: [SDPAttribute] = [],
        media: [MediaDescription] = []
    ) {
        self.origin = origin
        self.sessionName = sessionName
        self.timings = timings
        self.attributes = attributes
        self.media = media
    }
}

/// The o= line (RFC 8866 §5.2).
public struct Origin: Sendable, Equatable {
    /// The user's login, "-" when there is none (browsers).
    public var username: String
    /// A number unique to the session; browsers write a 64-bit random number in decimal.
    public var sessionID: String
    /// Raised each time the description changes.
    public var sessionVersion: UInt64
    /// "IN".
    public var networkType: String
    /// "IP4" or "IP6".
    public var addressType: String
    /// The maker's address (browsers write 127.0.0.1).
    public var address: String

    /// An origin from its six fields.
    public init(
        username: String = "-", sessionID: String, sessionVersion: UInt64, networkType: String = "IN",
        addressType: String = "IP4", address: String = "127.0.0.1"
    ) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// A c= line (RFC 8866 §5.7): "IN IP4 0.0.0.0".
public struct ConnectionData: Sendable, Equatable {
    /// "IN".
    public var networkType: String
    /// "IP4" or "IP6".
    public var addressType: String
    /// The address, possibly with "/ttl" or "/count" suffixes, kept as written.
    public var address: String

    /// A connection line from its three fields.
    public init(networkType: String = "IN", addressType: String = "IP4", address: String) {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// A b= line (RFC 8866 §5.8): "AS:2500".
public struct Bandwidth: Sendable, Equatable {
    /// "AS", "CT", "TIAS" or another modifier, kept as written.
    public var type: String
    /// The bandwidth; its unit depends on the type (kbit/s for AS and CT, bit/s for TIAS).
    public var value: UInt64

    /// A bandwidth line from its two fields.
    public init(type: String, value: UInt64) {
        self.type = type
        self.value = value
    }
}

/// A t= line with its r= lines (RFC 8866 §5.9, §5.10).
public struct Timing: Sendable, Equatable {
    /// The start time (NTP seconds); 0 for an unbounded session.
    public var start: UInt64
    /// The stop time (NTP seconds); 0 for an unbounded session.
    public var stop: UInt64
    /// The r= lines after this t= line, as written.
    public var repeats: [String]

    /// A timing line; the default is WebRTC's "0 0".
    public init(start: UInt64 = 0, stop: UInt64 = 0, repeats: [String] = []) {
        self.start = start
        self.stop = stop
        self.repeats = repeats
    }
}

/// What an m= section carries: the first field of its m= line.
public enum MediaKind: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// "audio".
    case audio
    /// "video".
    case video
    /// "application" (a WebRTC data channel).
    case application
    /// Any other token ("text", "message", ...), kept as written.
    case other(String)

    /// The kind for an m= line's first field.
    public init(_ token: String) {
        switch token {
        case "audio": self = .audio
        case "video": self = .video
        case "application": self = .application
        default: self = .other(token)
        }
    }

    /// The token as the m= line writes it.
    public var description: String {
        switch self {
        case .audio: "audio"
        case .video: "video"
        case .application: "application"
        case .other(let token): token
        }
    }
}

/// An m= section (RFC 8866 §5.14) and the lines under it.
public struct MediaDescription: Sendable, Equatable, SDPAttributeHolder {
    /// What the section carries.
    public var kind: MediaKind
    /// The transport port; 0 marks a rejected section.
    public var port: UInt16
    /// The "/count" after the port, if written.
    public var portCount: UInt16?
    /// The transport protocol, "UDP/TLS/RTP/SAVPF" for WebRTC media and "UDP/DTLS/SCTP" for data.
    public var proto: String
    /// The formats as written: payload type numbers for RTP, "webrtc-datachannel" for data.
    public var formats: [String]
    /// The section's i= line, if any.
    public var information: String?
    /// The section's c= lines.
    public var connections: [ConnectionData] = []
    /// The section's b= lines.
    public var bandwidths: [Bandwidth] = []
    /// The section's k= line's text, if any.
    public var encryptionKey: String?
    /// The section's a= lines, in order.
    public var attributes: [SDPAttribute] = []

    /// A section from its m= line and a= lines.
    public init(
        kind: MediaKind, port: UInt16, portCount: UInt16? = nil, proto: String, formats: [String],
        connections: [ConnectionData] = [], attributes: [SDPAttribute] = []
    ) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.formats = formats
        self.connections = connections
        self.attributes = attributes
    }

    /// Whether the formats are RTP payload types (the protocol names RTP).
    public var isRTP: Bool { proto.split(separator: "/").contains("RTP") }

    /// The formats that are payload type numbers, in the m= line's order.
    public var payloadTypes: [UInt8] { formats.compactMap { UInt8($0) }.filter { $0 <= 127 } }
}
