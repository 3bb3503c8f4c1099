import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Microphone → Opus → RTP. Owned by the engine core on its event loop.
final class AudioSender {
    static let frameDuration = Duration.milliseconds(20)
    /// Opus encoder effort for calls. 5 instead of libopus's default 10 takes about 40 % less CPU (opusenc on 58 s
    /// of the synthetic voice: 0.49 s against 0.78 s); for 32 kbit/s wideband speech the difference is hard to hear,
    /// and it is what many mobile WebRTC stacks use. The codec tests keep exercising the default.
    static let complexity = 5
    static let samplesPerFrame = 960

    private let source: any AudioSource
    private let encoder: OpusAudioEncoder
    private var packetizer: RTPPacketizer
    private var mediaTime: Duration = .zero
    /// Voice activity of the local microphone.
    private(set) var level = AudioLevel()
    private(set) var packetsSent = 0
    private(set) var bytesSent = 0

    init(
        source: any AudioSource, ssrc: UInt32, expectedLossPercent: Int = 0,
        random: inout some RandomNumberGenerator
    ) throws {
        self.source = source
        encoder = try OpusAudioEncoder(
            OpusAudioConfig(
                channels: source.channels, complexity: Self.complexity,
                expectedLossPercent: expectedLossPercent))
        packetizer = RTPPacketizer(
            ssrc: ssrc, payloadType: MediaPayloadType.opus, clockRate: MediaClockRate.opus,
            initialSequenceNumber: UInt16.random(in: 0...UInt16.max, using: &random),
            initialTimestamp: UInt32.random(in: 0...UInt32.max, using: &random))
    }

    /// Captures one 20 ms block from the source; returns the RTP packet to send when `sending`, nil otherwise
    /// (muted, audience).
    func tick(sending: Bool) throws -> RTPPacket? {
        try send(source.nextFrame(samplesPerChannel: Self.samplesPerFrame), sending: sending)
    }

    /// Encodes one 20 ms block a microphone delivered (the device's clock paces these).
    func send(_ frame: AudioFrame, sending: Bool) throws -> RTPPacket? {
        level.update(with: frame)
        defer { mediaTime += Self.frameDuration }
        guard sending else { return nil }
        let payload = try encoder.encode(frame)
        var packet = packetizer.packetize([payload], at: mediaTime, markLast: false)[0]
        // RFC 6464: the relay picks the dominant speaker from these without touching the audio.
        packet.header.headerExtension =
            AudioLevelIndication(
                voiceActivity: level.isSpeaking, dBFS: level.lastDBFS
            ).headerExtension
        packetsSent += 1
        bytesSent += payload.count
        return packet
    }

    /// Tells the encoder how much loss to plan in-band FEC for (`AudioLossPlan`), from the next packet on.
    func planForLoss(percent: Int) {
        try? encoder.setExpectedLoss(percent: percent)  // 0...30 from the plan: always valid
    }

    /// A sender report for this stream.
    func senderReport(ntpTimestamp: UInt64) -> SenderReport {
        packetizer.senderReport(ntpTimestamp: ntpTimestamp, mediaTime: mediaTime)
    }
}

/// Camera → (filter) → VP8 → RTP. Lives on the video thread (`VideoSenderThread`).
final class VideoSender {
    /// One picture source `c` can switch to.
    struct Source {
        /// What the user calls it: a camera's name, a file, "synthetic test picture".
        var name: String
        /// A real camera (closed when the call ends).
        var isCamera: Bool
        var source: any VideoSource
    }

    /// One layer's packet stream: its own picture ids and sequence numbers, a timestamp shared by all layers.
    private struct LayerStream {
        var payloader: VP8Payloader
        var packetizer: RTPPacketizer
    }

