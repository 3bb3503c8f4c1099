import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Counters of one call so far: what was sent, and per peer what arrived and was played.
public struct CallStatistics: Sendable {
    /// Totals for one remote member.
    public struct Peer: Sendable {
        public var name: String
        public var audioPacketsReceived: Int
        public var videoPacketsReceived: Int
        public var videoBytesReceived: Int
        public var framesDecoded: Int
        public var decodeErrors: Int
        public var audioFramesPlayed: Int
        public var fecRecoveries: Int
        public var concealments: Int
        public var nacksSent: Int
        public var keyframeRequestsSent: Int
        /// The stamp read from the latest decoded synthetic-camera picture (participant id, frame counter).
        public var lastStamp: (participant: UInt32, frame: UInt32)?
        /// Size of the latest decoded picture.
        public var lastFrameSize: VideoSize?
        /// Longest stretch of silence played since this peer's audio started (loss the jitter buffer and FEC
        /// could not cover, or the peer muting).
        public var longestAudioGap: Duration = .zero
        /// Stretches of silence played since this peer's audio started: dropouts a listener hears, or the peer muting.
        public var audioDropouts = 0
        /// Payloads and chat lines of this peer that failed SFrame authentication (another secret, or tampering).
        public var decryptFailures = 0
        /// Keyframes of this peer dropped unseen by the decoder: they declared a picture beyond the largest profile.
        public var oversizedKeyframes = 0
        /// The simulcast layer being received (0 is the full size).
        public var videoLayer = 0
        /// Times the relay moved this receiver to another of the peer's layers.
        public var layerSwitches = 0
    }

    /// This member's id (0 before joining).
    public var localID: UInt32 = 0
    /// The end-to-end cipher ("AES-128-GCM"), nil for an unencrypted call.
    public var encryption: String?
    /// Whether the media socket is bound at the relay.
    public var mediaBound = false
    /// The local UDP port media arrives on (0 before the socket opened).
    public var localMediaPort = 0
    public var audioPacketsSent = 0
    public var audioBytesSent = 0
    /// The packet loss (percent) the audio encoder plans in-band FEC for now, from the receivers' reports.
    public var audioPlannedLossPercent = 0
    /// Blocks of silence the speaker played because the mix did not come in time (a real speaker only).
    public var speakerUnderruns = 0
    /// Blocks the speaker dropped because its queue was full (a real speaker only).
    public var speakerDropped = 0
    public var videoFramesSent = 0
    /// Frames taken from the camera (also those no layer encoded, because nobody watches).
    public var videoFramesCaptured = 0
    public var videoKeyframesSent = 0
    public var videoPacketsSent = 0
    public var videoBytesSent = 0
    /// Keyframe requests (PLI) that reached this sender.
    public var keyframeRequestsReceived = 0
    /// Video packets sent again because a NACK said the relay never got them.
    public var videoPacketsResent = 0
    /// Datagrams dropped because they came from an address other than the relay's media port.
    public var datagramsFromStrangers = 0
    /// RTCP packets from the relay dropped because they named an SSRC of nobody in the room, or feedback about a
    /// stream this member does not send.
    public var forgedFeedbackDropped = 0
    /// Peers by member id.
    public var peers: [UInt32: Peer] = [:]
    /// The layers this member sends in, largest first, and which of them are encoded now (the relay's demand).
    public var videoLayers: [VideoLayerSize] = []
    public var activeVideoLayers: [Bool] = []
    /// Frames sent per layer.
    public var videoFramesSentPerLayer: [Int] = []
    /// The room's dominant speaker as the relay last said, nil for nobody yet.
    public var dominantSpeaker: UInt32?
}

/// The client side of a call: signaling to the relay, media over UDP, codecs, jitter buffers. Feed its `events`
/// to the room reducer and hand it the reducer's effects.
public final class CallEngine: Sendable {
    /// What happened, for the room reducer, in order. Finishes after `leave()`.
    public let events: AsyncStream<RoomEvent>
    private let group: MultiThreadedEventLoopGroup
    private let core: NIOLoopBound<EngineCore>

