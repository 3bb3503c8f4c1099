// The room's chat: a line a client sends, the line the relay delivers in room order, and the kept history a
// joining member receives.

/// Longest chat line, in Unicode characters.
public let maxChatCharacters = 2000

/// Longest sealed chat line, in base64 characters: a full-length line of 4-byte characters plus SFrame overhead.
public let maxSealedChatCharacters = 11_000

/// A chat line a client sends: plain `text`, or `sealed` (end-to-end encrypted) with `text` empty.
public struct ChatSend: Codable, Sendable, Equatable {
    /// The text, 1…`maxChatCharacters` characters, not only whitespace; "" when sealed.
    public var text: String
    /// The sender's own reference, echoed back to it in the delivery.
    public var ref: String?
    /// The encrypted line (base64 SFrame), at most `maxSealedChatCharacters`.
    public var sealed: String?

    /// A chat line.
    public init(text: String, ref: String? = nil, sealed: String? = nil) {
        self.text = text
        self.ref = ref
        self.sealed = sealed
    }

    enum CodingKeys: String, CodingKey { case text, ref, sealed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sealed = try c.decodeIfPresent(String.self, forKey: .sealed)
        if let text = try c.decodeIfPresent(String.self, forKey: .text) {
            self.text = text
        } else if sealed != nil {
            text = ""
        } else {
            text = try c.decode(String.self, forKey: .text)  // missing: the usual "needs field" error
        }
        ref = try c.decodeIfPresent(String.self, forKey: .ref)
    }
}

/// A chat line as delivered by the relay: stamped with a room-wide sequence number so everyone sees one order.
public struct ChatDelivery: Codable, Sendable, Equatable {
    /// Room-wide sequence number, starting at 1.
    public var seq: UInt64
    /// Sender's member id.
    public var from: UInt32
    /// Sender's display name at the time.
    public var name: String
    /// The text ("" when the line is sealed).
    public var text: String
    /// Relay time, milliseconds since the Unix epoch.
    public var time: Int64
    /// The sender's own reference for the line, echoed back to the sender only.
    public var ref: String?
    /// The line end-to-end encrypted (base64 SFrame), which only members with the room secret can read.
    public var sealed: String?

    /// A chat delivery.
    public init(
        seq: UInt64, from: UInt32, name: String, text: String, time: Int64, ref: String? = nil,
        sealed: String? = nil
    ) {
        self.seq = seq
        self.from = from
        self.name = name
        self.text = text
        self.time = time
        self.ref = ref
        self.sealed = sealed
    }
}

/// The newest lines of a room's kept chat before this member joined, oldest first (sent after `joined`).
public struct ChatHistory: Codable, Sendable, Equatable {
    /// The room.
    public var room: String
    /// At most `ChatHistory.maximumLines`.
    public var lines: [ChatHistoryLine]

    /// Lines sent to a joining member.
    public static let maximumLines = 100

    /// A history answer.
    public init(room: String, lines: [ChatHistoryLine]) {
        self.room = room
        self.lines = lines
    }

    /// The newest of `lines` (oldest first) that fit one signaling message: a hundred lines of 2,000 characters
    /// would be far past `maxSignalingMessageBytes`, which every client refuses.
    public static func fitting(room: String, lines: [ChatHistoryLine]) -> ChatHistory {
        var history = ChatHistory(room: room, lines: Array(lines.suffix(maximumLines)))
        while !history.lines.isEmpty, ServerMessage.chatHistory(history).encoded().utf8.count > maxSignalingMessageBytes
        {
            history.lines.removeFirst(max(1, history.lines.count / 4))
        }
        return history
    }
}

/// One kept line of a room's chat: a message, or someone joining or leaving the call.
public struct ChatHistoryLine: Codable, Sendable, Equatable {
    /// "message", "call-joined" or "call-left" (a channel's own "joined"/"left" too).
    public var kind: String
    /// Who: an account name, or a guest's display name followed by " (guest)".
    public var from: String
    public var text: String
    /// Milliseconds since 1970.
    public var time: Int64
    /// Members in the call after a joined or left line.
    public var members: Int?

    /// A history line.
    public init(kind: String, from: String, text: String, time: Int64, members: Int? = nil) {
        self.kind = kind
        self.from = from
        self.text = text
        self.time = time
        self.members = members
    }

    /// The line in words, as the chat pane shows it.
    public var words: String {
        switch kind {
        case "call-joined": "\(from) joined the call" + (members.map { " (\($0) in the call)" } ?? "")
        case "call-left": "\(from) left the call" + (members.map { " (\($0) in the call)" } ?? "")
        case "joined": "\(from) joined the channel"
        case "left": "\(from) left the channel"
        default: "\(from): \(text)"
        }
    }
}

extension ChatSend: ValidatedPayload {
    /// Plain text of 1…`maxChatCharacters` characters, not only whitespace; or sealed, with no text.
    func validated() throws(SignalingError) -> ChatSend {
        if let sealed {
            guard text.isEmpty else {
                throw SignalingError(.badField, "chat has both \"text\" and \"sealed\"; a sealed line has no text")
            }
            guard !sealed.isEmpty, sealed.count <= maxSealedChatCharacters else {
                throw SignalingError(
                    .badField,
                    "chat \"sealed\" has \(sealed.count) characters; it must have 1 to \(maxSealedChatCharacters)")
            }
            return self
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw SignalingError(.badField, "chat \"text\" is empty")
        }
        guard text.count <= maxChatCharacters else {
            throw SignalingError(
                .badField, "chat \"text\" has \(text.count) characters; the limit is \(maxChatCharacters)")
        }
        return self
    }
}
