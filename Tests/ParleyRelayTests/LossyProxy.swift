import NIOCore
import NIOPosix

/// A UDP proxy on loopback between one client's media socket and the relay: datagrams from the client leave through
/// its own socket toward the relay, answers go back to the client, and a seeded-random share is dropped each way.
/// The client must send media to `port` (`CallConfiguration.mediaAddressOverride`); the relay then binds the
/// proxy's upstream address as that member's address, exactly as it would a NAT's.
final class LossyUDPProxy: Sendable {
    /// Datagrams seen and dropped so far, per direction.
    struct Counts: Sendable, CustomStringConvertible {
        var toRelay = 0
        var droppedToRelay = 0
        var toClient = 0
        var droppedToClient = 0
        /// The longest time without a datagram from either side since `restartSilenceWatch` (a client sends
        /// audio every 20 ms, so anything near 100 ms means a thread of the call did not run).
        var longestSilence: Duration = .zero

        var description: String {
            "to relay \(droppedToRelay)/\(toRelay) dropped, to client \(droppedToClient)/\(toClient) dropped, "
                + "longest silence \(longestSilence)"
        }
    }

    /// The client-facing UDP port.
    let port: Int
    /// The relay-facing UDP port: what the relay sends to reaches the client (once the client sent something).
    let backPort: Int
    private let group: MultiThreadedEventLoopGroup
    private let front: any Channel
    private let back: any Channel
    private let state: NIOLoopBound<ProxyState>

    private init(
        port: Int, group: MultiThreadedEventLoopGroup, front: any Channel, back: any Channel,
        state: NIOLoopBound<ProxyState>
    ) {
        self.port = port
        self.backPort = back.localAddress?.port ?? 0
        self.group = group
        self.front = front
        self.back = back
        self.state = state
    }

    /// Starts a proxy toward the relay's media port that drops `lossPercent` % of datagrams in each direction,
    /// deciding with a generator seeded by `seed`.
    static func start(relayPort: Int, lossPercent: Double, seed: UInt64) async throws -> LossyUDPProxy {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let relay = try SocketAddress(ipAddress: "127.0.0.1", port: relayPort)
        let state = try await loop.submit {
            NIOLoopBound(ProxyState(relay: relay, lossPercent: lossPercent, seed: seed), eventLoop: loop)
        }.get()
        let back = try await DatagramBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).get()
        let front = try await DatagramBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).get()
        try await loop.submit {
            let proxy = state.value
            proxy.front = front
            proxy.back = back
            try front.pipeline.syncOperations.addHandler(ProxyHandler(state: proxy, fromClient: true))
            try back.pipeline.syncOperations.addHandler(ProxyHandler(state: proxy, fromClient: false))
        }.get()
        return LossyUDPProxy(
            port: front.localAddress?.port ?? 0, group: group, front: front, back: back,
            state: state)
    }

    /// What passed and what was dropped so far.
    func counts() async throws -> Counts {
        try await state.eventLoop.submit { [state] in state.value.counts }.get()
    }

    /// Drops `percent` % of datagrams each way from now on (100: UDP blocked).
    func setLossPercent(_ percent: Double) async throws {
        try await state.eventLoop.submit { [state] in state.value.lossPercent = percent }.get()
    }

    /// Forgets the longest silence so far and the time of the last datagrams.
    func restartSilenceWatch() async throws {
        try await state.eventLoop.submit { [state] in
            state.value.counts.longestSilence = .zero
            state.value.lastSeen = [:]
        }.get()
    }

    /// Every datagram that passed so far (up to `captureLimit`), oldest first, with its direction.
    func capture() async throws -> [(fromClient: Bool, bytes: [UInt8])] {
        try await state.eventLoop.submit { [state] in state.value.captured }.get()
    }

    /// Closes both sockets and stops the proxy's thread.
    func stop() async {
        try? await front.close()
        try? await back.close()
        try? await group.shutdownGracefully()
    }
}

/// The proxy's state, confined to its event loop.
private final class ProxyState {
    let relay: SocketAddress
    var lossPercent: Double
    var random: SeededRandom
    var client: SocketAddress?
    var front: (any Channel)?
    var back: (any Channel)?
    var counts = LossyUDPProxy.Counts()
    /// When a datagram last came from the client (true) and from the relay (false).
    var lastSeen: [Bool: ContinuousClock.Instant] = [:]
    /// What passed, for tests that inspect the wire; at most `captureLimit` datagrams.
    var captured: [(fromClient: Bool, bytes: [UInt8])] = []
    let captureLimit = 50_000

    init(relay: SocketAddress, lossPercent: Double, seed: UInt64) {
        self.relay = relay
        self.lossPercent = lossPercent
        random = SeededRandom(state: seed)
    }

    /// One datagram in; forwarded unless the dice say it is lost.
    func pass(_ envelope: AddressedEnvelope<ByteBuffer>, fromClient: Bool) {
        let lost = Double(random.next() % 10_000) < lossPercent * 100
        let now = ContinuousClock.now
        if let last = lastSeen[fromClient] { counts.longestSilence = max(counts.longestSilence, now - last) }
        lastSeen[fromClient] = now
        if captured.count < captureLimit {
            captured.append((fromClient, Array(envelope.data.readableBytesView)))
        }
        if fromClient {
            client = envelope.remoteAddress
            counts.toRelay += 1
            if lost {
                counts.droppedToRelay += 1
                return
            }
            back?.writeAndFlush(AddressedEnvelope(remoteAddress: relay, data: envelope.data), promise: nil)
        } else {
            guard let client else { return }
            counts.toClient += 1
            if lost {
                counts.droppedToClient += 1
                return
            }
            front?.writeAndFlush(AddressedEnvelope(remoteAddress: client, data: envelope.data), promise: nil)
        }
    }
}

private final class ProxyHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let state: ProxyState
    private let fromClient: Bool

    init(state: ProxyState, fromClient: Bool) {
        self.state = state
        self.fromClient = fromClient
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        state.pass(unwrapInboundIn(data), fromClient: fromClient)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP error for a socket that went away must not close the proxy.
    }
}
