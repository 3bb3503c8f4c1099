import ParleyEngine
import Testing

/// A freeze is a gap of over 300 ms between decoded frames, counted with its whole length.
@Suite struct VideoFreezesTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// When each frame was decoded (ms).
        var frames: [Int]
        var count: Int
        var totalMs: Int
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "no frames", frames: [], count: 0, totalMs: 0),
        Row(name: "30 fps", frames: Array(stride(from: 0, through: 1_000, by: 33)), count: 0, totalMs: 0),
        Row(name: "exactly 300 ms is no freeze", frames: [0, 300, 600], count: 0, totalMs: 0),
        Row(name: "one gap of 301 ms", frames: [0, 33, 334, 367], count: 1, totalMs: 301),
        Row(name: "two gaps, their whole lengths", frames: [0, 500, 533, 1_533], count: 2, totalMs: 1_500),
        Row(name: "the first frame starts nothing", frames: [5_000, 5_033], count: 0, totalMs: 0),
    ]

    @Test(arguments: rows)
    func freezes(_ row: Row) {
        var freezes = VideoFreezes()
        for frame in row.frames { freezes.frame(at: .milliseconds(frame)) }
        #expect(freezes.count == row.count)
        #expect(freezes.total == .milliseconds(row.totalMs))
    }

    @Test("a freeze going on counts up to now, and once ended counts its whole length once")
    func ongoing() {
        var freezes = VideoFreezes()
        freezes.frame(at: .milliseconds(1_000))
        #expect(freezes.asOf(.milliseconds(1_300)) == (0, .zero))
        #expect(freezes.asOf(.milliseconds(4_000)) == (1, .milliseconds(3_000)))
        freezes.frame(at: .milliseconds(5_000))
        #expect(freezes.asOf(.milliseconds(5_100)) == (1, .milliseconds(4_000)))
        #expect(VideoFreezes().asOf(.seconds(9)) == (0, .zero))
        // A camera turned off at 5.5 s: the 500 ms frozen before it kept, the gap until its next frame no freeze.
        freezes.restart(at: .milliseconds(5_500))
        #expect(freezes.asOf(.milliseconds(5_500)) == (2, .milliseconds(4_500)))
        freezes.frame(at: .milliseconds(9_000))
        #expect(freezes.asOf(.milliseconds(9_100)) == (2, .milliseconds(4_500)))
    }
}
