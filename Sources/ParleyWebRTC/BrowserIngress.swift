import ParleyWire

/// What a browser sends, made into what a Parley member sends: its SSRCs become the member's block (audio, and the
/// video layers by rid), its payload types Parley's, its audio level extension Parley's (RFC 6464 at id 1), and every
/// other header extension is dropped, so the relay's routing, dominant speaker, layer choice and recording see a
/// browser as any member. Its transport-wide sequence numbers (transport-cc) move to Parley's extension id, so the
/// relay's uplink feedback reports on them as on a member's, and Chrome's estimate follows what arrived.
///
/// Chromium's simulcast names no SSRCs in its offer: each layer's SSRC is learned from the rid extension its first
/// packets carry (it sends it until the receiver's reports acknowledge the SSRC). The page's layers are `f` (full
/// size), `h` (half) and `q` (a quarter): Parley's layers 0, 1 and 2.
public struct BrowserIngress: Sendable {
    /// What became of one packet.
    public enum Outcome: Equatable, Sendable {
        /// The packet as the member's own.
        case forward([UInt8])
        /// Not forwarded, and why (counted).
        case dropped(BrowserIngressError)
    }

    /// The transport-wide sequence number extension (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    public static let transportSequenceURI =
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
    /// The rid of each of Parley's video layers, largest first.
    public static let layerRIDs = ["f", "h", "q"]
    /// The most browser SSRCs remembered (three layers, their RTX, the microphone).
    public static let maximumSSRCs = 8

    /// The member's SSRCs.
    public let member: MemberSSRCs
    private let audioPayloadType: UInt8?
    private let videoPayloadType: UInt8?
    private let retransmissionPayloadType: UInt8?
    private let audioSSRCs: Set<UInt32>
    private let audioLevelID: UInt16?
    private let audioTransportSequenceID: UInt16?
    private let videoTransportSequenceID: UInt16?
    private let ridID: UInt16?
    private let videoHasRIDs: Bool
    /// Each video SSRC learned, and the layer it carries.
    public private(set) var layers: [UInt32: Int] = [:]
    /// What is added to each video SSRC's timestamps: Chromium starts every simulcast layer at a random timestamp,
    /// a Parley sender all its layers on one clock, and a Parley receiver tells a switch's keyframe from a stale one
    /// by its timestamp against the last frame shown (on Chromium's own timestamps half its switches never came).
    private var timestampOffsets: [UInt32: UInt32] = [:]
    /// The first video SSRC's last timestamp and when it arrived: the clock every layer is put on.
    private var reference: (ssrc: UInt32, timestamp: UInt32, at: Duration)?

    /// The ingress of a browser whose offer is `offer`, joined as a member with `member`'s SSRCs.
    public init(offer: BrowserOffer, member: MemberSSRCs) {
        self.member = member
        let audio = offer.media.first { $0.kind == .audio && $0.isAccepted }
        let video = offer.media.first { $0.kind == .video && $0.isAccepted }
        audioPayloadType = audio?.codec?.rtpMap.payloadType
        videoPayloadType = video?.codec?.rtpMap.payloadType
        retransmissionPayloadType = video?.codec?.rtxPayloadType
        audioSSRCs = Set(audio?.ssrcs ?? [])
        audioLevelID = audio?.extensionIDs["urn:ietf:params:rtp-hdrext:ssrc-audio-level"]
        audioTransportSequenceID = audio?.extensionIDs[Self.transportSequenceURI]
        videoTransportSequenceID = video?.extensionIDs[Self.transportSequenceURI]
        ridID = video?.extensionIDs["urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"]
        videoHasRIDs = !(video?.rids.isEmpty ?? true)
        // Without simulcast the offer's first SSRC is the camera, sent as the full-size layer.
        if let video, !videoHasRIDs, let camera = video.ssrcs.first { layers[camera] = 0 }
    }

