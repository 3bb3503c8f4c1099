import Foundation
import GRDB

/// A message as this computer keeps it: opened (the client's own disk, mode 600), with the relay's sequence.
public struct CachedMessage: Sendable, Equatable {
    public var sequence: Int64
    public var id: String
    public var from: String
    public var to: String
    public var text: String
    /// Milliseconds since 1970 when the relay received it.
    public var sentAt: Int64

    /// A message to keep.
    public init(sequence: Int64, id: String, from: String, to: String, text: String, sentAt: Int64) {
        self.sequence = sequence
        self.id = id
        self.from = from
        self.to = to
        self.text = text
        self.sentAt = sentAt
    }
}

/// A direct message written on this computer and not yet acknowledged by the relay.
public struct OutgoingMessage: Sendable, Equatable {
    public var id: String
    public var to: String
    public var text: String
    /// Milliseconds since 1970 when it was written.
    public var writtenAt: Int64

    /// A message waiting to be stored.
    public init(id: String, to: String, text: String, writtenAt: Int64) {
        self.id = id
        self.to = to
        self.text = text
        self.writtenAt = writtenAt
    }
}

/// One account's messages on this computer (SQLite, WAL): the conversations it has seen, so history reads without
/// the relay, and the outbox of messages the relay has not acknowledged yet, resent (same id, so never twice) on
/// the next connection.
public final class MessageCache: Sendable {
    private let queue: DatabaseQueue
    /// The file it lives in.
    public let path: String
    /// The most messages kept per conversation (older ones go first) and in the outbox.
    public let perConversationLimit: Int
    public static let outboxLimit = 1_000

    /// Opens (creating if needed, mode 600) the cache at `path`.
    public init(path: String, perConversationLimit: Int = 10_000) throws(StoreError) {
        self.path = path
        self.perConversationLimit = perConversationLimit
        do {
            let folder = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            if !FileManager.default.fileExists(atPath: path) {
                _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            }
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            queue = try DatabaseQueue(path: path, configuration: configuration)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE message (
                            sequence INTEGER PRIMARY KEY NOT NULL,
                            id TEXT NOT NULL,
                            peer TEXT NOT NULL,
                            sender TEXT NOT NULL,
                            recipient TEXT NOT NULL,
                            text TEXT NOT NULL,
                            sentAt INTEGER NOT NULL
                        );
                        CREATE INDEX messagePeer ON message (peer, sequence);
                        CREATE TABLE outbox (
                            id TEXT PRIMARY KEY NOT NULL,
                            recipient TEXT NOT NULL,
                            text TEXT NOT NULL,
                            writtenAt INTEGER NOT NULL
                        );
                        """)
            }
            try withSchemaLock(path) { try migrator.migrate(queue) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .database("could not open this computer's message cache \(path): \(error)")
        }
    }

    private func write<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try queue.write(body) } catch {
            if let store = error as? StoreError { throw store }
            throw .database("could not \(what) in \(path): \(error)")
        }
    }

    private func read<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try queue.read(body) } catch { throw .database("could not \(what) in \(path): \(error)") }
    }

    /// Puts a message in the outbox before it is sent: if the relay never acknowledges it, it is resent later.
    public func queue(_ message: OutgoingMessage) throws(StoreError) {
        try write("keep message \(message.id) in the outbox") { db in
            let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0
            guard waiting < Self.outboxLimit else {
                throw StoreError.limit(
                    "the outbox holds \(Self.outboxLimit) unsent messages, its most: reach the relay "
                        + "to send them first")
            }
            try db.execute(
                sql: "INSERT OR IGNORE INTO outbox (id, recipient, text, writtenAt) VALUES (?, ?, ?, ?)",
                arguments: [message.id, message.to, message.text, message.writtenAt])
        }
    }

    /// What waits in the outbox, oldest first.
    public func outbox() throws(StoreError) -> [OutgoingMessage] {
        try read("read the outbox") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY writtenAt, id").map {
                OutgoingMessage(id: $0["id"], to: $0["recipient"], text: $0["text"], writtenAt: $0["writtenAt"])
            }
        }
    }

    /// The relay stored an outbox message: it leaves the outbox and joins the conversation.
    public func acknowledged(_ id: String, sequence: Int64, from sender: String, sentAt: Int64) throws(StoreError) {
        try write("move message \(id) out of the outbox") { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [id]) else {
                return
            }
            try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id])
            try Self.insert(
                db,
                CachedMessage(
                    sequence: sequence, id: id, from: sender, to: row["recipient"],
                    text: row["text"], sentAt: sentAt), of: sender)
        }
    }

    /// Drops a message from the outbox (the relay refused it for good).
    public func forget(_ id: String) throws(StoreError) {
        try write("drop message \(id) from the outbox") { db in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id])
        }
    }

    /// Keeps messages `account` sent or received (a message seen again replaces nothing).
    public func remember(_ messages: [CachedMessage], of account: String) throws(StoreError) {
        guard !messages.isEmpty else { return }
        try write("keep \(messages.count) messages") { db in
            for message in messages { try Self.insert(db, message, of: account) }
            for peer in Set(messages.map { $0.from == account ? $0.to : $0.from }) {
                try db.execute(
                    sql: """
                        DELETE FROM message WHERE peer = ? AND sequence < (
                            SELECT sequence FROM message WHERE peer = ? ORDER BY sequence DESC LIMIT 1 OFFSET ?)
                        """,
                    arguments: [peer, peer, perConversationLimit - 1])
            }
        }
    }

    private static func insert(_ db: Database, _ message: CachedMessage, of account: String) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO message (sequence, id, peer, sender, recipient, text, sentAt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                message.sequence, message.id, message.from == account ? message.to : message.from,
                message.from, message.to, message.text, message.sentAt,
            ])
    }

    /// The conversation with `peer` as this computer has it, newest first, at most `limit`.
    public func history(with peer: String, limit: Int) throws(StoreError) -> [CachedMessage] {
        try read("read the conversation with \(peer)") { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM message WHERE peer = ? ORDER BY sequence DESC LIMIT ?",
                arguments: [peer, max(0, limit)]
            ).map {
                CachedMessage(
                    sequence: $0["sequence"], id: $0["id"], from: $0["sender"], to: $0["recipient"],
                    text: $0["text"], sentAt: $0["sentAt"])
            }
        }
    }
}
