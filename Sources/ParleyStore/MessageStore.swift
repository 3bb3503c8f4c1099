import ParleySecurity

// What the relay keeps between calls, behind one protocol: the embedded SQLite store implements it today; a shared
// database server (PostgreSQL through postgres-nio is the candidate) can implement it for several relays sharing
// accounts and messages. Every method is one transaction: when it returns, what it wrote is committed (the relay
// acknowledges a message only then), and when it throws nothing it would have written is.

/// How a name and keys met the accounts already bound.
public enum AccountBinding: Sendable, Equatable {
    /// The name was free: it is now bound to these keys.
    case created
    /// The name was bound to these same keys.
    case matches
    /// The name belongs to other keys: whoever holds these is not the account's owner.
    case belongsToOtherKeys
}

/// A direct message as the sender hands it to the relay: sealed to the recipient (the store never sees text).
public struct NewDirectMessage: Sendable, Equatable {
    /// Sender-chosen id, unique per sender: a retry with the same id is the same message, never a duplicate.
    public var id: String
    public var sender: String
    public var recipient: String
    /// `DirectMessageSeal` output.
    public var sealed: [UInt8]
    /// Milliseconds since 1970 when the relay received it.
    public var receivedAt: Int64
    /// The sender's own copy, sealed to itself (returned only to the sender).
    public var senderCopy: [UInt8]?

    /// A message to store.
    public init(
        id: String, sender: String, recipient: String, sealed: [UInt8], receivedAt: Int64,
        senderCopy: [UInt8]? = nil
    ) {
        self.id = id
        self.sender = sender
        self.recipient = recipient
        self.sealed = sealed
        self.receivedAt = receivedAt
        self.senderCopy = senderCopy
    }
}

/// A stored direct message.
public struct StoredDirectMessage: Sendable, Equatable {
    /// The store's order: rising in the order messages were committed (per conversation and overall).
    public var sequence: Int64
    public var message: NewDirectMessage
    /// When it reached the recipient's client (milliseconds since 1970), nil while undelivered.
    public var deliveredAt: Int64?
    /// When the recipient read it, nil while unread.
    public var readAt: Int64?

    /// A stored message.
    public init(sequence: Int64, message: NewDirectMessage, deliveredAt: Int64? = nil, readAt: Int64? = nil) {
        self.sequence = sequence
        self.message = message
        self.deliveredAt = deliveredAt
        self.readAt = readAt
    }
}

/// What a store refuses or fails at, in words that name the problem.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database could not be opened, read or written (full disk, read-only file, corrupt file).
    case database(String)
    /// A message id reused by its sender for different content.
    case idReused(sender: String, id: String)
    /// A limit of the store was reached.
    case limit(String)
    /// The store cannot be reached now (its database server is down or not answering); nothing was changed, and a
    /// retry later may succeed.
    case unavailable(String)

    public var description: String {
        switch self {
        case .database(let reason): "message store: \(reason)"
        case .idReused(let sender, let id):
            "message id \(id) of \(sender) was already used for another message: choose a new id"
        case .limit(let reason): reason
        case .unavailable(let reason): "message store: \(reason)"
        }
    }
}

/// Accounts and direct messages, kept across relay restarts.
public protocol MessageStore: Sendable {
    /// Binds `name` to `keys` on first use; afterwards says whether `keys` are the ones bound.
    func bind(account name: String, to keys: AccountKeys) throws(StoreError) -> AccountBinding
    /// The keys bound to `name`, nil for an unknown account.
    func keys(of name: String) throws(StoreError) -> AccountKeys?
    /// Stores a message once: a retry with the sender's same id and content returns the stored one (`isNew` false).
    func store(_ message: NewDirectMessage) throws(StoreError) -> (stored: StoredDirectMessage, isNew: Bool)
    /// Stores several messages in one transaction (group commit), each as `store` would: one result per message,
    /// in order; a message refused (a reused id) does not stop the others. Throws only when nothing was committed.
    func store(batch messages: [NewDirectMessage]) throws(StoreError)
        -> [Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>]
    /// Messages to `recipient` not yet delivered, oldest first, at most `limit`.
    func undelivered(to recipient: String, limit: Int) throws(StoreError) -> [StoredDirectMessage]
    /// How many messages to `recipient` are not yet delivered.
    func undeliveredCount(to recipient: String) throws(StoreError) -> Int
    /// Marks messages to `recipient` delivered at `at` (sequences of other recipients, or delivered already, are
    /// ignored); returns those it marked, with their senders (for live receipts).
    @discardableResult
    func markDelivered(_ sequences: [Int64], to recipient: String, at: Int64) throws(StoreError) -> [MessageMark]
    /// `markDelivered` for several recipients' receipts in one transaction (group commit); one result per receipt.
    func markDelivered(batch receipts: [(sequences: [Int64], recipient: String)], at: Int64) throws(StoreError)
        -> [[MessageMark]]
    /// Marks every message from `sender` to `recipient` up to `sequence` read at `at`; returns those it marked.
    @discardableResult
    func markRead(from sender: String, to recipient: String, through sequence: Int64, at: Int64) throws(StoreError)
        -> [MessageMark]
    /// The conversation between two accounts, newest first, older than `before` (nil: from the newest), at most
    /// `limit`: paging backwards.
    func history(between account: String, and peer: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredDirectMessage]
    /// The direct messages with these sequences, in sequence order (those that exist; at most 1,000 asked).
    func directMessages(sequences: [Int64]) throws(StoreError) -> [StoredDirectMessage]
    /// Records when an account was last online (milliseconds since 1970).
    func setLastSeen(_ name: String, at: Int64) throws(StoreError)
    /// When an account was last online, nil if never.
    func lastSeen(_ name: String) throws(StoreError) -> Int64?

