/// What the relay needs from a browser's offer, read once: the browser's ICE credentials and certificate fingerprint,
/// and per m= section whether the relay accepts it, with which payload types, which rids (simulcast) and SSRCs the
/// browser announced, and its header extension ids. `answer(with:)` turns it into the relay's answer.
public struct BrowserOffer: Sendable, Equatable {
    /// The browser's a=ice-ufrag (the BUNDLE transport's).
    public var iceUfrag: String
    /// The browser's a=ice-pwd.
    public var icePwd: String
    /// The browser's sha-256 certificate fingerprint, to check its DTLS certificate against.
    public var fingerprint: Fingerprint
    /// Whether the offer has a session-level a=extmap-allow-mixed (echoed in the answer).
    public var extmapAllowMixed: Bool
    /// Every m= section in the offer's order, accepted or not.
    public var media: [Media]

    /// The audio codec the relay accepts (RFC 7587).
    public static let opus = RTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2)
    /// The video codec the relay accepts (RFC 7741).
    public static let vp8 = RTPMap(payloadType: 96, encoding: "VP8", clockRate: 90_000)
    /// The feedback the relay answers for audio, as type and parameter.
    static let audioFeedback: [(String, String?)] = [("transport-cc", nil)]
    /// The feedback the relay answers for video, as type and parameter.
    static let videoFeedback: [(String, String?)] = [
        ("nack", nil), ("nack", "pli"), ("ccm", "fir"), ("goog-remb", nil), ("transport-cc", nil),
    ]

    /// The codec the relay accepted on an m= section: the offer's payload type for it, its RTX payload type and the
    /// feedback both sides will use.
    public struct Codec: Sendable, Equatable {
        /// The codec's rtpmap as offered (the browser's payload type).
        public var rtpMap: RTPMap
        /// The RTX payload type whose apt= is the codec's, when offered (video only).
        public var rtxPayloadType: UInt8?
        /// The offered feedback the relay supports, for the codec's payload type, in the offer's order.
        public var feedback: [RTCPFeedback]
    }

    /// One m= section of the offer as the relay sees it.
    public struct Media: Sendable, Equatable {
        /// The section's place in the offer (0-based).
        public var index: Int
        /// The section's mid (nil only for a section the browser rejected itself).
        public var mid: String?
        /// What the section carries.
        public var kind: MediaKind
        /// The m= line's protocol as offered.
        public var proto: String
        /// The m= line's formats as offered.
        public var formats: [String]
        /// The browser's direction (sendrecv when the offer names none).
        public var direction: MediaDirection
        /// The codec the relay accepts here, or nil when the section is rejected.
        public var codec: Codec?
        /// The simulcast streams the browser sends, each with the alternatives that have an `a=rid:... send` line, in
        /// the offer's order (Chrome writes the page's sendEncodings order).
        public var simulcast: [[SimulcastStream]]
        /// The browser's SSRCs from a=ssrc lines, each once, in order.
        public var ssrcs: [UInt32]
        /// The browser's a=ssrc-group lines (FID: a source and its RTX; SIM: simulcast layers).
        public var ssrcGroups: [SSRCGroup]
        /// The offered header extensions, in order.
        public var extensions: [ExtensionMap]
        /// Whether the section offers reduced-size RTCP.
        public var rtcpRsize: Bool

        /// Whether the relay accepts the section.
        public var isAccepted: Bool { codec != nil }
        /// The payload types the relay accepts here: the codec's, then its RTX's.
        public var acceptedPayloadTypes: [UInt8] {
            guard let codec else { return [] }
            return [codec.rtpMap.payloadType] + (codec.rtxPayloadType.map { [$0] } ?? [])
        }
        /// The first rid of each simulcast stream the browser sends, in the offer's order.
        public var rids: [String] { Simulcast.firstRIDs(simulcast) }
        /// The offered extension ids by URI.
        public var extensionIDs: [String: UInt16] {
            Dictionary(extensions.map { ($0.uri, $0.id) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// Reads `offer`. Throws when a section the relay would accept lacks what the relay requires: a mid, ICE
    /// credentials, a sha-256 fingerprint, rtcp-mux, a DTLS client role for the browser; or when there is no BUNDLE.
    public init(_ offer: SessionDescription) throws(SDPError) {
        guard let bundle = offer.groups.first(where: { $0.semantics.uppercased() == "BUNDLE" }) else {
            throw .missingBundle
        }
        var mids: Set<String> = []
        var media: [Media] = []
        var transport: (ufrag: String, pwd: String, fingerprint: Fingerprint)?
        for (index, section) in offer.media.enumerated() {
            let live = section.port != 0 || section.has(.bundleOnly)
            if let mid = section.mid {
                guard mids.insert(mid).inserted else { throw .duplicateMid(mid) }
            } else if live {
                throw .missingMid(section: index)
            }
            var entry = Self.read(section, index: index)
            if !live || !bundle.mids.contains(entry.mid ?? "") { entry.codec = nil }
            if entry.isAccepted, let mid = entry.mid {
                let checked = try Self.transport(of: section, mid: mid, session: offer)
                transport = transport ?? checked
            }
            media.append(entry)
        }
        var chosen: (ufrag: String, pwd: String, fingerprint: Fingerprint)
        if let transport { chosen = transport } else { chosen = try Self.sessionTransport(offer) }
        iceUfrag = chosen.ufrag
        icePwd = chosen.pwd
        fingerprint = chosen.fingerprint
        extmapAllowMixed = offer.has(.extmapAllowMixed)
        self.media = media
    }

    /// The section's codec, rids, SSRCs and extensions as offered, before the BUNDLE and port checks.
    private static func read(_ section: MediaDescription, index: Int) -> Media {
        let maps = section.rtpMaps.filter { section.payloadTypes.contains($0.payloadType) }
        var codec: Codec?
        if section.proto == "UDP/TLS/RTP/SAVPF" {
            switch section.kind {
            case .audio:
                codec = maps.first { $0.matches("opus", 48_000, channels: 2) }.map {
                    Codec(rtpMap: $0, rtxPayloadType: nil, feedback: feedback(section, $0.payloadType, audioFeedback))
                }
            case .video:
                codec = maps.first { $0.matches("VP8", 90_000) }.map { vp8 in
                    let rtx = maps.first { map in
                        map.matches("rtx", 90_000)
                            && section.formatParameters.contains {
                                $0.payloadType == map.payloadType && $0["apt"] == "\(vp8.payloadType)"
                            }
                    }
                    return Codec(
                        rtpMap: vp8, rtxPayloadType: rtx?.payloadType,
                        feedback: feedback(section, vp8.payloadType, videoFeedback))
                }
            default: codec = nil
            }
        }
        let sendRIDs = section.rids.filter { rid in
            guard rid.direction == .send else { return false }
            // A rid restricted to payload types other than the accepted codec's cannot reach the relay.
            guard let types = rid.restrictions.first(where: { $0.name == "pt" })?.value, let codec else { return true }
            return types.split(separator: ",").contains { $0 == "\(codec.rtpMap.payloadType)" }
        }.map(\.id)
        let simulcast = (section.simulcast?.send ?? []).map { $0.filter { sendRIDs.contains($0.rid) } }.filter {
            !$0.isEmpty
        }
        var ssrcs: [UInt32] = []
        for line in section.ssrcs where !ssrcs.contains(line.ssrc) { ssrcs.append(line.ssrc) }
        return Media(
            index: index, mid: section.mid, kind: section.kind, proto: section.proto, formats: section.formats,
            direction: section.direction ?? .sendrecv,
            codec: codec, simulcast: simulcast, ssrcs: ssrcs, ssrcGroups: section.ssrcGroups,
            extensions: section.extensions, rtcpRsize: section.has(.rtcpRsize))
    }

    /// The offered feedback for `payloadType` (or "*") that is in `supported`, once each, in the offer's order.
    private static func feedback(_ section: MediaDescription, _ payloadType: UInt8, _ supported: [(String, String?)])
        -> [RTCPFeedback]
    {
        var chosen: [RTCPFeedback] = []
        for line in section.feedback where line.payloadType == nil || line.payloadType == payloadType {
            let answer = RTCPFeedback(payloadType: payloadType, type: line.type, parameter: line.parameter)
            guard supported.contains(where: { $0.0 == line.type && $0.1 == line.parameter }), !chosen.contains(answer)
            else { continue }
            chosen.append(answer)
        }
        return chosen
    }

    /// An accepted section's ICE credentials and fingerprint (its own, else the session's), after checking rtcp-mux
    /// and the DTLS role.
    private static func transport(of section: MediaDescription, mid: String, session: SessionDescription)
        throws(SDPError) -> (ufrag: String, pwd: String, fingerprint: Fingerprint)
    {
        guard let ufrag = section.iceUfrag ?? session.iceUfrag, let pwd = section.icePwd ?? session.icePwd else {
            throw .missingICECredentials(mid: mid)
        }
        guard let fingerprint = (section.fingerprints + session.fingerprints).first(where: \.isSHA256) else {
            throw .missingSHA256Fingerprint(mid: mid)
        }
        guard section.has(.rtcpMux) else { throw .missingRTCPMux(mid: mid) }
        if let setup = section.setup ?? session.setup, setup == .passive || setup == .holdconn {
            throw .unsupportedSetup(mid: mid, setup.rawValue)
        }
        return (ufrag, pwd, fingerprint)
    }

    /// The session-level transport, for an offer where the relay accepts no section (its answer rejects them all).
    private static func sessionTransport(_ offer: SessionDescription) throws(SDPError) -> (
        ufrag: String, pwd: String, fingerprint: Fingerprint
    ) {
        let first = offer.media.first
        let mid = first?.mid ?? "-"
        guard let ufrag = first?.iceUfrag ?? offer.iceUfrag, let pwd = first?.icePwd ?? offer.icePwd else {
            throw .missingICECredentials(mid: mid)
        }
        guard let fingerprint = ((first?.fingerprints ?? []) + offer.fingerprints).first(where: \.isSHA256) else {
            throw .missingSHA256Fingerprint(mid: mid)
        }
        return (ufrag, pwd, fingerprint)
    }
}
