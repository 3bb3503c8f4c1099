import ParleyMedia
import ParleyWire

/// What a recording holds, decided when it starts (Matroska lists its tracks before the first frame): one VP8 track
/// per member sending video, named after the member; the audio as one mix or one Opus track per broadcasting
/// member; the chat as a WebVTT subtitle track. Pure, so it is table-tested.
public struct RecordingPlan: Equatable, Sendable {
    /// A member as the recording sees it when it starts.
    public struct Member: Equatable, Sendable {
        /// Member id.
        public var id: UInt32
        /// The name the room shows (the track's name).
        public var name: String
        /// A broadcaster (the audience sends nothing).
        public var broadcasts: Bool
        /// The camera is on.
        public var sendsVideo: Bool
        /// The size of the newest picture received, if any.
        public var pictureSize: VideoSize?

        /// A member.
        public init(id: UInt32, name: String, broadcasts: Bool, sendsVideo: Bool, pictureSize: VideoSize? = nil) {
            self.id = id
            self.name = name
            self.broadcasts = broadcasts
            self.sendsVideo = sendsVideo
            self.pictureSize = pictureSize
        }
    }

    /// A picture size: the track header's (VP8 keyframes carry their own, so later changes are kept).
    public struct VideoSize: Equatable, Sendable {
        /// Pixels across.
        public var width: Int
        /// Pixels down.
        public var height: Int

        /// A size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    /// One track.
    public enum Track: Equatable, Sendable {
        /// A member's video.
        case video(member: UInt32, name: String, size: VideoSize)
        /// What this client plays: every member's audio mixed.
        case mixedAudio(name: String)
        /// One member's audio.
        case memberAudio(member: UInt32, name: String)
        /// The room's chat.
        case chat(name: String)
    }

    /// The tracks, in file order: videos in join order, then audio, then chat.
    public var tracks: [Track]

    /// The size a track header gets when no picture arrived yet: the standard profile's.
    public static let defaultSize = VideoSize(width: 640, height: 360)
    /// The mixed audio track's name.
    public static let mixName = "Everyone (mixed)"
    /// The chat track's name.
    public static let chatName = "Chat"

    /// The plan for `members` (in join order; the recording member itself is not among them).
    public init(members: [Member], audioPerMember: Bool) {
        var tracks: [Track] = members.filter { $0.broadcasts && $0.sendsVideo }.map {
            .video(member: $0.id, name: $0.name, size: $0.pictureSize ?? Self.defaultSize)
        }
        if audioPerMember {
            tracks += members.filter(\.broadcasts).map { .memberAudio(member: $0.id, name: $0.name) }
        } else {
            tracks.append(.mixedAudio(name: Self.mixName))
        }
        tracks.append(.chat(name: Self.chatName))
        self.tracks = tracks
    }
}

/// Timestamps for one file: nanoseconds since the recording started, never going backwards across tracks (the
/// muxer refuses a frame older than the last it wrote). Audio is stamped by its block count (20 ms each from the
/// first block), so a late timer firing twice does not squeeze two blocks into one instant.
public struct RecordingClock: Equatable, Sendable {
    /// When the recording started, on the engine's clock.
    public let start: Duration
    /// The newest stamp handed out.
    public private(set) var last: UInt64 = 0
    /// The stamp of the first audio block, and blocks since.
    private var audioAnchor: UInt64?
    private var audioBlocks: UInt64 = 0

    /// A clock starting at `start`.
    public init(start: Duration) { self.start = start }

    /// The stamp of something that happened at `now` (video, chat), and at least `notBefore` (a track's previous
    /// frame plus a millisecond: Matroska counts in milliseconds, and two frames of a track completed in the same
    /// millisecond must not share a timestamp).
    public mutating func stamp(_ now: Duration, notBefore: UInt64) -> UInt64 {
        last = max(stamp(now), notBefore)
        return last
    }

    /// The stamp of something that happened at `now` (video, chat).
    public mutating func stamp(_ now: Duration) -> UInt64 {
        let since = now - start
        let nanoseconds =
            since <= .zero
            ? 0
            : UInt64(since.components.seconds) * 1_000_000_000
                + UInt64(since.components.attoseconds / 1_000_000_000)
        last = max(last, nanoseconds)
        return last
    }

    /// The stamp of the next 20 ms audio block, played at `now`.
    public mutating func stampAudioBlock(_ now: Duration) -> UInt64 {
        let anchor = audioAnchor ?? stamp(now)
        audioAnchor = anchor
        defer { audioBlocks += 1 }
        last = max(last, anchor + audioBlocks * 20_000_000)
        return last
    }

    /// Seconds recorded so far, in milliseconds (the header's duration).
    public var milliseconds: Double { Double(last) / 1_000_000 }
}

/// One recording being written: the only owner of its `WebMFile` and of the Opus encoders of its audio. Lives on
/// the engine's event loop; every write may throw `WebMError` (a full disk), after which the engine drops it.
final class CallRecorder {
    let path: String
    let plan: RecordingPlan
    private let file: WebMFile
    private(set) var clock: RecordingClock
    private var videoTracks: [UInt32: UInt64] = [:]
    private var audioTracks: [UInt32: UInt64] = [:]
    private var mixTrack: UInt64?
    private var chatTrack: UInt64 = 0
    private var encoders: [UInt64: OpusAudioEncoder] = [:]
    /// Video tracks that wait for a keyframe (at the start, and after a frame that did not decode).
    private var waitingForKeyframe: Set<UInt32> = []
    /// Each video track's newest stamp.
    private var lastVideoStamp: [UInt32: UInt64] = [:]
    private var cues: UInt64 = 0
    private var lastCheckpoint: Duration

