import Foundation

// The relay's messaging connection (WebSocket path `/parley/messages`), beside the call signaling on `/parley`: an
// account logs in by signing the relay's challenge, then sends sealed direct messages (acknowledged only once
// stored), receives its own (live, or at login those stored while it was away), and looks up keys, presence and
// history. Same envelope as signaling: one JSON object with "v" and "type", the payload's fields beside them.

/// The longest sealed direct message, in bytes before base64 (about 8,000 characters of text after sealing).
public let maxSealedMessageBytes = 8 * 1024
/// The longest message id a sender may choose.
public let maxMessageIDCharacters = 64
/// Most messages in one delivery batch or history page.
public let maxMessagesPerPage = 200

/// An account's name and public keys: what a client logs in with (creating the account on first use), and what
/// the relay answers a key lookup with.
public struct AccountCard: Codable, Sendable, Equatable {
    public var name: String
    /// Ed25519 public key, base64.
    public var signingKey: String
    /// X25519 public key, base64.
    public var agreementKey: String

    public init(name: String, signingKey: String, agreementKey: String) {
        self.name = name
        self.signingKey = signingKey
        self.agreementKey = agreementKey
    }
}

/// The relay's challenge, to be signed with the account's key.
public struct LoginChallenge: Codable, Sendable, Equatable {
    /// 32 random bytes, base64.
    public var nonce: String
    public init(nonce: String) { self.nonce = nonce }
}

/// The signature of the login message (`AccountIdentity.loginMessage`), base64.
public struct LoginProof: Codable, Sendable, Equatable {
    public var signature: String
    public init(signature: String) { self.signature = signature }
}

/// Logged in.
public struct LoggedIn: Codable, Sendable, Equatable {
    public var name: String
    /// True when this login bound the name to its keys.
    public var created: Bool
    /// Messages stored while the account was away, delivered next.
    public var waiting: Int
    public init(name: String, created: Bool, waiting: Int) {
        self.name = name
        self.created = created
        self.waiting = waiting
    }
}

/// A direct message to send, sealed to the recipient (`DirectMessageSeal`).
public struct DirectMessageSend: Codable, Sendable, Equatable {
    /// Sender-chosen id (1…64 characters): a retry with the same id is the same message.
    public var id: String
    public var to: String
    /// Sealed bytes, base64.
    public var sealed: String
    /// The same text sealed to the sender's own key, base64: the relay returns it only to the sender, so its own
    /// messages read in history on any of its computers.
    public var senderCopy: String?
    public init(id: String, to: String, sealed: String, senderCopy: String? = nil) {
        self.id = id
        self.to = to
        self.sealed = sealed
        self.senderCopy = senderCopy
    }
}

extension DirectMessageSend: ValidatedPayload {
    /// An id of 1…`maxMessageIDCharacters` characters; sealed bytes, and the sender's copy, base64 of at most
    /// `maxSealedMessageBytes`.
    func validated() throws(SignalingError) -> DirectMessageSend {
        guard (1...maxMessageIDCharacters).contains(id.count) else {
            throw SignalingError(
                .badField, "send \"id\" has \(id.count) characters; it must have 1 to \(maxMessageIDCharacters)")
        }
        guard let bytes = Data(base64Encoded: sealed), !bytes.isEmpty else {
            throw SignalingError(.badField, "send \"sealed\" must be base64 of the sealed message")
        }
        guard bytes.count <= maxSealedMessageBytes else {
            throw SignalingError(
                .tooLarge, "the message is \(bytes.count) bytes sealed; the limit is \(maxSealedMessageBytes)")
        }
        if let senderCopy {
            guard let copy = Data(base64Encoded: senderCopy), !copy.isEmpty, copy.count <= maxSealedMessageBytes else {
                throw SignalingError(
                    .badField, "send \"senderCopy\" must be base64 of at most \(maxSealedMessageBytes) bytes")
            }
        }
        return self
    }
}

