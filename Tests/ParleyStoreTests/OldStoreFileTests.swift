import Foundation
import GRDB
import ParleySecurity
import ParleyStore
import Testing

/// A store file written before the store used GRDB records opens, reads and grows like one it wrote itself.
struct OldStoreFileTests {
    let folder = NSTemporaryDirectory() + "parley-old-store-\(UUID().uuidString)"

    /// Writes a store file as the raw-SQL store did: its schema run by a migrator under the same migration ids, its
    /// rows inserted by plain SQL. Frozen on purpose: this is what files in use hold, whatever the store becomes.
    func writeOldStore(at path: String, alice: AccountKeys, bob: AccountKeys) throws {
        let queue = try DatabaseQueue(path: path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
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
        migrator.registerMigration("v3 channels") { db in
            try db.execute(
                sql: """
                    CREATE TABLE channelMember (
                        channel TEXT NOT NULL,
                        account TEXT NOT NULL,
                        joinedAt INTEGER NOT NULL,
                        readThrough INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (channel, account)
                    );
                    CREATE INDEX channelMemberAccount ON channelMember (account, joinedAt);
                    CREATE TABLE channelPost (
                        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                        channel TEXT NOT NULL,
                        id TEXT NOT NULL,
                        sender TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        text TEXT NOT NULL,
                        postedAt INTEGER NOT NULL,
                        members INTEGER,
                        UNIQUE (channel, sender, id)
                    );
                    CREATE INDEX channelPostChannel ON channelPost (channel, sequence);
                    CREATE INDEX directMessageInbound ON directMessage (recipient, sender, sequence);
                    """)
        }
        try migrator.migrate(queue)
        try queue.write { db in
            let account = "INSERT INTO account (name, signingKey, agreementKey) VALUES (?, ?, ?)"
            try db.execute(sql: account, arguments: ["alice", Data(alice.signing), Data(alice.agreement)])
            try db.execute(sql: account, arguments: ["bob", Data(bob.signing), Data(bob.agreement)])
            try db.execute(
                sql: "UPDATE account SET lastSeen = ? WHERE name = ?",
                arguments: [1_700_000_000_000, "alice"])
            let message = """
                INSERT INTO directMessage (id, sender, recipient, sealed, receivedAt, senderCopy)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (sender, id) DO NOTHING
                """
            try db.execute(sql: message, arguments: ["m1", "alice", "bob", Data([1, 2, 3]), 10, Data([9])])
            try db.execute(sql: message, arguments: ["m2", "bob", "alice", Data([4]), 40, nil])
            try db.execute(sql: message, arguments: ["m3", "alice", "bob", Data([5]), 50, nil])
            try db.execute(sql: "UPDATE directMessage SET deliveredAt = 20, readAt = 30 WHERE id = 'm1'")
            let member = """
                INSERT OR IGNORE INTO channelMember (channel, account, joinedAt, readThrough) VALUES (?, ?, ?, 0)
                """
            let post = """
                INSERT INTO channelPost (channel, id, sender, kind, text, postedAt, members)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
            try db.execute(sql: member, arguments: ["team", "alice", 5])
            try db.execute(sql: post, arguments: ["team", "joined-5-1", "alice", "joined", "", 5, 1])
            try db.execute(sql: member, arguments: ["team", "bob", 6])
            try db.execute(sql: "UPDATE channelMember SET readThrough = 1 WHERE channel = 'team' AND account = 'bob'")
            try db.execute(sql: post, arguments: ["team", "joined-6-2", "bob", "joined", "", 6, 2])
            try db.execute(sql: post, arguments: ["team", "p1", "bob", "message", "hello", 60, nil])
        }
    }

    @Test func anOldStoreOpensAndReadsEveryTable() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/messages.sqlite"
        let alice = AccountIdentity.create(name: "alice").keys
        let bob = AccountIdentity.create(name: "bob").keys
        try writeOldStore(at: path, alice: alice, bob: bob)

        // Read-only first: the relay's read-only mode never migrates.
        let readOnly = try SQLiteMessageStore(path: path, readOnly: true)
        #expect(try readOnly.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m3"])

        let store = try SQLiteMessageStore(path: path)
        #expect(try store.keys(of: "alice") == alice)
        #expect(try store.bind(account: "bob", to: bob) == .matches)
        #expect(try store.lastSeen("alice") == 1_700_000_000_000)
        #expect(try store.lastSeen("bob") == nil)

        #expect(try store.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m3"])
        #expect(try store.undeliveredCount(to: "alice") == 1)
        let history = try store.history(between: "alice", and: "bob", before: nil, limit: 10)
        #expect(history.map(\.message.id) == ["m3", "m2", "m1"])
        let first = StoredDirectMessage(
            sequence: 1,
            message: NewDirectMessage(
                id: "m1", sender: "alice", recipient: "bob", sealed: [1, 2, 3], receivedAt: 10,
                senderCopy: [9]),
            deliveredAt: 20, readAt: 30)
        #expect(history.last == first)

        #expect(try store.channels(of: "bob") == ["team"])
        let members = try store.members(of: "team", limit: 10)
        #expect(members.count == 2 && members.names == ["alice", "bob"])
        let lines = try store.channelHistory("team", before: nil, limit: 10)
        #expect(lines.map(\.post.kind) == [.message, .joined, .joined])
        #expect(lines.map(\.members) == [nil, 2, 1])
        #expect(lines.first?.post.text == "hello")
        let list = try store.conversations(of: "alice", limit: 10)
        #expect(list.map(\.lastAt) == [60, 50])
        #expect(list.map(\.unread) == [1, 1], "bob's hello and bob's m2")

        // It grows as before: a retry finds the old row, a new message comes after the old ones.
        #expect(try store.store(first.message).stored == first)
        let next = try store.store(
            NewDirectMessage(
                id: "m4", sender: "bob", recipient: "alice", sealed: [6],
                receivedAt: 70))
        // After the old ones (not exactly 4: SQLite spends a number on the retry's ignored insert, as it always did).
        #expect(next.isNew && next.stored.sequence > 3)
        #expect(
            try store.post(NewChannelPost(id: "p2", channel: "team", sender: "alice", text: "hi", postedAt: 80))
                .stored.sequence == 4)
    }
}
