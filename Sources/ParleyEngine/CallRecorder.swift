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
        /// The size of the newest picture received, if any (the track's header size until its first keyframe says
        /// its own).
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

    /// The size a track header keeps when no picture arrived before the recording and no keyframe before the header
    /// was written (`RecordingTimeline.Settings.headerWait`): the standard profile's.
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

/// One recording being written: the only owner of its `WebMFile` and of the Opus encoders of its audio. Lives on
/// the engine's event loop; every write may throw `WebMError` (a full disk), after which the engine drops it. What
/// arrives goes through its `RecordingTimeline` (stamps, order, the header's sizes) on its way to the file.
final class CallRecorder {
    let path: String
    let plan: RecordingPlan
    private let file: WebMFile
    private(set) var timeline: RecordingTimeline
    private var videoTracks: [UInt32: UInt64] = [:]
    private var audioTracks: [UInt32: UInt64] = [:]
    private var mixTrack: UInt64?
    private var chatTrack: UInt64 = 0
    private var encoders: [UInt64: OpusAudioEncoder] = [:]
    /// Video tracks that wait for a keyframe (at the start, and after a frame that did not decode).
    private var waitingForKeyframe: Set<UInt32> = []
    private var cues: UInt64 = 0
    private var lastCheckpoint: Duration

    /// How often the file is made safe against a kill: the cluster closed, the duration rewritten, bytes flushed.
    static let checkpointInterval = Duration.seconds(1)

    init(path: String, plan: RecordingPlan, at now: Duration) throws {
        self.path = path
        self.plan = plan
        file = try WebMFile(path: path)
        timeline = RecordingTimeline(start: now)
        lastCheckpoint = now
        for track in plan.tracks {
            switch track {
            case .video(let member, let name, let size):
                // The size is the header's until the track's first keyframe says its own (`RecordingTimeline`).
                let number = try file.addVideoTrack(name: name, width: size.width, height: size.height)
                videoTracks[member] = number
                timeline.addVideoTrack(number)
                waitingForKeyframe.insert(member)
            case .mixedAudio(let name):
                let encoder = try Self.makeEncoder()
                let number = try file.addOpusTrack(name: name, channels: 1, preSkip: encoder.lookaheadSamples)
                mixTrack = number
                encoders[number] = encoder
                timeline.addAudioTrack(number, codecDelay: Self.codecDelay(encoder))
            case .memberAudio(let member, let name):
                let encoder = try Self.makeEncoder()
                let number = try file.addOpusTrack(name: name, channels: 1, preSkip: encoder.lookaheadSamples)
                audioTracks[member] = number
                encoders[number] = encoder
                timeline.addAudioTrack(number, codecDelay: Self.codecDelay(encoder))
            case .chat(let name):
                chatTrack = try file.addSubtitleTrack(name: name)
                timeline.addChatTrack(chatTrack)
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

    /// What the decoder drops at the start of an Opus track (its pre-skip, the track's CodecDelay).
    private static func codecDelay(_ encoder: OpusAudioEncoder) -> Duration {
        .nanoseconds(Int64(encoder.lookaheadSamples) * 1_000_000_000 / 48_000)
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
        timeline.video(
            track: track, rtpTimestamp: frame.timestamp, data: frame.data, isKey: frame.isKeyframe, at: now)
        try write(timeline.release(at: now))
    }

    /// Whether `member`'s track still waits for a keyframe (the engine asks the sender for one).
    func waitsForKeyframe(_ member: UInt32) -> Bool { waitingForKeyframe.contains(member) }

    /// One 20 ms block of audio: the mix, and each member's own block (members silent this block are absent).
    func audio(mix: [Int16], members: [UInt32: [Int16]], at now: Duration) throws {
        var blocks: [(track: UInt64, data: [UInt8])] = []
        if let mixTrack, let packet = try encode(mix, track: mixTrack) { blocks.append((mixTrack, packet)) }
        for (member, samples) in members.sorted(by: { $0.key < $1.key }) {
            guard let track = audioTracks[member], let packet = try encode(samples, track: track) else { continue }
            blocks.append((track, packet))
        }
        timeline.audio(blocks, at: now)
        try write(timeline.release(at: now))
    }

    /// Whether the recording keeps each member's audio apart (then the engine hands over each member's block).
    var recordsMembersApart: Bool { !audioTracks.isEmpty }

    private func encode(_ samples: [Int16], track: UInt64) throws -> [UInt8]? {
        guard let encoder = encoders[track], samples.count == AudioSender.samplesPerFrame else { return nil }
        return try encoder.encode(AudioFrame(samples: samples))
    }

    /// One chat line as a cue shown for `shownFor`.
    func chat(sender: String, text: String, at now: Duration, shownFor: Duration = .seconds(4)) throws {
        cues += 1
        let duration = UInt64(shownFor.components.seconds) * 1_000_000_000
        timeline.chat(
            track: chatTrack, data: WebVTTCue.block(sequence: cues, sender: sender, text: text), duration: duration,
            at: now)
        try write(timeline.release(at: now))
    }

    /// Makes the file safe against a kill once a second (see `WebMFile.checkpoint`); true when it did.
    func tick(at now: Duration) throws -> Bool {
        guard now - lastCheckpoint >= Self.checkpointInterval else { return false }
        lastCheckpoint = now
        try write(timeline.release(at: now))
        try file.checkpoint(durationMilliseconds: timeline.writtenMilliseconds)
        return true
    }

    /// Whether nothing arrived yet.
    var isEmpty: Bool { timeline.framesReceived == 0 && file.size == 0 }

    /// Writes what still waits and completes the file (cues, sizes, duration). Returns the seconds recorded and the
    /// file's size.
    func finish(at now: Duration) throws -> (seconds: Double, bytes: UInt64) {
        try write(timeline.drain())
        let milliseconds = timeline.milliseconds(at: now)
        try file.finish(durationMilliseconds: milliseconds)
        return (milliseconds / 1000, file.size)
    }

    /// Bytes so far.
    var bytes: UInt64 { file.size }

    /// Tests: writes past `bytes` fail as on a full disk.
    func failWrites(after bytes: UInt64) { file.failWrites(after: bytes) }

    private func write(_ release: RecordingTimeline.Release) throws {
        for (track, size) in release.sizes.sorted(by: { $0.key < $1.key }) {
            try file.setVideoSize(track: track, width: size.width, height: size.height)
        }
        for frame in release.frames {
            if let duration = frame.duration {
                try file.writeBlock(frame.data, track: frame.track, at: frame.nanoseconds, duration: duration)
            } else {
                try file.writeFrame(frame.data, track: frame.track, at: frame.nanoseconds, isKey: frame.isKey)
            }
        }
    }
}
