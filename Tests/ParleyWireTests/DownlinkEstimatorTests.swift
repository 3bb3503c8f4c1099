import ParleyWire
import Testing

@Suite("A receiver's downlink estimate")
struct DownlinkEstimatorTests {
    /// One second of arrivals: kbit/s that arrived, packets the relay sent and those that never came; then the
    /// estimate and why.
    struct Row: Sendable, CustomTestStringConvertible {
        var kbps: Int
        var expected: Int
        var lost: Int
        var estimate: Double?
        var reason: EstimateReason
        var testDescription: String {
            "\(kbps) kbit/s, \(lost) of \(expected) missing → \(estimate.map { "\($0)" } ?? "none")"
        }
    }

    static let rows: [Row] = [
        Row(kbps: 2_000, expected: 200, lost: 0, estimate: nil, reason: .starting),  // clean: no limit, no guess
        Row(kbps: 2_000, expected: 200, lost: 6, estimate: nil, reason: .starting),  // 3 %: still none
        // 20 % lost at 1 Mbit/s: what arrived, less half the loss.
        Row(kbps: 1_000, expected: 200, lost: 40, estimate: 900_000, reason: .loss(0.2)),
        Row(kbps: 850, expected: 200, lost: 10, estimate: 900_000, reason: .holding),  // 5 %: held
        // Clean again: within 20 s of the cut, no higher than 90 % of what arrived in the overflow (1 Mbit/s).
        Row(kbps: 850, expected: 200, lost: 0, estimate: 900_000, reason: .holding),
        // Too few packets sent to judge loss by: counted as none.
        Row(kbps: 850, expected: 10, lost: 5, estimate: 900_000, reason: .holding),
        // Far less arrives (tiles went smaller): the estimate stays within reach of it (100 + 500 kbit/s).
        Row(kbps: 100, expected: 100, lost: 0, estimate: 600_000, reason: .climbing),
        // Far from the capacity found, it climbs 8 % a second.
        Row(kbps: 500, expected: 100, lost: 0, estimate: 648_000, reason: .climbing),
        // Half lost at 100 kbit/s: never under the floor where several voices and the smallest layers fit.
        Row(kbps: 100, expected: 100, lost: 50, estimate: 150_000, reason: .loss(0.5)),
    ]