    /// Adds `account` to `channel` (creating the channel with its first member) and stores the activity line, in one
    /// transaction. Nil when it was a member already.
    func join(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost?
    /// Removes `account` from `channel` and stores the activity line; nil when it was not a member.
    func leave(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost?
    /// How many members `channel` has, and the first `limit` names in order of joining.
    func members(of channel: String, limit: Int) throws(StoreError) -> (count: Int, names: [String])
    /// The channels `account` is a member of, in order of joining.
    func channels(of account: String) throws(StoreError) -> [String]
    /// Stores a channel message once (a retry with the sender's same id and text returns the stored one).
    func post(_ post: NewChannelPost) throws(StoreError) -> (stored: StoredChannelPost, isNew: Bool)
    /// The channel's messages and activity lines, newest first, older than `before`, at most `limit`.
    func channelHistory(_ channel: String, before: Int64?, limit: Int) throws(StoreError) -> [StoredChannelPost]
    /// Marks `channel` read by `account` up to `sequence` (never backwards).
    func markChannelRead(_ channel: String, by account: String, through sequence: Int64) throws(StoreError)
    /// Every conversation of `account`, direct and channel, newest last message first, at most `limit`.
    func conversations(of account: String, limit: Int) throws(StoreError) -> [ConversationSummary]
}

/// A message whose state changed, and who sent it (who gets the receipt).
public struct MessageMark: Sendable, Equatable, Codable {
    public var sequence: Int64
    public var sender: String
    public init(sequence: Int64, sender: String) {
        self.sequence = sequence
        self.sender = sender
    }
}

/// What a channel line is.
public enum ChannelPostKind: String, Sendable, Equatable, Codable {
    /// A member's message.
    case message
    /// A member joined (the activity lines are part of the channel's history).
    case joined
    /// A member left.
    case left
    /// Someone joined the call of the room this channel belongs to.
    case callJoined = "call-joined"
    /// Someone left that call.
    case callLeft = "call-left"
}

/// A channel line as the relay hands it to the store. Channels are readable by the relay (like a call's chat);
/// direct messages are the end-to-end encrypted kind.
public struct NewChannelPost: Sendable, Equatable {
    /// Sender-chosen id, unique per sender and channel.
    public var id: String
    public var channel: String
    public var sender: String
    public var kind: ChannelPostKind
    public var text: String
    /// Milliseconds since 1970 when the relay received it.
    public var postedAt: Int64
    /// For call activity lines: the members in the call after it.
    public var members: Int?

    /// A line to store.
    public init(
        id: String, channel: String, sender: String, kind: ChannelPostKind = .message, text: String,
        postedAt: Int64, members: Int? = nil
    ) {
        self.members = members
        self.id = id
        self.channel = channel
        self.sender = sender
        self.kind = kind
        self.text = text
        self.postedAt = postedAt
    }
}

/// A stored channel line.
public struct StoredChannelPost: Sendable, Equatable {
    /// Rising in commit order within the store.
    public var sequence: Int64
    public var post: NewChannelPost
    /// Members after this line (for joined and left lines; nil for messages).
    public var members: Int?

    /// A stored line.
    public init(sequence: Int64, post: NewChannelPost, members: Int? = nil) {
        self.sequence = sequence
        self.post = post
        self.members = members
    }
}

/// One line of the conversation list.
public struct ConversationSummary: Sendable, Equatable {
    /// A direct conversation with `peer`, or a channel.
    public enum Kind: Sendable, Equatable {
        case direct(peer: String, last: StoredDirectMessage)
        case channel(name: String, last: StoredChannelPost?)
    }

    public var kind: Kind
    /// Messages to the account not read yet.
    public var unread: Int
    /// When the last message arrived (milliseconds since 1970; 0 for an empty channel).
    public var lastAt: Int64

    /// A summary line.
    public init(kind: Kind, unread: Int, lastAt: Int64) {
        self.kind = kind
        self.unread = unread
        self.lastAt = lastAt
    }
}

extension MessageStore {
    /// One message is a batch of one: every store commits single messages the way it commits a group.
    public func store(_ message: NewDirectMessage) throws(StoreError) -> (stored: StoredDirectMessage, isNew: Bool) {
        try store(batch: [message])[0].get()
    }
}
