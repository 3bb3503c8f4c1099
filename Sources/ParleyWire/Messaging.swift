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
    public init(sequence: Int64, id: String, from: String, to: String, sealed: String, sentAt: Int64,
                delivered: Bool = false, read: Bool = false, senderCopy: String? = nil) {
        self.senderCopy = senderCopy
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
    public init(name: String, online: Bool, lastSeen: Int64?) {
        self.name = name
        self.online = online
        self.lastSeen = lastSeen
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

/// What a client sends on the messaging connection.
public enum MessagingRequest: Sendable, Equatable {
    case login(AccountCard)
    case proof(LoginProof)
    case send(DirectMessageSend)
    case received(DeliveryReceipt)
    case keys(AccountRef)
    case presence(AccountRef)
    case history(HistoryQuery)
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
        case "pong": return .pong(try message.payload(KeepAlive.self))
        case "error": return .error(try message.payload(SignalingError.self))
        default:
            throw SignalingError(.unknownType, "unknown messaging type \"\(message.type.prefix(40))\"")
        }
    }
}
