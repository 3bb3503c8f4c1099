import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import ParleyWire

/// The thin NIO side of a messaging connection: text frames to the service, events back as text frames.
final class MessagingHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private static let nextID = NIOLockedValueBox<UInt64>(1)
    private let service: MessagingService
    private let id: UInt64
    /// Set once the connection is being failed: what arrives after is dropped, and nothing follows the close frame.
    private var failing = false

    init(service: MessagingService) {
        self.service = service
        id = Self.nextID.withLockedValue { value in
            defer { value += 1 }
            return value
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        service.open(id, peer: ChannelMessagingPeer(channel: context.channel))
    }

    func channelInactive(context: ChannelHandlerContext) {
        service.closed(id)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !failing else { return }
        if let reason = WebSocketFailure.unexpected(frame) {
            failing = true
            service.refuse(id, SignalingError(.badJSON, reason), thenCloseWith: .protocolError)
            return
        }
        switch frame.opcode {
        case .text:
            let data = frame.unmaskedData
            // RFC 6455 text is UTF-8; anything else is refused by name rather than silently repaired.
            guard let text = String(validating: data.readableBytesView, as: UTF8.self) else {
                service.refuse(id, SignalingError(.badJSON, "a text frame that is not valid UTF-8"))
                return
            }
            service.receive(text, on: id)
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)),
                promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            // Binary and unknown frames are not part of the protocol.
            service.receive("", on: id)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !failing else { return }
        failing = true
        switch WebSocketFailure(error) {
        case .answeredByNIO:
            break
        case .refuse(let reason, let status):
            // Through the service, so the error goes out before the close frame (the peer keeps that order).
            service.refuse(id, SignalingError(WebSocketFailure.errorCode(for: status), reason), thenCloseWith: status)
        case .closeQuietly:
            context.close(promise: nil)
        }
    }
}

/// Sends events on a channel from the service's queue (NIO hops to the channel's event loop).
final class ChannelMessagingPeer: MessagingPeer {
    private let channel: any Channel
    /// True while a flush is queued on the channel's loop: events sent together go out in one write.
    private let flushQueued: NIOLoopBoundBox<Bool>

    init(channel: any Channel) {
        self.channel = channel
        flushQueued = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
    }

    func send(_ event: MessagingEvent) {
        // Encoded on the connection's event loop (in order: one loop, first in first out), not on the service's
        // queue; one flush after a burst instead of a system call per event.
        let channel = channel
        let flushQueued = flushQueued
        channel.eventLoop.execute {
            let text = event.encoded()
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            channel.write(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
            guard !flushQueued.value else { return }
            flushQueued.value = true
            channel.eventLoop.execute {
                flushQueued.value = false
                channel.flush()
            }
        }
    }

    func close(with status: WebSocketErrorCode) {
        // On the channel's loop, after the events sent before it (its tasks run in order): the flush that goes
        // with the close frame takes the last error out first, so the client reads why before the connection
        // ends. (Closing the channel straight away dropped that error with the unflushed writes.)
        let channel = channel
        channel.eventLoop.execute { WebSocketFailure.close(channel, status: status) }
    }
}
