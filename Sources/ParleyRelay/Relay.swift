import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// How to run a relay.
public struct RelayConfiguration: Sendable {
    /// Interface to listen on.
    public var host: String
    /// TCP port for WebSocket signaling; the UDP media port is the same number (0 picks free ports for both).
    public var port: Int
    /// Signaling limits (liveness timeout, rate limit).
    public var limits: SignalingLimits
    /// Media limits (keyframe request throttle, retransmission window).
    public var media: MediaLimits
    /// Rooms from the operator's rooms file (passwords, stage rules), by name.
    public var rooms: [String: ConfiguredRoom] = [:]
    /// The certificate and key signaling is served with (`wss://`); nil serves plain `ws://` (`--insecure`).
    public var tls: RelayIdentity? = nil
    /// Where logs go.
    public var logger: Logger
    /// Where accounts and direct messages are kept (`/parley/messages`); nil: the relay offers no messaging.
    public var messageStore: (any MessageStore)? = nil
    /// Limits of the messaging connections.
    public var messaging = MessagingLimits()

    /// A configuration; defaults are the production values.
    public init(host: String = "127.0.0.1", port: Int = 7878, limits: SignalingLimits = SignalingLimits(),
                media: MediaLimits = MediaLimits(), logger: Logger = Logger(label: "parley.relay")) {
        self.host = host
        self.port = port
        self.limits = limits
        self.media = media
        self.logger = logger
    }
}

/// Errors starting or running the relay.
public enum RelayError: Error, CustomStringConvertible {
    /// A socket could not be bound.
    case bindFailed(what: String, host: String, port: Int, underlying: any Error)
    /// The TLS certificate or key was refused by the TLS library.
    case tlsSetup(String)

    public var description: String {
        switch self {
        case .bindFailed(let what, let host, let port, let underlying):
            switch (underlying as? IOError)?.errnoCode {
            case EADDRINUSE:
                "port \(port) is already in use on \(host) (\(what)): another relay or program has it; pick another with --port"
            case EACCES:
                "port \(port) on \(host) needs privileges (\(what)): ports below 1024 need root; pick another with --port"
            case EADDRNOTAVAIL:
                "\(host) is not an address of this machine (\(what)); use 0.0.0.0 for all of them, or one that `ip addr` lists"
            default:
                "cannot listen for \(what) on \(host):\(port): \((underlying as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(underlying)")"
            }
        case .tlsSetup(let why):
            "cannot set up TLS for signaling: \(why)"
        }
    }
}

/// The Parley relay: WebSocket signaling plus an RTP/RTCP forwarder (SFU) on UDP. Everything runs on one event
/// loop, so the room state needs no locks; the hot path is one dictionary lookup and a batch of sends per packet.
public final class Relay: Sendable {
    /// The TCP port signaling listens on.
    public let signalingPort: Int
    /// The UDP port media uses.
    public let mediaPort: Int
    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    private let udpChannel: any Channel
    private let core: NIOLoopBound<RelayCore>
    private let logger: Logger
    /// Messaging between calls, when the relay has a store.
    public let messaging: MessagingService?

    private init(signalingPort: Int, mediaPort: Int, group: MultiThreadedEventLoopGroup, serverChannel: any Channel,
                 udpChannel: any Channel, core: NIOLoopBound<RelayCore>, logger: Logger, messaging: MessagingService?) {
        self.messaging = messaging
        self.signalingPort = signalingPort
        self.mediaPort = mediaPort
        self.group = group
        self.serverChannel = serverChannel
        self.udpChannel = udpChannel
        self.core = core
        self.logger = logger
    }