    /// Creates an engine; nothing happens until `start()`. Real microphones, speakers and cameras are opened through
    /// `devices` (the system's unless a test injects others).
    public init(_ configuration: CallConfiguration, videoSink: (any VideoFrameSink)? = nil,
                devices: MediaDevices = .system) throws {
        let (events, continuation) = AsyncStream<RoomEvent>.makeStream(bufferingPolicy: .unbounded)
        self.events = events
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        core = try loop.submit {
            NIOLoopBound(
                EngineCore(configuration: configuration, loop: loop, videoSink: videoSink, devices: devices,
                           emit: { continuation.yield($0) }, finish: { continuation.finish() }),
                eventLoop: loop)
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
        try? await group.shutdownGracefully()
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
    private enum Phase {
        case idle
        case connecting
        case joined
        case reconnecting(since: Duration, announcedLost: Bool)
        case left
    }

    let configuration: CallConfiguration
    let loop: any EventLoop
    private let videoSink: (any VideoFrameSink)?
    let emit: @Sendable (RoomEvent) -> Void
    private let finish: @Sendable () -> Void
    let logger: Logger
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private var random = SystemRandomNumberGenerator()
    var bound: NIOLoopBound<EngineCore>?

    private var phase = Phase.idle
    var signaling: SignalingConnection?
    private var joined: JoinedRoom?
    var peers: [UInt32: PeerReceiver] = [:]
    private var ownerOfBlock: [UInt32: UInt32] = [:]

    private var udp: (any Channel)?
    private var relayMedia: SocketAddress?
    private var mediaBound = false
    private var bindAttempts = 0

    var microphoneMuted: Bool
    var cameraOff: Bool
    var speakerOn = true
    private var filterOn = false
    var role: Role
    private var sentFirstLocalFrame = false

    var audioSender: AudioSender?
    /// The loss the audio encoder plans FEC for, from receivers' reports about our audio.
    private var audioLossPlan = AudioLossPlan()
    var videoSender: VideoSender?
    private var audioSink: (any AudioSink)?
    let devices: MediaDevices
    /// The real microphone while one is open: it paces sending (the 20 ms timer only paces other sources).
    var microphone: MicrophoneCapture?
    var microphoneName: String?
    /// The real speaker while one is open: it asks for each block (play-out paced by the device's clock).
    var speaker: SpeakerPlayout?
    var speakerName: String?
    var echoCanceller: EchoCanceller?
    /// When an unmuted microphone delivering only zeros is worth a notice.
    var microphoneSilence = MicrophoneSilenceWatch()
    var meterReported: Double?
    var microphoneFailures = 0
    var speakerFailures = 0
    private var localLevelReported = -1.0
    private var keyframeRequestsReceived = 0
    /// Video packets of the last 500 ms, to resend what a NACK says the relay never got. No longer than the relay
    /// keeps them itself: older ones were not lost on the way in, and a peer NACKing them must not make us resend.
    private var sentVideo = RetransmissionBuffer<RTPPacket>(retention: .milliseconds(500), capacityPerStream: 512)
    /// When each sequence number was last resent: several receivers NACKing one loss get one resend.
    private var lastResent: [UInt16: Duration] = [:]
    private var videoPacketsResent = 0
    private var datagramsFromStrangers = 0
    private var forgedFeedbackDropped = 0

    private var timers: [PacedTimer] = []
    private var repeating: [RepeatedTask] = []
    private var bindTask: Scheduled<Void>?
    private var reconnectTask: Scheduled<Void>?
    private var keepAliveTask: RepeatedTask?
    private var lostTask: Scheduled<Void>?
    /// When the relay last said anything on signaling (pongs included).
    private var lastHeard: Duration = .zero
    private var reconnectAttempts = 0
    /// Whether the join being negotiated is the first of this call (not a resume after a drop).
    private var joiningFirst = true
    /// The proof sent with the pending join (a new room asks for the verifier next, with the same proof).
    private var pendingProof: String?
    /// The password verifier, derived once (a deliberately slow key derivation).
    private lazy var passwordVerifier: [UInt8]? = configuration.password.map {
        RoomPassword.verifier(password: $0, room: roomName)
    }
    /// A broadcaster request the host has not granted yet: refused, the local role goes back to audience.
    private var askedToBroadcast = false
    /// Seals what this member sends (nil without end-to-end encryption).
    let sealer: MediaSealer?
    /// Opens what the others send.
    var opener: MediaOpener?
    private var lastStats: Duration = .zero
    /// The relay's last word on which of our layers anybody receives (kept across a media restart).
    var pendingLayerDemand: [Bool]?
    private var dominantSpeaker: UInt32?
    /// The tile report last sent, the one waiting for the rate limit, and when one last went out.
    private var sentTiles: [TileSize]?
    private var wantedTiles: [TileSize]?
    private var tilesSentAt: Duration?
    private var tilesTask: Scheduled<Void>?
    private var sentWindow = (videoFrames: 0, videoBytes: 0, audioBytes: 0)
    private var statsReports = 0

    init(configuration: CallConfiguration, loop: any EventLoop, videoSink: (any VideoFrameSink)?,
         devices: MediaDevices, emit: @escaping @Sendable (RoomEvent) -> Void,
         finish: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.devices = devices
        self.loop = loop
        self.videoSink = videoSink
        self.emit = emit
        self.finish = finish
        logger = configuration.logger
        microphoneMuted = configuration.microphoneMuted
        cameraOff = configuration.cameraOff
        role = configuration.role
        epoch = clock.now
        sealer = configuration.encryption.map { MediaSealer(encryption: $0) }
        opener = configuration.encryption.map { MediaOpener(encryption: $0) }
    }

    var now: Duration { clock.now - epoch }

    var statistics: CallStatistics {
        var stats = CallStatistics()
        stats.localID = joined?.you.id ?? 0
        stats.mediaBound = mediaBound
        stats.localMediaPort = udp?.localAddress?.port ?? 0
        stats.audioPacketsSent = audioSender?.packetsSent ?? 0
        stats.audioBytesSent = audioSender?.bytesSent ?? 0
        stats.audioPlannedLossPercent = audioLossPlan.percent
        stats.speakerUnderruns = speaker?.underruns ?? 0
        stats.speakerDropped = speaker?.dropped ?? 0
        stats.videoFramesSent = videoSender?.framesSent ?? 0
        stats.videoFramesCaptured = videoSender?.framesCaptured ?? 0
        stats.videoKeyframesSent = videoSender?.keyframesSent ?? 0
        stats.videoPacketsSent = videoSender?.packetsSent ?? 0
        stats.videoBytesSent = videoSender?.bytesSent ?? 0
        stats.keyframeRequestsReceived = keyframeRequestsReceived
        stats.videoPacketsResent = videoPacketsResent
        stats.datagramsFromStrangers = datagramsFromStrangers
        stats.forgedFeedbackDropped = forgedFeedbackDropped
        stats.encryption = configuration.encryption?.suite.name
        stats.videoLayers = videoSender?.layerSizes ?? []
        stats.activeVideoLayers = videoSender?.activeLayers ?? []
        stats.videoFramesSentPerLayer = videoSender?.framesSentPerLayer ?? []
        stats.dominantSpeaker = dominantSpeaker
        for (id, peer) in peers {
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
        }
        return stats
    }

    // MARK: - Lifecycle

    func start(bound: NIOLoopBound<EngineCore>) {
        guard case .idle = phase else { return }
        self.bound = bound
        phase = .connecting
        do {
            audioSink = try makeAudioSink()
        } catch {
            emit(.alert(.message("Audio output unavailable: \(error)")))
        }
        if case .speaker(let name) = configuration.audioSink, configuration.decodesAudio {
            openSpeaker(named: name)
        }
        openMediaSocket().whenComplete { result in
            let core = bound.value
            switch result {
            case .success(let channel):
                core.udp = channel
                core.connect(first: true)
            case .failure(let error):
                core.emit(.joinFailed(reason: "cannot open a UDP socket: \(error)"))
                core.phase = .left
                core.finish()
            }
        }
    }

    func leave() -> EventLoopFuture<Void> {
        // Also after a failed join (already `.left`): the speaker was opened before the relay answered.
        closeDevices()
        if case .left = phase { return loop.makeSucceededVoidFuture() }
        phase = .left
        stopMedia()
        reconnectTask?.cancel()
        lostTask?.cancel()
        bindTask?.cancel()
        for task in repeating { task.cancel() }
        repeating.removeAll()
        keepAliveTask?.cancel()
        signaling?.send(.leave)
        signaling?.close()
        signaling = nil
        finish()
        let loop = self.loop
        let closing = udp?.close() ?? loop.makeSucceededVoidFuture()
        return closing.flatMapError { _ in loop.makeSucceededVoidFuture() }
    }

    func dropSignaling() {
        signaling?.abort()
    }

    // MARK: - Signaling

    private func connect(first: Bool) {
        guard let bound else { return }
        let address = configuration.server
        let loop = self.loop
        SignalingConnection.connect(to: address, on: loop, security: configuration.signalingSecurity, trusted: { decision in
            // Called from the TLS handshake's task: hop onto the engine's loop before touching it.
            guard case .pinnedOnFirstUse(let fingerprint) = decision else { return }
            loop.execute {
                bound.value.emit(.alert(.message("relay \(address) pinned on first use: \(fingerprint)")))
            }
        }) { event in
            bound.value.handle(event)
        }.whenComplete { result in
            let core = bound.value
            if case .left = core.phase {
                if case .success(let connection) = result { connection.close() }
                return
            }
            switch result {
            case .success(let connection):
                core.signaling = connection
                core.lastHeard = core.now
                core.joiningFirst = first
                core.pendingProof = nil
                // A password or an account is proven against a fresh challenge; without either the join goes at once.
                if core.configuration.password != nil || core.configuration.account != nil {
                    connection.send(.challenge)
                } else {
                    core.sendJoin(proof: nil, verifier: nil)
                }
            case .failure(let error):
                // A relay showing another certificate than the pinned one is not retried, mid-call either.
                var refused = false
                if case SignalingConnectError.certificateChanged = error { refused = true }
                if first || refused {
                    core.emit(.joinFailed(reason: "\(error)"))
                    core.phase = .left
                    core.stopMedia()
                    core.finish()
                    core.udp?.close(promise: nil)
                } else {
                    core.scheduleReconnect()
                }
            }
        }
    }

    /// The room and display name as the relay checks them (its proof covers the cleaned names).
    private var roomName: String { (try? RoomName.validate(configuration.room)) ?? configuration.room }
    private var displayName: String { (try? DisplayName.validate(configuration.name)) ?? configuration.name }

    /// The account claim sent with the pending join (signed over its challenge).
    private var pendingClaim: AccountClaim?

    private func sendJoin(proof: String?, verifier: String?) {
        // After a drop, ask for the old membership back so the others never see us leave and rejoin.
        let resume = joiningFirst ? nil : joined.map {
            ResumeToken(member: $0.you.id, credential: $0.media.credential)
        }
        signaling?.send(.join(JoinRequest(
            room: configuration.room, name: configuration.name, role: role == .audience ? .audience : .broadcaster,
            audioMuted: microphoneMuted, videoMuted: cameraOff, resume: resume, proof: proof, verifier: verifier,
            encryption: configuration.encryption?.suite.name,
            videoKbps: configuration.profile.bitrateKbps.clamped(to: JoinRequest.videoKbpsRange),
            account: pendingClaim, hideRoom: configuration.hideRoom, videoLayers: declaredLayers)))
    }

    /// The layers this client's camera is sent in (what `VideoSender` will encode).
    private var declaredLayers: [VideoLayerSize] {
        VideoSender.plan(profile: configuration.profile, simulcast: configuration.simulcast).layers.map {
            VideoLayerSize(width: $0.width, height: $0.height)
        }
    }

    /// Sends the newest tile report if it changed, no sooner than 250 ms after the last.
    func reportTiles(_ tiles: [TileSize]) {
        wantedTiles = tiles
        sendTilesIfDue()
    }

    private func sendTilesIfDue() {
        guard case .joined = phase, let tiles = wantedTiles, tiles != sentTiles, tilesTask == nil else { return }
        let wait = tilesSentAt.map { .milliseconds(250) - (now - $0) } ?? .zero
        if wait > .zero, let bound {
            tilesTask = loop.scheduleTask(in: TimeAmount(wait)) {
                bound.value.tilesTask = nil
                bound.value.sendTilesIfDue()
            }
            return
        }
        signaling?.send(.tiles(TileReport(tiles: Array(tiles.prefix(maxReportedTiles)))))
        sentTiles = tiles
        tilesSentAt = now
    }

    private func answer(_ challenge: AccessChallenge) {
        guard let nonce = Hex.decode(challenge.nonce) else { return }
        if let account = configuration.account {
            let message = AccountIdentity.joinMessage(account: account.name, room: configuration.room,
                                                      name: configuration.name, challenge: nonce)
            pendingClaim = AccountClaim(name: account.name,
                                        signature: account.signatureText(message))
        }
        var proof: String?
        if let verifier = passwordVerifier {
            proof = Hex.encode(RoomPassword.proof(verifier: verifier, challenge: nonce, room: roomName,
                                                  name: displayName))
        }
        pendingProof = proof
        sendJoin(proof: proof, verifier: nil)
    }

    private func handle(_ event: SignalingEvent) {
        switch event {
        case .message(let message):
            lastHeard = now
            handle(message)
        case .invalid(let error):
            lastHeard = now
            logger.warning("relay sent an invalid message", metadata: ["error": "\(error)"])
        case .closed:
            signaling = nil
            switch phase {
            case .joined:
                phase = .reconnecting(since: now, announcedLost: false)
                reconnectAttempts = 0
                scheduleLostAlert()
                mediaBound = false
                emit(.alert(.interrupted))
                scheduleReconnect()
            case .connecting:
                emit(.joinFailed(reason: "the relay closed the connection before the join completed"))
                phase = .left
                stopMedia()
                finish()
            case .reconnecting:
                scheduleReconnect()
            case .idle, .left:
                break
            }
        }
    }

    /// The call counts as lost `lostAfter` into an interruption, whether the attempts so far failed or still hang.
    private func scheduleLostAlert() {
        guard let bound else { return }
        lostTask?.cancel()
        lostTask = loop.scheduleTask(in: timeAmount(configuration.lostAfter)) {
            let core = bound.value
            guard case .reconnecting(let since, false) = core.phase else { return }
            core.phase = .reconnecting(since: since, announcedLost: true)
            core.emit(.alert(.lost))
        }
    }

    private func scheduleReconnect() {
        guard case .reconnecting = phase, let bound else { return }
        reconnectTask?.cancel()
        reconnectTask = loop.scheduleTask(in: timeAmount(configuration.reconnectInterval)) {
            let core = bound.value
            guard case .reconnecting(_, let announcedLost) = core.phase else { return }
            // Said once per interruption: after that the status stays "reconnecting" (or "lost") until it is back.
            if core.reconnectAttempts == 0 && !announcedLost { core.emit(.alert(.reconnecting)) }
            core.reconnectAttempts += 1
            core.connect(first: false)
        }
    }

    private func handle(_ message: ServerMessage) {
        switch message {
        case .joined(let room):
            let rejoin: Bool
            if case .reconnecting = phase { rejoin = true } else { rejoin = false }
            didJoin(room, rejoin: rejoin)
        case .memberJoined(let notice):
            addPeer(notice.member)
        case .memberLeft(let left):
            guard let peer = peers.removeValue(forKey: left.id) else { return }
            ownerOfBlock[peer.info.ssrcs.block] = nil
            let reason: OfflineReason = switch left.reason {
            case .removed: .removed
            case .quit: .quit
            case .timeout: .timeout
            case .dropped: .dropped
            }
            emit(.userOffline(ParticipantID(left.id), reason: reason))
        case .mute(let mute):
            guard let peer = peers[mute.id] else { return }
            if peer.info.audioMuted != mute.audio { emit(.remoteAudioMuted(ParticipantID(mute.id), mute.audio)) }
            if peer.info.videoMuted != mute.video { emit(.remoteVideoMuted(ParticipantID(mute.id), mute.video)) }
            peer.info.audioMuted = mute.audio
            peer.info.videoMuted = mute.video
        case .chat(let chat) where chat.from == 0:
            // Posted in the room's channel from outside the call (the relay names the account).
            if chat.sealed == nil { emit(.channelMessage(sender: chat.name, text: chat.text)) }
        case .chat(let chat):
            guard chat.from != joined?.you.id else { return }  // our own line, echoed
            if let text = chatText(chat) { emit(.chatMessage(from: ParticipantID(chat.from), text: text)) }
        case .stats:
            break  // Receivers measure what arrives themselves; senders' reports are informative only.
        case .role(let change):
            let newRole: Role = change.role == .audience ? .audience : .broadcaster
            peers[change.id]?.info.role = change.role
            emit(.roleChanged(ParticipantID(change.id), newRole))
        case .pong:
            break
        case .challenge(let challenge):
            answer(challenge)
        case .host(let host):
            emit(.hostChanged(ParticipantID(host.id)))
        case .hand(let member):
            emit(.handRaised(ParticipantID(member.id)))
        case .videoLayers(let demand):
            pendingLayerDemand = demand.active
            videoSender?.setActiveLayers(demand.active)
        case .dominantSpeaker(let notice):
            dominantSpeaker = notice.id == 0 ? nil : notice.id
            emit(.dominantSpeaker(dominantSpeaker.map(ParticipantID.init)))
        case .chatHistory(let history):
            emit(.earlierChat(history.lines.map { line in
                line.kind == "message" ? ChatEntry(sender: line.from, text: line.text, time: .zero, kind: .chat)
                    : ChatEntry(sender: nil, text: line.words, time: .zero, kind: .system)
            }))
        case .removed(let removal):
            // Removed by the host: the call is over, and reconnecting would only walk back in.
            emit(.removedFromRoom(removal.message))
            phase = .left
            stopMedia()
            closeDevices()
            reconnectTask?.cancel()
            lostTask?.cancel()
            bindTask?.cancel()
            keepAliveTask?.cancel()
            for task in repeating { task.cancel() }
            repeating.removeAll()
            signaling?.close()
            signaling = nil
        case .error(let error) where error.code == .passwordSetup && pendingProof != nil:
            // Our room is new: it takes the password, given as its verifier (the password itself stays here).
            sendJoin(proof: pendingProof, verifier: passwordVerifier.map { Hex.encode($0) })
        case .error(let error) where error.code == .notAllowed && askedToBroadcast:
            askedToBroadcast = false
            role = .audience
            if let id = joined?.you.id { emit(.roleChanged(ParticipantID(id), .audience)) }
            emit(.alert(.message(error.message)))
        case .error(let error):
            if case .connecting = phase {
                emit(.joinFailed(reason: error.message))
                phase = .left
                stopMedia()
                signaling?.close()
                finish()
            } else {
                logger.notice("relay refused a message", metadata: ["error": "\(error)"])
                emit(.alert(.message("Relay: \(error.message)")))
            }
        }
    }

    private func didJoin(_ room: JoinedRoom, rejoin: Bool) {
        let previous = joined
        joined = room
        phase = .joined
        reconnectTask?.cancel()
        lostTask?.cancel()
        if rejoin {
            // Peers the relay still lists with the same id and SSRCs stay; the rest (everyone, after a relay
            // restart) go before the new local id is announced, since ids restart with the relay.
            for (id, peer) in peers.sorted(by: { $0.key < $1.key })
            where !room.members.contains(where: { $0.id == id && $0.ssrcs == peer.info.ssrcs }) {
                emit(.userOffline(ParticipantID(id), reason: .dropped))
            }
            peers.removeAll()
            ownerOfBlock.removeAll()
        }
        emit(.joined(localID: ParticipantID(room.you.id)))
        if !rejoin, let problem = room.accountProblem {
            emit(.alert(.message(problem)))
        } else if !rejoin, let account = room.you.account {
            emit(.notice("Joined as your account \(account) ✓ (others see it verified)"))
        }
        if rejoin { emit(.alert(.reconnected)) }
        pendingProof = nil
        // A new membership starts with the full layer of everyone: tell the relay again what we draw.
        sentTiles = nil
        tilesSentAt = nil
        sendTilesIfDue()
        // After a dropped connection the relay keeps our old self until its liveness timeout: not a participant.
        let ghost = previous.map { (id: $0.you.id, ssrcs: $0.media.ssrcs) }
        for member in room.members where !(member.id == ghost?.id && member.ssrcs == ghost?.ssrcs) {
            addPeer(member)
        }
        if room.host != 0 { emit(.hostChanged(ParticipantID(room.host))) }
        if !rejoin {
            emit(.security(CallSecurity(
                insecureTransport: configuration.insecureTransport,
                encryption: configuration.encryption?.suite.name, safetyCode: configuration.encryption?.safetyCode)))
        }
        if configuration.password != nil && !room.passwordProtected {
            emit(.alert(.message("\(room.room) has no password: anyone who knows its name can join")))
        }
        do {
            let media = configuration.mediaAddressOverride
                ?? ServerAddress(host: configuration.server.host, port: room.media.udpPort)
            relayMedia = try SocketAddress.makeAddressResolvingHost(media.host, port: media.port)
        } catch {
            emit(.alert(.message("Cannot resolve the relay's media address: \(error)")))
        }
        if previous == nil || previous?.media.ssrcs != room.media.ssrcs {
            do {
                try startMedia(ssrcs: room.media.ssrcs, participant: room.you.id)
            } catch {
                emit(.alert(.message("Media could not start: \(error)")))
            }
        }
        mediaBound = false
        bindAttempts = 0
        sendBind()
        startKeepAlive(livenessTimeout: room.livenessTimeout)
        if repeating.isEmpty { startSignalingTimers() }
    }

    private func addPeer(_ member: MemberInfo) {
        guard member.id != joined?.you.id else { return }
        if let existing = peers[member.id] {
            existing.info = member
        } else {
            do {
                peers[member.id] = try PeerReceiver(info: member)
            } catch {
                logger.error("cannot receive a member's media", metadata: ["member": "\(member.id)", "error": "\(error)"])
                return
            }
        }
        ownerOfBlock[member.ssrcs.block] = member.id
        let id = ParticipantID(member.id)
        emit(.userJoined(id, name: member.label, role: member.role == .audience ? .audience : .broadcaster))
        if member.audioMuted { emit(.remoteAudioMuted(id, true)) }
        if member.videoMuted { emit(.remoteVideoMuted(id, true)) }
    }

    /// Pings the relay often enough for its liveness timeout (announced in `joined`), and drops a connection the
    /// relay has gone silent on so the reconnect begins (`KeepAliveSchedule` decides both).
    private func startKeepAlive(livenessTimeout seconds: Double) {
        guard let bound else { return }
        let schedule = KeepAliveSchedule(configured: configuration.keepAliveInterval, livenessTimeout: seconds)
        keepAliveTask?.cancel()
        let period = timeAmount(schedule.interval)
        keepAliveTask = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
            let core = bound.value
            guard let signaling = core.signaling, case .joined = core.phase else { return }
            switch schedule.action(now: core.now, lastHeard: core.lastHeard) {
            case .reconnect:
                core.logger.notice(
                    "the relay went silent; reconnecting", metadata: ["after": "\(schedule.stallAfter)"])
                signaling.abort()
            case .ping:
                signaling.send(.ping(KeepAlive(token: UInt64(core.now.components.seconds))))
            }
        }
    }

    private func startSignalingTimers() {
        guard let bound else { return }
        repeating.append(loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.reportStatistics()
        })
        repeating.append(loop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { _ in
            bound.value.reportLevels()
        })
    }

