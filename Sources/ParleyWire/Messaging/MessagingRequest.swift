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

    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program). Payloads that are `ValidatedPayload` (send, received, the page queries, channel-post,
    /// watch) are checked after decoding.
    static let wire = WireTable<MessagingRequest>(
        [
            .payload("login", Self.login),
            .payload("proof", Self.proof),
            .payload("send", Self.send),
            .payload("received", Self.received),
            .payload("keys", Self.keys),
            .payload("presence", Self.presence),
            .payload("history", Self.history),
            .payload("read", Self.read),
            .payload("join-channel", Self.joinChannel),
            .payload("leave-channel", Self.leaveChannel),
            .payload("members", Self.members),
            .payload("channel-post", Self.channelPost),
            .payload("channel-history", Self.channelHistory),
            .payload("channel-read", Self.channelRead),
            .payload("conversations", Self.conversations),
            .payload("watch", Self.watch),
            .payload("ping", Self.ping),
        ],
        unknownType: { type, _ in "unknown messaging type \"\(type.prefix(40))\"" })

    /// The wire `type` of this request.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one request, with an error that says what was wrong and which limit it broke.
    public static func decode(_ text: String) throws(SignalingError) -> MessagingRequest { try wire.decode(text) }
}