    /// Binds both sockets and starts serving.
    public static func start(_ configuration: RelayConfiguration) async throws -> Relay {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let logger = configuration.logger
        let messaging = configuration.messageStore.map {
            MessagingService(store: $0, limits: configuration.messaging, logger: logger)
        }
        let tls: NIOSSLContext?
        do {
            tls = try configuration.tls.map(Self.serverContext)
        } catch {
            try? await group.shutdownGracefully()
            throw RelayError.tlsSetup("\(error)")
        }
        do {
            let udpChannel: any Channel
            do {
                udpChannel = try await DatagramBootstrap(group: loop)
                    .channelOption(.socketOption(.so_reuseaddr), value: 1)
                    .channelOption(.datagramVectorReadMessageCount, value: 64)
                    // A larger receive queue (4 MB asked; Linux caps it at net.core.rmem_max and doubles it) rides out
                    // a busy moment of the event loop instead of dropping: the default 208 KB holds ~90 video
                    // packets, a few milliseconds under a flood of garbage (`parley-bench load`, hostile).
                    .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
                    .bind(host: configuration.host, port: configuration.port).get()
            } catch {
                throw RelayError.bindFailed(what: "media (UDP)", host: configuration.host, port: configuration.port,
                                            underlying: error)
            }
            let mediaPort = udpChannel.localAddress?.port ?? configuration.port
            let core = try await loop.submit {
                NIOLoopBound(
                    RelayCore(configuration: configuration, udpPort: mediaPort, udp: udpChannel, loop: loop),
                    eventLoop: loop)
            }.get()
            try await loop.submit {
                try udpChannel.pipeline.syncOperations.addHandler(MediaHandler(core: core))
                core.value.messaging = messaging
            }.get()
            // A message posted in a room's channel from outside the call shows in the call.
            let onLoop = try await loop.submit { core.value.onLoop }.get()
            messaging?.observeChannelPosts { line in
                guard line.post.kind == .message else { return }
                onLoop { core in
                    core.perform(core.state.channelLine(room: line.post.channel, from: line.post.sender,
                                                        text: line.post.text, time: line.post.postedAt))
                }
            }

            let serverChannel: any Channel
            do {
                serverChannel = try await ServerBootstrap(group: loop)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    // A deep accept queue: under a burst of handshakes (the hostile bench opens about a thousand a
                    // second) a full queue drops SYNs, and the client's retry waits a whole second. The kernel caps
                    // it at net.core.somaxconn.
                    .serverChannelOption(.backlog, value: 4096)
                    .serverChannelInitializer { [logger = configuration.logger] channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(AcceptErrorLog(logger: logger))
                        }
                    }
                    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                    .childChannelInitializer { channel in
                        // Every TCP connection counts against the relay's budget from accept to close, and one that
                        // has not become a WebSocket within the join timeout (a stalled TLS or HTTP handshake) is
                        // closed: the signaling layer's own join timeout starts only after the upgrade.
                        guard core.value.admitSocket() else { return channel.close() }
                        let handshake = channel.eventLoop.scheduleTask(
                            in: TimeAmount(core.value.state.limits.joinTimeout)
                        ) {
                            core.value.handshakeTimedOut()
                            channel.close(promise: nil)
                        }
                        channel.closeFuture.whenComplete { _ in
                            handshake.cancel()
                            core.value.socketClosed()
                        }
                        return Self.configureSignaling(channel, core: core, tls: tls, handshake: handshake,
                                                       messaging: messaging)
                    }
                    .bind(host: configuration.host, port: configuration.port == 0 ? 0 : configuration.port).get()
            } catch {
                try? await udpChannel.close()
                throw RelayError.bindFailed(what: "signaling (TCP)", host: configuration.host,
                                            port: configuration.port, underlying: error)
            }
            let signalingPort = serverChannel.localAddress?.port ?? configuration.port
            try await loop.submit { core.value.startTimers() }.get()
            logger.info("relay listening", metadata: [
                "host": "\(configuration.host)", "signaling": "\(signalingPort)/tcp", "media": "\(mediaPort)/udp",
            ])
            return Relay(signalingPort: signalingPort, mediaPort: mediaPort, group: group,
                         serverChannel: serverChannel, udpChannel: udpChannel, core: core, logger: logger,
                         messaging: messaging)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// What the relay refused and forwarded so far.
    public func counters() async throws -> RelayCounters {
        try await serverChannel.eventLoop.submit { [core] in core.value.counters }.get()
    }

    /// A snapshot of rooms and their members' ids, in join order.
    public func rooms() async throws -> [String: [UInt32]] {
        try await serverChannel.eventLoop.submit { [core] in core.value.state.rooms.mapValues(\.members) }.get()
    }

    /// A snapshot of one member's state as the relay sees it (mute flags, role), nil if not present.
    public func member(_ id: UInt32) async throws -> MemberInfo? {
        try await serverChannel.eventLoop.submit { [core] in core.value.state.members[id]?.info }.get()
    }

    /// Tells every member the relay is going away, closes all sockets and stops the event loop.
    public func shutdown() async {
        // Stop accepting first: a member whose connection is closed next reconnects within a moment, and must not
        // find the relay it is leaving still listening and rejoin it on its way out.
        try? await serverChannel.close()
        _ = try? await serverChannel.eventLoop.submit { [core] in core.value.shutDown() }.get()
        try? await udpChannel.close()
        try? await group.shutdownGracefully()
        logger.info("relay stopped")
    }

    private static func serverContext(_ identity: RelayIdentity) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(identity.certificateChainPEM.utf8))
        let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return try NIOSSLContext(configuration: configuration)
    }

    private static func configureSignaling(_ channel: any Channel, core: NIOLoopBound<RelayCore>,
                                           tls: NIOSSLContext?, handshake: Scheduled<Void>,
                                           messaging: MessagingService?) -> EventLoopFuture<Void>
    {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 2 * maxSignalingMessageBytes,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, head in
                handshake.cancel()
                return channel.eventLoop.makeCompletedFuture {
                    // `/parley/messages` is messaging between calls; everything else is a call's signaling.
                    let handler: any ChannelHandler =
                        if head.uri == MessagingService.path, let messaging {
                            MessagingHandler(service: messaging)
                        } else {
                            SignalingHandler(core: core)
                        }
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: WebSocketFailure.maximumFragments,
                            maxAccumulatedFrameSize: 2 * maxSignalingMessageBytes),
                        handler,
                    ])
                }
            })
        return channel.eventLoop.makeCompletedFuture {
            if let tls {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
            }
            // The plain-HTTP answerer sits after the HTTP codec; once upgraded it must go, or it would see raw bytes.
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                    context.pipeline.syncOperations.removeHandler(name: "parley.plain-http", promise: nil)
                }))
            try channel.pipeline.syncOperations.addHandler(PlainHTTPHandler(), name: "parley.plain-http")
        }
    }
}

