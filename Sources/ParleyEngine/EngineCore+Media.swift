import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Media: the send and receive pipelines' ticks, NACK resends and keyframe requests, RTCP reports, levels.
extension EngineCore {

    func openMediaSocket() -> EventLoopFuture<any Channel> {
        let host = signalingLink.server.host.contains(":") ? "::" : "0.0.0.0"
        let bound = self.bound!
        return DatagramBootstrap(group: loop)
            .channelOption(.socketOption(.so_rcvbuf), value: 1 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientMediaHandler(core: bound))
                }
            }
            .bind(host: host, port: 0)
    }

    func startMedia(ssrcs: MemberSSRCs, participant: UInt32) throws {
        stopMedia()
        let profile = configuration.profile
        ownAudio.sender = try AudioSender(
            source: makeAudioSource(participant: participant), ssrc: ssrcs.audio,
            expectedLossPercent: ownAudio.lossPlan.percent, random: &random)
        if let feed = configuration.share {
            try startShare(feed, ssrcs: ssrcs)
            startMediaTicks(videoInterval: nil)
            return
        }
        var sources: [VideoSender.Source] = []
        for choice in configuration.videoSources {
            do {
                let isCamera: Bool = if case .camera = choice { true } else { false }
                sources.append(
                    VideoSender.Source(
                        name: choice == .synthetic ? "synthetic test picture" : choice.description, isCamera: isCamera,
                        source: try makeVideoSource(choice, participant: participant)))
            } catch {
                emit(.alert(.message("Camera \(choice): \(error)")))
            }
        }
        if sources.isEmpty {
            sources.append(
                VideoSender.Source(
                    name: "synthetic test picture", isCamera: false,
                    source: try makeVideoSource(.synthetic, participant: participant)))
        }
        let sender = try VideoSender(
            sources: sources, profile: profile, ssrcs: ssrcs,
            simulcast: configuration.simulcast, vp8Profile: configuration.vp8Profile, sealer: media.sealer,
            random: &random)
        if ownVideo.layerDemand != nil || ownVideo.uplinkLayers.sending.contains(false) {
            let encoded = ownVideo.encodedLayers(at: now)
            ownVideo.toldLayers = encoded
            sender.setActiveLayers(encoded)
        }
        sender.steer(
            fullLayerKbps: ownVideo.rate.fullLayerKbps, size: ownVideo.rate.fullLayerSize,
            largestLayer: ownVideo.rate.largestLayer)
        ownVideo.sent = sender.snapshot
        ownVideo.generation += 1
        ownVideo.framesInFlight = 0
        ownVideo.thread = VideoSenderThread(sender, loop: ownVideo.loop)
        startMediaTicks(videoInterval: .microseconds(Int64(1_000_000 / max(1, profile.fps))))
    }

    /// The audio tick, the camera's (none for a shared terminal, whose updates leave as the screen changes) and
    /// the reports'.
    func startMediaTicks(videoInterval: TimeAmount?) {
        guard let bound else { return }
        if case .microphone(let name) = configuration.audioSource, sound.microphone == nil {
            openMicrophone(named: name)
        }
        let audio = PacedTimer(loop: loop, interval: .milliseconds(20)) { bound.value.audioTick() }
        // No separate video poll timer: a frame is decoded as its last packet arrives (`receive`), and the 20 ms
        // audio tick polls for NACK and keyframe-request timing. That spares 100 wake-ups a second.
        let rtcp = PacedTimer(loop: loop, interval: .seconds(1)) { bound.value.sendReports() }
        media.ticks = [audio, rtcp]
        if let videoInterval {
            media.ticks.append(PacedTimer(loop: loop, interval: videoInterval) { bound.value.videoTick() })
        }
        for timer in media.ticks { timer.start(bound: NIOLoopBound(timer, eventLoop: loop)) }
    }

    func stopMedia() {
        for timer in media.ticks { timer.stop() }
        media.ticks.removeAll()
        onVideoThread { $0.close() }
    }

    /// Closes the real microphone and speaker (leaving the call).
    func closeDevices() {
        sound.microphone?.stop()
        sound.microphone = nil
        sound.speaker?.stop()
        sound.speaker = nil
        sound.deviceWatch?.stop()
        sound.deviceWatch = nil
    }

    func makeAudioSource(participant: UInt32) throws -> any AudioSource {
        switch configuration.audioSource {
        case .synthetic: SyntheticVoice(participant: participant)
        case .file(let path): try WAVFileSource(path: path)
        // A real microphone pushes its blocks (`captured`); this stands in whenever none is open.
        case .silence, .microphone: SilenceSource()
        }
    }

    func makeVideoSource(_ choice: VideoSourceChoice, participant: UInt32) throws -> any VideoSource {
        switch choice {
        case .synthetic:
            SyntheticCamera(
                name: configuration.name, participant: participant, width: configuration.profile.width,
                height: configuration.profile.height, framesPerSecond: configuration.profile.fps)
        case .file(let path):
            try Y4MFileSource(path: path)
        case .camera(let name):
            try openCamera(named: name)
        case .allCameras:
            // Resolved into the cameras found before the call starts (`resolvingDevices`); none left means none.
            throw CallSetupError("no camera was found")
        }
    }

    func makeAudioSink() throws -> (any AudioSink)? {
        switch configuration.audioSink {
        case .none, .speaker: nil
        case .file(let path): try WAVFileWriter(path: path)
        }
    }

    var sendsMedia: Bool { controls.role == .broadcaster && media.isBound }

    func audioTick() {
        if sound.microphone == nil {
            do {
                if let packet = try ownAudio.sender?.tick(sending: sendsMedia && !controls.microphoneMuted) {
                    send([packet])
                }
            } catch {
                logger.warning("audio capture failed", metadata: ["error": "\(error)"])
            }
        }
        if sound.speaker == nil { playOutAudio() }
        pollVideo()
        recordingTick()
        checkUDPSilence()
    }

    /// Runs `body` on the video thread, then brings the sender's counters back to this loop.
    func onVideoThread(_ body: @escaping @Sendable (VideoSender) -> Void) {
        guard let thread = ownVideo.thread, let bound else { return }
        let generation = ownVideo.generation
        thread.run { sender in
            body(sender)
            let snapshot = sender.snapshot
            bound.eventLoop.execute {
                if bound.value.ownVideo.generation == generation { bound.value.ownVideo.sent = snapshot }
            }
        }
    }

    /// The camera's turn: capture, self view and encode happen on the video thread, the packets are sent from here.
    func videoTick() {
        guard let thread = ownVideo.thread, let bound else { return }
        guard !controls.cameraOff, controls.role == .broadcaster else {
            onVideoThread { $0.skipFrame() }
            return
        }
        // The frame before is still being captured or encoded: this one is dropped at the source, as a camera
        // pipeline does when encoding falls behind (the encoder's rate control sees a lower frame rate).
        guard ownVideo.framesInFlight == 0 else {
            ownVideo.framesDroppedBusy += 1
            onVideoThread { $0.skipFrame(requestingKeyframe: false) }
            return
        }
        ownVideo.framesInFlight += 1
        let generation = ownVideo.generation
        let filter = controls.filterOn
        let encode = media.isBound
        let selfView = configuration.showsSelfView ? joined.map { ParticipantID($0.you.id) } : nil
        let sink = videoSink
        thread.run { sender in
            var result = CapturedVideoFrame(generation: generation, snapshot: VideoSenderSnapshot())
            do {
                let frame = try sender.capture(filter: filter)
                result.size = VideoSize(width: frame.width, height: frame.height)
                if let selfView { sink?.deliver(frame, from: selfView) }
                if encode {
                    result.packets = try sender.encode(frame)
                } else {
                    sender.skipFrame()
                }
            } catch {
                result.failure = "\(error)"
            }
            result.snapshot = sender.snapshot
            let done = result
            bound.eventLoop.execute { bound.value.videoFrameDone(done) }
        }
    }

    /// A frame back from the video thread: its packets go out (and are kept for resends).
    func videoFrameDone(_ result: CapturedVideoFrame) {
        guard result.generation == ownVideo.generation else { return }
        ownVideo.framesInFlight -= 1
        ownVideo.sent = result.snapshot
        if let size = result.size, !ownVideo.sentFirstFrame {
            ownVideo.sentFirstFrame = true
            emit(.firstLocalFrame(size))
        }
        if let failure = result.failure {
            logger.warning("video capture or encoding failed", metadata: ["error": "\(failure)"])
        }
        guard !result.packets.isEmpty else { return }
        let at = now
        for packet in result.packets {
            ownVideo.resends.sent(packet, at: at)
        }
        send(result.packets)
    }

    /// Polls every peer's video jitter buffer (for NACK and keyframe timing); frames normally leave earlier, from
    /// `pollVideo(peer)` as their last packet arrives.
    func pollVideo() {
        guard configuration.decodesVideo else { return }
        for peer in remote.peers.values { pollVideo(peer, at: now) }
        flushMedia()
    }

    /// Decodes and delivers what one peer's jitter buffer has completed; sends its NACKs and keyframe requests.
    func pollVideo(_ peer: PeerReceiver, at: Duration) {
        let output = peer.videoBuffer.poll(at: at)
        for frame in output.frames where peer.info.isTerminal {
            receiveShareFrame(frame, from: peer, at: at)
        }
        for sealedFrame in output.frames where !peer.info.isTerminal {
            guard let frame = opened(sealedFrame, from: peer) else { continue }
            let decoded = peer.decodeVideo(frame, at: at)
            if recording.recorder != nil {
                record { try $0.video(frame, from: peer.info.id, decoded: decoded != nil, at: at) }
            }
            guard var picture = decoded else { continue }
            picture.timestampMicros = Int64(frame.timestamp)
            let size = VideoSize(width: picture.width, height: picture.height)
            if !peer.sawFirstFrame || peer.lastFrameSize != size {
                peer.sawFirstFrame = true
                emit(.firstRemoteFrame(peer.participant, size: size))
            }
            peer.lastFrameSize = size
            peer.lastPicture = picture
            videoSink?.deliver(picture, from: peer.participant)
        }
        if !output.nacks.isEmpty, let own = joined?.media.ssrcs.audio {
            let nack = GenericNACK(senderSSRC: own, mediaSSRC: peer.videoSSRC, lost: output.nacks)
            sendRaw(RTCPPacket.nack(nack).serialized())
            peer.nacksSent += 1
        }
        if output.needsKeyframe { sendKeyframeRequest(for: peer) }
    }

    /// Resends what the relay asked for on behalf of receivers (packets lost before they reached it), each
    /// sequence number at most once per 30 ms however many receivers missed it.
    func resend(_ nack: GenericNACK) {
        send(ownVideo.resends.answer(nack, at: now))
    }

    func sendKeyframeRequest(for peer: PeerReceiver) {
        guard let own = joined?.media.ssrcs.audio else { return }
        let pli = PictureLossIndication(senderSSRC: own, mediaSSRC: peer.videoSSRC)
        sendRaw(RTCPPacket.pictureLossIndication(pli).serialized())
        peer.keyframeRequestsSent += 1
    }

    /// One 20 ms block of every peer's audio mixed (silence when the speaker is off or nobody talks).
    func mixBlock() -> [Int16] {
        let at = now
        var mix: [Int32]?
        let apart = recording.recorder?.recordsMembersApart ?? false
        var perMember: [UInt32: [Int16]] = [:]
        // A peer that never sent audio (the audience, above all) has nothing to play: skipping it keeps a
        // broadcaster's cost flat however many watch.
        for peer in remote.peers.values where peer.audioPacketsReceived > 0 {
            guard let frame = peer.playOut(at: at) else { continue }
            if apart { perMember[peer.info.id] = frame.samples }
            if mix == nil { mix = [Int32](repeating: 0, count: frame.samples.count) }
            guard mix!.count == frame.samples.count else { continue }
            for index in frame.samples.indices { mix![index] += Int32(frame.samples[index]) }
        }
        let mixed =
            mix.map { $0.map { Int16(clamping: $0) } } ?? [Int16](repeating: 0, count: AudioSender.samplesPerFrame)
        // The recording keeps the room's sound even with the speaker off (it is a record of the call).
        if recording.recorder != nil { record { try $0.audio(mix: mixed, members: perMember, at: at) } }
        return controls.speakerOn ? mixed : [Int16](repeating: 0, count: AudioSender.samplesPerFrame)
    }

    func playOutAudio() {
        guard configuration.decodesAudio else { return }
        let samples = mixBlock()
        guard let sink = remote.audioSink else { return }
        do {
            try sink.write(AudioFrame(samples: samples))
        } catch {
            logger.warning("audio output failed; muting the speaker", metadata: ["error": "\(error)"])
            remote.audioSink = nil
        }
    }

    func sendReports() {
        guard media.isBound, let own = joined?.media.ssrcs else { return }
        let ntp = NTPTimestamp.from(unixTime: .milliseconds(WallClock.milliseconds))
        var packets: [RTCPPacket] = []
        if controls.role == .broadcaster {
            if let audio = ownAudio.sender, !controls.microphoneMuted {
                packets.append(.senderReport(audio.senderReport(ntpTimestamp: ntp)))
            }
            if ownVideo.thread != nil, !controls.cameraOff {
                packets += ownVideo.sent.senderReports(ntpTimestamp: ntp).map { .senderReport($0) }
            }
        }
        var blocks: [ReportBlock] = []
        for peer in remote.peers.values.sorted(by: { $0.info.id < $1.info.id }) {
            if peer.audioPacketsReceived > 0 { blocks.append(peer.audio.makeReportBlock(now: now)) }
            if peer.videoPacketsReceived > 0 { blocks.append(peer.videoBuffer.makeReportBlock(now: now)) }
        }
        if !blocks.isEmpty { packets.append(.receiverReport(ReceiverReport(ssrc: own.audio, reports: blocks))) }
        if packets.isEmpty { return }
        packets.append(.sourceDescription(SourceDescription(ssrc: own.audio, cname: configuration.name)))
        sendRaw(RTCPPacket.serializeCompound(packets))
        flushMedia()
    }

    /// The relay's count of what it sent us: the downlink estimate takes the interval since its last count (the
    /// first on a binding only starts one); a new figure goes to the relay with the tiles.
    func downlinkCounted(_ count: ForwardedCount) {
        let at = now / .milliseconds(1)
        defer { reports.lastCount = (count, reports.arrived) }
        guard let last = reports.lastCount else {
            reports.downlink.restart(at: at)
            return
        }
        let sent = Int(count.packets &- last.relay.packets)
        // More than a 100,000 packets in one interval is no count of this binding (the relay restarted): start again.
        guard sent <= 100_000 else {
            reports.downlink.restart(at: at)
            return
        }
        // Read before the change: the closure runs while the estimator (in `reports`) is being changed.
        let arrived = reports.arrived.packets - last.arrived.packets
        let bytes = reports.arrived.bytes - last.arrived.bytes
        downlinkChanged { $0.update(at: at, bytes: bytes, expected: sent, lost: max(0, sent - arrived)) }
        if let outcome = reports.downlinkProbe.poll(at: at, overflowLevel: reports.downlink.overflowLevel) {
            downlinkProbed(outcome)
        }
        askForDownlinkProbe(at: at)
    }

    /// One of the relay's send-time marks: the downlink's delay trend, or a probe's packet.
    func downlinkMarked(_ mark: SendTimeMark) {
        let at = now.milliseconds
        let sentAt = Double(mark.sentAt) / 1_000
        if let tag = mark.probe {
            let outcome = reports.downlinkProbe.marked(
                tag, sentAt: sentAt, at: at, arrivedBytes: reports.arrivedFromRelay,
                overflowLevel: reports.downlink.overflowLevel)
            if let outcome { downlinkProbed(outcome) }
            return
        }
        let arrivedBytes = reports.arrivedFromRelay
        downlinkChanged { $0.marked(sentAt: sentAt, at: at, arrivedBytes: arrivedBytes) }
    }

    /// A probe of the downlink judged: a rate it carried raises the estimate, a full link keeps it held.
    func downlinkProbed(_ outcome: ProbeOutcome) {
        logger.info("downlink probe judged", metadata: ["outcome": "\(outcome)"])
        let at = now.milliseconds
        downlinkChanged { $0.probeFound(outcome, at: at) }
    }

    /// Asks the relay for a probe of the downlink when one is due: the relay holds video back for it and the estimate
    /// has been calm.
    func askForDownlinkProbe(at now: Double) {
        let held = !(remote.held?.held.isEmpty ?? true)
        guard let own = joined?.media.ssrcs.audio, media.path == .udp,
            let probe = reports.downlinkProbe.start(
                at: now, estimate: reports.downlink.estimate, held: held, calmSince: reports.downlink.lastCut)
        else { return }
        let request = ProbeRequest(ssrc: own, cluster: probe.cluster, kbps: probe.kbps)
        sendRaw(request.rtcpPacket.serialized())
        flushMedia()
    }

    /// Applies `change` to the downlink estimate; a new figure goes to the relay with the tiles (the first limit is
    /// also said to the person), and a large decrease lets the next probe come without waiting.
    func downlinkChanged(_ change: (inout DownlinkEstimator) -> Void) {
        let before = reports.downlink.estimate
        let reason = reports.downlink.reason
        change(&reports.downlink)
        let after = reports.downlink.estimate
        if reports.downlink.reason != reason, let after {
            logger.info(
                "downlink estimate",
                metadata: ["kbps": "\(Int(after / 1_000))", "reason": "\(reports.downlink.reason)"])
        }
        if let before, let after, after < 0.7 * before { reports.downlinkProbe.linkChanged() }
        let kbps = after.map { Int(($0 / 1_000).rounded()) }
        if before == nil, let kbps {
            emit(
                .notice(
                    "Your connection cannot carry all the relay sends (about \(kbps) kbit/s get through): "
                        + "it now sends you smaller pictures, sound and the speaker first"))
        }
        reports.tiles.setDownlink(kbps)
        sendTilesIfDue()
    }

    func reportStatistics() {
        let at = now
        let seconds = max(
            0.001,
            Double((at - reports.lastStats).components.seconds)
                + Double((at - reports.lastStats).components.attoseconds) / 1e18)
        reports.lastStats = at
        for peer in remote.peers.values.sorted(by: { $0.info.id < $1.info.id }) where peer.info.role == .broadcaster {
            var info = peer.takeWindowStats(seconds: seconds)
            if let held = remote.held, let entry = held.held.first(where: { $0.id == peer.info.id }) {
                info.heldByDownlinkKbps = held.downlinkKbps ?? 0
                info.heldToSize = entry.size.map { VideoSize(width: $0.width, height: $0.height) }
            }
            emit(.remoteStats(peer.participant, info))
        }
        guard ownVideo.thread != nil, let audio = ownAudio.sender else { return }
        let video = ownVideo.sent
        // What actually went out in this window, for the local tile's stats and for the room.
        // (New senders after a fresh rejoin start from zero: a negative window counts as zero.)
        // The camera's rate: a frame sent in two layers counts once.
        let frames = max(0, video.cameraFramesSent - reports.sentWindow.videoFrames)
        let videoKbps = Double(max(0, video.bytesSent - reports.sentWindow.videoBytes)) * 8 / 1000 / seconds
        let audioKbps = Double(max(0, audio.bytesSent - reports.sentWindow.audioBytes)) * 8 / 1000 / seconds
        reports.sentWindow = (video.cameraFramesSent, video.bytesSent, audio.bytesSent)
        let sending = !controls.cameraOff && controls.role == .broadcaster
        let size = sending ? VideoSize(width: configuration.profile.width, height: configuration.profile.height) : nil
        var info = MediaInfo(resolution: size, fps: Double(frames) / seconds, bitrateKbps: videoKbps)
        if media.feedbackReceived > 0 { info.uplinkKbps = media.uplink.target / 1_000 }
        info.downlinkKbps = reports.downlink.estimate.map { $0 / 1_000 }
        let largest = ownVideo.rate.largestLayer
        if largest > 0, largest < video.layerSizes.count {
            // The uplink carries only smaller layers: the largest of them is what the camera is held to.
            info.heldToKbps = ownVideo.rate.fullLayerKbps
            let size = video.layerSizes[largest]
            info.heldToSize = VideoSize(width: size.width, height: size.height)
        } else if ownVideo.rate.fullLayerKbps < configuration.profile.bitrateKbps {
            info.heldToKbps = ownVideo.rate.fullLayerKbps
            info.heldToSize = ownVideo.rate.fullLayerSize
        }
        if sending, video.layerSizes.count == video.activeLayers.count {
            info.sentLayers = zip(video.layerSizes, video.activeLayers).filter(\.1).map {
                VideoSize(width: $0.0.width, height: $0.0.height)
            }
        }
        if let speaker = sound.speaker {
            info.audioDelayMilliseconds = (speaker.deviceLatency ?? .zero) / .milliseconds(1)
            info.speakerUnderruns = speaker.underruns + speaker.deviceUnderruns
            let underruns = (mixLate: speaker.underruns, device: speaker.deviceUnderruns)
            if underruns != sound.speakerUnderrunsLogged {
                sound.speakerUnderrunsLogged = underruns
                logger.warning(
                    "the speaker played silence (a gap the listener hears)",
                    metadata: [
                        "mix late": "\(underruns.mixLate)", "sound server ran dry": "\(underruns.device)",
                        "buffer ms": "\((speaker.deviceLatency ?? .zero) / .milliseconds(1))",
                    ])
            }
        }
        emit(.localStats(info))
        reports.count += 1
        if reports.count % 2 == 0 {
            signalingLink.connection?.send(
                .stats(
                    SenderStats(
                        width: size?.width ?? 0, height: size?.height ?? 0, fps: Double(frames) / seconds,
                        videoKbps: videoKbps, audioKbps: audioKbps)))
        }
    }

    func reportLevels() {
        if sound.microphone != nil, let sender = ownAudio.sender {
            let level: Double? = controls.microphoneMuted ? 0 : sender.level.level
            if ownAudio.meterReported.map({ abs($0 - (level ?? 0)) > 0.06 }) ?? true {
                ownAudio.meterReported = level
                emit(.microphoneLevel(level))
            }
        }
        if let sender = ownAudio.sender, let id = joined?.you.id {
            let level = controls.microphoneMuted ? 0 : (sender.level.isSpeaking ? max(0.2, sender.level.level) : 0)
            if abs(level - ownAudio.levelReported) > 0.05 {
                ownAudio.levelReported = level
                emit(.audioLevel(ParticipantID(id), level))
            }
        }
        for peer in remote.peers.values where peer.audioPacketsReceived > 0 {
            let level = peer.level.isSpeaking ? max(0.2, peer.level.level) : 0
            emit(.audioLevel(peer.participant, level))
        }
    }

}

extension EngineCore {
    /// Tells the video thread which layers to encode when that changed (the relay's demand, the uplink's layers, a
    /// layer done leaving); returns them.
    @discardableResult
    func runLayers() -> [Bool] {
        let encoded = ownVideo.encodedLayers(at: now)
        guard encoded != ownVideo.toldLayers else { return encoded }
        ownVideo.toldLayers = encoded
        onVideoThread { $0.setActiveLayers(encoded) }
        return encoded
    }
}
