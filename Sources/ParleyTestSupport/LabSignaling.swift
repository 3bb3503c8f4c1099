import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ParleyProcesses

/// The small HTTP server of a Chromium call in the network lab (`ChromiumCall`), listening inside the relay's
/// namespace so every member's Chromium reaches it at its relay address: it serves the call page
/// (Resources/lab/chromium-call.html), passes each member's offers, answers and candidates to the member named, and
/// keeps each member's last statistics report. Everything it holds is bounded.
public final class LabSignaling: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    /// A request body larger than this is refused (a report of a 4-party call is about 2 KB).
    static let largestBody = 256 * 1024
    /// Messages waiting for one member; more are refused (a call's offers and candidates are a few dozen).
    static let largestQueue = 512
    /// Members a call names at most (queues, reports and errors are kept per name; a lab call has 2 to 4).
    static let largestCall = 64

    struct State {
        var waiting: [String: [ByteBuffer]] = [:]
        var reports: [String: ChromiumReport] = [:]
        var errors: [String: String] = [:]
        var refused = 0

        /// Whether `member` may have an entry in a map of `count` names: it has one, or there is room for another.
        static func admits(_ member: String, known: Bool, count: Int) -> Bool {
            member.utf8.count <= 64 && (known || count < LabSignaling.largestCall)
        }
    }

    /// Starts the server on `host`:`port` in `namespace` (nil: this process's own; port 0: any free one), serving
    /// `page`.
    public static func start(
        in namespace: String?, host: String = "0.0.0.0", port: Int, page: String
    ) async throws -> LabSignaling {
        let pageBytes = try Data(contentsOf: URL(fileURLWithPath: page))
        let socket = try await NamespaceSocket.listeningTCP(.init(host: host, port: port), in: namespace)
        let state = NIOLockedValueBox(State())
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.configureHTTPServerPipeline()
                        try child.pipeline.syncOperations.addHandler(
                            LabSignalingHandler(page: ByteBuffer(bytes: pageBytes), state: state))
                    }
                }
                .withBoundSocket(socket).get()
        } catch {
            close(socket)
            throw error
        }
        return LabSignaling(port: channel.localAddress?.port ?? port, channel: channel, state: state)
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Each member's last report.
    public var reports: [String: ChromiumReport] { state.withLockedValue { $0.reports } }

    /// What a member's page said went wrong (its own words), if anything.
    public var errors: [String: String] { state.withLockedValue { $0.errors } }

    /// Requests refused (too large, a queue full, a report that did not parse).
    public var refused: Int { state.withLockedValue { $0.refused } }

    public func stop() async {
        try? await channel.close()
    }
}

/// What one Chromium of a lab call last reported (the page's `report()`): counters since its page started.
public struct ChromiumReport: Decodable, Sendable {
    /// What it gets of one peer.
    public struct Peer: Decodable, Sendable {
        public var framesDecoded: Int
        /// Frames the page's video element presented (`requestVideoFrameCallback`).
        public var framesPresented: Int
        /// Gaps of over 300 ms between presented frames, and their sum: Parley's freeze rule.
        public var freezes: Int
        public var frozenMs: Double
        /// Chromium's own freeze count and time (`freezeCount`, `totalFreezesDuration`).
        public var statsFreezes: Int
        public var statsFrozenMs: Double
        public var concealedSamples: Int
        public var totalSamples: Int
        public var concealmentEvents: Int
        /// Milliseconds after the page started when the first sound of this peer arrived.
        public var firstAudioMs: Double?
        public var videoPacketsLost: Int
        public var frameWidth: Int
        /// How its media goes: "relay/udp" (TURN over UDP) or "relay/tcp".
        public var path: String
    }

    public var me: String
    /// Milliseconds since the page started when this report was made.
    public var ms: Double
    public var sentVideoBytes: Int
    public var sentAudioBytes: Int
    /// The video encoders' targets, summed over its connections (bits a second).
    public var targetBps: Double
    /// Chromium's estimate of each connection's uplink, summed (bits a second).
    public var availableOutgoingBps: Double
    public var peers: [String: Peer]
}

