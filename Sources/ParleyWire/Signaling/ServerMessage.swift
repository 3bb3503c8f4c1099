/// Messages the relay sends to a client.
public enum ServerMessage: Sendable, Equatable {
    /// The join succeeded.
    case joined(JoinedRoom)
    /// Someone entered the room.
    case memberJoined(MemberJoined)
    /// Someone left, and why.
    case memberLeft(MemberLeft)
    /// A member's microphone/camera state.
    case mute(MemberMute)
    /// A chat line, in room order.
    case chat(ChatDelivery)
    /// What a member reports sending.
    case stats(MemberStats)
    /// A member's role changed.
    case role(MemberRoleChange)
    /// Answer to `ping`.
    case pong(KeepAlive)
    /// Something the client sent was refused; the connection stays open.
    case error(SignalingError)
    /// Answer to `challenge`.
    case challenge(AccessChallenge)
    /// The room has a new host.
    case host(MemberRef)
    /// To the host: an audience member asks to broadcast.
    case hand(MemberRef)
    /// To a member the host removed, just before the relay closes its connection.
    case removed(Removal)
    /// The room's kept chat from before this member joined.
    case chatHistory(ChatHistory)
    /// To a sender: which of its video layers somebody receives.
    case videoLayers(VideoLayerDemand)
    /// The room's dominant speaker changed.
    case dominantSpeaker(DominantSpeakerNotice)
    /// To a receiver with a limited downlink: the senders it gets less of, and how much.
    case videoHeld(VideoHeld)
    /// Answer to a join: the room lives on another node of the relay's cluster; join there.
    case redirect(Redirect)
    /// To a member in a call: this node is draining; resume the membership through the node named (the room
    /// spans the cluster's nodes).
    case move(Redirect)
    /// A member started or stopped recording the call.
    case recording(RecordingNotice)
    /// The room's rule on recording changed.
    case recordingPolicy(RecordingPolicy)

    /// To a shared terminal: its sharer gives typing to a member, or takes it back (`from` says who asked).
    case control(ControlGrant)
    /// To a shared terminal: keys from a member (`from`).
    case typing(TerminalTyping)
    /// Who may type in a shared terminal now.
    case controller(ControllerChange)
    /// To a browser member: which peer each of its receive transceivers carries.
    case slots(BrowserSlots)
    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program). Payloads that are `ValidatedPayload` (video-layers, video-held) are checked after decoding.
    static let wire = WireTable<ServerMessage>(
        [
            .payload("joined", Self.joined),
            .payload("member-joined", Self.memberJoined),
            .payload("member-left", Self.memberLeft),
            .payload("mute", Self.mute),
            .payload("chat", Self.chat),
            .payload("stats", Self.stats),
            .payload("role", Self.role),
            .payload("pong", Self.pong),
            .payload("error", Self.error),
            .payload("challenge", Self.challenge),
            .payload("host", Self.host),
            .payload("hand", Self.hand),
            .payload("removed", Self.removed),
            .payload("chat-history", Self.chatHistory),
            .payload("video-layers", Self.videoLayers),
            .payload("dominant-speaker", Self.dominantSpeaker),
            .payload("video-held", Self.videoHeld),
            .payload("redirect", Self.redirect),
            .payload("move", Self.move),
            .payload("recording", Self.recording),
            .payload("recording-policy", Self.recordingPolicy),
            .payload("control", Self.control),
            .payload("typing", Self.typing),
            .payload("controller", Self.controller),
            .payload("slots", Self.slots),
        ],
        unknownType: { type, _ in "unknown message type \"\(type)\"" })

    /// The wire `type` of this message.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one message from JSON text, with an error that says exactly what was wrong.
    public static func decode(_ text: String) throws(SignalingError) -> ServerMessage { try wire.decode(text) }
}
