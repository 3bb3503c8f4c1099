import Foundation
import GRDB

// The SQLite store's tables: the migrations that created them, and a GRDB record type for each. Table and column
// names are the ones every existing store file has; the records only name them, they never change them.

extension SQLiteMessageStore {
    /// The schema, in the order it grew. Every store file records the migrations it ran (GRDB's own table), so
    /// only the missing ones run when it is opened.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // The three shipped migrations stay the SQL they ran as: a migration that has shipped is never modified
        // (GRDB's Migrations guide), since it is the schema of every existing store. New ones use db.create(table:).
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
        return migrator
    }
}

/// A row of `account`: a name bound to its keys.
struct AccountRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "account"
    enum Columns {
        static let name = Column("name")
        static let signingKey = Column("signingKey")
        static let agreementKey = Column("agreementKey")
        static let lastSeen = Column("lastSeen")
    }

    var name: String
    var signingKey: Data
    var agreementKey: Data
    /// Milliseconds since 1970, nil if never online.
    var lastSeen: Int64?

    init(name: String, signingKey: Data, agreementKey: Data, lastSeen: Int64? = nil) {
        self.name = name
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.lastSeen = lastSeen
    }

    init(row: Row) throws {
        name = try row.decode(forColumn: Columns.name)
        signingKey = try row.decode(forColumn: Columns.signingKey)
        agreementKey = try row.decode(forColumn: Columns.agreementKey)
        lastSeen = try row.decode(forColumn: Columns.lastSeen)
    }

    func encode(to container: inout PersistenceContainer) {
        container[Columns.name] = name
        container[Columns.signingKey] = signingKey
        container[Columns.agreementKey] = agreementKey
        container[Columns.lastSeen] = lastSeen
    }
}

/// A row of `directMessage` as read: a stored message. (`NewDirectMessageRecord` inserts one.)
struct DirectMessageRecord: FetchableRecord, TableRecord {
    static let databaseTableName = "directMessage"
    enum Columns {
        static let sequence = Column("sequence")
        static let id = Column("id")
        static let sender = Column("sender")
        static let recipient = Column("recipient")
        static let sealed = Column("sealed")
        static let receivedAt = Column("receivedAt")
        static let deliveredAt = Column("deliveredAt")
        static let readAt = Column("readAt")
        static let senderCopy = Column("senderCopy")
    }

    var stored: StoredDirectMessage

    /// The unique key of a sender's message id.
    static func key(sender: String, id: String) -> [String: (any DatabaseValueConvertible)?] {
        [Columns.sender.name: sender, Columns.id.name: id]
    }

    init(row: Row) throws {
        let sealed: Data = try row.decode(forColumn: Columns.sealed)
        let senderCopy: Data? = try row.decode(forColumn: Columns.senderCopy)
        stored = StoredDirectMessage(
            sequence: try row.decode(forColumn: Columns.sequence),
            message: NewDirectMessage(
                id: try row.decode(forColumn: Columns.id), sender: try row.decode(forColumn: Columns.sender),
                recipient: try row.decode(forColumn: Columns.recipient), sealed: Array(sealed),
                receivedAt: try row.decode(forColumn: Columns.receivedAt), senderCopy: senderCopy.map { Array($0) }),
            deliveredAt: try row.decode(forColumn: Columns.deliveredAt),
            readAt: try row.decode(forColumn: Columns.readAt))
    }
}

/// A direct message to insert into `directMessage`: SQLite numbers it (`sequence`); it is neither delivered nor
/// read yet.
struct NewDirectMessageRecord: PersistableRecord {
    static let databaseTableName = DirectMessageRecord.databaseTableName
    typealias Columns = DirectMessageRecord.Columns

    var message: NewDirectMessage

    func encode(to container: inout PersistenceContainer) {
        container[Columns.id] = message.id
        container[Columns.sender] = message.sender
        container[Columns.recipient] = message.recipient
        container[Columns.sealed] = Data(message.sealed)
        container[Columns.receivedAt] = message.receivedAt
        container[Columns.senderCopy] = message.senderCopy.map { Data($0) }
    }
}

