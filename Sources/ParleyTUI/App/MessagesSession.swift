import Foundation
import ParleyEngine
import ParleySecurity
import ParleyWire
import Synchronization

/// The account the messages screen logs in with: this computer's identity and its relay.
public struct MessagingAccount: Sendable {
    public var identity: AccountIdentity
    public var server: ServerAddress
    public var security: SignalingSecurity

    public init(identity: AccountIdentity, server: ServerAddress, security: SignalingSecurity) {
        self.identity = identity
        self.server = server
        self.security = security
    }
}

/// The messages screen's connection: logs in, turns what the relay sends into `MessagesUpdate`s (opening direct
/// messages) and carries out the screen's actions. Everything runs on one task, one item at a time, so requests
/// and live events never race for the same answer; the terminal loop only queues actions and takes updates. A
/// connection that breaks is made again (1, 2, 4 … 30 s apart), and what was open reloads.
final class MessagesSession: Sendable {
    private enum Work: Sendable {
        /// What the relay sent on the `generation`th connection.
        case event(MessagingEvent, generation: Int)
        case action(MessagesAction)
        /// The `generation`th connection closed.
        case closed(generation: Int)
    }

    /// What the task and the terminal loop share.
    private final class Shared: Sendable {
        let updates = Mutex<[MessagesUpdate]>([])
        let client = Mutex<MessagingClient?>(nil)
        /// Direct peers whose presence is followed.
        let watched = Mutex<Set<String>>([])

        func push(_ update: MessagesUpdate) {
            updates.withLock { list in
                if list.count >= MessagesSession.updateLimit { list.removeFirst(list.count / 2) }
                list.append(update)
            }
        }
    }

    private let shared = Shared()
    private let work: AsyncStream<Work>.Continuation
    private let task: Task<Void, Never>
    /// Updates kept for the screen between two looks at most (the oldest go).
    static let updateLimit = 10_000

    init(account: MessagingAccount) {
        let (stream, continuation) = AsyncStream<Work>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        work = continuation
        let shared = shared
        task = Task { await Self.run(account, stream: stream, continuation: continuation, shared: shared) }
    }

    /// Carries out an action of the screen (in order, after what came before).
    func perform(_ action: MessagesAction) {
        work.yield(.action(action))
    }

    /// What happened since the last call.
    func takeUpdates() -> [MessagesUpdate] {
        shared.updates.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }

    /// Logs out and stops.
    func close() {
        work.finish()
        task.cancel()
        if let client = shared.client.withLock({ $0 }) { Task { await client.close() } }
    }

    /// Seconds to wait before the next login attempt after `failures` in a row: 1, 2, 4, … at most 30.
    static func retryDelay(after failures: Int) -> Int { min(30, 1 << min(5, max(0, failures - 1))) }

