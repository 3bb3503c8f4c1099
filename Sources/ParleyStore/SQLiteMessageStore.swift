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
                    let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                    try db.execute(sql: "PRAGMA max_page_count = \(max(16, maximumBytes / pageSize))")
                }
            }
            // WAL with synchronous=NORMAL: a commit is in the log before `store` returns, so a relay killed at any
            // moment (SIGKILL, a crash) keeps every acknowledged message; only a power cut or kernel crash can lose
            // the last commits before the next checkpoint. FULL would add an fsync to every message (about 1 ms
            // here), which caps a relay at ~1,000 messages a second.
            if !readOnly {
                configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            }
            pool = try DatabasePool(path: path, configuration: configuration)
            if !readOnly { try Self.migrator.migrate(pool) }
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
                return .database("could not \(what): the message store is full (the disk is full, or the store "
                                 + "reached its size limit, parley serve --max-store-mb)")
            case .SQLITE_READONLY:
                return .database("could not \(what): the message store is read-only (check the state folder's "
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
            if let row = try Row.fetchOne(db, sql: "SELECT signingKey, agreementKey FROM account WHERE name = ?",
                                          arguments: [name]) {
                let signing: Data = row["signingKey"], agreement: Data = row["agreementKey"]
                return Array(signing) == keys.signing && Array(agreement) == keys.agreement
                    ? .matches : .belongsToOtherKeys
            }
            try db.execute(sql: "INSERT INTO account (name, signingKey, agreementKey) VALUES (?, ?, ?)",
                           arguments: [name, Data(keys.signing), Data(keys.agreement)])
            return .created
        }
    }

    public func keys(of name: String) throws(StoreError) -> AccountKeys? {
        let row = try read("read the keys of \(name)") { db in
            try Row.fetchOne(db, sql: "SELECT signingKey, agreementKey FROM account WHERE name = ?", arguments: [name])
        }
        guard let row else { return nil }
        let signing: Data = row["signingKey"], agreement: Data = row["agreementKey"]
        do {
            return try AccountKeys(signing: Array(signing), agreement: Array(agreement))
        } catch {
            throw .database("the stored keys of \(name) are damaged: \(error)")
        }
    }

    public func store(_ message: NewDirectMessage) throws(StoreError) -> (stored: StoredDirectMessage, isNew: Bool) {
        try store(batch: [message])[0].get()
    }

    public func store(batch messages: [NewDirectMessage]) throws(StoreError)
        -> [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>] {
        let what = messages.count == 1
            ? "store message \(messages[0].id) of \(messages[0].sender)" : "store \(messages.count) messages"
        return try write(what) { db in
            // The common case first: a new id inserts; only a conflict (a retry, or a reused id) reads what is there.
            let insert = try db.cachedStatement(sql: """
                INSERT INTO directMessage (id, sender, recipient, sealed, receivedAt, senderCopy)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (sender, id) DO NOTHING
                """)
            return try messages.map { message in
                try insert.execute(arguments: [message.id, message.sender, message.recipient, Data(message.sealed),
                                               message.receivedAt, message.senderCopy.map { Data($0) }])
                if db.changesCount > 0 {
                    return .success((StoredDirectMessage(sequence: db.lastInsertedRowID, message: message), true))
                }
                guard let existing = try Self.fetchMessages(
                    db, where: "sender = ? AND id = ?", arguments: [message.sender, message.id], limit: 1).first,
                    existing.message.recipient == message.recipient, existing.message.sealed == message.sealed
                else { return .failure(StoreError.idReused(sender: message.sender, id: message.id)) }
                return .success((existing, false))
            }
        }
    }

    public func undelivered(to recipient: String, limit: Int) throws(StoreError) -> [StoredDirectMessage] {
        try read("read undelivered messages to \(recipient)") { db in
            try Self.fetchMessages(db, where: "recipient = ? AND deliveredAt IS NULL", arguments: [recipient],
                                   limit: limit)
        }
    }

    public func undeliveredCount(to recipient: String) throws(StoreError) -> Int {
        try read("count undelivered messages to \(recipient)") { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM directMessage WHERE recipient = ? AND deliveredAt IS NULL",
                             arguments: [recipient]) ?? 0
        }
    }

    @discardableResult
    public func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError) -> [MessageMark] {
        guard !sequences.isEmpty else { return [] }
        return try markDelivered(batch: [(sequences, recipient)], at: at)[0]
    }

    public func markDelivered(batch receipts: [(sequences: [Int64], recipient: String)], at: Int64) throws(StoreError)
        -> [[MessageMark]] {
        let count = receipts.reduce(0) { $0 + $1.sequences.count }
        return try write("mark \(count) messages delivered") { db in
            let update = try db.cachedStatement(sql: """
                UPDATE directMessage SET deliveredAt = ? WHERE sequence = ? AND recipient = ? AND deliveredAt IS NULL
                RETURNING sequence, sender
                """)
            return try receipts.map { receipt in
                try receipt.sequences.flatMap { sequence in
                    try Row.fetchAll(update, arguments: [at, sequence, receipt.recipient])
                        .map { MessageMark(sequence: $0["sequence"], sender: $0["sender"]) }
                }
            }
        }
    }

    @discardableResult
    public func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64)
        throws(StoreError) -> [MessageMark] {
        try write("mark messages of \(sender) read") { db in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE directMessage SET readAt = ?, deliveredAt = COALESCE(deliveredAt, ?)
                    WHERE sender = ? AND recipient = ? AND sequence <= ? AND readAt IS NULL
                    RETURNING sequence, sender
                    """,
                arguments: [at, at, sender, recipient, sequence]
            ).map { MessageMark(sequence: $0["sequence"], sender: $0["sender"]) }.sorted { $0.sequence < $1.sequence }
        }
    }

    public func join(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try write("add \(account) to channel \(channel)") { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO channelMember (channel, account, joinedAt, readThrough) VALUES (?, ?, ?, 0)",
                arguments: [channel, account, at])
            guard db.changesCount > 0 else { return nil }
            // A member has read everything before it joined.
            try db.execute(
                sql: """
                    UPDATE channelMember SET readThrough = COALESCE((SELECT MAX(sequence) FROM channelPost WHERE channel = ?), 0)
                    WHERE channel = ? AND account = ?
                    """,
                arguments: [channel, channel, account])
            return try Self.insertActivity(db, channel: channel, account: account, kind: .joined, at: at)
        }
    }

    public func leave(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        try write("remove \(account) from channel \(channel)") { db in
            try db.execute(sql: "DELETE FROM channelMember WHERE channel = ? AND account = ?", arguments: [channel, account])
            guard db.changesCount > 0 else { return nil }
            return try Self.insertActivity(db, channel: channel, account: account, kind: .left, at: at)
        }
    }

    private static func insertActivity(_ db: Database, channel: String, account: String, kind: ChannelPostKind,
                                       at: Int64) throws -> StoredChannelPost {
        let members = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM channelMember WHERE channel = ?",
                                       arguments: [channel]) ?? 0
        // Activity ids are the store's own: unique per line, never chosen by a client.
        let id = "\(kind.rawValue)-\(at)-\(UInt32.random(in: 0...UInt32.max))"
        try db.execute(
            sql: """
                INSERT INTO channelPost (channel, id, sender, kind, text, postedAt, members) VALUES (?, ?, ?, ?, '', ?, ?)
                """,
            arguments: [channel, id, account, kind.rawValue, at, members])
        return StoredChannelPost(
            sequence: db.lastInsertedRowID,
            post: NewChannelPost(id: id, channel: channel, sender: account, kind: kind, text: "", postedAt: at),
            members: members)
    }

    public func members(of channel: String, limit: Int) throws(StoreError) -> (count: Int, names: [String]) {
        try read("read the members of channel \(channel)") { db in
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM channelMember WHERE channel = ?",
                                         arguments: [channel]) ?? 0
            let names = try String.fetchAll(
                db, sql: "SELECT account FROM channelMember WHERE channel = ? ORDER BY joinedAt, account LIMIT \(max(0, limit))",
                arguments: [channel])
            return (count, names)
        }
    }

    public func channels(of account: String) throws(StoreError) -> [String] {
        try read("read the channels of \(account)") { db in
            try String.fetchAll(db, sql: "SELECT channel FROM channelMember WHERE account = ? ORDER BY joinedAt, channel",
                                arguments: [account])
        }
    }

    public func post(_ post: NewChannelPost) throws(StoreError) -> (stored: StoredChannelPost, isNew: Bool) {
        try write("store message \(post.id) of \(post.sender) in channel \(post.channel)") { db in
            if let existing = try Self.fetchPosts(
                db, where: "channel = ? AND sender = ? AND id = ?", arguments: [post.channel, post.sender, post.id],
                limit: 1).first {
                guard existing.post.text == post.text, existing.post.kind == post.kind else {
                    throw StoreError.idReused(sender: post.sender, id: post.id)
                }
                return (existing, false)
            }
            try db.execute(
                sql: """
                    INSERT INTO channelPost (channel, id, sender, kind, text, postedAt, members) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [post.channel, post.id, post.sender, post.kind.rawValue, post.text, post.postedAt,
                            post.members])
            return (StoredChannelPost(sequence: db.lastInsertedRowID, post: post, members: post.members), true)
        }
    }

    public func channelHistory(_ channel: String, before: Int64?, limit: Int) throws(StoreError) -> [StoredChannelPost] {
        try read("read the history of channel \(channel)") { db in
            try Self.fetchPosts(db, where: "channel = ? AND sequence < ?", arguments: [channel, before ?? Int64.max],
                                limit: limit, newestFirst: true)
        }
    }

    public func markChannelRead(_ channel: String, by account: String, through sequence: Int64) throws(StoreError) {
        try write("mark channel \(channel) read") { db in
            try db.execute(
                sql: "UPDATE channelMember SET readThrough = MAX(readThrough, ?) WHERE channel = ? AND account = ?",
                arguments: [sequence, channel, account])
        }
    }

    public func conversations(of account: String, limit: Int) throws(StoreError) -> [ConversationSummary] {
        try read("read the conversations of \(account)") { db in
            var summaries: [ConversationSummary] = []
            let peers = try Row.fetchAll(
                db,
                sql: """
                    SELECT peer, MAX(sequence) AS last FROM (
                        SELECT recipient AS peer, sequence FROM directMessage WHERE sender = ?
                        UNION ALL
                        SELECT sender AS peer, sequence FROM directMessage WHERE recipient = ?
                    ) GROUP BY peer ORDER BY last DESC LIMIT \(max(0, limit))
                    """,
                arguments: [account, account])
            for row in peers {
                let peer: String = row["peer"], last: Int64 = row["last"]
                guard let message = try Self.fetchMessages(db, where: "sequence = ?", arguments: [last], limit: 1).first
                else { continue }
                let unread = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM directMessage WHERE recipient = ? AND sender = ? AND readAt IS NULL",
                    arguments: [account, peer]) ?? 0
                summaries.append(ConversationSummary(kind: .direct(peer: peer, last: message), unread: unread,
                                                     lastAt: message.message.receivedAt))
            }
            let memberships = try Row.fetchAll(
                db, sql: "SELECT channel, readThrough FROM channelMember WHERE account = ?", arguments: [account])
            for row in memberships {
                let channel: String = row["channel"], readThrough: Int64 = row["readThrough"]
                let last = try Self.fetchPosts(db, where: "channel = ?", arguments: [channel], limit: 1,
                                               newestFirst: true).first
                let unread = try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM channelPost
                        WHERE channel = ? AND sequence > ? AND kind = 'message' AND sender != ?
                        """,
                    arguments: [channel, readThrough, account]) ?? 0
                summaries.append(ConversationSummary(kind: .channel(name: channel, last: last), unread: unread,
                                                     lastAt: last?.post.postedAt ?? 0))
            }
            return Array(summaries.sorted { $0.lastAt > $1.lastAt }.prefix(max(0, limit)))
        }
    }

    private static func fetchPosts(_ db: Database, where condition: String, arguments: StatementArguments,
                                   limit: Int, newestFirst: Bool = false) throws -> [StoredChannelPost] {
        let order = newestFirst ? "DESC" : "ASC"
        let rows = try Row.fetchAll(
            db, sql: "SELECT * FROM channelPost WHERE \(condition) ORDER BY sequence \(order) LIMIT \(max(0, limit))",
            arguments: arguments)
        return rows.map { row in
            StoredChannelPost(
                sequence: row["sequence"],
                post: NewChannelPost(id: row["id"], channel: row["channel"], sender: row["sender"],
                                     kind: ChannelPostKind(rawValue: row["kind"]) ?? .message, text: row["text"],
                                     postedAt: row["postedAt"]),
                members: row["members"])
        }
    }

    public func history(between account: String, and peer: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredDirectMessage] {
        try read("read the conversation of \(account) and \(peer)") { db in
            try Self.fetchMessages(
                db, where: "((sender = ? AND recipient = ?) OR (sender = ? AND recipient = ?)) AND sequence < ?",
                arguments: [account, peer, peer, account, before ?? Int64.max], limit: limit, newestFirst: true)
        }
    }

    public func setLastSeen(_ name: String, at: Int64) throws(StoreError) {
        try write("record when \(name) was last seen") { db in
            try db.execute(sql: "UPDATE account SET lastSeen = ? WHERE name = ?", arguments: [at, name])
        }
    }

    public func lastSeen(_ name: String) throws(StoreError) -> Int64? {
        try read("read when \(name) was last seen") { db in
            try Int64.fetchOne(db, sql: "SELECT lastSeen FROM account WHERE name = ?", arguments: [name])
        }
    }

    private static func fetchMessages(_ db: Database, where condition: String, arguments: StatementArguments,
                                      limit: Int, newestFirst: Bool = false) throws -> [StoredDirectMessage] {
        let order = newestFirst ? "DESC" : "ASC"
        let rows = try Row.fetchAll(
            try db.cachedStatement(
                sql: "SELECT * FROM directMessage WHERE \(condition) ORDER BY sequence \(order) LIMIT \(max(0, limit))"),
            arguments: arguments)
        return rows.map { row in
            let sealed: Data = row["sealed"]
            let copy: Data? = row["senderCopy"]
            return StoredDirectMessage(
                sequence: row["sequence"],
                message: NewDirectMessage(id: row["id"], sender: row["sender"], recipient: row["recipient"],
                                          sealed: Array(sealed), receivedAt: row["receivedAt"],
                                          senderCopy: copy.map { Array($0) }),
                deliveredAt: row["deliveredAt"], readAt: row["readAt"])
        }
    }
}