/// What an `UPDATE directMessage … RETURNING sequence, sender` gives back: a message whose state changed.
struct MessageMarkRecord: FetchableRecord {
    var mark: MessageMark

    init(row: Row) throws {
        mark = MessageMark(
            sequence: try row.decode(forColumn: DirectMessageRecord.Columns.sequence),
            sender: try row.decode(forColumn: DirectMessageRecord.Columns.sender))
    }
}

/// A row of `channelMember`: an account in a channel, and how far it has read it.
struct ChannelMemberRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "channelMember"
    enum Columns {
        static let channel = Column("channel")
        static let account = Column("account")
        static let joinedAt = Column("joinedAt")
        static let readThrough = Column("readThrough")
    }

    var channel: String
    var account: String
    /// Milliseconds since 1970.
    var joinedAt: Int64
    /// The last `channelPost` sequence the member has read.
    var readThrough: Int64

    /// The primary key: one membership per account and channel.
    static func key(channel: String, account: String) -> [String: (any DatabaseValueConvertible)?] {
        [Columns.channel.name: channel, Columns.account.name: account]
    }

    init(channel: String, account: String, joinedAt: Int64, readThrough: Int64) {
        self.channel = channel
        self.account = account
        self.joinedAt = joinedAt
        self.readThrough = readThrough
    }

    init(row: Row) throws {
        channel = try row.decode(forColumn: Columns.channel)
        account = try row.decode(forColumn: Columns.account)
        joinedAt = try row.decode(forColumn: Columns.joinedAt)
        readThrough = try row.decode(forColumn: Columns.readThrough)
    }

    func encode(to container: inout PersistenceContainer) {
        container[Columns.channel] = channel
        container[Columns.account] = account
        container[Columns.joinedAt] = joinedAt
        container[Columns.readThrough] = readThrough
    }
}

/// A row of `channelPost` as read: a stored channel line. (`NewChannelPostRecord` inserts one.)
struct ChannelPostRecord: FetchableRecord, TableRecord {
    static let databaseTableName = "channelPost"
    enum Columns {
        static let sequence = Column("sequence")
        static let channel = Column("channel")
        static let id = Column("id")
        static let sender = Column("sender")
        static let kind = Column("kind")
        static let text = Column("text")
        static let postedAt = Column("postedAt")
        static let members = Column("members")
    }

    var stored: StoredChannelPost

    /// The unique key of a sender's line id in a channel.
    static func key(channel: String, sender: String, id: String) -> [String: (any DatabaseValueConvertible)?] {
        [Columns.channel.name: channel, Columns.sender.name: sender, Columns.id.name: id]
    }

    init(row: Row) throws {
        let kind: String = try row.decode(forColumn: Columns.kind)
        stored = StoredChannelPost(
            sequence: try row.decode(forColumn: Columns.sequence),
            post: NewChannelPost(
                id: try row.decode(forColumn: Columns.id), channel: try row.decode(forColumn: Columns.channel),
                sender: try row.decode(forColumn: Columns.sender), kind: ChannelPostKind(rawValue: kind) ?? .message,
                text: try row.decode(forColumn: Columns.text), postedAt: try row.decode(forColumn: Columns.postedAt)),
            members: try row.decode(forColumn: Columns.members))
    }
}

/// A channel line to insert into `channelPost`: SQLite numbers it (`sequence`).
struct NewChannelPostRecord: PersistableRecord {
    static let databaseTableName = ChannelPostRecord.databaseTableName
    typealias Columns = ChannelPostRecord.Columns

    var post: NewChannelPost
    /// The channel's members after this line (activity lines), or the post's own count (call lines).
    var members: Int?

    func encode(to container: inout PersistenceContainer) {
        container[Columns.channel] = post.channel
        container[Columns.id] = post.id
        container[Columns.sender] = post.sender
        container[Columns.kind] = post.kind.rawValue
        container[Columns.text] = post.text
        container[Columns.postedAt] = post.postedAt
        container[Columns.members] = members
    }
}