    private var sources: [Source]
    private(set) var sourceIndex = 0
    private let profile: VideoProfile
    private let encoder: SimulcastEncoder
    private var streams: [LayerStream]
    private var mediaTime: Duration = .zero
    private(set) var framesSent = 0
    private(set) var keyframesSent = 0
    private(set) var packetsSent = 0
    private(set) var bytesSent = 0
    private(set) var framesCaptured = 0
    /// Captured frames sent in at least one layer: the camera's rate as others get it (`framesSent` counts a frame
    /// once per layer).
    private(set) var cameraFramesSent = 0
    /// Frames sent per layer (largest first).
    private(set) var framesSentPerLayer: [Int]

    /// The layers sent, largest first.
    let plan: SimulcastPlan
    /// Seals each encoded frame for an end-to-end encrypted room before it is packetized; nil in a plain one.
    private let sealer: MediaSealer?

    init(
        sources: [Source], profile: VideoProfile, ssrcs: MemberSSRCs, simulcast: Bool,
        vp8Profile: Int, sealer: MediaSealer? = nil, random: inout some RandomNumberGenerator
    ) throws {
        precondition(!sources.isEmpty, "a video sender needs a source")
        self.sources = sources
        self.sealer = sealer
        self.profile = profile
        plan = Self.plan(profile: profile, simulcast: simulcast, vp8Profile: vp8Profile)
        encoder = try SimulcastEncoder(plan)
        // Every layer stamps the same capture instant with the same RTP timestamp, so a receiver switching layers
        // can tell which keyframe is newer than what it shows.
        let timestamp = UInt32.random(in: 0...UInt32.max, using: &random)
        streams = try plan.layers.indices.map { index in
            LayerStream(
                payloader: try VP8Payloader(initialPictureID: UInt16.random(in: 0...0x7FFF, using: &random)),
                packetizer: RTPPacketizer(
                    ssrc: ssrcs.videoLayer(index), payloadType: MediaPayloadType.vp8, clockRate: MediaClockRate.video,
                    initialSequenceNumber: UInt16.random(in: 0...UInt16.max, using: &random),
                    initialTimestamp: timestamp))
        }
        framesSentPerLayer = plan.layers.map { _ in 0 }
    }

    /// The layers a camera at `profile` is sent in (what the join declares, and what is encoded).
    static func plan(profile: VideoProfile, simulcast: Bool, vp8Profile: Int = VP8EncoderConfig.sharpProfile)
        -> SimulcastPlan
    {
        SimulcastPlan.forCall(
            width: profile.width, height: profile.height, kbps: profile.bitrateKbps,
            framesPerSecond: profile.fps, simulcast: simulcast, bitstreamProfile: vp8Profile)
    }

    /// The layers' sizes, largest first, as declared at join.
    var layerSizes: [VideoLayerSize] { plan.layers.map { VideoLayerSize(width: $0.width, height: $0.height) } }

    /// Which layers are encoded now.
    var activeLayers: [Bool] { encoder.active }

    /// The relay says which layers somebody receives; the rest pause (a resumed layer starts with a keyframe).
    func setActiveLayers(_ flags: [Bool]) { encoder.setActive(flags) }

    /// The uplink's estimate moved: the full layer aims at `fullLayerKbps` in a picture of `size` (the profile's or
    /// a half or quarter of it), the others at their share of the rate.
    func steer(fullLayerKbps: Int, size: VideoSize, largestLayer: Int = 0) {
        // Rates from `VideoRateSteering` are within 50 kbit/s and the profile's, sizes within the plan's full layer
        // and 160x90: libvpx takes any of them.
        try? encoder.setBitrate(kbps: fullLayerKbps, largestLayer: largestLayer)
        try? encoder.resizeFullLayer(width: size.width, height: size.height)
    }

    /// Moves to the next configured source; the next frame is a keyframe.
    func switchSource() {
        sourceIndex = (sourceIndex + 1) % sources.count
        encoder.requestKeyframe()
    }

    /// How many sources `c` cycles through.
    var sourceCount: Int { sources.count }

    /// The name of the source in use.
    var currentSourceName: String { sources[sourceIndex].name }