    // MARK: - Effects

    func perform(_ effect: RoomEffect) {
        switch effect {
        case .setMicrophoneMuted(let muted):
            microphoneMuted = muted
            signaling?.send(.mute(MuteChange(audio: muted)))
        case .setCameraEnabled(let enabled):
            cameraOff = !enabled
            signaling?.send(.mute(MuteChange(video: !enabled)))
            if enabled { videoSender?.requestKeyframe() }
        case .switchCamera:
            switchCamera()
        case .setSpeakerEnabled(let enabled):
            speakerOn = enabled
        case .setFilter(let enabled):
            filterOn = enabled
        case .setRole(let newRole):
            askedToBroadcast = newRole == .broadcaster
            role = newRole
            signaling?.send(.role(RoleRequest(role: newRole == .audience ? .audience : .broadcaster)))
            if newRole == .broadcaster { videoSender?.requestKeyframe() }
        case .sendChat(let text):
            signaling?.send(.chat(chatMessage(text)))
        case .requestKeyframe(let participant):
            if let peer = peers[participant.rawValue] { sendKeyframeRequest(for: peer) }
        case .allowBroadcast(let participant):
            signaling?.send(.allow(MemberRef(id: participant.rawValue)))
        case .removeParticipant(let participant):
            signaling?.send(.remove(MemberRef(id: participant.rawValue)))
        case .leave:
            _ = leave()
        case .openDirect, .sendDirect, .openMessages, .copyToClipboard:
            break  // The messages connection's, not the call's: the terminal app carries them out.
        }
    }

