import Foundation
import ParleyBus
import ParleyStore
import ParleyWire

/// Direct messages and receipts gathered for one group commit, and what goes out live once they are stored.
extension MessagingState {
    /// Whether a request must first see every send and receipt that arrived before it (anything that reads).
    func readMustWaitForWrites(_ request: MessagingRequest) -> Bool {
        switch request {
        case .send, .received: false
        default: flushScheduled || !pendingReceipts.isEmpty
        }
    }

    /// A direct message to an account that exists, queued for the next batch write. `exists` is the store's answer
    /// when the recipient was not known yet (nil when it need not be asked: `needsLookup`).
    mutating func queue(_ send: DirectMessageSend, from account: String, on id: UInt64, exists: Bool?)
        -> [MessagingAction]
    {
        if exists == false { return [.send(.error(Self.unknownAccount(send.to)), to: id)] }
        if exists == true {
            if knownAccounts.count >= Self.knownAccountsLimit { knownAccounts.removeAll(keepingCapacity: true) }
            knownAccounts.insert(send.to)
        }
        pendingSends.append(PendingSend(connection: id, send: send, sender: account))
        return scheduleFlush()
    }

    /// Whether a send to `recipient` must ask the store that the account exists.
    func needsLookup(_ recipient: String) -> Bool { !knownAccounts.contains(recipient) }

    /// A receipt queued for the next batch write.
    mutating func queue(_ receipt: DeliveryReceipt, from account: String, on id: UInt64) -> [MessagingAction] {
        pendingReceipts.append(PendingReceipt(connection: id, sequences: receipt.sequences, account: account))
        return scheduleFlush()
    }

    mutating func scheduleFlush() -> [MessagingAction] {
        guard !flushScheduled else { return [] }
        flushScheduled = true
        return [.flushSoon]
    }

    /// The sends to commit now (all pending), with the messages to store (`wallTime` as their time).
    mutating func takeSends(at wallTime: Int64) -> (sends: [PendingSend], messages: [NewDirectMessage]) {
        flushScheduled = false
        let batch = pendingSends
        pendingSends.removeAll(keepingCapacity: true)
        let messages = batch.map { entry in
            // Decoding checked the base64 and its size.
            NewDirectMessage(
                id: entry.send.id, sender: entry.sender, recipient: entry.send.to,
                sealed: Array(Data(base64Encoded: entry.send.sealed) ?? Data()), receivedAt: wallTime,
                senderCopy: entry.send.senderCopy.flatMap { Data(base64Encoded: $0) }.map { Array($0) })
        }
        return (batch, messages)
    }

    /// What the store did with each send: each sender is told, new messages go live (and to the other nodes).
    mutating func sendsStored(
        _ batch: [PendingSend],
        _ outcome: Result<[Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>], StoreError>
    ) -> [MessagingAction] {
        let results: [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
        switch outcome {
        case .success(let value): results = value
        case .failure(let error):
            // Nothing was committed: nothing is acknowledged, and the senders say so (their clients resend).
            return batch.map { .send(.error(Self.refusal(error)), to: $0.connection) }
        }
        var actions: [MessagingAction] = []
        var references: [MessageReference] = []
        for (entry, result) in zip(batch, results) {
            let here = connections[entry.connection] != nil
            switch result {
            case .success(let stored):
                if here {
                    actions.append(
                        .send(
                            .stored(MessageStored(id: entry.send.id, sequence: stored.stored.sequence)),
                            to: entry.connection))
                }
                if stored.isNew {
                    actions += deliverLive(stored.stored)
                    if inCluster { references.append(MessageReference(stored.stored)) }
                }
            case .failure(let error):
                if here { actions.append(.send(.error(SignalingError(.badField, "\(error)")), to: entry.connection)) }
            }
        }
        // The recipient may be connected to another node too (or only there).
        if !references.isEmpty { actions.append(.publish(.messages(references))) }
        return actions
    }

    /// The receipts to mark now: all, or unless `all` about `receiptChunk` messages (the rest wait for the next
    /// turn of the queue, behind sends that arrived meanwhile: a hundred recipients acknowledging at once would
    /// otherwise hold every new message back for the whole batch).
    mutating func takeReceipts(all: Bool) -> (receipts: [PendingReceipt], actions: [MessagingAction]) {
        var taken = 0
        var count = 0
        while taken < pendingReceipts.count, all || taken == 0 || count < Self.receiptChunk {
            count += pendingReceipts[taken].sequences.count
            taken += 1
        }
        let batch = Array(pendingReceipts.prefix(taken))
        pendingReceipts.removeFirst(taken)
        return (batch, pendingReceipts.isEmpty ? [] : scheduleFlush())
    }

    /// The receipts marked (or not): the next backlog pages go out and the senders are told.
    mutating func receiptsMarked(_ batch: [PendingReceipt], _ outcome: Result<[[MessageMark]], StoreError>)
        -> [MessagingAction]
    {
        let results: [[MessageMark]]
        switch outcome {
        case .success(let value): results = value
        case .failure(let error):
            return batch.filter { connections[$0.connection] != nil }.map {
                .send(.error(Self.refusal(error)), to: $0.connection)
            }
        }
        var actions: [MessagingAction] = []
        for (entry, marks) in zip(batch, results) {
            if var connection = connections[entry.connection] {
                connection.unacknowledged.subtract(entry.sequences)
                connection.sentLive.subtract(entry.sequences)
                if connection.acknowledgedLive.count >= Self.sentLiveLimit {
                    connection.acknowledgedLive.removeAll(keepingCapacity: true)
                }
                connection.acknowledgedLive.formUnion(entry.sequences)
                connections[entry.connection] = connection
            }
            actions.append(.deliverBacklog(to: entry.connection))
            actions += receipts(marks, by: entry.account, read: false)
        }
        return actions
    }

    /// Tells each sender, on every connection it has open, which of its messages reached or were read by `reader`;
    /// with `publish`, the other nodes too.
    func receipts(_ marks: [MessageMark], by reader: String, read: Bool, publish: Bool = true) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        if publish, inCluster, !marks.isEmpty {
            actions.append(.publish(.receipts(reader: reader, read: read, marks: marks)))
        }
        for (sender, marked) in Dictionary(grouping: marks, by: \.sender).sorted(by: { $0.key < $1.key }) {
            let event = MessagingEvent.receipt(
                MessageReceipt(by: reader, sequences: marked.map(\.sequence), read: read))
            for connection in (online[sender] ?? []).sorted() { actions.append(.send(event, to: connection)) }
        }
        return actions
    }

