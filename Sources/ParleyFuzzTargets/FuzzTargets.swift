// The inputs libFuzzer drives through Parley's parsers (`make fuzz`), and that `make test` replays from the
// committed corpus and crash folders (Tests/Fuzz). Compiled twice: as this library for the tests, and together with
// the parsers' own sources into one instrumented module for the fuzzer, hence the conditional imports.
#if canImport(ParleyWire)
import ParleyWire
#endif
#if canImport(ParleyMedia)
import ParleyMedia
#endif
#if canImport(ParleyWebRTC)
import ParleyWebRTC
#endif

/// One fuzz target: a name (its corpus folder) and what it does with one input.
public struct FuzzTarget: Sendable {
    /// The folder name under Tests/Fuzz/Corpus and Tests/Fuzz/Crashes.
    public let name: String
    /// Runs one input; a crash, a trap or a sanitizer report is a finding.
    public let run: @Sendable ([UInt8]) -> Void

    /// Every target.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "rtp", run: rtp), FuzzTarget(name: "rtcp", run: rtcp), FuzzTarget(name: "vp8", run: vp8),
        FuzzTarget(name: "opus", run: opus), FuzzTarget(name: "signaling", run: signaling),
        FuzzTarget(name: "bind", run: bind), FuzzTarget(name: "jitter", run: jitter),
        FuzzTarget(name: "y4m", run: y4m), FuzzTarget(name: "wav", run: wav),
        FuzzTarget(name: "feedback", run: feedback), FuzzTarget(name: "share", run: share),
        FuzzTarget(name: "marks", run: marks), FuzzTarget(name: "sdp", run: sdp), FuzzTarget(name: "stun", run: stun),
    ]

    /// The target called `name`, if any.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// RTP: the packet and header-view parsers agree, and a parsed packet survives serialize → parse unchanged.
    @Sendable static func rtp(_ bytes: [UInt8]) {
        let packet = try? RTPPacket(parsing: bytes)
        let view = bytes.withUnsafeBytes { try? RTPHeaderView(parsing: $0) }
        precondition((packet == nil) == (view == nil), "RTPPacket and RTPHeaderView disagree on \(bytes)")
        if let packet {
            precondition((try? RTPPacket(parsing: packet.serialized())) == packet, "RTP round trip changed \(bytes)")
            // The relay's in-place audio level reader finds whatever the element parser finds.
            if let level = packet.header.headerExtension.flatMap(AudioLevelIndication.init) {
                let inPlace = bytes.withUnsafeBytes { raw in
                    (try? RTPHeaderView(parsing: raw)).flatMap { AudioLevelIndication(packet: raw, header: $0) }
                }
                precondition(inPlace == level, "audio level readers disagree on \(bytes)")
            }
        }
    }

    /// Transport-wide feedback: a parsed packet survives write → parse unchanged, and a sender matches it against
    /// what it sent without trapping.
    @Sendable static func feedback(_ bytes: [UInt8]) {
        guard let parsed = try? TransportFeedback(body: bytes) else { return }
        guard let raw = try? parsed.raw() else { preconditionFailure("a parsed feedback cannot be written: \(bytes)") }
        precondition((try? TransportFeedback(raw)) == parsed, "feedback round trip changed \(bytes)")
        var estimator = BandwidthEstimator()
        for index in 0..<64 { _ = estimator.sent(size: 1_200, at: Double(index)) }
        estimator.feedback(parsed, at: 100)
        precondition(estimator.target.isFinite && estimator.target > 0, "estimate \(estimator.target) from \(bytes)")
    }

    /// The relay's send-time marks and a member's probe request (the data of an RTCP APP packet): a parsed one
    /// survives write → parse unchanged; marks made of the input's bytes, fed to a downlink estimate and a probe's
    /// judgement, never trap and leave the estimate finite and above its floor.
    @Sendable static func marks(_ bytes: [UInt8]) {
        for name: RTCPAppName in [SendTimeMark.name, ProbeRequest.name] {
            let app = ApplicationPacket(subtype: 0, ssrc: 7, name: name, data: bytes)
            if let mark = SendTimeMark(app) {
                guard
                    case .application(let written)? = try? RTCPPacket.parseCompound(mark.rtcpPacket.serialized()).first
                else { preconditionFailure("a parsed mark cannot be written: \(bytes)") }
                precondition(SendTimeMark(written) == mark, "mark round trip changed \(bytes)")
            }
            if let request = ProbeRequest(app) {
                guard
                    case .application(let written)? = try? RTCPPacket.parseCompound(request.rtcpPacket.serialized())
                        .first
                else { preconditionFailure("a parsed request cannot be written: \(bytes)") }
                precondition(ProbeRequest(written) == request, "request round trip changed \(bytes)")
            }
        }
        // Each four bytes: a send time's step and an arrival's (ms, signed), a probe mark's index and count.
        var estimator = DownlinkEstimator()
        var probe = DownlinkProbe()
        _ = probe.start(at: 0, estimate: 500_000, held: true, calmSince: -10_000)
        var sent = 0.0
        var arrived = 0.0
        var received = 0
        var offset = 0
        while offset + 4 <= bytes.count {
            sent += Double(Int8(bitPattern: bytes[offset]))
            arrived += Double(Int8(bitPattern: bytes[offset + 1]))
            received += Int(bytes[offset + 2]) * 16
            let count = UInt16(bytes[offset + 3] & 0x7F) + 1
            let tag = ProbeTag(cluster: 1, index: UInt16(bytes[offset + 2]) % count, count: count)
            estimator.marked(sentAt: sent, at: arrived, arrivedBytes: received)
            if let outcome = probe.marked(tag, sentAt: sent, at: arrived, arrivedBytes: received) {
                estimator.probeFound(outcome, at: arrived)
            }
            offset += 4
        }
        estimator.update(at: arrived + 1_000, bytes: received, expected: bytes.count, lost: Int(bytes.first ?? 0))
        if let estimate = estimator.estimate {
            precondition(
                estimate.isFinite && estimate >= DownlinkEstimator.minimum,
                "downlink estimate \(estimate) from \(bytes)")
        }
    }

    /// The relay's side of the `sdp` target's answers: fixed, valid parameters that send on mids "0" and "1" (so the
    /// answer's msid and ssrc lines are written) and receive on both.
    static let relayAnswer = AnswerParameters(
        iceUfrag: "relayU", icePwd: "relay0password0of0ice0chars",
        fingerprint: Fingerprint(
            hashFunction: "sha-256", bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) }),
        address: "203.0.113.7", port: 40_000, sessionID: 7, sessionVersion: 2,
        choices: [
            "0": MediaChoice(
                send: RelaySource(ssrc: 5001, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "a"))),
            "1": MediaChoice(
                send: RelaySource(
                    ssrc: 5002, rtxSSRC: 5003, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "v"))),
        ])

    /// Session descriptions (SDP) as a browser sends them: a parsed one prints to text that parses back equal; when
    /// it reads as an offer, the relay's answer with fixed parameters is made without trapping and without throwing
    /// (the parameters are valid), and prints to text that parses back equal.
    @Sendable static func sdp(_ bytes: [UInt8]) {
        guard let parsed = try? SessionDescription(parsing: bytes) else { return }
        let printed = parsed.description
        precondition(
            (try? SessionDescription(parsing: printed)) == parsed,
            "SDP round trip changed \(String(decoding: bytes, as: UTF8.self).debugDescription) into "
                + printed.debugDescription)
        guard let offer = try? BrowserOffer(parsed) else { return }
        guard let answer = try? offer.answer(with: relayAnswer) else {
            preconditionFailure("no answer to \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
        let answerText = answer.description
        precondition(
            (try? SessionDescription(parsing: answerText)) == answer,
            "the answer \(answerText.debugDescription) does not parse back equal; offer: "
                + String(decoding: bytes, as: UTF8.self).debugDescription)
    }

    /// The `stun` target's ICE-lite session: the relay's and the browser's ufrags and the relay's password (the
    /// seeds' checks in Tests/Fuzz/Seeds.swift are made for these).
    static let iceSession = (localUfrag: "relayU", localPassword: "relay-password-22chars", remoteUfrag: "brwsr")

    /// STUN (RFC 8489) as ICE-lite receives it: a parsed message written again (no integrity, a fingerprint) parses
    /// back the same with a valid fingerprint; checking integrity and fingerprint never traps; the relay's agent,
    /// given it from an IPv4 and then an IPv6 address, answers with a success response that parses, is fingerprinted
    /// and signed and maps the source, and refuses with an error response that parses, if any.
    @Sendable static func stun(_ bytes: [UInt8]) {
        guard let received = try? ReceivedSTUN(parsing: bytes) else { return }
        let password = Array(iceSession.localPassword.utf8)
        _ = received.fingerprintIsValid
        _ = received.integrityIsValid(key: password)
        _ = received.integrityIsValid(key: [])
        let written = received.message.encoded(integrityKey: nil, fingerprint: true)
        // Without MESSAGE-INTEGRITY and with FINGERPRINT the message may grow by 8 bytes, past the size the parser
        // takes: that refusal is the bound, not a round-trip failure.
        if written.count <= STUNMessage.maximumSize {
            guard let again = try? ReceivedSTUN(parsing: written) else {
                preconditionFailure("STUN message \(bytes) written as \(written) does not parse")
            }
            precondition(again.message == received.message, "STUN round trip changed \(bytes) into \(written)")
            precondition(again.fingerprintIsValid, "STUN fingerprint written for \(bytes) does not check")
        }
        var agent = ICELiteAgent(
            localUfrag: iceSession.localUfrag, localPassword: iceSession.localPassword,
            remoteUfrag: iceSession.remoteUfrag)
        let sources = [
            TransportAddress(host: [198, 51, 100, 7], port: 40_001)!,
            TransportAddress(host: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [7], port: 40_002)!,
        ]
        for (index, source) in sources.enumerated() {
            switch agent.receive(received, from: source, at: .seconds(index + 1)) {
            case .answer(let response, _):
                guard let answer = try? ReceivedSTUN(parsing: response) else {
                    preconditionFailure("the answer \(response) to \(bytes) does not parse")
                }
                precondition(
                    answer.fingerprintIsValid && answer.integrityIsValid(key: password)
                        && answer.message.kind == .success
                        && answer.message.transactionID == received.message.transactionID,
                    "the answer \(response) to \(bytes) is not a signed, fingerprinted success for its transaction")
                let mapped = answer.message.attribute(.xorMappedAddress)?.xorMappedAddress(
                    transactionID: answer.message.transactionID)
                precondition(mapped == source, "the answer to \(bytes) maps \(String(describing: mapped))")
            case .refused(let reason, let response?):
                precondition(
                    (try? ReceivedSTUN(parsing: response))?.message.kind == .error,
                    "the error response \(response) to \(bytes) (\(reason)) does not parse as one")
            case .refused:
                break
            }
        }
    }

    /// Terminal share updates: a decoded update survives encode → decode unchanged, and applies to a blank screen
    /// of its size without trapping.
    @Sendable static func share(_ bytes: [UInt8]) {
        guard let update = try? ShareUpdate(decoding: bytes) else { return }
        precondition((try? ShareUpdate(decoding: update.encoded())) == update, "share round trip changed \(bytes)")
        let blank = TerminalScreen(rows: update.rows, columns: update.columns)
        _ = try? update.apply(to: blank, heldSequence: update.base)
        // As frames a viewer takes in: nothing traps, and what a recording draws of it holds no control character
        // but ESC's own sequences.
        var viewer = ShareViewer()
        _ = viewer.receive([update.kind == .fullScreen ? 0 : 1] + bytes)
        _ = viewer.receive([1] + bytes)
        let painted = ScreenPainter.bytes(for: update)
        precondition(
            !painted.contains { ($0 < 0x20 && $0 != 0x1B) || $0 == 0x7F }, "the painter wrote a control from \(bytes)")
    }

    /// RTCP compound packets, from an array and from raw memory alike.
    @Sendable static func rtcp(_ bytes: [UInt8]) {
        let fromArray = try? RTCPPacket.parseCompound(bytes)
        let fromMemory = bytes.withUnsafeBytes { try? RTCPPacket.parseCompound($0) }
        precondition((fromArray == nil) == (fromMemory == nil), "RTCP parsers disagree on \(bytes)")
    }

    /// The VP8 payload descriptor, the keyframe size guard and the payload header.
    @Sendable static func vp8(_ bytes: [UInt8]) {
        if let (descriptor, offset) = try? VP8PayloadDescriptor.parse(bytes) {
            precondition(offset <= bytes.count, "descriptor length \(offset) past the end of \(bytes.count)")
            var out: [UInt8] = []
            descriptor.serialize(into: &out)
            _ = try? VP8PayloadHeader(parsing: Array(bytes[offset...]))
        }
        if let size = bytes.withUnsafeBytes({ VP8PayloadDescriptor.keyframeSize($0) }) {
            precondition(size.width >= 0 && size.height >= 0 && size.width < 1 << 14 && size.height < 1 << 14)
        }
    }

    /// Opus TOC and frame count.
    @Sendable static func opus(_ bytes: [UInt8]) {
        if let info = try? OpusPacketInfo(parsing: bytes) {
            precondition(info.frameCount >= 1 && info.frameCount <= 48, "frame count \(info.frameCount)")
        }
    }

    /// Signaling JSON, as the relay reads a client's message and a client reads the relay's.
    @Sendable static func signaling(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? ClientMessage.decode(text)
        _ = try? ServerMessage.decode(text)
        // The messaging connection's requests and events: what parses survives encode → parse unchanged.
        if let request = try? MessagingRequest.decode(text) {
            precondition(
                (try? MessagingRequest.decode(request.encoded())) == request, "messaging request round trip: \(text)")
        }
        if let event = try? MessagingEvent.decode(text) {
            precondition((try? MessagingEvent.decode(event.encoded())) == event, "messaging event round trip: \(text)")
        }
    }

    /// Media bind requests and acknowledgements.
    @Sendable static func bind(_ bytes: [UInt8]) {
        _ = Bind.isBindPacket(bytes)
        _ = try? BindRequest(parsing: bytes)
        _ = try? BindAcknowledgement(parsing: bytes)
    }

    /// The jitter buffers fed a packet sequence of at most 256 records [step, length high, length low, bytes…]: an
    /// even step inserts the bytes as an RTP packet into both buffers, an odd one moves the clock by step
    /// milliseconds and takes what is due. The buffers' own bounds are checked by their preconditions; this checks they stay bounded.
    @Sendable static func jitter(_ bytes: [UInt8]) {
        var audio = AudioJitterBuffer()
        var video = VideoJitterBuffer()
        var now = Duration.zero
        var index = 0
        var steps = 0
        while index + 3 <= bytes.count, steps < 256 {
            steps += 1
            let step = bytes[index]
            let length = min(Int(bytes[index + 1]) << 8 | Int(bytes[index + 2]), bytes.count - index - 3)
            let body = Array(bytes[(index + 3)..<(index + 3 + length)])
            index += 3 + length
            if step & 1 == 0 {
                guard let packet = try? RTPPacket(parsing: body) else { continue }
                _ = audio.insert(packet, at: now)
                _ = video.insert(packet, at: now)
            } else {
                now += .milliseconds(Int(step))
                _ = audio.nextSlot(at: now)
                let output = video.poll(at: now)
                precondition(output.frames.count <= 4096 && output.nacks.count <= 256, "unbounded output")
            }
        }
    }

    /// Y4M files: the stream header, then the frame reader over a few frames (looping past the end).
    @Sendable static func y4m(_ bytes: [UInt8]) {
        guard let header = try? Y4MHeader.parse(bytes) else { return }
        precondition(header.width > 0 && header.height > 0, "accepted \(header.width)x\(header.height)")
        guard let source = try? Y4MFileSource(input: MemoryInput(bytes)) else { return }
        for _ in 0..<3 {
            guard let frame = try? source.nextFrame() else { return }
            precondition(
                frame.width == header.width && frame.height == header.height
                    && frame.y.count == header.width * header.height, "frame does not match its header")
        }
    }

    /// WAV files.
    @Sendable static func wav(_ bytes: [UInt8]) {
        if let audio = try? WAVAudio.parse(bytes) {
            precondition(audio.channels >= 1 && audio.samples.count % audio.channels == 0, "bad WAV accepted")
        }
    }
}
