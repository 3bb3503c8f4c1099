import NIOCore
import NIOEmbedded
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's TLS port answers a plain HTTP request (a client started with `--insecure`) in plain words, and lets
/// TLS through untouched.
@Suite(.lane(.timing)) struct PlainTextOnTLSPortTests {
    @Test func plainHTTPIsAnsweredAndClosedTLSGoesThrough() throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 7878)
        let plain = EmbeddedChannel(handler: PlainTextOnTLSPortHandler())
        try plain.connect(to: address).wait()
        try plain.writeInbound(ByteBuffer(string: "GET /parley HTTP/1.1\r\nHost: relay\r\n\r\n"))
        let answer = try #require(try plain.readOutbound(as: ByteBuffer.self))
        let text = String(buffer: answer)
        #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\nParley-Requires: tls\r\n"), "\(text)")
        #expect(text.hasSuffix("\r\n\r\nThis Parley relay speaks TLS (wss://): connect without --insecure.\n"))
        #expect(try plain.readInbound(as: ByteBuffer.self) == nil, "the request goes no further")
        #expect(!plain.isActive, "closed after the answer")

        let tls = EmbeddedChannel(handler: PlainTextOnTLSPortHandler())
        try tls.connect(to: address).wait()
        let hello = ByteBuffer(bytes: [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
        try tls.writeInbound(hello)
        #expect(try tls.readInbound(as: ByteBuffer.self) == hello, "a TLS record passes unchanged")
        #expect(try tls.readOutbound(as: ByteBuffer.self) == nil)
        let later = ByteBuffer(string: "GET")
        try tls.writeInbound(later)
        #expect(try tls.readInbound(as: ByteBuffer.self) == later, "after the first read the handler is gone")
        #expect(tls.isActive)
        _ = try tls.finish()
    }
}
