import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// The client side of a call: signaling to the relay, media over UDP, codecs, jitter buffers. Feed its `events`
/// to the room reducer and hand it the reducer's effects.
public final class CallEngine: Sendable {
    /// What happened, for the room reducer, in order. Finishes after `leave()`.
    public let events: AsyncStream<RoomEvent>
    let group: MultiThreadedEventLoopGroup
    private let videoLoop: any EventLoop
    let core: NIOLoopBound<EngineCore>

    /// Creates an engine; nothing happens until `start()`. Real microphones, speakers and cameras are opened through
    /// `devices` (the system's unless a test injects others).
    public init(
        _ configuration: CallConfiguration, videoSink: (any VideoFrameSink)? = nil,
        devices: MediaDevices = .system
    ) throws {
        let (events, continuation) = AsyncStream<RoomEvent>.makeStream(bufferingPolicy: .unbounded)
        self.events = events
        // Two threads: the media loop (sockets, audio, decoding) and the video thread (capture and encode).
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loop = group.next()
        let videoLoop = group.next()
        self.videoLoop = videoLoop
        core = try loop.submit {
            let core = EngineCore(
                configuration: configuration, loop: loop, videoLoop: videoLoop, videoSink: videoSink, devices: devices,
                emit: { continuation.yield($0) }, finish: { continuation.finish() })
            // The speaker's block is mixed on this loop, between video frames: on a busy machine an ordinary thread
            // waits its turn behind every other process and the block comes late (a click). Raised like PulseAudio's
            // own threads, it runs first among ordinary threads; not real-time, since video work is unbounded.
            // A microphone's blocks are encoded and sent here too, and one sent late is concealed at the far end.
            // Only a call with a real speaker or microphone has those deadlines: a bot, or the demo's, would only
            // take the processor from the terminal that draws the call.
            if configuration.usesSoundDevice {
                core.sound.mediaThread = AudioThreadPriority.raiseCurrentThreadNice()
                core.sound.sessionGroup = AudioThreadPriority.raiseSessionGroup()
            }
            return NIOLoopBound(core, eventLoop: loop)
        }.wait()
    }

    /// Opens the media socket, connects to the relay and joins; progress arrives as events.
    public func start() {
        let core = self.core
        core.eventLoop.execute { core.value.start(bound: core) }
    }

    /// Carries out one effect of the room reducer.
    public func perform(_ effect: RoomEffect) {
        let core = self.core
        core.eventLoop.execute { core.value.perform(effect) }
    }

    /// Says goodbye to the relay, stops media, and finishes `events`.
    public func leave() async {
        let core = self.core
        try? await core.eventLoop.flatSubmit { core.value.leave() }.get()
        // Work still queued on the video thread hands its results back to the media loop: both drain (in that
        // order) before the group stops, or a result would be scheduled on a loop already shut down.
        try? await videoLoop.submit {}.get()
        let raisedGroup = (try? await core.eventLoop.submit { core.value.sound.sessionGroup == .raised }.get()) ?? false
        try? await group.shutdownGracefully()
        // The terminal's session outlives the call: its other work must not keep the call's weight.
        if raisedGroup { AudioThreadPriority.restoreSessionGroup() }
    }

    /// Starts (true) or stops recording, as `R` does.
    public func setRecording(_ on: Bool) {
        perform(.setRecording(on))
    }

    /// Counters so far.
    public func statistics() async -> CallStatistics {
        let core = self.core
        return (try? await core.eventLoop.submit { core.value.statistics }.get()) ?? CallStatistics()
    }

    /// Tells the relay the pixel size each peer is drawn at (0x0 for a peer not on screen), so it forwards the
    /// smallest simulcast layer that covers it. Unchanged reports are not sent again; changes are sent at most
    /// four times a second.
    public func reportTiles(_ tiles: [TileSize]) {
        let core = self.core
        core.eventLoop.execute { core.value.reportTiles(tiles) }
    }

    /// Drops the signaling connection without a goodbye, as a network failure would (tests of reconnection).
    public func simulateSignalingFailure() {
        let core = self.core
        core.eventLoop.execute { core.value.dropSignaling() }
    }
}

