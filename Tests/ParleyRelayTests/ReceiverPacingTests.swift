import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's pacing of video for receivers whose downlink is limited, with a manual clock.
@Suite struct ReceiverPacingTests {
    @Test("a limited receiver's video leaves at 1.5 times its estimate; others are not paced")
    func videoLeavesAtItsPace() {
        var pacing = ReceiverPacing<Int>()
        #expect(pacing.setDownlink(800, of: 1).isEmpty)
        #expect(pacing.paces(1) && !pacing.paces(2))
        // A 15,000-byte keyframe in twelve 1,250-byte packets, all at once: 1.2 Mbit/s lets 150 bytes out a ms.
        for index in 0..<12 { pacing.enqueue(index, size: 1_250, for: 1) }
        var left: [(at: Int, packet: Int)] = []
        for ms in stride(from: 0, through: 150, by: 5) {
            for (receiver, packets) in pacing.release(at: Double(ms)) {
                #expect(receiver == 1)
                left += packets.map { (ms, $0) }
            }
        }
        #expect(left.map(\.packet) == Array(0..<12), "in order, all of them")
        // Over about 100 ms, not at once: never more than one packet a 5 ms tick (750 bytes of budget).
        let last = left.last?.at ?? 0
        #expect(last >= 80 && last <= 100, "\(left.map(\.at))")
        #expect(Dictionary(grouping: left, by: \.at).values.allSatisfy { $0.count <= 1 }, "\(left.map(\.at))")
    }

    @Test("past 400 ms of the pace waiting, the oldest video is dropped and counted")
    func backlogIsBounded() {
        var pacing = ReceiverPacing<Int>()
        _ = pacing.setDownlink(200, of: 1)  // 300 kbit/s: 400 ms is 15,000 bytes
        for index in 0..<20 { pacing.enqueue(index, size: 1_000, for: 1) }
        #expect(pacing.dropped == 5)
        let out = (0...100).flatMap { pacing.release(at: Double($0 * 5)).flatMap(\.packets) }
        #expect(out == Array(5..<20))
    }

    @Test("without a limit any more, what waited leaves at once; a receiver gone takes its queue with it")
    func limitGoneOrReceiverGone() {
        var pacing = ReceiverPacing<Int>()
        _ = pacing.setDownlink(100, of: 1)
        _ = pacing.setDownlink(100, of: 2)
        for index in 0..<4 {
            pacing.enqueue(index, size: 1_200, for: 1)
            pacing.enqueue(10 + index, size: 1_200, for: 2)
        }
        _ = pacing.release(at: 0)
        let rest = pacing.setDownlink(nil, of: 1)
        #expect(!rest.isEmpty && rest.last == 3 && !pacing.paces(1))
        pacing.forget(2)
        #expect(pacing.isEmpty && pacing.release(at: 100).isEmpty)
    }

    @Test("sent more than its estimate (the speaker's smallest layer always goes), the pace follows what is queued")
    func paceFollowsDemand() {
        // Two receivers with the floor's estimate (225 kbit/s of pace), each sent 250 kbit/s for a second (a packet
        // every 40 ms); then a 25,000-byte keyframe burst. Refreshed, 1's pace is 375 kbit/s (400 ms: 18,750
        // bytes: 15 packets may wait, 2 still did from the second before), so 7 of the burst's go; a receiver whose
        // pace stayed at 225 (11,250 bytes) loses 11.
        var pacing = ReceiverPacing<Int>()
        _ = pacing.setDownlink(150, of: 1)
        _ = pacing.setDownlink(150, of: 2)
        for tick in 0..<200 {
            if tick % 8 == 0 {
                pacing.enqueue(tick, size: 1_250, for: 1)
                pacing.enqueue(tick, size: 1_250, for: 2)
            }
            _ = pacing.release(at: Double(tick * 5))
        }
        #expect(pacing.dropped == 0)
        pacing.refresh(after: 1)
        _ = pacing.setDownlink(150, of: 2)  // a new report: the pace never falls below the estimate's
        var refreshed = pacing
        for index in 0..<20 { refreshed.enqueue(index, size: 1_250, for: 1) }
        #expect(refreshed.dropped == 7)
        var floor = ReceiverPacing<Int>()
        _ = floor.setDownlink(150, of: 2)
        for index in 0..<20 { floor.enqueue(index, size: 1_250, for: 2) }
        #expect(floor.dropped == 11)
    }
}
