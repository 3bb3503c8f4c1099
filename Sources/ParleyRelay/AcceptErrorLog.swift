import Logging
import NIOCore

/// Sits on the listening socket: when accepting a connection fails (most often the process is out of file
/// descriptors), says so in the log, one line a minute per kind of failure with how many were held back. SwiftNIO
/// (2.101) retries such an accept at once for as long as the connection waits in the backlog, a busy loop, which is
/// why the relay keeps its connections within ``DescriptorBudget`` and should never get here; if something else
/// took the descriptors, this line is how an operator finds out.
final class AcceptErrorLog: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel

    private let logger: Logger
    private var throttle = LogThrottle<Int32>(window: .seconds(60), capacity: 16)
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant

    init(logger: Logger) {
        self.logger = logger
        epoch = clock.now
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let failure = error as? IOError else {
            context.fireErrorCaught(error)
            return
        }
        guard let heldBack = throttle.admit(failure.errnoCode, at: clock.now - epoch) else { return }
        logger.error("\(Self.describe(failure))", metadata: heldBack > 0 ? ["held_back": "\(heldBack)"] : [:])
    }

    /// The log line for a failed accept, in plain words.
    static func describe(_ failure: IOError) -> String {
        let why: String
        switch failure.errnoCode {
        case 24:
            why = "this process is out of file descriptors (raise `ulimit -n`, or lower --max-connections-per-address)"
        case 23:
            why = "the system is out of file descriptors"
        case 12, 105:
            why = "the system is out of memory for sockets"
        default:
            why = "\(failure)"
        }
        return "cannot accept new connections: \(why); new connections wait until one closes, calls in progress go on"
    }
}
