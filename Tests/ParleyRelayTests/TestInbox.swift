import NIOCore
import Synchronization

/// What a test socket received and not yet taken (datagrams, or a stream's chunks, and whether the peer closed),
/// and the tasks waiting for the next of them. Filled by SwiftNIO's handlers on their event loop; read by tests,
/// which wait on it asynchronously (never blocking a thread).
final class TestInbox: Sendable {
    private struct State {
        var chunks: [[UInt8]] = []
        var closed = false
        /// Chunks received and closes seen over the inbox's life: what `waitForMore` counts.
        var events = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    var pending: Int { state.withLock { $0.chunks.count } }
    var received: Int { state.withLock { $0.events } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func append(_ chunk: [UInt8]) {
        update { $0.chunks.append(chunk) }
    }

    func close() {
        update { $0.closed = true }
    }

    private func update(_ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            change(&state)
            state.events += 1
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Every chunk held.
    func takeAll() -> [[UInt8]] {
        state.withLock { state in
            defer { state.chunks = [] }
            return state.chunks
        }
    }

    /// The first `count` chunks held (fewer when there are fewer).
    func take(atMost count: Int) -> [[UInt8]] {
        state.withLock { state in
            let taken = Array(state.chunks.prefix(count))
            state.chunks.removeFirst(taken.count)
            return taken
        }
    }

    /// The first chunk `match` accepts, with every one before it dropped; nil (and the inbox emptied) if none.
    func take(through match: ([UInt8]) -> Bool) -> [UInt8]? {
        state.withLock { state in
            guard let index = state.chunks.firstIndex(where: match) else {
                state.chunks = []
                return nil
            }
            let found = state.chunks[index]
            state.chunks.removeFirst(index + 1)
            return found
        }
    }

    /// Returns when more than `seen` events happened over the inbox's life (`received`), or at `deadline`,
    /// whichever is first.
    func waitForMore(than seen: Int, until deadline: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.event(beyond: seen) }
            group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
            await group.next()
            group.cancelAll()
        }
    }

    private func event(beyond seen: Int) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if Task.isCancelled || state.events > seen { return true }
                    state.waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Puts every datagram a UDP channel reads into the inbox.
    final class DatagramHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let inbox: TestInbox

        init(inbox: TestInbox) { self.inbox = inbox }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            inbox.append(Array(unwrapInboundIn(data).data.readableBytesView))
        }
    }

    /// Puts every chunk a TCP channel reads into the inbox, and marks it closed when the connection ends.
    final class StreamHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let inbox: TestInbox

        init(inbox: TestInbox) { self.inbox = inbox }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            inbox.append(Array(unwrapInboundIn(data).readableBytesView))
        }

        func channelInactive(context: ChannelHandlerContext) {
            inbox.close()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset: the relay closed on us.
            inbox.close()
            context.close(promise: nil)
        }
    }
}