    /// How often the file is made safe against a kill: the cluster closed, the duration rewritten, bytes flushed.
    static let checkpointInterval = Duration.seconds(1)

    init(path: String, plan: RecordingPlan, at now: Duration) throws {
        self.path = path
        self.plan = plan
        file = try WebMFile(path: path)
        clock = RecordingClock(start: now)
        lastCheckpoint = now
        for track in plan.tracks {
            switch track {
            case .video(let member, let name, let size):
                videoTracks[member] = try file.addVideoTrack(name: name, width: size.width, height: size.height)
                waitingForKeyframe.insert(member)
            case .mixedAudio(let name):
                let encoder = try Self.makeEncoder()
                let number = try file.addOpusTrack(name: name, channels: 1, preSkip: encoder.lookaheadSamples)
                mixTrack = number
                encoders[number] = encoder
            case .memberAudio(let member, let name):
                let encoder = try Self.makeEncoder()
                let number = try file.addOpusTrack(name: name, channels: 1, preSkip: encoder.lookaheadSamples)
                audioTracks[member] = number
                encoders[number] = encoder
            case .chat(let name):
                chatTrack = try file.addSubtitleTrack(name: name)
            }
        }
    }

    /// The recording's own Opus encoding of what this client plays: full band, 64 kbit/s, no FEC (nothing is lost
    /// on the way to a file).
    private static func makeEncoder() throws -> OpusAudioEncoder {
        try OpusAudioEncoder(
            OpusAudioConfig(
                application: .audio, bitrateKbps: 64, complexity: 5, inbandFEC: false, expectedLossPercent: 0))
    }

    /// Members with a video track.
    var videoMembers: [UInt32] { Array(videoTracks.keys).sorted() }

    /// One assembled VP8 frame of `member`, as received (`decoded`: it decoded cleanly here). A track opens on a
    /// keyframe, and a frame that did not decode closes it until the next keyframe, so the file always decodes.
    func video(_ frame: VP8Frame, from member: UInt32, decoded: Bool, at now: Duration) throws {
        guard let track = videoTracks[member] else { return }
        guard decoded else {
            waitingForKeyframe.insert(member)
            return
        }
        if waitingForKeyframe.contains(member) {
            guard frame.isKeyframe else { return }
            waitingForKeyframe.remove(member)
        }
        let at = clock.stamp(now, notBefore: lastVideoStamp[member].map { $0 + 1_000_000 } ?? 0)
        lastVideoStamp[member] = at
        try file.writeFrame(frame.data, track: track, at: at, isKey: frame.isKeyframe)
    }

    /// Whether `member`'s track still waits for a keyframe (the engine asks the sender for one).
    func waitsForKeyframe(_ member: UInt32) -> Bool { waitingForKeyframe.contains(member) }

    /// One 20 ms block of audio: the mix, and each member's own block (members silent this block are absent).
    func audio(mix: [Int16], members: [UInt32: [Int16]], at now: Duration) throws {
        let at = clock.stampAudioBlock(now)
        if let mixTrack { try encode(mix, track: mixTrack, at: at) }
        for (member, samples) in members {
            guard let track = audioTracks[member] else { continue }
            try encode(samples, track: track, at: at)
        }
    }

    /// Whether the recording keeps each member's audio apart (then the engine hands over each member's block).
    var recordsMembersApart: Bool { !audioTracks.isEmpty }

    private func encode(_ samples: [Int16], track: UInt64, at: UInt64) throws {
        guard let encoder = encoders[track], samples.count == AudioSender.samplesPerFrame else { return }
        let packet = try encoder.encode(AudioFrame(samples: samples))
        try file.writeFrame(packet, track: track, at: at, isKey: true)
    }

    /// One chat line as a cue shown for `shownFor`.
    func chat(sender: String, text: String, at now: Duration, shownFor: Duration = .seconds(4)) throws {
        cues += 1
        let duration = UInt64(shownFor.components.seconds) * 1_000_000_000
        try file.writeBlock(
            WebVTTCue.block(sequence: cues, sender: sender, text: text), track: chatTrack, at: clock.stamp(now),
            duration: duration)
    }

    /// Makes the file safe against a kill once a second (see `WebMFile.checkpoint`); true when it did.
    func tick(at now: Duration) throws -> Bool {
        guard now - lastCheckpoint >= Self.checkpointInterval else { return false }
        lastCheckpoint = now
        _ = clock.stamp(now)
        try file.checkpoint(durationMilliseconds: clock.milliseconds)
        return true
    }

    /// Whether anything was written yet.
    var isEmpty: Bool { file.size == 0 }

    /// Completes the file (cues, sizes, duration). Returns the seconds recorded and the file's size.
    func finish(at now: Duration) throws -> (seconds: Double, bytes: UInt64) {
        _ = clock.stamp(now)
        try file.finish(durationMilliseconds: clock.milliseconds)
        return (clock.milliseconds / 1000, file.size)
    }

    /// Bytes so far.
    var bytes: UInt64 { file.size }

    /// Tests: writes past `bytes` fail as on a full disk.
    func failWrites(after bytes: UInt64) { file.failWrites(after: bytes) }
}
