import Foundation
import NIOCore
import NIOPosix
import ParleyEngine
import ParleyWire
import Synchronization

/// One bench member's signaling, over the product's WebSocket client (`SignalingConnection`): plain `ws://` on
/// 127.0.0.1, as every bench starts `parley serve --insecure`. The benches are plain threads, so each call blocks
/// until the relay answered or its deadline passed.
final class SignalingSocket {
    /// How long the connection (TCP and WebSocket upgrade) and the relay's answer to a join may each take.
    static let timeout: Duration = .seconds(5)
    /// Unread messages one member keeps by default; older ones are dropped and counted.
    static let inboxCapacity = 64

    private let connection: SignalingConnection
    private let mailbox: SignalingMailbox
    /// The relay's signaling port on 127.0.0.1.
    let port: Int
    private var lastKeepAlive = ContinuousClock.now

    /// Connects to the relay's signaling port on 127.0.0.1 and upgrades to its WebSocket. A member joining a room
    /// of more than about 80 needs an inbox of the room's size: its answer is a `joined` and a `memberJoined` for
    /// each member the first did not list.
    init(port: Int, inboxCapacity: Int = SignalingSocket.inboxCapacity) throws {
        let loop = SignalingLoop.shared.acquire()
        let mailbox = SignalingMailbox(capacity: inboxCapacity)
        let connecting = SignalingConnection.connect(
            to: ServerAddress(host: "127.0.0.1", port: port), on: loop, security: .insecure,
            timeout: TimeAmount(Self.timeout)
        ) { event in
            mailbox.deliver(event)
        }
        do {
            // The connection's own timeout answers first; this one only guards against its never answering at all.
            connection = try waitOnThisThread(
                for: connecting, within: Self.timeout + .seconds(1),
                what: "the WebSocket upgrade on 127.0.0.1:\(port)")
        } catch let error as RelayBenchError {
            connecting.whenSuccess { $0.close() }
            SignalingLoop.shared.release()
            throw error
        } catch {
            SignalingLoop.shared.release()
            throw RelayBenchError.joinFailed("connecting to 127.0.0.1:\(port): \(error)")
        }
        self.mailbox = mailbox
        self.port = port
    }

    deinit {
        connection.close()
        SignalingLoop.shared.release()
    }

    /// Messages that arrived and were never read: pushed out of the full inbox or thrown away by `discardIncoming()`.
    var discardedMessages: Int { mailbox.discarded }

    /// Joins `room` (as a broadcaster unless `role` says otherwise) and returns the relay's answer.
    func join(room: String, name: String, role: MemberRole = .broadcaster) throws -> JoinedRoom {
        connection.send(.join(JoinRequest(room: room, name: name, role: role)))
        let deadline = ContinuousClock.now + Self.timeout
        while true {
            guard let event = mailbox.next(before: deadline) else {
                throw RelayBenchError.timedOut(
                    "the relay's answer to joining room \(room) as \(name)",
                    after: Self.timeout)
            }
            switch event {
            case .message(.joined(let joined)): return joined
            case .message(.error(let error)): throw RelayBenchError.joinFailed("relay answered \(error)")
            case .message, .media: continue
            case .invalid(let error): throw RelayBenchError.joinFailed("unreadable relay message: \(error)")
            case .closed: throw RelayBenchError.joinFailed("the relay closed the connection")
            }
        }
    }

    /// Joins `room`, following a redirect to another node of a cluster (on 127.0.0.1) once; returns the socket
    /// that joined (this one or the new one) and its port.
    func joinFollowingRedirect(room: String, name: String) throws -> (socket: SignalingSocket, port: Int) {
        connection.send(.join(JoinRequest(room: room, name: name)))
        let deadline = ContinuousClock.now + Self.timeout
        while true {
            guard let event = mailbox.next(before: deadline) else {
                throw RelayBenchError.timedOut(
                    "the relay's answer to joining room \(room) as \(name)", after: Self.timeout)
            }
            switch event {
            case .message(.joined): return (self, port)
            case .message(.redirect(let redirect)):
                guard let port = redirect.server.split(separator: ":").last.flatMap({ Int($0) }) else {
                    throw RelayBenchError.joinFailed("redirected to \(redirect.server), not HOST:PORT")
                }
                let next = try SignalingSocket(port: port)
                _ = try next.join(room: room, name: name)
                return (next, port)
            case .message(.error(let error)): throw RelayBenchError.joinFailed("relay answered \(error)")
            case .message, .media: continue
            case .invalid(let error): throw RelayBenchError.joinFailed("unreadable relay message: \(error)")
            case .closed: throw RelayBenchError.joinFailed("the relay closed the connection")
            }
        }
    }

    /// A ping every 2 s keeps the member inside the relay's 10 s liveness timeout.
    func keepAlive() {
        guard ContinuousClock.now - lastKeepAlive >= .seconds(2) else { return }
        lastKeepAlive = ContinuousClock.now
        connection.send(.ping(KeepAlive(token: 1)))
    }

