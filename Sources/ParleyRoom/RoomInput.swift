/// Why a participant left.
public enum OfflineReason: String, Hashable, Sendable {
    /// They left the call.
    case quit
    /// The relay stopped hearing from them.
    case timeout
    /// Their connection dropped.
    case dropped
    /// The host removed them.
    case removed
}

/// A connection alert from the call engine; each one is also written to the chat pane.
public enum RoomAlert: Hashable, Sendable {
    /// The connection to the relay stalled; the engine keeps trying.
    case interrupted
    /// The engine is reconnecting.
    case reconnecting
    /// Back in the room after an interruption.
    case reconnected
    /// The connection is gone for good.
    case lost
    /// Any other message the engine wants the user to see (camera missing, …).
    case message(String)
}

/// How the call is protected, for the header.
public struct CallSecurity: Hashable, Sendable {
    /// Signaling runs over plain `ws://` (`--insecure`): anyone on the path reads it.
    public var insecureTransport: Bool
    /// The end-to-end encryption mode ("AES-128-GCM"), nil for none.
    public var encryption: String?
    /// The code members compare by voice to know they share the room secret.
    public var safetyCode: String?

    /// A description.
    public init(insecureTransport: Bool = false, encryption: String? = nil, safetyCode: String? = nil) {
        self.insecureTransport = insecureTransport
        self.encryption = encryption
        self.safetyCode = safetyCode
    }
}

/// Something the call engine reports to the room.
public enum RoomEvent: Hashable, Sendable {
    /// The local user is in the room with this relay-assigned id.
    case joined(localID: ParticipantID)
    /// Joining failed; `reason` says why ("relay refused: room full").
    case joinFailed(reason: String)
    /// A participant arrived (also sent for everyone already present at join, with how long each has been in the
    /// room as the relay counts it).
    case userJoined(ParticipantID, name: String, role: Role, inCallFor: Duration? = nil)
    /// A participant left.
    case userOffline(ParticipantID, reason: OfflineReason)
    /// A participant is a terminal `owner` shares (`parley share`), not a person.
    case sharesTerminal(ParticipantID, owner: String)
    /// The member who may type in a shared terminal now (nil: nobody).
    case shareController(ParticipantID, controller: ParticipantID?)
    /// The local camera produced its first frame.
    case firstLocalFrame(VideoSize)
    /// The first frame of a participant's video was decoded.
    case firstRemoteFrame(ParticipantID, size: VideoSize)
    /// A participant turned their camera off (true) or on (false).
    case remoteVideoMuted(ParticipantID, Bool)
    /// A participant muted (true) or unmuted (false) their microphone.
    case remoteAudioMuted(ParticipantID, Bool)
    /// New receive statistics for a participant.
    case remoteStats(ParticipantID, MediaInfo)
    /// New send statistics for the local user.
    case localStats(MediaInfo)
    /// A participant's current speaking level, 0…1.
    case audioLevel(ParticipantID, Double)
    /// The relay picked the room's dominant speaker (nil: nobody yet).
    case dominantSpeaker(ParticipantID?)
    /// A chat message arrived (messages from the local id are the relay's echo and are ignored).
    case chatMessage(from: ParticipantID, text: String)
    /// A connection alert.
    case alert(RoomAlert)
    /// A participant (possibly the local user) became a broadcaster or audience member.
    case roleChanged(ParticipantID, Role)
    /// The local microphone's level, 0…1, for the meter on the own tile (sent only for a real microphone; nil
    /// takes the meter away, e.g. after the microphone failed).
    case microphoneLevel(Double?)
    /// A short-lived status-line notice ("Camera: Integrated Webcam").
    case notice(String)
    /// The local camera stopped and nothing else can stand in: the camera is now off; the text says why.
    case cameraStopped(String)
    /// The room's host is now this participant (possibly the local user).
    case hostChanged(ParticipantID)
    /// To the host: an audience member asks to broadcast.
    case handRaised(ParticipantID)
    /// The host removed the local user from the room; the text says so. The call is over.
    case removedFromRoom(String)
    /// How the call is protected (sent once joined).
    case security(CallSecurity)
    /// Media goes over the relay's TLS connection because UDP did not get through (true), or is back on UDP.
    case mediaOverTCP(Bool)
    /// A participant's media and chat stopped (true) or started again (false) decrypting with our room secret.
    case cannotDecrypt(ParticipantID, Bool)
    /// A line posted in the room's channel by someone outside the call (`sender` as shown, marked verified).
    case channelMessage(sender: String, text: String)
    /// The room's kept chat from before joining, oldest first (shown above what arrived since).
    case earlierChat([ChatEntry])
    /// A direct message arrived (or one of ours sent from another device): `peer` is the other account.
    case directMessage(peer: String, sender: String, text: String)
    /// The newest lines of the direct conversation with `peer`, oldest first (the answer to `openDirect`).
    case directConversation(peer: String, [ChatEntry])
    /// Direct messages cannot be used now, or one was not sent; the text says why.
    case directProblem(String)
    /// A member started (true) or stopped recording; `encrypted`: the room is end-to-end encrypted, so the file is
    /// that member's decrypted view.
    case recording(ParticipantID, name: String, active: Bool, encrypted: Bool)
    /// Whether members may record the room: nil, or why not ("alice forbade it"); `by`: the host who just changed
    /// it (nil: as the room was when joined).
    case recordingRule(forbidden: String?, by: String?)
}

