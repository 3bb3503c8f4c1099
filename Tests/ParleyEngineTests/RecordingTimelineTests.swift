import Testing

@testable import ParleyEngine

/// The recording's timeline (`RecordingTimeline`): video stamped by capture time on its sender's frame grid, a
/// switching layer's keyframe replacing the old layer's frame of the same instant, every track in timestamp order,
/// and the header's sizes from each camera's first keyframe. Time is an input: every call says when it happens.
struct RecordingTimelineTests {
    typealias Size = RecordingPlan.VideoSize

    /// One video frame as the recorder hands it over: when it arrived (ms after the start), its RTP timestamp, a
    /// keyframe (with its size) or not, and a name to find it by in the file.
    struct Arrival: Sendable {
        var track: UInt64 = 1
        var at: Int
        var rtp: UInt32
        var keyframe: Size?
        var name: UInt8
        /// Nothing arrives: only time passes (what is due is written).
        var onlyTime = false

        static func time(_ at: Int) -> Arrival { Arrival(at: at, rtp: 0, keyframe: nil, name: 0, onlyTime: true) }

        static func key(_ at: Int, _ rtp: UInt32, _ size: Size, _ name: UInt8, track: UInt64 = 1) -> Arrival {
            Arrival(track: track, at: at, rtp: rtp, keyframe: size, name: name)
        }
        static func delta(_ at: Int, _ rtp: UInt32, _ name: UInt8, track: UInt64 = 1) -> Arrival {
            Arrival(track: track, at: at, rtp: rtp, keyframe: nil, name: name)
        }

        /// A VP8 frame: a keyframe's tag, start code and size (RFC 6386 section 9.1), or a delta frame's tag; the
        /// name last.
        var data: [UInt8] {
            guard let size = keyframe else { return [0x01, 0x00, 0x00, name] }
            return [
                0x00, 0x00, 0x00, 0x9D, 0x01, 0x2A, UInt8(size.width & 0xFF), UInt8(size.width >> 8),
                UInt8(size.height & 0xFF), UInt8(size.height >> 8), name,
            ]
        }
    }

    static let big = Size(width: 320, height: 240)
    static let small = Size(width: 160, height: 120)
    /// A 15 fps sender's RTP step (Parley's sender counts 66 666 µs a frame: 5 999.94 ticks).
    static func rtp15(_ frame: UInt32, from start: UInt32 = 9_000) -> UInt32 {
        start &+ UInt32(Double(frame) * 5_999.94)
    }

    /// Feeds `arrivals` (and nothing else) in order, releasing as time goes, then drains: (name, millisecond in the
    /// file) of every frame written, and the header's sizes.
    static func run(_ arrivals: [Arrival], tracks: [UInt64] = [1]) -> (frames: [(UInt8, Int)], sizes: [UInt64: Size]) {
        var timeline = RecordingTimeline(start: .seconds(100))
        for track in tracks { timeline.addVideoTrack(track) }
        var written: [RecordingTimeline.Frame] = []
        var sizes: [UInt64: Size] = [:]
        for arrival in arrivals {
            let now = Duration.seconds(100) + .milliseconds(arrival.at)
            if !arrival.onlyTime {
                timeline.video(
                    track: arrival.track, rtpTimestamp: arrival.rtp, data: arrival.data,
                    isKey: arrival.keyframe != nil, at: now)
            }
            let release = timeline.release(at: now)
            sizes.merge(release.sizes) { first, _ in first }
            written += release.frames
        }
        let rest = timeline.drain()
        sizes.merge(rest.sizes) { first, _ in first }
        written += rest.frames
        // What libwebm keeps: milliseconds, truncated.
        return (written.map { ($0.data.last ?? 0, Int($0.nanoseconds / 1_000_000)) }, sizes)
    }

    struct StampCase: Sendable, CustomTestStringConvertible {
        var name: String
        var arrivals: [Arrival]
        /// (frame name, millisecond) in the order written.
        var written: [(UInt8, Int)]
        var testDescription: String { name }
    }

