import NIOCore
import NIOEmbedded
import NIOHTTP1
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's answer to plain HTTP on its signaling port (a browser, a health check), on an `EmbeddedChannel` with
/// NIO's HTTP server pipeline in front, as the relay sets it up before a WebSocket upgrade.
@Suite(.lane(.timing)) struct PlainHTTPHandlerTests {
    /// What the relay answers a request it has no page for, and one that is not a GET.
    static let noPage =
        "Parley relay: this relay serves no web page (the relay was started without its web folder); join with Parley.\n"
    static let notGET =
        "Parley relay: the web page answers GET; a Parley client connects with a WebSocket "
        + "(protocol version \(signalingProtocolVersion)).\n"

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        /// The request's bytes, in the reads they arrive in.
        var reads: [String]
        /// The answer's status line, and its body (nil: not checked).
        var status: String
        var body: String?
        /// Whether the handlers close the connection after the answer (nil: they leave it, see the row).
        var closes: Bool? = true
        var testDescription: String { name }
    }

    static let rows = [
        Row(
            name: "a GET", reads: ["GET / HTTP/1.1\r\nHost: relay\r\n\r\n"], status: "HTTP/1.1 404 Not Found",
            body: noPage),
        Row(
            name: "a POST with a body, answered at its end",
            reads: ["POST /parley HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel", "lo"],
            status: "HTTP/1.1 405 Method Not Allowed", body: notGET),
        Row(
            name: "a head in two reads", reads: ["GET /parley HTTP/1.1\r\nHo", "st: relay\r\n\r\n"],
            status: "HTTP/1.1 404 Not Found", body: noPage),
        // NIO's parser error handler answers 400 and leaves the connection open; the relay's handshake timeout
        // closes it (not on an embedded channel's clock, so not checked here).
        Row(
            name: "bytes that are not HTTP", reads: ["\u{1}\u{2} NOT HTTP\r\n\r\n"], status: "HTTP/1.1 400 Bad Request",
            closes: nil),
    ]

    @Test(arguments: rows)
    func plainHTTPIsAnsweredAndClosed(_ row: Row) throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7878)).wait()
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
        try channel.pipeline.syncOperations.addHandler(
            PlainHTTPHandler(page: WebPage(missing: "the relay was started without its web folder")))
        var answer = ""
        for (index, read) in row.reads.enumerated() {
            _ = try? channel.writeInbound(ByteBuffer(string: read))
            while let part: ByteBuffer = try channel.readOutbound() { answer += String(buffer: part) }
            if index < row.reads.count - 1 {
                #expect(answer.isEmpty, "nothing before the request's end: \(answer)")
                #expect(channel.isActive)
            }
        }
        #expect(answer.hasPrefix(row.status + "\r\n"), "\(answer)")
        #expect(answer.contains("\r\nConnection: close\r\n"), "\(answer)")
        if let body = row.body {
            #expect(answer.contains("\r\nContent-Length: \(body.utf8.count)\r\n"), "\(answer)")
            #expect(answer.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"), "\(answer)")
            #expect(answer.hasSuffix("\r\n\r\n" + body), "\(answer)")
        }
        if row.closes == true { #expect(!channel.isActive, "closed after the answer") }
    }
}
