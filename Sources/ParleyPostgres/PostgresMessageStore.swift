import Foundation
import Logging
import NIOCore
import ParleySecurity
import ParleyStore
import PostgresNIO
import Synchronization

/// `MessageStore` on a PostgreSQL server, which several relays can share. Each method is one transaction on a
/// connection of a postgres-nio pool; every value is a bound parameter. New messages and channel lines are numbered
/// under a transaction-level advisory lock held until commit, so sequences rise in commit order across every node,
/// as SQLite's single writer gives them on one.
public final class PostgresMessageStore: MessageStore {
    /// Where it lives (without the password).
    public let settings: DatabaseSettings
    private let client: PostgresClient
    private let bridge: BlockingBridge
    private let running: Task<Void, Never>
    private let maximumBytes: Int?
    let logger: Logger
    /// How long one call may wait for PostgreSQL before it fails (nothing acknowledged).
    private let timeout: Duration = .seconds(5)
    /// After the database was found unreachable, calls fail at once until then rather than each waiting for the
    /// timeout: a relay's messaging queue stays responsive while the database is down.
    /// The database's size when last asked, and roughly what was written since.
    private let sizeCheck = Mutex<(at: ContinuousClock.Instant, size: Int64, written: Int)?>(nil)
    private let unreachable = Mutex<(until: ContinuousClock.Instant, reason: String)?>(nil)
    /// How long an unreachable database is not asked again.
    static let unreachableRetry: Duration = .seconds(1)

    /// The schema version this code migrates a database to.
    public static var schemaVersion: Int { PostgresSchema.knownVersion }

    /// Locks that number rows, one per table, beside the migration lock.
    static let directMessageLock: Int64 = PostgresSchema.migrationLock + 1
    static let channelPostLock: Int64 = PostgresSchema.migrationLock + 2

