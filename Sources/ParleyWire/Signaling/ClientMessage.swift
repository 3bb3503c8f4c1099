/// Messages a client sends to the relay.
public enum ClientMessage: Sendable, Equatable {
    /// Enter a room. Must be the first message.
    case join(JoinRequest)
    /// Say goodbye; the relay tells the others the member quit.
    case leave
    /// Microphone and/or camera state changed.
    case mute(MuteChange)
    /// Send a chat line.
    case chat(ChatSend)
    /// Report what this client sends.
    case stats(SenderStats)
    /// Keep-alive; the relay answers `pong` with the same token.
    case ping(KeepAlive)
    /// Switch between broadcaster and audience (to broadcaster: only the host, or anyone in an open-stage room;
    /// otherwise the host is asked).
    case role(RoleRequest)
    /// Ask for a challenge to prove the room password with.
    case challenge
    /// Host only: let an audience member broadcast.
    case allow(MemberRef)
    /// Host only: remove a member from the room (they cannot join it again until readmitted).
    case remove(MemberRef)
    /// Host only: let a removed member join the room again.
    case readmit(Readmission)
    /// The pixel size this client draws each peer at, for the relay's choice of simulcast layers.
    case tiles(TileReport)
    /// The layers of this member's camera its uplink carries now, for the relay's choice of simulcast layers.
    case videoSending(VideoSending)
    /// This member starts or stops recording the call.
    case recording(RecordingChange)
    /// Host only: allow or forbid recording in the room.
    case recordingPolicy(RecordingPolicy)
    /// The sharer gives typing in their terminal to a member, or takes it back.
    case control(ControlGrant)
    /// Keys for a shared terminal, from the member it lets type.
    case typing(TerminalTyping)
    /// A shared terminal says who may type in it.
    case controller(ControllerChange)

    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program). Payloads that are `ValidatedPayload` (mute, chat, tiles, video-sending) are checked after
    /// decoding.
    static let wire = WireTable<ClientMessage>(
        [
            .payload("join", Self.join),
            .bare("leave", .leave),
            .payload("mute", Self.mute),
            .payload("chat", Self.chat),
            .payload("stats", Self.stats),
            .payload("ping", Self.ping),
            .payload("role", Self.role),
            .bare("challenge", .challenge),
            .payload("allow", Self.allow),
            .payload("remove", Self.remove),
            .payload("readmit", Self.readmit),
            .payload("tiles", Self.tiles),
            .payload("video-sending", Self.videoSending),
            .payload("recording", Self.recording),
            .payload("recording-policy", Self.recordingPolicy),
            .payload("control", Self.control),
            .payload("typing", Self.typing),
            .payload("controller", Self.controller),
        ],
        unknownType: { type, known in
            "unknown message type \"\(type)\"; expected \(known.dropLast().joined(separator: ", ")) or "
                + (known.last ?? "")
        })

    /// The wire `type` of this message.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one message from JSON text, with an error that says exactly what was wrong.
    public static func decode(_ text: String) throws(SignalingError) -> ClientMessage { try wire.decode(text) }
}
