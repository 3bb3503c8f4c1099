import ParleyMedia

/// Where each frame of a recording goes on the file's one timeline, and when it is written. Pure (told the time with
/// every call), so it is table-tested; `CallRecorder` hands it what arrives and writes what it releases.
///
/// - **Video is stamped by capture time**, not arrival: a frame's RTP timestamp (the sender's 90 kHz capture clock,
///   which every simulcast layer of a sender shares) mapped onto the recording's clock where the track's first frame
///   arrived (again after a jump of more than `maxSkew`: a sender that restarted or stalled). Arrival jitter and a
///   layer switch (the new layer's keyframe arrives a millisecond after the old layer's frame of the same instant)
///   therefore never squeeze two frames together.
/// - **On the sender's frame grid.** WebM counts in milliseconds and a 15 fps frame lasts 66.67 ms, so consecutive
///   frames are 66 or 67 ms apart; a player that re-times a track to its frame rate from the file's start (ffmpeg's
///   default) would put two of them in one slot whenever the track's phase fell on a half slot. Each frame therefore
///   sits in the nearest slot of its sender's rate (RTP steps say it) counted from where a player starts the file
///   (`base`), at most half a frame from its capture time, and strictly after the track's previous frame.
/// - **Written `delay` late, in timestamp order** across tracks (libwebm refuses a frame older than the last it
///   wrote). While a frame waits, a keyframe of the same track of the same or an earlier capture instant (the relay
///   switched this client to another layer) replaces it: the old layer's last picture and the new one's first are
///   the same instant, and only the new chain goes on.
/// - **The header holds each camera's real size.** libwebm writes the track headers with the first frame, so the first
///   frames wait (at most `headerWait`) until every video track has its first keyframe, whose size becomes the
///   track's (`Release.sizes`). A later keyframe of another size (another layer) carries its own size, as VP8 does.
public struct RecordingTimeline: Sendable {
    /// Timing rules.
    public struct Settings: Sendable, Equatable {
        /// How long a frame waits before it is written: a frame that arrives this much late still goes in order, and
        /// a switching layer's keyframe this much after the old layer's frame still replaces it.
        public var delay: Duration
        /// How long the first frames (and the header) wait for every camera's first keyframe.
        public var headerWait: Duration
        /// A video frame whose capture time maps further than this from its arrival starts its track's mapping again.
        public var maxSkew: Duration

        /// Settings; the defaults suit a call (a kill loses at most the last checkpoint's second plus `delay`).
        public init(
            delay: Duration = .milliseconds(300), headerWait: Duration = .seconds(2), maxSkew: Duration = .seconds(1)
        ) {
            self.delay = delay
            self.headerWait = headerWait
            self.maxSkew = maxSkew
        }
    }

    /// One frame (or chat cue) to write.
    public struct Frame: Equatable, Sendable {
        /// The file's track number.
        public var track: UInt64
        /// Nanoseconds since the recording started.
        public var nanoseconds: UInt64
        /// The payload.
        public var data: [UInt8]
        /// A keyframe (every audio block and cue is one).
        public var isKey: Bool
        /// A cue's duration in nanoseconds; nil for a frame.
        public var duration: UInt64?

        /// A frame.
        public init(track: UInt64, nanoseconds: UInt64, data: [UInt8], isKey: Bool, duration: UInt64? = nil) {
            self.track = track
            self.nanoseconds = nanoseconds
            self.data = data
            self.isKey = isKey
            self.duration = duration
        }
    }

    /// What to write now, in this order: the video tracks' sizes (only with the file's first frames, before them),
    /// then the frames.
    public struct Release: Equatable, Sendable {
        /// Each video track's size from its first keyframe.
        public var sizes: [UInt64: RecordingPlan.VideoSize] = [:]
        /// Frames in timestamp order.
        public var frames: [Frame] = []

        /// A release.
        public init(sizes: [UInt64: RecordingPlan.VideoSize] = [:], frames: [Frame] = []) {
            self.sizes = sizes
            self.frames = frames
        }
    }

