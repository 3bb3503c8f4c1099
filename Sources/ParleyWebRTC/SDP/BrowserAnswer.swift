/// What the relay sends on one of a browser's m= sections: the source's SSRCs and the names the browser shows it under.
public struct RelaySource: Sendable, Equatable {
    /// The SSRC of the media.
    public var ssrc: UInt32
    /// The SSRC of its retransmissions, when the section has RTX.
    public var rtxSSRC: UInt32?
    /// The RTCP CNAME (one per relay participant, so the browser synchronizes its audio and video).
    public var cname: String
    /// The stream and track the browser's ontrack event reports.
    public var msid: MediaStreamID

    /// A source from its SSRCs and names.
    public init(ssrc: UInt32, rtxSSRC: UInt32? = nil, cname: String, msid: MediaStreamID) {
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.cname = cname
        self.msid = msid
    }
}

/// The relay's choice for one mid: whether it takes what the browser sends, and what it sends itself.
public struct MediaChoice: Sendable, Equatable {
    /// Whether the relay receives the browser's media on this mid (when the browser offers to send).
    public var receive: Bool
    /// What the relay sends on this mid (when the browser offers to receive), or nil to send nothing.
    public var send: RelaySource?

    /// A choice; the default receives and sends nothing.
    public init(receive: Bool = true, send: RelaySource? = nil) {
        self.receive = receive
        self.send = send
    }
}

/// The relay's side of the answer: its ICE credentials, certificate fingerprint, one UDP address, and per mid what it
/// receives and sends.
public struct AnswerParameters: Sendable, Equatable {
    /// The header extensions the relay understands; others are left out of the answer.
    public static let relayExtensions = [
        "urn:ietf:params:rtp-hdrext:ssrc-audio-level",
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        "urn:ietf:params:rtp-hdrext:sdes:mid",
        "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
        "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
        "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
    ]

    /// The relay's ice-ufrag, 4 to 256 ice-chars (RFC 8839 §5.4).
    public var iceUfrag: String
    /// The relay's ice-pwd, 22 to 256 ice-chars.
    public var icePwd: String
    /// The sha-256 fingerprint of the relay's DTLS certificate.
    public var fingerprint: Fingerprint
    /// The relay's UDP address the browser reaches (IPv4 or IPv6), its one host candidate.
    public var address: String
    /// The relay's UDP port, shared by every section (BUNDLE, rtcp-mux).
    public var port: UInt16
    /// The o= line's session id.
    public var sessionID: UInt64
    /// The o= line's version, raised on each new answer in the session.
    public var sessionVersion: UInt64
    /// Per mid, what the relay receives and sends; a mid not listed receives and sends nothing.
    public var choices: [String: MediaChoice]
    /// The header extension URIs the relay accepts.
    public var extensions: [String]

    /// Parameters from the relay's transport and its choices.
    public init(
        iceUfrag: String, icePwd: String, fingerprint: Fingerprint, address: String, port: UInt16, sessionID: UInt64,
        sessionVersion: UInt64 = 1, choices: [String: MediaChoice] = [:], extensions: [String] = relayExtensions
    ) {
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.fingerprint = fingerprint
        self.address = address
        self.port = port
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.choices = choices
        self.extensions = extensions
    }

    /// "IP6" when the address is IPv6, else "IP4".
    var addressType: String { address.contains(":") ? "IP6" : "IP4" }

    func validate() throws(SDPError) {
        let iceChars: (Character) -> Bool = { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") }
        guard (4...256).contains(iceUfrag.count), iceUfrag.allSatisfy(iceChars) else {
            throw .badAnswerParameters("ice-ufrag must be 4 to 256 of A-Z, a-z, 0-9, + and /")
        }
        guard (22...256).contains(icePwd.count), icePwd.allSatisfy(iceChars) else {
            throw .badAnswerParameters("ice-pwd must be 22 to 256 of A-Z, a-z, 0-9, + and /")
        }
        guard fingerprint.isSHA256 else { throw .badAnswerParameters("fingerprint must be sha-256 with 32 bytes") }
        guard !address.isEmpty, address.utf8.count <= SDPLimits.maxTokenBytes, !address.contains(" ") else {
            throw .badAnswerParameters("address \"\(address)\" is empty, too long or holds a space")
        }
        guard port != 0 else { throw .badAnswerParameters("port 0 rejects every section") }
    }
}

extension SessionDescription {
    /// The relay's answer to a browser's offer (JSEP, RFC 8829 §5.3): see `BrowserOffer.answer(with:)`.
    public static func answer(to offer: SessionDescription, with parameters: AnswerParameters) throws(SDPError)
        -> SessionDescription
    {
        try BrowserOffer(offer).answer(with: parameters)
    }
}

extension BrowserOffer {
    /// The relay's answer: ICE-lite with one host candidate, DTLS server (setup:passive), every accepted section in one
    /// BUNDLE with rtcp-mux; Opus or VP8 (+ RTX) at the offer's payload types with the feedback and header extensions
    /// both support at the offer's ids; simulcast received as offered; rejected sections at port 0 with their mid.
    public func answer(with parameters: AnswerParameters) throws(SDPError) -> SessionDescription {
        try parameters.validate()
        let addressType = parameters.addressType
        var session = SessionDescription(
            origin: Origin(
                sessionID: "\(parameters.sessionID)", sessionVersion: parameters.sessionVersion,
                addressType: addressType, address: parameters.address))
        session.attributes.append(.iceLite)
        let bundled = media.filter(\.isAccepted).compactMap(\.mid)
        if !bundled.isEmpty { session.attributes.append(SDPAttribute(MediaGroup(semantics: "BUNDLE", mids: bundled))) }
        if extmapAllowMixed { session.attributes.append(.extmapAllowMixed) }
        for offered in media {
            if let codec = offered.codec, let mid = offered.mid {
                session.media.append(accepted(offered, codec, mid, parameters))
            } else {
                session.media.append(rejected(offered, addressType))
            }
        }
        return session
    }