/// The engine's state, confined to its event loop.
final class EngineCore {
    let configuration: CallConfiguration
    let loop: any EventLoop
    let videoSink: (any VideoFrameSink)?
    let emit: @Sendable (RoomEvent) -> Void
    let finish: @Sendable () -> Void
    let logger: Logger
    let clock = ContinuousClock()
    let epoch: ContinuousClock.Instant
    var random = SystemRandomNumberGenerator()
    var bound: NIOLoopBound<EngineCore>?
    let devices: MediaDevices

    /// Joining, resuming and reconnecting (`EngineCore+Signaling` carries the state's actions out).
    var signalingLink: SignalingLink
    /// The media socket, its bind at the relay and the ticks that send.
    var media: MediaLink
    /// What this member says it does: muted, camera off, speaker, filter, role.
    var controls: OwnControls
    /// This member's audio on its way out.
    var ownAudio = OwnAudio()
    /// This member's video on its way out (encoded on its own thread).
    var ownVideo: OwnVideo
    /// The terminal this member shares instead (`parley share`).
    var ownShare: OwnShare?
    /// The other members as received: their pipelines, streams and who speaks.
    var remote: RemoteMembers
    /// The real microphone and speaker while open, and what is kept about them.
    var sound = SoundDevices()
    /// The recording being written, the room's rule about recording, and `--record`'s start (`EngineCore+Recording`).
    var recording = RecordingState()
    /// Statistics, levels and tile sizes reported to the room and the relay.
    var reports = Reporting()

    init(
        configuration: CallConfiguration, loop: any EventLoop, videoLoop: any EventLoop,
        videoSink: (any VideoFrameSink)?,
        devices: MediaDevices, emit: @escaping @Sendable (RoomEvent) -> Void,
        finish: @escaping @Sendable () -> Void
    ) {
        self.configuration = configuration
        signalingLink = SignalingLink(configuration: configuration)
        let plan = VideoSender.plan(
            profile: configuration.profile, simulcast: configuration.simulcast, vp8Profile: configuration.vp8Profile)
        media = MediaLink(
            sealer: configuration.encryption.map { MediaSealer(encryption: $0) },
            startEstimate: VideoRateSteering.startEstimate(for: plan))
        controls = OwnControls(configuration: configuration)
        ownVideo = OwnVideo(loop: videoLoop, profile: configuration.profile, plan: plan)
        remote = RemoteMembers(opener: configuration.encryption.map { MediaOpener(encryption: $0) })
        self.devices = devices
        self.loop = loop
        self.videoSink = videoSink
        self.emit = emit
        self.finish = finish
        logger = configuration.logger
        epoch = clock.now
    }

    var now: Duration { clock.now - epoch }

    /// Where the call stands (the signaling state's).
    var phase: CallSignalingState.Phase { signalingLink.state.phase }
    /// The current (while reconnecting, the last) membership.
    var joined: JoinedRoom? { signalingLink.state.room }