/// Everything the reducer accepts: engine events, key presses, clock ticks and the video area's position.
public enum RoomInput: Hashable, Sendable {
    /// An engine event.
    case event(RoomEvent)
    /// A key or mouse action at a time on the injected clock (time since the client started).
    case key(Key, at: Duration)
    /// The clock moved on (expires the double-key window and notices; drives the call timer).
    case tick(Duration)
    /// Where the video tiles are drawn on screen; mouse hit-tests and tile numbers use it. The shell sends it
    /// whenever the screen size or the visible chrome changes.
    case container(CellRect)
    /// The whole screen's size in cells (overlays scroll within it). The shell sends it with `container`.
    case screen(columns: Int, rows: Int)
}

/// Work the reducer asks the call engine or the shell to do.
public enum RoomEffect: Hashable, Sendable {
    /// Let a member type in the terminal this member shares (nil: nobody).
    case grantControl(terminal: ParticipantID, to: ParticipantID?)
    /// Keys for a shared terminal this member was let type in.
    case typeIntoShare(ParticipantID, [UInt8])
    /// Stop (true) or resume (false) sending microphone audio.
    case setMicrophoneMuted(Bool)
    /// Start (true) or stop (false) sending camera video.
    case setCameraEnabled(Bool)
    /// Switch to the next camera.
    case switchCamera
    /// Play (true) or silence (false) call audio.
    case setSpeakerEnabled(Bool)
    /// Apply (true) or remove (false) the video filter on outgoing video.
    case setFilter(Bool)
    /// Become a broadcaster or an audience member.
    case setRole(Role)
    /// Send a chat message to the room.
    case sendChat(String)
    /// Ask a participant for a key frame (their video just resumed).
    case requestKeyframe(ParticipantID)
    /// Host only: let an audience member broadcast.
    case allowBroadcast(ParticipantID)
    /// Host only: remove a participant from the room.
    case removeParticipant(ParticipantID)
    /// Host only: let someone removed (by this name) join again.
    case readmit(String)
    /// Leave the call and close the room screen.
    case leave
    /// Load the direct conversation with an account (its lines come back as `directConversation`).
    case openDirect(String)
    /// Send a direct message to an account.
    case sendDirect(to: String, text: String)
    /// Open the messages screen over the call (the call goes on).
    case openMessages
    /// Put text on the user's clipboard (the terminal's, through OSC 52).
    case copyToClipboard(String)
    /// Start (true) or stop (false) recording the call.
    case setRecording(Bool)
    /// Host only: allow (true) or forbid (false) recording in the room.
    case setRecordingAllowed(Bool)
}