/// The relay's state and sockets, confined to the relay's single event loop.
final class RelayCore {
    var state: RelayState
    var media: MediaRouter<SocketAddress>
    private var retransmissions: RetransmissionBuffer<ByteBuffer>
    private let udp: any Channel
    private let loop: any EventLoop
    private var channels: [ConnectionID: any Channel] = [:]
    private var nextConnection: UInt64 = 1
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private var timers: [RepeatedTask] = []
    private var destinations: [SocketAddress] = []
    private var layerDestinations: [(member: UInt32, address: SocketAddress)] = []
    /// Which simulcast layer of each sender each receiver gets.
    private(set) var layers = LayerForwarding()
    /// Each room's dominant speaker, from the levels in its audio.
    private(set) var speakers: [String: DominantSpeakerDetector] = [:]
    private var refusedBinds: LogThrottle<String>
    private var refusedFullLog = LogThrottle<String>(capacity: 1)
    private var refusedFull = 0
    private var openSockets = 0
    private var forwarded = 0
    private var retransmitted = 0
    private var nacksForwarded = 0
    let logger: Logger
    /// Accounts, presence and kept room chat; nil when the relay has no store.
    var messaging: MessagingService?

    init(configuration: RelayConfiguration, udpPort: Int, udp: any Channel, loop: any EventLoop) {
        state = RelayState(
            limits: configuration.limits, udpPort: udpPort,
            roomRule: { text in
                Result { () throws(NameError) in try RoomName.validate(text) }.mapError { NameRejection("\($0)") }
            },
            nameRule: { text in
                Result { () throws(NameError) in try DisplayName.validate(text) }.mapError { NameRejection("\($0)") }
            },
            configuredRooms: configuration.rooms, wallClock: { WallClock.milliseconds })
        state.keepsChat = configuration.messageStore != nil
        media = MediaRouter(limits: configuration.media)
        retransmissions = RetransmissionBuffer(retention: configuration.media.retransmissionWindow)
        refusedBinds = LogThrottle(window: configuration.media.refusedBindLogWindow)
        self.udp = udp
        self.loop = loop
        self.logger = configuration.logger
        epoch = clock.now
    }