    var statistics: CallStatistics {
        var stats = CallStatistics()
        stats.localID = joined?.you.id ?? 0
        stats.mediaBound = media.isBound
        stats.mediaPath = media.path.rawValue
        stats.mediaOverTCPBackedUp = media.backedUp
        stats.mediaSocketReopens = media.socketReopens
        stats.signalingRejoins = signalingLink.state.rejoins
        stats.chatLinesSent = signalingLink.chatOutbox.lastReference
        stats.chatLinesWaiting = signalingLink.chatOutbox.pending.count
        stats.chatLinesReceived = reports.chatLinesReceived
        stats.localMediaPort = media.udp?.localAddress?.port ?? 0
        stats.audioPacketsSent = ownAudio.sender?.packetsSent ?? 0
        stats.audioBytesSent = ownAudio.sender?.bytesSent ?? 0
        stats.audioPlannedLossPercent = ownAudio.lossPlan.percent
        stats.speakerUnderruns = sound.speaker?.underruns ?? 0
        stats.speakerDropped = sound.speaker?.dropped ?? 0
        stats.speakerDeviceUnderruns = sound.speaker?.deviceUnderruns ?? 0
        stats.speakerLatency = sound.speaker?.deviceLatency
        stats.microphoneLatency = sound.microphone == nil ? nil : sound.microphoneLatency
        stats.microphoneOverruns = sound.microphone?.deviceOverruns ?? 0
        stats.microphoneBlockGaps = sound.microphoneGaps.count
        stats.microphoneLongestBlockGap = sound.microphoneGaps.longest
        stats.speakerThread = sound.speaker?.threadScheduling
        stats.microphoneThread = sound.microphone?.threadScheduling
        stats.mediaThread = sound.mediaThread
        stats.sessionGroup = sound.sessionGroup
        stats.videoFramesSent = ownVideo.sent.framesSent
        stats.videoFramesCaptured = ownVideo.sent.framesCaptured
        stats.videoFramesDroppedBusy = ownVideo.framesDroppedBusy
        stats.videoKeyframesSent = ownVideo.sent.keyframesSent
        stats.videoPacketsSent = ownVideo.sent.packetsSent
        stats.videoBytesSent = ownVideo.sent.bytesSent
        stats.shareUpdatesSent = ownShare?.updatesSent ?? 0
        stats.shareFullScreensSent = ownShare?.fullScreensSent ?? 0
        stats.shareBytesSent = ownShare?.bytesSent ?? 0
        stats.mediaBytesSent = media.bytesSent
        stats.videoTargetKbps = ownVideo.rate.fullLayerKbps
        stats.keyframeRequestsReceived = ownVideo.keyframeRequestsReceived
        stats.videoPacketsResent = ownVideo.resends.resent
        stats.datagramsFromStrangers = media.datagramsFromStrangers
        stats.forgedFeedbackDropped = media.forgedFeedbackDropped
        if media.feedbackReceived > 0 {
            stats.uplinkEstimateKbps = Int((media.uplink.target / 1_000).rounded())
            stats.uplinkEstimateReason = media.uplink.reason.description
        }
        if let downlink = reports.downlink.estimate {
            stats.downlinkEstimateKbps = Int((downlink / 1_000).rounded())
            stats.downlinkEstimateReason = reports.downlink.reason.description
        }
        stats.transportFeedbackReceived = media.feedbackReceived
        stats.encryption = configuration.encryption?.suite.name
        stats.videoLayers = ownVideo.sent.layerSizes
        stats.activeVideoLayers = ownVideo.sent.activeLayers
        stats.videoFramesSentPerLayer = ownVideo.sent.framesSentPerLayer
        stats.dominantSpeaker = remote.dominantSpeaker
        for (id, peer) in remote.peers {
            stats.peers[id] = CallStatistics.Peer(
                name: peer.info.name, audioPacketsReceived: peer.audioPacketsReceived,
                videoPacketsReceived: peer.videoPacketsReceived, videoBytesReceived: peer.videoBytesReceived,
                framesDecoded: peer.framesDecoded, decodeErrors: peer.decodeErrors,
                audioFramesPlayed: peer.audioFramesPlayed, fecRecoveries: peer.fecRecoveries,
                concealments: peer.concealments, nacksSent: peer.nacksSent,
                keyframeRequestsSent: peer.keyframeRequestsSent, lastStamp: peer.lastStamp,
                lastFrameSize: peer.lastFrameSize,
                longestAudioGap: AudioSender.frameDuration * peer.longestAudioGapSlots,
                audioDropouts: peer.audioDropouts, decryptFailures: peer.decryptFailures,
                oversizedKeyframes: peer.oversizedKeyframes,
                videoLayer: peer.info.ssrcs.layerIndex(of: peer.videoSSRC) ?? 0, layerSwitches: peer.layerSwitches)
            stats.peers[id]?.audioDelay = peer.audio.playoutDelay
            let frozen =
                peer.info.videoMuted ? (count: peer.freezes.count, total: peer.freezes.total) : peer.freezes.asOf(now)
            stats.peers[id]?.videoFreezes = frozen.count
            stats.peers[id]?.videoFrozen = frozen.total
            stats.peers[id]?.heldByDownlink = remote.held?.held.first { $0.id == id }.map { entry in
                entry.size.map { "\($0.width)x\($0.height)" } ?? "paused"
            }
            stats.peers[id]?.audioCorrection = peer.audio.correction
            stats.peers[id]?.audioArrivalGaps = peer.audioArrivals.count
            stats.peers[id]?.longestAudioArrivalGap = peer.audioArrivals.longest
            stats.peers[id]?.audioLate = peer.audio.counters.late
            stats.peers[id]?.audioLateKept = peer.audio.counters.lateKept
            stats.peers[id]?.audioHeld = peer.audio.counters.held
            stats.peers[id]?.audioDiscarded = peer.audio.counters.discarded
            stats.peers[id]?.audioTarget = peer.audio.jitterBuffer.targetDelay
        }
        return stats
    }