    /// Drops whatever the relay sent since (roster changes, pongs) without waiting. The inbox is bounded whether or
    /// not a member calls this; it only keeps the count of unread messages honest at a step's end.
    func discardIncoming() {
        mailbox.discardAll()
    }

    /// Says goodbye and closes the WebSocket (a close frame, then the TCP connection).
    func leave() {
        connection.send(.leave)
        connection.close()
    }
}

/// At most `capacity` unread elements; adding to a full inbox drops the oldest and counts it, so a reader that
/// never reads holds a bounded amount however long the run.
struct BoundedInbox<Element> {
    let capacity: Int
    private(set) var elements: [Element] = []
    /// Elements that were never read: pushed out when full, or thrown away by `discardAll()`.
    private(set) var discarded = 0

    init(capacity: Int) {
        precondition(capacity > 0, "an inbox holds at least one element")
        self.capacity = capacity
    }

    /// Adds `element`, dropping the oldest when full.
    mutating func add(_ element: Element) {
        if elements.count == capacity {
            elements.removeFirst()
            discarded += 1
        }
        elements.append(element)
    }

    /// The oldest unread element, if any.
    mutating func next() -> Element? {
        elements.isEmpty ? nil : elements.removeFirst()
    }

    /// Throws away every unread element.
    mutating func discardAll() {
        discarded += elements.count
        elements.removeAll(keepingCapacity: true)
    }
}

/// One member's inbox, filled on the event loop and read on the bench's thread.
private final class SignalingMailbox: Sendable {
    private struct State {
        var inbox: BoundedInbox<SignalingEvent>
        var waiting = false
    }

    private let state: Mutex<State>
    private let arrived = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        state = Mutex(State(inbox: BoundedInbox(capacity: capacity)))
    }

    var discarded: Int { state.withLock { $0.inbox.discarded } }

    /// Called on the event loop for every event.
    func deliver(_ event: SignalingEvent) {
        let wake = state.withLock { state in
            state.inbox.add(event)
            return state.waiting
        }
        if wake { arrived.signal() }
    }

    /// The oldest unread event, waiting for one until `deadline`; nil when none came.
    func next(before deadline: ContinuousClock.Instant) -> SignalingEvent? {
        while true {
            let event = state.withLock { state in
                let event = state.inbox.next()
                state.waiting = event == nil
                return event
            }
            if let event { return event }
            let left = deadline - ContinuousClock.now
            // A wake-up left over from an earlier wait that timed out only costs one more turn of this loop.
            let woke = left > .zero && arrived.wait(timeout: .now() + dispatchInterval(left)) == .success
            if !woke {
                return state.withLock { state in
                    state.waiting = false
                    return state.inbox.next()
                }
            }
        }
    }

    func discardAll() {
        state.withLock { $0.inbox.discardAll() }
    }
}

/// The one event loop all bench members' signaling runs on: started by the first member and shut down when the last
/// one is released, so hundreds of members share one thread rather than a group each.
final class SignalingLoop: Sendable {
    static let shared = SignalingLoop()

    private let state = Mutex<(group: MultiThreadedEventLoopGroup?, members: Int)>((nil, 0))

    /// The loop for one more member, starting it when none runs.
    func acquire() -> any EventLoop {
        state.withLock { state in
            state.members += 1
            if let group = state.group { return group.next() }
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            state.group = group
            return group.next()
        }
    }

    /// One member fewer; the last one out shuts the loop down (and waits for it: never call this on the loop).
    func release() {
        let idle: MultiThreadedEventLoopGroup? = state.withLock { state in
            state.members -= 1
            guard state.members == 0 else { return nil }
            defer { state.group = nil }
            return state.group
        }
        try? idle?.syncShutdownGracefully()
    }

    /// Whether a loop runs now (tests check that the last member shut it down).
    var isRunning: Bool { state.withLock { $0.group != nil } }
}

/// Blocks this thread until `future` completes or `limit` passes; a timeout throws `RelayBenchError.timedOut` naming
/// `what`, a failure rethrows its error.
private func waitOnThisThread<Value: Sendable>(
    for future: EventLoopFuture<Value>, within limit: Duration,
    what: String
) throws -> Value {
    let outcome = Outcome<Value>()
    let done = DispatchSemaphore(value: 0)
    future.whenComplete { result in
        outcome.result.withLock { $0 = result }
        done.signal()
    }
    guard done.wait(timeout: .now() + dispatchInterval(limit)) == .success,
        let result = outcome.result.withLock({ $0 })
    else {
        throw RelayBenchError.timedOut(what, after: limit)
    }
    return try result.get()
}

/// A future's result, handed from the event loop to the waiting thread (it outlives a wait that timed out).
private final class Outcome<Value: Sendable>: Sendable {
    let result = Mutex<Result<Value, any Error>?>(nil)
}

private func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
    let (seconds, attoseconds) = duration.components
    return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
}
