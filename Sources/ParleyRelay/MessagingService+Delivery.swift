import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

/// Receipts and sends gathered and flushed in batches.
extension MessagingService {
    /// Marks pending receipts' messages delivered in one transaction, then sends the next backlog pages and tells
    /// the senders. Unless `all`, at most about `receiptChunk` messages a turn: the rest wait for the next turn of the
    /// queue, behind sends that arrived meanwhile (a hundred recipients acknowledging at once would otherwise hold
    /// every new message back for the whole batch).
    func flushReceipts(all: Bool = true) {
        var taken = 0
        var count = 0
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
            for entry in batch {
                connections[entry.connection]?.peer.send(.error(Self.refusal(error)))
            }
            return
        }
        for (entry, marks) in zip(batch, results) {
            connections[entry.connection]?.unacknowledged.subtract(entry.sequences)
            if var connection = connections[entry.connection] {
                connection.sentLive.subtract(entry.sequences)
                if connection.acknowledgedLive.count >= Self.sentLiveLimit {
                    connection.acknowledgedLive.removeAll(keepingCapacity: true)
                }
                connection.acknowledgedLive.formUnion(entry.sequences)
                connections[entry.connection] = connection
            }
            deliverBacklog(to: entry.connection)
            sendReceipts(marks, by: entry.account, read: false)
        }
    }

    func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        queue.async { [self] in flushSends() }
    }

    /// Messages marked delivered in one turn of the queue.
    static let receiptChunk = 64

    /// Commits every pending send in one transaction, then acknowledges each and delivers the new ones live; then a
    /// chunk of receipts.
    func flushSends() {
        flushScheduled = false
        defer { flushReceipts(all: false) }
        let batch = pendingSends
        pendingSends.removeAll(keepingCapacity: true)
        guard !batch.isEmpty else { return }
        let now = wallClock()
        let messages = batch.map { entry in
            // Decoding checked the base64 and its size.
            NewDirectMessage(
                id: entry.send.id, sender: entry.sender, recipient: entry.send.to,
                sealed: Array(Data(base64Encoded: entry.send.sealed) ?? Data()), receivedAt: now,
                senderCopy: entry.send.senderCopy.flatMap { Data(base64Encoded: $0) }.map { Array($0) })
        }
        let results: [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
        do {
            results = try store.store(batch: messages)
        } catch {
            // Nothing was committed: nothing is acknowledged, and the senders say so (their clients resend).
            for entry in batch {
                connections[entry.connection]?.peer.send(.error(Self.refusal(error)))
            }
            return
        }
        var references: [MessageReference] = []
        for (entry, result) in zip(batch, results) {
            let peer = connections[entry.connection]?.peer
            switch result {
            case .success(let stored):
                peer?.send(.stored(MessageStored(id: entry.send.id, sequence: stored.stored.sequence)))
                if stored.isNew {
                    deliverLive(stored.stored)
                    if cluster != nil { references.append(MessageReference(stored.stored)) }
                }
            case .failure(let error):
                peer?.send(.error(SignalingError(.badField, "\(error)")))
            }
        }
        // The recipient may be connected to another node too (or only there).
        if !references.isEmpty { cluster?.publish(.messages(references)) }
    }

}
