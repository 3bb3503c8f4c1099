/// One a= line: a name and, after the first ":", a value kept exactly as written ("a=rtcp-mux" has none,
/// "a=mid:0" has "0"). Attributes the relay does not know are kept verbatim and printed back.
public struct SDPAttribute: Sendable, Equatable {
    /// The name before the first ":".
    public var name: String
    /// The text after the first ":", or nil when the line has no ":".
    public var value: String?

    /// An attribute from its name and value text.
    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// An attribute holding a typed value (`SDPAttribute(RTPMap(...))`).
    public init<Value: SDPAttributeValue>(_ typed: Value) {
        self.init(name: Value.attributeName, value: typed.attributeValue)
    }

    /// The value read as `Value`, or nil when the name differs or the value does not parse.
    public func typed<Value: SDPAttributeValue>(as type: Value.Type) -> Value? {
        guard name == Value.attributeName, let value else { return nil }
        return try? Value(attributeValue: value)
    }

    /// "a=rtcp-mux": RTP and RTCP on one port (RFC 5761).
    public static let rtcpMux = SDPAttribute(name: "rtcp-mux")
    /// "a=rtcp-rsize": reduced-size RTCP (RFC 5506).
    public static let rtcpRsize = SDPAttribute(name: "rtcp-rsize")
    /// "a=ice-lite": the maker answers connectivity checks and never starts them (RFC 8445 §2.5).
    public static let iceLite = SDPAttribute(name: "ice-lite")
    /// "a=end-of-candidates": no more candidates will follow (RFC 8838).
    public static let endOfCandidates = SDPAttribute(name: "end-of-candidates")
    /// "a=extmap-allow-mixed": one- and two-byte header extensions may mix in a stream (RFC 8285).
    public static let extmapAllowMixed = SDPAttribute(name: "extmap-allow-mixed")
    /// "a=bundle-only": the section is only usable bundled (RFC 8843).
    public static let bundleOnly = SDPAttribute(name: "bundle-only")
}

/// A value type an attribute's text parses into and prints from, exactly: for every `x`,
/// `try Self(attributeValue: x.attributeValue) == x`.
public protocol SDPAttributeValue: Sendable, Equatable {
    /// The attribute name this value belongs to ("rtpmap").
    static var attributeName: String { get }
    /// The value parsed from an attribute's text; throws `SDPError.malformedAttribute` with no line number.
    init(attributeValue text: String) throws(SDPError)
    /// The attribute's text for this value.
    var attributeValue: String { get }
}

/// Something that holds a= lines: the session part or an m= section. The typed accessors read them.
public protocol SDPAttributeHolder {
    /// The a= lines, in order.
    var attributes: [SDPAttribute] { get }
}

extension SDPAttributeHolder {
    /// Every attribute of `Value`'s name that parses, in order.
    public func values<Value: SDPAttributeValue>(_ type: Value.Type) -> [Value] {
        attributes.compactMap { $0.typed(as: type) }
    }

    /// The first attribute of `Value`'s name that parses.
    public func value<Value: SDPAttributeValue>(_ type: Value.Type) -> Value? {
        for attribute in attributes {
            if let value = attribute.typed(as: type) { return value }
        }
        return nil
    }

    /// The text of the first attribute with this name (nil when absent or without a value).
    public func attributeValue(named name: String) -> String? {
        attributes.first { $0.name == name }?.value
    }

    /// Whether an attribute with this name is present.
    public func has(_ name: String) -> Bool { attributes.contains { $0.name == name } }

    /// Whether this flag attribute (`.rtcpMux`, `.iceLite`, ...) is present.
    public func has(_ flag: SDPAttribute) -> Bool { has(flag.name) }

    /// a=mid (RFC 8843).
    public var mid: String? { attributeValue(named: "mid") }
    /// The last direction attribute (sendrecv, sendonly, recvonly, inactive), if any.
    public var direction: MediaDirection? {
        attributes.reversed().lazy.compactMap { MediaDirection(attribute: $0) }.first
    }
    /// a=ice-ufrag (RFC 8839).
    public var iceUfrag: String? { attributeValue(named: "ice-ufrag") }
    /// a=ice-pwd (RFC 8839).
    public var icePwd: String? { attributeValue(named: "ice-pwd") }
    /// a=ice-options, split into its tokens ("trickle", "renomination").
    public var iceOptions: [String] {
        attributeValue(named: "ice-options").map { $0.split(separator: " ").map(String.init) } ?? []
    }
    /// a=fingerprint lines (RFC 8122).
    public var fingerprints: [Fingerprint] { values(Fingerprint.self) }
    /// a=setup (RFC 4145).
    public var setup: SetupRole? { value(SetupRole.self) }
    /// a=group lines (RFC 5888).
    public var groups: [MediaGroup] { values(MediaGroup.self) }
    /// a=candidate lines (RFC 8839).
    public var candidates: [Candidate] { values(Candidate.self) }
    /// a=rtpmap lines.
    public var rtpMaps: [RTPMap] { values(RTPMap.self) }
    /// a=fmtp lines.
    public var formatParameters: [FormatParameters] { values(FormatParameters.self) }
    /// a=rtcp-fb lines (RFC 4585).
    public var feedback: [RTCPFeedback] { values(RTCPFeedback.self) }
    /// a=extmap lines (RFC 8285).
    public var extensions: [ExtensionMap] { values(ExtensionMap.self) }
    /// a=ssrc lines (RFC 5576).
    public var ssrcs: [SSRCAttribute] { values(SSRCAttribute.self) }
    /// a=ssrc-group lines (RFC 5576).
    public var ssrcGroups: [SSRCGroup] { values(SSRCGroup.self) }
    /// a=rid lines (RFC 8851).
    public var rids: [RIDDescription] { values(RIDDescription.self) }
    /// a=simulcast (RFC 8853).
    public var simulcast: Simulcast? { value(Simulcast.self) }
    /// a=msid (RFC 8830).
    public var msid: MediaStreamID? { value(MediaStreamID.self) }
}

/// Which way media flows on an m= section, from the maker's side (RFC 8866 §6.7).
public enum MediaDirection: String, Sendable, Equatable, CaseIterable {
    /// Sends and receives.
    case sendrecv
    /// Sends only.
    case sendonly
    /// Receives only.
    case recvonly
    /// Neither.
    case inactive

    /// The direction an attribute line names, if it is one.
    public init?(attribute: SDPAttribute) {
        guard attribute.value == nil, let direction = MediaDirection(rawValue: attribute.name) else { return nil }
        self = direction
    }

    /// A direction from whether the maker sends and receives.
    public init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// Whether the maker sends.
    public var sends: Bool { self == .sendrecv || self == .sendonly }
    /// Whether the maker receives.
    public var receives: Bool { self == .sendrecv || self == .recvonly }
    /// The same flow seen from the other side (sendonly ↔ recvonly).
    public var reversed: MediaDirection { MediaDirection(sends: receives, receives: sends) }
    /// The flag attribute for this direction ("a=recvonly").
    public var attribute: SDPAttribute { SDPAttribute(name: rawValue) }
}
