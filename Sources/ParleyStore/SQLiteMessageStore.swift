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

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE account (
                    name TEXT PRIMARY KEY NOT NULL,
                    signingKey BLOB NOT NULL,
                    agreementKey BLOB NOT NULL,
                    lastSeen INTEGER
                );
                CREATE TABLE directMessage (
                    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL,
                    sender TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    sealed BLOB NOT NULL,
                    receivedAt INTEGER NOT NULL,
                    deliveredAt INTEGER,
                    readAt INTEGER,
                    UNIQUE (sender, id)
                );
                CREATE INDEX directMessageUndelivered ON directMessage (recipient, sequence) WHERE deliveredAt IS NULL;
                CREATE INDEX directMessageConversation ON directMessage (sender, recipient, sequence);
                """)
        }
        migrator.registerMigration("v2 sender copy") { db in
            try db.execute(sql: "ALTER TABLE directMessage ADD COLUMN senderCopy BLOB")
        }
        return migrator
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
            try messages.map { message in
                if let existing = try Self.fetchMessages(
                    db, where: "sender = ? AND id = ?", arguments: [message.sender, message.id], limit: 1).first {
                    guard existing.message.recipient == message.recipient, existing.message.sealed == message.sealed
                    else { return .failure(StoreError.idReused(sender: message.sender, id: message.id)) }
                    return .success((existing, false))
                }
                try db.execute(
                    sql: """
                        INSERT INTO directMessage (id, sender, recipient, sealed, receivedAt, senderCopy)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [message.id, message.sender, message.recipient, Data(message.sealed), message.receivedAt,
                                message.senderCopy.map { Data($0) }])
                return .success((StoredDirectMessage(sequence: db.lastInsertedRowID, message: message), true))
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

    public func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError) {
        guard !sequences.isEmpty else { return }
        try write("mark \(sequences.count) messages delivered") { db in
            for sequence in sequences {
                try db.execute(
                    sql: "UPDATE directMessage SET deliveredAt = ? WHERE sequence = ? AND recipient = ? AND deliveredAt IS NULL",
                    arguments: [at, sequence, recipient])
            }
        }
    }

    public func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64)
        throws(StoreError) {
        try write("mark messages of \(sender) read") { db in
            try db.execute(
                sql: """
                    UPDATE directMessage SET readAt = ?, deliveredAt = COALESCE(deliveredAt, ?)
                    WHERE sender = ? AND recipient = ? AND sequence <= ? AND readAt IS NULL
                    """,
                arguments: [at, at, sender, recipient, sequence])
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
            db, sql: "SELECT * FROM directMessage WHERE \(condition) ORDER BY sequence \(order) LIMIT \(max(0, limit))",
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
