import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection to 127.0.0.1 for tests that speak raw bytes to the relay (a half-finished handshake, frames
/// no client library would send). SwiftNIO reads on its own event loop into an inbox; `read` and `isClosed` wait
/// asynchronously with a deadline and return as soon as what they wait for happened, so a test never blocks a
/// thread the async runtime needs.
final class TestTCPConnection: Sendable {
    private let channel: Channel
    private let inbox: TestInbox

    private init(channel: Channel, inbox: TestInbox) {
        self.channel = channel
        self.inbox = inbox
    }

    /// Connects to 127.0.0.1:`port`.
    static func connect(port: Int) async throws -> TestTCPConnection {
        let inbox = TestInbox()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TestInbox.StreamHandler(inbox: inbox))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return TestTCPConnection(channel: channel, inbox: inbox)
    }

    deinit { channel.close(promise: nil) }

    /// Writes bytes (errors ignored: the relay may already have closed on us); returns once they were written.
    func write(_ bytes: [UInt8]) async {
        try? await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    /// Everything read within `window`, returned early once `done` holds for it or the relay closed.
    func read(for window: Duration, until done: @Sendable ([UInt8]) -> Bool = { _ in false }) async -> [UInt8] {
        let deadline = ContinuousClock.now + window
        var received: [UInt8] = []
        while true {
            let seen = inbox.received
            received += inbox.takeAll().joined()
            if done(received) || inbox.isClosed || ContinuousClock.now >= deadline { return received }
            await inbox.waitForMore(than: seen, until: deadline)
        }
    }

    /// True once the relay closed the connection (or reset it) within `window`.
    func isClosed(within window: Duration) async -> Bool {
        let deadline = ContinuousClock.now + window
        while !inbox.isClosed, ContinuousClock.now < deadline {
            await inbox.waitForMore(than: inbox.received, until: deadline)
        }
        return inbox.isClosed
    }

    /// Closes our side.
    func close() async { try? await channel.close().get() }
}
