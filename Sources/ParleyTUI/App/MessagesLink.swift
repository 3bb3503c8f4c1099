/// The messages screen's connection to the relay as a state machine: when to connect, when to try again (1, 2, 4 …
/// 30 s apart after failed logins, 1 s after a connection broke), which connection's events count, what reloads on
/// a new connection, and what waits while there is none. Pure: time comes in with each call, and `MessagesSession`
/// carries out the effects (connecting, timers, requests).
struct MessagesLink: Equatable {
    enum Phase: Equatable {
        /// A login is under way on connection `generation`.
        case connecting
        /// Logged in on connection `generation`.
        case connected
        /// Waiting to connect again at this instant.
        case waiting(until: ContinuousClock.Instant)
        /// The screen closed the session.
        case stopped
    }

    /// What the session does next.
    enum Effect: Equatable {
        /// Log in: the `generation`th connection.
        case connect(generation: Int)
        /// Show this on the screen.
        case show(MessagesUpdate)
        /// Call `wake(now:)` at this instant.
        case wake(at: ContinuousClock.Instant)
        /// A new connection is up: read what waited, reload the list and `reopen` (the conversation open before),
        /// then send `resend` (messages the break caught; same ids, so never twice).
        case catchUp(reopen: ConversationKey?, resend: [MessagesAction])
        /// Carry out an action of the screen on the current connection.
        case perform(MessagesAction)
        /// Close the current connection (the screen closed the session).
        case close
    }

    /// Where the relay is and who logs in, for the notices.
    let server: String
    let me: String
    private(set) var phase = Phase.stopped
    /// The current connection's number: events and closes of older ones are ignored.
    private(set) var generation = 0
    /// Failed logins in a row.
    private(set) var failures = 0
    /// The conversation open last: reloaded on a new connection.
    private(set) var lastOpened: ConversationKey?
    /// Sends and posts a break caught, sent again on the next connection.
    private(set) var unsent: [MessagesAction] = []
    /// Actions of the screen made while there was no connection, carried out in order once there is one.
    private(set) var waiting: [MessagesAction] = []

    /// Messages kept to send again, and actions kept while disconnected; past it the newest are dropped and the
    /// screen is told.
    static let keptLimit = 1_000
    /// After a connection broke, the first try comes after this long.
    static let reconnectAfter = Duration.seconds(1)

    init(server: String, me: String) {
        self.server = server
        self.me = me
    }

    /// Seconds to wait before the next login after `failures` in a row: 1, 2, 4, … at most 30.
    static func retryDelay(after failures: Int) -> Int { min(30, 1 << min(5, max(0, failures - 1))) }

    /// Whether an event or close of connection `generation` is the current connection's.
    func isCurrent(_ generation: Int) -> Bool { generation == self.generation && phase != .stopped }

    /// The session starts: the first login.
    mutating func start() -> [Effect] {
        guard phase == .stopped, generation == 0 else { return [] }
        return connect()
    }

    /// The login of connection `generation` failed with `reason`.
    mutating func connectFailed(_ reason: String, generation: Int, now: ContinuousClock.Instant) -> [Effect] {
        guard isCurrent(generation), phase == .connecting else { return [] }
        failures += 1
        let delay = Self.retryDelay(after: failures)
        let until = now + .seconds(delay)
        phase = .waiting(until: until)
        return [
            .show(.disconnected("Cannot log in to \(server) as \(me): \(reason); trying again in \(delay) s")),
            .wake(at: until),
        ]
    }

    /// Connection `generation` logged in: what waited is read and reloaded, then the actions made meanwhile go.
    mutating func connected(generation: Int) -> [Effect] {
        guard isCurrent(generation), phase == .connecting else { return [] }
        phase = .connected
        failures = 0
        var effects: [Effect] = [.catchUp(reopen: lastOpened, resend: unsent)]
        unsent.removeAll()
        let actions = waiting
        waiting.removeAll()
        for action in actions { effects += self.action(action) }
        return effects
    }

    /// Connection `generation` closed (the relay went away, the network broke).
    mutating func closed(generation: Int, now: ContinuousClock.Instant) -> [Effect] {
        guard isCurrent(generation), phase == .connected || phase == .connecting else { return [] }
        if phase == .connecting {
            // A login that broke off is a failed login.
            return connectFailed("the connection closed", generation: generation, now: now)
        }
        failures = 1
        let until = now + Self.reconnectAfter
        phase = .waiting(until: until)
        return [.show(.disconnected("Connection to \(server) lost: reconnecting…")), .wake(at: until)]
    }

    /// A timer set by `.wake(at:)` fired.
    mutating func wake(now: ContinuousClock.Instant) -> [Effect] {
        guard case .waiting(let until) = phase, now >= until else { return [] }
        return connect()
    }

    /// The screen asks for `action`: carried out now when connected, or kept until the next connection.
    mutating func action(_ action: MessagesAction) -> [Effect] {
        switch action {
        case .open(let key): lastOpened = key
        case .joinChannel(let channel): lastOpened = ConversationKey(.channel, channel)
        default: break
        }
        switch phase {
        case .connected:
            return [.perform(action)]
        case .connecting, .waiting:
            if case .open = action { return [] }  // reloaded on connecting (`lastOpened`)
            guard waiting.count < Self.keptLimit else {
                return [
                    .show(.notice("Not connected, and \(Self.keptLimit) requests wait already: this one is dropped"))
                ]
            }
            waiting.append(action)
            return []
        case .stopped:
            return []
        }
    }

    /// `action` was carried out on connection `generation`, which is `stillConnected` or not: a send or post the
    /// break caught goes again on the next connection, under the same id.
    mutating func performed(
        _ action: MessagesAction, generation: Int, stillConnected: Bool, now: ContinuousClock.Instant
    ) -> [Effect] {
        guard !stillConnected, isCurrent(generation) else { return [] }
        switch action {
        case .sendDirect, .post:
            if unsent.count < Self.keptLimit { unsent.append(action) }
        default: break
        }
        return closed(generation: generation, now: now)
    }

    /// The screen closed the session.
    mutating func stop() -> [Effect] {
        let wasConnected = phase == .connected
        phase = .stopped
        return wasConnected ? [.close] : []
    }

    private mutating func connect() -> [Effect] {
        generation += 1
        phase = .connecting
        return [.connect(generation: generation)]
    }
}
