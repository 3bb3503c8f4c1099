// Media state on the signaling channel: microphone and camera changes, and what each sender reports sending.

/// A change of the sender's microphone and/or camera state; absent fields are unchanged.
public struct MuteChange: Codable, Sendable, Equatable {
    /// New microphone state, if it changed.
    public var audio: Bool?
    /// New camera state, if it changed.
    public var video: Bool?

    /// A mute change.
    public init(audio: Bool? = nil, video: Bool? = nil) {
        self.audio = audio
        self.video = video
    }
}

/// A member's full microphone and camera state.
public struct MemberMute: Codable, Sendable, Equatable {
    /// Whose state.
    public var id: UInt32
    /// Microphone muted.
    public var audio: Bool
    /// Camera off.
    public var video: Bool

    /// A mute notice.
    public init(id: UInt32, audio: Bool, video: Bool) {
        self.id = id
        self.audio = audio
        self.video = video
    }
}

/// What a sender reports about the media it sends, forwarded to everyone (shown in per-tile stats).
public struct SenderStats: Codable, Sendable, Equatable {
    /// Video width in pixels (0 when the camera is off).
    public var width: Int
    /// Video height in pixels.
    public var height: Int
    /// Frames per second actually sent.
    public var fps: Double
    /// Video bitrate actually sent, kbit/s.
    public var videoKbps: Double
    /// Audio bitrate actually sent, kbit/s.
    public var audioKbps: Double

    /// A stats report.
    public init(width: Int, height: Int, fps: Double, videoKbps: Double, audioKbps: Double) {
        self.width = width
        self.height = height
        self.fps = fps
        self.videoKbps = videoKbps
        self.audioKbps = audioKbps
    }

    enum CodingKeys: String, CodingKey { case width, height, fps, videoKbps, audioKbps }

    /// Non-finite figures (a rate over an empty window) go out as 0: JSON has no NaN.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(fps.isFinite ? fps : 0, forKey: .fps)
        try c.encode(videoKbps.isFinite ? videoKbps : 0, forKey: .videoKbps)
        try c.encode(audioKbps.isFinite ? audioKbps : 0, forKey: .audioKbps)
    }
}

/// What a member reports sending, as forwarded by the relay.
public struct MemberStats: Codable, Sendable, Equatable {
    /// Whose report.
    public var id: UInt32
    /// The report.
    public var stats: SenderStats

    /// A forwarded stats report.
    public init(id: UInt32, stats: SenderStats) {
        self.id = id
        self.stats = stats
    }
}

extension MuteChange: ValidatedPayload {
    /// A change names the microphone, the camera or both.
    func validated() throws(SignalingError) -> MuteChange {
        guard audio != nil || video != nil else {
            throw SignalingError(.badField, "mute needs \"audio\" or \"video\" (true or false)")
        }
        return self
    }
}
