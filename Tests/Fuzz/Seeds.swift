// Writes the seed corpus (Tests/Fuzz/Corpus/TARGET/seed-N) from Parley's own serializers: `make fuzz-seeds`.
// Compiled with the parsers' sources into one program; not part of the package.
import Foundation

@main
struct Seeds {
    static func main() throws {
        let root = CommandLine.arguments.dropFirst().first ?? "Tests/Fuzz/Corpus"
        let ssrc: UInt32 = 0x1234_5678
        let members = MemberSSRCs(block: 0x1000)
        let rtp = [
            RTPPacket(
                header: RTPHeader(
                    marker: true, payloadType: MediaPayloadType.opus, sequenceNumber: 1,
                    timestamp: 960, ssrc: ssrc), payload: [0x78, 1, 2, 3]
            ).serialized(),
            RTPPacket(
                header: RTPHeader(
                    marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: 65535,
                    timestamp: 3000, ssrc: ssrc),
                payload: [0x90, 0x80, 0x80, 0x01, 0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xf0, 0x00]
            )
            .serialized(),
            RTPPacket(
                header: RTPHeader(
                    marker: false, payloadType: MediaPayloadType.opus, sequenceNumber: 2,
                    timestamp: 1920, ssrc: ssrc,
                    headerExtension: AudioLevelIndication(voiceActivity: true, level: 30)
                        .headerExtension), payload: [0x78, 1]
            ).serialized(),
        ]
        let bind = BindRequest(ssrc: members.audio, memberID: 7, token: BindToken(bytes: Array(0..<16))!).serialized()
        let ack = BindAcknowledgement(ssrc: members.audio, memberID: 7, status: .bound).serialized()
        let rtcp: [[UInt8]] = [
            RTCPPacket.receiverReport(
                ReceiverReport(
                    ssrc: ssrc,
                    reports: [
                        ReportBlock(
                            ssrc: 9, fractionLost: 3, cumulativeLost: 12, extendedHighestSequenceNumber: 70_000,
                            jitter: 40)
                    ])
            )
            .serialized(),
            RTCPPacket.nack(GenericNACK(senderSSRC: ssrc, mediaSSRC: 9, lost: [1, 2, 3, 40])).serialized()
                + RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: ssrc, mediaSSRC: 9)).serialized(),
            RTCPPacket.sourceDescription(SourceDescription(ssrc: ssrc, cname: "alice@parley")).serialized()
                + RTCPPacket.goodbye(Goodbye(ssrcs: [ssrc], reason: "left")).serialized(),
            bind,
        ]
        let client: [ClientMessage] = [
            .join(JoinRequest(room: "standup", name: "alice")), .mute(MuteChange(audio: true, video: false)),
            .chat(ChatSend(text: "hello ✓", ref: "r1")), .ping(KeepAlive(token: 42)), .allow(MemberRef(id: 3)),
            .leave,
            .join(
                JoinRequest(
                    room: "standup", name: "Ally",
                    account: AccountClaim(
                        name: "alice",
                        signature: String(repeating: "A", count: 86) + "=="),
                    hideRoom: true)),
            .join(
                JoinRequest(
                    room: "standup", name: "bob",
                    videoLayers: [
                        VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
                        VideoLayerSize(width: 160, height: 90),
                    ])),
            .tiles(
                TileReport(tiles: [TileSize(id: 2, width: 196, height: 110), TileSize(id: 3, width: 0, height: 0)])),
        ]
        let server: [ServerMessage] = [
            .joined(
                JoinedRoom(
                    room: "standup",
                    you: MemberInfo(
                        id: 1, name: "alice", role: .broadcaster,
                        audioMuted: false, videoMuted: false, ssrcs: members),
                    members: [],
                    media: MediaGrant(
                        udpPort: 7878, credential: String(repeating: "ab", count: 16),
                        ssrcs: members), livenessTimeout: 10)),
            .memberLeft(MemberLeft(id: 2, reason: .quit)), .mute(MemberMute(id: 2, audio: true, video: true)),
            .error(SignalingError(.limitReached, "room standup is full")), .pong(KeepAlive(token: 42)),
            .chatHistory(
                ChatHistory(
                    room: "standup",
                    lines: [
                        ChatHistoryLine(kind: "message", from: "carol (guest)", text: "agenda ✓", time: 1),
                        ChatHistoryLine(kind: "call-joined", from: "alice", text: "", time: 2, members: 2),
                    ])),
            .videoLayers(VideoLayerDemand(active: [true, false, true])), .dominantSpeaker(DominantSpeakerNotice(id: 3)),
        ]
        let messaging: [String] = [
            MessagingRequest.login(AccountCard(name: "alice", signingKey: "AAAA", agreementKey: "BBBB")).encoded(),
            MessagingRequest.send(DirectMessageSend(id: "m1", to: "bob", sealed: "AQID", senderCopy: "AQID")).encoded(),
            MessagingRequest.received(DeliveryReceipt(sequences: [1, 2, 3])).encoded(),
            MessagingRequest.channelPost(ChannelPostSend(channel: "team", id: "p1", text: "hello ✓")).encoded(),
            MessagingRequest.watch(WatchList(names: ["bob", "carol"])).encoded(),
            MessagingEvent.message(
                DirectMessageDelivery(
                    sequence: 4, id: "m1", from: "alice", to: "bob", sealed: "AQID",
                    sentAt: 1, inHistory: true)
            ).encoded(),
            MessagingEvent.conversation(ConversationLine(kind: "channel", name: "team", unread: 2, lastAt: 3))
                .encoded(),
        ]
        var jitter: [UInt8] = []
        for (index, packet) in (rtp + rtp).enumerated() {
            jitter += [UInt8(index * 2), UInt8(packet.count >> 8), UInt8(packet.count & 0xFF)] + packet
            jitter += [21, 0, 0]
        }
        let y4m = Array("YUV4MPEG2 W4 H2 F30:1 Ip A1:1 C420jpeg\nFRAME\n".utf8) + [UInt8](repeating: 128, count: 12)
        // Small deltas in a run; a two-bit vector with a lost packet, a large and a negative delta; a one-bit vector
        // then a run of losses.
        let feedbackCases: [(base: UInt16, count: UInt8, arrivals: [Int64?])] = [
            (1, 9, [260, 264, 268]), (65_530, 3, [1_000, nil, 1_010, 4_900, 4_890]),
            (100, 0, [7] + [Int64?](repeating: nil, count: 40)),
        ]
        let feedback = feedbackCases.compactMap { seed in
            try? TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequence: seed.base, feedbackCount: seed.count, arrivals: seed.arrivals
            ).raw().body
        }
        let wav = WAVAudio(sampleRate: 48_000, channels: 1, samples: [0, 1000, -1000, 32767, -32768]).encoded()
        // A full screen with text in three styles and a wide character, then the changes of a line typed.
        var before = TerminalScreen(rows: 3, columns: 8, cursor: ShareCursor(row: 1, column: 2))
        before[0, 0] = ShareCell("$")
        before[0, 2] = ShareCell("l", style: ShareStyle(foreground: .indexed(2), attributes: [.bold]))
        before[1, 0] = ShareCell("日", width: 2, style: ShareStyle(background: .rgb(red: 1, green: 2, blue: 3)))
        before[1, 1] = ShareCell("", width: 0, style: ShareStyle(background: .rgb(red: 1, green: 2, blue: 3)))
        var after = before
        after[2, 0] = ShareCell("e\u{301}")
        after.cursor = ShareCursor(row: 2, column: 1, visible: false)
        let share = [
            ShareUpdate.between(nil, before, sequence: 1).encoded(),
            ShareUpdate.between(before, after, sequence: 2).encoded(),
        ]
        // A plain mark, a probe's mark with padding, and a probe request (each an APP packet's data).
        func data(_ packet: RTCPPacket) -> [UInt8] {
            guard case .application(let app) = packet else { return [] }
            return app.data
        }
        let marks = [
            data(SendTimeMark(mediaSSRC: 7, sentAt: 1_000_000).rtcpPacket),
            data(
                SendTimeMark(mediaSSRC: 7, sentAt: 5, probe: ProbeTag(cluster: 1, index: 2, count: 5), padding: 16)
                    .rtcpPacket),
            data(ProbeRequest(ssrc: 7, cluster: 3, kbps: 400).rtcpPacket),
        ]
        // Browser offers in Chromium's shape (Tests/ParleyWebRTCTests/SDPFixtures.swift), made with the SDP model:
        // audio, simulcast video and data; audio alone with SSRCs and session-level ICE; video with SSRC groups and
        // a rejected section; then the relay's answer to the first.
        let offers = [
            browserOffer(audio: true, video: .simulcast, data: true),
            browserOffer(audio: true, video: nil, data: false, sessionTransport: true),
            browserOffer(audio: false, video: .ssrcGroups, data: true),
        ]
        var sdp = offers.map { Array($0.description.utf8) }
        sdp.append(Array(try BrowserOffer(offers[0]).answer(with: relayAnswer).description.utf8))
        // A check as Chrome sends it to the `stun` target's agent (its ufrags and password: FuzzTargets.swift), signed
        // with the fuzz build's stand-in integrity; the same without USE-CANDIDATE, one claiming ICE-CONTROLLED; a
        // success response and an error response.
        let transaction: [UInt8] = [0x4a, 0x6f, 0x9c, 0x21, 0x03, 0xb7, 0x5e, 0x88, 0x10, 0xd2, 0x7f, 0x3c]
        let password = Array("relay-password-22chars".utf8)
        func check(nominate: Bool, controlled: Bool = false) -> [UInt8] {
            var attributes: [STUNAttribute] = [
                .username("relayU:brwsr"),
                STUNAttribute(type: 0xC057, value: [0x00, 0x01, 0x00, 0x0a]),  // GOOG-NETWORK-INFO
                STUNAttribute(type: STUNAttribute.Kind.priority.rawValue, value: [0x6e, 0x7f, 0x1e, 0xff]),
                STUNAttribute(
                    type: (controlled ? STUNAttribute.Kind.iceControlled : .iceControlling).rawValue,
                    value: [0x9b, 0x2c, 0x41, 0x07, 0xe3, 0x5a, 0x66, 0x18]),
            ]
            if nominate { attributes.append(STUNAttribute(type: STUNAttribute.Kind.useCandidate.rawValue, value: [])) }
            return STUNMessage(kind: .request, transactionID: transaction, attributes: attributes)
                .encoded(integrityKey: password, fingerprint: true)
        }
        let browserAddress = TransportAddress(host: [192, 168, 1, 23], port: 53_771)!
        let stun = [
            check(nominate: true), check(nominate: false), check(nominate: false, controlled: true),
            STUNMessage(
                kind: .success, transactionID: transaction,
                attributes: [.xorMappedAddress(browserAddress, transactionID: transaction)]
            ).encoded(integrityKey: password),
            STUNMessage(
                kind: .error, transactionID: transaction, attributes: [.errorCode(401, reason: "Unauthorized")]
            ).encoded(),
        ]
        let seeds: [String: [[UInt8]]] = [
            "rtp": rtp, "rtcp": rtcp, "vp8": [Array(rtp[1][12...]), [0x80, 0x00, 0x31, 0x00, 0x00]],
            "opus": [[0x78], [0xfc, 0xff, 0xfe], [0x03, 0x05, 0x01, 0x02]],
            "signaling": client.map { Array($0.encoded().utf8) } + server.map { Array($0.encoded().utf8) }
                + messaging.map { Array($0.utf8) },
            "bind": [bind, ack], "jitter": [jitter], "y4m": [y4m], "wav": [wav],
            "feedback": feedback, "share": share, "marks": marks, "sdp": sdp, "stun": stun,
        ]
        for (target, inputs) in seeds {
            let folder = root + "/" + target
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (index, bytes) in inputs.enumerated() {
                try Data(bytes).write(to: URL(fileURLWithPath: folder + "/seed-\(index)"))
            }
        }
    }

    /// The relay's answer parameters for the `sdp` seed's answer (the `sdp` target's own, in FuzzTargets.swift).
    static let relayAnswer = AnswerParameters(
        iceUfrag: "relayU", icePwd: "relay0password0of0ice0chars",
        fingerprint: Fingerprint(hashFunction: "sha-256", bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) }),
        address: "203.0.113.7", port: 40_000, sessionID: 7, sessionVersion: 2,
        choices: [
            "0": MediaChoice(
                send: RelaySource(ssrc: 5001, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "a"))),
            "1": MediaChoice(
                send: RelaySource(
                    ssrc: 5002, rtxSSRC: 5003, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "v"))),
        ])

    /// How the video section of a seed offer sends: rid-based simulcast q;h;f, or SSRCs in FID and SIM groups.
    enum VideoShape { case simulcast, ssrcGroups }

    /// A Chromium-like offer: BUNDLE of every section, opus audio, VP8 (+ RTX) video and VP9 beside it, a data
    /// channel; ICE and the fingerprint in each section, or once at session level.
    static func browserOffer(audio: Bool, video: VideoShape?, data: Bool, sessionTransport: Bool = false)
        -> SessionDescription
    {
        let stream = "5b0e6f1c-7a4d-4c2e-9e1b-3f8d2a6c4b70"
        let transport = [
            SDPAttribute(name: "ice-ufrag", value: "Qx7n"),
            SDPAttribute(name: "ice-pwd", value: "v3Bq9ZkLr2TfYw8Hs1NpUe4c"),
            SDPAttribute(name: "ice-options", value: "trickle"),
            SDPAttribute(Fingerprint(hashFunction: "sha-256", bytes: (0..<32).map { UInt8(0x9F ^ ($0 * 13 & 0xFF)) })),
            SDPAttribute(SetupRole.actpass),
        ]
        var mids: [String] = []
        var media: [MediaDescription] = []
        func section(_ kind: MediaKind, _ proto: String, _ formats: [String], _ lines: [SDPAttribute]) {
            let mid = "\(media.count)"
            mids.append(mid)
            media.append(
                MediaDescription(
                    kind: kind, port: 9, proto: proto, formats: formats,
                    connections: [ConnectionData(address: "0.0.0.0")],
                    attributes: (sessionTransport ? [] : transport) + [SDPAttribute(name: "mid", value: mid)] + lines))
        }
        if audio {
            let track = "0c2d9a4e-1f3b-4e6a-8d7c-2b5e9f1a3c60"
            section(
                .audio, "UDP/TLS/RTP/SAVPF", ["111", "63", "9", "0", "126"],
                [
                    SDPAttribute(name: "rtcp", value: "9 IN IP4 0.0.0.0"),
                    SDPAttribute(ExtensionMap(id: 1, uri: "urn:ietf:params:rtp-hdrext:ssrc-audio-level")),
                    SDPAttribute(
                        ExtensionMap(
                            id: 3, uri: "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01")),
                    SDPAttribute(ExtensionMap(id: 4, uri: "urn:ietf:params:rtp-hdrext:sdes:mid")),
                    MediaDirection.sendrecv.attribute, SDPAttribute(MediaStreamID(stream: stream, track: track)),
                    .rtcpMux, .rtcpRsize,
                    SDPAttribute(RTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2)),
                    SDPAttribute(RTCPFeedback(payloadType: 111, type: "transport-cc")),
                    SDPAttribute(
                        FormatParameters(
                            payloadType: 111,
                            parameters: [SDPParameter("minptime", "10"), SDPParameter("useinbandfec", "1")])),
                    SDPAttribute(RTPMap(payloadType: 63, encoding: "red", clockRate: 48_000, channels: 2)),
                    SDPAttribute(FormatParameters(payloadType: 63, parameters: [SDPParameter("111/111")])),
                    SDPAttribute(RTPMap(payloadType: 9, encoding: "G722", clockRate: 8_000)),
                    SDPAttribute(RTPMap(payloadType: 0, encoding: "PCMU", clockRate: 8_000)),
                    SDPAttribute(RTPMap(payloadType: 126, encoding: "telephone-event", clockRate: 8_000)),
                    SDPAttribute(SSRCAttribute(ssrc: 2_718_281_828, attribute: "cname", value: "Hq3vX9mTzL0aPe4w")),
                    SDPAttribute(SSRCAttribute(ssrc: 2_718_281_828, attribute: "msid", value: "\(stream) \(track)")),
                ])
        }
        if let video {
            let track = "e7a1c3b5-9d2f-4a6e-8c0b-1d3f5a7c9e20"
            var lines: [SDPAttribute] = [
                SDPAttribute(ExtensionMap(id: 2, uri: "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time")),
                SDPAttribute(ExtensionMap(id: 13, direction: .sendrecv, uri: "urn:3gpp:video-orientation")),
                SDPAttribute(ExtensionMap(id: 4, uri: "urn:ietf:params:rtp-hdrext:sdes:mid")),
                SDPAttribute(ExtensionMap(id: 10, uri: "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id")),
                SDPAttribute(ExtensionMap(id: 11, uri: "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id")),
                MediaDirection.sendrecv.attribute, SDPAttribute(MediaStreamID(stream: stream, track: track)),
                .rtcpMux, .rtcpRsize,
            ]
            for (codec, rtx) in [(96, 97), (98, 99)] {
                lines.append(
                    SDPAttribute(
                        RTPMap(payloadType: UInt8(codec), encoding: codec == 96 ? "VP8" : "VP9", clockRate: 90_000)))
                for (type, parameter) in [
                    ("goog-remb", nil), ("transport-cc", nil), ("ccm", "fir"), ("nack", nil), ("nack", "pli"),
                ] {
                    lines.append(
                        SDPAttribute(RTCPFeedback(payloadType: UInt8(codec), type: type, parameter: parameter)))
                }
                lines.append(SDPAttribute(RTPMap(payloadType: UInt8(rtx), encoding: "rtx", clockRate: 90_000)))
                lines.append(
                    SDPAttribute(
                        FormatParameters(payloadType: UInt8(rtx), parameters: [SDPParameter("apt", "\(codec)")])))
            }
            switch video {
            case .simulcast:
                let rids = ["q", "h", "f"]
                lines += rids.map { SDPAttribute(RIDDescription(id: $0, direction: .send)) }
                lines.append(SDPAttribute(Simulcast(send: rids.map { [SimulcastStream(rid: $0)] })))
            case .ssrcGroups:
                let layers: [(UInt32, UInt32)] = [(1001, 2001), (1002, 2002), (1003, 2003)]
                lines.append(SDPAttribute(SSRCGroup(semantics: "SIM", ssrcs: layers.map(\.0))))
                for (ssrc, rtx) in layers {
                    lines.append(SDPAttribute(SSRCGroup(semantics: "FID", ssrcs: [ssrc, rtx])))
                    for source in [ssrc, rtx] {
                        lines.append(
                            SDPAttribute(SSRCAttribute(ssrc: source, attribute: "cname", value: "Hq3vX9mTzL0aPe4w")))
                    }
                }
            }
            section(.video, "UDP/TLS/RTP/SAVPF", ["96", "97", "98", "99"], lines)
        }
        if data {
            section(
                .application, "UDP/DTLS/SCTP", ["webrtc-datachannel"],
                [
                    SDPAttribute(name: "sctp-port", value: "5000"),
                    SDPAttribute(name: "max-message-size", value: "262144"),
                ])
        }
        var session = SessionDescription(
            origin: Origin(sessionID: "4611731400430051336", sessionVersion: 2),
            attributes: [SDPAttribute(MediaGroup(semantics: "BUNDLE", mids: mids)), .extmapAllowMixed]
                + (sessionTransport ? transport : [])
                + [SDPAttribute(name: "msid-semantic", value: " WMS \(stream)")],
            media: media)
        if video == .ssrcGroups {
            // A section the browser stopped: port 0, no mid, outside BUNDLE.
            session.media.append(
                MediaDescription(
                    kind: .audio, port: 0, proto: "UDP/TLS/RTP/SAVPF", formats: ["0"],
                    connections: [ConnectionData(address: "0.0.0.0")]))
        }
        return session
    }
}