    // MARK: - Media

    private func openMediaSocket() -> EventLoopFuture<any Channel> {
        let host = configuration.server.host.contains(":") ? "::" : "0.0.0.0"
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

    private func startMedia(ssrcs: MemberSSRCs, participant: UInt32) throws {
        stopMedia()
        let profile = configuration.profile
        audioSender = try AudioSender(source: makeAudioSource(participant: participant), ssrc: ssrcs.audio,
                                      expectedLossPercent: audioLossPlan.percent, random: &random)
        var sources: [VideoSender.Source] = []
        for choice in configuration.videoSources {
            do {
                let isCamera: Bool = if case .camera = choice { true } else { false }
                sources.append(VideoSender.Source(
                    name: choice == .synthetic ? "synthetic test picture" : choice.description, isCamera: isCamera,
                    source: try makeVideoSource(choice, participant: participant)))
            } catch {
                emit(.alert(.message("Camera \(choice): \(error)")))
            }
        }
        if sources.isEmpty {
            sources.append(VideoSender.Source(
                name: "synthetic test picture", isCamera: false,
                source: try makeVideoSource(.synthetic, participant: participant)))
        }
        videoSender = try VideoSender(sources: sources, profile: profile, ssrcs: ssrcs,
                                      simulcast: configuration.simulcast, random: &random)
        if let demand = pendingLayerDemand { videoSender?.setActiveLayers(demand) }
        guard let bound else { return }
        if case .microphone(let name) = configuration.audioSource, microphone == nil { openMicrophone(named: name) }
        let audio = PacedTimer(loop: loop, interval: .milliseconds(20)) { bound.value.audioTick() }
        let video = PacedTimer(loop: loop, interval: .microseconds(Int64(1_000_000 / max(1, profile.fps)))) {
            bound.value.videoTick()
        }
        // No separate video poll timer: a frame is decoded as its last packet arrives (`receive`), and the 20 ms
        // audio tick polls for NACK and keyframe-request timing. That spares 100 wake-ups a second.
        let rtcp = PacedTimer(loop: loop, interval: .seconds(1)) { bound.value.sendReports() }
        timers = [audio, video, rtcp]
        for timer in timers { timer.start(bound: NIOLoopBound(timer, eventLoop: loop)) }
    }

    private func stopMedia() {
        for timer in timers { timer.stop() }
        timers.removeAll()
        videoSender?.close()
    }

    /// Closes the real microphone and speaker (leaving the call).
    private func closeDevices() {
        microphone?.stop()
        microphone = nil
        speaker?.stop()
        speaker = nil
    }

    private func makeAudioSource(participant: UInt32) throws -> any AudioSource {
        switch configuration.audioSource {
        case .synthetic: SyntheticVoice(participant: participant)
        case .file(let path): try WAVFileSource(path: path)
        // A real microphone pushes its blocks (`captured`); this stands in whenever none is open.
        case .silence, .microphone: SilenceSource()
        }
    }

    private func makeVideoSource(_ choice: VideoSourceChoice, participant: UInt32) throws -> any VideoSource {
        switch choice {
        case .synthetic:
            SyntheticCamera(name: configuration.name, participant: participant, width: configuration.profile.width,
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

    private func makeAudioSink() throws -> (any AudioSink)? {
        switch configuration.audioSink {
        case .none, .speaker: nil
        case .file(let path): try WAVFileWriter(path: path)
        }
    }

    var sendsMedia: Bool { role == .broadcaster && mediaBound }

    private func audioTick() {
        if microphone == nil {
            do {
                if let packet = try audioSender?.tick(sending: sendsMedia && !microphoneMuted) {
                    send([packet])
                }
            } catch {
                logger.warning("audio capture failed", metadata: ["error": "\(error)"])
            }
        }
        if speaker == nil { playOutAudio() }
        pollVideo()
    }

    private func videoTick() {
        guard let sender = videoSender else { return }
        guard !cameraOff, role == .broadcaster else {
            sender.skipFrame()
            return
        }
        do {
            let frame = try sender.capture(filter: filterOn)
            if !sentFirstLocalFrame {
                sentFirstLocalFrame = true
                emit(.firstLocalFrame(VideoSize(width: frame.width, height: frame.height)))
            }
            if configuration.showsSelfView, let id = joined?.you.id {
                videoSink?.deliver(frame, from: ParticipantID(id))
            }
            if mediaBound {
                let packets = try sender.encode(frame)
                let at = now
                for packet in packets {
                    sentVideo.store(packet, ssrc: packet.header.ssrc, sequenceNumber: packet.header.sequenceNumber,
                                    at: at)
                }
                send(packets)
            } else {
                sender.skipFrame()
            }
        } catch {
            logger.warning("video capture or encoding failed", metadata: ["error": "\(error)"])
        }
    }

    /// Polls every peer's video jitter buffer (for NACK and keyframe timing); frames normally leave earlier, from
    /// `pollVideo(peer)` as their last packet arrives.
    private func pollVideo() {
        guard configuration.decodesVideo else { return }
        for peer in peers.values { pollVideo(peer, at: now) }
        udp?.flush()
    }

    /// Decodes and delivers what one peer's jitter buffer has completed; sends its NACKs and keyframe requests.
    private func pollVideo(_ peer: PeerReceiver, at: Duration) {
        let output = peer.videoBuffer.poll(at: at)
        for frame in output.frames {
            guard var picture = peer.decodeVideo(frame) else { continue }
            picture.timestampMicros = Int64(frame.timestamp)
            let size = VideoSize(width: picture.width, height: picture.height)
            if !peer.sawFirstFrame || peer.lastFrameSize != size {
                peer.sawFirstFrame = true
                emit(.firstRemoteFrame(peer.participant, size: size))
            }
            peer.lastFrameSize = size
            if let stamp = SyntheticCamera.readStamp(from: picture) { peer.lastStamp = stamp }
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
    private func resend(_ nack: GenericNACK) {
        let at = now
        if lastResent.count > 512 { lastResent = lastResent.filter { at - $0.value < .milliseconds(30) } }
        var packets: [RTPPacket] = []
        for sequenceNumber in nack.lostSequenceNumbers {
            if let last = lastResent[sequenceNumber], at - last < .milliseconds(30) { continue }
            guard let packet = sentVideo.packet(ssrc: nack.mediaSSRC, sequenceNumber: sequenceNumber, at: at)
            else { continue }
            lastResent[sequenceNumber] = at
            packets.append(packet)
        }
        videoPacketsResent += packets.count
        send(packets)
    }

    private func sendKeyframeRequest(for peer: PeerReceiver) {
        guard let own = joined?.media.ssrcs.audio else { return }
        let pli = PictureLossIndication(senderSSRC: own, mediaSSRC: peer.videoSSRC)
        sendRaw(RTCPPacket.pictureLossIndication(pli).serialized())
        peer.keyframeRequestsSent += 1
    }

    /// One 20 ms block of every peer's audio mixed (silence when the speaker is off or nobody talks).
    func mixBlock() -> [Int16] {
        let at = now
        var mix: [Int32]?
        // A peer that never sent audio (the audience, above all) has nothing to play: skipping it keeps a
        // broadcaster's cost flat however many watch.
        for peer in peers.values where peer.audioPacketsReceived > 0 {
            guard let frame = peer.playOut(at: at) else { continue }
            if mix == nil { mix = [Int32](repeating: 0, count: frame.samples.count) }
            guard mix!.count == frame.samples.count else { continue }
            for index in frame.samples.indices { mix![index] += Int32(frame.samples[index]) }
        }
        if speakerOn, let mix { return mix.map { Int16(clamping: $0) } }
        return [Int16](repeating: 0, count: AudioSender.samplesPerFrame)
    }

    private func playOutAudio() {
        guard configuration.decodesAudio else { return }
        let samples = mixBlock()
        guard let sink = audioSink else { return }
        do {
            try sink.write(AudioFrame(samples: samples))
        } catch {
            logger.warning("audio output failed; muting the speaker", metadata: ["error": "\(error)"])
            audioSink = nil
        }
    }

    private func sendReports() {
        guard mediaBound, let own = joined?.media.ssrcs else { return }
        let ntp = NTPTimestamp.from(unixTime: .milliseconds(WallClock.milliseconds))
        var packets: [RTCPPacket] = []
        if role == .broadcaster {
            if let audio = audioSender, !microphoneMuted {
                packets.append(.senderReport(audio.senderReport(ntpTimestamp: ntp)))
            }
            if let video = videoSender, !cameraOff {
                packets += video.senderReports(ntpTimestamp: ntp).map { .senderReport($0) }
            }
        }
        var blocks: [ReportBlock] = []
        for peer in peers.values.sorted(by: { $0.info.id < $1.info.id }) {
            if peer.audioPacketsReceived > 0 { blocks.append(peer.audio.makeReportBlock(now: now)) }
            if peer.videoPacketsReceived > 0 { blocks.append(peer.videoBuffer.makeReportBlock(now: now)) }
        }
        if !blocks.isEmpty { packets.append(.receiverReport(ReceiverReport(ssrc: own.audio, reports: blocks))) }
        if packets.isEmpty { return }
        packets.append(.sourceDescription(SourceDescription(ssrc: own.audio, cname: configuration.name)))
        sendRaw(RTCPPacket.serializeCompound(packets))
        udp?.flush()
    }

    private func reportStatistics() {
        let at = now
        let seconds = max(0.001, Double((at - lastStats).components.seconds)
            + Double((at - lastStats).components.attoseconds) / 1e18)
        lastStats = at
        for peer in peers.values.sorted(by: { $0.info.id < $1.info.id }) where peer.info.role == .broadcaster {
            emit(.remoteStats(peer.participant, peer.takeWindowStats(seconds: seconds)))
        }
        guard let video = videoSender, let audio = audioSender else { return }
        // What actually went out in this window, for the local tile's stats and for the room.
        // (New senders after a fresh rejoin start from zero: a negative window counts as zero.)
        let frames = max(0, video.framesSent - sentWindow.videoFrames)
        let videoKbps = Double(max(0, video.bytesSent - sentWindow.videoBytes)) * 8 / 1000 / seconds
        let audioKbps = Double(max(0, audio.bytesSent - sentWindow.audioBytes)) * 8 / 1000 / seconds
        sentWindow = (video.framesSent, video.bytesSent, audio.bytesSent)
        let sending = !cameraOff && role == .broadcaster
        let size = sending ? VideoSize(width: configuration.profile.width, height: configuration.profile.height) : nil
        emit(.localStats(MediaInfo(resolution: size, fps: Double(frames) / seconds, bitrateKbps: videoKbps)))
        statsReports += 1
        if statsReports % 2 == 0 {
            signaling?.send(.stats(SenderStats(
                width: size?.width ?? 0, height: size?.height ?? 0, fps: Double(frames) / seconds,
                videoKbps: videoKbps, audioKbps: audioKbps)))
        }
    }

    private func reportLevels() {
        if microphone != nil, let sender = audioSender {
            let level: Double? = microphoneMuted ? 0 : sender.level.level
            if meterReported.map({ abs($0 - (level ?? 0)) > 0.06 }) ?? true {
                meterReported = level
                emit(.microphoneLevel(level))
            }
        }
        if let sender = audioSender, let id = joined?.you.id {
            let level = microphoneMuted ? 0 : (sender.level.isSpeaking ? max(0.2, sender.level.level) : 0)
            if abs(level - localLevelReported) > 0.05 {
                localLevelReported = level
                emit(.audioLevel(ParticipantID(id), level))
            }
        }
        for peer in peers.values where peer.audioPacketsReceived > 0 {
            let level = peer.level.isSpeaking ? max(0.2, peer.level.level) : 0
            emit(.audioLevel(peer.participant, level))
        }
    }

    // MARK: - UDP

    private func sendBind() {
        guard case .joined = phase, let room = joined, let token = BindToken(hex: room.media.credential),
              let bound else { return }
        let request = BindRequest(ssrc: room.media.ssrcs.audio, memberID: room.you.id, token: token)
        sendRaw(request.serialized())
        udp?.flush()
        bindAttempts += 1
        // Every 250 ms until acknowledged, then every 5 s as a keep-alive for NAT bindings.
        let delay: TimeAmount = mediaBound ? .seconds(5) : .milliseconds(250)
        if !mediaBound && bindAttempts == 20 {
            emit(.alert(.message("The relay does not answer on UDP port \(room.media.udpPort): no media yet")))
        }
        bindTask?.cancel()
        bindTask = loop.scheduleTask(in: delay) { bound.value.sendBind() }
    }

    func send(_ packets: [RTPPacket]) {
        guard let udp, let relayMedia, !packets.isEmpty else { return }
        for plain in packets {
            guard let packet = sealed(plain) else { continue }
            let bytes = packet.serialized()
            var buffer = udp.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            udp.write(AddressedEnvelope(remoteAddress: relayMedia, data: buffer), promise: nil)
        }
        udp.flush()
    }

    private func sendRaw(_ bytes: [UInt8]) {
        guard let udp, let relayMedia else { return }
        var buffer = udp.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        udp.write(AddressedEnvelope(remoteAddress: relayMedia, data: buffer), promise: nil)
    }

    /// One datagram from the media socket. Only the relay's media address may speak to us: anyone else who reaches
    /// the port (a stranger spraying packets, a peer trying to bypass the relay) is dropped and counted.
    func receive(_ datagram: ByteBuffer, from remote: SocketAddress) {
        guard let relayMedia, remote == relayMedia else {
            datagramsFromStrangers += 1
            return
        }
        let bytes = Array(datagram.readableBytesView)
        switch MediaPacketKind.classify(bytes) {
        case .unknown:
            return
        case .rtp:
            guard let header = try? RTPHeaderView(parsing: bytes),
                  let owner = ownerOfBlock[header.ssrc & ~3], let peer = peers[owner],
                  let received = try? RTPPacket(parsing: bytes), let packet = opened(received, from: peer)
            else { return }
            if header.ssrc == peer.info.ssrcs.audio {
                guard configuration.decodesAudio else { return }
                peer.audioPacketsReceived += 1
                _ = peer.audio.insert(packet, at: now)
            } else if peer.info.ssrcs.layerIndex(of: header.ssrc) != nil {
                peer.countVideo(bytes: packet.payload.count)
                guard configuration.decodesVideo else { return }
                guard peer.acceptsVideo(packet) else {
                    if peer.wantsKeyframe { sendKeyframeRequest(for: peer) }
                    return
                }
                let at = now
                _ = peer.videoBuffer.insert(packet, at: at)
                // The marker ends a frame: decode it now rather than at the next tick (lower latency, fewer wake-ups).
                if packet.header.marker {
                    pollVideo(peer, at: at)
                    udp?.flush()
                }
            }
        case .rtcp:
            if Bind.isBindPacket(bytes) {
                guard let ack = try? BindAcknowledgement(parsing: bytes), ack.memberID == joined?.you.id else { return }
                switch ack.status {
                case .bound:
                    if !mediaBound {
                        mediaBound = true
                        videoSender?.requestKeyframe()
                        // Ask every sender for a fresh keyframe so video shows without waiting for the next one.
                        for peer in peers.values { sendKeyframeRequest(for: peer) }
                        bindTask?.cancel()
                        if let bound {
                            bindTask = loop.scheduleTask(in: .seconds(5)) { bound.value.sendBind() }
                        }
                    }
                case .unknownMember, .wrongToken:
                    logger.warning("relay refused the media bind", metadata: ["status": "\(ack.status)"])
                }
                return
            }
            guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
            for packet in packets {
                switch packet {
                case .pictureLossIndication(let pli):
                    guard let layer = joined?.media.ssrcs.layerIndex(of: pli.mediaSSRC) else {
                        forgedFeedbackDropped += 1
                        continue
                    }
                    keyframeRequestsReceived += 1
                    videoSender?.requestKeyframe(layer: layer)
                case .nack(let nack):
                    guard joined?.media.ssrcs.layerIndex(of: nack.mediaSSRC) != nil else {
                        forgedFeedbackDropped += 1
                        continue
                    }
                    resend(nack)
                case .receiverReport(let report):
                    // The relay passes on only the blocks about our own streams; the audio one steers FEC.
                    for block in report.reports where block.ssrc == joined?.media.ssrcs.audio {
                        if let percent = audioLossPlan.record(reporter: report.ssrc, fractionLost: block.fractionLost,
                                                              at: now) {
                            audioSender?.planForLoss(percent: percent)
                            logger.debug("audio FEC plans for loss", metadata: ["percent": "\(percent)"])
                        }
                    }
                case .senderReport(let report):
                    guard let owner = ownerOfBlock[report.ssrc & ~3], let peer = peers[owner] else {
                        forgedFeedbackDropped += 1
                        continue
                    }
                    if report.ssrc == peer.info.ssrcs.audio {
                        peer.audio.recordSenderReport(ntpTimestamp: report.ntpTimestamp, arrival: now)
                    } else if report.ssrc == peer.videoSSRC {
                        peer.videoBuffer.recordSenderReport(ntpTimestamp: report.ntpTimestamp, arrival: now)
                    }
                default:
                    continue
                }
            }
        }
    }
}

/// Hands the media socket's datagrams to the engine core.
private final class ClientMediaHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let core: NIOLoopBound<EngineCore>

    init(core: NIOLoopBound<EngineCore>) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        core.value.receive(envelope.data, from: envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors (relay restarting) must not close the media socket.
    }
}

/// Digital silence as a microphone.
final class SilenceSource: AudioSource {
    let sampleRate = 48_000
    let channels = 1
    private var timestamp: Int64 = 0

    func nextFrame(samplesPerChannel: Int) -> AudioFrame {
        defer { timestamp += Int64(samplesPerChannel) * 1_000_000 / 48_000 }
        return AudioFrame(samples: [Int16](repeating: 0, count: samplesPerChannel), timestampMicros: timestamp)
    }
}

func timeAmount(_ duration: Duration) -> TimeAmount {
    let parts = duration.components
    return .nanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
}

extension Int {
    /// This value moved into `range`.
    fileprivate func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
