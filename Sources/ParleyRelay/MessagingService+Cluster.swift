import Dispatch
import Foundation
import Logging
import ParleyBus
import ParleyStore
import ParleyWire

/// Messaging across the nodes of a cluster: what this node publishes on the bus, and what it does with the events of
/// the others. The store is the truth: events only name rows, and a message already marked delivered is never sent
/// live again, so an event that arrives twice, late, or after a catch-up from the tables delivers nothing twice.
extension MessagingService {
    /// Accounts whose presence on other nodes this node follows, at most (a bus that announces more drops them).
    static let remotePresenceLimit = 1_000_000

    /// Joins the cluster's bus: from now on this node publishes what the others must know.
    public func attach(cluster: any ClusterBus) {
        queue.async { [self] in
            self.cluster = cluster
            for account in Set(online.keys).union(calls.keys) { publishPresence(of: account) }
        }
    }

    /// Events from `node`, in the order it published them.
    public func clusterEvents(_ events: [ClusterEvent], from node: String) {
        let waiting = clusterBacklog.add(1)
        guard waiting <= Self.clusterBacklogLimit else {
            clusterBacklog.add(-1)
            clusterDropped.add(events.count)
            return
        }
        queue.async { [self] in
            clusterBacklog.add(-1)
            for event in events { handle(event, from: node) }
        }
    }

    /// The bus (re)connected: `presence` is every other live node's, read after listening began. What changed is
    /// announced, and each live connection gets the messages it may have missed while the bus was down.
    public func clusterCaughtUp(presence: [(account: String, node: String, presence: NodePresence)]) {
        queue.async { [self] in
            var fresh: [String: [String: NodePresence]] = [:]
            for entry in presence.prefix(Self.remotePresenceLimit) {
                fresh[entry.account, default: [:]][entry.node] = entry.presence
            }
            let changed = Set(fresh.keys).union(remote.keys).filter { fresh[$0] != remote[$0] }
            let before = Dictionary(uniqueKeysWithValues: changed.map { ($0, presenceSummary(of: $0)) })
            remote = fresh
            for account in changed where presenceSummary(of: account) != before[account] {
                announcePresence(of: account)
            }
            redeliverMissed()
        }
    }

    /// This node was declared dead while it was only silent: its presence rows are gone, so it announces them again.
    public func clusterRevived() {
        queue.async { [self] in
            for account in Set(online.keys).union(calls.keys) { publishPresence(of: account) }
        }
    }

    /// Events from other nodes waiting for the queue, and how many were dropped past `clusterBacklogLimit`.
    public var clusterFigures: (waiting: Int, dropped: Int) { (clusterBacklog.value, clusterDropped.value) }

    static let clusterBacklogLimit = 10_000

    // MARK: Publishing

    /// Tells the other nodes where `account` is on this one.
    func publishPresence(of account: String) {
        guard let cluster else { return }
        let here: NodePresence? =
            if online[account] != nil || calls[account] != nil {
                NodePresence(
                    messaging: online[account] != nil,
                    calls: (calls[account] ?? [:]).sorted { $0.key < $1.key }.map(\.value))
            } else {
                nil
            }
        cluster.publish(.presence(account: account, presence: here))
    }

    // MARK: Events from other nodes

    func handle(_ event: ClusterEvent, from node: String) {
        switch event {
        case .messages(let references):
            let wanted = references.filter { caughtUpConnections(of: $0.recipient).isEmpty == false }
            // Small messages came in the event; the rest are read back by sequence.
            for reference in wanted { reference.carried.map(deliverLive) }
            let referenced = wanted.filter { $0.carried == nil }
            guard !referenced.isEmpty else { return }
            let messages: [StoredDirectMessage]
            do {
                messages = try store.directMessages(sequences: referenced.map(\.sequence))
            } catch {
                // The database is not answering: the messages wait in their table, and a catch-up sends them.
                scheduleCatchUp()
                return
            }
            for stored in messages where stored.deliveredAt == nil { deliverLive(stored) }
        case .receipts(let reader, let read, let marks):
            sendReceipts(marks, by: reader, read: read, publish: false)
        case .presence(let account, let presence):
            let before = presenceSummary(of: account)
            if let presence {
                guard remote[account] != nil || remote.count < Self.remotePresenceLimit else { return }
                remote[account, default: [:]][node] = presence
            } else {
                remote[account]?[node] = nil
                if remote[account]?.isEmpty == true { remote[account] = nil }
            }
            if presenceSummary(of: account) != before { announcePresence(of: account) }
        case .channelPost(let channel, let sequence):
            guard onlineMembers[channel]?.isEmpty == false || channelPostObserver != nil else { return }
            guard let line = try? store.channelHistory(channel, before: sequence + 1, limit: 1).first,
                line.sequence == sequence
            else { return }
            deliver(line, publish: false)
            if line.post.kind == .message { channelPostObserver?(line) }
        case .roomSettingsChanged, .roomMember, .roomMemberLeft, .roomOpened, .roomChat, .roomControl, .drainNode:
            break  // The relay's, not messaging's.
        case .nodeGone(let gone):
            let affected = remote.filter { $0.value[gone] != nil }.map(\.key)
            for account in affected {
                let before = presenceSummary(of: account)
                remote[account]?[gone] = nil
                if remote[account]?.isEmpty == true { remote[account] = nil }
                if presenceSummary(of: account) != before { announcePresence(of: account) }
            }
        }
    }

    /// Connections of `account` on this node that take messages live (their backlog went out).
    func caughtUpConnections(of account: String) -> [UInt64] {
        (online[account] ?? []).filter { connections[$0]?.caughtUp == true }
    }

    /// Sends `stored` to each caught-up connection of its recipient that has not had it yet.
    func deliverLive(_ stored: StoredDirectMessage) {
        for id in caughtUpConnections(of: stored.message.recipient) {
            guard var connection = connections[id], !connection.sentLive.contains(stored.sequence),
                !connection.unacknowledged.contains(stored.sequence),
                !connection.acknowledgedLive.contains(stored.sequence)
            else { continue }
            if connection.sentLive.count >= Self.sentLiveLimit { connection.sentLive.removeAll(keepingCapacity: true) }
            connection.sentLive.insert(stored.sequence)
            connections[id] = connection
            connection.peer.send(.message(delivery(stored)))
        }
    }

    /// Live messages one connection remembers sending until it acknowledges them.
    static let sentLiveLimit = 10_000

    /// After the bus was down: each caught-up connection gets what waits for its account and it has not had. While
    /// the database does not answer, tried again each second until it does.
    func redeliverMissed() {
        for account in online.keys {
            guard !caughtUpConnections(of: account).isEmpty else { continue }
            do {
                for stored in try store.undelivered(to: account, limit: maxMessagesPerPage) { deliverLive(stored) }
            } catch {
                scheduleCatchUp()
                return
            }
        }
    }

    /// A catch-up from the tables in a second (once, however often asked meanwhile).
    func scheduleCatchUp() {
        guard !catchUpScheduled else { return }
        catchUpScheduled = true
        queue.asyncAfter(deadline: .now() + 1) { [self] in
            catchUpScheduled = false
            redeliverMissed()
        }
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

/// What watchers of an account are told: online, and its rooms when in a call.
struct PresenceSummary: Equatable {
    var online: Bool
    var rooms: [String]?
}