/// The relay committed a message: from now on it is never lost.
public struct MessageStored: Codable, Sendable, Equatable {
    public var id: String
    public var sequence: Int64
    public init(id: String, sequence: Int64) {
        self.id = id
        self.sequence = sequence
    }
}

/// A direct message delivered (live, at login, or in a history page).
public struct DirectMessageDelivery: Codable, Sendable, Equatable {
    public var sequence: Int64
    public var id: String
    public var from: String
    public var to: String
    /// Sealed bytes, base64.
    public var sealed: String
    /// When the relay received it, milliseconds since 1970.
    public var sentAt: Int64
    public var delivered: Bool
    public var read: Bool
    /// To the sender only (history): its own copy, sealed to itself.
    public var senderCopy: String?
    /// True in an answer to `history` (never for a live or waiting message), so a client tells them apart.
    public var inHistory: Bool?
    public init(
        sequence: Int64, id: String, from: String, to: String, sealed: String, sentAt: Int64,
        delivered: Bool = false, read: Bool = false, senderCopy: String? = nil, inHistory: Bool? = nil
    ) {
        self.senderCopy = senderCopy
        self.inHistory = inHistory
        self.sequence = sequence
        self.id = id
        self.from = from
        self.to = to
        self.sealed = sealed
        self.sentAt = sentAt
        self.delivered = delivered
        self.read = read
    }
}

/// The recipient got these messages (by sequence): the relay stops redelivering them.
public struct DeliveryReceipt: Codable, Sendable, Equatable {
    public var sequences: [Int64]
    public init(sequences: [Int64]) { self.sequences = sequences }
}

extension DeliveryReceipt: ValidatedPayload {
    /// At most `maxMessagesPerPage` sequences.
    func validated() throws(SignalingError) -> DeliveryReceipt {
        guard sequences.count <= maxMessagesPerPage else {
            throw SignalingError(
                .tooLarge, "received lists \(sequences.count) messages; at most \(maxMessagesPerPage)")
        }
        return self
    }
}

/// One account, by name.
public struct AccountRef: Codable, Sendable, Equatable {
    public var name: String
    public init(name: String) { self.name = name }
}

/// Whether an account is online, and if not when it was last.
public struct PresenceAnswer: Codable, Sendable, Equatable {
    public var name: String
    public var online: Bool
    /// Milliseconds since 1970, nil if never seen or online now.
    public var lastSeen: Int64?
    /// In a call joined as this account (`online` is then true too).
    public var inCall: Bool?
    /// Which room, unless the account hides it.
    public var room: String?
    public init(name: String, online: Bool, lastSeen: Int64?, inCall: Bool? = nil, room: String? = nil) {
        self.name = name
        self.online = online
        self.lastSeen = lastSeen
        self.inCall = inCall
        self.room = room
    }

    /// "online", "in a call (standup)", "in a call", "offline, last seen …" without the time's formatting.
    public var state: String {
        if inCall == true { return room.map { "in a call (\($0))" } ?? "in a call" }
        return online ? "online" : "offline"
    }
}

/// A page of the conversation with `peer`, newest first, older than `before`.
public struct HistoryQuery: Codable, Sendable, Equatable {
    public var peer: String
    public var before: Int64?
    public var limit: Int
    public init(peer: String, before: Int64? = nil, limit: Int = 50) {
        self.peer = peer
        self.before = before
        self.limit = limit
    }
}

extension HistoryQuery: ValidatedPayload {
    /// A page of 1…`maxMessagesPerPage` messages.
    func validated() throws(SignalingError) -> HistoryQuery {
        guard (1...maxMessagesPerPage).contains(limit) else {
            throw SignalingError(.badField, "history \"limit\" must be 1 to \(maxMessagesPerPage), got \(limit)")
        }
        return self
    }
}

