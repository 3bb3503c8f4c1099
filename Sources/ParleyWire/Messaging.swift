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
    public init(sequence: Int64, id: String, from: String, to: String, sealed: String, sentAt: Int64,
                delivered: Bool = false, read: Bool = false, senderCopy: String? = nil, inHistory: Bool? = nil) {
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
    public init(channel: String, sequence: Int64, id: String, from: String, kind: String, text: String, sentAt: Int64,
                members: Int? = nil, inHistory: Bool? = nil) {
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
    public init(kind: String, name: String, unread: Int, lastAt: Int64, lastMessage: DirectMessageDelivery? = nil,
                lastPost: ChannelPostDelivery? = nil) {
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

/// What a client sends on the messaging connection.
public enum MessagingRequest: Sendable, Equatable {
    case login(AccountCard)
    case proof(LoginProof)
    case send(DirectMessageSend)
    case received(DeliveryReceipt)
    case keys(AccountRef)
    case presence(AccountRef)
    case history(HistoryQuery)
    case read(ReadMark)
    case joinChannel(ChannelRef)
    case leaveChannel(ChannelRef)
    case members(ChannelRef)
    case channelPost(ChannelPostSend)
    case channelHistory(ChannelHistoryQuery)
    case channelRead(ChannelReadMark)
    case conversations(ConversationsQuery)
    case watch(WatchList)
    case ping(KeepAlive)

    public var type: String {
        switch self {
        case .login: "login"
        case .proof: "proof"
        case .send: "send"
        case .received: "received"
        case .keys: "keys"
        case .presence: "presence"
        case .history: "history"
        case .read: "read"
        case .joinChannel: "join-channel"
        case .leaveChannel: "leave-channel"
        case .members: "members"
        case .channelPost: "channel-post"
        case .channelHistory: "channel-history"
        case .channelRead: "channel-read"
        case .conversations: "conversations"
        case .watch: "watch"
        case .ping: "ping"
        }
    }

    private var payload: any Encodable {
        switch self {
        case .login(let value): value
        case .proof(let value): value
        case .send(let value): value
        case .received(let value): value
        case .keys(let value): value
        case .presence(let value): value
        case .history(let value): value
        case .read(let value): value
        case .joinChannel(let value): value
        case .leaveChannel(let value): value
        case .members(let value): value
        case .channelPost(let value): value
        case .channelHistory(let value): value
        case .channelRead(let value): value
        case .conversations(let value): value
        case .watch(let value): value
        case .ping(let value): value
        }
    }

    /// The message as compact JSON text.
    public func encoded() -> String { encodeSignaling(type: type, payload: payload) }

    /// Parses one request, with an error that says what was wrong and which limit it broke.
    public static func decode(_ text: String) throws(SignalingError) -> MessagingRequest {
        let message = try SignalingMessage(text)
        switch message.type {
        case "login": return .login(try message.payload(AccountCard.self))
        case "proof": return .proof(try message.payload(LoginProof.self))
        case "send":
            let send = try message.payload(DirectMessageSend.self)
            guard (1...maxMessageIDCharacters).contains(send.id.count) else {
                throw SignalingError(.badField, "send \"id\" has \(send.id.count) characters; it must have 1 to \(maxMessageIDCharacters)")
            }
            guard let sealed = Data(base64Encoded: send.sealed), !sealed.isEmpty else {
                throw SignalingError(.badField, "send \"sealed\" must be base64 of the sealed message")
            }
            guard sealed.count <= maxSealedMessageBytes else {
                throw SignalingError(.tooLarge, "the message is \(sealed.count) bytes sealed; the limit is \(maxSealedMessageBytes)")
            }
            if let copy = send.senderCopy {
                guard let bytes = Data(base64Encoded: copy), !bytes.isEmpty, bytes.count <= maxSealedMessageBytes else {
                    throw SignalingError(.badField, "send \"senderCopy\" must be base64 of at most \(maxSealedMessageBytes) bytes")
                }
            }
            return .send(send)
        case "received":
            let receipt = try message.payload(DeliveryReceipt.self)
            guard receipt.sequences.count <= maxMessagesPerPage else {
                throw SignalingError(.tooLarge, "received lists \(receipt.sequences.count) messages; at most \(maxMessagesPerPage)")
            }
            return .received(receipt)
        case "keys": return .keys(try message.payload(AccountRef.self))
        case "presence": return .presence(try message.payload(AccountRef.self))
        case "history":
            let query = try message.payload(HistoryQuery.self)
            guard (1...maxMessagesPerPage).contains(query.limit) else {
                throw SignalingError(.badField, "history \"limit\" must be 1 to \(maxMessagesPerPage), got \(query.limit)")
            }
            return .history(query)
        case "read": return .read(try message.payload(ReadMark.self))
        case "join-channel": return .joinChannel(try message.payload(ChannelRef.self))
        case "leave-channel": return .leaveChannel(try message.payload(ChannelRef.self))
        case "members": return .members(try message.payload(ChannelRef.self))
        case "channel-post":
            let post = try message.payload(ChannelPostSend.self)
            guard (1...maxMessageIDCharacters).contains(post.id.count) else {
                throw SignalingError(.badField, "channel-post \"id\" has \(post.id.count) characters; it must have 1 to \(maxMessageIDCharacters)")
            }
            guard post.text.contains(where: { !$0.isWhitespace }) else {
                throw SignalingError(.badField, "channel-post \"text\" is empty")
            }
            guard post.text.count <= maxChannelPostCharacters else {
                throw SignalingError(.tooLarge, "the channel message has \(post.text.count) characters; the limit is \(maxChannelPostCharacters)")
            }
            return .channelPost(post)
        case "channel-history":
            let query = try message.payload(ChannelHistoryQuery.self)
            guard (1...maxMessagesPerPage).contains(query.limit) else {
                throw SignalingError(.badField, "channel-history \"limit\" must be 1 to \(maxMessagesPerPage), got \(query.limit)")
            }
            return .channelHistory(query)
        case "channel-read": return .channelRead(try message.payload(ChannelReadMark.self))
        case "conversations":
            let query = try message.payload(ConversationsQuery.self)
            guard (1...maxMessagesPerPage).contains(query.limit) else {
                throw SignalingError(.badField, "conversations \"limit\" must be 1 to \(maxMessagesPerPage), got \(query.limit)")
            }
            return .conversations(query)
        case "watch":
            let list = try message.payload(WatchList.self)
            guard list.names.count <= maxWatchedNames else {
                throw SignalingError(.tooLarge, "watch lists \(list.names.count) accounts; at most \(maxWatchedNames)")
            }
            return .watch(list)
        case "ping": return .ping(try message.payload(KeepAlive.self))
        default:
            throw SignalingError(.unknownType, "unknown messaging type \"\(message.type.prefix(40))\"")
        }
    }
}

/// What the relay sends on the messaging connection.
public enum MessagingEvent: Sendable, Equatable {
    case challenge(LoginChallenge)
    case loggedIn(LoggedIn)
    case stored(MessageStored)
    case message(DirectMessageDelivery)
    case keys(AccountCard)
    case presence(PresenceAnswer)
    case historyEnd(HistoryEnd)
    case receipt(MessageReceipt)
    case channelPost(ChannelPostDelivery)
    case channelStored(ChannelPostStored)
    case members(ChannelMembers)
    case channelHistoryEnd(ChannelHistoryEnd)
    case conversation(ConversationLine)
    case conversationsEnd(ConversationsEnd)
    case pong(KeepAlive)
    case error(SignalingError)

    public var type: String {
        switch self {
        case .challenge: "challenge"
        case .loggedIn: "logged-in"
        case .stored: "stored"
        case .message: "message"
        case .keys: "keys"
        case .presence: "presence"
        case .historyEnd: "history-end"
        case .receipt: "receipt"
        case .channelPost: "channel-post"
        case .channelStored: "channel-stored"
        case .members: "members"
        case .channelHistoryEnd: "channel-history-end"
        case .conversation: "conversation"
        case .conversationsEnd: "conversations-end"
        case .pong: "pong"
        case .error: "error"
        }
    }

    private var payload: any Encodable {
        switch self {
        case .challenge(let value): value
        case .loggedIn(let value): value
        case .stored(let value): value
        case .message(let value): value
        case .keys(let value): value
        case .presence(let value): value
        case .historyEnd(let value): value
        case .receipt(let value): value
        case .channelPost(let value): value
        case .channelStored(let value): value
        case .members(let value): value
        case .channelHistoryEnd(let value): value
        case .conversation(let value): value
        case .conversationsEnd(let value): value
        case .pong(let value): value
        case .error(let value): value
        }
    }

    /// The message as compact JSON text.
    public func encoded() -> String { encodeSignaling(type: type, payload: payload) }

    /// Parses one event.
    public static func decode(_ text: String) throws(SignalingError) -> MessagingEvent {
        let message = try SignalingMessage(text)
        switch message.type {
        case "challenge": return .challenge(try message.payload(LoginChallenge.self))
        case "logged-in": return .loggedIn(try message.payload(LoggedIn.self))
        case "stored": return .stored(try message.payload(MessageStored.self))
        case "message": return .message(try message.payload(DirectMessageDelivery.self))
        case "keys": return .keys(try message.payload(AccountCard.self))
        case "presence": return .presence(try message.payload(PresenceAnswer.self))
        case "history-end": return .historyEnd(try message.payload(HistoryEnd.self))
        case "receipt": return .receipt(try message.payload(MessageReceipt.self))
        case "channel-post": return .channelPost(try message.payload(ChannelPostDelivery.self))
        case "channel-stored": return .channelStored(try message.payload(ChannelPostStored.self))
        case "members": return .members(try message.payload(ChannelMembers.self))
        case "channel-history-end": return .channelHistoryEnd(try message.payload(ChannelHistoryEnd.self))
        case "conversation": return .conversation(try message.payload(ConversationLine.self))
        case "conversations-end": return .conversationsEnd(try message.payload(ConversationsEnd.self))
        case "pong": return .pong(try message.payload(KeepAlive.self))
        case "error": return .error(try message.payload(SignalingError.self))
        default:
            throw SignalingError(.unknownType, "unknown messaging type \"\(message.type.prefix(40))\"")
        }
    }
}