    @Test("no limit until loss shows one; cut on loss, held in between, climbing when clean")
    func followsLoss() {
        var estimator = DownlinkEstimator()
        #expect(estimator.update(at: 0, bytes: 0, expected: 0, lost: 0) == nil)
        for (second, row) in Self.rows.enumerated() {
            let estimate = estimator.update(
                at: Double(second + 1) * 1_000, bytes: row.kbps * 1_000 / 8, expected: row.expected, lost: row.lost)
            #expect(
                estimate.map { ($0 * 1_000).rounded() / 1_000 } == row.estimate && estimator.reason == row.reason,
                "\(row.testDescription): \(estimate.map { "\($0)" } ?? "none"), \(estimator.reason)")
        }
    }

    /// A Wi-Fi link losing about 5 % at random, in bursts: some seconds lose over 10 %. Judged against nothing,
    /// one such second set a limit on a link with room; against the link's own loss it does not, and a real squeeze
    /// (30 % lost) still does.
    @Test("random loss is the link's own: a second over 10 % sets no limit on a lossy link, a squeeze still does")
    func randomLossIsTheLinks() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        let losses = [5, 4, 6, 5, 3, 7, 5, 13, 4, 6]
        for (second, lost) in losses.enumerated() {
            estimator.update(at: Double(second + 1) * 1_000, bytes: 250_000, expected: 100, lost: lost)
            #expect(estimator.estimate == nil, "\(lost) % lost after \(second) s: \(estimator.reason)")
        }
        #expect(estimator.inherentLoss > 0.03 && estimator.inherentLoss <= 0.05)
        estimator.update(at: 11_000, bytes: 125_000, expected: 100, lost: 30)
        #expect(estimator.estimate == 850_000, "30 % lost at 1 Mbit/s: what arrived, less half the loss")
    }

    /// Climbing straight back to where a link overflowed overflowed it again every 10 s (the lab's
    /// `congested-downlink`), each time freezing every tile for a second or two.
    @Test("after a cut the estimate stays under 90 % of where the overflow began for 20 s, then climbs again")
    func ceilingAfterACut() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        // The call's first overflow, no estimate before it: 20 % lost with 1 Mbit/s arriving, the ceiling 900.
        #expect(estimator.update(at: 1_000, bytes: 125_000, expected: 200, lost: 40) == 900_000)
        // Its aftermath a second later (resends, keyframes): cut again, the ceiling kept (700 arrived: no higher).
        #expect(estimator.update(at: 2_000, bytes: 87_500, expected: 200, lost: 40) == 630_000)
        var climbed: [Double] = []
        for second in 3...24 {
            climbed.append(
                estimator.update(at: Double(second) * 1_000, bytes: 87_500, expected: 200, lost: 0) ?? 0)
        }
        // Near the 700 kbit/s found at the last cut: 5 % of it a second, up to the ceiling until 20 s after the cut.
        #expect(climbed.prefix(3) == [665_000, 700_000, 735_000], "\(climbed.prefix(3))")
        #expect(climbed[7...18].allSatisfy { $0 == 900_000 }, "\(climbed)")
        #expect(estimator.reason == .climbing && climbed.last! > 900_000, "\(climbed.suffix(3))")
        // Past the ceiling it overflows again at about the same level (1,005 kbit/s): the next hold is 40 s.
        estimator.update(at: 25_000, bytes: 100_000, expected: 200, lost: 60)
        #expect(estimator.reason == .loss(0.3) && estimator.hold == 40_000)
        // An overflow while the ceiling holds (a tile's keyframe) is no reason to hold longer.
        estimator.update(at: 30_000, bytes: 100_000, expected: 200, lost: 60)
        #expect(estimator.hold == 20_000)
    }

    @Test("a restart leaves out what came before: the next interval is from there")
    func restart() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        estimator.restart(at: 9_000)
        // One second at 1 Mbit/s with 20 % lost: over the 10 s since the start it would read as 100 kbit/s.
        #expect(estimator.update(at: 10_000, bytes: 125_000, expected: 100, lost: 20) == 900_000)
    }

    @Test("the relay's count of what it sent reads back as written; another APP packet or size is not one")
    func forwardedCount() throws {
        let count = ForwardedCount(mediaSSRC: 0x1234_5678, packets: 4_000_000_000, bytes: 7)
        let bytes = count.rtcpPacket.serialized()
        #expect(bytes.count == 20)
        guard case .application(let app)? = try RTCPPacket.parseCompound(bytes).first else {
            Issue.record("not an APP packet")
            return
        }
        #expect(ForwardedCount(app) == count)
        #expect(
            ForwardedCount(ApplicationPacket(subtype: 0, ssrc: 1, name: "PRLY", data: [UInt8](repeating: 0, count: 8)))
                == nil)
        #expect(
            ForwardedCount(ApplicationPacket(subtype: 1, ssrc: 1, name: "PFWD", data: [UInt8](repeating: 0, count: 8)))
                == nil)
        #expect(ForwardedCount(ApplicationPacket(subtype: 0, ssrc: 1, name: "PFWD", data: [0, 0, 0, 0])) == nil)
    }

    @Test("an interval of no time, or garbage counts, change nothing and never trap")
    func badInput() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 1_000, bytes: 0, expected: 0, lost: 0)
        #expect(estimator.update(at: 1_000, bytes: 125_000, expected: 200, lost: 100) == nil)  // no time passed
        #expect(estimator.update(at: 500, bytes: 125_000, expected: 200, lost: 100) == nil)  // time went back
        // More lost than due counts as all lost; negative counts as none.
        #expect(estimator.update(at: 1_500, bytes: -5, expected: 100, lost: 500) == DownlinkEstimator.minimum)
    }
}