    /// Takes a failed source out (never the last one); returns the source now in use, or nil when `name` is not a
    /// source or is the only one.
    func removeSource(named name: String) -> (name: String, isCamera: Bool)? {
        guard sources.count > 1, let index = sources.firstIndex(where: { $0.name == name }) else { return nil }
        (sources[index].source as? CameraSource)?.stop()
        let wasCurrent = index == sourceIndex
        sources.remove(at: index)
        if index < sourceIndex || sourceIndex >= sources.count { sourceIndex = max(0, sourceIndex - 1) }
        if wasCurrent {
            // Prefer another real camera over a file or the test picture.
            if let camera = sources.firstIndex(where: \.isCamera) { sourceIndex = camera }
            encoder.requestKeyframe()
        }
        return (sources[sourceIndex].name, sources[sourceIndex].isCamera)
    }

    /// Stops the real cameras' capture threads.
    func close() {
        for entry in sources { (entry.source as? CameraSource)?.stop() }
    }

    /// A receiver lost the picture (PLI): the next frame of `layer` (every layer when nil) is a keyframe.
    func requestKeyframe(layer: Int? = nil) { encoder.requestKeyframe(layer: layer) }

    /// Captures one frame at the profile's size (scaling when the source differs), optionally filtered.
    func capture(filter: Bool) throws -> VideoFrame {
        var frame = try sources[sourceIndex].source.nextFrame()
        framesCaptured += 1
        if frame.width != profile.width || frame.height != profile.height {
            frame = frame.scaled(width: profile.width, height: profile.height)
        }
        if filter { frame.sepia() }
        frame.timestampMicros =
            Int64(mediaTime.components.seconds) * 1_000_000
            + mediaTime.components.attoseconds / 1_000_000_000_000
        return frame
    }

    /// Encodes and packetizes one captured frame in every active layer.
    func encode(_ frame: VideoFrame) throws -> [RTPPacket] {
        defer { mediaTime += .microseconds(1_000_000 / max(1, profile.fps)) }
        var packets: [RTPPacket] = []
        let layers = try encoder.encode(frame)
        if layers.contains(where: { !$0.isEmpty }) { cameraFramesSent += 1 }
        for (layer, frames) in layers.enumerated() {
            for encoded in frames {
                let bytes = try sealer?.sealVideoFrame(encoded.bytes) ?? encoded.bytes
                let payloads = try streams[layer].payloader.payloads(for: bytes)
                packets += streams[layer].packetizer.packetize(payloads, at: mediaTime, markLast: true)
                framesSent += 1
                framesSentPerLayer[layer] += 1
                if encoded.isKeyframe { keyframesSent += 1 }
                bytesSent += encoded.bytes.count
            }
        }
        packetsSent += packets.count
        return packets
    }

    /// Media time advances even while the camera is off, so timestamps stay on the wall clock; the next frame is a
    /// keyframe. A frame dropped because the one before was still encoding needs none (`requestingKeyframe: false`).
    func skipFrame(requestingKeyframe: Bool = true) {
        mediaTime += .microseconds(1_000_000 / max(1, profile.fps))
        if requestingKeyframe { encoder.requestKeyframe() }
    }

    /// Counters, layers and report state as they stand, for the media loop.
    var snapshot: VideoSenderSnapshot {
        VideoSenderSnapshot(
            framesSent: framesSent, framesCaptured: framesCaptured, keyframesSent: keyframesSent,
            packetsSent: packetsSent, bytesSent: bytesSent, cameraFramesSent: cameraFramesSent,
            framesSentPerLayer: framesSentPerLayer, activeLayers: activeLayers, layerSizes: layerSizes,
            sentLayers: streams.indices.filter { encoder.active[$0] }.map { streams[$0].packetizer },
            mediaTime: mediaTime)
    }
}

/// Everything received from one remote member: jitter buffers, decoders, level and statistics.
final class PeerReceiver {
    var info: MemberInfo
    /// Jitter buffer, Opus decoder and drift-compensating resampler for this peer's audio.
    let audio: PeerAudioPlayout
    var videoBuffer = VideoJitterBuffer()
    /// The screen of a shared terminal (a member of kind `terminal`), rebuilt from its frames.
    var share = ShareViewer()
    /// The simulcast layer (its SSRC) being decoded; another layer's packets wait for a newer keyframe of it.
    private(set) var videoSSRC: UInt32
    /// The RTP timestamp of the newest frame decoded, shared by every layer of the sender.
    private var newestVideoTimestamp: UInt32?
    /// Layer switches made, and packets of another layer passed over.
    private(set) var layerSwitches = 0
    private(set) var otherLayerPackets = 0
    private var otherLayerRun = 0