    private func rejected(_ offered: Media, _ addressType: String) -> MediaDescription {
        // An m= line needs a format even at port 0 (RFC 8866 §5.14); the offer's first is as good as any.
        var section = MediaDescription(
            kind: offered.kind, port: 0, proto: offered.proto, formats: Array(offered.formats.prefix(1)),
            connections: [ConnectionData(addressType: addressType, address: addressType == "IP6" ? "::" : "0.0.0.0")])
        if let mid = offered.mid { section.attributes.append(SDPAttribute(name: "mid", value: mid)) }
        return section
    }

    private func accepted(_ offered: Media, _ codec: Codec, _ mid: String, _ parameters: AnswerParameters)
        -> MediaDescription
    {
        let choice = parameters.choices[mid] ?? MediaChoice(receive: false, send: nil)
        let receives = offered.direction.sends && choice.receive
        let source = offered.direction.receives ? choice.send : nil
        let payloadType = codec.rtpMap.payloadType
        var section = MediaDescription(
            kind: offered.kind, port: parameters.port, proto: "UDP/TLS/RTP/SAVPF",
            formats: offered.acceptedPayloadTypes.map(String.init),
            connections: [ConnectionData(addressType: parameters.addressType, address: parameters.address)])
        var lines: [SDPAttribute] = [
            SDPAttribute(name: "mid", value: mid),
            SDPAttribute(name: "ice-ufrag", value: parameters.iceUfrag),
            SDPAttribute(name: "ice-pwd", value: parameters.icePwd),
            SDPAttribute(parameters.fingerprint),
            SDPAttribute(SetupRole.passive),
            SDPAttribute(
                Candidate(
                    foundation: "1", priority: Self.hostPriority, address: parameters.address, port: parameters.port,
                    type: .host)),
            .endOfCandidates,
            .rtcpMux,
        ]
        if offered.rtcpRsize { lines.append(.rtcpRsize) }
        for map in offered.extensions where parameters.extensions.contains(map.uri) {
            lines.append(SDPAttribute(ExtensionMap(id: map.id, direction: map.direction?.reversed, uri: map.uri)))
        }
        lines.append(MediaDirection(sends: source != nil, receives: receives).attribute)
        if let source { lines.append(SDPAttribute(source.msid)) }
        lines.append(SDPAttribute(codec.rtpMap))
        lines += codec.feedback.map { SDPAttribute($0) }
        if offered.kind == .audio {
            let opus = [SDPParameter("minptime", "10"), SDPParameter("useinbandfec", "1")]
            lines.append(SDPAttribute(FormatParameters(payloadType: payloadType, parameters: opus)))
        }
        if let rtx = codec.rtxPayloadType {
            lines.append(SDPAttribute(RTPMap(payloadType: rtx, encoding: "rtx", clockRate: 90_000)))
            let apt = [SDPParameter("apt", "\(payloadType)")]
            lines.append(SDPAttribute(FormatParameters(payloadType: rtx, parameters: apt)))
        }
        if receives, !offered.simulcast.isEmpty {
            for stream in offered.simulcast {
                for rid in stream { lines.append(SDPAttribute(RIDDescription(id: rid.rid, direction: .recv))) }
            }
            lines.append(SDPAttribute(Simulcast(recv: offered.simulcast)))
        }
        if let source { lines += ssrcLines(source, rtx: codec.rtxPayloadType != nil) }
        section.attributes = lines
        return section
    }

    private func ssrcLines(_ source: RelaySource, rtx: Bool) -> [SDPAttribute] {
        let ssrcs = [source.ssrc] + (rtx ? source.rtxSSRC.map { [$0] } ?? [] : [])
        var lines: [SDPAttribute] = []
        if ssrcs.count == 2 { lines.append(SDPAttribute(SSRCGroup(semantics: "FID", ssrcs: ssrcs))) }
        for ssrc in ssrcs {
            lines.append(SDPAttribute(SSRCAttribute(ssrc: ssrc, attribute: "cname", value: source.cname)))
            lines.append(SDPAttribute(SSRCAttribute(ssrc: ssrc, attribute: "msid", value: source.msid.attributeValue)))
        }
        return lines
    }

    /// A host candidate's priority for component 1 (RFC 8445 §5.1.2.1): type preference 126, local preference 65535.
    static let hostPriority: UInt32 = (1 << 24) * 126 + (1 << 8) * 65_535 + (256 - 1)
}
