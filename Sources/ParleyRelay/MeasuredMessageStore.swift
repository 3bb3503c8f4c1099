import ParleySecurity
import ParleyStore

/// A `MessageStore` that times every call of the store it wraps into `RelayMetrics` (latency and errors by
/// operation) and counts the messages it newly stored, and otherwise passes everything through unchanged: the
/// relay wraps its configured store in one when `/metrics` is served, so the messaging service needs no change.
public struct MeasuredMessageStore: MessageStore {
    /// The store that does the work.
    public let base: any MessageStore
    private let metrics: RelayMetrics
    private let clock = ContinuousClock()

    /// Wraps `base`, recording into `metrics`.
    public init(_ base: any MessageStore, metrics: RelayMetrics) {
        self.base = base
        self.metrics = metrics
    }

    private func measure<T>(_ operation: StoreOperation, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let started = clock.now
        defer { metrics.storeLatency[operation]?.record(clock.now - started) }
        do {
            return try body()
        } catch {
            metrics.storeErrors[operation]?.increment()
            throw error
        }
    }

    public func bind(account name: String, to keys: AccountKeys) throws(StoreError) -> AccountBinding {
        try measure(.bind) { () throws(StoreError) in try base.bind(account: name, to: keys) }
    }

    public func keys(of name: String) throws(StoreError) -> AccountKeys? {
        try measure(.keys) { () throws(StoreError) in try base.keys(of: name) }
    }

    public func store(_ message: NewDirectMessage) throws(StoreError) -> (
        stored: StoredDirectMessage, isNew: Bool
    ) {
        let result = try measure(.store) { () throws(StoreError) in try base.store(message) }
        if result.isNew { metrics.directMessagesStored.increment() }
        return result
    }

    public func store(batch messages: [NewDirectMessage]) throws(StoreError)
        -> [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
    {
        let results = try measure(.storeBatch) { () throws(StoreError) in try base.store(batch: messages) }
        let new = results.filter { (try? $0.get().isNew) == true }.count
        if new > 0 { metrics.directMessagesStored.increment(by: Int64(new)) }
        return results
    }

    public func undelivered(to recipient: String, limit: Int) throws(StoreError) -> [StoredDirectMessage] {
        try measure(.undelivered) { () throws(StoreError) in try base.undelivered(to: recipient, limit: limit) }
    }

    public func undeliveredCount(to recipient: String) throws(StoreError) -> Int {
        try measure(.undeliveredCount) { () throws(StoreError) in try base.undeliveredCount(to: recipient) }
    }

    @discardableResult
    public func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError)
        -> [MessageMark]
    {
        try measure(.markDelivered) { () throws(StoreError) in
            try base.markDelivered(sequences, to: recipient, at: at)
        }
    }

    public func markDelivered(batch receipts: [(sequences: [Int64], recipient: String)], at: Int64)
        throws(StoreError) -> [[MessageMark]]
    {
        try measure(.markDeliveredBatch) { () throws(StoreError) in try base.markDelivered(batch: receipts, at: at) }
    }

    @discardableResult
    public func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64)
        throws(StoreError) -> [MessageMark]
    {
        try measure(.markRead) { () throws(StoreError) in
            try base.markRead(from: sender, to: recipient, through: sequence, at: at)
        }
    }

    public func directMessages(sequences: [Int64]) throws(StoreError) -> [StoredDirectMessage] {
        try measure(.directMessages) { () throws(StoreError) in try base.directMessages(sequences: sequences) }
    }

    public func history(between account: String, and peer: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredDirectMessage]
    {
        try measure(.history) { () throws(StoreError) in
            try base.history(between: account, and: peer, before: before, limit: limit)
        }
    }

    public func setLastSeen(_ name: String, at: Int64) throws(StoreError) {
        try measure(.setLastSeen) { () throws(StoreError) in try base.setLastSeen(name, at: at) }
    }

    public func lastSeen(_ name: String) throws(StoreError) -> Int64? {
        try measure(.lastSeen) { () throws(StoreError) in try base.lastSeen(name) }
    }

    public func join(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try measure(.joinChannel) { () throws(StoreError) in try base.join(channel: channel, account: account, at: at) }
    }

    public func leave(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try measure(.leaveChannel) { () throws(StoreError) in
            try base.leave(channel: channel, account: account, at: at)
        }
    }

    public func members(of channel: String, limit: Int) throws(StoreError) -> (count: Int, names: [String]) {
        try measure(.members) { () throws(StoreError) in try base.members(of: channel, limit: limit) }
    }

    public func channels(of account: String) throws(StoreError) -> [String] {
        try measure(.channels) { () throws(StoreError) in try base.channels(of: account) }
    }

    public func post(_ post: NewChannelPost) throws(StoreError) -> (stored: StoredChannelPost, isNew: Bool) {
        let result = try measure(.post) { () throws(StoreError) in try base.post(post) }
        if result.isNew, post.kind == .message { metrics.channelMessagesStored.increment() }
        return result
    }

    public func channelHistory(_ channel: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredChannelPost]
    {
        try measure(.channelHistory) { () throws(StoreError) in
            try base.channelHistory(channel, before: before, limit: limit)
        }
    }

    public func markChannelRead(_ channel: String, by account: String, through sequence: Int64) throws(StoreError) {
        try measure(.markChannelRead) { () throws(StoreError) in
            try base.markChannelRead(channel, by: account, through: sequence)
        }
    }

    public func conversations(of account: String, limit: Int) throws(StoreError) -> [ConversationSummary] {
        try measure(.conversations) { () throws(StoreError) in try base.conversations(of: account, limit: limit) }
    }
}
