import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleySecurity
import ParleyWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How signaling to the relay is protected.
public enum SignalingSecurity: Sendable {
    /// Plain `ws://`: chat, names and the media credential cross the network readable (`--insecure`; the header
    /// says INSECURE).
    case insecure
    /// `wss://`: the relay's certificate is vouched for by an authority or pinned in the store on first use.
    case tls(RelayTrustStore)

    /// Whether the connection runs over TLS.
    public var isTLS: Bool {
        if case .tls = self { true } else { false }
    }
}

/// What the relay's WebSocket delivers to the engine (and to the benches' members, hence `package`).
package enum SignalingEvent: Sendable {
    /// A well-formed message.
    case message(ServerMessage)
    /// A frame that did not parse; the connection stays open.
    case invalid(SignalingError)
    /// A binary frame: one media datagram, for a member whose media goes over this connection.
    case media(ByteBuffer)
    /// The connection closed (by either side, or it broke).
    case closed
}

/// Errors connecting to the relay.
public enum SignalingConnectError: Error, CustomStringConvertible {
    /// TCP connect failed (nothing listening, unreachable, refused).
    case unreachable(ServerAddress, underlying: String)
    /// Something answered but did not upgrade to a WebSocket.
    case notARelay(ServerAddress, status: String)
    /// The connection closed before any answer: a full relay refuses new connections this way.
    case closedBeforeAnswer(ServerAddress)
    /// The TLS handshake failed.
    case tlsFailed(ServerAddress, underlying: String)
    /// TLS was asked for and the relay answered in plain text: it was started with `--insecure`.
    case relayWithoutTLS(ServerAddress)
    /// Plain ws:// was asked for (`--insecure`) and the relay answered with TLS.
    case relayWithTLS(ServerAddress)
    /// The relay's certificate differs from the pinned one: refused, never retried.
    case certificateChanged(RelayCertificateChanged)

    public var description: String {
        switch self {
        case .unreachable(let address, let underlying):
            "cannot reach the relay at \(address): \(underlying)"
        case .notARelay(let address, let status):
            "\(address) answered HTTP \(status) instead of a Parley relay WebSocket"
        case .closedBeforeAnswer(let address):
            "\(address) closed the connection without answering: the relay may be full (its log says so), or it is "
                + "not a Parley relay; try again in a moment"
        case .tlsFailed(let address, let underlying):
            "TLS with the relay at \(address) failed: \(underlying)"
        case .relayWithoutTLS(let address):
            "the relay at \(address) was started with --insecure (plain ws://, no TLS): add --insecure to connect to "
                + "it, if you accept that the network can read names, chat and media credentials"
        case .relayWithTLS(let address):
            "the relay at \(address) speaks TLS: leave out --insecure"
        case .certificateChanged(let changed):
            "\(changed)"
        }
    }
}

