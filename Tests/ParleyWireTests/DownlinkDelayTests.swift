import ParleyWire
import Testing

/// The delay half of the downlink estimate and the downlink's probes, with a manual clock: marks every 50 ms, the
/// relay's clock 10 s ahead of the receiver's (only differences count), 1 Mbit/s arriving from the relay.
@Suite("A receiver's downlink: the relay's send-time marks and probes")
struct DownlinkDelayTests {
    /// Feeds `count` marks from `start` (ms), one every 50 ms, the n-th delayed by `queue(n)` ms over a 20 ms path,
    /// with `kbps` arriving; returns the marks that cut the estimate (by index) and the bytes arrived after them.
    static func feed(
        _ estimator: inout DownlinkEstimator, from start: Double = 0, count: Int, kbps: Int = 1_000,
        bytes: inout Int, queue: (Int) -> Double
    ) -> [Int] {
        var cuts: [Int] = []
        for index in 0..<count {
            let sent = start + Double(index) * 50
            bytes += kbps * 50 / 8
            if estimator.marked(sentAt: sent + 10_000, at: sent + 20 + queue(index), arrivedBytes: bytes) {
                cuts.append(index)
            }
        }
        return cuts
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The queue (ms) behind the n-th mark.
        var queue: @Sendable (Int) -> Double
        /// Whether it cuts, and to what.
        var estimate: Double?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a steady path: no limit", queue: { _ in 0 }, estimate: nil),
        Case(
            name: "jitter of ±6 ms without a queue building: no limit",
            queue: { [0, 6, 2, 5, 1, 3, 6, 0, 4, 2][$0 % 10] }, estimate: nil),
        // A queue growing 3 ms a mark from the 40th (2 s in): the trend says overuse within a few marks, once the
        // queue is 15 ms deep: 85 % of what arrives (1 Mbit/s sent, spread 53 ms for every 50: 943 kbit/s).
        Case(
            name: "a queue filling: 85 % of what arrives", queue: { max(0, Double($0 - 40) * 3) },
            estimate: (0.85 * 1_000_000 * 50 / 53).rounded()),
        // A slow rise that stops at 12 ms (a longer route): a trend, but never a 15 ms queue.
        Case(
            name: "a rise that stops short of 15 ms: no limit", queue: { min(12, max(0, Double($0 - 40)) * 1.5) },
            estimate: nil),
    ]

    /// An estimator whose link loss has limited once: 20 % lost of 2 Mbit/s, 1.8 Mbit/s.
    static func limited() -> DownlinkEstimator {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        estimator.update(at: 1_000, bytes: 250_000, expected: 200, lost: 40)
        return estimator
    }

    @Test("once loss showed a limit, the marks' delay trend cuts only for a queue that fills", arguments: cases)
    func trendCuts(_ row: Case) {
        var estimator = Self.limited()
        var bytes = 0
        _ = Self.feed(&estimator, from: 1_000, count: 100, bytes: &bytes, queue: row.queue)
        #expect(
            estimator.estimate?.rounded() == row.estimate ?? 1_800_000,
            "\(estimator.reason), queue \(estimator.queueDelay) ms")
        if row.estimate != nil { #expect(estimator.reason == .delay) }
    }

    /// A radio link's jitter with the packets in order reads as a queue filling now and then: on a link with room
    /// (no loss ever showed a limit) the delay part sets none.
    @Test("before loss showed a limit, a rising delay sets none")
    func noFirstLimitFromDelay() {
        var estimator = DownlinkEstimator()
        var bytes = 0
        let cuts = Self.feed(&estimator, count: 100, bytes: &bytes) { max(0, Double($0 - 40) * 3) }
        #expect(cuts.isEmpty && estimator.estimate == nil && estimator.usage == .overusing)
    }

