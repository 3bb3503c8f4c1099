/// A participant's id as the relay assigns it; stable for the life of a call.
public struct ParticipantID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The relay's number for this participant.
    public let rawValue: UInt32

    /// Wraps a relay-assigned number.
    public init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The local user's id before the relay has assigned one (the relay never hands out 0).
    public static let unassigned = ParticipantID(0)

    /// Orders by the relay's number.
    public static func < (lhs: ParticipantID, rhs: ParticipantID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// "#17".
    public var description: String { "#\(rawValue)" }
}

/// Whether a participant sends media (broadcaster) or only watches (audience), as in a live broadcast.
public enum Role: String, Sendable, Hashable, CaseIterable {
    /// Sends audio and video; has a tile.
    case broadcaster
    /// Watches only; no tile.
    case audience
}

/// A video's size in pixels.
public struct VideoSize: Hashable, Sendable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A size in pixels; non-positive sizes are kept but have no aspect.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Width divided by height, or nil when either side is not positive.
    public var aspect: Double? {
        guard width > 0, height > 0 else { return nil }
        return Double(width) / Double(height)
    }
}

/// Media statistics for one participant's stream, as shown by the stats overlay.
public struct MediaInfo: Hashable, Sendable {
    /// Decoded (remote) or captured (local) resolution, if known.
    public var resolution: VideoSize?
    /// Frames per second.
    public var fps: Double
    /// Bitrate in kilobits per second.
    public var bitrateKbps: Double
    /// Packet loss in percent (0…100).
    public var lossPercent: Double
    /// Interarrival jitter (RFC 3550) in milliseconds; 0 when unknown or for the local stream.
    public var jitterMilliseconds: Double
    /// How long audio waits before it is heard: a remote member's jitter buffer, or the own speaker's device
    /// buffer; 0 when unknown.
    public var audioDelayMilliseconds: Double = 0
    /// Audio frames concealed in the last window (a remote member's packets missing or late).
    public var audioConcealed = 0
    /// Times the own speaker ran dry so far (the mix came late, or the sound server's device underran).
    public var speakerUnderruns = 0
    /// The own camera's layers being sent now, largest first (the relay asks only for those someone watches); nil
    /// for a remote member's stream, or when the camera is off.
    public var sentLayers: [VideoSize]? = nil
    /// The own uplink's estimate from the relay's feedback (kbit/s); nil for a remote member or before any.
    public var uplinkKbps: Double? = nil
    /// The own downlink's estimate from losses in what arrived (kbit/s); nil for a remote member or while losses
    /// showed no limit (the relay then holds the others' pictures within it).
    public var downlinkKbps: Double? = nil
    /// The rate the own camera's full layer is held to because the uplink has no room for the profile's (kbit/s);
    /// nil when it sends at the profile's rate, and for a remote member.
    public var heldToKbps: Int? = nil
    /// The picture the own camera's full layer is sent at while held (the profile's, or a half or quarter of it);
    /// for a remote member held back by the own downlink, the size of the layer the relay gives (nil: paused).
    public var heldToSize: VideoSize? = nil
    /// The own downlink's estimate (kbit/s) when it holds this remote member's video below what its tile asks for;
    /// nil when it does not.
    public var heldByDownlinkKbps: Int? = nil

    /// Statistics; all zero by default.
    public init(
        resolution: VideoSize? = nil, fps: Double = 0, bitrateKbps: Double = 0, lossPercent: Double = 0,
        jitterMilliseconds: Double = 0
    ) {
        self.resolution = resolution
        self.fps = fps
        self.bitrateKbps = bitrateKbps
        self.lossPercent = lossPercent
        self.jitterMilliseconds = jitterMilliseconds
    }
}

/// How far a participant's media has got: joined but silent, flowing, or waiting on a reconnect.
public enum SessionConnection: String, Sendable, Hashable {
    /// Present in the room, no media yet.
    case connecting
    /// Media is flowing.
    case connected
    /// The room connection is interrupted; media will resume after a reconnect.
    case reconnecting
}

/// What a tile shows: live video or a placeholder naming why there is none.
public enum TileContent: Hashable, Sendable {
    /// Live video.
    case video
    /// The participant turned their camera off.
    case videoOff
    /// The camera is on but no frame has arrived yet.
    case waitingForVideo
}

/// One participant in the room, local or remote: everything a tile and the stats overlay need.
public struct VideoSession: Hashable, Sendable, Identifiable {
    /// The relay's id (``ParticipantID/unassigned`` for the local user before the join completes).
    public var id: ParticipantID
    /// The name shown on the tile and in chat.
    public var name: String
    /// Broadcaster (has a tile) or audience (watches only).
    public var role: Role
    /// True for the user running this client.
    public var isLocal: Bool
    /// Microphone off.
    public var audioMuted: Bool
    /// Camera off: the tile shows a placeholder.
    public var videoMuted: Bool
    /// Video size in pixels; nil until the first frame.
    public var videoSize: VideoSize?
    /// Latest media statistics.
    public var media: MediaInfo
    /// Current speaking level, 0 (silent) … 1 (loud).
    public var speakingLevel: Double
    /// Media state for this participant.
    public var connection: SessionConnection
    /// Their media does not decrypt with our room secret (they use another one): the tile says so.
    public var cannotDecrypt = false
    /// When the participant joined, on the room's clock (nil until known).
    public var joinedAt: Duration? = nil
    /// When the relay said their connection dropped (a relay of the cluster died or they are moving to another):
    /// the tile stays, "reconnecting…", until they are back or ``RoomState/reconnectWindow`` passes.
    public var droppedAt: Duration? = nil
    /// For a shared terminal (`parley share`), the name of the member sharing it; nil for a person. Its tile shows
    /// text cells instead of a picture, and it never speaks.
    public var sharedBy: String? = nil

    /// For a shared terminal, the member its sharer lets type in it; nil for nobody.
    public var controlledBy: ParticipantID? = nil

    /// Whether this is a shared terminal rather than a person.
    public var isTerminal: Bool { sharedBy != nil }

    /// A session with media not yet started.
    public init(
        id: ParticipantID, name: String, role: Role = .broadcaster, isLocal: Bool = false,
        audioMuted: Bool = false, videoMuted: Bool = false, videoSize: VideoSize? = nil,
        media: MediaInfo = MediaInfo(), speakingLevel: Double = 0, connection: SessionConnection = .connecting
    ) {
        self.id = id
        self.name = name
        self.role = role
        self.isLocal = isLocal
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
        self.videoSize = videoSize
        self.media = media
        self.speakingLevel = speakingLevel
        self.connection = connection
    }

    /// Level above which a participant counts as speaking (for the speaking border).
    public static let speakingThreshold = 0.1

    /// True while the participant is audibly speaking (and not muted).
    public var isSpeaking: Bool { !audioMuted && speakingLevel >= Self.speakingThreshold }

    /// What the tile shows: muted video shows a placeholder, as does a camera with no frame yet.
    public var tileContent: TileContent {
        if videoMuted { return .videoOff }
        return videoSize == nil ? .waitingForVideo : .video
    }
}
