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
    /// Joins the cluster's bus: from now on this node publishes what the others must know.
    public func attach(cluster: any ClusterBus) {
        queue.async { [self] in
            self.cluster = cluster
            state.inCluster = true
            perform(state.publishEveryPresence())
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
            for entry in presence.prefix(MessagingState.remotePresenceLimit) {
                fresh[entry.account, default: [:]][entry.node] = entry.presence
            }
            perform(state.caughtUp(with: fresh))
            redeliverMissed()
        }
    }

    /// This node was declared dead while it was only silent: its presence rows are gone, so it announces them again.
    public func clusterRevived() {
        queue.async { [self] in perform(state.publishEveryPresence()) }
    }

    /// Events from other nodes waiting for the queue, and how many were dropped past `clusterBacklogLimit`.
    public var clusterFigures: (waiting: Int, dropped: Int) { (clusterBacklog.value, clusterDropped.value) }

    static let clusterBacklogLimit = 10_000

    // MARK: Events from other nodes

    func handle(_ event: ClusterEvent, from node: String) {
        switch event {
        case .messages(let references):
            let (actions, sequences) = state.messagesElsewhere(references)
            perform(actions)
            guard !sequences.isEmpty else { return }
            do throws(StoreError) {
                // Small messages came in the event; the rest are read back by sequence.
                perform(state.deliverUndelivered(try store.directMessages(sequences: sequences)))
            } catch {
                // The database is not answering: the messages wait in their table, and a catch-up sends them.
                scheduleCatchUp()
            }
        case .receipts(let reader, let read, let marks):
            perform(state.receipts(marks, by: reader, read: read, publish: false))
        case .presence(let account, let presence):
            perform(state.presenceElsewhere(of: account, on: node, presence))
        case .channelPost(let channel, let sequence):
            guard state.wantsChannelLine(channel),
                let line = try? store.channelHistory(channel, before: sequence + 1, limit: 1).first,
                line.sequence == sequence
            else { return }
            perform(state.channelLineElsewhere(line))
        case .roomSettingsChanged, .roomMember, .roomMemberLeft, .roomOpened, .roomChat, .roomControl, .drainNode:
            break  // The relay's, not messaging's.
        case .nodeGone(let gone):
            perform(state.nodeGone(gone))
        }
    }
}
