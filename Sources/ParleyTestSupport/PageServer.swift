import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A test's small HTTP server for a page a headless Chromium opens: `GET` of any path serves the page, `POST
/// /report?from=NAME` keeps that page's last report (a JSON object), which the test reads while it runs. Bounded: a
/// body over 256 KiB and more than 64 names are refused.
public final class PageServer: Sendable {
    /// The port it listens on (loopback).
    public let port: Int
    private let channel: any Channel
    private let reports: NIOLockedValueBox<[String: Data]>

    static let largestBody = 256 * 1024
    static let largestNames = 64

    /// Starts serving the page at `page` on 127.0.0.1 (any free port).
    public static func start(page: String) async throws -> PageServer {
        let pageBytes = try Data(contentsOf: URL(fileURLWithPath: page))
        let reports = NIOLockedValueBox([String: Data]())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(
                        PageServerHandler(page: ByteBuffer(bytes: pageBytes), reports: reports))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return PageServer(port: channel.localAddress?.port ?? 0, channel: channel, reports: reports)
    }

    private init(port: Int, channel: any Channel, reports: NIOLockedValueBox<[String: Data]>) {
        self.port = port
        self.channel = channel
        self.reports = reports
    }

    /// The last report of the page that named itself `name`, as a JSON object; nil before its first.
    public func report(_ name: String) -> [String: Any]? {
        guard let data = reports.withLockedValue({ $0[name] }) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// The last report of `name` as text, for a failure message.
    public func reportText(_ name: String) -> String {
        reports.withLockedValue { $0[name] }.map { String(decoding: $0, as: UTF8.self) } ?? "no report"
    }

    public func stop() async {
        try? await channel.close()
    }
}

private final class PageServerHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let page: ByteBuffer
    let reports: NIOLockedValueBox<[String: Data]>
    var head: HTTPRequestHead?
    var body = ByteBuffer()
    var tooLarge = false

    init(page: ByteBuffer, reports: NIOLockedValueBox<[String: Data]>) {
        self.page = page
        self.reports = reports
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body.clear()
            tooLarge = false
        case .body(var chunk):
            if body.readableBytes + chunk.readableBytes > PageServer.largestBody {
                tooLarge = true
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            let (status, reply, type) =
                tooLarge ? (.payloadTooLarge, ByteBuffer(string: "body too large"), "text/plain") : answer(head)
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

    private func answer(_ head: HTTPRequestHead) -> (HTTPResponseStatus, ByteBuffer, String) {
        let url = URLComponents(string: head.uri)
        guard head.method == .POST else { return (.ok, page, "text/html; charset=utf-8") }
        guard url?.path == "/report", let name = url?.queryItems?.first(where: { $0.name == "from" })?.value,
            name.utf8.count <= 64
        else { return (.notFound, ByteBuffer(string: "no \(head.uri)"), "text/plain") }
        let report = Data(body.readableBytesView)
        let kept = reports.withLockedValue { reports in
            guard reports[name] != nil || reports.count < PageServer.largestNames else { return false }
            reports[name] = report
            return true
        }
        return kept
            ? (.noContent, ByteBuffer(), "text/plain")
            : (.tooManyRequests, ByteBuffer(string: "more than \(PageServer.largestNames) pages"), "text/plain")
    }
}