private final class LabSignalingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let page: ByteBuffer
    let state: NIOLockedValueBox<LabSignaling.State>
    var head: HTTPRequestHead?
    var body = ByteBuffer()
    var tooLarge = false

    init(page: ByteBuffer, state: NIOLockedValueBox<LabSignaling.State>) {
        self.page = page
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body.clear()
            tooLarge = false
        case .body(var chunk):
            if body.readableBytes + chunk.readableBytes > LabSignaling.largestBody {
                tooLarge = true
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            let (status, reply, type) =
                tooLarge
                ? (.payloadTooLarge, ByteBuffer(string: "body too large"), "text/plain")
                : answer(head)
            if status != .ok && status != .noContent { state.withLockedValue { $0.refused += 1 } }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: "\(reply.readableBytes)")
            headers.add(name: "Cache-Control", value: "no-store")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(reply))), promise: nil)
            let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !head.isKeepAlive {
                written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            }
        }
    }

    /// The reply to one request: the page, a member's waiting messages, or a message or report taken.
    private func answer(_ head: HTTPRequestHead) -> (HTTPResponseStatus, ByteBuffer, String) {
        let url = URLComponents(string: head.uri)
        let query = Dictionary(
            (url?.queryItems ?? []).compactMap { item in item.value.map { (item.name, $0) } },
            uniquingKeysWith: { first, _ in first })
        switch (head.method, url?.path ?? "") {
        case (.GET, "/call.html"):
            return (.ok, page, "text/html; charset=utf-8")
        case (.GET, "/signal"):
            guard let member = query["for"] else { return (.badRequest, ByteBuffer(string: "no for="), "text/plain") }
            let messages = state.withLockedValue { $0.waiting.removeValue(forKey: member) ?? [] }
            var reply = ByteBuffer(string: "[")
            for (index, message) in messages.enumerated() {
                if index > 0 { reply.writeString(",") }
                reply.writeImmutableBuffer(message)
            }
            reply.writeString("]")
            return (.ok, reply, "application/json")
        case (.POST, "/signal"):
            guard let member = query["to"] else { return (.badRequest, ByteBuffer(string: "no to="), "text/plain") }
            let taken = state.withLockedValue { state in
                guard
                    LabSignaling.State.admits(member, known: state.waiting[member] != nil, count: state.waiting.count),
                    state.waiting[member, default: []].count < LabSignaling.largestQueue
                else { return false }
                state.waiting[member, default: []].append(body)
                return true
            }
            return taken
                ? (.noContent, ByteBuffer(), "text/plain")
                : (
                    .tooManyRequests,
                    ByteBuffer(
                        string: "\(member.prefix(64))'s queue is full (\(LabSignaling.largestQueue) messages, "
                            + "\(LabSignaling.largestCall) members)"), "text/plain"
                )
        case (.POST, "/stats"):
            guard let member = query["from"] else { return (.badRequest, ByteBuffer(string: "no from="), "text/plain") }
            guard let report = try? JSONDecoder().decode(ChromiumReport.self, from: Data(body.readableBytesView)) else {
                return (
                    .badRequest, ByteBuffer(string: "not a report: \(String(buffer: body).prefix(200))"), "text/plain"
                )
            }
            return keep(report, for: member, in: \.reports)
        case (.POST, "/error"):
            guard let member = query["from"] else { return (.badRequest, ByteBuffer(string: "no from="), "text/plain") }
            return keep(String(String(buffer: body).prefix(1_000)), for: member, in: \.errors)
        default:
            return (.notFound, ByteBuffer(string: "no \(head.uri)"), "text/plain")
        }
    }

    /// Keeps `value` as `member`'s in one of the state's maps, when the call has room for that member's name.
    private func keep<Value>(
        _ value: Value, for member: String, in map: WritableKeyPath<LabSignaling.State, [String: Value]>
    ) -> (HTTPResponseStatus, ByteBuffer, String) {
        let kept = state.withLockedValue { state in
            guard
                LabSignaling.State.admits(
                    member, known: state[keyPath: map][member] != nil, count: state[keyPath: map].count)
            else { return false }
            state[keyPath: map][member] = value
            return true
        }
        return kept
            ? (.noContent, ByteBuffer(), "text/plain")
            : (.tooManyRequests, ByteBuffer(string: "more than \(LabSignaling.largestCall) members"), "text/plain")
    }
}
