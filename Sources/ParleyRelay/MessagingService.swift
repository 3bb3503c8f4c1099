import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

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
    private struct Connection {
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
    }

    private let queue = DispatchQueue(label: "parley.messaging")
    private let store: any MessageStore
    private let limits: MessagingLimits
    private let logger: Logger
    private let clock = ContinuousClock()
    private let wallClock: @Sendable () -> Int64
    private var connections: [UInt64: Connection] = [:]
    private var online: [String: Set<UInt64>] = [:]
    /// For accounts online: the channels each is a member of; and per channel, its members online (live delivery).
    private var channelsOf: [String: Set<String>] = [:]
    private var onlineMembers: [String: Set<String>] = [:]
    /// Per watched account, the connections that follow its presence.
    private var watchers: [String: Set<UInt64>] = [:]
    private var timer: (any DispatchSourceTimer)?
    /// Sends waiting for the next group commit: every send that arrives while the queue is busy is stored in the
    /// same transaction, then each is acknowledged (one commit instead of one per message under load; a lone
    /// message waits for nothing).
    private var pendingSends: [(connection: UInt64, send: DirectMessageSend, sender: String)] = []
    /// Receipts waiting for the same group commit (a hundred clients acknowledging at once cost one transaction).
    private var pendingReceipts: [(connection: UInt64, sequences: [Int64], account: String)] = []
    private var flushScheduled = false
    /// Names known to have an account (they never lose it), so a send needs no lookup; bounded.
    private var knownAccounts: Set<String> = []
    private static let knownAccountsLimit = 100_000
    /// Accounts in calls: per account, its members (one per call joined as it) and their rooms (nil when hidden).
    /// Bounded by the relay's member limit.
    private var calls: [String: [UInt32: String?]] = [:]
    /// Told of every message a messaging client posts in a channel (the relay shows it in that room's call).
    private var channelPostObserver: (@Sendable (StoredChannelPost) -> Void)?

    /// A service over `store`.
    public init(store: any MessageStore, limits: MessagingLimits = MessagingLimits(), logger: Logger,
                wallClock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
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
                if calls[account] == nil { try? store.setLastSeen(account, at: wallClock()) }
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

    private func closeStaleLogins() {
        let now = clock.now
        for (id, connection) in connections where connection.account == nil
            && now - connection.opened >= limits.loginTimeout {
            connection.peer.send(.error(SignalingError(
                .notLoggedIn, "no login within \(limits.loginTimeout.spokenSeconds) of connecting (the login timeout)")))
            connection.peer.close(with: .policyViolation)
            connections[id] = nil
        }
    }

    private func handle(_ parsed: Result<MessagingRequest, SignalingError>, on id: UInt64) {
        guard var connection = connections[id] else { return }
        let now = clock.now
        let elapsed = now - connection.toppedUp
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        connection.allowance = min(limits.burst, connection.allowance + seconds * limits.requestsPerSecond)
        connection.toppedUp = now
        guard connection.allowance >= 1 else {
            connections[id] = connection
            connection.peer.send(.error(SignalingError(
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

    private func startLogin(_ login: AccountCard, on id: UInt64) {
        guard let peer = connections[id]?.peer else { return }
        guard connections[id]?.account == nil else {
            peer.send(.error(SignalingError(.notAllowed, "already logged in as \(connections[id]?.account ?? "")")))
            return
        }
        do throws(NameError) {
            _ = try DisplayName.validate(login.name)
        } catch {
            peer.send(.error(SignalingError(.badName, "account name: \(error)")))
            return
        }
        guard let signing = Data(base64Encoded: login.signingKey), let agreement = Data(base64Encoded: login.agreementKey),
              let keys = try? AccountKeys(signing: Array(signing), agreement: Array(agreement))
        else {
            peer.send(.error(SignalingError(
                .badField, "login \"signingKey\" and \"agreementKey\" must be base64 of 32-byte Curve25519 public keys")))
            return
        }
        var nonce = [UInt8](repeating: 0, count: 32)
        var random = SystemRandomNumberGenerator()
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &random) }
        connections[id]?.pending = (login.name, keys, nonce)
        peer.send(.challenge(LoginChallenge(nonce: Data(nonce).base64EncodedString())))
    }

    private func finishLogin(_ proof: LoginProof, on id: UInt64) {
        guard let connection = connections[id] else { return }
        let peer = connection.peer
        guard let pending = connection.pending else {
            peer.send(.error(SignalingError(.notAllowed, "proof without a login: send login first")))
            return
        }
        connections[id]?.pending = nil
        let message = AccountIdentity.loginMessage(name: pending.name, challenge: pending.nonce)
        guard let signature = AccountKeys.signature(base64: proof.signature),
              pending.keys.verifies(signature, of: message)
        else {
            peer.send(.error(SignalingError(.accountRefused, "the login proof does not verify with the keys sent")))
            return
        }
        let binding: AccountBinding
        do {
            binding = try store.bind(account: pending.name, to: pending.keys)
        } catch {
            peer.send(.error(SignalingError(.storeFailed, "\(error)")))
            return
        }
        guard binding != .belongsToOtherKeys else {
            peer.send(.error(SignalingError(
                .accountRefused,
                "the account \(pending.name) belongs to another key: pick another name, or import your identity "
                    + "from the computer that created it (parley account import)")))
            return
        }
        guard (online[pending.name]?.count ?? 0) < limits.connectionsPerAccount else {
            peer.send(.error(SignalingError(
                .limitReached, "\(pending.name) holds \(limits.connectionsPerAccount) connections, the most one account may")))
            return
        }
        if online[pending.name] == nil {
            let channels: [String]
            do {
                channels = try store.channels(of: pending.name)
            } catch {
                peer.send(.error(SignalingError(.storeFailed, "\(error)")))
                return
            }
            channelsOf[pending.name] = Set(channels)
            for channel in channels { onlineMembers[channel, default: []].insert(pending.name) }
        }
        let wasOnline = isOnline(pending.name)
        connections[id]?.account = pending.name
        online[pending.name, default: []].insert(id)
        if !wasOnline { announcePresence(of: pending.name) }
        let waiting = (try? store.undeliveredCount(to: pending.name)) ?? 0
        peer.send(.loggedIn(LoggedIn(name: pending.name, created: binding == .created, waiting: waiting)))
        logger.info("account logged in", metadata: ["account": "\(pending.name)", "created": "\(binding == .created)"])
        deliverBacklog(to: id)
    }

    /// Sends the next page of what waited for this account, once the previous page was acknowledged.
    private func deliverBacklog(to id: UInt64) {
        guard let connection = connections[id], let account = connection.account, !connection.caughtUp,
              connection.unacknowledged.isEmpty else { return }
        let page: [StoredDirectMessage]
        do {
            page = try store.undelivered(to: account, limit: maxMessagesPerPage)
        } catch {
            connection.peer.send(.error(SignalingError(.storeFailed, "\(error)")))
            return
        }
        connections[id]?.unacknowledged = Set(page.map(\.sequence))
        if page.count < maxMessagesPerPage { connections[id]?.caughtUp = true }
        for stored in page { connection.peer.send(.message(delivery(stored))) }
    }

    /// A stored message as `reader` receives it: the sender's own copy only when the sender reads it.
    private func delivery(_ stored: StoredDirectMessage, to reader: String? = nil) -> DirectMessageDelivery {
        DirectMessageDelivery(
            sequence: stored.sequence, id: stored.message.id, from: stored.message.sender,
            to: stored.message.recipient, sealed: Data(stored.message.sealed).base64EncodedString(),
            sentAt: stored.message.receivedAt, delivered: stored.deliveredAt != nil, read: stored.readAt != nil,
            senderCopy: reader == stored.message.sender ? stored.message.senderCopy.map { Data($0).base64EncodedString() } : nil)
    }

    /// Marks pending receipts' messages delivered in one transaction, then sends the next backlog pages and tells
    /// the senders. Unless `all`, at most about `receiptChunk` messages a turn: the rest wait for the next turn of the
    /// queue, behind sends that arrived meanwhile (a hundred recipients acknowledging at once would otherwise hold
    /// every new message back for the whole batch).
    private func flushReceipts(all: Bool = true) {
        var taken = 0, count = 0
        while taken < pendingReceipts.count, all || taken == 0 || count < Self.receiptChunk {
            count += pendingReceipts[taken].sequences.count
            taken += 1
        }
        let batch = Array(pendingReceipts.prefix(taken))
        pendingReceipts.removeFirst(taken)
        if !pendingReceipts.isEmpty { scheduleFlush() }
        guard !batch.isEmpty else { return }
        let results: [[MessageMark]]
        do {
            results = try store.markDelivered(batch: batch.map { ($0.sequences, $0.account) }, at: wallClock())
        } catch {
            for entry in batch { connections[entry.connection]?.peer.send(.error(SignalingError(.storeFailed, "\(error)"))) }
            return
        }
        for (entry, marks) in zip(batch, results) {
            connections[entry.connection]?.unacknowledged.subtract(entry.sequences)
            deliverBacklog(to: entry.connection)
            sendReceipts(marks, by: entry.account, read: false)
        }
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        queue.async { [self] in flushSends() }
    }

    /// Messages marked delivered in one turn of the queue.
    static let receiptChunk = 64

    /// Commits every pending send in one transaction, then acknowledges each and delivers the new ones live; then a
    /// chunk of receipts.
    private func flushSends() {
        flushScheduled = false
        defer { flushReceipts(all: false) }
        let batch = pendingSends
        pendingSends.removeAll(keepingCapacity: true)
        guard !batch.isEmpty else { return }
        let now = wallClock()
        let messages = batch.map { entry in
            // Decoding checked the base64 and its size.
            NewDirectMessage(id: entry.send.id, sender: entry.sender, recipient: entry.send.to,
                             sealed: Array(Data(base64Encoded: entry.send.sealed) ?? Data()), receivedAt: now,
                             senderCopy: entry.send.senderCopy.flatMap { Data(base64Encoded: $0) }.map { Array($0) })
        }
        let results: [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
        do {
            results = try store.store(batch: messages)
        } catch {
            // Nothing was committed: nothing is acknowledged, and the senders say so (their clients resend).
            for entry in batch { connections[entry.connection]?.peer.send(.error(SignalingError(.storeFailed, "\(error)"))) }
            return
        }
        for (entry, result) in zip(batch, results) {
            let peer = connections[entry.connection]?.peer
            switch result {
            case .success(let stored):
                peer?.send(.stored(MessageStored(id: entry.send.id, sequence: stored.stored.sequence)))
                if stored.isNew {
                    for other in online[entry.send.to] ?? [] where connections[other]?.caughtUp == true {
                        connections[other]?.peer.send(.message(delivery(stored.stored)))
                    }
                }
            case .failure(let error):
                peer?.send(.error(SignalingError(.badField, "\(error)")))
            }
        }
    }

    private func handle(_ request: MessagingRequest, from account: String, on id: UInt64) {
        guard let peer = connections[id]?.peer else { return }
        switch request {
        case .send, .received:
            break
        default:
            // Anything that reads sees every send and receipt that arrived before it.
            if flushScheduled || !pendingReceipts.isEmpty {
                flushSends()
                flushReceipts()
            }
        }
        do throws(StoreError) {
            switch request {
            case .send(let send):
                if !knownAccounts.contains(send.to) {
                    guard try store.keys(of: send.to) != nil else {
                        peer.send(.error(SignalingError(.unknownAccount, "no account is named \(send.to.prefix(128))")))
                        return
                    }
                    if knownAccounts.count >= Self.knownAccountsLimit { knownAccounts.removeAll(keepingCapacity: true) }
                    knownAccounts.insert(send.to)
                }
                pendingSends.append((id, send, account))
                scheduleFlush()
            case .received(let receipt):
                pendingReceipts.append((id, receipt.sequences, account))
                scheduleFlush()
            case .read(let mark):
                let marks = try store.markRead(from: mark.peer, to: account, through: mark.through, at: wallClock())
                sendReceipts(marks, by: account, read: true)
            case .joinChannel(let ref):
                guard let channel = channelName(ref.channel, peer: peer) else { return }
                let mine = channelsOf[account] ?? []
                guard mine.count < limits.channelsPerAccount || mine.contains(channel) else {
                    peer.send(.error(SignalingError(
                        .limitReached, "\(account) is in \(limits.channelsPerAccount) channels, the most one account may")))
                    return
                }
                let before = try store.members(of: channel, limit: 0).count
                guard before < limits.membersPerChannel || mine.contains(channel) else {
                    peer.send(.error(SignalingError(
                        .limitReached, "channel \(channel) has \(limits.membersPerChannel) members, the most a channel may")))
                    return
                }
                let line = try store.join(channel: channel, account: account, at: wallClock())
                channelsOf[account, default: []].insert(channel)
                onlineMembers[channel, default: []].insert(account)
                if let line { deliver(line) }
                peer.send(.members(ChannelMembers(channel: channel, count: line?.members ?? before, names: [], member: true)))
            case .leaveChannel(let ref):
                guard let channel = channelName(ref.channel, peer: peer) else { return }
                let line = try store.leave(channel: channel, account: account, at: wallClock())
                if let line { deliver(line) }
                channelsOf[account]?.remove(channel)
                onlineMembers[channel]?.remove(account)
                if onlineMembers[channel]?.isEmpty == true { onlineMembers[channel] = nil }
                var count = line?.members ?? 0
                if line == nil { count = try store.members(of: channel, limit: 0).count }
                peer.send(.members(ChannelMembers(channel: channel, count: count, names: [], member: false)))
            case .members(let ref):
                guard let channel = channelName(ref.channel, peer: peer) else { return }
                let members = try store.members(of: channel, limit: maxMessagesPerPage)
                peer.send(.members(ChannelMembers(channel: channel, count: members.count, names: members.names,
                                                  member: channelsOf[account]?.contains(channel) == true)))
            case .channelPost(let send):
                guard let channel = channelName(send.channel, peer: peer), isMember(account, of: channel, peer: peer)
                else { return }
                let result = try store.post(NewChannelPost(id: send.id, channel: channel, sender: account, text: send.text,
                                                           postedAt: wallClock()))
                peer.send(.channelStored(ChannelPostStored(channel: channel, id: send.id, sequence: result.stored.sequence)))
                if result.isNew {
                    deliver(result.stored)
                    channelPostObserver?(result.stored)
                }
            case .channelHistory(let query):
                guard let channel = channelName(query.channel, peer: peer), isMember(account, of: channel, peer: peer)
                else { return }
                let page = try store.channelHistory(channel, before: query.before, limit: query.limit)
                for line in page {
                    var answer = Self.delivery(line)
                    answer.inHistory = true
                    peer.send(.channelPost(answer))
                }
                peer.send(.channelHistoryEnd(ChannelHistoryEnd(channel: channel, count: page.count)))
            case .channelRead(let mark):
                guard let channel = channelName(mark.channel, peer: peer) else { return }
                try store.markChannelRead(channel, by: account, through: mark.through)
            case .conversations(let query):
                let lines = try store.conversations(of: account, limit: query.limit)
                for line in lines {
                    switch line.kind {
                    case .direct(let peerName, let last):
                        peer.send(.conversation(ConversationLine(
                            kind: "direct", name: peerName, unread: line.unread, lastAt: line.lastAt,
                            lastMessage: delivery(last, to: account))))
                    case .channel(let name, let last):
                        peer.send(.conversation(ConversationLine(
                            kind: "channel", name: name, unread: line.unread, lastAt: line.lastAt,
                            lastPost: last.map(Self.delivery))))
                    }
                }
                peer.send(.conversationsEnd(ConversationsEnd(count: lines.count)))
            case .watch(let list):
                for name in connections[id]?.watching ?? [] { unwatch(name, by: id) }
                let names = Set(list.names.map { String($0.prefix(DisplayName.maximumLength)) })
                connections[id]?.watching = names
                for name in names { watchers[name, default: []].insert(id) }
                // The current state of each, at once; changes follow.
                for name in names.sorted() { peer.send(.presence(try presence(of: name))) }
            case .keys(let ref):
                guard let keys = try store.keys(of: ref.name) else {
                    peer.send(.error(SignalingError(.unknownAccount, "no account is named \(ref.name.prefix(128))")))
                    return
                }
                peer.send(.keys(AccountCard(
                    name: ref.name, signingKey: Data(keys.signing).base64EncodedString(),
                    agreementKey: Data(keys.agreement).base64EncodedString())))
            case .presence(let ref):
                guard try store.keys(of: ref.name) != nil else {
                    peer.send(.error(SignalingError(.unknownAccount, "no account is named \(ref.name.prefix(128))")))
                    return
                }
                peer.send(.presence(try presence(of: ref.name)))
            case .history(let query):
                let page = try store.history(between: account, and: query.peer, before: query.before, limit: query.limit)
                for stored in page {
                    var answer = delivery(stored, to: account)
                    answer.inHistory = true
                    peer.send(.message(answer))
                }
                peer.send(.historyEnd(HistoryEnd(peer: query.peer, count: page.count)))
            case .login, .proof, .ping:
                break
            }
        } catch {
            let code: SignalingErrorCode = if case .idReused = error { .badField } else { .storeFailed }
            peer.send(.error(SignalingError(code, "\(error)")))
        }
    }
}

extension MessagingService {
    /// A channel name as the room name rules allow it, or nil after telling the peer what to type instead.
    private func channelName(_ text: String, peer: any MessagingPeer) -> String? {
        if let name = try? RoomName.validate(text), name == text { return name }
        peer.send(.error(SignalingError(
            .badRoomName, "channel \"\(text.prefix(80))\" is not a valid name: use letters, digits, spaces or "
                + "\(RoomName.punctuation), at most \(RoomName.maximumBytes) bytes (e.g. \(RoomName.clean(text).isEmpty ? "team" : RoomName.clean(text)))")))
        return nil
    }

    private func isMember(_ account: String, of channel: String, peer: any MessagingPeer) -> Bool {
        if channelsOf[account]?.contains(channel) == true { return true }
        peer.send(.error(SignalingError(.notAllowed, "\(account) is not a member of channel \(channel): join it first")))
        return false
    }

    static func delivery(_ line: StoredChannelPost) -> ChannelPostDelivery {
        ChannelPostDelivery(channel: line.post.channel, sequence: line.sequence, id: line.post.id, from: line.post.sender,
                            kind: line.post.kind.rawValue, text: line.post.text, sentAt: line.post.postedAt,
                            members: line.members)
    }

    /// Sends a channel line to every connection of every member online.
    private func deliver(_ line: StoredChannelPost) {
        let event = MessagingEvent.channelPost(Self.delivery(line))
        for member in onlineMembers[line.post.channel] ?? [] {
            for connection in online[member] ?? [] { connections[connection]?.peer.send(event) }
        }
    }

    /// Tells each sender, on every connection it has open, which of its messages reached or were read by `reader`.
    private func sendReceipts(_ marks: [MessageMark], by reader: String, read: Bool) {
        for (sender, marked) in Dictionary(grouping: marks, by: \.sender) {
            let event = MessagingEvent.receipt(MessageReceipt(by: reader, sequences: marked.map(\.sequence), read: read))
            for connection in online[sender] ?? [] { connections[connection]?.peer.send(event) }
        }
    }

    private func unwatch(_ name: String, by id: UInt64) {
        watchers[name]?.remove(id)
        if watchers[name]?.isEmpty == true { watchers[name] = nil }
    }

    /// Online through a messaging connection or a call.
    private func isOnline(_ account: String) -> Bool { online[account] != nil || calls[account] != nil }

    /// Where `account` is now: online, in a call (and which room, unless hidden), or when it was last seen.
    private func presence(of account: String) throws(StoreError) -> PresenceAnswer {
        let isOnline = isOnline(account)
        let rooms = calls[account].map { Set($0.values.compactMap { $0 }).sorted() }
        return PresenceAnswer(name: account, online: isOnline, lastSeen: isOnline ? nil : try store.lastSeen(account),
                              inCall: rooms == nil ? nil : true, room: rooms?.first)
    }

    /// Tells the connections watching `account` where it is now.
    private func announcePresence(of account: String) {
        guard let watching = watchers[account], !watching.isEmpty else { return }
        let answer = (try? presence(of: account)) ?? PresenceAnswer(name: account, online: isOnline(account), lastSeen: nil)
        let event = MessagingEvent.presence(answer)
        for id in watching { connections[id]?.peer.send(event) }
    }

    /// The WebSocket path of messaging connections.
    public static let path = "/parley/messages"
}

// MARK: - Calls

extension MessagingService {
    /// Calls `observer` (on the service's queue) with every message a messaging client posts in a channel.
    public func observeChannelPosts(_ observer: @escaping @Sendable (StoredChannelPost) -> Void) {
        queue.async { [self] in channelPostObserver = observer }
    }

    /// Checks the account a call's join claims: `signature` over `message` with the account's keys. `answer` is
    /// called on the service's queue.
    public func checkAccount(_ name: String, message: [UInt8], signature: [UInt8],
                             answer: @escaping @Sendable (AccountCheck) -> Void) {
        queue.async { [self] in
            let keys: AccountKeys?
            do {
                keys = try store.keys(of: name)
            } catch {
                answer(.unverified("the relay could not read its accounts (\(error)); you joined as a guest"))
                return
            }
            guard let keys else {
                answer(.unverified(
                    "this relay has no account \(name) (log in here once with parley login); you joined as a guest"))
                return
            }
            guard keys.verifies(signature, of: message) else {
                answer(.refused("the account \(name) did not sign this join with its key: join as a guest (--guest), "
                                + "or import the identity that owns the account (parley account import)"))
                return
            }
            answer(.verified(name))
        }
    }

    /// Someone joined or left a call: the account's presence changes, and in a kept room the line goes into the
    /// room's channel (and live to its members online). On a join, `history` gets the room's lines from before it
    /// (oldest first, at most `ChatHistory.maximumLines`).
    public func callActivity(_ activity: CallActivity, history: (@Sendable ([StoredChannelPost]) -> Void)? = nil) {
        queue.async { [self] in
            if let account = activity.member.account {
                let wasOnline = isOnline(account)
                if activity.joined {
                    calls[account, default: [:]][activity.member.id] = activity.hidesRoom ? .some(nil) : activity.room
                } else {
                    calls[account]?[activity.member.id] = nil
                    if calls[account]?.isEmpty == true { calls[account] = nil }
                }
                if wasOnline, !isOnline(account) { try? store.setLastSeen(account, at: wallClock()) }
                announcePresence(of: account)
            }
            guard activity.kept else {
                history?([])
                return
            }
            let now = wallClock()
            let line = NewChannelPost(
                id: "call-\(activity.joined ? "joined" : "left")-\(activity.member.id)-\(now)", channel: activity.room,
                sender: activity.sender, kind: activity.joined ? .callJoined : .callLeft, text: "", postedAt: now,
                members: activity.members)
            do throws(StoreError) {
                let stored = try store.post(line).stored
                deliver(stored)
                if let history {
                    let page = try store.channelHistory(activity.room, before: stored.sequence,
                                                        limit: ChatHistory.maximumLines)
                    history(page.reversed())
                }
            } catch {
                logger.warning("room activity not kept", metadata: ["room": "\(activity.room)", "error": "\(error)"])
                history?([])
            }
        }
    }

    /// A chat line said in a kept room's call: stored in the room's channel and sent to its members online.
    public func roomChat(room: String, id: String, sender: String, text: String, time: Int64) {
        queue.async { [self] in
            do throws(StoreError) {
                let result = try store.post(NewChannelPost(id: id, channel: room, sender: sender, text: text,
                                                           postedAt: time))
                if result.isNew { deliver(result.stored) }
            } catch {
                logger.warning("room chat not kept", metadata: ["room": "\(room)", "error": "\(error)"])
            }
        }
    }
}
