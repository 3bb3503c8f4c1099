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

    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program).
    static let wire = WireTable<MessagingEvent>(
        [
            .payload("challenge", Self.challenge),
            .payload("logged-in", Self.loggedIn),
            .payload("stored", Self.stored),
            .payload("message", Self.message),
            .payload("keys", Self.keys),
            .payload("presence", Self.presence),
            .payload("history-end", Self.historyEnd),
            .payload("receipt", Self.receipt),
            .payload("channel-post", Self.channelPost),
            .payload("channel-stored", Self.channelStored),
            .payload("members", Self.members),
            .payload("channel-history-end", Self.channelHistoryEnd),
            .payload("conversation", Self.conversation),
            .payload("conversations-end", Self.conversationsEnd),
            .payload("pong", Self.pong),
            .payload("error", Self.error),
        ],
        unknownType: { type, _ in "unknown messaging type \"\(type.prefix(40))\"" })

    /// The wire `type` of this event.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one event.
    public static func decode(_ text: String) throws(SignalingError) -> MessagingEvent { try wire.decode(text) }
}