    var now: Duration { clock.now - epoch }

    /// Runs work on this core's loop from another thread (the messaging queue's answers come back this way).
    var onLoop: @Sendable (@escaping @Sendable (RelayCore) -> Void) -> Void {
        let core = NIOLoopBound(self, eventLoop: loop), loop = self.loop
        return { body in loop.execute { body(core.value) } }
    }

    var counters: RelayCounters {
        var counters = state.counters
        counters.packetsForwarded = forwarded
        counters.refusedFull = refusedFull
        counters.limitsReached += refusedFull
        // Cross-room feedback is counted per NACK, PLI or report block, not per datagram.
        counters.packetsDropped = media.dropped.filter { $0.key != .otherRoom }.values.reduce(0, +)
        counters.forgedFeedback = media.dropped[.forgedFeedback] ?? 0
        counters.crossRoomFeedback = media.dropped[.otherRoom] ?? 0
        counters.oversizedKeyframes = media.dropped[.oversizedKeyframe] ?? 0
        counters.unallottedSSRC = media.dropped[.unallottedSSRC] ?? 0
        counters.retainedStreams = retransmissions.streamCount
        counters.retainedPackets = retransmissions.storedPackets
        counters.releasedPackets = retransmissions.releasedPackets
        counters.limitsReached += media.dropped[.overRate] ?? 0
        counters.keyframeRequestsThrottled = media.throttledKeyframeRequests
        counters.retransmissionsServed = retransmitted
        counters.nacksForwardedToSenders = nacksForwarded
        return counters
    }

