import ParleyWire
import Testing

@testable import ParleyEngine

/// The pacing of a member's packets, with time as an input: sound never waits, a keyframe is spread at 2.5 times
/// the estimate (never under the least rate).
struct MediaPacingTests {
    static let audioSSRC: UInt32 = 0x1000
    static let videoSSRC: UInt32 = 0x1001

    static func packet(_ ssrc: UInt32, _ sequence: UInt16, payload: Int) -> RTPPacket {
        RTPPacket(
            header: RTPHeader(
                payloadType: ssrc == audioSSRC ? 111 : 96, sequenceNumber: sequence, timestamp: 0, ssrc: ssrc),
            payload: [UInt8](repeating: 0, count: payload))
    }

    /// A keyframe of `count` packets of 1,200 bytes.
    static func keyframe(_ count: Int) -> [RTPPacket] {
        (0..<count).map { packet(videoSSRC, UInt16($0), payload: 1_200) }
    }

    /// Releases every millisecond from 0 to `until`; when each packet left (ms), by sequence number and stream.
    static func leaveTimes(
        _ pacing: inout MediaPacing, estimate: Double, until: Int, adding: [Int: [RTPPacket]] = [:]
    ) -> [(ms: Int, packet: RTPPacket)] {
        var left: [(Int, RTPPacket)] = []
        for ms in 0...until {
            if let more = adding[ms] { pacing.enqueue(more, audioSSRC: audioSSRC) }
            for packet in pacing.release(at: Double(ms), estimate: estimate) { left.append((ms, packet)) }
        }
        return left
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var estimate: Double
        /// When the last of a 25-packet keyframe leaves, within.
        var lastLeaves: ClosedRange<Int>
        var testDescription: String { "estimate \(Int(estimate / 1_000)) kbit/s" }
    }

    // The last of 25 packets of 1,240 bytes on the wire leaves once the 24 before it are paid for (238 kbit): at
    // 2.5 x 1 Mbit/s after ~95 ms, at 2.5 x 2 Mbit/s ~48 ms; an estimate of 100 kbit/s paces at the least rate,
    // 2.5 x 250 kbit/s: ~381 ms.
    static let rows = [
        Row(estimate: 1_000_000, lastLeaves: 90...100),
        Row(estimate: 2_000_000, lastLeaves: 45...52),
        Row(estimate: 100_000, lastLeaves: 375...390),
    ]

    @Test(arguments: rows)
    func aKeyframeIsSpreadAtTwoAndAHalfTimesTheEstimate(_ row: Row) throws {
        var pacing = MediaPacing()
        let left = Self.leaveTimes(&pacing, estimate: row.estimate, until: 1_000, adding: [0: Self.keyframe(25)])
        #expect(left.count == 25)
        #expect(left.map(\.packet.header.sequenceNumber) == (0..<25).map { UInt16($0) }, "in order")
        let last = try #require(left.last?.ms)
        #expect(row.lastLeaves.contains(last), "the last packet left at \(last) ms")
        // Never more than the 5 ms of budget saved up (at least 1,500 bytes) plus one packet in any 5 ms.
        let rate = max(MediaPacing.leastRate, row.estimate) * 2.5
        let most = Int(max(rate * 5 / 8_000, 1_500)) + 2 * 1_240
        for start in 0...last {
            let bytes = left.filter { $0.ms >= start && $0.ms < start + 5 }.reduce(0) {
                $0 + $1.packet.payload.count + 40
            }
            #expect(bytes <= most, "\(bytes) bytes left in the 5 ms from \(start) ms")
        }
        #expect(pacing.waiting == 0 && pacing.nextRelease(after: 1_000) == nil)
    }

    @Test func soundLeavesAtOnceAheadOfTheVideoWaiting() {
        var pacing = MediaPacing()
        let voice = [Self.packet(Self.audioSSRC, 7, payload: 80)]
        let left = Self.leaveTimes(
            &pacing, estimate: 500_000, until: 300, adding: [0: Self.keyframe(20), 10: voice, 30: voice])
        let sound = left.filter { $0.packet.header.ssrc == Self.audioSSRC }
        #expect(sound.map(\.ms) == [10, 30], "each block leaves the moment it is handed over")
        let firstVideoAfter = left.firstIndex { $0.ms >= 10 && $0.packet.header.ssrc == Self.videoSSRC }
        let soundIndex = left.firstIndex { $0.packet.header.ssrc == Self.audioSSRC }
        #expect(soundIndex.map { index in firstVideoAfter.map { index < $0 } ?? true } == true, "ahead of video")
        #expect(left.filter { $0.packet.header.ssrc == Self.videoSSRC }.count == 20)
    }

    @Test func whenNothingWaitsThereIsNoNextRelease() {
        var pacing = MediaPacing()
        #expect(pacing.nextRelease(after: 0) == nil)
        pacing.enqueue(Self.keyframe(3), audioSSRC: Self.audioSSRC)
        #expect(pacing.nextRelease(after: 0) != nil)
        _ = Self.leaveTimes(&pacing, estimate: 1_000_000, until: 50)
        #expect(pacing.nextRelease(after: 50) == nil)
    }
}
