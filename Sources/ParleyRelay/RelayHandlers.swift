import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// A UDP socket's datagrams (media, trunk), handed to the core; one flush per read batch lets NIO use sendmmsg.
final class DatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let core: NIOLoopBound<RelayCore>
    private let socket: String
    private let receive: (RelayCore, AddressedEnvelope<ByteBuffer>) -> Void

    /// Datagrams of the `socket` ("media", "trunk") socket, each given to `receive` with the core.
    init(
        core: NIOLoopBound<RelayCore>, socket: String,
        receive: @escaping (RelayCore, AddressedEnvelope<ByteBuffer>) -> Void
    ) {
        self.core = core
        self.socket = socket
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(core.value, unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        core.value.flushWrites()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable for a departed peer and similar: never fatal for the relay.
        core.value.logger.debug("\(socket) socket error", metadata: ["error": "\(error)"])
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
            // Media of a member whose UDP does not get through: one datagram a frame.
            core.value.receivedMedia(frame.unmaskedData, on: id, channel: context.channel)
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)),
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

/// In front of TLS: a connection whose first byte is not a TLS handshake record but a letter (an HTTP request from a
/// client started with `--insecure`, or `curl http://`) is answered in plain HTTP with what to do (400, with
/// `Parley-Requires: tls` for Parley's own client), instead of a TLS error its client cannot read; a TLS connection
/// goes on, this handler gone.
final class PlainTextOnTLSPortHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self),
            (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first)
        else {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        let body = "This Parley relay speaks TLS (wss://): connect without --insecure.\n"
        let answer =
            "HTTP/1.1 400 Bad Request\r\n\(tlsRequiredHeader.name): \(tlsRequiredHeader.value)\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

/// Answers plain HTTP requests: a browser's request for the room page and its files (`WebPage`), anything else (a
/// health check, another method) with a short text; the connection closes after each answer.
final class PlainHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let page: WebPage
    private var request: HTTPRequestHead?

    init(page: WebPage) {
        self.page = page
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let request else { return }
            self.request = nil
            respond(context: context, to: request)
        }
    }

    private func respond(context: ChannelHandlerContext, to request: HTTPRequestHead) {
        let answer = page.answer(method: request.method.rawValue, uri: request.uri)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: answer.contentType)
        headers.add(name: "Content-Length", value: "\(answer.body.count)")
        headers.add(name: "Cache-Control", value: "no-cache")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        if answer.contentType.hasPrefix("text/html") {
            // Nothing from elsewhere: the page's own script and style, its WebSocket to this relay, its media.
            headers.add(
                name: "Content-Security-Policy",
                value: "default-src 'self'; connect-src 'self'; media-src 'self' blob: mediastream:; "
                    + "img-src 'self' data:; worker-src 'self' blob:; frame-ancestors 'none'")
        }
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
            buffer.writeBytes(answer.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