    @Test("cut at most once a second for delay, and no climb while the queue fills or a cut is under a second old")
    func cutOnceASecondAndHold() {
        var estimator = Self.limited()
        var bytes = 0
        // The queue keeps filling for 3 s (60 marks) after it starts: cuts a second apart at most.
        let cuts = Self.feed(&estimator, from: 1_000, count: 100, bytes: &bytes) { max(0, Double($0 - 40) * 3) }
        #expect(!cuts.isEmpty)
        for (earlier, later) in zip(cuts, cuts.dropFirst()) { #expect(later - earlier >= 20, "\(cuts)") }
        // The count's second, clean: the queue is still filling, so the estimate holds.
        let held = estimator.estimate
        estimator.update(at: 6_000, bytes: 125_000, expected: 100, lost: 0)
        #expect(estimator.estimate == held && estimator.reason == .delay, "\(estimator.reason)")
    }

    @Test("a probe that found room raises the estimate and ends the hold after an overflow; a lower one does nothing")
    func probeRaises() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        estimator.update(at: 1_000, bytes: 62_500, expected: 100, lost: 30)  // 500 kbit/s, 30 % lost
        #expect(estimator.estimate == 425_000)
        estimator.probeFound(.carried(400_000), at: 1_500)
        #expect(estimator.estimate == 425_000)
        estimator.probeFound(.carried(900_000), at: 1_500)
        #expect(estimator.estimate == 900_000 && estimator.reason == .probed)
        // The ceiling (90 % of the 500 that overflowed) no longer holds it: a clean second climbs from there.
        estimator.update(at: 2_000, bytes: 55_000, expected: 100, lost: 0)
        #expect(estimator.estimate! > 900_000 && estimator.reason == .climbing, "\(estimator.reason)")
    }

    /// Climbing past the level a link overflowed at once the hold ran out overflowed it again: a freeze of every
    /// tile every 20-80 s on a link that never had more room. A probe costs a few kilobytes of queue instead.
    @Test("after a probe found the link full, the ceiling holds past its 20 s until a probe finds room")
    func fullProbeKeepsTheCeiling() {
        var estimator = DownlinkEstimator()
        estimator.update(at: 0, bytes: 0, expected: 0, lost: 0)
        estimator.update(at: 1_000, bytes: 125_000, expected: 200, lost: 40)  // 1 Mbit/s, 20 %: 900, ceiling 900
        estimator.probeFound(.full, at: 4_000)
        for second in 2...40 { estimator.update(at: Double(second) * 1_000, bytes: 100_000, expected: 200, lost: 0) }
        #expect(estimator.estimate == 900_000 && estimator.reason == .holding, "\(estimator.reason)")
        estimator.probeFound(.carried(1_300_000), at: 40_500)
        estimator.update(at: 41_000, bytes: 150_000, expected: 200, lost: 0)
        #expect(estimator.estimate! > 1_300_000 && estimator.reason == .climbing)
    }

    @Test("a restart forgets the marks: a new path's longer delay is no queue")
    func restartForgetsTheMarks() {
        var estimator = DownlinkEstimator()
        var bytes = 0
        _ = Self.feed(&estimator, count: 40, bytes: &bytes) { _ in 0 }
        estimator.restart(at: 2_000)
        _ = Self.feed(&estimator, from: 2_000, count: 40, bytes: &bytes) { _ in 80 }
        #expect(estimator.queueDelay == 0 && estimator.estimate == nil)
    }

    // MARK: - The wire