/// The end of a history answer: its messages came just before as `message` events, newest first (each event stays
/// under the message size limit however long the page).
public struct HistoryEnd: Codable, Sendable, Equatable {
    public var peer: String
    public var count: Int
    public init(peer: String, count: Int) {
        self.peer = peer
        self.count = count
    }
}

/// The longest channel message, in characters (like a call's chat line).
public let maxChannelPostCharacters = 2000
/// Most names one presence watch list may hold.
public let maxWatchedNames = 200

/// The reader has read the conversation with `peer` up to `through` (a sequence): the relay records it and tells
/// the sender (a read receipt).
public struct ReadMark: Codable, Sendable, Equatable {
    public var peer: String
    public var through: Int64
    public init(peer: String, through: Int64) {
        self.peer = peer
        self.through = through
    }
}

/// Messages of this account that reached `by` (delivered) or that `by` read: a live receipt.
public struct MessageReceipt: Codable, Sendable, Equatable {
    public var by: String
    public var sequences: [Int64]
    /// True: read; false: delivered.
    public var read: Bool
    public init(by: String, sequences: [Int64], read: Bool) {
        self.by = by
        self.sequences = sequences
        self.read = read
    }
}

/// One channel, by name.
public struct ChannelRef: Codable, Sendable, Equatable {
    public var channel: String
    public init(channel: String) { self.channel = channel }
}

/// A message to post in a channel the account is a member of.
public struct ChannelPostSend: Codable, Sendable, Equatable {
    public var channel: String
    /// Sender-chosen id (1…64 characters): a retry is never a duplicate.
    public var id: String
    public var text: String
    public init(channel: String, id: String, text: String) {
        self.channel = channel
        self.id = id
        self.text = text
    }
}

extension ChannelPostSend: ValidatedPayload {
    /// An id of 1…`maxMessageIDCharacters` characters; text of 1…`maxChannelPostCharacters`, not only whitespace.
    func validated() throws(SignalingError) -> ChannelPostSend {
        guard (1...maxMessageIDCharacters).contains(id.count) else {
            throw SignalingError(
                .badField,
                "channel-post \"id\" has \(id.count) characters; it must have 1 to \(maxMessageIDCharacters)")
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw SignalingError(.badField, "channel-post \"text\" is empty")
        }
        guard text.count <= maxChannelPostCharacters else {
            throw SignalingError(
                .tooLarge,
                "the channel message has \(text.count) characters; the limit is \(maxChannelPostCharacters)")
        }
        return self
    }
}

/// A channel line: a message, or a member joining or leaving (the activity lines are part of the history).
public struct ChannelPostDelivery: Codable, Sendable, Equatable {
    public var channel: String
    public var sequence: Int64
    public var id: String
    public var from: String
    /// "message", "joined" or "left".
    public var kind: String
    public var text: String
    /// Milliseconds since 1970.
    public var sentAt: Int64
    /// Members after a joined or left line.
    public var members: Int?
    /// True in an answer to `channel-history` (never for a live line).
    public var inHistory: Bool?
    public init(
        channel: String, sequence: Int64, id: String, from: String, kind: String, text: String, sentAt: Int64,
        members: Int? = nil, inHistory: Bool? = nil
    ) {
        self.inHistory = inHistory
        self.channel = channel
        self.sequence = sequence
        self.id = id
        self.from = from
        self.kind = kind
        self.text = text
        self.sentAt = sentAt
        self.members = members
    }
}

/// The relay committed a channel message.
public struct ChannelPostStored: Codable, Sendable, Equatable {
    public var channel: String
    public var id: String
    public var sequence: Int64
    public init(channel: String, id: String, sequence: Int64) {
        self.channel = channel
        self.id = id
        self.sequence = sequence
    }
}

