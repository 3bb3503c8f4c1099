import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

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
    let core: NIOLoopBound<RelayCore>
    private let logger: Logger
    /// Messaging between calls, when the relay has a store.
    public let messaging: MessagingService?
    /// The operators' `/metrics` and `/healthz`, when `--admin` asked for them.
    private let admin: AdminServer?
    /// The TCP port `/metrics` and `/healthz` are served on, nil when they are not.
    public var adminPort: Int? { admin?.port }

    private init(
        signalingPort: Int, mediaPort: Int, group: MultiThreadedEventLoopGroup, serverChannel: any Channel,
        udpChannel: any Channel, core: NIOLoopBound<RelayCore>, logger: Logger, messaging: MessagingService?,
        admin: AdminServer?
    ) {
        self.messaging = messaging
        self.admin = admin
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
        if let admin = configuration.admin, admin.isPublicPort(host: configuration.host, port: configuration.port) {
            try? await group.shutdownGracefully()
            throw RelayError.adminOnPublicPort(admin, publicHost: configuration.host, publicPort: configuration.port)
        }
        // With `/metrics` served, every store call is timed on its way through (`MeasuredMessageStore`).
        let metrics = configuration.admin.map { _ in RelayMetrics() }
        let store = configuration.messageStore.map { store in
            metrics.map { MeasuredMessageStore(store, metrics: $0) } ?? store
        }
        let messaging = store.map {
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
            let udpChannel = try await bindMedia(configuration, on: loop)
            let mediaPort = udpChannel.localAddress?.port ?? configuration.port
            let core = try await loop.submit {
                NIOLoopBound(
                    RelayCore(configuration: configuration, udpPort: mediaPort, udp: udpChannel, loop: loop),
                    eventLoop: loop)
            }.get()
            try await loop.submit {
                try udpChannel.pipeline.syncOperations.addHandler(
                    DatagramHandler(core: core, socket: "media") { $0.handleDatagram($1) })
                core.value.messaging = messaging
            }.get()
            try await showChannelPostsInCalls(messaging, core: core)
            let serverChannel: any Channel
            do {
                serverChannel = try await bindSignaling(configuration, core: core, tls: tls, messaging: messaging)
            } catch {
                try? await udpChannel.close()
                throw error
            }
            let signalingPort = serverChannel.localAddress?.port ?? configuration.port
            var admin: AdminServer?
            if let address = configuration.admin, let metrics {
                do {
                    admin = try await AdminServer.start(
                        at: address,
                        endpoints: Self.adminEndpoints(
                            core: core, metrics: metrics, store: configuration.messageStore,
                            busLag: configuration.busLag, cluster: configuration.clusterCounters),
                        logger: logger)
                } catch {
                    try? await serverChannel.close()
                    try? await udpChannel.close()
                    throw RelayError.adminBindFailed(address, underlying: error)
                }
            }
            try await loop.submit { core.value.startTimers() }.get()
            logger.info(
                "relay listening",
                metadata: [
                    "host": "\(configuration.host)", "signaling": "\(signalingPort)/tcp", "media": "\(mediaPort)/udp",
                ])
            return Relay(
                signalingPort: signalingPort, mediaPort: mediaPort, group: group,
                serverChannel: serverChannel, udpChannel: udpChannel, core: core, logger: logger,
                messaging: messaging, admin: admin)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// The media socket (UDP), with a receive queue deep enough for a busy moment of the loop.
    private static func bindMedia(_ configuration: RelayConfiguration, on loop: any EventLoop) async throws
        -> any Channel
    {
        do {
            return try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.datagramVectorReadMessageCount, value: 64)
                // A larger receive queue (4 MB asked; Linux caps it at net.core.rmem_max and doubles it) rides out
                // a busy moment of the event loop instead of dropping: the default 208 KB holds ~90 video
                // packets, a few milliseconds under a flood of garbage (`parley-bench load`, hostile).
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
                .bind(host: configuration.host, port: configuration.port).get()
        } catch {
            throw RelayError.bindFailed(
                what: "media (UDP)", host: configuration.host, port: configuration.port, underlying: error)
        }
    }

    /// A message posted in a room's channel from outside the call shows in the call.
    private static func showChannelPostsInCalls(_ messaging: MessagingService?, core: NIOLoopBound<RelayCore>)
        async throws
    {
        let onLoop = try await core.eventLoop.submit { core.value.onLoop }.get()
        messaging?.observeChannelPosts { line in
            // A line said in a call reached the calls of its room on every node already (`roomChat`).
            guard line.post.kind == .message, !line.post.id.hasPrefix("call-") else { return }
            onLoop { core in
                core.perform(
                    core.state.channelLine(
                        room: line.post.channel, from: line.post.sender,
                        text: line.post.text, time: line.post.postedAt))
            }
        }
    }

    /// The signaling socket (TCP, WebSocket, optionally TLS): every connection counts against the relay's budget.
    private static func bindSignaling(
        _ configuration: RelayConfiguration, core: NIOLoopBound<RelayCore>, tls: NIOSSLContext?,
        messaging: MessagingService?
    ) async throws -> any Channel {
        do {
            return try await ServerBootstrap(group: core.eventLoop)
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
                    return Self.configureSignaling(
                        channel, core: core, tls: tls, handshake: handshake, messaging: messaging,
                        page: configuration.webPage)
                }
                .bind(host: configuration.host, port: configuration.port).get()
        } catch {
            throw RelayError.bindFailed(
                what: "signaling (TCP)", host: configuration.host, port: configuration.port, underlying: error)
        }
    }

    /// Makes the relay a node of a cluster that places rooms: from now on a join for a room not open here asks
    /// `placer` where the room lives, and is redirected when it lives on another node.
    public func placeRooms(with placer: any RoomPlacer) async throws {
        try await serverChannel.eventLoop.submit { [core] in
            core.value.placer = placer
            core.value.state.placesRooms = true
        }.get()
    }

    /// Makes the relay a node whose rooms span the cluster (`--placement spread`): its members joining, changing and
    /// leaving are published on `bus`, and the other nodes' come in through `clusterEvents`. Their media crosses
    /// the trunks (`openTrunks`).
    public func spanRooms(over bus: any ClusterBus) async throws {
        try await serverChannel.eventLoop.submit { [core] in
            core.value.bus = bus
            core.value.state.spansNodes = true
            core.value.state.nodeID = bus.nodeID
            // Members that joined before the node spanned rooms are announced now.
            core.value.perform(core.value.state.rejoinBus(now: core.value.now))
        }.get()
    }

    /// The bus (re)connected: the rooms here are opened and their members announced again, so that what the other
    /// nodes said while this node was not listening is said again (`RelayState.rejoinBus`).
    public func busConnected() {
        core.eventLoop.execute { [core] in
            let core = core.value
            core.perform(core.state.rejoinBus(now: core.now))
        }
    }

    /// Events from `node`'s bus batch, for the rooms here. Handed to the event loop in the order of the calls
    /// (call from one thread, as the bus does).
    public func clusterEvents(_ events: [ClusterEvent], from node: String) {
        let roomEvents = events.filter {
            switch $0 {
            case .roomMember, .roomMemberLeft, .roomOpened, .roomChat, .roomControl, .nodeGone: true
            default: false
            }
        }
        guard !roomEvents.isEmpty else { return }
        core.eventLoop.execute { [core] in
            let core = core.value
            for event in roomEvents { core.perform(core.state.clusterEvent(event, from: node, now: core.now)) }
        }
    }

    /// Replaces the rooms' settings (passwords, stage rules) for rooms opened from now on; open rooms keep theirs.
    public func configureRooms(_ rooms: [String: ConfiguredRoom]) async throws {
        try await serverChannel.eventLoop.submit { [core] in core.value.state.configuredRooms = rooms }.get()
    }

    /// What the relay refused and forwarded so far.
    public func counters() async throws -> RelayCounters {
        try await serverChannel.eventLoop.submit { [core] in core.value.counters }.get()
    }

    /// Members, rooms and totals in one look at the relay's state, for `/metrics` and the cluster's heartbeat.
    public func sample() async throws -> RelaySample {
        try await Self.sample(core).get()
    }

    private static func sample(_ core: NIOLoopBound<RelayCore>) -> EventLoopFuture<RelaySample> {
        core.eventLoop.submit {
            let core = core.value
            return RelaySample(
                members: core.state.localMemberCount, rooms: core.state.localRoomCount, counters: core.counters)
        }
    }

    /// `/metrics` reads the relay's state on its event loop, then emits; `/healthz` checks that the relay's event
    /// loop runs a task within 2 s, then asks the configured store itself (not the measured one, so probes stay
    /// out of the store's latency).
    private static func adminEndpoints(
        core: NIOLoopBound<RelayCore>, metrics: RelayMetrics, store: (any MessageStore)?,
        busLag: (@Sendable () async -> Duration?)?, cluster: (@Sendable () -> ClusterCounters?)?
    ) -> AdminEndpoints {
        let probe = store.map { StoreHealthProbe(store: $0) }
        return AdminEndpoints(
            metrics: {
                let sample = try await Relay.sample(core).get()
                metrics.record(sample, busLag: await busLag?(), cluster: cluster?())
                return metrics.exposition()
            },
            health: {
                let limit = Duration.seconds(2)
                let answering = await EventLoopProbe.answers(core.eventLoop, within: limit)
                return AdminAnswer.health(
                    await probe?.health() ?? .none, relayLoop: answering ? .answering : .stuck(limit))
            })
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
        await admin?.shutdown()
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

    private static func configureSignaling(
        _ channel: any Channel, core: NIOLoopBound<RelayCore>,
        tls: NIOSSLContext?, handshake: Scheduled<Void>,
        messaging: MessagingService?, page: WebPage
    ) -> EventLoopFuture<Void> {
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
                try channel.pipeline.syncOperations.addHandler(PlainTextOnTLSPortHandler())
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
            }
            // The plain-HTTP answerer sits after the HTTP codec; once upgraded it must go, or it would see raw bytes.
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (
                    upgraders: [upgrader],
                    completionHandler: { context in
                        context.pipeline.syncOperations.removeHandler(name: "parley.plain-http", promise: nil)
                    }
                ))
            try channel.pipeline.syncOperations.addHandler(PlainHTTPHandler(page: page), name: "parley.plain-http")
        }
    }
}