    /// The RTP clock of video, ticks per second.
    static let videoClockRate: Int64 = 90_000
    /// The frame rate assumed until a track's RTP steps tell its own, and the coarsest grid: the call profiles'
    /// 15 fps, whose slots are also slots of 30 fps.
    static let defaultFramesPerSecond: Int64 = 15
    /// An audio block.
    static let audioBlock: Int64 = 20_000_000

    private struct Anchor: Sendable {
        var rtp: Int64
        var at: Int64
    }

    /// One video track's mapping from RTP time to the recording's.
    private struct VideoClock: Sendable {
        var lastRTP: UInt32?
        var rtp: Int64 = 0
        var anchor: Anchor?
        var smallestStep: Int64?

        /// `timestamp` unwrapped against the one before (RFC 3550 timestamps wrap after 2^32 ticks).
        mutating func extend(_ timestamp: UInt32) -> Int64 {
            if let lastRTP {
                let next = rtp + Int64(Int32(bitPattern: timestamp &- lastRTP))
                let step = next - rtp
                // A step of one second or more is a gap (camera off, a restart), not the frame rate.
                if step > 0, step < RecordingTimeline.videoClockRate {
                    smallestStep = min(smallestStep ?? step, step)
                }
                rtp = next
            } else {
                rtp = Int64(timestamp)
            }
            lastRTP = timestamp
            return rtp
        }

        /// The capture time of `rtp` on the recording's clock.
        mutating func map(_ rtp: Int64, arrival: Int64, maxSkew: Int64) -> Int64 {
            let anchor = self.anchor ?? Anchor(rtp: rtp, at: arrival)
            let mapped = max(0, anchor.at + (rtp - anchor.rtp) * 100_000 / 9)  // 10^9 / 90 000 ns a tick
            if abs(mapped - arrival) > maxSkew {
                self.anchor = Anchor(rtp: rtp, at: arrival)
                return arrival
            }
            self.anchor = anchor
            return mapped
        }

        /// The sender's frame rate, from the smallest RTP step seen, in whole frames per second from 15 to 120. Never
        /// below 15: a first step that skipped a frame would give a coarser grid than the sender's later frames fit,
        /// while a slower sender's frames fit the 15 fps grid (at most a third of a frame from their time at 10 fps).
        var framesPerSecond: Int64 {
            guard let smallestStep else { return RecordingTimeline.defaultFramesPerSecond }
            let rate = (RecordingTimeline.videoClockRate + smallestStep / 2) / smallestStep
            return min(120, max(RecordingTimeline.defaultFramesPerSecond, rate))
        }
    }

    private enum Kind: Sendable, Equatable {
        case video, audio, chat
    }

    /// A frame waiting to be written.
    private struct Entry: Sendable {
        var sequence: Int
        var track: UInt64
        /// Its stamp (for video before the header: its capture time, placed on the grid when the header is written).
        var at: Int64
        /// Video: the capture time on the recording's clock.
        var mapped: Int64 = 0
        var data: [UInt8]
        var isKey: Bool
        var duration: UInt64?
    }

    /// The settings in force.
    public let settings: Settings
    /// When the recording started, on the engine's clock.
    public let start: Duration
    private var kinds: [UInt64: Kind] = [:]
    /// Each Opus track's codec delay (pre-skip) in nanoseconds.
    private var codecDelays: [UInt64: Int64] = [:]
    private var videoClocks: [UInt64: VideoClock] = [:]
    private var queue: [Entry] = []
    private var sequence = 0
    /// Where a player counts the file from, and frame slots with it; nil until the header is written.
    private var base: Int64?
    /// The newest stamp written, across tracks and for each.
    private var lastWritten: Int64 = 0
    private var lastWrittenOfTrack: [UInt64: Int64] = [:]
    private var audioAnchor: Int64?
    private var audioBlocks: Int64 = 0
    private var lastAudio: Int64?
    /// Frames given so far (released or waiting).
    public private(set) var framesReceived = 0

