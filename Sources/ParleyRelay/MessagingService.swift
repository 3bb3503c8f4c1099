import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire
import Synchronization

/// One messaging connection's way out, as the service sees it.
public protocol MessagingPeer: AnyObject, Sendable {
    /// Sends one event.
    func send(_ event: MessagingEvent)
    /// Closes the connection with a WebSocket close `status`, after every event sent before.
    func close(with status: WebSocketErrorCode)
}

/// Limits of the messaging service, each named in the error that enforces it.
public struct MessagingLimits: Sendable, Equatable {
    /// A connection that has not logged in by then is closed.
    public var loginTimeout: Duration = .seconds(10)
    /// Requests a connection may make a second, sustained, and in a burst.
    public var requestsPerSecond: Double = 200
    public var burst: Double = 400
    /// Connections one account may hold at once.
    public var connectionsPerAccount = 16
    /// Channels one account may be a member of.
    public var channelsPerAccount = 500
    /// Members one channel may have.
    public var membersPerChannel = 10_000

    /// Default limits.
    public init() {}
}

/// Messaging between calls on the relay: accounts proven by signature, direct messages stored before they are
/// acknowledged and delivered live or at the recipient's next login, in pages it acknowledges. The shell of
/// `MessagingState`: everything runs on one serial queue (the store's calls block; the event loops never wait on
/// them), where the store answers what the state's decisions ask and the actions they return are carried out.
public final class MessagingService: @unchecked Sendable {
    let queue = DispatchQueue(label: "parley.messaging")
    let store: any MessageStore
    let logger: Logger
    let clock = ContinuousClock()
    let epoch: ContinuousClock.Instant
    let wallClock: @Sendable () -> Int64
    var state: MessagingState
    /// Each connection's way out.
    var peers: [UInt64: any MessagingPeer] = [:]
    var timer: (any DispatchSourceTimer)?
    /// Told of every message a messaging client posts in a channel (the relay shows it in that room's call).
    var channelPostObserver: (@Sendable (StoredChannelPost) -> Void)?
    /// The cluster's bus, when this relay is one node of several.
    var cluster: (any ClusterBus)?
    /// Events from other nodes not yet handled, and those dropped past `clusterBacklogLimit`.
    let clusterBacklog = SharedCount()
    let clusterDropped = SharedCount()

    /// A service over `store`.
    public init(
        store: any MessageStore, limits: MessagingLimits = MessagingLimits(), logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.store = store
        self.logger = logger
        self.wallClock = wallClock
        state = MessagingState(limits: limits)
        epoch = clock.now
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            perform(state.closeStaleLogins(now: now))
        }
        timer.resume()
        self.timer = timer
    }

    deinit { timer?.cancel() }

    /// Time on the service's clock.
    var now: Duration { clock.now - epoch }

    /// A connection opened.
    public func open(_ id: UInt64, peer: any MessagingPeer) {
        queue.async { [self] in
            peers[id] = peer
            state.opened(id, now: now)
        }
    }

    /// A text frame arrived. It is parsed here, on the caller's thread (the connection's event loop), so the
    /// service's one queue only does the work.
    public func receive(_ text: String, on id: UInt64) {
        let request: Result<MessagingRequest, SignalingError>
        do throws(SignalingError) {
            request = .success(try MessagingRequest.decode(text))
        } catch {
            request = .failure(error)
        }
        queue.async { [self] in handle(request, on: id) }
    }

    /// Refuses something the connection sent before it reached the protocol (a frame that is not UTF-8, a message
    /// over the frame limits); with `status`, then closes the connection with it.
    public func refuse(_ id: UInt64, _ error: SignalingError, thenCloseWith status: WebSocketErrorCode? = nil) {
        queue.async { [self] in
            guard let peer = peers[id] else { return }
            peer.send(.error(error))
            if let status { peer.close(with: status) }
        }
    }

    /// A connection closed.
    public func closed(_ id: UInt64) {
        queue.async { [self] in
            perform(state.closed(id, at: wallClock()))
            peers[id] = nil
        }
    }

    /// Waits until everything received so far was handled (for tests and shutdown).
    public func settle() {
        queue.sync {}
    }

    /// Accounts online now (for tests and statistics).
    public var onlineAccounts: Set<String> { queue.sync { Set(state.online.keys) } }

    /// The WebSocket path of messaging connections.
    public static let path = "/parley/messages"

    /// Carries out `actions` in order.
    func perform(_ actions: [MessagingAction]) {
        for action in actions {
            switch action {
            case .send(let event, let id):
                peers[id]?.send(event)
            case .close(let id, let status):
                peers[id]?.close(with: status)
                peers[id] = nil
            case .publish(let event):
                cluster?.publish(event)
            case .observe(let line):
                channelPostObserver?(line)
            case .setLastSeen(let account, let time):
                try? store.setLastSeen(account, at: time)
            case .announcePresence(let account):
                announcePresence(of: account)
            case .deliverBacklog(let id):
                deliverBacklog(to: id)
            case .flushSoon:
                queue.async { [self] in flushSends() }
            case .catchUpSoon:
                queue.asyncAfter(deadline: .now() + 1) { [self] in
                    state.catchUpScheduled = false
                    redeliverMissed()
                }
            }
        }
    }

    func handle(_ parsed: Result<MessagingRequest, SignalingError>, on id: UInt64) {
        if let refused = state.admit(id, now: now) {
            perform(refused)
            return
        }
        let request: MessagingRequest
        switch parsed {
        case .success(let value): request = value
        case .failure(let error):
            peers[id]?.send(.error(error))
            return
        }
        switch request {
        case .ping(let token):
            peers[id]?.send(.pong(token))
        case .login(let login):
            var nonce = [UInt8](repeating: 0, count: 32)
            var random = SystemRandomNumberGenerator()
            for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &random) }
            perform(state.startLogin(login, on: id, nonce: nonce))
        case .proof(let proof):
            finishLogin(proof, on: id)
        default:
            guard let account = state.connections[id]?.account else {
                peers[id]?.send(.error(SignalingError(.notLoggedIn, "\(request.type) needs a login first")))
                return
            }
            handle(request, from: account, on: id)
        }
    }
}

/// A count shared between threads.
final class SharedCount: Sendable {
    private let count = Mutex(0)
    /// Adds `amount`; returns the new count.
    @discardableResult func add(_ amount: Int) -> Int {
        count.withLock {
            $0 += amount
            return $0
        }
    }
    var value: Int { count.withLock { $0 } }
}
