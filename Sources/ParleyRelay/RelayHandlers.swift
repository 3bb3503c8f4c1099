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
            core.value.refused(on: id, reason: "binary frames are not part of the protocol; send JSON text")
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

/// Answers plain HTTP requests (a browser, a health check) with a one-line description instead of hanging.
final class PlainHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let body = "Parley relay: connect with a WebSocket (protocol version \(signalingProtocolVersion)).\n"
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(buffer.readableBytes)")
        headers.add(name: "Connection", value: "close")
        context.write(
            wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: .http1_1, status: .upgradeRequired,
                        headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
