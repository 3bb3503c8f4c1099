import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What the admin endpoints answer with, fetched per request.
struct AdminEndpoints: Sendable {
    /// The Prometheus text of `/metrics`.
    var metrics: @Sendable () async throws -> [UInt8]
    /// The answer of `/healthz`.
    var health: @Sendable () async -> AdminAnswer
}

/// The operators' small HTTP/1.1 server (`--admin`): `GET /metrics` and `GET /healthz` on a socket and event loop
/// of its own, apart from the relay's public port and its media loop. Bounded: at most `maximumConnections` open,
/// a request head as NIO's parser allows (80 KiB), a body of 1 KiB, 10 s of silence; a request that does not parse
/// is answered 400 and its connection closed.
final class AdminServer: Sendable {
    /// Connections open at once; more are closed as they arrive.
    static let maximumConnections = 32
    /// A connection silent this long is closed.
    static let idleTimeout = TimeAmount.seconds(10)

    /// The TCP port it listens on.
    let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.port = port
        self.group = group
        self.channel = channel
    }

    /// Binds `address` and serves `endpoints`; throws the bind's error.
    static func start(at address: AdminAddress, endpoints: AdminEndpoints, logger: Logger) async throws -> AdminServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let open = OpenConnections()
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(.backlog, value: 64)
                .childChannelInitializer { channel in
                    let admitted = open.count.withLock { count in
                        guard count < maximumConnections else { return false }
                        count += 1
                        return true
                    }
                    guard admitted else { return channel.close() }
                    channel.closeFuture.whenComplete { _ in open.count.withLock { $0 -= 1 } }
                    return channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(IdleStateHandler(allTimeout: idleTimeout))
                        try sync.configureHTTPServerPipeline(withErrorHandling: true)
                        try sync.addHandler(AdminHTTPHandler(endpoints: endpoints, logger: logger))
                    }
                }
                .bind(host: address.host, port: address.port).get()
            return AdminServer(port: channel.localAddress?.port ?? address.port, group: group, channel: channel)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Stops listening and closes every admin connection.
    func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Admin connections open now, counted against `AdminServer.maximumConnections`.
private final class OpenConnections: Sendable {
    let count = Mutex(0)
}

/// One admin connection: hands each request part to `AdminConnectionState` and carries out what it says.
final class AdminHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var state = AdminConnectionState()
    private let endpoints: AdminEndpoints
    private let logger: Logger

    init(endpoints: AdminEndpoints, logger: Logger) {
        self.endpoints = endpoints
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let action =
            switch unwrapInboundIn(data) {
            case .head(let head): state.head(head)
            case .body(let body): state.body(body.readableBytes)
            case .end: state.end()
            }
        switch action {
        case .nothing:
            break
        case .answer(let answer, let keepAlive):
            write(answer, keepAlive: keepAlive, context: context)
        case .serve(let route, let keepAlive):
            let endpoints = endpoints
            let logger = logger
            let answer = context.eventLoop.makeFutureWithTask { () async -> AdminAnswer in
                switch route {
                case .health:
                    return await endpoints.health()
                case .metrics:
                    do {
                        return AdminAnswer(
                            status: .ok, contentType: AdminAnswer.metricsContentType,
                            body: try await endpoints.metrics())
                    } catch {
                        logger.warning("metrics not read", metadata: ["reason": "\(error)"])
                        return AdminAnswer(status: .serviceUnavailable, text: "the relay did not answer: \(error)")
                    }
                }
            }
            answer.assumeIsolated().whenSuccess { answer in
                self.write(answer, keepAlive: keepAlive, context: context)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A request that does not parse was answered 400 by NIO's error handler: nothing more is read here.
        logger.debug("admin request refused", metadata: ["reason": "\(error)"])
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func write(_ answer: AdminAnswer, keepAlive: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: answer.contentType)
        headers.add(name: "Content-Length", value: "\(answer.body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        if answer.status == .methodNotAllowed { headers.add(name: "Allow", value: "GET") }
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: answer.status, headers: headers))),
            promise: nil)
        context.write(
            wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
        state.answered()
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
