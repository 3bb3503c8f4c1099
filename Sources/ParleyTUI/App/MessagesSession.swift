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
/// and live events never race for the same answer; the terminal loop only queues actions and takes updates. When to
/// connect and reconnect, and what waits meanwhile, is `MessagesLink`'s to decide; this task carries it out.
final class MessagesSession: Sendable {
    private enum Work: Sendable {
        /// What the relay sent on the `generation`th connection.
        case event(MessagingEvent, generation: Int)
        case action(MessagesAction)
        /// The `generation`th connection logged in, or failed to.
        case connected(MessagingClient, generation: Int)
        case connectFailed(String, generation: Int)
        /// The `generation`th connection closed.
        case closed(generation: Int)
        /// A timer the link asked for.
        case wake
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

    /// The task's own state: the link, the connection it has, and what the backlog already showed.
    private struct Running {
        var link: MessagesLink
        var client: MessagingClient?
        /// Sequences shown from what waited at login; the same deliveries also come live, skipped there.
        var fromBacklog = Set<Int64>()
        /// The timer task for the link's next wake (at most one).
        var timer: Task<Void, Never>?
    }

    private static func run(
        _ account: MessagingAccount, stream: AsyncStream<Work>,
        continuation: AsyncStream<Work>.Continuation, shared: Shared
    ) async {
        let me = account.identity.name
        var running = Running(link: MessagesLink(server: "\(account.server)", me: me))
        defer { running.timer?.cancel() }
        let context = Context(account: account, continuation: continuation, shared: shared, me: me)
        let first = running.link.start()
        await context.carryOut(first, &running)
        for await item in stream {
            if Task.isCancelled { break }
            let now = ContinuousClock.now
            switch item {
            case .connected(let client, let generation):
                guard running.link.isCurrent(generation) else {
                    await client.close()
                    continue
                }
                running.client = client
                shared.client.withLock { $0 = client }
                let effects = running.link.connected(generation: generation)
                await context.carryOut(effects, &running)
            case .connectFailed(let reason, let generation):
                let effects = running.link.connectFailed(reason, generation: generation, now: now)
                await context.carryOut(effects, &running)
            case .closed(let generation):
                let effects = running.link.closed(generation: generation, now: now)
                await context.carryOut(effects, &running)
            case .wake:
                let effects = running.link.wake(now: now)
                await context.carryOut(effects, &running)
            case .action(let action):
                let effects = running.link.action(action)
                await context.carryOut(effects, &running)
            case .event(let event, let generation):
                guard running.link.isCurrent(generation), let client = running.client else { continue }
                await context.show(event, client, &running)
            }
        }
        // The screen closed the session.
        let last = running.link.stop()
        await context.carryOut(last, &running)
    }

    /// What carrying out the link's effects needs.
    private struct Context {
        let account: MessagingAccount
        let continuation: AsyncStream<Work>.Continuation
        let shared: Shared
        let me: String

        func carryOut(_ effects: [MessagesLink.Effect], _ running: inout Running) async {
            for effect in effects {
                switch effect {
                case .connect(let generation):
                    if let old = running.client {
                        running.client = nil
                        await old.close()
                    }
                    connect(generation: generation)
                case .show(let update):
                    shared.push(update)
                case .wake(let instant):
                    running.timer?.cancel()
                    let continuation = continuation
                    running.timer = Task {
                        // The link's timer: the one place this task's time passes.
                        do { try await Task.sleep(until: instant, clock: .continuous) } catch { return }
                        continuation.yield(.wake)
                    }
                case .catchUp(let reopen, let resend):
                    guard let client = running.client else { continue }
                    running.fromBacklog = await catchUp(client, reopen: reopen)
                    for action in resend { await perform(action, client, &running) }
                case .perform(let action):
                    guard let client = running.client else { continue }
                    await perform(action, client, &running)
                case .close:
                    if let client = running.client {
                        running.client = nil
                        await client.close()
                    }
                }
            }
        }

        /// Logs in on a task of its own; the outcome comes back as work, so actions keep arriving meanwhile.
        private func connect(generation: Int) {
            let account = account
            let continuation = continuation
            Task {
                do {
                    let client = try await MessagingClient.connect(
                        to: account.server, security: account.security, identity: account.identity,
                        onEvent: { event in continuation.yield(.event(event, generation: generation)) },
                        // A connection that broke is noticed at once, even when nothing else happens.
                        onClose: { continuation.yield(.closed(generation: generation)) })
                    continuation.yield(.connected(client, generation: generation))
                } catch {
                    continuation.yield(.connectFailed("\(error)", generation: generation))
                }
            }
        }

        /// What waited, opened and shown; the list and the conversation open before, reloaded. Returns the
        /// sequences shown.
        private func catchUp(_ client: MessagingClient, reopen: ConversationKey?) async -> Set<Int64> {
            var shown = Set<Int64>()
            do {
                for message in try await client.receiveWaiting() {
                    shown.insert(message.sequence)
                    shared.push(.arrived(.init(.direct, message.from), MessagesSession.line(message, me: me)))
                }
                try await MessagesSession.refreshList(client, me: me, shared: shared)
                if let reopen { try await MessagesSession.load(reopen, before: nil, client, me: me, shared: shared) }
            } catch {
                shared.push(.notice("\(error)"))
            }
            return shown
        }

        private func perform(_ action: MessagesAction, _ client: MessagingClient, _ running: inout Running) async {
            await MessagesSession.perform(action, client, me: me, shared: shared)
            let generation = running.link.generation
            let effects = running.link.performed(
                action, generation: generation, stillConnected: client.isConnected, now: ContinuousClock.now)
            await carryOut(effects, &running)
        }

        /// One event of the relay's, shown.
        func show(_ event: MessagingEvent, _ client: MessagingClient, _ running: inout Running) async {
            switch event {
            case .message(let delivery) where delivery.inHistory != true:
                if running.fromBacklog.remove(delivery.sequence) != nil { return }
                guard let senderKeys = try? await client.keys(of: delivery.from) else { return }
                let message = client.open(delivery, senderKeys: senderKeys)
                let peer = message.from == me ? message.to : message.from
                shared.push(.arrived(.init(.direct, peer), MessagesSession.line(message, me: me)))
                client.acknowledge([delivery.sequence])
            case .channelPost(let post) where post.inHistory != true:
                shared.push(.arrived(.init(.channel, post.channel), MessagesSession.line(post)))
                if let members = post.members { shared.push(.members(channel: post.channel, count: members)) }
            case .receipt(let receipt):
                shared.push(.receipt(peer: receipt.by, sequences: receipt.sequences, read: receipt.read))
            case .presence(let presence):
                shared.push(
                    .presence(
                        name: presence.name, online: presence.online,
                        call: presence.inCall == true ? presence.state : nil))
            default:
                break
            }
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
