import NIOCore
import NIOWebSocket
import ParleyWire

/// How a WebSocket connection that sent a frame it may not send is ended, the same for call signaling and for
/// messaging.
///
/// NIO's decoder errors (a frame over 32 KiB, or announcing more) are answered by NIO's protocol error handler with
/// a close frame (1009), which then closes the connection: nothing may follow a
/// close frame, so the relay only counts them. The aggregator's errors (a message of more than 64 fragments or
/// 32 KiB in all, a fragment out of order) reach the relay with nothing sent yet: the client is told why in an
/// error, then the connection ends with a close frame whose status says the same.
enum WebSocketFailure: Equatable {
    /// NIO already sent the close frame; send nothing more.
    case answeredByNIO
    /// Tell the client `reason`, then close with `status`.
    case refuse(reason: String, status: WebSocketErrorCode)
    /// Not about a frame (a reset connection, an I/O error): close without a word.
    case closeQuietly

    init(_ error: any Error) {
        if error is NIOWebSocketError {
            self = .answeredByNIO
        } else if let error = error as? NIOWebSocketFrameAggregator.Error {
            let total = 2 * maxSignalingMessageBytes
            self =
                switch error {
                case .tooManyFragments:
                    .refuse(
                        reason: "a message in more than \(Self.maximumFragments) fragments (the limit)",
                        status: .messageTooLarge)
                case .accumulatedFrameSizeIsTooLarge:
                    .refuse(
                        reason: "a message of more than \(total) bytes across its fragments (the limit is \(total))",
                        status: .messageTooLarge)
                case .nonFinalFragmentSizeIsTooSmall:
                    .refuse(reason: "an empty fragment before the last one", status: .protocolError)
                case .receivedNewFrameWithoutFinishingPrevious:
                    .refuse(reason: "a new message before the last fragment of the one before", status: .protocolError)
                case .didReceiveFragmentBeforeReceivingTextOrBinaryFrame:
                    .refuse(reason: "a continuation frame with no message to continue", status: .protocolError)
                }
        } else {
            self = .closeQuietly
        }
    }

    /// Why a frame NIO handed through is not part of the protocol (RFC 6455 §5.2: reserved bits without a
    /// negotiated extension, or an opcode nobody defined), or nil when it is.
    static func unexpected(_ frame: WebSocketFrame) -> String? {
        guard !frame.reservedBits.isEmpty || !knownOpcodes.contains(frame.opcode) else { return nil }
        return "frame with opcode \(frame.opcode) and reserved bits \(frame.reservedBits.rawValue) is not part of the "
            + "protocol"
    }

    private static let knownOpcodes: [WebSocketOpcode] = [
        .text, .binary, .continuation, .ping, .pong, .connectionClose,
    ]

    /// The error code that goes with a close status: `too-large` for 1009, `bad-json` (not the protocol) otherwise.
    static func errorCode(for status: WebSocketErrorCode) -> SignalingErrorCode {
        status == .messageTooLarge ? .tooLarge : .badJSON
    }

    /// Fragments one message may arrive in (the aggregator's limit, on both ends).
    static let maximumFragments = 64

    /// Writes the close frame with `status`, then closes the channel once it is out. Writes queued before it (an
    /// error event) go out first.
    static func close(_ channel: any Channel, status: WebSocketErrorCode) {
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: status)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
            .whenComplete { _ in channel.close(promise: nil) }
    }
}