/// A channel's members: the answer to join, leave and members.
public struct ChannelMembers: Codable, Sendable, Equatable {
    public var channel: String
    public var count: Int
    /// The first members in order of joining (at most `maxMessagesPerPage`; empty after join and leave).
    public var names: [String]
    /// Whether the asking account is a member now.
    public var member: Bool
    public init(channel: String, count: Int, names: [String], member: Bool) {
        self.channel = channel
        self.count = count
        self.names = names
        self.member = member
    }
}

/// A page of a channel's history, newest first, older than `before`.
public struct ChannelHistoryQuery: Codable, Sendable, Equatable {
    public var channel: String
    public var before: Int64?
    public var limit: Int
    public init(channel: String, before: Int64? = nil, limit: Int = 50) {
        self.channel = channel
        self.before = before
        self.limit = limit
    }
}

extension ChannelHistoryQuery: ValidatedPayload {
    /// A page of 1…`maxMessagesPerPage` lines.
    func validated() throws(SignalingError) -> ChannelHistoryQuery {
        guard (1...maxMessagesPerPage).contains(limit) else {
            throw SignalingError(
                .badField, "channel-history \"limit\" must be 1 to \(maxMessagesPerPage), got \(limit)")
        }
        return self
    }
}

/// The end of a channel history answer (its lines came just before, newest first).
public struct ChannelHistoryEnd: Codable, Sendable, Equatable {
    public var channel: String
    public var count: Int
    public init(channel: String, count: Int) {
        self.channel = channel
        self.count = count
    }
}

/// The channel was read by this account up to `through`.
public struct ChannelReadMark: Codable, Sendable, Equatable {
    public var channel: String
    public var through: Int64
    public init(channel: String, through: Int64) {
        self.channel = channel
        self.through = through
    }
}

/// Asks for the conversation list, at most `limit` lines.
public struct ConversationsQuery: Codable, Sendable, Equatable {
    public var limit: Int
    public init(limit: Int = 50) { self.limit = limit }
}

extension ConversationsQuery: ValidatedPayload {
    /// 1…`maxMessagesPerPage` lines.
    func validated() throws(SignalingError) -> ConversationsQuery {
        guard (1...maxMessagesPerPage).contains(limit) else {
            throw SignalingError(
                .badField, "conversations \"limit\" must be 1 to \(maxMessagesPerPage), got \(limit)")
        }
        return self
    }
}

/// One line of the conversation list: a direct conversation (`lastMessage`, sealed) or a channel (`lastPost`).
public struct ConversationLine: Codable, Sendable, Equatable {
    /// "direct" or "channel".
    public var kind: String
    /// The peer's account or the channel's name.
    public var name: String
    public var unread: Int
    /// Milliseconds since 1970 of the last message (0 for an empty channel).
    public var lastAt: Int64
    public var lastMessage: DirectMessageDelivery?
    public var lastPost: ChannelPostDelivery?
    public init(
        kind: String, name: String, unread: Int, lastAt: Int64, lastMessage: DirectMessageDelivery? = nil,
        lastPost: ChannelPostDelivery? = nil
    ) {
        self.kind = kind
        self.name = name
        self.unread = unread
        self.lastAt = lastAt
        self.lastMessage = lastMessage
        self.lastPost = lastPost
    }
}

/// The end of the conversation list (its lines came just before, newest first).
public struct ConversationsEnd: Codable, Sendable, Equatable {
    public var count: Int
    public init(count: Int) { self.count = count }
}

/// Accounts whose presence this connection follows: the relay sends a `presence` event whenever one comes online
/// or goes offline (replacing the previous list).
public struct WatchList: Codable, Sendable, Equatable {
    public var names: [String]
    public init(names: [String]) { self.names = names }
}

extension WatchList: ValidatedPayload {
    /// At most `maxWatchedNames` names.
    func validated() throws(SignalingError) -> WatchList {
        guard names.count <= maxWatchedNames else {
            throw SignalingError(.tooLarge, "watch lists \(names.count) accounts; at most \(maxWatchedNames)")
        }
        return self
    }
}