    // MARK: - Lifecycle

    func start(bound: NIOLoopBound<EngineCore>) {
        self.bound = bound
        advance { state, _ in state.start() }
    }

    func leave() -> EventLoopFuture<Void> {
        let now = self.now
        let actions = signalingLink.state.leave()
        carryOut(actions, now: now)
        // The media socket closes last, and leaving waits for it (an earlier end left nothing to wait for).
        guard actions.contains(.closeMediaSocket), let udp = media.udp else {
            return loop.makeSucceededVoidFuture()
        }
        return udp.closeFuture
    }

    func dropSignaling() {
        signalingLink.connection?.abort()
    }

    // MARK: - Effects

    func perform(_ effect: RoomEffect) {
        switch effect {
        case .setMicrophoneMuted(let muted):
            controls.microphoneMuted = muted
            signalingLink.connection?.send(.mute(MuteChange(audio: muted)))
        case .setCameraEnabled(let enabled):
            controls.cameraOff = !enabled
            signalingLink.connection?.send(.mute(MuteChange(video: !enabled)))
            if enabled { onVideoThread { $0.requestKeyframe() } }
        case .switchCamera:
            switchCamera()
        case .grantControl(let terminal, let member):
            signalingLink.connection?.send(
                .control(ControlGrant(terminal: terminal.rawValue, to: member?.rawValue ?? 0)))
        case .typeIntoShare(let terminal, let bytes):
            typeIntoShare(terminal, bytes)
        case .setSpeakerEnabled(let enabled):
            controls.speakerOn = enabled
        case .setFilter(let enabled):
            controls.filterOn = enabled
        case .setRole(let newRole):
            signalingLink.state.requestedRole(newRole)
            controls.role = newRole
            signalingLink.connection?.send(.role(RoleRequest(role: newRole == .audience ? .audience : .broadcaster)))
            if newRole == .broadcaster { onVideoThread { $0.requestKeyframe() } }
        case .sendChat(let text):
            // Kept until the relay echoes it: between connections, or into one that died, it goes at the next join.
            let line = signalingLink.chatOutbox.add(chatMessage(text))
            signalingLink.connection?.send(.chat(line))
            let name = joined?.you.label ?? configuration.name
            record { try $0.chat(sender: name, text: text, at: now) }
        case .requestKeyframe(let participant):
            if let peer = remote.peers[participant.rawValue] { sendKeyframeRequest(for: peer) }
        case .allowBroadcast(let participant):
            signalingLink.connection?.send(.allow(MemberRef(id: participant.rawValue)))
        case .removeParticipant(let participant):
            signalingLink.connection?.send(.remove(MemberRef(id: participant.rawValue)))
        case .readmit(let name):
            signalingLink.connection?.send(.readmit(Readmission(name: name)))
        case .leave:
            _ = leave()
        case .setRecording(let on):
            if on { startRecording() } else { stopRecording() }
        case .setRecordingAllowed(let allowed):
            signalingLink.connection?.send(.recordingPolicy(RecordingPolicy(allowed: allowed)))
        case .openDirect, .sendDirect, .openMessages, .copyToClipboard:
            break  // The messages connection's, not the call's: the terminal app carries them out.
        }
    }

}
