import Foundation
import NIOWebSocket
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

/// What messaging does once a decision is made: the service (`MessagingService`) carries these out in order.
enum MessagingAction: Equatable {
    /// One event to one connection.
    case send(MessagingEvent, to: UInt64)
    /// Closes a connection with a WebSocket close status, after everything sent before.
    case close(UInt64, WebSocketErrorCode)
    /// Tells the cluster's other nodes (only when this relay is one node of several).
    case publish(ClusterEvent)
    /// A message a messaging client posted in a channel, for the calls in that room.
    case observe(StoredChannelPost)
    /// Writes when `account` was last seen.
    case setLastSeen(String, at: Int64)
    /// Tells the connections watching `account` where it is (the service reads its last-seen time when offline).
    case announcePresence(of: String)
    /// Sends the connection the next page of what waited for its account, when the last page was acknowledged.
    case deliverBacklog(to: UInt64)
    /// Writes the pending sends and receipts at the next turn of the queue.
    case flushSoon
    /// Reads what the connections of this node missed again in a second (the database did not answer).
    case catchUpSoon
}

/// Relay messaging's bookkeeping and decisions, with no store, clock or socket in it: time, randomness and what the
/// store answered come in as arguments, actions come out. Table-tested like `RelayState`; `MessagingService` is its
/// shell: it runs the store's calls the decisions ask for, on one serial queue, and carries the actions out.
struct MessagingState {
    /// A login in progress: the challenge sent for the name and keys claimed.
    struct PendingLogin: Equatable {
        var name: String
        var keys: AccountKeys
        var nonce: [UInt8]
    }

    /// One messaging connection as the service sees it.
    struct Connection {
        let opened: Duration
        var pending: PendingLogin?
        var account: String?
        var allowance: Double
        var toppedUp: Duration
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

    /// A direct message waiting for the next group commit.
    struct PendingSend: Equatable {
        var connection: UInt64
        var send: DirectMessageSend
        var sender: String
    }

    /// A receipt waiting for the next group commit.
    struct PendingReceipt: Equatable {
        var connection: UInt64
        var sequences: [Int64]
        var account: String
    }

    let limits: MessagingLimits
    var connections: [UInt64: Connection] = [:]
    var online: [String: Set<UInt64>] = [:]
    /// For accounts online: the channels each is a member of; and per channel, its members online (live delivery).
    var channelsOf: [String: Set<String>] = [:]
    var onlineMembers: [String: Set<String>] = [:]
    /// Per watched account, the connections that follow its presence.
    var watchers: [String: Set<UInt64>] = [:]
    /// Sends waiting for the next group commit: every send that arrives while the queue is busy is stored in the
    /// same transaction, then each is acknowledged (one commit instead of one per message under load; a lone
    /// message waits for nothing).
    var pendingSends: [PendingSend] = []
    /// Receipts waiting for the same group commit (a hundred clients acknowledging at once cost one transaction).
    var pendingReceipts: [PendingReceipt] = []
    var flushScheduled = false
    /// Names known to have an account (they never lose it), so a send needs no lookup; bounded.
    var knownAccounts: Set<String> = []
    /// Accounts in calls: per account, its members (one per call joined as it) and their rooms (nil when hidden).
    /// Bounded by the relay's member limit.
    var calls: [String: [UInt32: String?]] = [:]
    /// This relay is one node of a cluster: what others must know is published.
    var inCluster = false
    /// Something shows channel posts in calls.
    var observesChannelPosts = false
    /// A catch-up from the tables is due (the database did not answer the last one).
    var catchUpScheduled = false
    /// Where accounts are on the other nodes: per account, per node (bounded by `remotePresenceLimit`).
    var remote: [String: [String: NodePresence]] = [:]

    static let knownAccountsLimit = 100_000
    /// Live messages one connection remembers sending until it acknowledges them.
    static let sentLiveLimit = 10_000
    /// Messages marked delivered in one turn of the queue.
    static let receiptChunk = 64
    /// Accounts whose presence on other nodes this node follows, at most (a bus that announces more drops them).
    static let remotePresenceLimit = 1_000_000

    init(limits: MessagingLimits) {
        self.limits = limits
    }

    // MARK: - Connections

    /// A connection opened at `now`.
    mutating func opened(_ id: UInt64, now: Duration) {
        connections[id] = Connection(opened: now, allowance: limits.burst, toppedUp: now)
    }

    /// Connections that did not log in within the login timeout are told why and closed.
    mutating func closeStaleLogins(now: Duration) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        for (id, connection) in connections.sorted(by: { $0.key < $1.key })
        where connection.account == nil && now - connection.opened >= limits.loginTimeout {
            let reason = "no login within \(limits.loginTimeout.spokenSeconds) of connecting (the login timeout)"
            actions += [.send(.error(SignalingError(.notLoggedIn, reason)), to: id), .close(id, .policyViolation)]
            connections[id] = nil
        }
        return actions
    }