    /// Liveness every 250 ms; held-back keyframe requests every 50 ms; packets past the retransmission window
    /// released and held-back refused-bind counts written every second. Cancelled by `shutDown`.
    func startTimers() {
        let core = NIOLoopBound(self, eventLoop: loop)
        timers.append(loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let core = core.value
            core.retransmissions.dropExpired(at: core.now)
            for (source, heldBack) in core.refusedBinds.expire(at: core.now) {
                core.logger.notice("bind refused, held back", metadata: [
                    "source": "\(source)", "held_back": "\(heldBack)",
                ])
            }
        })
        let decision = TimeAmount(DominantSpeakerDetector.decisionInterval)
        timers.append(loop.scheduleRepeatedTask(initialDelay: decision, delay: decision) { _ in
            core.value.decideSpeakers()
        })
        timers.append(loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            // A switch still waiting for its keyframe (the request or the keyframe was lost) asks again.
            let core = core.value
            core.performLayerEffects(core.layers.pendingSwitches())
        })
        timers.append(loop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in
            let core = core.value
            core.perform(core.state.tick(now: core.now))
        })
        timers.append(loop.scheduleRepeatedTask(initialDelay: .milliseconds(50), delay: .milliseconds(50)) { _ in
            let core = core.value
            for (member, bytes) in core.media.dueKeyframeRequests(at: core.now) {
                core.send(bytes, toMember: member)
            }
            core.udp.flush()
        })
    }

    func shutDown() {
        for timer in timers { timer.cancel() }
        perform(state.shutDown())
    }

    /// A TCP connection just accepted: true when it may go on to its handshake, false when the relay already holds
    /// `limits.connections` (it is then closed unanswered, counted, and logged once a minute). Every admitted
    /// connection is given back with ``socketClosed()``.
    func admitSocket() -> Bool {
        guard openSockets < state.limits.connections else {
            refusedFull += 1
            if let heldBack = refusedFullLog.admit("full", at: now) {
                logger.error("""
                    refusing new connections: the relay holds \(openSockets) connections, its limit \
                    (--max-connections, or raise ulimit -n); calls in progress go on
                    """, metadata: heldBack > 0 ? ["held_back": "\(heldBack)"] : [:])
            }
            return false
        }
        openSockets += 1
        return true
    }

    /// A connection that did not finish its TLS/HTTP handshake within the join timeout is being closed.
    func handshakeTimedOut() {
        state.counters.joinTimeouts += 1
    }

    /// An admitted TCP connection closed.
    func socketClosed() {
        openSockets -= 1
    }

    func register(_ channel: any Channel) -> ConnectionID {
        let id = ConnectionID(nextConnection)
        nextConnection += 1
        channels[id] = channel
        logger.debug("signaling connected", metadata: [
            "connection": "\(id)", "peer": "\(channel.remoteAddress.map { "\($0)" } ?? "?")",
        ])
        perform(state.connected(id, from: channel.remoteAddress?.ipAddress, now: now))
        return id
    }

    func unregister(_ id: ConnectionID) {
        guard channels.removeValue(forKey: id) != nil else { return }
        perform(state.disconnected(id, now: now))
        logger.debug("signaling closed", metadata: ["connection": "\(id)"])
    }

    func received(_ text: String, on id: ConnectionID) {
        let before = state.counters
        perform(state.received(text, on: id, now: now))
        if state.counters.signalingErrors != before.signalingErrors {
            logger.notice("refused signaling message", metadata: ["connection": "\(id)", "bytes": "\(text.utf8.count)"])
        }
    }

    func refused(on id: ConnectionID, reason: String, code: SignalingErrorCode = .badJSON) {
        perform(state.refusedFrame(id, reason: reason, code: code))
    }

    /// A frame NIO refused and answered itself with a close frame: counted, and nothing more is sent.
    func countRefusedFrame(on id: ConnectionID) {
        state.counters.refusedFrames += 1
    }

    func perform(_ actions: [RelayAction]) {
        for action in actions {
            switch action {
            case .send(let message, let targets):
                if case .mute(let mute) = message {
                    logger.info("member mute", metadata: [
                        "member": "\(mute.id)", "audio": "\(mute.audio)", "video": "\(mute.video)",
                    ])
                }
                guard !targets.isEmpty else { continue }
                let text = message.encoded()
                for target in targets {
                    guard let channel = channels[target] else { continue }
                    var buffer = channel.allocator.buffer(capacity: text.utf8.count)
                    buffer.writeString(text)
                    channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
                }
            case .close(let target):
                guard let channel = channels.removeValue(forKey: target) else { continue }
                var data = channel.allocator.buffer(capacity: 2)
                data.write(webSocketErrorCode: .normalClosure)
                channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
                    .whenComplete { _ in channel.close(promise: nil) }
            case .memberAdded(let id, let room):
                if let member = state.members[id] {
                    media.add(member: id, room: room, ssrcs: member.info.ssrcs, role: member.info.role,
                              videoKbps: member.videoKbps, videoLayers: member.videoLayers?.count ?? 1)
                    performLayerEffects(layers.add(member: id, room: room, layers: member.videoLayers))
                    if let dominant = speakers[room]?.dominant, let connection = member.connection {
                        perform([.send(.dominantSpeaker(DominantSpeakerNotice(id: dominant)), to: [connection])])
                    }
                }
                logger.info("member joined", metadata: ["member": "\(id)", "room": "\(room)"])
            case .memberRemoved(let id, let room):
                if let route = media.route(of: id) {
                    // Every stream of the block, so nothing a member stored outlives it.
                    for offset in UInt32(0)...3 { retransmissions.removeStream(ssrc: route.ssrcs.block + offset) }
                }
                media.forget(member: id)
                performLayerEffects(layers.remove(member: id))
                speakers[room]?.remove(id)
                if speakers[room]?.memberCount == 0 { speakers[room] = nil }
                logger.info("member left", metadata: ["member": "\(id)", "room": "\(room)"])
            case .roleChanged(let id, let role):
                media.setRole(role, of: id)
            case .tiles(let id, let report):
                performLayerEffects(layers.report(report, from: id))
            case .checkAccount(let connection, let account, let message, let signature):
                guard let messaging else {
                    perform(state.accountChecked(
                        connection, .unverified("this relay keeps no accounts; you joined as a guest"), now: now))
                    continue
                }
                let onLoop = onLoop
                messaging.checkAccount(account, message: message, signature: signature) { check in
                    onLoop { core in core.perform(core.state.accountChecked(connection, check, now: core.now)) }
                }
            case .roomChat(let room, let id, let sender, let text, let time):
                messaging?.roomChat(room: room, id: id, sender: sender, text: text, time: time)
            case .callActivity(let activity):
                // A joiner (its connection is named) gets the room's kept lines from before it.
                var history: (@Sendable ([StoredChannelPost]) -> Void)?
                if let connection = activity.connection {
                    let onLoop = onLoop
                    history = { lines in
                        guard !lines.isEmpty else { return }
                        let message = ServerMessage.chatHistory(ChatHistory.fitting(room: activity.room, lines: lines.map {
                            ChatHistoryLine(kind: $0.post.kind.rawValue, from: $0.post.sender, text: $0.post.text,
                                            time: $0.post.postedAt, members: $0.members)
                        }))
                        onLoop { $0.perform([.send(message, to: [connection])]) }
                    }
                }
                messaging?.callActivity(activity, history: history)
            }
        }
    }

    // MARK: - Simulcast and the dominant speaker

    /// Carries out what a change of layers asks for: keyframe requests (throttled) and demands to senders.
    func performLayerEffects(_ effects: [LayerForwarding.Effect]) {
        for effect in effects {
            switch effect {
            case .requestKeyframe(let sender, let layer):
                guard let route = media.route(of: sender),
                      let (member, bytes) = media.keyframeRequest(for: route.ssrcs.videoLayer(layer), at: now)
                else { continue }
                send(bytes, toMember: member)
            case .demand(let sender, let active):
                guard let connection = state.members[sender]?.connection else { continue }
                perform([.send(.videoLayers(VideoLayerDemand(active: active)), to: [connection])])
            }
        }
    }

    /// One decision per room; a new dominant speaker is announced to the room.
    func decideSpeakers() {
        let at = now
        for room in Array(speakers.keys) {
            guard let dominant = speakers[room]?.decide(at: at) else { continue }
            perform([.send(.dominantSpeaker(DominantSpeakerNotice(id: dominant)),
                           to: state.connections(in: room, except: nil))])
        }
    }

    // MARK: - Media

    /// One datagram from the media socket. The RTP path is a header peek, one lookup, and a write per destination
    /// sharing the received buffer; only video packets are copied, into the retransmission buffer.
    func handleDatagram(_ envelope: AddressedEnvelope<ByteBuffer>) {
        let data = envelope.data
        let remote = envelope.remoteAddress
        switch data.withUnsafeReadableBytes({ MediaPacketKind.classify($0) }) {
        case .unknown:
            media.count(.notMedia)
        case .rtp:
            forwardRTP(data, from: remote)
        case .rtcp:
            if data.withUnsafeReadableBytes({ Bind.isBindPacket($0) }) {
                bind(data, from: remote)
            } else {
                handleRTCP(data, from: remote)
            }
        }
    }

    private func forwardRTP(_ data: ByteBuffer, from remote: SocketAddress) {
        let parsed = data.withUnsafeReadableBytes { raw -> (RTPHeaderView, Bool, Bool, AudioLevelIndication?)? in
            guard let header = try? RTPHeaderView(parsing: raw) else { return nil }
            let payload = UnsafeRawBufferPointer(rebasing: raw[header.payloadRange])
            guard header.payloadType == MediaPayloadType.vp8 else {
                return (header, false, true, AudioLevelIndication(packet: raw, header: header))
            }
            let keyframe = VP8PayloadDescriptor.startsKeyframe(payload)
            let allowed = !keyframe || VP8PayloadDescriptor.keyframeSize(payload).map(VP8Limits.allows) ?? true
            return (header, keyframe, allowed, nil)
        }
        guard let (header, keyframe, allowed, level) = parsed else {
            media.count(.malformed)
            return
        }
        guard allowed else {
            media.count(.oversizedKeyframe)
            return
        }
        guard let route = media.sender(ssrc: header.ssrc, from: remote) else { return }
        guard route.role == .broadcaster else {
            media.count(.audienceSending)
            return
        }
        guard media.admitMedia(from: route.member, bytes: data.readableBytes, at: now) else { return }
        if header.ssrc != route.ssrcs.audio {
            // A copy, so the stored packet does not pin the whole receive batch buffer for the retention window.
            var copy = udp.allocator.buffer(capacity: data.readableBytes)
            copy.writeImmutableBuffer(data)
            retransmissions.store(copy, ssrc: header.ssrc, sequenceNumber: header.sequenceNumber, at: now)
            if keyframe { media.keyframeForwarded(ssrc: header.ssrc) }
            // Each receiver gets the one layer of this sender its tile needs.
            let layer = route.ssrcs.layerIndex(of: header.ssrc) ?? 0
            media.destinations(from: route.member, in: route.room, into: &layerDestinations)
            var count = 0
            for (member, address) in layerDestinations
            where layers.forwards(layer: layer, startsKeyframe: keyframe, from: route.member, to: member) {
                udp.write(AddressedEnvelope(remoteAddress: address, data: data), promise: nil)
                count += 1
            }
            forwarded += count
            if layers.hasSwitches { performLayerEffects(layers.takeDemandChanges()) }
            return
        }
        if let level { speakers[route.room, default: DominantSpeakerDetector()].record(level, from: route.member, at: now) }
        media.destinations(from: route.member, in: route.room, into: &destinations)
        for address in destinations {
            udp.write(AddressedEnvelope(remoteAddress: address, data: data), promise: nil)
        }
        forwarded += destinations.count
    }

    private func bind(_ data: ByteBuffer, from remote: SocketAddress) {
        guard let request = try? BindRequest(parsing: Array(data.readableBytesView)) else {
            media.count(.malformed)
            return
        }
        let status = state.verifyBind(request)
        if status == .bound {
            if media.route(of: request.memberID)?.address != remote {
                logger.info("media bound", metadata: ["member": "\(request.memberID)", "address": "\(remote)"])
            }
            media.bind(member: request.memberID, to: remote)
        } else {
            media.count(.badBind)
            // A spray of bad binds must not flood the log: one line per source address a minute, with a count.
            let source = remote.ipAddress ?? "\(remote)"
            if let heldBack = refusedBinds.admit(source, at: now) {
                logger.notice("bind refused", metadata: [
                    "member": "\(request.memberID)", "status": "\(status)", "source": "\(source)",
                    "held_back": "\(heldBack)",
                ])
            }
        }
        let ack = BindAcknowledgement(ssrc: request.ssrc, memberID: request.memberID, status: status).serialized()
        udp.write(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: ack)), promise: nil)
    }

    private func handleRTCP(_ data: ByteBuffer, from remote: SocketAddress) {
        guard let packets = try? data.withUnsafeReadableBytes({ try RTCPPacket.parseCompound($0) }),
              let senderSSRC = packets.lazy.compactMap(\.senderSSRC).first
        else {
            media.count(.malformed)
            return
        }
        guard let route = media.sender(ssrc: senderSSRC, from: remote) else { return }
        let at = now
        // A keyframe request names the layer the receiver last saw; it is for the layer it gets or waits for.
        let requests = packets.compactMap { packet -> RTCPPacket? in
            guard case .pictureLossIndication(var pli) = packet, let owner = media.owner(of: pli.mediaSSRC),
                  owner != route.member, let ownerRoute = media.route(of: owner),
                  ownerRoute.ssrcs.layerIndex(of: pli.mediaSSRC) != nil
            else { return packet }
            guard let layer = layers.keyframeLayer(of: owner, for: route.member) else { return nil }
            pli.mediaSSRC = ownerRoute.ssrcs.videoLayer(layer)
            return .pictureLossIndication(pli)
        }
        for action in media.feedback(requests, from: route, at: at) {
            switch action {
            case .forwardToRoom:
                media.destinations(from: route.member, in: route.room, into: &destinations)
                for address in destinations {
                    udp.write(AddressedEnvelope(remoteAddress: address, data: data), promise: nil)
                }
                forwarded += destinations.count
            case .sendToMember(let member, let bytes):
                send(bytes, toMember: member)
            case .retransmit(let ssrc, let sequenceNumbers):
                var missing: [UInt16] = []
                for sequenceNumber in sequenceNumbers {
                    guard let packet = retransmissions.packet(ssrc: ssrc, sequenceNumber: sequenceNumber, at: at)
                    else {
                        missing.append(sequenceNumber)
                        continue
                    }
                    udp.write(AddressedEnvelope(remoteAddress: remote, data: packet), promise: nil)
                    retransmitted += 1
                }
                // Lost between the sender and the relay: only the sender can resend it (to the whole room).
                if !missing.isEmpty, let owner = media.owner(of: ssrc), owner != route.member {
                    let nack = GenericNACK(senderSSRC: route.ssrcs.audio, mediaSSRC: ssrc, lost: missing)
                    send(RTCPPacket.nack(nack).serialized(), toMember: owner)
                    nacksForwarded += 1
                }
            }
        }
    }

    private func send(_ bytes: [UInt8], toMember member: UInt32) {
        guard let address = media.route(of: member)?.address else { return }
        udp.write(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
        forwarded += 1
    }
}

