/// a=rtpmap: a payload type's codec, "111 opus/48000/2" (RFC 8866 §6.6).
public struct RTPMap: SDPAttributeValue {
    public static let attributeName = "rtpmap"
    /// The payload type, 0...127.
    public var payloadType: UInt8
    /// The codec name as written ("opus", "VP8", "rtx"); compare without case.
    public var encoding: String
    /// The RTP clock rate in Hz.
    public var clockRate: UInt32
    /// The audio channel count, when written.
    public var channels: UInt8?

    /// A codec mapping from its fields.
    public init(payloadType: UInt8, encoding: String, clockRate: UInt32, channels: UInt8? = nil) {
        self.payloadType = payloadType
        self.encoding = encoding
        self.clockRate = clockRate
        self.channels = channels
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let (type, rest) = SDPScan.head(Substring(text))
        payloadType = try SDPScan.payloadType(type, name)
        guard let rest, !rest.contains(" ") else { throw SDPScan.failure(name, "expected \"<pt> <codec>/<rate>\"") }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else {
            throw SDPScan.failure(name, "expected <codec>/<rate>[/<channels>], found \"\(rest)\"")
        }
        encoding = try SDPScan.token(parts[0], name, "codec name")
        clockRate = try SDPScan.number(parts[1], UInt32.self, in: 1...UInt32.max, name, "clock rate")
        channels = parts.count == 3 ? try SDPScan.number(parts[2], UInt8.self, in: 1...255, name, "channels") : nil
    }

    public var attributeValue: String {
        "\(payloadType) \(encoding)/\(clockRate)" + (channels.map { "/\($0)" } ?? "")
    }

    /// Whether this maps `encoding` at `clockRate` (and `channels`, when given), the name compared without case.
    public func matches(_ encoding: String, _ clockRate: UInt32, channels: UInt8? = nil) -> Bool {
        self.encoding.lowercased() == encoding.lowercased() && self.clockRate == clockRate
            && (channels == nil || self.channels == channels)
    }
}

/// a=fmtp: a payload type's format parameters in their order, "111 minptime=10;useinbandfec=1" (RFC 8866 §6.15).
public struct FormatParameters: SDPAttributeValue {
    public static let attributeName = "fmtp"
    /// The payload type, 0...127.
    public var payloadType: UInt8
    /// The parameters in the order written.
    public var parameters: [SDPParameter]

    /// Format parameters from their fields.
    public init(payloadType: UInt8, parameters: [SDPParameter]) {
        self.payloadType = payloadType
        self.parameters = parameters
    }

    public init(attributeValue text: String) throws(SDPError) {
        let (type, rest) = SDPScan.head(Substring(text))
        payloadType = try SDPScan.payloadType(type, Self.attributeName)
        parameters = try rest.map { (rest) throws(SDPError) in try SDPParameter.list(rest, Self.attributeName) } ?? []
    }

    public var attributeValue: String {
        parameters.isEmpty ? "\(payloadType)" : "\(payloadType) \(SDPParameter.text(parameters))"
    }

    /// The value of the first parameter with this name.
    public subscript(name: String) -> String? { parameters.first { $0.name == name }?.value }
}

/// a=rtcp-fb: an RTCP feedback message a payload type (or every one, "*") uses, "96 nack pli" (RFC 4585 §4.2).
public struct RTCPFeedback: SDPAttributeValue {
    public static let attributeName = "rtcp-fb"
    /// The payload type, or nil for "*".
    public var payloadType: UInt8?
    /// The feedback type ("nack", "ccm", "goog-remb", "transport-cc").
    public var type: String
    /// What follows the type ("pli", "fir"), its spaces kept single.
    public var parameter: String?

    /// A feedback line from its fields.
    public init(payloadType: UInt8?, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    public init(attributeValue text: String) throws(SDPError) {
        let fields = SDPScan.fields(text)
        guard fields.count >= 2 else { throw SDPScan.failure(Self.attributeName, "expected \"<pt> <type>\"") }
        payloadType = fields[0] == "*" ? nil : try SDPScan.payloadType(fields[0], Self.attributeName)
        type = try SDPScan.token(fields[1], Self.attributeName, "feedback type")
        parameter = fields.count > 2 ? fields[2...].joined(separator: " ") : nil
    }

    public var attributeValue: String {
        [payloadType.map(String.init) ?? "*", type, parameter].compactMap { $0 }.joined(separator: " ")
    }
}

/// a=extmap: an RTP header extension's id, "3 http://www.ietf.org/id/draft-holmer-..." (RFC 8285 §5).
public struct ExtensionMap: SDPAttributeValue {
    public static let attributeName = "extmap"
    /// The id in RTP packets: 1...14 one-byte, up to 255 two-byte.
    public var id: UInt16
    /// The direction after "/", when written.
    public var direction: MediaDirection?
    /// The extension's URI.
    public var uri: String
    /// Extension attributes after the URI, if any.
    public var extensionAttributes: String?

