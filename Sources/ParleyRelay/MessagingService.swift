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
/// acknowledged and delivered live or at the recipient's next login, in pages it acknowledges. Everything runs on
/// one serial queue (the store's calls block; the event loops never wait on them).
public final class MessagingService: @unchecked Sendable {
    struct Connection {
        let peer: any MessagingPeer
        let opened: ContinuousClock.Instant
        var pending: (name: String, keys: AccountKeys, nonce: [UInt8])?
        var account: String?
        var allowance: Double
        var toppedUp: ContinuousClock.Instant
        /// Sequences sent from the backlog and not yet acknowledged: the next page waits for them.
        var unacknowledged: Set<Int64> = []
        /// The backlog's last page went out: from then on new messages go live. Before, they come in the backlog's
        /// pages (in order, and never twice: a message sent live and again in a page would be a duplicate).
        var caughtUp = false
        /// Accounts whose presence this connection follows.
        var watching: Set<String> = []
        /// Sequences sent live and not yet acknowledged (at most `sentLiveLimit`): a catch-up after the cluster's
        /// bus was down skips them.
        var sentLive: Set<Int64> = []
        /// Sequences this connection acknowledged lately (at most `sentLiveLimit`): an event about one of them that
        /// arrives late from another node is not sent again.
        var acknowledgedLive: Set<Int64> = []
    }

    let queue = DispatchQueue(label: "parley.messaging")
    let store: any MessageStore
    let limits: MessagingLimits
    let logger: Logger
    let clock = ContinuousClock()
    let wallClock: @Sendable () -> Int64
    var connections: [UInt64: Connection] = [:]
    var online: [String: Set<UInt64>] = [:]
    /// For accounts online: the channels each is a member of; and per channel, its members online (live delivery).
    var channelsOf: [String: Set<String>] = [:]
    var onlineMembers: [String: Set<String>] = [:]
    /// Per watched account, the connections that follow its presence.
    var watchers: [String: Set<UInt64>] = [:]
    var timer: (any DispatchSourceTimer)?
    /// Sends waiting for the next group commit: every send that arrives while the queue is busy is stored in the
    /// same transaction, then each is acknowledged (one commit instead of one per message under load; a lone
    /// message waits for nothing).
    var pendingSends: [(connection: UInt64, send: DirectMessageSend, sender: String)] = []
    /// Receipts waiting for the same group commit (a hundred clients acknowledging at once cost one transaction).
    var pendingReceipts: [(connection: UInt64, sequences: [Int64], account: String)] = []
    var flushScheduled = false
    /// Names known to have an account (they never lose it), so a send needs no lookup; bounded.
    var knownAccounts: Set<String> = []
    static let knownAccountsLimit = 100_000
    /// Accounts in calls: per account, its members (one per call joined as it) and their rooms (nil when hidden).
    /// Bounded by the relay's member limit.
    var calls: [String: [UInt32: String?]] = [:]
    /// Told of every message a messaging client posts in a channel (the relay shows it in that room's call).
    var channelPostObserver: (@Sendable (StoredChannelPost) -> Void)?
    /// The cluster's bus, when this relay is one node of several.
    var cluster: (any ClusterBus)?
    /// A catch-up from the tables is due (the database did not answer the last one).
    var catchUpScheduled = false
    /// Where accounts are on the other nodes: per account, per node (bounded by `remotePresenceLimit`).
    var remote: [String: [String: NodePresence]] = [:]
    /// Events from other nodes not yet handled, and those dropped past `clusterBacklogLimit`.
    let clusterBacklog = SharedCount()
    let clusterDropped = SharedCount()

    /// A service over `store`.
    public init(
        store: any MessageStore, limits: MessagingLimits = MessagingLimits(), logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.store = store
        self.limits = limits
        self.logger = logger
        self.wallClock = wallClock
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.closeStaleLogins() }
        timer.resume()
        self.timer = timer
    }

    deinit { timer?.cancel() }

    /// A connection opened.
    public func open(_ id: UInt64, peer: any MessagingPeer) {
        queue.async { [self] in
            let now = clock.now
            connections[id] = Connection(peer: peer, opened: now, allowance: limits.burst, toppedUp: now)
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
            guard let peer = connections[id]?.peer else { return }
            peer.send(.error(error))
            if let status { peer.close(with: status) }
        }
    }

    /// A connection closed.
    public func closed(_ id: UInt64) {
        queue.async { [self] in
            guard let connection = connections.removeValue(forKey: id) else { return }
            for name in connection.watching { unwatch(name, by: id) }
            guard let account = connection.account else { return }
            online[account]?.remove(id)
            if online[account]?.isEmpty == true {
                online[account] = nil
                for channel in channelsOf.removeValue(forKey: account) ?? [] { onlineMembers[channel]?.remove(account) }
                if !isOnline(account) { try? store.setLastSeen(account, at: wallClock()) }
                publishPresence(of: account)
                announcePresence(of: account)
            }
        }
    }

    /// Waits until everything received so far was handled (for tests and shutdown).
    public func settle() {
        queue.sync {}
    }

    /// Accounts online now (for tests and statistics).
    public var onlineAccounts: Set<String> { queue.sync { Set(online.keys) } }

    func closeStaleLogins() {
        let now = clock.now
        for (id, connection) in connections
        where connection.account == nil
            && now - connection.opened >= limits.loginTimeout
        {
            connection.peer.send(
                .error(
                    SignalingError(
                        .notLoggedIn,
                        "no login within \(limits.loginTimeout.spokenSeconds) of connecting (the login timeout)")))
            connection.peer.close(with: .policyViolation)
            connections[id] = nil
        }
    }

    func handle(_ parsed: Result<MessagingRequest, SignalingError>, on id: UInt64) {
        guard var connection = connections[id] else { return }
        let now = clock.now
        let elapsed = now - connection.toppedUp
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        connection.allowance = min(limits.burst, connection.allowance + seconds * limits.requestsPerSecond)
        connection.toppedUp = now
        guard connection.allowance >= 1 else {
            connections[id] = connection
            connection.peer.send(
                .error(
                    SignalingError(
                        .rateLimited, "more than \(Int(limits.requestsPerSecond)) requests a second: slow down")))
            return
        }
        connection.allowance -= 1
        connections[id] = connection
        let request: MessagingRequest
        switch parsed {
        case .success(let value): request = value
        case .failure(let error):
            connection.peer.send(.error(error))
            return
        }
        switch request {
        case .ping(let token):
            connection.peer.send(.pong(token))
        case .login(let login):
            startLogin(login, on: id)
        case .proof(let proof):
            finishLogin(proof, on: id)
        default:
            guard let account = connection.account else {
                connection.peer.send(.error(SignalingError(.notLoggedIn, "\(request.type) needs a login first")))
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
