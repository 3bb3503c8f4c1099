import Foundation
import GRDB
import ParleySecurity

/// The embedded `MessageStore`: one SQLite file in WAL mode (GRDB's `DatabasePool`), no set-up needed. Writes are
/// serialized by GRDB; each method is one transaction.
public final class SQLiteMessageStore: MessageStore {
    private let pool: DatabasePool
    /// The file it lives in.
    public let path: String

    /// Opens (creating if needed) the store at `path` and brings its schema up to date. `maximumBytes` caps the
    /// file (`parley serve --max-store-mb`): past it every write is refused as "full" and nothing stored is harmed.
    /// `readOnly` opens an existing store without writing to it.
    public init(path: String, maximumBytes: Int? = nil, readOnly: Bool = false) throws(StoreError) {
        self.path = path
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            configuration.readonly = readOnly
            if let maximumBytes {
                configuration.prepareDatabase { db in
                    // PRAGMAs have no query-interface form (and take no bound values).
                    let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                    try db.execute(sql: "PRAGMA max_page_count = \(max(16, maximumBytes / pageSize))")
                }
            }
            // WAL with synchronous=NORMAL: a commit is in the log before `store` returns, so a relay killed at any
            // moment (SIGKILL, a crash) keeps every acknowledged message; only a power cut or kernel crash can lose
            // the last commits before the next checkpoint. FULL would add an fsync to every message (about 1 ms
            // here), which caps a relay at ~1,000 messages a second.
            if !readOnly {
                // A PRAGMA: no query-interface form.
                configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            }
            if readOnly {
                pool = try DatabasePool(path: path, configuration: configuration)
            } else {
                pool = try withSchemaLock(path) {
                    let pool = try DatabasePool(path: path, configuration: configuration)
                    try Self.migrator.migrate(pool)
                    return pool
                }
            }
        } catch {
            throw Self.explain(error, doing: "open \(path)")
        }
    }

    /// A GRDB or SQLite error in words: which operation, and SQLite's own reason (full disk, read-only, …).
    private static func explain(_ error: any Error, doing what: String) -> StoreError {
        if let store = error as? StoreError { return store }
        if let database = error as? DatabaseError {
            switch database.resultCode {
            case .SQLITE_FULL:
                return .database(
                    "could not \(what): the message store is full (the disk is full, or the store "
                        + "reached its size limit, parley serve --max-store-mb)")
            case .SQLITE_READONLY:
                return .database(
                    "could not \(what): the message store is read-only (check the state folder's "
                        + "permissions and that its disk is mounted for writing)")
            default:
                return .database("could not \(what): \(database.message ?? "\(database.resultCode)")")
            }
        }
        return .database("could not \(what): \(error)")
    }

    private func write<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try pool.write(body) } catch { throw Self.explain(error, doing: what) }
    }

    private func read<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try pool.read(body) } catch { throw Self.explain(error, doing: what) }
    }

    public func bind(account name: String, to keys: AccountKeys) throws(StoreError) -> AccountBinding {
        try write("bind account \(name)") { db in
            if let account = try AccountRecord.fetchOne(db, key: name) {
                return Array(account.signingKey) == keys.signing && Array(account.agreementKey) == keys.agreement
                    ? .matches : .belongsToOtherKeys
            }
            try AccountRecord(name: name, signingKey: Data(keys.signing), agreementKey: Data(keys.agreement))
                .insert(db)
            return .created
        }
    }

    public func keys(of name: String) throws(StoreError) -> AccountKeys? {
        let account = try read("read the keys of \(name)") { db in try AccountRecord.fetchOne(db, key: name) }
        guard let account else { return nil }
        do {
            return try AccountKeys(signing: Array(account.signingKey), agreement: Array(account.agreementKey))
        } catch {
            throw .database("the stored keys of \(name) are damaged: \(error)")
        }
    }

    public func store(batch messages: [NewDirectMessage]) throws(StoreError)
        -> [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
    {
        let what =
            messages.count == 1
            ? "store message \(messages[0].id) of \(messages[0].sender)" : "store \(messages.count) messages"
        return try write(what) { db in
            // The common case first: a new id inserts; only a conflict (a retry, or a reused id) reads what is there.
            // OR IGNORE can only meet the (sender, id) conflict: every NOT NULL column is given a value.
            try messages.map { message in
                try NewDirectMessageRecord(message: message).insert(db, onConflict: .ignore)
                if db.changesCount > 0 {
                    return .success((StoredDirectMessage(sequence: db.lastInsertedRowID, message: message), true))
                }
                let key = DirectMessageRecord.key(sender: message.sender, id: message.id)
                guard let existing = try DirectMessageRecord.fetchOne(db, key: key)?.stored,
                    existing.message.recipient == message.recipient, existing.message.sealed == message.sealed
                else { return .failure(StoreError.idReused(sender: message.sender, id: message.id)) }
                return .success((existing, false))
            }
        }
    }

    public func undelivered(to recipient: String, limit: Int) throws(StoreError) -> [StoredDirectMessage] {
        try read("read undelivered messages to \(recipient)") { db in
            try DirectMessageRecord.filter { $0.recipient == recipient && $0.deliveredAt == nil }
                .order(\.sequence).limit(max(0, limit)).fetchAll(db).map(\.stored)
        }
    }

    public func undeliveredCount(to recipient: String) throws(StoreError) -> Int {
        try read("count undelivered messages to \(recipient)") { db in
            try DirectMessageRecord.filter { $0.recipient == recipient && $0.deliveredAt == nil }.fetchCount(db)
        }
    }

    @discardableResult
    public func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError)
        -> [MessageMark]
    {
        guard !sequences.isEmpty else { return [] }
        return try markDelivered(batch: [(sequences, recipient)], at: at)[0]
    }

    /// Sequences marked by one statement: SQLite bounds the values a statement binds (999 before 3.32).
    private static let sequencesPerStatement = 500

    public func markDelivered(batch receipts: [(sequences: [Int64], recipient: String)], at: Int64) throws(StoreError)
        -> [[MessageMark]]
    {
        let count = receipts.reduce(0) { $0 + $1.sequences.count }
        return try write("mark \(count) messages delivered") { db in
            try receipts.map { receipt in
                var marks: [MessageMark] = []
                for start in stride(from: 0, to: receipt.sequences.count, by: Self.sequencesPerStatement) {
                    let chunk = receipt.sequences[
                        start..<min(
                            start + Self.sequencesPerStatement,
                            receipt.sequences.count)]
                    let update =
                        try DirectMessageRecord
                        .filter { chunk.contains($0.sequence) && $0.recipient == receipt.recipient }
                        .filter { $0.deliveredAt == nil }
                        .updateAndFetchStatement(
                            db, assignments: { [$0.deliveredAt.set(to: at)] },
                            select: { [$0.sequence, $0.sender] })
                    marks += try MessageMarkRecord.fetchAll(update).map(\.mark)
                }
                // In the receipt's order (a sequence listed twice is marked once, where it first appears).
                let position = Dictionary(receipt.sequences.enumerated().map { ($1, $0) }) { first, _ in first }
                return marks.sorted { (position[$0.sequence] ?? 0) < (position[$1.sequence] ?? 0) }
            }
        }
    }

    @discardableResult
    public func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64)
        throws(StoreError) -> [MessageMark]
    {
        try write("mark messages of \(sender) read") { db in
            let update =
                try DirectMessageRecord
                .filter { $0.sender == sender && $0.recipient == recipient && $0.sequence <= sequence }
                .filter { $0.readAt == nil }
                .updateAndFetchStatement(
                    db, assignments: { [$0.readAt.set(to: at), $0.deliveredAt.set(to: $0.deliveredAt ?? at)] },
                    select: { [$0.sequence, $0.sender] })
            return try MessageMarkRecord.fetchAll(update).map(\.mark).sorted { $0.sequence < $1.sequence }
        }
    }

    public func history(between account: String, and peer: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredDirectMessage]
    {
        try read("read the conversation of \(account) and \(peer)") { db in
            let columns = DirectMessageRecord.Columns.self
            let sent: SQLExpression = columns.sender == account && columns.recipient == peer
            let received: SQLExpression = columns.sender == peer && columns.recipient == account
            return try DirectMessageRecord.filter(sent || received)
                .filter { $0.sequence < (before ?? Int64.max) }
                .order(\.sequence.desc).limit(max(0, limit)).fetchAll(db).map(\.stored)
        }
    }

    public func directMessages(sequences: [Int64]) throws(StoreError) -> [StoredDirectMessage] {
        let asked = Array(sequences.prefix(1000))
        return try read("read \(asked.count) messages by sequence") { db in
            try DirectMessageRecord.filter(asked.contains(DirectMessageRecord.Columns.sequence))
                .order(\.sequence).fetchAll(db).map(\.stored)
        }
    }

    public func setLastSeen(_ name: String, at: Int64) throws(StoreError) {
        try write("record when \(name) was last seen") { db in
            _ = try AccountRecord.filter(key: name).updateAll(db) { $0.lastSeen.set(to: at) }
        }
    }

    public func lastSeen(_ name: String) throws(StoreError) -> Int64? {
        try read("read when \(name) was last seen") { db in
            try AccountRecord.filter(key: name).select({ $0.lastSeen }, as: Int64.self).fetchOne(db)
        }
    }

    public func join(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try write("add \(account) to channel \(channel)") { db in
            let key = ChannelMemberRecord.key(channel: channel, account: account)
            guard try !ChannelMemberRecord.exists(db, key: key) else { return nil }
            // A member has read everything before it joined.
            let readThrough =
                try ChannelPostRecord.filter { $0.channel == channel }
                .select({ max($0.sequence) }, as: Int64.self).fetchOne(db) ?? 0
            try ChannelMemberRecord(channel: channel, account: account, joinedAt: at, readThrough: readThrough)
                .insert(db)
            return try Self.insertActivity(db, channel: channel, account: account, kind: .joined, at: at)
        }
    }

    public func leave(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try write("remove \(account) from channel \(channel)") { db in
            let key = ChannelMemberRecord.key(channel: channel, account: account)
            guard try ChannelMemberRecord.deleteOne(db, key: key) else { return nil }
            return try Self.insertActivity(db, channel: channel, account: account, kind: .left, at: at)
        }
    }

    private static func insertActivity(
        _ db: Database, channel: String, account: String, kind: ChannelPostKind,
        at: Int64
    ) throws -> StoredChannelPost {
        let members = try ChannelMemberRecord.filter { $0.channel == channel }.fetchCount(db)
        // Activity ids are the store's own: unique per line, never chosen by a client.
        let id = "\(kind.rawValue)-\(at)-\(UInt32.random(in: 0...UInt32.max))"
        let line = NewChannelPost(id: id, channel: channel, sender: account, kind: kind, text: "", postedAt: at)
        try NewChannelPostRecord(post: line, members: members).insert(db)
        return StoredChannelPost(sequence: db.lastInsertedRowID, post: line, members: members)
    }

    public func members(of channel: String, limit: Int) throws(StoreError) -> (count: Int, names: [String]) {
        try read("read the members of channel \(channel)") { db in
            let members = ChannelMemberRecord.filter { $0.channel == channel }
            let count = try members.fetchCount(db)
            let names = try members.order { [$0.joinedAt, $0.account] }.limit(max(0, limit))
                .select({ $0.account }, as: String.self).fetchAll(db)
            return (count, names)
        }
    }

    public func channels(of account: String) throws(StoreError) -> [String] {
        try read("read the channels of \(account)") { db in
            try ChannelMemberRecord.filter { $0.account == account }.order { [$0.joinedAt, $0.channel] }
                .select({ $0.channel }, as: String.self).fetchAll(db)
        }
    }

    public func post(_ post: NewChannelPost) throws(StoreError) -> (stored: StoredChannelPost, isNew: Bool) {
        try write("store message \(post.id) of \(post.sender) in channel \(post.channel)") { db in
            let key = ChannelPostRecord.key(channel: post.channel, sender: post.sender, id: post.id)
            if let existing = try ChannelPostRecord.fetchOne(db, key: key)?.stored {
                guard existing.post.text == post.text, existing.post.kind == post.kind else {
                    throw StoreError.idReused(sender: post.sender, id: post.id)
                }
                return (existing, false)
            }
            try NewChannelPostRecord(post: post, members: post.members).insert(db)
            return (StoredChannelPost(sequence: db.lastInsertedRowID, post: post, members: post.members), true)
        }
    }

    public func channelHistory(_ channel: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredChannelPost]
    {
        try read("read the history of channel \(channel)") { db in
            try ChannelPostRecord.filter { $0.channel == channel && $0.sequence < (before ?? Int64.max) }
                .order(\.sequence.desc).limit(max(0, limit)).fetchAll(db).map(\.stored)
        }
    }

    public func markChannelRead(_ channel: String, by account: String, through sequence: Int64) throws(StoreError) {
        try write("mark channel \(channel) read") { db in
            _ = try ChannelMemberRecord.filter { $0.channel == channel && $0.account == account }
                .updateAll(db) { $0.readThrough.set(to: max($0.readThrough, sequence)) }
        }
    }

    public func conversations(of account: String, limit: Int) throws(StoreError) -> [ConversationSummary] {
        try read("read the conversations of \(account)") { db in
            var summaries: [ConversationSummary] = []
            for (peer, last) in try Self.lastMessages(db, of: account).prefix(max(0, limit)) {
                guard let message = try DirectMessageRecord.fetchOne(db, key: last)?.stored else { continue }
                let unread =
                    try DirectMessageRecord
                    .filter { $0.recipient == account && $0.sender == peer && $0.readAt == nil }.fetchCount(db)
                summaries.append(
                    ConversationSummary(
                        kind: .direct(peer: peer, last: message), unread: unread,
                        lastAt: message.message.receivedAt))
            }
            for membership in try ChannelMemberRecord.filter({ $0.account == account }).fetchAll(db) {
                let posts = ChannelPostRecord.filter { $0.channel == membership.channel }
                let last = try posts.order(\.sequence.desc).fetchOne(db)?.stored
                let unread =
                    try posts
                    .filter { $0.sequence > membership.readThrough && $0.kind == ChannelPostKind.message.rawValue }
                    .filter { $0.sender != account }
                    .fetchCount(db)
                summaries.append(
                    ConversationSummary(
                        kind: .channel(name: membership.channel, last: last),
                        unread: unread, lastAt: last?.post.postedAt ?? 0))
            }
            return Array(summaries.sorted { $0.lastAt > $1.lastAt }.prefix(max(0, limit)))
        }
    }

    /// Every account `account` has exchanged direct messages with, and the sequence of the newest message between
    /// them, newest first.
    private static func lastMessages(_ db: Database, of account: String) throws -> [(peer: String, last: Int64)] {
        // One grouped query for each direction, merged here: the query interface has no UNION.
        let sent = try DirectMessageRecord.filter { $0.sender == account }.group(\.recipient)
            .select { [$0.recipient, max($0.sequence)] }.asRequest(of: Row.self).fetchAll(db)
        let received = try DirectMessageRecord.filter { $0.recipient == account }.group(\.sender)
            .select { [$0.sender, max($0.sequence)] }.asRequest(of: Row.self).fetchAll(db)
        var last: [String: Int64] = [:]
        for row in sent + received {
            let peer: String = try row.decode(atIndex: 0)
            let sequence: Int64 = try row.decode(atIndex: 1)
            last[peer] = max(last[peer] ?? sequence, sequence)
        }
        return last.map { (peer: $0.key, last: $0.value) }.sorted { $0.last > $1.last }
    }
}