/// The media socket's datagrams, handed to the core; one flush per read batch lets NIO use sendmmsg.
final class MediaHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let core: NIOLoopBound<RelayCore>

    init(core: NIOLoopBound<RelayCore>) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.value.handleDatagram(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable for a departed peer and similar: never fatal for the relay.
        core.value.logger.debug("media socket error", metadata: ["error": "\(error)"])
    }
}

/// One WebSocket's frames in and out; all decisions are the core's.
final class SignalingHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let core: NIOLoopBound<RelayCore>
    private var id: ConnectionID?
    /// Set once the connection is being failed: what arrives after is dropped, and nothing follows the close frame.
    private var failing = false

    init(core: NIOLoopBound<RelayCore>) {
        self.core = core
    }

    func handlerAdded(context: ChannelHandlerContext) {
        id = core.value.register(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let id { core.value.unregister(id) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard let id, !failing else { return }
        if let reason = WebSocketFailure.unexpected(frame) {
            core.value.refused(on: id, reason: reason)
            failing = true
            WebSocketFailure.close(context.channel, status: .protocolError)
            return
        }
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            let text = data.readString(length: data.readableBytes) ?? ""
            core.value.received(text, on: id)
        case .binary:
            core.value.refused(on: id, reason: "binary frames are not part of the protocol; send JSON text")
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)),
                                  promise: nil)
        case .connectionClose:
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
                .whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !failing else { return }
        failing = true
        switch WebSocketFailure(error) {
        case .answeredByNIO:
            if let id { core.value.countRefusedFrame(on: id) }
        case .refuse(let reason, let status):
            if let id { core.value.refused(on: id, reason: reason, code: WebSocketFailure.errorCode(for: status)) }
            WebSocketFailure.close(context.channel, status: status)
        case .closeQuietly:
            context.close(promise: nil)
        }
    }
}

/// Answers plain HTTP requests (a browser, a health check) with a one-line description instead of hanging.
final class PlainHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let body = "Parley relay: connect with a WebSocket (protocol version \(signalingProtocolVersion)).\n"
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(buffer.readableBytes)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .upgradeRequired,
                                                             headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