    /// Packets of another layer keep coming: only a keyframe of it lets the picture go on.
    var wantsKeyframe: Bool { otherLayerRun > 0 && otherLayerRun % 20 == 0 }
    private var videoDecoder: VP8Decoder?
    var level = AudioLevel()
    var sawFirstFrame = false
    var lastFrameSize: VideoSize?
    /// The last picture decoded: its stamp is read when statistics are asked for, not for every picture (a scan of
    /// a quarter of the picture, 30 times a second, for a figure read once a second at most).
    var lastPicture: VideoFrame?
    /// The synthetic camera's stamp in the last picture decoded; nil without one.
    var lastStamp: (participant: UInt32, frame: UInt32)? {
        lastPicture.flatMap { SyntheticCamera.readStamp(from: $0) }
    }

    // Totals, for tests and benchmarks.
    var audioPacketsReceived = 0
    var videoPacketsReceived = 0
    var videoBytesReceived = 0
    var framesDecoded = 0
    /// Gaps of over 300 ms between this peer's decoded frames.
    var freezes = VideoFreezes()
    var decodeErrors = 0
    var audioFramesPlayed = 0
    var fecRecoveries: Int { audio.counters.fecRecovered }
    var concealments: Int { audio.counters.concealed }
    var nacksSent = 0
    var keyframeRequestsSent = 0
    /// Packets and chat lines that failed to decrypt, in all and in a row; `cannotDecrypt` once the run is long.
    var decryptFailures = 0
    /// Keyframes dropped before decoding because they declared a picture beyond the largest profile.
    var oversizedKeyframes = 0
    var decryptFailuresInARow = 0
    var cannotDecrypt = false
    /// Longest run of play-out slots with nothing to play since the first played frame (dropouts, pauses).
    private(set) var longestAudioGapSlots = 0
    /// When this peer's audio packets arrived.
    var audioArrivals = ArrivalGaps(limit: AudioSender.frameDuration * 2)
    /// Runs of silent play-out slots since the first played frame.
    private(set) var audioDropouts = 0
    private var audioGapSlots = 0

    // Per stats window.
    private var windowFrames = 0
    private var windowBytes = 0
    private var windowExpected = 0
    private var windowLost = 0

    init(info: MemberInfo) throws {
        self.info = info
        videoSSRC = info.ssrcs.video
        audio = try PeerAudioPlayout(settings: PeerAudioPlayout.callSettings)
    }

    var participant: ParticipantID { ParticipantID(info.id) }

    /// Decodes a completed VP8 frame; nil (and a keyframe request next poll) when it does not decode. A keyframe
    /// declaring a picture beyond the largest profile (`VP8Limits`) never reaches the decoder: it is counted.
    func decodeVideo(_ frame: VP8Frame, at now: Duration? = nil) -> VideoFrame? {
        if let size = VP8FrameHeader(frame.data)?.size, !VP8Limits.allows(size) {
            oversizedKeyframes += 1
            videoBuffer.decoderNeedsKeyframe()
            return nil
        }
        do {
            if videoDecoder == nil { videoDecoder = try VP8Decoder() }
            guard let picture = try videoDecoder?.decode(frame.data) else { return nil }
            newestVideoTimestamp = frame.timestamp
            framesDecoded += 1
            if let now { freezes.frame(at: now) }
            windowFrames += 1
            return picture
        } catch {
            decodeErrors += 1
            videoBuffer.decoderNeedsKeyframe()
            return nil
        }
    }