/// One WebSocket to the relay, confined to the engine's event loop; `package` so the benches join with it too.
package final class SignalingConnection: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Connects, upgrades to WebSocket, and then calls `handler` on `loop` for every event.
    package static func connect(
        to address: ServerAddress, on loop: any EventLoop,
        security: SignalingSecurity = .insecure, timeout: TimeAmount = .seconds(5),
        trusted: @escaping @Sendable (RelayTrustDecision) -> Void = { _ in },
        handler: @escaping @Sendable (SignalingEvent) -> Void
    )
        -> EventLoopFuture<SignalingConnection>
    {
        connect(
            to: address, path: "/parley", on: loop, security: security, timeout: timeout, trusted: trusted,
            onBinary: { handler(.media($0)) }
        ) { text in
            guard let text else { return handler(.closed) }
            do throws(SignalingError) {
                handler(.message(try ServerMessage.decode(text)))
            } catch {
                handler(.invalid(error))
            }
        }
    }

    /// Connects to the WebSocket at `path` and calls `onText` with each text frame, then nil once it closed
    /// (`package`: tests drive Chromium's DevTools WebSocket with it).
    package static func connect(
        to address: ServerAddress, path: String, on loop: any EventLoop,
        security: SignalingSecurity = .insecure, timeout: TimeAmount = .seconds(5),
        trusted: @escaping @Sendable (RelayTrustDecision) -> Void = { _ in },
        onBinary: (@Sendable (ByteBuffer) -> Void)? = nil,
        onText: @escaping @Sendable (String?) -> Void
    ) -> EventLoopFuture<SignalingConnection> {
        let upgraded = loop.makePromise(of: Void.self)
        let callback = onText
        // The trust decision of this attempt, read after its handshake failed.
        let decision = NIOLockedValueBox<RelayTrustDecision?>(nil)
        let connect = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 4 * maxSignalingMessageBytes) { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            NIOWebSocketFrameAggregator(
                                minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64,
                                maxAccumulatedFrameSize: 4 * maxSignalingMessageBytes),
                            ClientSignalingHandler(callback: callback, onBinary: onBinary),
                        ])
                        upgraded.succeed()
                    }
                }
                return channel.eventLoop.makeCompletedFuture {
                    if case .tls(let store) = security {
                        try channel.pipeline.syncOperations.addHandler(
                            try tlsHandler(address: address, store: store, decision: decision, trusted: trusted))
                    }
                    // The request sender reads HTTP parts; after the upgrade it must leave before raw frames flow.
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(
                        withClientUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { context in
                                context.pipeline.syncOperations.removeHandler(
                                    name: "parley.upgrade-request", promise: nil)
                            }
                        ))
                    try channel.pipeline.syncOperations.addHandler(
                        UpgradeRequestHandler(address: address, path: path, upgraded: upgraded),
                        name: "parley.upgrade-request")
                }
            }
            .connect(host: address.host, port: address.port)
        return connect.flatMapError { error in
            upgraded.fail(error)
            return loop.makeFailedFuture(SignalingConnectError.unreachable(address, underlying: explain(error)))
        }.flatMap { channel in
            channel.closeFuture.whenComplete { _ in
                upgraded.fail(SignalingConnectError.closedBeforeAnswer(address))
            }
            // Something that accepts the connection but never answers the upgrade (a frozen relay, a black hole
            // behind a proxy) must not leave the attempt hanging.
            let deadline = loop.scheduleTask(in: timeout) {
                let status = "no WebSocket upgrade within \(timeout)"
                upgraded.fail(SignalingConnectError.notARelay(address, status: status))
                channel.close(promise: nil)
            }
            upgraded.futureResult.whenComplete { _ in deadline.cancel() }
            return upgraded.futureResult.map { SignalingConnection(channel: channel) }.flatMapError { error in
                if case .changed(let refusal) = decision.withLockedValue({ $0 }) {
                    return loop.makeFailedFuture(SignalingConnectError.certificateChanged(refusal))
                }
                if error is NIOSSLError || error is BoringSSLError {
                    return loop.makeFailedFuture(Self.tlsFailure(error, address: address))
                }
                if case .insecure = security, Self.looksLikeTLS(error) {
                    return loop.makeFailedFuture(SignalingConnectError.relayWithTLS(address))
                }
                return loop.makeFailedFuture(error)
            }
        }
    }

    /// A failed handshake in words: a relay that answered in plain text (BoringSSL's WRONG_VERSION_NUMBER: the first
    /// bytes were not a TLS record) was started with `--insecure`; anything else names what TLS said.
    static func tlsFailure(_ error: any Error, address: ServerAddress) -> SignalingConnectError {
        let text = "\(error)"
        if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") { return .relayWithoutTLS(address) }
        // BoringSSL's errors carry the source file and line of the check; the reason is what a user can act on.
        let reason = text.firstMatch(of: /error:[0-9A-Fa-f]+:[^:]*:[^:]*:([^:\]\)]+)/).map { String($0.1) }
        return .tlsFailed(address, underlying: reason.map { $0.lowercased().replacing("_", with: " ") } ?? text)
    }

    /// Whether a plain-text connection failed the way a TLS server answers one: its answer is not HTTP (a TLS
    /// record: bytes 0x15 0x03 …).
    static func looksLikeTLS(_ error: any Error) -> Bool { error is HTTPParserError }

    /// The TLS client for one connection: the relay's chain is judged by the trust store (authority or pin).
    private static func tlsHandler(
        address: ServerAddress, store: RelayTrustStore,
        decision: NIOLockedValueBox<RelayTrustDecision?>,
        trusted: @escaping @Sendable (RelayTrustDecision) -> Void
    ) throws
        -> NIOSSLClientHandler
    {
        let relay = address.description
        let host = address.host
        // SNI carries names only; a literal address goes without.
        return try NIOSSLClientHandler(context: clientContext, serverHostname: isIPAddress(host) ? nil : host) {
            chain, promise in
            let der = chain.compactMap { try? $0.toDERBytes() }
            Task {
                let verdict = await store.decide(relay: relay, host: host, chainDER: der)
                decision.withLockedValue { $0 = verdict }
                if verdict.isTrusted { trusted(verdict) }
                promise.succeed(verdict.isTrusted ? .certificateVerified : .failed)
            }
        }
    }

    /// One TLS client context for every connection (TLS 1.2 or later; verification is the trust store's).
    private static let clientContext: NIOSSLContext = {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        // The trust store judges the name too: an authority's certificate must name the relay (its
        // ServerIdentityPolicy), a pinned one is the relay address's own whatever it names. Left to NIOSSL, a
        // literal address was checked against the certificate again after the store trusted it, so a self-signed
        // relay joined at any address but the ones it names (a LAN address, `serve --host 0.0.0.0`) failed with
        // "Couldn't find <none> in certificate".
        configuration.certificateVerification = .noHostnameVerification
        return try! NIOSSLContext(configuration: configuration)  // a default client configuration always loads
    }()

    /// Sends one message.
    package func send(_ message: ClientMessage) {
        sendRawText(message.encoded())
    }

    /// Queues one media datagram as a binary frame (sent at the next `flush`); false, and nothing queued, while the
    /// connection is past its high-water mark: media that would wait behind a full TCP queue is dropped instead.
    @discardableResult
    func queueMedia(_ bytes: [UInt8]) -> Bool {
        guard channel.isWritable else { return false }
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        channel.write(WebSocketFrame(fin: true, opcode: .binary, maskKey: .random(), data: buffer), promise: nil)
        return true
    }

    /// Sends what `queueMedia` queued.
    func flush() { channel.flush() }

    /// Sends arbitrary text as one frame (tests use it to send what the protocol forbids, and DevTools commands).
    package func sendRawText(_ text: String) {
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer), promise: nil)
    }

    /// Sends arbitrary bytes as one text frame (tests use it to send what is not UTF-8).
    func sendRawTextBytes(_ bytes: [UInt8]) {
        channel.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: bytes)),
            promise: nil)
    }

    /// Sends a close frame and closes.
    package func close() {
        guard channel.isActive else { return }
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let channel = self.channel
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// Drops the TCP connection without a goodbye (tests use this to simulate a network failure).
    func abort() {
        channel.close(promise: nil)
    }
}

