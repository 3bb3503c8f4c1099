import Dispatch
import Foundation
import Logging
import ParleyRoom
import ParleySecurity
import ParleyStore
import ParleyWire

/// One messaging connection's way out, as the service sees it.
public protocol MessagingPeer: AnyObject, Sendable {
    /// Sends one event.
    func send(_ event: MessagingEvent)
    /// Closes the connection.
    func close()
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
    }

    private let queue = DispatchQueue(label: "parley.messaging")
    private let store: any MessageStore
    private let limits: MessagingLimits
    private let logger: Logger
    private let clock = ContinuousClock()
    private let wallClock: @Sendable () -> Int64
    private var connections: [UInt64: Connection] = [:]
    private var online: [String: Set<UInt64>] = [:]
    private var timer: (any DispatchSourceTimer)?
    /// Sends waiting for the next group commit: every send that arrives while the queue is busy is stored in the
    /// same transaction, then each is acknowledged (one commit instead of one per message under load; a lone
    /// message waits for nothing).
    private var pendingSends: [(connection: UInt64, send: DirectMessageSend, sender: String)] = []
    private var flushScheduled = false
    /// Names known to have an account (they never lose it), so a send needs no lookup; bounded.
    private var knownAccounts: Set<String> = []
    private static let knownAccountsLimit = 100_000

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

    /// A text frame arrived.
    public func receive(_ text: String, on id: UInt64) {
        queue.async { [self] in handle(text, on: id) }
    }

    /// Refuses something the connection sent before it reached the protocol (a frame that is not UTF-8).
    public func refuse(_ id: UInt64, _ error: SignalingError) {
        queue.async { [self] in connections[id]?.peer.send(.error(error)) }
    }

    /// A connection closed.
    public func closed(_ id: UInt64) {
        queue.async { [self] in
            guard let connection = connections.removeValue(forKey: id), let account = connection.account else { return }
            online[account]?.remove(id)
            if online[account]?.isEmpty == true {
                online[account] = nil
                try? store.setLastSeen(account, at: wallClock())
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
                .notLoggedIn, "no login within \(limits.loginTimeout) of connecting (the login timeout)")))
            connection.peer.close()
            connections[id] = nil
        }
    }

    private func handle(_ text: String, on id: UInt64) {
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
        do throws(SignalingError) {
            request = try MessagingRequest.decode(text)
        } catch {
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
        guard let signature = Data(base64Encoded: proof.signature),
              pending.keys.verifies(Array(signature), of: message)
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
        connections[id]?.account = pending.name
        online[pending.name, default: []].insert(id)
        let waiting = (try? store.undeliveredCount(to: pending.name)) ?? 0
        peer.send(.loggedIn(LoggedIn(name: pending.name, created: binding == .created, waiting: waiting)))
        logger.info("account logged in", metadata: ["account": "\(pending.name)", "created": "\(binding == .created)"])
        deliverBacklog(to: id)
    }

    /// Sends the next page of what waited for this account, once the previous page was acknowledged.
    private func deliverBacklog(to id: UInt64) {
        guard let connection = connections[id], let account = connection.account,
              connection.unacknowledged.isEmpty else { return }
        let page: [StoredDirectMessage]
        do {
            page = try store.undelivered(to: account, limit: maxMessagesPerPage)
        } catch {
            connection.peer.send(.error(SignalingError(.storeFailed, "\(error)")))
            return
        }
        connections[id]?.unacknowledged = Set(page.map(\.sequence))
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

    /// Commits every pending send in one transaction, then acknowledges each and delivers the new ones live.
    private func flushSends() {
        flushScheduled = false
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
                    for other in online[entry.send.to] ?? [] {
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
                if !flushScheduled {
                    flushScheduled = true
                    queue.async { [self] in flushSends() }
                }
            case .received(let receipt):
                try store.markDelivered(receipt.sequences, to: account, at: wallClock())
                connections[id]?.unacknowledged.subtract(receipt.sequences)
                deliverBacklog(to: id)
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
                let isOnline = !(online[ref.name]?.isEmpty ?? true)
                peer.send(.presence(PresenceAnswer(
                    name: ref.name, online: isOnline, lastSeen: isOnline ? nil : try store.lastSeen(ref.name))))
            case .history(let query):
                let page = try store.history(between: account, and: query.peer, before: query.before, limit: query.limit)
                for stored in page { peer.send(.message(delivery(stored, to: account))) }
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
    /// The WebSocket path of messaging connections.
    public static let path = "/parley/messages"
}