    /// A connection closed: what it watched is forgotten, and an account with no connection left is offline here.
    mutating func closed(_ id: UInt64, at wallTime: Int64) -> [MessagingAction] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        for name in connection.watching { unwatch(name, by: id) }
        guard let account = connection.account else { return [] }
        online[account]?.remove(id)
        guard online[account]?.isEmpty == true else { return [] }
        online[account] = nil
        for channel in channelsOf.removeValue(forKey: account) ?? [] { onlineMembers[channel]?.remove(account) }
        var actions: [MessagingAction] = []
        if !isOnline(account) { actions.append(.setLastSeen(account, at: wallTime)) }
        return actions + publishPresence(of: account) + [.announcePresence(of: account)]
    }

    /// Whether a request arriving now is within the connection's rate (one taken from its allowance); the error
    /// to send when it is not.
    mutating func admit(_ id: UInt64, now: Duration) -> [MessagingAction]? {
        guard var connection = connections[id] else { return [] }
        let elapsed = now - connection.toppedUp
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        connection.allowance = min(limits.burst, connection.allowance + seconds * limits.requestsPerSecond)
        connection.toppedUp = now
        defer { connections[id] = connection }
        guard connection.allowance >= 1 else {
            let reason = "more than \(Int(limits.requestsPerSecond)) requests a second: slow down"
            return [.send(.error(SignalingError(.rateLimited, reason)), to: id)]
        }
        connection.allowance -= 1
        return nil
    }

    // MARK: - Logging in

    /// A login's first step: the name and keys claimed are checked and a challenge (`nonce`) sent to sign.
    mutating func startLogin(_ login: AccountCard, on id: UInt64, nonce: [UInt8]) -> [MessagingAction] {
        guard let connection = connections[id] else { return [] }
        if let account = connection.account {
            return [.send(.error(SignalingError(.notAllowed, "already logged in as \(account)")), to: id)]
        }
        do throws(NameError) {
            _ = try DisplayName.validate(login.name)
        } catch {
            return [.send(.error(SignalingError(.badName, "account name: \(error)")), to: id)]
        }
        guard let signing = Data(base64Encoded: login.signingKey),
            let agreement = Data(base64Encoded: login.agreementKey),
            let keys = try? AccountKeys(signing: Array(signing), agreement: Array(agreement))
        else {
            let reason = "login \"signingKey\" and \"agreementKey\" must be base64 of 32-byte Curve25519 public keys"
            return [.send(.error(SignalingError(.badField, reason)), to: id)]
        }
        connections[id]?.pending = PendingLogin(name: login.name, keys: keys, nonce: nonce)
        return [.send(.challenge(LoginChallenge(nonce: Data(nonce).base64EncodedString())), to: id)]
    }

    /// A login's second step: the proof must verify with the keys claimed. The login to bind in the store, or the
    /// error sent.
    mutating func checkProof(_ proof: LoginProof, on id: UInt64) -> Result<PendingLogin, LoginRefusal> {
        guard let connection = connections[id] else { return .failure(LoginRefusal([])) }
        guard let pending = connection.pending else {
            return .failure(LoginRefusal(id, SignalingError(.notAllowed, "proof without a login: send login first")))
        }
        connections[id]?.pending = nil
        let message = AccountIdentity.loginMessage(name: pending.name, challenge: pending.nonce)
        guard let signature = AccountKeys.signature(base64: proof.signature),
            pending.keys.verifies(signature, of: message)
        else {
            return .failure(
                LoginRefusal(id, SignalingError(.accountRefused, "the login proof does not verify with the keys sent")))
        }
        return .success(pending)
    }

    /// The account as the store bound it: refused when it belongs to other keys or holds all its connections.
    /// Otherwise whether the account's channels must be read (its first connection here).
    func checkBinding(_ binding: AccountBinding, of name: String, on id: UInt64) -> Result<Bool, LoginRefusal> {
        guard binding != .belongsToOtherKeys else {
            return .failure(
                LoginRefusal(
                    id,
                    SignalingError(
                        .accountRefused,
                        "the account \(name) belongs to another key: pick another name, or import your identity "
                            + "from the computer that created it (parley account import)")))
        }
        guard (online[name]?.count ?? 0) < limits.connectionsPerAccount else {
            return .failure(
                LoginRefusal(
                    id,
                    SignalingError(
                        .limitReached,
                        "\(name) holds \(limits.connectionsPerAccount) connections, the most one account may")))
        }
        return .success(online[name] == nil)
    }

    /// The login done: the connection is the account's (`channels` read when it was its first here), `waiting`
    /// messages are waiting; presence is told, then the backlog's first page goes out.
    mutating func loggedIn(
        _ id: UInt64, as name: String, created: Bool, channels: [String]?, waiting: Int
    ) -> [MessagingAction] {
        guard connections[id] != nil else { return [] }
        if let channels {
            channelsOf[name] = Set(channels)
            for channel in channels { onlineMembers[channel, default: []].insert(name) }
        }
        let wasOnline = isOnline(name)
        let wasHere = online[name] != nil
        connections[id]?.account = name
        online[name, default: []].insert(id)
        var actions: [MessagingAction] = []
        if !wasHere { actions += publishPresence(of: name) }
        if !wasOnline { actions.append(.announcePresence(of: name)) }
        actions.append(.send(.loggedIn(LoggedIn(name: name, created: created, waiting: waiting)), to: id))
        actions.append(.deliverBacklog(to: id))
        return actions
    }

    /// The account whose backlog page `id` may get now: logged in, not caught up, the last page acknowledged.
    func backlogDue(for id: UInt64) -> String? {
        guard let connection = connections[id], let account = connection.account, !connection.caughtUp,
            connection.unacknowledged.isEmpty
        else { return nil }
        return account
    }

    /// A backlog page read for `id`: sent, and remembered until acknowledged; a short page is the last.
    mutating func backlogPage(_ page: [StoredDirectMessage], for id: UInt64) -> [MessagingAction] {
        guard connections[id] != nil else { return [] }
        connections[id]?.unacknowledged = Set(page.map(\.sequence))
        if page.count < maxMessagesPerPage { connections[id]?.caughtUp = true }
        return page.map { .send(.message(Self.delivery($0)), to: id) }
    }

    // MARK: - Presence

    /// Online through a messaging connection or a call, on this node or another of the cluster.
    func isOnline(_ account: String) -> Bool {
        online[account] != nil || calls[account] != nil || remote[account] != nil
    }

    /// Where `account` is now: online, in a call (and which room, unless hidden), or `lastSeen` when offline.
    func presence(of account: String, lastSeen: Int64?) -> PresenceAnswer {
        let isOnline = isOnline(account)
        let rooms = rooms(of: account)
        return PresenceAnswer(
            name: account, online: isOnline, lastSeen: isOnline ? nil : lastSeen,
            inCall: rooms == nil ? nil : true, room: rooms?.first)
    }

    /// `answer` to every connection watching its account.
    func announcements(_ answer: PresenceAnswer) -> [MessagingAction] {
        (watchers[answer.name] ?? []).sorted().map { .send(.presence(answer), to: $0) }
    }

    /// Tells the other nodes where `account` is on this one.
    func publishPresence(of account: String) -> [MessagingAction] {
        guard inCluster else { return [] }
        let here: NodePresence? =
            if online[account] != nil || calls[account] != nil {
                NodePresence(
                    messaging: online[account] != nil,
                    calls: (calls[account] ?? [:]).sorted { $0.key < $1.key }.map(\.value))
            } else {
                nil
            }
        return [.publish(.presence(account: account, presence: here))]
    }

    /// Every account here, published again (joining the bus, or revived after being declared dead).
    func publishEveryPresence() -> [MessagingAction] {
        Set(online.keys).union(calls.keys).sorted().flatMap { publishPresence(of: $0) }
    }

    /// Replaces the connection's watch list; the names watched now, whose presence goes out at once.
    mutating func watch(_ list: WatchList, on id: UInt64) -> [String] {
        for name in connections[id]?.watching ?? [] { unwatch(name, by: id) }
        let names = Set(list.names.map { String($0.prefix(DisplayName.maximumLength)) })
        connections[id]?.watching = names
        for name in names { watchers[name, default: []].insert(id) }
        return names.sorted()
    }

    mutating func unwatch(_ name: String, by id: UInt64) {
        watchers[name]?.remove(id)
        if watchers[name]?.isEmpty == true { watchers[name] = nil }
    }

    /// Someone joined or left a call as `account` (`room` nil when it hides its room).
    mutating func callActivity(
        account: String, member: UInt32, joined: Bool, room: String?, at wallTime: Int64
    ) -> [MessagingAction] {
        let wasOnline = isOnline(account)
        if joined {
            calls[account, default: [:]][member] = .some(room)
        } else {
            calls[account]?[member] = nil
            if calls[account]?.isEmpty == true { calls[account] = nil }
        }
        var actions: [MessagingAction] = []
        if wasOnline, !isOnline(account) { actions.append(.setLastSeen(account, at: wallTime)) }
        return actions + publishPresence(of: account) + [.announcePresence(of: account)]
    }

    /// Whether `account` is online and in which rooms, as watchers see it (cluster-wide).
    func presenceSummary(of account: String) -> PresenceSummary {
        PresenceSummary(online: isOnline(account), rooms: rooms(of: account))
    }

    /// The rooms `account` is in on every node, nil when in no call; a hidden room counts as a call with no room.
    func rooms(of account: String) -> [String]? {
        var inCall = false
        var names = Set<String>()
        if let local = calls[account] {
            inCall = true
            names.formUnion(local.values.compactMap { $0 })
        }
        for presence in (remote[account] ?? [:]).values where !presence.calls.isEmpty {
            inCall = true
            names.formUnion(presence.calls.compactMap { $0 })
        }
        return inCall ? names.sorted() : nil
    }
}

/// A login refused: the error for the connection (none when it is gone).
struct LoginRefusal: Error, Equatable {
    var actions: [MessagingAction]

    init(_ actions: [MessagingAction]) {
        self.actions = actions
    }

    init(_ id: UInt64, _ error: SignalingError) {
        actions = [.send(.error(error), to: id)]
    }
}

/// What watchers of an account are told: online, and its rooms when in a call.
struct PresenceSummary: Equatable {
    var online: Bool
    var rooms: [String]?
}