    /// A timeline starting at `start`.
    public init(start: Duration, settings: Settings = Settings()) {
        self.start = start
        self.settings = settings
    }

    /// Declares a VP8 track.
    public mutating func addVideoTrack(_ track: UInt64) {
        kinds[track] = .video
        videoClocks[track] = VideoClock()
    }

    /// Declares an Opus track whose decoder drops `codecDelay` at the start (its pre-skip).
    public mutating func addAudioTrack(_ track: UInt64, codecDelay: Duration = .zero) {
        kinds[track] = .audio
        codecDelays[track] = nanoseconds(codecDelay)
    }

    /// Declares the chat's subtitle track.
    public mutating func addChatTrack(_ track: UInt64) { kinds[track] = .chat }

    /// One video frame of `track`, captured at `rtpTimestamp`, arriving at `now`. A track's first frame must be a
    /// keyframe (the recorder waits for one).
    public mutating func video(track: UInt64, rtpTimestamp: UInt32, data: [UInt8], isKey: Bool, at now: Duration) {
        guard var clock = videoClocks[track] else { return }
        let rtp = clock.extend(rtpTimestamp)
        let mapped = clock.map(rtp, arrival: sinceStart(now), maxSkew: nanoseconds(settings.maxSkew))
        videoClocks[track] = clock
        if isKey {
            // Another layer's keyframe: what waits of the old chain from the same instant on is replaced.
            queue.removeAll { $0.track == track && $0.mapped >= mapped }
        }
        var entry = Entry(sequence: next(), track: track, at: mapped, mapped: mapped, data: data, isKey: isKey)
        if let base { entry.at = place(mapped, track: track, base: base) }
        queue.append(entry)
        framesReceived += 1
    }

    /// One 20 ms block of audio, played at `now`, for each track given (members silent this block are absent). Blocks
    /// are stamped by their count from the first, so a late timer firing twice does not squeeze two into one instant.
    /// Call it for every block, even with none given.
    public mutating func audio(_ blocks: [(track: UInt64, data: [UInt8])], at now: Duration) {
        let played = sinceStart(now)
        let anchor = audioAnchor ?? played
        var at = anchor + audioBlocks * Self.audioBlock
        // A timer that stalled (its count far behind the clock, or behind what is written) moves the count's anchor
        // on, never back.
        if played - at > nanoseconds(settings.maxSkew) { at = played }
        at = max(at, lastWritten, lastAudio.map { $0 + Self.audioBlock } ?? 0)
        audioAnchor = at - audioBlocks * Self.audioBlock
        audioBlocks += 1
        lastAudio = at
        for block in blocks where kinds[block.track] == .audio {
            queue.append(Entry(sequence: next(), track: block.track, at: at, data: block.data, isKey: true))
            framesReceived += 1
        }
    }

    /// One chat cue shown at `now` for `duration` nanoseconds.
    public mutating func chat(track: UInt64, data: [UInt8], duration: UInt64, at now: Duration) {
        var at = max(sinceStart(now), lastWritten)
        if let base { at = max(at, base) }
        queue.append(Entry(sequence: next(), track: track, at: at, data: data, isKey: true, duration: duration))
        framesReceived += 1
    }

    /// What may be written at `now`: frames older than `delay`, once the header can be written.
    public mutating func release(at now: Duration) -> Release {
        let ready = base != nil || videoClocks.keys.allSatisfy { track in queue.contains { $0.track == track } }
        guard ready || now - start >= settings.headerWait else { return Release() }
        let horizon = sinceStart(now) - nanoseconds(settings.delay)
        guard base != nil || queue.contains(where: { $0.at <= horizon }) else { return Release() }
        let sizes = openIfNeeded()
        return Release(sizes: sizes, frames: take { $0.at <= horizon })
    }

    /// Everything still waiting (the recording ends).
    public mutating func drain() -> Release {
        guard !queue.isEmpty else { return Release() }
        let sizes = openIfNeeded()
        return Release(sizes: sizes, frames: take { _ in true })
    }

