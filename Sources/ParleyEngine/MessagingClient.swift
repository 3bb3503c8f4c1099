import Dispatch
import Foundation
import NIOCore
import NIOPosix
import ParleyRoom
import ParleySecurity
import ParleyWire
import Synchronization

/// A direct message as this account sees it: opened, with its direction.
public struct ReceivedMessage: Sendable, Equatable {
    public var sequence: Int64
    public var id: String
    public var from: String
    public var to: String
    public var text: String
    /// When the relay received it, milliseconds since 1970.
    public var sentAt: Int64
    public var delivered: Bool
    public var read: Bool
}

/// One line of the conversation list, opened: the last message's text is readable here.
public struct Conversation: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case direct, channel
    }

    public var kind: Kind
    /// The peer's account or the channel's name.
    public var name: String
    public var unread: Int
    /// Milliseconds since 1970 of the last message, 0 for an empty channel.
    public var lastAt: Int64
    /// Who wrote the last line, and what it says (an activity line says who joined or left).
    public var lastFrom: String?
    public var lastText: String?
}

/// What went wrong talking to the relay's messaging, in words for the user.
public struct MessagingClientError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The relay's error code when it refused something.
    public var code: SignalingErrorCode?
    public var description: String

    public init(_ description: String, code: SignalingErrorCode? = nil) {
        self.description = description
        self.code = code
    }
}

/// One logged-in messaging connection to a relay: send, receive what waited, look up presence, read history. One
/// request at a time (each waits for its answer), which is how the command line and the messages screen use it.
public final class MessagingClient: Sendable {
    public let identity: AccountIdentity
    /// Messages that were waiting at login.
    public let waiting: Int
    /// Whether this login created the account on the relay.
    public let created: Bool
    private let connection: SignalingConnection
    private let inbox: Inbox
    /// The event loop group this client made (closed with it), nil when the caller lent one.
    private let group: MultiThreadedEventLoopGroup?

    /// Events kept for the client's own requests; past it the oldest half goes (watch live ones through `onEvent`).
    static let inboxLimit = 10_000
    /// Accounts whose keys are kept after a lookup.
    static let knownKeysLimit = 10_000
    private let knownKeys = Mutex<[String: AccountKeys]>([:])

    /// Appends `event` to what the client keeps; at `limit` the oldest half goes first, so a client that never
    /// asks for what arrives live keeps only the newest.
    static func keep(_ event: MessagingEvent, in events: inout [MessagingEvent], limit: Int = inboxLimit) {
        if events.count >= limit { events.removeFirst((events.count + 1) / 2) }
        events.append(event)
    }

    /// What arrived for the client's own requests, and the one request waiting for it (requests go one at a time):
    /// each arrival, the close and the request's deadline wake it; nothing polls.
    private final class Inbox: Sendable {
        private struct State {
            var events: [MessagingEvent] = []
            var closed = false
            var waiter: CheckedContinuation<Void, Never>?
            /// Something happened while nobody waited: the next wait returns at once (and the waiter looks again).
            var woken = false
        }
        private let state = Mutex(State())

        var isClosed: Bool { state.withLock { $0.closed } }

        func add(_ event: MessagingEvent) {
            wake { MessagingClient.keep(event, in: &$0.events) }
        }

        func close() { wake { $0.closed = true } }

        func removeAll() { state.withLock { $0.events.removeAll(keepingCapacity: true) } }

        /// The first of `match`'s answers over the events so far, taking it and what came before it.
        func take<T>(_ match: (MessagingEvent) -> T?) -> Result<T, MessagingClientError>? {
            state.withLock { state -> Result<T, MessagingClientError>? in
                for (index, event) in state.events.enumerated() {
                    if let value = match(event) {
                        state.events.removeFirst(index + 1)
                        return .success(value)
                    }
                    if case .error(let error) = event {
                        state.events.removeFirst(index + 1)
                        return .failure(MessagingClientError(error.message, code: error.code))
                    }
                }
                return nil
            }
        }