    /// Connects to `settings`, checks that it answers and brings the schema up to date (under the advisory lock), then
    /// opens the pool. `maximumBytes` caps the database's size as `--max-store-mb` caps SQLite's file: past it new
    /// messages, lines and accounts are refused as "full". `readOnly` opens every session read-only (a standby).
    public static func open(
        _ settings: DatabaseSettings, maximumBytes: Int? = nil, readOnly: Bool = false,
        logger: Logger = Logger(label: "parley.postgres")
    ) async throws(StoreError) -> (store: PostgresMessageStore, migrated: (from: Int, to: Int)) {
        let outcome: PostgresSchema.Outcome
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 0, logger: logger)
            do {
                if readOnly {
                    outcome = try await PostgresSchema.check(connection, logger: logger)
                } else {
                    outcome = try await PostgresSchema.migrate(connection, logger: logger)
                }
                try await connection.close()
            } catch {
                try? await connection.close()
                throw error
            }
        } catch {
            throw PostgresFailure.explain(error, doing: "open \(settings.redacted)", settings: settings)
        }
        let store = PostgresMessageStore(
            settings: settings, maximumBytes: maximumBytes, readOnly: readOnly, logger: logger)
        return (store, (outcome.from, outcome.to))
    }

    private init(settings: DatabaseSettings, maximumBytes: Int?, readOnly: Bool, logger: Logger) {
        self.settings = settings
        self.maximumBytes = maximumBytes
        self.logger = logger
        let client = PostgresClient(
            configuration: settings.clientConfiguration(readOnly: readOnly), backgroundLogger: logger.quiet)
        self.client = client
        bridge = BlockingBridge()
        running = bridge.start { await client.run() }
    }

    deinit { running.cancel() }

    /// Closes the pool's connections.
    public func close() { running.cancel() }

    // MARK: Transactions

    /// Runs `body` in one transaction and waits for its commit. `single`: `body` is one statement, which PostgreSQL
    /// runs as its own transaction: no BEGIN and COMMIT round trips around it.
    func transaction<T: Sendable>(
        _ what: String, readOnly: Bool = false, single: Bool = false,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) throws(StoreError) -> T {
        let client = client
        let logger = logger
        if let known = unreachable.withLock({ state in
            state.flatMap { ContinuousClock.now < $0.until ? $0.reason : nil }
        }) {
            throw StoreError.unavailable("could not \(what): \(known) (tried again within a second)")
        }
        do {
            return try bridge.run(
                timeout: timeout,
                onTimeout: StoreError.unavailable(
                    "could not \(what): PostgreSQL at \(settings.host):\(settings.port) did not answer within 5 s")
            ) {
                try await client.withConnection { connection in
                    if single { return try await body(connection) }
                    try await connection.query(
                        readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN", logger: logger)
                    do {
                        let value = try await body(connection)
                        try await connection.query("COMMIT", logger: logger)
                        return value
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                        throw error
                    }
                }
            }
        } catch {
            let failure = PostgresFailure.explain(error, doing: what, settings: settings)
            if case .unavailable = failure {
                let reason = "PostgreSQL at \(settings.host):\(settings.port) could not be reached"
                unreachable.withLock { $0 = (ContinuousClock.now + Self.unreachableRetry, reason) }
            }
            throw failure
        }
    }

    /// Takes the lock that numbers `table`'s rows (until commit) and refuses when the database is past its size.
    /// Asking PostgreSQL the database's size costs a look at every file of it, so it is asked again only after a
    /// second, or after a 64th of the limit was written (`bytes` is what this insert adds, roughly); in between the
    /// last answer plus what was written since stands for it.
    func prepareInsert(_ connection: PostgresConnection, lock: Int64, bytes: Int = 1024) async throws {
        guard let maximumBytes else {
            try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
            return
        }
        let now = ContinuousClock.now
        let known = sizeCheck.withLock { check -> Int64? in
            guard let last = check, now - last.at < .seconds(1), last.written < maximumBytes / 64 else { return nil }
            check?.written += bytes
            return last.size + Int64(last.written)
        }
        if let known {
            try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
            if known > Int64(maximumBytes) { throw full(known, maximumBytes) }
            return
        }
        let rows = try await connection.query(
            "SELECT pg_database_size(current_database()) FROM pg_advisory_xact_lock(\(lock))", logger: logger)
        for try await size in rows.decode(Int64.self) {
            sizeCheck.withLock { $0 = (now, size, bytes) }
            if size > Int64(maximumBytes) { throw full(size, maximumBytes) }
        }
    }

    private func full(_ size: Int64, _ maximumBytes: Int) -> StoreError {
        StoreError.database(
            "the message store is full (the database holds \(size >> 20) MiB, past its size limit of "
                + "\(maximumBytes >> 20) MiB, parley serve --max-store-mb)")
    }

    // MARK: Accounts

    public func bind(account name: String, to keys: AccountKeys) throws(StoreError) -> AccountBinding {
        let logger = logger
        return try transaction("bind account \(name)") { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO account (name, signing_key, agreement_key)
                VALUES (\(name), \(Data(keys.signing)), \(Data(keys.agreement)))
                ON CONFLICT (name) DO NOTHING RETURNING name
                """, logger: logger
            ).collect()
            if !inserted.isEmpty { return .created }
            for try await (signing, agreement) in try await connection.query(
                "SELECT signing_key, agreement_key FROM account WHERE name = \(name)", logger: logger
            ).decode((Data, Data).self) {
                return Array(signing) == keys.signing && Array(agreement) == keys.agreement
                    ? .matches : .belongsToOtherKeys
            }
            return .belongsToOtherKeys
        }
    }

    public func keys(of name: String) throws(StoreError) -> AccountKeys? {
        let logger = logger
        let found = try transaction("read the keys of \(name)", readOnly: true) { connection in
            var keys: (Data, Data)?
            for try await row in try await connection.query(
                "SELECT signing_key, agreement_key FROM account WHERE name = \(name)", logger: logger
            ).decode((Data, Data).self) {
                keys = row
            }
            return keys.map { [Array($0.0), Array($0.1)] }
        }
        guard let found else { return nil }
        do {
            return try AccountKeys(signing: found[0], agreement: found[1])
        } catch {
            throw .database("the stored keys of \(name) are damaged: \(error)")
        }
    }

    public func setLastSeen(_ name: String, at: Int64) throws(StoreError) {
        let logger = logger
        try transaction("record when \(name) was last seen") { connection in
            _ = try await connection.query("UPDATE account SET last_seen = \(at) WHERE name = \(name)", logger: logger)
        }
    }

    public func lastSeen(_ name: String) throws(StoreError) -> Int64? {
        let logger = logger
        return try transaction("read when \(name) was last seen", readOnly: true) { connection in
            var seen: Int64?
            for try await value in try await connection.query(
                "SELECT last_seen FROM account WHERE name = \(name)", logger: logger
            ).decode(Int64?.self) {
                seen = value
            }
            return seen
        }
    }

    // MARK: Direct messages

    public func store(batch messages: [NewDirectMessage]) throws(StoreError)
        -> [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
    {
        let what =
            messages.count == 1
            ? "store message \(messages[0].id) of \(messages[0].sender)" : "store \(messages.count) messages"
        let logger = logger
        return try transaction(what) { [self] connection in
            try await prepareInsert(
                connection, lock: Self.directMessageLock,
                bytes: messages.reduce(0) { $0 + $1.sealed.count + ($1.senderCopy?.count ?? 0) + 128 })
            // One statement for the batch, rows numbered in the batch's order; a row that conflicts (a retry, or a
            // reused id) returns nothing and is looked at on its own below. The lock makes a conflict's row a
            // committed one.
            var inserted: [String: Int64] = [:]
            let rows = try await connection.query(
                """
                INSERT INTO direct_message (id, sender, recipient, sealed, sender_copy, received_at)
                SELECT id, sender, recipient, sealed, NULLIF(copy, ''::bytea), received_at
                FROM unnest(\(messages.map(\.id)), \(messages.map(\.sender)), \(messages.map(\.recipient)),
                    \(messages.map { ByteBuffer(bytes: $0.sealed) }),
                    \(messages.map { ByteBuffer(bytes: $0.senderCopy ?? []) }), \(messages.map(\.receivedAt)))
                    WITH ORDINALITY AS batch(id, sender, recipient, sealed, copy, received_at, position)
                ORDER BY position
                ON CONFLICT (sender, id) DO NOTHING RETURNING sequence, sender, id
                """, logger: logger)
            for try await (sequence, sender, id) in rows.decode((Int64, String, String).self) {
                inserted[sender + "\u{0}" + id] = sequence
            }
            var results: [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>] = []
            var seen = Set<String>()
            for message in messages {
                let key = message.sender + "\u{0}" + message.id
                if let sequence = inserted[key], seen.insert(key).inserted {
                    results.append(.success((StoredDirectMessage(sequence: sequence, message: message), true)))
                    continue
                }
                let existing = try await Self.messages(
                    connection,
                    "\(unescaped: Self.messageColumns) WHERE sender = \(message.sender) AND id = \(message.id)",
                    logger: logger
                ).first
                guard let existing, existing.message.recipient == message.recipient,
                    existing.message.sealed == message.sealed
                else {
                    results.append(.failure(StoreError.idReused(sender: message.sender, id: message.id)))
                    continue
                }
                results.append(.success((existing, false)))
            }
            return results
        }
    }

    /// The columns of a stored message, in the order `messages` decodes them.
    static let messageColumns =
        """
        SELECT sequence, id, sender, recipient, sealed, sender_copy, received_at, delivered_at, read_at
        FROM direct_message
        """

    static func messages(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger)
        async throws -> [StoredDirectMessage]
    {
        var messages: [StoredDirectMessage] = []
        for try await row in try await connection.query(query, logger: logger) {
            let (sequence, id, sender, recipient, sealed, senderCopy, receivedAt, deliveredAt, readAt) =
                try row.decode((Int64, String, String, String, Data, Data?, Int64, Int64?, Int64?).self)
            messages.append(
                StoredDirectMessage(
                    sequence: sequence,
                    message: NewDirectMessage(
                        id: id, sender: sender, recipient: recipient, sealed: Array(sealed), receivedAt: receivedAt,
                        senderCopy: senderCopy.map { Array($0) }),
                    deliveredAt: deliveredAt, readAt: readAt))
        }
        return messages
    }

    public func undelivered(to recipient: String, limit: Int) throws(StoreError) -> [StoredDirectMessage] {
        let logger = logger
        return try transaction("read undelivered messages to \(recipient)", readOnly: true) { connection in
            try await Self.messages(
                connection,
                """
                \(unescaped: Self.messageColumns) WHERE recipient = \(recipient) AND delivered_at IS NULL
                ORDER BY sequence LIMIT \(max(0, limit))
                """, logger: logger)
        }
    }

    public func undeliveredCount(to recipient: String) throws(StoreError) -> Int {
        let logger = logger
        return try transaction("count undelivered messages to \(recipient)", readOnly: true) { connection in
            try await Self.count(
                connection,
                "SELECT count(*) FROM direct_message WHERE recipient = \(recipient) AND delivered_at IS NULL",
                logger: logger)
        }
    }

    static func count(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger)
        async throws -> Int
    {
        var count = 0
        for try await value in try await connection.query(query, logger: logger).decode(Int.self) { count = value }
        return count
    }

    private static func marks(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger)
        async throws -> [MessageMark]
    {
        var marks: [MessageMark] = []
        for try await (sequence, sender) in try await connection.query(query, logger: logger).decode(
            (Int64, String).self)
        {
            marks.append(MessageMark(sequence: sequence, sender: sender))
        }
        return marks
    }

    @discardableResult
    public func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError)
        -> [MessageMark]
    {
        guard !sequences.isEmpty else { return [] }
        return try markDelivered(batch: [(sequences, recipient)], at: at)[0]
    }

    public func markDelivered(batch receipts: [(sequences: [Int64], recipient: String)], at: Int64) throws(StoreError)
        -> [[MessageMark]]
    {
        let count = receipts.reduce(0) { $0 + $1.sequences.count }
        let logger = logger
        let receipts = receipts.map { (sequences: $0.sequences, recipient: $0.recipient) }
        // One statement for every receipt of the batch: (sequence, recipient) pairs, each message marked once.
        let sequences = receipts.flatMap(\.sequences)
        let recipients = receipts.flatMap { receipt in receipt.sequences.map { _ in receipt.recipient } }
        return try transaction("mark \(count) messages delivered", single: true) { connection in
            var marked: [Int64: MessageMark] = [:]
            var recipientOf: [Int64: String] = [:]
            for try await (sequence, sender, recipient) in try await connection.query(
                """
                UPDATE direct_message d SET delivered_at = \(at)
                FROM unnest(\(sequences), \(recipients)) AS receipt(sequence, recipient)
                WHERE d.sequence = receipt.sequence AND d.recipient = receipt.recipient AND d.delivered_at IS NULL
                RETURNING d.sequence, d.sender, d.recipient
                """, logger: logger
            ).decode((Int64, String, String).self) {
                marked[sequence] = MessageMark(sequence: sequence, sender: sender)
                recipientOf[sequence] = recipient
            }
            // Each receipt gets the messages it marked, in its order; a sequence listed twice (in one receipt or
            // two) counts where it first appears.
            var results: [[MessageMark]] = []
            for receipt in receipts {
                var marks: [MessageMark] = []
                for sequence in receipt.sequences where recipientOf[sequence] == receipt.recipient {
                    if let mark = marked.removeValue(forKey: sequence) { marks.append(mark) }
                }
                results.append(marks)
            }
            return results
        }
    }

    @discardableResult
    public func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64)
        throws(StoreError) -> [MessageMark]
    {
        let logger = logger
        return try transaction("mark messages of \(sender) read") { connection in
            try await Self.marks(
                connection,
                """
                UPDATE direct_message SET read_at = \(at), delivered_at = COALESCE(delivered_at, \(at))
                WHERE sender = \(sender) AND recipient = \(recipient) AND sequence <= \(sequence) AND read_at IS NULL
                RETURNING sequence, sender
                """, logger: logger
            ).sorted { $0.sequence < $1.sequence }
        }
    }

    public func history(between account: String, and peer: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredDirectMessage]
    {
        let logger = logger
        return try transaction("read the conversation of \(account) and \(peer)", readOnly: true) { connection in
            try await Self.messages(
                connection,
                """
                \(unescaped: Self.messageColumns)
                WHERE ((sender = \(account) AND recipient = \(peer)) OR (sender = \(peer) AND recipient = \(account)))
                    AND sequence < \(before ?? Int64.max)
                ORDER BY sequence DESC LIMIT \(max(0, limit))
                """, logger: logger)
        }
    }

    public func directMessages(sequences: [Int64]) throws(StoreError) -> [StoredDirectMessage] {
        let logger = logger
        let asked = Array(sequences.prefix(1000))
        guard !asked.isEmpty else { return [] }
        return try transaction("read \(asked.count) messages by sequence", readOnly: true) { connection in
            try await Self.messages(
                connection,
                """
                \(unescaped: Self.messageColumns)
                WHERE sequence = ANY(\(asked)) ORDER BY sequence
                """, logger: logger)
        }
    }
}