    /// The recording's length at `now` in milliseconds: up to now, or to the last frame if that is later.
    public func milliseconds(at now: Duration) -> Double {
        Double(max(sinceStart(now), lastWritten)) / 1_000_000
    }

    /// The length of what is written, in milliseconds (the header's duration at a checkpoint).
    public var writtenMilliseconds: Double { Double(lastWritten) / 1_000_000 }

    // MARK: - Inside

    private mutating func next() -> Int {
        sequence += 1
        return sequence
    }

    /// Nanoseconds from the start to `time` (0 before it).
    private func sinceStart(_ time: Duration) -> Int64 {
        let since = time - start
        guard since > .zero else { return 0 }
        return since.components.seconds * 1_000_000_000 + since.components.attoseconds / 1_000_000_000
    }

    /// A duration in nanoseconds.
    private func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    /// Writes the header: `base` is where a player counts the file from (FFmpeg: the earliest frame of a video or
    /// audio track, an Opus block counting from its codec delay earlier; a chat cue earlier than that is moved to
    /// it), the waiting video frames go onto their grids, and each video track's size is its first keyframe's.
    private mutating func openIfNeeded() -> [UInt64: RecordingPlan.VideoSize] {
        guard base == nil else { return [:] }
        let media = queue.filter { kinds[$0.track] != .chat }.map { $0.at - (codecDelays[$0.track] ?? 0) }
        let base = max(0, media.min() ?? queue.map(\.at).min() ?? 0)
        self.base = base
        var sizes: [UInt64: RecordingPlan.VideoSize] = [:]
        for index in queue.indices {
            let entry = queue[index]
            switch kinds[entry.track] {
            case .video:
                queue[index].at = place(entry.mapped, track: entry.track, base: base, before: index)
                if sizes[entry.track] == nil, entry.isKey, let size = VP8FrameHeader(entry.data)?.size {
                    sizes[entry.track] = RecordingPlan.VideoSize(width: size.width, height: size.height)
                }
            case .chat:
                queue[index].at = max(entry.at, base)
            case .audio, nil:
                break
            }
        }
        return sizes
    }

    /// The stamp of a video frame captured at `mapped`: the nearest slot of its track's frame grid from `base`, after
    /// the track's previous frame (written, or waiting before position `before` of the queue) and not before what is
    /// written.
    private func place(_ mapped: Int64, track: UInt64, base: Int64, before: Int? = nil) -> Int64 {
        let fps = videoClocks[track]?.framesPerSecond ?? Self.defaultFramesPerSecond
        func stamp(_ slot: Int64) -> Int64 { base + slot * 1_000_000_000 / fps }
        /// The first slot whose stamp is at least `time` (`after`: later than it).
        func slot(from time: Int64, after: Bool) -> Int64 {
            var candidate = max(0, (time - base) * fps / 1_000_000_000 - 1)
            while after ? stamp(candidate) <= time : stamp(candidate) < time { candidate += 1 }
            return candidate
        }
        var chosen = max(0, ((mapped - base) * fps * 2 + 1_000_000_000) / 2_000_000_000)
        let waiting = queue[..<(before ?? queue.count)].filter { $0.track == track }.map(\.at)
        if let previous = (waiting + [lastWrittenOfTrack[track]].compactMap { $0 }).max() {
            chosen = max(chosen, slot(from: previous, after: true))
        }
        return stamp(max(chosen, slot(from: lastWritten, after: false)))
    }

    private mutating func take(_ due: (Entry) -> Bool) -> [Frame] {
        let ready = queue.filter(due).sorted { ($0.at, $0.sequence) < ($1.at, $1.sequence) }
        guard !ready.isEmpty else { return [] }
        queue.removeAll(where: due)
        return ready.map { entry in
            lastWritten = max(lastWritten, entry.at)
            lastWrittenOfTrack[entry.track] = entry.at
            return Frame(
                track: entry.track, nanoseconds: UInt64(max(0, entry.at)), data: entry.data, isKey: entry.isKey,
                duration: entry.duration)
        }
    }
}