    /// One decrypted RTP packet from the browser, arrived at `now`, as the member's.
    public mutating func receive(_ bytes: [UInt8], at now: Duration = .zero) -> Outcome {
        guard var packet = try? RTPPacket(parsing: bytes) else { return .dropped(.notRTP) }
        let type = packet.header.payloadType
        let elements = (try? packet.header.headerExtension?.elements()) ?? []
        if type == audioPayloadType {
            guard audioSSRCs.isEmpty || audioSSRCs.contains(packet.header.ssrc) else {
                return .dropped(.unknownSSRC(packet.header.ssrc))
            }
            packet.header.ssrc = member.audio
            packet.header.payloadType = MediaPayloadType.opus
            let level = audioLevelID.flatMap { id in elements.first { UInt16($0.id) == id } }
            packet.header.headerExtension = level.flatMap { element in
                element.data.first.map {
                    AudioLevelIndication(voiceActivity: $0 & 0x80 != 0, level: $0 & 0x7F).headerExtension
                }
            }
            if let sequence = Self.sequence(in: elements, id: audioTransportSequenceID) {
                packet.header.headerExtension = TransportSequence.stamp(sequence, onto: packet.header.headerExtension)
            }
            return .forward(packet.serialized())
        }
        if type == retransmissionPayloadType { return .dropped(.retransmission) }
        guard type == videoPayloadType else { return .dropped(.unknownPayloadType(type)) }
        if layers[packet.header.ssrc] == nil, videoHasRIDs, let ridID,
            let element = elements.first(where: { UInt16($0.id) == ridID })
        {
            let rid = String(decoding: element.data, as: UTF8.self)
            guard let layer = Self.layerRIDs.firstIndex(of: rid) else { return .dropped(.unknownRID(rid)) }
            guard layers.count < Self.maximumSSRCs else { return .dropped(.tooManySSRCs(limit: Self.maximumSSRCs)) }
            // A layer's SSRC changes when the browser restarts its sender: the old one is forgotten.
            for (old, _) in layers where layers[old] == layer { timestampOffsets[old] = nil }
            layers = layers.filter { $0.value != layer }
            layers[packet.header.ssrc] = layer
            if reference.map({ layers[$0.ssrc] == nil }) ?? false { reference = nil }
        }
        guard let layer = layers[packet.header.ssrc] else { return .dropped(.unknownSSRC(packet.header.ssrc)) }
        packet.header.timestamp = onCommonClock(packet.header.timestamp, of: packet.header.ssrc, at: now)
        packet.header.ssrc = member.videoLayer(layer)
        packet.header.payloadType = MediaPayloadType.vp8
        packet.header.headerExtension = Self.sequence(in: elements, id: videoTransportSequenceID).map {
            TransportSequence.stamp($0, onto: nil)
        }
        return .forward(packet.serialized())
    }

    /// The transport-wide sequence number of a packet that is not forwarded (an RTX resend, Chromium's padding
    /// probes): it arrived all the same, and the feedback must say so, or Chromium takes its probes for losses.
    public func arrivalSequence(_ bytes: [UInt8]) -> UInt16? {
        guard let packet = try? RTPPacket(parsing: bytes) else { return nil }
        let elements = (try? packet.header.headerExtension?.elements()) ?? []
        return Self.sequence(in: elements, id: videoTransportSequenceID)
            ?? Self.sequence(in: elements, id: audioTransportSequenceID)
    }

    /// `timestamp` of `ssrc` on the first video SSRC's clock: a layer seen for the first time is taken to be at
    /// the time the first SSRC's clock shows now (its last timestamp, run on by the 90 kHz since it arrived), which
    /// is right to within the few milliseconds between the layers' packets of one frame.
    private mutating func onCommonClock(_ timestamp: UInt32, of ssrc: UInt32, at now: Duration) -> UInt32 {
        guard let reference else {
            self.reference = (ssrc, timestamp, now)
            timestampOffsets[ssrc] = 0
            return timestamp
        }
        if ssrc == reference.ssrc {
            if Int32(bitPattern: timestamp &- reference.timestamp) > 0 { self.reference = (ssrc, timestamp, now) }
            return timestamp
        }
        if let offset = timestampOffsets[ssrc] { return timestamp &+ offset }
        let elapsed = UInt32(
            truncatingIfNeeded: Int64((max(.zero, now - reference.at) / .seconds(1) * 90_000).rounded()))
        let offset = reference.timestamp &+ elapsed &- timestamp
        timestampOffsets[ssrc] = offset
        return timestamp &+ offset
    }

    private static func sequence(in elements: [RTPHeaderExtensionElement], id: UInt16?) -> UInt16? {
        guard let id, let element = elements.first(where: { UInt16($0.id) == id }), element.data.count == 2 else {
            return nil
        }
        return UInt16(element.data[0]) << 8 | UInt16(element.data[1])
    }
}

/// Why a browser's packet was not forwarded.
public enum BrowserIngressError: Error, Equatable, Sendable, CustomStringConvertible {
    case notRTP
    case unknownPayloadType(UInt8)
    case unknownSSRC(UInt32)
    case unknownRID(String)
    case tooManySSRCs(limit: Int)
    case retransmission

    public var description: String {
        switch self {
        case .notRTP: "not an RTP packet"
        case .unknownPayloadType(let type): "payload type \(type) is neither the offer's Opus nor its VP8"
        case .unknownSSRC(let ssrc): "SSRC \(ssrc) was never named by the offer or a rid extension"
        case .unknownRID(let rid): "rid \(rid) is none of f, h, q"
        case .tooManySSRCs(let limit): "more than \(limit) SSRCs from one browser"
        case .retransmission: "an RTX retransmission (the relay repairs loss toward members itself)"
        }
    }
}