    private static func run(
        _ account: MessagingAccount, stream: AsyncStream<Work>,
        continuation: AsyncStream<Work>.Continuation, shared: Shared
    ) async {
        let me = account.identity.name
        var iterator = stream.makeAsyncIterator()
        var generation = 0
        var failures = 0
        var lastOpened: ConversationKey?
        var unsent: [MessagesAction] = []

        while !Task.isCancelled {
            generation += 1
            let current = generation
            let connected: MessagingClient
            do {
                connected = try await MessagingClient.connect(
                    to: account.server, security: account.security, identity: account.identity,
                    onEvent: { event in continuation.yield(.event(event, generation: current)) },
                    // A connection that broke is noticed at once, even when nothing else happens.
                    onClose: { continuation.yield(.closed(generation: current)) })
            } catch {
                failures += 1
                let delay = retryDelay(after: failures)
                shared.push(
                    .disconnected("Cannot log in to \(account.server) as \(me): \(error); trying again in \(delay) s"))
                // Actions wait in the stream until a connection is back (a sent message goes then, same id).
                try? await Task.sleep(for: .seconds(delay))
                continue
            }
            failures = 0
            shared.client.withLock { $0 = connected }
            // What waited: opened and shown; the same deliveries also come through the event stream, skipped there.
            var fromBacklog = Set<Int64>()
            do {
                for message in try await connected.receiveWaiting() {
                    fromBacklog.insert(message.sequence)
                    shared.push(.arrived(.init(.direct, message.from), line(message, me: me)))
                }
                try await refreshList(connected, me: me, shared: shared)
                if let lastOpened { try await load(lastOpened, before: nil, connected, me: me, shared: shared) }
                let retried = unsent
                unsent.removeAll()
                for action in retried { await perform(action, connected, me: me, shared: shared) }
            } catch {
                shared.push(.notice("\(error)"))
            }

            while !Task.isCancelled {
                guard let item = await iterator.next() else {
                    // The screen closed the session.
                    await connected.close()
                    return
                }
                switch item {
                case .closed(let from) where from != current, .event(_, let from) where from != current:
                    continue  // from a connection that is gone
                case .event(.message(let delivery), _) where delivery.inHistory != true:
                    if fromBacklog.remove(delivery.sequence) != nil { continue }
                    guard let senderKeys = try? await connected.keys(of: delivery.from) else { continue }
                    let message = connected.open(delivery, senderKeys: senderKeys)
                    let peer = message.from == me ? message.to : message.from
                    shared.push(.arrived(.init(.direct, peer), line(message, me: me)))
                    connected.acknowledge([delivery.sequence])
                case .event(.channelPost(let post), _) where post.inHistory != true:
                    shared.push(.arrived(.init(.channel, post.channel), line(post)))
                    if let members = post.members { shared.push(.members(channel: post.channel, count: members)) }
                case .event(.receipt(let receipt), _):
                    shared.push(.receipt(peer: receipt.by, sequences: receipt.sequences, read: receipt.read))
                case .event(.presence(let presence), _):
                    shared.push(
                        .presence(
                            name: presence.name, online: presence.online,
                            call: presence.inCall == true ? presence.state : nil))
                case .event, .closed:
                    break
                case .action(let action):
                    if case .open(let key) = action { lastOpened = key }
                    if case .joinChannel(let channel) = action { lastOpened = ConversationKey(.channel, channel) }
                    await perform(action, connected, me: me, shared: shared)
                    // A message caught by the break goes again on the next connection, under the same id.
                    if !connected.isConnected, unsent.count < 1_000 {
                        switch action {
                        case .sendDirect, .post: unsent.append(action)
                        default: break
                        }
                    }
                }
                if !connected.isConnected { break }
            }
            await connected.close()
            if Task.isCancelled { return }
            shared.push(.disconnected("Connection to \(account.server) lost: reconnecting…"))
            failures = 1
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private static func refreshList(_ client: MessagingClient, me: String, shared: Shared)
        async throws
    {
        let list = try await client.conversations(limit: MessagesState.listLimit)
        shared.push(
            .conversations(
                list.map { conversation in
                    ConversationEntry(
                        key: ConversationKey(conversation.kind == .channel ? .channel : .direct, conversation.name),
                        unread: conversation.unread, lastAt: conversation.lastAt, lastFrom: conversation.lastFrom,
                        lastText: conversation.lastText)
                }))
        let names = shared.watched.withLock { watched in
            watched.formUnion(list.filter { $0.kind == .direct }.map(\.name))
            return Array(watched.prefix(maxWatchedNames))
        }
        client.watch(names)
        // The list shows each channel's member count, as `parley channel members` says it.
        for channel in list.filter({ $0.kind == .channel }).prefix(maxChannelCounts) {
            let members = try await client.members(of: channel.name)
            shared.push(.members(channel: channel.name, count: members.count))
        }
    }

    /// Channels whose member count the list asks for at login (one request each).
    static let maxChannelCounts = 50

    private static func perform(
        _ action: MessagesAction, _ client: MessagingClient, me: String,
        shared: Shared
    ) async {
        do {
            switch action {
            case .sendDirect(let id, let to, let text):
                do {
                    let stored = try await client.send(text, to: to, id: id)
                    shared.push(.stored(id: id, sequence: stored.sequence))
                } catch {
                    shared.push(
                        client.isConnected
                            ? .failed(id: id, reason: "\(error)")
                            : .notice("The connection broke: the message goes when it is back"))
                }
            case .post(let id, let channel, let text):
                do {
                    let stored = try await client.post(text, in: channel, id: id)
                    shared.push(.stored(id: id, sequence: stored.sequence))
                } catch {
                    shared.push(
                        client.isConnected
                            ? .failed(id: id, reason: "\(error)")
                            : .notice("The connection broke: the message goes when it is back"))
                }
            case .open(let key):
                try await load(key, before: nil, client, me: me, shared: shared)
            case .loadOlder(let key, let before):
                try await load(key, before: before, client, me: me, shared: shared)
            case .markRead(let key, let through):
                switch key.kind {
                case .direct: client.markRead(key.name, through: through)
                case .channel: client.markChannelRead(key.name, through: through)
                }
            case .joinChannel(let channel):
                let members = try await client.join(channel: channel)
                shared.push(.members(channel: channel, count: members.count))
                shared.push(.notice("Joined #\(channel): \(members.count) member\(members.count == 1 ? "" : "s")"))
                try await load(ConversationKey(.channel, channel), before: nil, client, me: me, shared: shared)
            case .leaveChannel(let channel):
                let members = try await client.leave(channel: channel)
                shared.push(.notice("Left #\(channel) (\(members.count) member\(members.count == 1 ? "" : "s") now)"))
                try await refreshList(client, me: me, shared: shared)
            case .back, .quit:
                break
            }
        } catch {
            shared.push(.notice("\(error)"))
        }
    }

    /// Loads a page of a conversation and marks it read.
    private static func load(
        _ key: ConversationKey, before: Int64?, _ client: MessagingClient, me: String,
        shared: Shared
    ) async throws {
        switch key.kind {
        case .direct:
            let page = try await client.history(with: key.name, before: before, limit: maxHistoryPage)
            shared.push(.history(key, page.map { line($0, me: me) }, older: before != nil))
            if before == nil, let newest = page.first(where: { $0.from == key.name }) {
                client.markRead(key.name, through: newest.sequence)
            }
            if before == nil, shared.watched.withLock({ $0.insert(key.name).inserted }) {
                client.watch(shared.watched.withLock { Array($0.prefix(maxWatchedNames)) })
            }
        case .channel:
            let page = try await client.channelHistory(key.name, before: before, limit: maxHistoryPage)
            shared.push(.history(key, page.map { line($0) }, older: before != nil))
            if before == nil, let newest = page.first { client.markChannelRead(key.name, through: newest.sequence) }
            if before == nil {
                let members = try await client.members(of: key.name)
                shared.push(.members(channel: key.name, count: members.count))
            }
        }
    }

    static func line(_ message: ReceivedMessage, me: String) -> MessageLine {
        MessageLine(
            sequence: message.sequence, id: message.id, from: message.from, text: message.text,
            sentAt: message.sentAt,
            progress: message.from == me ? (message.read ? .read : message.delivered ? .delivered : .stored) : nil)
    }

    static func line(_ post: ChannelPostDelivery) -> MessageLine {
        MessageLine(
            sequence: post.sequence, id: post.id, from: post.from,
            text: post.kind == "message" ? post.text : MessagingClient.text(of: post), sentAt: post.sentAt,
            isActivity: post.kind != "message")
    }
}