/// Sends the HTTP upgrade request once connected and fails the upgrade when the answer is not a 101.
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let address: ServerAddress
    private let path: String
    private let upgraded: EventLoopPromise<Void>

    init(address: ServerAddress, path: String, upgraded: EventLoopPromise<Void>) {
        self.address = address
        self.path = path
        self.upgraded = upgraded
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: address.description)
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer()))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            upgraded.fail(
                head.headers.first(name: tlsRequiredHeader.name) == tlsRequiredHeader.value
                    ? SignalingConnectError.relayWithTLS(address)
                    : SignalingConnectError.notARelay(
                        address, status: "\(head.status.code) \(head.status.reasonPhrase)"))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A relay that refuses a connection closes it at once; whether that reaches us as an orderly close or as a
        // reset (it had not read our upgrade request) is a race, and both mean the same to the user.
        if let io = error as? IOError, io.errnoCode == ECONNRESET || io.errnoCode == EPIPE {
            upgraded.fail(SignalingConnectError.closedBeforeAnswer(address))
        } else {
            upgraded.fail(error)
        }
        context.close(promise: nil)
    }
}

/// Hands on each text frame, then nil once the connection closed; binary frames (media) to `onBinary`.
private final class ClientSignalingHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let callback: @Sendable (String?) -> Void
    private let onBinary: (@Sendable (ByteBuffer) -> Void)?
    private var closed = false

    init(callback: @escaping @Sendable (String?) -> Void, onBinary: (@Sendable (ByteBuffer) -> Void)?) {
        self.callback = callback
        self.onBinary = onBinary
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            callback(data.readString(length: data.readableBytes) ?? "")
        case .binary:
            onBinary?(frame.unmaskedData)
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)),
                promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !closed {
            closed = true
            callback(nil)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A connect failure in words a user can act on, instead of NIO's nested error dump.
func explain(_ error: any Error) -> String {
    var underlying: [any Error] = [error]
    if let connection = error as? NIOConnectionError {
        if connection.dnsAError != nil || connection.dnsAAAAError != nil {
            return "the host name \"\(connection.host)\" does not resolve"
        }
        underlying = connection.connectionErrors.map(\.error)
    }
    for error in underlying {
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused (is `parley serve` running on that port?)"
            case ENETUNREACH, EHOSTUNREACH: return "no route to that host"
            case ETIMEDOUT: return "no answer (a firewall, or the wrong host?)"
            default: return String(cString: strerror(io.errnoCode))
            }
        }
        if error is ChannelError, case .connectTimeout = error as! ChannelError {
            return "no answer within the connect timeout (a firewall, or the wrong host?)"
        }
    }
    return "\(error)"
}
