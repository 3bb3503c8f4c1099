import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ParleyTestLanes
import Testing

@testable import ParleyRelay

/// The admin handler's served answers (`/healthz`, `/metrics`) in NIO's HTTP server pipeline, as `AdminServer` builds
/// it. The endpoints answer from a task, so the channel is NIO's thread-safe testing channel and each answer is
/// awaited (bounded by the suite's time limit). The refusals that need no endpoint are in AdminEndpointTests.
@Suite(.timeLimit(.minutes(1)), .lane(.timing)) struct AdminHTTPHandlerEmbeddedTests {
    struct MetricsDown: Error, CustomStringConvertible {
        var description: String { "the relay's event loop is busy" }
    }

    /// An admin connection whose endpoints answer with `metrics` and `health`.
    static func connect(
        metrics: @escaping @Sendable () async throws -> [UInt8] = { Array("parley_members 3\n".utf8) },
        health: @escaping @Sendable () async -> AdminAnswer = { .health(.none) }
    ) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9100))
        let endpoints = AdminEndpoints(metrics: metrics, health: health)
        try await channel.testingEventLoop.executeInContext {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(AdminHTTPHandler(endpoints: endpoints, logger: logger))
        }
        return channel
    }

    /// One answer as written: its head (status line and headers) and its body.
    struct Answer {
        var head: String
        var body: String
    }

    /// Reads what the handler writes until one whole answer (head, then `Content-Length` bytes of body) is out.
    static func answer(_ channel: NIOAsyncTestingChannel) async throws -> Answer {
        var text = ""
        while true {
            text += String(buffer: try await channel.waitForOutboundWrite(as: ByteBuffer.self))
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = String(text[..<end.lowerBound])
            let length = try #require(
                head.firstMatch(of: /\r\nContent-Length: (\d+)/).flatMap { Int($0.1) }, "no length in \(head)")
            let body = String(text[end.upperBound...])
            if body.utf8.count >= length { return Answer(head: head, body: body) }
        }
    }

    @Test func healthThenMetricsOnOneKeptConnection() async throws {
        let channel = try await Self.connect()
        try await channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"))
        let health = try await Self.answer(channel)
        #expect(health.head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(health.head)")
        #expect(health.head.contains("\r\nContent-Type: application/json"), "\(health.head)")
        #expect(health.head.contains("\r\nCache-Control: no-store"), "\(health.head)")
        #expect(health.head.contains("\r\nConnection: keep-alive"), "\(health.head)")
        #expect(health.body == #"{"node":"up","status":"ok","store":"none"}"# + "\n")
        #expect(channel.isActive, "kept for the next request")

        try await channel.writeInbound(ByteBuffer(string: "GET /metrics?name=parley HTTP/1.1\r\nHost: relay\r\n\r\n"))
        let metrics = try await Self.answer(channel)
        #expect(metrics.head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(metrics.head)")
        #expect(metrics.head.contains("\r\nContent-Type: \(AdminAnswer.metricsContentType)"), "\(metrics.head)")
        #expect(metrics.body == "parley_members 3\n")
        #expect(channel.isActive)
        _ = try await channel.finish()
    }

    @Test func aRequestWithoutKeepAliveIsAnsweredThenClosed() async throws {
        let channel = try await Self.connect()
        try await channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.0\r\n\r\n"))
        let health = try await Self.answer(channel)
        #expect(health.head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(health.head)")
        #expect(health.head.contains("\r\nConnection: close"), "\(health.head)")
        try await channel.closeFuture.get()
    }

    @Test func metricsThatDoNotComeAre503WithTheReason() async throws {
        let channel = try await Self.connect(metrics: { throw MetricsDown() })
        try await channel.writeInbound(ByteBuffer(string: "GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n"))
        let answer = try await Self.answer(channel)
        #expect(answer.head.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(answer.head)")
        #expect(answer.body == "the relay did not answer: the relay's event loop is busy\n")
        #expect(channel.isActive, "the connection stays for the next look")
        _ = try await channel.finish()
    }

    @Test func aFailingStoreIs503WithItsJSON() async throws {
        let failing = AdminAnswer.health(.failed("disk I/O error"))
        let channel = try await Self.connect(health: { failing })
        try await channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n"))
        let answer = try await Self.answer(channel)
        #expect(answer.head.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(answer.head)")
        #expect(answer.body == String(decoding: failing.body, as: UTF8.self))
        _ = try await channel.finish()
    }

    @Test func anIdleConnectionIsClosed() async throws {
        let channel = try await Self.connect()
        // What AdminServer's IdleStateHandler sends after `AdminServer.idleTimeout` of silence.
        channel.pipeline.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.all)
        try await channel.closeFuture.get()
        #expect(!channel.isActive)
    }
}