    @Test("a mark and a probe's mark read back as written; garbage is no mark")
    func markOnTheWire() throws {
        let plain = SendTimeMark(mediaSSRC: 0xA0D1_0000, sentAt: 0x1_2345_6789)
        let probe = SendTimeMark(
            mediaSSRC: 7, sentAt: 5, probe: ProbeTag(cluster: 3, index: 4, count: 19), padding: 972)
        for mark in [plain, probe] {
            let bytes = mark.rtcpPacket.serialized()
            #expect(bytes.count == mark.size)
            guard case .application(let app)? = try RTCPPacket.parseCompound(bytes).first else {
                Issue.record("not an APP packet")
                return
            }
            #expect(SendTimeMark(app) == mark)
        }
        #expect(plain.size == 28 && probe.size == 1_000)
        func data(_ fields: [UInt8]) -> ApplicationPacket {
            ApplicationPacket(subtype: 0, ssrc: 1, name: "PSTM", data: fields)
        }
        let time: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        #expect(SendTimeMark(data(time)) == nil, "too short")
        #expect(SendTimeMark(data(time + Array(repeating: 0, count: 11))) == nil, "not whole words (fuzz target marks)")
        #expect(SendTimeMark(data(time + [0, 1, 0, 5, 0, 5, 0, 0])) == nil, "index not within the count")
        #expect(SendTimeMark(data(time + [0, 0, 0, 1, 0, 0, 0, 0])) == nil, "no cluster, yet an index")
        #expect(SendTimeMark(data(time + [0, 0, 0, 0, 0, 0, 0, 0] + Array(repeating: 0, count: 1_204))) == nil)
        #expect(
            SendTimeMark(
                ApplicationPacket(subtype: 0, ssrc: 1, name: "PFWD", data: time + Array(repeating: 0, count: 8)))
                == nil)
    }

    @Test("a probe request reads back as written; a rate out of bounds or cluster 0 is none")
    func requestOnTheWire() throws {
        let request = ProbeRequest(ssrc: 9, cluster: 2, kbps: 700)
        let bytes = request.rtcpPacket.serialized()
        #expect(bytes.count == 20)
        guard case .application(let app)? = try RTCPPacket.parseCompound(bytes).first else {
            Issue.record("not an APP packet")
            return
        }
        #expect(ProbeRequest(app) == request)
        #expect(ProbeRequest(ssrc: 9, cluster: 2, kbps: 90_000).kbps == 5_000)
        func data(_ fields: [UInt8]) -> ApplicationPacket {
            ApplicationPacket(subtype: 0, ssrc: 1, name: "PPRB", data: fields)
        }
        #expect(ProbeRequest(data([0, 0, 0, 0, 0, 0, 2, 188])) == nil, "cluster 0")
        #expect(ProbeRequest(data([0, 1, 0, 0, 0, 0, 0, 10])) == nil, "10 kbit/s")
        #expect(ProbeRequest(data([0, 1, 0, 0, 0, 0x10, 0, 0])) == nil, "1 Gbit/s")
        #expect(ProbeRequest(data([0, 1, 0, 0])) == nil, "short")
    }

    // MARK: - Probes

    /// A probe's marks: `count` sent over 150 ms; those in `lost` never come; the n-th queued `queue(n)` ms; `kbps`
    /// of media and padding arriving meanwhile.
    static func probe(
        _ probe: inout DownlinkProbe, cluster: UInt16, at start: Double, count: Int = 20, lost: Set<Int> = [],
        kbps: Int = 1_600, queue: (Int) -> Double = { _ in 0 }
    ) -> ProbeOutcome? {
        var outcome: ProbeOutcome?
        var bytes = 0
        for index in 0..<count where !lost.contains(index) {
            let sent = 150 * Double(index) / Double(count)
            bytes += kbps * 150 / 8 / count
            let tag = ProbeTag(cluster: cluster, index: UInt16(index), count: UInt16(count))
            outcome =
                probe.marked(tag, sentAt: start + sent, at: start + sent + 20 + queue(index), arrivedBytes: bytes)
                ?? outcome
        }
        return outcome
    }

    @Test("a probe is asked for only while video is held back and the estimate has been calm for 2 s")
    func probeStarts() {
        var probe = DownlinkProbe()
        #expect(probe.start(at: 10_000, estimate: 800_000, held: false, calmSince: 0) == nil)
        #expect(probe.start(at: 10_000, estimate: nil, held: true, calmSince: 0) == nil)
        #expect(probe.start(at: 10_000, estimate: 800_000, held: true, calmSince: 9_000) == nil)
        let asked = probe.start(at: 10_000, estimate: 800_000, held: true, calmSince: 5_000)
        #expect(asked?.cluster == 1 && asked?.kbps == 400, "padding at half the estimate")
        #expect(probe.start(at: 10_001, estimate: 800_000, held: true, calmSince: 5_000) == nil, "one at a time")
    }

    @Test("judged by the marks: carried when they kept pace, full when their queue grew or they were lost")
    func probeJudged() {
        var probe = DownlinkProbe()
        _ = probe.start(at: 0, estimate: 800_000, held: true, calmSince: -5_000)
        // 1.6 Mbit/s of media and padding arrived at the pace sent: 95 % of it (the first mark's share not counted).
        guard case .carried(let rate)? = Self.probe(&probe, cluster: 1, at: 0) else {
            Issue.record("not carried: \(String(describing: probe.lastOutcome))")
            return
        }
        #expect(abs(rate - 0.95 * 1_600_000 * 19 / 20 * 150 / 142.5) < 20_000, "\(rate)")
        // The next a second after it was judged: its queue grows by 2 ms a mark (40 ms): full.
        #expect(probe.start(at: 1_100, estimate: 800_000, held: true, calmSince: -5_000) == nil)
        _ = probe.start(at: 1_200, estimate: 800_000, held: true, calmSince: -5_000)
        #expect(Self.probe(&probe, cluster: 2, at: 1_200) { Double($0) * 2 } == .full)
        // After a full one, the next waits 3 s; then 3 of 20 lost (85 % came): full, the last mark still judged.
        #expect(probe.start(at: 4_300, estimate: 800_000, held: true, calmSince: -5_000) == nil)
        _ = probe.start(at: 4_500, estimate: 800_000, held: true, calmSince: -5_000)
        #expect(Self.probe(&probe, cluster: 3, at: 4_500, lost: [3, 8, 12]) == .full)
        // Twice full in a row: the next 6 s later, then every 8 s (a full probe holds the estimate), or at once when
        // the link changed.
        #expect(probe.start(at: 10_000, estimate: 800_000, held: true, calmSince: -5_000) == nil)
        _ = probe.start(at: 10_900, estimate: 800_000, held: true, calmSince: -5_000)
        #expect(Self.probe(&probe, cluster: 4, at: 10_900, lost: [1, 2, 3]) == .full)
        #expect(probe.start(at: 18_000, estimate: 800_000, held: true, calmSince: -5_000) == nil)
        probe.linkChanged()
        #expect(probe.start(at: 18_000, estimate: 800_000, held: true, calmSince: -5_000)?.cluster == 5)
    }

    @Test(
        "a probe carrying no more than 15 % past where the link last overflowed found no room",
        arguments: [
            (level: 1_400_000.0, carried: false), (level: 1_300_000, carried: true), (level: nil, carried: true),
        ])
    func probeBelowTheOverflowLevel(level: Double?, carried: Bool) {
        var probe = DownlinkProbe()
        _ = probe.start(at: 0, estimate: 800_000, held: true, calmSince: -5_000)
        // 1.6 Mbit/s arrived at the pace sent: carried at about 1.52 Mbit/s, which is 1.09 times 1.4 Mbit/s.
        var outcome: ProbeOutcome?
        var bytes = 0
        for index in 0..<20 {
            let sent = 150 * Double(index) / 20
            bytes += 1_600 * 150 / 8 / 20
            let tag = ProbeTag(cluster: 1, index: UInt16(index), count: 20)
            outcome = probe.marked(tag, sentAt: sent, at: sent + 20, arrivedBytes: bytes, overflowLevel: level)
        }
        if carried {
            guard case .carried? = outcome else {
                Issue.record("\(String(describing: outcome))")
                return
            }
        } else {
            #expect(outcome == .full)
        }
    }

    @Test("a probe whose last marks never came is judged on those that did, half a second after it should have ended")
    func probeGivenUp() {
        var probe = DownlinkProbe()
        _ = probe.start(at: 0, estimate: 800_000, held: true, calmSince: -5_000)
        #expect(Self.probe(&probe, cluster: 1, at: 0, lost: [19]) == nil)
        #expect(probe.poll(at: 600) == nil)
        guard case .carried? = probe.poll(at: 700) else {
            Issue.record("19 of 20 kept pace: \(String(describing: probe.lastOutcome))")
            return
        }
        // Marks of another cluster (a stale one) or after the judgement are not counted.
        let stale = ProbeTag(cluster: 1, index: 19, count: 20)
        #expect(probe.marked(stale, sentAt: 150, at: 800, arrivedBytes: 0) == nil)
    }
}