        /// Returns once something arrives or the connection closes (or at once if either happened since the last
        /// wait), or at `deadline`.
        func wait(until deadline: ContinuousClock.Instant) async {
            let timer = Task { [self] in
                do {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    wake { _ in }
                } catch {}
            }
            defer { timer.cancel() }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.woken {
                        state.woken = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }

        private func wake(_ change: (inout State) -> Void) {
            let waiter = state.withLock { state in
                change(&state)
                guard let waiter = state.waiter else {
                    state.woken = true
                    return CheckedContinuation<Void, Never>?.none
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }

    private init(
        identity: AccountIdentity, waiting: Int, created: Bool, connection: SignalingConnection,
        inbox: Inbox, group: MultiThreadedEventLoopGroup?
    ) {
        self.identity = identity
        self.waiting = waiting
        self.created = created
        self.connection = connection
        self.inbox = inbox
        self.group = group
    }

    /// Connects to the relay's messaging and logs in with `identity` (binding its name on first use). `loop`: an event
    /// loop to share (many clients in one process); `onEvent`: called on that loop with every event as it arrives
    /// (before the client's own requests see it); `onClose`: called there once when the connection closes.
    public static func connect(
        to server: ServerAddress, security: SignalingSecurity, identity: AccountIdentity,
        timeout: Duration = .seconds(10), loop: (any EventLoop)? = nil,
        onEvent: (@Sendable (MessagingEvent) -> Void)? = nil, onClose: (@Sendable () -> Void)? = nil
    ) async throws -> MessagingClient {
        let group = loop == nil ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let inbox = Inbox()
        let connection: SignalingConnection
        do {
            connection = try await SignalingConnection.connect(
                to: server, path: "/parley/messages", on: loop ?? group!.next(), security: security
            ) { text in
                guard let text else {
                    inbox.close()
                    onClose?()
                    return
                }
                guard let event = try? MessagingEvent.decode(text) else { return }
                onEvent?(event)
                inbox.add(event)
            }.get()
        } catch {
            try? await group?.shutdownGracefully()
            throw MessagingClientError("\(error)")
        }
        func fail(_ error: any Error) async -> any Error {
            connection.close()
            try? await group?.shutdownGracefully()
            return error
        }
        let keys = identity.keys
        connection.sendRawText(
            MessagingRequest.login(
                AccountCard(
                    name: identity.name, signingKey: Data(keys.signing).base64EncodedString(),
                    agreementKey: Data(keys.agreement).base64EncodedString())
            ).encoded())
        do {
            let challenge = try await next(in: inbox, timeout: timeout, what: "the login challenge") {
                if case .challenge(let challenge) = $0 { challenge } else { nil }
            }
            let nonce = Array(Data(base64Encoded: challenge.nonce) ?? Data())
            let signature = identity.sign(AccountIdentity.loginMessage(name: identity.name, challenge: nonce))
            connection.sendRawText(
                MessagingRequest.proof(LoginProof(signature: Data(signature).base64EncodedString())).encoded())
            let loggedIn = try await next(in: inbox, timeout: timeout, what: "the login answer") {
                if case .loggedIn(let answer) = $0 { answer } else { nil }
            }
            return MessagingClient(
                identity: identity, waiting: loggedIn.waiting, created: loggedIn.created,
                connection: connection, inbox: inbox, group: group)
        } catch {
            throw await fail(error)
        }
    }

    /// Waits for the first event `match` accepts (taking it and what came before it out of the inbox); an error event
    /// from the relay, a closed connection or the timeout throws.
    private static func next<T>(
        in inbox: Inbox, timeout: Duration, what: String,
        _ match: (MessagingEvent) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = inbox.take(match) { return try found.get() }
            if inbox.isClosed {
                throw MessagingClientError("the relay closed the connection while waiting for \(what)")
            }
            await inbox.wait(until: deadline)
        }
        if let found = inbox.take(match) { return try found.get() }
        throw MessagingClientError("no answer from the relay within \(timeout) while waiting for \(what)")
    }

    private func next<T>(_ what: String, timeout: Duration = .seconds(10), _ match: (MessagingEvent) -> T?)
        async throws -> T
    {
        try await Self.next(in: inbox, timeout: timeout, what: what, match)
    }

    private func send(_ request: MessagingRequest) { connection.sendRawText(request.encoded()) }

    /// The public keys of `name`.
    public func keys(of name: String) async throws -> AccountKeys {
        if name == identity.name { return identity.keys }
        // An account never changes its keys (the relay binds them for good), so one lookup a name will do.
        if let known = knownKeys.withLock({ $0[name] }) { return known }
        send(.keys(AccountRef(name: name)))
        let answer = try await next("the keys of \(name)") {
            if case .keys(let keys) = $0, keys.name == name { keys } else { nil }
        }
        guard let signing = Data(base64Encoded: answer.signingKey),
            let agreement = Data(base64Encoded: answer.agreementKey)
        else { throw MessagingClientError("the relay sent keys of \(name) that are not base64") }
        let keys = try AccountKeys(signing: Array(signing), agreement: Array(agreement))
        knownKeys.withLock { known in
            if known.count >= Self.knownKeysLimit { known.removeAll(keepingCapacity: true) }
            known[name] = keys
        }
        return keys
    }

    /// Seals `text` to `recipient` and sends it under `id` (a retry with the same id is the same message); returns
    /// once the relay has stored it.
    public func send(_ text: String, to recipient: String, id: String = UUID().uuidString) async throws -> MessageStored
    {
        let keys = try await keys(of: recipient)
        let sealed = DirectMessageSeal.seal(text, from: identity, to: recipient, keys: keys, id: id)
        let copy = DirectMessageSeal.seal(text, from: identity, to: identity.name, keys: identity.keys, id: id)
        send(
            .send(
                DirectMessageSend(
                    id: id, to: recipient, sealed: Data(sealed).base64EncodedString(),
                    senderCopy: Data(copy).base64EncodedString())))
        return try await next("the relay to store the message") {
            if case .stored(let stored) = $0, stored.id == id { stored } else { nil }
        }
    }

    /// Every message that was waiting at login, opened, oldest first, each acknowledged (so it is not delivered
    /// again).
    public func receiveWaiting() async throws -> [ReceivedMessage] {
        var received: [ReceivedMessage] = []
        var senders: [String: AccountKeys] = [:]
        while received.count < waiting {
            var page: [DirectMessageDelivery] = []
            let pageSize = min(maxMessagesPerPage, waiting - received.count)
            while page.count < pageSize {
                page.append(
                    try await next("waiting messages") {
                        if case .message(let m) = $0, m.inHistory != true { m } else { nil }
                    })
            }
            for delivery in page where senders[delivery.from] == nil {
                senders[delivery.from] = try await keys(of: delivery.from)
            }
            // The receipt first, so the relay reads the next page while this one is opened, on every core.
            send(.received(DeliveryReceipt(sequences: page.map(\.sequence))))
            let opened = Mutex([ReceivedMessage?](repeating: nil, count: page.count))
            let keys = senders
            let deliveries = page
            DispatchQueue.concurrentPerform(iterations: deliveries.count) { index in
                let message = open(deliveries[index], senderKeys: keys[deliveries[index].from]!)
                opened.withLock { $0[index] = message }
            }
            received += opened.withLock { $0 }.compactMap { $0 }
        }
        return received
    }

    /// The conversation with `peer`, newest first, at most `limit` (1…200).
    public func history(with peer: String, before: Int64? = nil, limit: Int = 50) async throws -> [ReceivedMessage] {
        send(.history(HistoryQuery(peer: peer, before: before, limit: limit)))
        var page: [DirectMessageDelivery] = []
        while true {
            let event = try await next("the history with \(peer)") { event -> MessagingEvent? in
                switch event {
                case .message(let message) where message.inHistory == true: event
                case .historyEnd(let end) where end.peer == peer: event
                default: nil
                }
            }
            if case .message(let delivery) = event { page.append(delivery) } else { break }
        }
        let peerKeys = page.isEmpty ? nil : try await keys(of: peer)
        return page.map { open($0, senderKeys: $0.from == identity.name ? identity.keys : peerKeys!) }
    }

    /// Tells the relay this account read the conversation with `peer` up to `sequence` (the sender gets a read
    /// receipt), without waiting.
    public func markRead(_ peer: String, through sequence: Int64) {
        send(.read(ReadMark(peer: peer, through: sequence)))
    }

    /// Joins `channel` (creating it with its first member); returns its member count.
    public func join(channel: String) async throws -> ChannelMembers {
        send(.joinChannel(ChannelRef(channel: channel)))
        return try await next("joining channel \(channel)") {
            if case .members(let members) = $0, members.channel == channel { members } else { nil }
        }
    }

    /// Leaves `channel`; returns its member count after.
    public func leave(channel: String) async throws -> ChannelMembers {
        send(.leaveChannel(ChannelRef(channel: channel)))
        return try await next("leaving channel \(channel)") {
            if case .members(let members) = $0, members.channel == channel { members } else { nil }
        }
    }

    /// The channel's member count and its first members.
    public func members(of channel: String) async throws -> ChannelMembers {
        send(.members(ChannelRef(channel: channel)))
        return try await next("the members of \(channel)") {
            if case .members(let members) = $0, members.channel == channel { members } else { nil }
        }
    }

    /// Posts `text` in `channel` (a member's); returns once the relay has stored it.
    public func post(_ text: String, in channel: String, id: String = UUID().uuidString) async throws
        -> ChannelPostStored
    {
        send(.channelPost(ChannelPostSend(channel: channel, id: id, text: text)))
        return try await next("the relay to store the channel message") {
            if case .channelStored(let stored) = $0, stored.channel == channel, stored.id == id { stored } else { nil }
        }
    }

    /// The channel's lines (messages and who joined or left), newest first, at most `limit` (1…200).
    public func channelHistory(_ channel: String, before: Int64? = nil, limit: Int = 50) async throws
        -> [ChannelPostDelivery]
    {
        send(.channelHistory(ChannelHistoryQuery(channel: channel, before: before, limit: limit)))
        var page: [ChannelPostDelivery] = []
        while true {
            let event = try await next("the history of \(channel)") { event -> MessagingEvent? in
                switch event {
                case .channelPost(let line) where line.channel == channel && line.inHistory == true: event
                case .channelHistoryEnd(let end) where end.channel == channel: event
                default: nil
                }
            }
            if case .channelPost(let line) = event { page.append(line) } else { break }
        }
        return page
    }

    /// Tells the relay this account read `channel` up to `sequence`, without waiting.
    public func markChannelRead(_ channel: String, through sequence: Int64) {
        send(.channelRead(ChannelReadMark(channel: channel, through: sequence)))
    }

    /// Every conversation, direct and channel, newest first, with unread counts; direct ones opened.
    public func conversations(limit: Int = 50) async throws -> [Conversation] {
        send(.conversations(ConversationsQuery(limit: limit)))
        var lines: [ConversationLine] = []
        while true {
            let event = try await next("the conversation list") { event -> MessagingEvent? in
                switch event {
                case .conversation, .conversationsEnd: event
                default: nil
                }
            }
            if case .conversation(let line) = event { lines.append(line) } else { break }
        }
        var result: [Conversation] = []
        for line in lines {
            var conversation = Conversation(
                kind: line.kind == "channel" ? .channel : .direct, name: line.name,
                unread: line.unread, lastAt: line.lastAt)
            if let message = line.lastMessage {
                let keys = message.from == identity.name ? identity.keys : try await keys(of: message.from)
                let opened = open(message, senderKeys: keys)
                conversation.lastFrom = opened.from
                conversation.lastText = opened.text
            } else if let post = line.lastPost {
                conversation.lastFrom = post.from
                conversation.lastText = Self.text(of: post)
            }
            result.append(conversation)
        }
        return result
    }

    /// A channel line in words (activity lines say who joined or left and how many remain).
    public static func text(of line: ChannelPostDelivery) -> String {
        switch line.kind {
        case "joined": "\(line.from) joined" + (line.members.map { " (\(counted($0, "member")))" } ?? "")
        case "left": "\(line.from) left" + (line.members.map { " (\(counted($0, "member")))" } ?? "")
        case "call-joined", "call-left":
            ChatHistoryLine(
                kind: line.kind, from: line.from, text: line.text, time: line.sentAt,
                members: line.members
            ).words
        default: line.text
        }
    }

    /// Follows the presence of `names` (replacing the previous list): their current state and every change arrive
    /// as `presence` events through `onEvent`.
    public func watch(_ names: [String]) {
        send(.watch(WatchList(names: names)))
    }

    /// Whether `name` is online, or when it was last.
    public func presence(of name: String) async throws -> PresenceAnswer {
        send(.presence(AccountRef(name: name)))
        return try await next("the presence of \(name)") { if case .presence(let p) = $0 { p } else { nil } }
    }

    /// Opens a delivered message (live ones arrive through `onEvent`) with the sender's keys.
    public func open(_ delivery: DirectMessageDelivery, senderKeys: AccountKeys) -> ReceivedMessage {
        let sealed = Array(Data(base64Encoded: delivery.sealed) ?? Data())
        let text: String
        if delivery.from == identity.name {
            // Our own message is sealed to the peer; our copy is sealed to ourselves.
            let copy = Array(delivery.senderCopy.flatMap { Data(base64Encoded: $0) } ?? Data())
            text =
                (try? DirectMessageSeal.open(
                    copy, by: identity, from: identity.name, senderKeys: identity.keys,
                    id: delivery.id)) ?? "(sent to \(delivery.to); no readable copy)"
        } else {
            do throws(DirectMessageSeal.OpenError) {
                text = try DirectMessageSeal.open(
                    sealed, by: identity, from: delivery.from, senderKeys: senderKeys,
                    id: delivery.id)
            } catch {
                text = "(cannot be read: \(error))"
            }
        }
        return ReceivedMessage(
            sequence: delivery.sequence, id: delivery.id, from: delivery.from, to: delivery.to,
            text: text, sentAt: delivery.sentAt, delivered: delivery.delivered, read: delivery.read)
    }

    /// Sends an already sealed message without waiting for its acknowledgement (which arrives as a `stored` event):
    /// for pipelining many messages.
    public func post(id: String, to recipient: String, sealed: [UInt8]) {
        send(.send(DirectMessageSend(id: id, to: recipient, sealed: Data(sealed).base64EncodedString())))
    }

    /// Tells the relay these messages arrived (it stops delivering them), without waiting.
    public func acknowledge(_ sequences: [Int64]) {
        for start in stride(from: 0, to: sequences.count, by: maxMessagesPerPage) {
            send(
                .received(
                    DeliveryReceipt(
                        sequences: Array(sequences[start..<min(sequences.count, start + maxMessagesPerPage)]))))
        }
    }

    /// Forgets events received so far (a client that watches them through `onEvent` keeps memory bounded).
    public func discardEvents() {
        inbox.removeAll()
    }

    /// False once the relay closed the connection (or it broke).
    public var isConnected: Bool { !inbox.isClosed }

    /// Closes the connection.
    public func close() async {
        connection.close()
        try? await group?.shutdownGracefully()
    }
}