    /// Whether a video packet goes to the jitter buffer: one of the layer being decoded does; one of another
    /// layer does when it starts a keyframe no older than the last frame shown, and the decoding moves to that
    /// layer (the relay switched this receiver at that keyframe). Anything else of another layer is passed over;
    /// a run of them (the switching keyframe was lost) sets `wantsKeyframe`, which the relay answers with a
    /// keyframe of the layer it now forwards.
    func acceptsVideo(_ packet: RTPPacket) -> Bool {
        guard packet.header.ssrc != videoSSRC else {
            otherLayerRun = 0
            return true
        }
        let recent = newestVideoTimestamp.map { Int32(bitPattern: packet.header.timestamp &- $0) >= 0 } ?? true
        guard recent, VP8PayloadDescriptor.startsKeyframe(packet.payload) else {
            otherLayerPackets += 1
            otherLayerRun += 1
            return false
        }
        otherLayerRun = 0
        videoSSRC = packet.header.ssrc
        videoBuffer = VideoJitterBuffer()
        layerSwitches += 1
        return true
    }

    /// One 20 ms block of this peer's audio at the pace of whoever asks (the speaker, or the 20 ms timer): decoded,
    /// FEC-recovered or concealed, resampled against clock drift; nil for silence (buffering, idle, never started).
    func playOut(at now: Duration) -> AudioFrame? {
        let samples = audio.pull(frames: AudioSender.samplesPerFrame, at: now)
        guard audio.lastPullHadAudio else {
            if audioFramesPlayed > 0 {
                if audioGapSlots == 0 { audioDropouts += 1 }
                audioGapSlots += 1
                longestAudioGapSlots = max(longestAudioGapSlots, audioGapSlots)
            }
            level.update(with: AudioFrame(samples: samples))
            return nil
        }
        let frame = AudioFrame(samples: samples)
        audioFramesPlayed += 1
        audioGapSlots = 0
        level.update(with: frame)
        return frame
    }

    /// Counts a received video packet for the bitrate window.
    /// A shared terminal's frame applied: counted as a decoded frame.
    func countShareFrame(at now: Duration) {
        framesDecoded += 1
        freezes.frame(at: now)
        windowFrames += 1
    }

    func countVideo(bytes: Int) {
        videoPacketsReceived += 1
        videoBytesReceived += bytes
        windowBytes += bytes
    }

    /// Concealments counted at the start of the stats window.
    var windowConcealed = 0

    /// Stats over the window since the last call, then starts a new window.
    func takeWindowStats(seconds: Double) -> MediaInfo {
        let statistics = videoBuffer.statistics
        let expected = statistics.expected
        let lost = statistics.lost
        let windowExpected = expected - self.windowExpected
        let windowLost = lost - self.windowLost
        var info = MediaInfo(
            resolution: lastFrameSize, fps: Double(windowFrames) / seconds,
            bitrateKbps: Double(windowBytes) * 8 / 1000 / seconds,
            lossPercent: windowExpected > 0 ? 100 * Double(max(0, windowLost)) / Double(windowExpected) : 0,
            jitterMilliseconds: statistics.jitter / Double(MediaClockRate.video) * 1000)
        info.audioDelayMilliseconds = audio.playoutDelay / .milliseconds(1)
        info.audioConcealed = max(0, concealments - windowConcealed)
        windowConcealed = concealments
        self.windowExpected = expected
        self.windowLost = lost
        windowFrames = 0
        windowBytes = 0
        return info
    }
}

extension VideoFrame {
    /// The chroma of the sepia filter (Cb below and Cr above the neutral 128: warm brown), after the reference
    /// apps' filter, which is an effect a person sees at a glance, not a subtle touch-up.
    static let sepiaChroma: (u: UInt8, v: UInt8) = (108, 148)

    /// The "filter" toggle: the picture in sepia, brown and cream. The brightness is kept; the colour planes take
    /// one warm tone, which also costs the encoder almost nothing.
    mutating func sepia() {
        u.withUnsafeMutableBufferPointer { $0.update(repeating: Self.sepiaChroma.u) }
        v.withUnsafeMutableBufferPointer { $0.update(repeating: Self.sepiaChroma.v) }
    }
}
