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
        let seeds: [String: [[UInt8]]] = [
            "rtp": rtp, "rtcp": rtcp, "vp8": [Array(rtp[1][12...]), [0x80, 0x00, 0x31, 0x00, 0x00]],
            "opus": [[0x78], [0xfc, 0xff, 0xfe], [0x03, 0x05, 0x01, 0x02]],
            "signaling": client.map { Array($0.encoded().utf8) } + server.map { Array($0.encoded().utf8) }
                + messaging.map { Array($0.utf8) },
            "bind": [bind, ack], "jitter": [jitter], "y4m": [y4m], "wav": [wav],
            "feedback": feedback, "share": share, "marks": marks,
        ]
        for (target, inputs) in seeds {
            let folder = root + "/" + target
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (index, bytes) in inputs.enumerated() {
                try Data(bytes).write(to: URL(fileURLWithPath: folder + "/seed-\(index)"))
            }
        }
    }
}