    /// An extension mapping from its fields.
    public init(id: UInt16, direction: MediaDirection? = nil, uri: String, extensionAttributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.extensionAttributes = extensionAttributes
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let fields = SDPScan.fields(text)
        guard fields.count >= 2 else { throw SDPScan.failure(name, "expected \"<id>[/<direction>] <uri>\"") }
        let idParts = fields[0].split(separator: "/", omittingEmptySubsequences: false)
        guard idParts.count <= 2 else { throw SDPScan.failure(name, "expected <id>[/<direction>]") }
        id = try SDPScan.number(idParts[0], UInt16.self, in: 1...255, name, "id")
        if idParts.count == 2 {
            guard let direction = MediaDirection(rawValue: String(idParts[1])) else {
                throw SDPScan.failure(name, "unknown direction \"\(idParts[1])\"")
            }
            self.direction = direction
        }
        uri = String(fields[1])
        extensionAttributes = fields.count > 2 ? fields[2...].joined(separator: " ") : nil
    }

    public var attributeValue: String {
        let idText = direction.map { "\(id)/\($0.rawValue)" } ?? "\(id)"
        return [idText, uri, extensionAttributes].compactMap { $0 }.joined(separator: " ")
    }
}

/// a=ssrc: a source's attribute, "1234 cname:abc" or "1234 msid:stream track" (RFC 5576 §4.1).
public struct SSRCAttribute: SDPAttributeValue {
    public static let attributeName = "ssrc"
    /// The synchronization source.
    public var ssrc: UInt32
    /// The source attribute's name ("cname", "msid").
    public var attribute: String
    /// The text after the source attribute's ":", as written.
    public var value: String?

    /// A source attribute from its fields.
    public init(ssrc: UInt32, attribute: String, value: String? = nil) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.value = value
    }

    public init(attributeValue text: String) throws(SDPError) {
        let (source, rest) = SDPScan.head(Substring(text))
        ssrc = try SDPScan.number(source, UInt32.self, Self.attributeName, "ssrc")
        guard let rest else { throw SDPScan.failure(Self.attributeName, "expected \"<ssrc> <attribute>[:<value>]\"") }
        let colon = rest.firstIndex(of: ":")
        attribute = try SDPScan.token(rest[..<(colon ?? rest.endIndex)], Self.attributeName, "source attribute")
        value = colon.map { String(rest[rest.index(after: $0)...]) }
    }

    public var attributeValue: String { "\(ssrc) \(attribute)" + (value.map { ":\($0)" } ?? "") }
}

/// a=ssrc-group: sources that belong together, "FID 1234 5678" (RFC 5576 §4.2).
public struct SSRCGroup: SDPAttributeValue {
    public static let attributeName = "ssrc-group"
    /// "FID" (a source and its retransmission source), "SIM" (simulcast layers, low to high), ...
    public var semantics: String
    /// The sources in order.
    public var ssrcs: [UInt32]

    /// A source group from its fields.
    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }

    public init(attributeValue text: String) throws(SDPError) {
        let fields = SDPScan.fields(text)
        guard fields.count >= 2 else { throw SDPScan.failure(Self.attributeName, "expected \"<semantics> <ssrc>...\"") }
        semantics = try SDPScan.token(fields[0], Self.attributeName, "semantics")
        var ssrcs: [UInt32] = []
        for field in fields.dropFirst() {
            ssrcs.append(try SDPScan.number(field, UInt32.self, Self.attributeName, "ssrc"))
        }
        self.ssrcs = try SDPScan.bounded(ssrcs, Self.attributeName, "sources")
    }

    public var attributeValue: String { ([semantics] + ssrcs.map(String.init)).joined(separator: " ") }
}

/// a=msid: the media stream and track an m= section's sender belongs to, "stream-id track-id" (RFC 8830).
public struct MediaStreamID: SDPAttributeValue {
    public static let attributeName = "msid"
    /// The stream id ("-" for a track in no stream).
    public var stream: String
    /// The track id, when written.
    public var track: String?

    /// A media stream id from its fields.
    public init(stream: String, track: String? = nil) {
        self.stream = stream
        self.track = track
    }

    public init(attributeValue text: String) throws(SDPError) {
        let fields = SDPScan.fields(text)
        guard fields.count == 1 || fields.count == 2 else {
            throw SDPScan.failure(Self.attributeName, "expected \"<stream> [<track>]\"")
        }
        stream = try SDPScan.token(fields[0], Self.attributeName, "stream id")
        track = fields.count == 2 ? try SDPScan.token(fields[1], Self.attributeName, "track id") : nil
    }

    public var attributeValue: String { track.map { "\(stream) \($0)" } ?? stream }
}