    /// Connections of `account` on this node that take messages live (their backlog went out).
    func caughtUpConnections(of account: String) -> [UInt64] {
        (online[account] ?? []).filter { connections[$0]?.caughtUp == true }.sorted()
    }

    /// Sends `stored` to each caught-up connection of its recipient that has not had it yet.
    mutating func deliverLive(_ stored: StoredDirectMessage) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        for id in caughtUpConnections(of: stored.message.recipient) {
            guard var connection = connections[id], !connection.sentLive.contains(stored.sequence),
                !connection.unacknowledged.contains(stored.sequence),
                !connection.acknowledgedLive.contains(stored.sequence)
            else { continue }
            if connection.sentLive.count >= Self.sentLiveLimit { connection.sentLive.removeAll(keepingCapacity: true) }
            connection.sentLive.insert(stored.sequence)
            connections[id] = connection
            actions.append(.send(.message(Self.delivery(stored)), to: id))
        }
        return actions
    }

    /// A channel line to every connection of every member online here; with `publish`, the other nodes of a
    /// cluster are told to do the same.
    func deliver(_ line: StoredChannelPost, publish: Bool = true) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        if publish, inCluster {
            actions.append(.publish(.channelPost(channel: line.post.channel, sequence: line.sequence)))
        }
        let event = MessagingEvent.channelPost(Self.delivery(line))
        for member in (onlineMembers[line.post.channel] ?? []).sorted() {
            for connection in (online[member] ?? []).sorted() where connections[connection] != nil {
                actions.append(.send(event, to: connection))
            }
        }
        return actions
    }

    /// A stored message as `reader` receives it: the sender's own copy only when the sender reads it.
    static func delivery(_ stored: StoredDirectMessage, to reader: String? = nil) -> DirectMessageDelivery {
        DirectMessageDelivery(
            sequence: stored.sequence, id: stored.message.id, from: stored.message.sender,
            to: stored.message.recipient, sealed: Data(stored.message.sealed).base64EncodedString(),
            sentAt: stored.message.receivedAt, delivered: stored.deliveredAt != nil, read: stored.readAt != nil,
            senderCopy: reader == stored.message.sender
                ? stored.message.senderCopy.map { Data($0).base64EncodedString() } : nil)
    }

    static func delivery(_ line: StoredChannelPost) -> ChannelPostDelivery {
        ChannelPostDelivery(
            channel: line.post.channel, sequence: line.sequence, id: line.post.id, from: line.post.sender,
            kind: line.post.kind.rawValue, text: line.post.text, sentAt: line.post.postedAt,
            members: line.members)
    }

    static func unknownAccount(_ name: String) -> SignalingError {
        SignalingError(.unknownAccount, "no account is named \(name.prefix(128))")
    }

    /// A store's failure as the client is told it: `store-unavailable` while the database cannot be reached (the
    /// client keeps the message and sends it again), `store-failed` when it refused (full, read-only).
    static func refusal(_ error: any Error) -> SignalingError {
        switch error as? StoreError {
        case .idReused: SignalingError(.badField, "\(error)")
        case .unavailable: SignalingError(.storeUnavailable, "\(error)")
        default: SignalingError(.storeFailed, "\(error)")
        }
    }
}