    static let stamps: [StampCase] = [
        StampCase(
            name: "arrival jitter does not move a frame: each sits on the 15 fps grid from the first",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(190, rtp15(1), 1), .delta(200, rtp15(2), 2),
                .delta(301, rtp15(3), 3), .delta(390, rtp15(4), 4),
            ],
            written: [(0, 100), (1, 166), (2, 233), (3, 300), (4, 366)]),
        StampCase(
            name:
                "a layer switch: the new layer's keyframe 1 ms after the old layer's frame of that instant replaces it",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(166, rtp15(1), 1), .delta(233, rtp15(2), 2),
                .delta(300, rtp15(3), 3), .key(301, rtp15(3), small, 13), .delta(366, rtp15(4), 4),
                .delta(433, rtp15(5), 5),
            ],
            written: [(0, 100), (1, 166), (2, 233), (13, 300), (4, 366), (5, 433)]),
        StampCase(
            name: "a layer switch after a silence: the old frame still waits, and is replaced",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(166, rtp15(1), 1), .delta(233, rtp15(2), 2),
                .delta(300, rtp15(3), 3), .delta(700, rtp15(6), 6), .key(701, rtp15(6), small, 16),
                .delta(766, rtp15(7), 7),
            ],
            written: [(0, 100), (1, 166), (2, 233), (3, 300), (16, 500), (7, 566)]),
        StampCase(
            name: "the new layer's keyframe later than the delay: the old frame is written, the new one a slot later",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(166, rtp15(1), 1), .delta(233, rtp15(2), 2),
                .delta(300, rtp15(3), 3), .time(700), .key(701, rtp15(3), small, 13), .delta(766, rtp15(4), 4),
            ],
            written: [(0, 100), (1, 166), (2, 233), (3, 300), (13, 366), (4, 433)]),
        StampCase(
            name: "frames skipped by the sender leave their slots empty",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(166, rtp15(1), 1), .delta(366, rtp15(4), 4),
                .delta(433, rtp15(5), 5),
            ],
            written: [(0, 100), (1, 166), (4, 366), (5, 433)]),
        StampCase(
            name: "RTP timestamps wrapping past 2^32 keep counting up",
            arrivals: [
                .key(100, rtp15(0, from: 4_294_960_000), big, 0), .delta(166, rtp15(1, from: 4_294_960_000), 1),
                .delta(233, rtp15(2, from: 4_294_960_000), 2),
            ],
            written: [(0, 100), (1, 166), (2, 233)]),
        StampCase(
            name: "a sender that restarted (a new RTP base) is mapped again from its next frame's arrival",
            arrivals: [
                .key(100, rtp15(0), big, 0), .delta(166, rtp15(1), 1), .key(1_900, rtp15(0, from: 77), big, 20),
                .delta(1_966, rtp15(1, from: 77), 21),
            ],
            written: [(0, 100), (1, 166), (20, 1_900), (21, 1_966)]),
        StampCase(
            name: "a 30 fps sender on the 30 fps grid",
            arrivals: [
                .key(50, 1_000, big, 0), .delta(90, 3_999, 1), .delta(116, 7_000, 2), .delta(150, 9_999, 3),
            ],
            written: [(0, 50), (1, 83), (2, 116), (3, 150)]),
    ]

    @Test(arguments: stamps) func videoStamps(_ row: StampCase) {
        let result = Self.run(row.arrivals)
        #expect(result.frames.map { $0.0 } == row.written.map { $0.0 }, "frames written")
        #expect(result.frames.map { $0.1 } == row.written.map { $0.1 }, "milliseconds")
    }

    /// What `ffmpeg -i FILE -f null -` does to a video track: it re-times every frame to the track's frame rate,
    /// counted from the file's start (the earliest frame of any audio or video track, an Opus track's blocks read
    /// its codec delay earlier, rounded to the millisecond), rounding to the nearest; two frames in one slot make it
    /// complain ("non monotonically increasing dts"). WebM's milliseconds put a 15 fps track's frames 66 or 67 ms
    /// apart, so a track whose phase fell on a half slot would collide every third frame. Every phase of the camera
    /// against the audio's start is tried, with arrival jitter.
    static func slots(_ milliseconds: [Int], origin: Int, fps: Int) -> [Double] {
        milliseconds.map { (Double($0 - origin) * Double(fps) / 1_000).rounded(.toNearestOrAwayFromZero) }
    }

    static func strictlyIncreasing(_ values: [Double]) -> Bool {
        zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
    }

    @Test(arguments: [15, 30]) func reTimingToTheFrameRateNeverPutsTwoFramesInOneSlot(fps: Int) {
        let step = 90_000 / Double(fps) - 0.06
        var arrivalStampsCollide = false
        for phase in 0..<(1_000 / fps) {
            // Audio blocks every 20 ms from 7 ms on; camera frames from 40 ms + phase, each up to 30 ms late.
            enum Event {
                case audio
                case video(Int)
            }
            var events: [(at: Duration, event: Event)] = (0..<150).map { (.milliseconds(20 * $0 + 7), .audio) }
            events += (0..<(2_500 * fps / 1_000)).map { frame in
                let jitter = Duration.milliseconds((frame * 37) % 31)
                return (.milliseconds(40 + phase) + .microseconds(frame * 1_000_000 / fps) + jitter, .video(frame))
            }
            events.sort { $0.at < $1.at }
            var timeline = RecordingTimeline(start: .zero)
            timeline.addVideoTrack(1)
            timeline.addAudioTrack(2, codecDelay: .microseconds(6_500))
            var written: [RecordingTimeline.Frame] = []
            var arrivals: [Int] = []
            for (at, event) in events {
                switch event {
                case .audio:
                    timeline.audio([(track: 2, data: [0])], at: at)
                case .video(let frame):
                    timeline.video(
                        track: 1, rtpTimestamp: 3_000 + UInt32(Double(frame) * step),
                        data: frame == 0 ? Self.keyframe : [1, 0, 0], isKey: frame == 0, at: at)
                    // The old stamps: arrival, and at least a millisecond after the track's previous frame.
                    let milliseconds = Int(at / .milliseconds(1))
                    arrivals.append(max(milliseconds, (arrivals.last ?? -1) + 1))
                }
                written += timeline.release(at: at).frames
            }
            written += timeline.drain().frames
            let milliseconds = written.map { Int($0.nanoseconds / 1_000_000) }
            #expect(milliseconds == milliseconds.sorted(), "phase \(phase): written in order")
            let video = written.filter { $0.track == 1 }.map { Int($0.nanoseconds / 1_000_000) }
            let audio = written.filter { $0.track == 2 }.map { Int($0.nanoseconds / 1_000_000) - 7 }
            let origin = min(video.min() ?? 0, audio.min() ?? 0)
            #expect(video.count == arrivals.count, "phase \(phase): every frame written")
            let slots = Self.slots(video, origin: origin, fps: fps)
            #expect(Self.strictlyIncreasing(slots), "phase \(phase): slots \(slots)")
            // Not just apart: each frame near the middle of its slot, so no rounding can go either way.
            let offsets = video.map { Double($0 - origin) * Double(fps) / 1_000 }.map { $0 - $0.rounded() }
            #expect(offsets.allSatisfy { abs($0) < 0.1 }, "phase \(phase): offsets in slots \(offsets)")
            if !Self.strictlyIncreasing(Self.slots(arrivals, origin: 0, fps: fps)) {
                arrivalStampsCollide = true
            }
        }
        #expect(arrivalStampsCollide, "stamps by arrival time collide for some phase (the check can fail)")
    }

    static let keyframe: [UInt8] = [0x00, 0x00, 0x00, 0x9D, 0x01, 0x2A, 0x40, 0x01, 0xF0, 0x00]

    @Test("the header waits for every camera's first keyframe and takes its size; frames of all tracks in order")
    func headerTakesEachCamerasFirstKeyframe() {
        let result = Self.run(
            [
                .key(100, Self.rtp15(0), Self.small, 0, track: 1), .delta(166, Self.rtp15(1), 1, track: 1),
                .delta(233, Self.rtp15(2), 2, track: 1), .delta(300, Self.rtp15(3), 3, track: 1),
                .delta(366, Self.rtp15(4), 4, track: 1), .delta(433, Self.rtp15(5), 5, track: 1),
                // The second camera's first keyframe a second after the first's: nothing is written before it.
                .key(1_100, 50_000, Self.big, 20, track: 2), .delta(1_166, 55_999, 21, track: 2),
            ], tracks: [1, 2])
        #expect(result.sizes == [1: Self.small, 2: Self.big])
        #expect(result.frames.map { $0.0 } == [0, 1, 2, 3, 4, 5, 20, 21])
    }

    @Test("a camera whose first keyframe does not come within the header's wait keeps the plan's size")
    func headerWaitsAtMostHeaderWait() {
        var timeline = RecordingTimeline(start: .zero)
        timeline.addVideoTrack(1)
        timeline.addVideoTrack(2)
        timeline.video(track: 1, rtpTimestamp: 0, data: Self.keyframe, isKey: true, at: .milliseconds(100))
        #expect(timeline.release(at: .milliseconds(1_999)) == RecordingTimeline.Release())
        let release = timeline.release(at: .seconds(2))
        #expect(release.sizes == [1: Size(width: 320, height: 240)])
        #expect(release.frames.map(\.nanoseconds) == [100_000_000])
    }

    @Test func audioCountsBlocksAndAStalledTimerMovesOnNeverBack() {
        var timeline = RecordingTimeline(start: .seconds(10))
        timeline.addAudioTrack(1)
        timeline.addChatTrack(2)
        func stamps(_ release: RecordingTimeline.Release) -> [UInt64] { release.frames.map(\.nanoseconds) }
        timeline.audio([(track: 1, data: [1])], at: .milliseconds(10_005))
        // A late timer firing twice: the second block is still 20 ms later.
        timeline.audio([(track: 1, data: [2])], at: .milliseconds(10_040))
        timeline.audio([(track: 1, data: [3])], at: .milliseconds(10_041))
        #expect(stamps(timeline.release(at: .milliseconds(10_345))) == [5_000_000, 25_000_000, 45_000_000])
        // A chat line before the newest block written is written after it, not before.
        timeline.chat(track: 2, data: [9], duration: 4_000_000_000, at: .milliseconds(10_030))
        // The timer stalled a second: blocks counted from the first would be older than what is written.
        timeline.audio([(track: 1, data: [4])], at: .milliseconds(11_400))
        #expect(stamps(timeline.release(at: .milliseconds(11_400))) == [45_000_000])
        timeline.audio([(track: 1, data: [5])], at: .milliseconds(11_420))
        #expect(stamps(timeline.drain()) == [1_400_000_000, 1_420_000_000])
        #expect(timeline.milliseconds(at: .milliseconds(11_500)) == 1_500)
        #expect(timeline.writtenMilliseconds == 1_420)
    }
}
