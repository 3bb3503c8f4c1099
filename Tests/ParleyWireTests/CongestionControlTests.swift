import Foundation
import Testing

@testable import ParleyWire

/// The congestion controller's parts with time as an input: the sent-packet history, the receiver's feedback, the
/// delay trend, and the whole estimator closed over a simulated bottleneck link (a manual clock, 1 ms steps).
@Suite("Congestion control")
struct CongestionControlTests {
    // MARK: Sent packets and feedback

    @Test("feedback is matched to send times and sizes, each packet once, across the 16-bit wrap")
    func history() {
        var history = SentPacketHistory(capacity: 16)
        for (index, sequence) in [UInt16(65_534), 65_535, 0, 1].enumerated() {
            history.sent(sequence, size: 100 + index, at: Double(index) * 10)
        }
        let feedback = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 65_535, feedbackCount: 0, arrivals: [400, nil, 480])
        let results = history.results(of: feedback)
        #expect(
            results == [
                PacketResult(sequence: 65_535, sentAt: 10, size: 101, arrivedAt: 100),
                PacketResult(sequence: 65_536, sentAt: 20, size: 102, arrivedAt: nil),
                PacketResult(sequence: 65_537, sentAt: 30, size: 103, arrivedAt: 120),
            ])
        // The same feedback again (a duplicate datagram) reports nothing new.
        let again = history.results(of: feedback)
        #expect(again.isEmpty)
    }

    @Test("packets older than the history's capacity are skipped, not matched to a newer packet in their slot")
    func historyBound() {
        var history = SentPacketHistory(capacity: 4)
        for sequence in UInt16(0)..<10 { history.sent(sequence, size: 1, at: Double(sequence)) }
        let feedback = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 2, feedbackCount: 0, arrivals: Array(repeating: 40, count: 8))
        let matched = history.results(of: feedback)
        #expect(matched.map(\.sequence) == [6, 7, 8, 9])
    }

    @Test("the receiver reports every packet since its last feedback, the missing ones as lost")
    func recorder() throws {
        var recorder = FeedbackRecorder()
        let nothing = recorder.feedback(senderSSRC: 1, mediaSSRC: 2)
        #expect(nothing == nil)
        recorder.received(10, at: 1.0)
        recorder.received(12, at: 2.5)
        let firstReport = recorder.feedback(senderSSRC: 1, mediaSSRC: 2)
        let first = try #require(firstReport)
        #expect(first.baseSequence == 10)
        #expect(first.arrivals == [4, nil, 10])
        #expect(first.feedbackCount == 0)
        // 11 arrives after it was reported lost: counted, not reported again.
        recorder.received(11, at: 3)
        recorder.received(13, at: 4)
        let secondReport = recorder.feedback(senderSSRC: 1, mediaSSRC: 2)
        let second = try #require(secondReport)
        #expect(second.baseSequence == 13)
        #expect(second.arrivals == [16])
        #expect(second.feedbackCount == 1)
        #expect(recorder.lateArrivals == 1)
    }

    @Test("a receiver never waits on more packets than one feedback may carry")
    func recorderBound() throws {
        var recorder = FeedbackRecorder()
        recorder.received(0, at: 0)
        recorder.received(20_000, at: 1)
        let report = recorder.feedback(senderSSRC: 1, mediaSSRC: 2)
        let feedback = try #require(report)
        #expect(feedback.arrivals.count == TransportFeedback.packetLimit)
        #expect(feedback.arrivals.last == 4)
        _ = try feedback.raw()
    }

    // MARK: Delay trend

    /// Groups 20 ms apart; group `index` arrives `extra(index)` ms later than it would on an empty path.
    static func trend(groups: Int, extra: (Int) -> Double) -> [LinkUsage] {
        var trend = DelayTrend()
        return (0..<groups).map { index in
            let sent = Double(index) * 20
            return trend.add(sentAt: sent, arrivedAt: sent + 30 + extra(index))
        }
    }

    @Test("steady delay is normal; a queue that keeps growing is overuse; one that drains is underuse")
    func delayTrend() {
        #expect(!Self.trend(groups: 100) { _ in 0 }.contains(.overusing))
        let growing = Self.trend(groups: 100) { index in index < 40 ? 0 : Double(index - 40) * 3 }
        #expect(growing.prefix(40).allSatisfy { $0 == .normal })
        #expect(growing.suffix(30).contains(.overusing))
        let draining = Self.trend(groups: 100) { index in index < 40 ? 200 : max(0, 200 - Double(index - 40) * 5) }
        #expect(draining[45..<75].contains(.underusing))
    }

    // MARK: The estimator over a simulated link

    /// A bottleneck: packets queue at `capacity` bits a second behind each other (a tail drop past `queueLimit` ms),
    /// then take `propagation` ms; every `dropEvery`th packet is lost on the way.
    struct Link {
        var capacity: (Double) -> Double
        var propagation = 20.0
        var queueLimit = 300.0
        var dropEvery: Int?
        /// Random loss in bursts (Gilbert): the long-run share lost and the mean burst length.
        var burstLoss: (share: Double, meanLength: Double)?
        var losing = false
        /// The standard deviation of each packet's propagation (ms); a packet never overtakes the one before.
        var jitter = 0.0
        /// A token bucket's burst (bytes, as `tc tbf`'s): up to this much leaves at once after a quiet spell.
        var burst = 0.0
        var tokens = 0.0
        var tokensAt = 0.0
        var freeAt = 0.0
        var count = 0
        var lastArrival = 0.0
        var seed: UInt64 = 0x51_0B11E

        mutating func carry(size: Int, sentAt: Double) -> Double? {
            count += 1
            if let dropEvery, count % dropEvery == 0 { return nil }
            if let burstLoss {
                let end = 1 / burstLoss.meanLength
                let start = end * burstLoss.share / (1 - burstLoss.share)
                losing = losing ? uniform() >= end : uniform() < start
                if losing { return nil }
            }
            let start = max(sentAt, freeAt)
            guard start - sentAt <= queueLimit else { return nil }
            // Tokens gather at the capacity up to the burst; a packet leaves once there are enough for it.
            let available = min(burst, tokens + (start - tokensAt) * capacity(sentAt) / 8_000)
            let wanting = max(0, Double(size) - available)
            freeAt = start + wanting * 8 / capacity(sentAt) * 1_000
            tokens = max(0, available - Double(size))
            tokensAt = freeAt
            let arrival = max(lastArrival, freeAt + max(0, propagation + jitter * gaussian()))
            lastArrival = arrival
            return arrival
        }

        /// Standard normal from a seeded SplitMix64 (Box-Muller).
        mutating func uniform() -> Double {
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return Double(z >> 11) / Double(1 << 53)
        }

        mutating func gaussian() -> Double {
            let u = max(uniform(), .leastNonzeroMagnitude)
            return (-2 * log(u)).squareRoot() * cos(2 * .pi * uniform())
        }
    }

    /// Runs a call's sender over `link` for `seconds`, 1,200-byte packets at the target, feedback every 50 ms back
    /// over `propagation`; returns the target and reason at each whole 100 ms.
    /// `sendShare` of the target is what the sender uses (an encoder under its target sends less).
    /// With `probingUpTo`, the sender probes (`startProbe`) for what it wants and pads as a probe asks.
    static func simulate(
        _ link: Link, seconds: Int, sendShare: Double = 1, probingUpTo wanted: Double? = nil,
        estimator: inout BandwidthEstimator
    ) -> [(at: Double, target: Double, reason: EstimateReason)] {
        var link = link
        var recorder = FeedbackRecorder()
        var inFlight: [(arrival: Double, sequence: UInt16)] = []
        var returning: [(at: Double, feedback: TransportFeedback)] = []
        var nextSend = 0.0
        var trace: [(at: Double, target: Double, reason: EstimateReason)] = []
        for step in 0..<(seconds * 1_000) {
            let now = Double(step)
            while nextSend <= now {
                let sequence = estimator.sent(size: 1_200, at: nextSend)
                if let arrival = link.carry(size: 1_200, sentAt: nextSend) { inFlight.append((arrival, sequence)) }
                nextSend += 1_200 * 8 / (estimator.target * sendShare) * 1_000
            }
            if let wanted {
                _ = estimator.startProbe(at: now, wanted: wanted)
                while case let owed = estimator.probe.paddingOwed(at: now), owed > 0 {
                    let size = min(owed, 1_200)
                    let sequence = estimator.sent(size: size, at: now)
                    if let arrival = link.carry(size: size, sentAt: now) { inFlight.append((arrival, sequence)) }
                }
            }
            while let first = inFlight.first, first.arrival <= now {
                recorder.received(first.sequence, at: first.arrival)
                inFlight.removeFirst()
            }
            if step % 50 == 0, let feedback = recorder.feedback(senderSSRC: 1, mediaSSRC: 2) {
                returning.append((now + link.propagation, feedback))
            }
            while let first = returning.first, first.at <= now {
                estimator.feedback(first.feedback, at: now)
                returning.removeFirst()
            }
            if step % 100 == 0 { trace.append((now, estimator.target, estimator.reason)) }
        }
        return trace
    }

    static func simulate(
        _ link: Link, seconds: Int, sendShare: Double = 1, probingUpTo wanted: Double? = nil
    ) -> [(at: Double, target: Double, reason: EstimateReason)] {
        var estimator = BandwidthEstimator()
        return simulate(link, seconds: seconds, sendShare: sendShare, probingUpTo: wanted, estimator: &estimator)
    }

    @Test("on a clean link with room to spare the estimate climbs from its start, never backing off")
    func climbs() {
        let trace = Self.simulate(Link(capacity: { _ in 4_000_000 }), seconds: 20)
        #expect(trace.first?.target == 300_000)
        #expect((trace.last?.target ?? 0) >= 1_000_000, "\(trace.last.map { "\($0)" } ?? "")")
        #expect(!trace.contains { $0.reason == .delay }, "\(trace.filter { $0.reason == .delay }.map(\.at))")
    }

    @Test("when the capacity drops to 500 kbit/s the estimate is under it within 2 s, and climbs when it returns")
    func capacityDrop() {
        let trace = Self.simulate(
            Link(capacity: { $0 < 15_000 ? 4_000_000 : $0 < 35_000 ? 500_000 : 4_000_000 }), seconds: 45)
        let before = trace.last { $0.at < 15_000 }?.target ?? 0
        #expect(before > 600_000, "the estimate had not climbed past the later capacity: \(before)")
        let afterDrop = trace.first { $0.at >= 17_000 }?.target ?? .infinity
        #expect(afterDrop < 500_000, "2 s after the drop: \(afterDrop)")
        let atReturn = trace.last { $0.at < 35_000 }?.target ?? 0
        let later = trace.last?.target ?? 0
        #expect(later > atReturn * 1.3, "10 s after the capacity returned: \(atReturn) → \(later)")
    }

    /// The limit on climbing (1.5 times what gets through) holds the estimate; it never lowers it, which would
    /// spiral down with a sender that uses only part of it.
    @Test("a sender that uses half its estimate keeps it: no climb, and no fall either")
    func underusingSenderKeepsItsEstimate() {
        let trace = Self.simulate(Link(capacity: { _ in 4_000_000 }), seconds: 10, sendShare: 0.5)
        let targets = trace.map(\.target)
        // One small step before a quarter second of arrivals tells what gets through; then held.
        #expect(
            targets.min() == 300_000 && (targets.max() ?? 0) < 310_000, "\(targets.min() ?? 0)…\(targets.max() ?? 0)")
        #expect(targets.last == targets.max())
    }

    /// A jittery link delays a packet and lets those behind it out together: counted as groups of their own,
    /// their bunching read as a queue filling and held the estimate near 300 kbit/s on a 4 Mbit/s link.
    @Test("packets that bunch behind a late one on a jittery link are one burst: the estimate climbs as on a clean one")
    func jitterIsNoQueue() {
        let trace = Self.simulate(Link(capacity: { _ in 4_000_000 }, propagation: 80, jitter: 30), seconds: 20)
        #expect((trace.last?.target ?? 0) >= 800_000, "\(trace.last.map { "\($0)" } ?? "")")
    }

    /// A radio link loses packets at random whatever the rate: judged interval by interval, a burst of three in
    /// twenty packets read as 15 % congestion and held the estimate near 200 kbit/s on a 4 Mbit/s link.
    @Test("random loss in bursts (5 %, three at a time) on a link with room is the link's own: the estimate climbs")
    func randomLossIsTheLinks() {
        let trace = Self.simulate(
            Link(capacity: { _ in 4_000_000 }, propagation: 20, burstLoss: (0.05, 3), jitter: 15), seconds: 30)
        #expect((trace.last?.target ?? 0) >= 500_000, "\(trace.last.map { "\($0)" } ?? "")")
    }

    @Test("steady 20 % loss on a link with room brings the estimate down and says it is loss")
    func loss() {
        let trace = Self.simulate(Link(capacity: { _ in 10_000_000 }, dropEvery: 5), seconds: 10)
        #expect((trace.last?.target ?? .infinity) < 300_000)
        guard case .loss(let fraction)? = trace.last?.reason else {
            Issue.record("the estimate ends for another reason: \(trace.last.map { "\($0.reason)" } ?? "none")")
            return
        }
        // Every fifth packet: 4 or 5 of each interval's 20 to 22.
        #expect((0.15...0.25).contains(fraction))
    }

    // MARK: Sharing a receiver's downlink

    struct Allocation: CustomTestStringConvertible, Sendable {
        var name: String
        var budget: Double
        var streams: [DownlinkAllocation.Stream]
        var layers: [UInt32: Int?]
        var testDescription: String { name }
    }

    /// Three layers at 600, 200 and 60 kbit/s.
    static let rates: [Double] = [600_000, 200_000, 60_000]

    static let allocations: [Allocation] = [
        Allocation(
            name: "room for everything: each tile gets the layer it asks for", budget: 5_000_000,
            streams: [
                .init(sender: 1, dominant: true, tileArea: 100, wanted: 0, layerRates: rates),
                .init(sender: 2, tileArea: 100, wanted: 1, layerRates: rates),
            ],
            layers: [1: 0, 2: 1]),
        Allocation(
            name: "the dominant speaker first, then the largest tile; the small one is paused", budget: 900_000,
            streams: [
                .init(sender: 1, tileArea: 400, wanted: 0, layerRates: rates),
                .init(sender: 2, dominant: true, tileArea: 100, wanted: 0, layerRates: rates),
                .init(sender: 3, tileArea: 50, wanted: 1, layerRates: rates),
            ],
            // 900 - 32 audio = 868: speaker 600, then 200 for the large tile, 68 left: the small tile gets 60.
            layers: [2: 0, 1: 1, 3: 2]),
        Allocation(
            name: "every tile moves before any is sharper: the smallest layers first, then the speaker up",
            budget: 700_000,
            streams: [
                .init(sender: 1, tileArea: 400, wanted: 0, layerRates: rates),
                .init(sender: 2, dominant: true, tileArea: 100, wanted: 0, layerRates: rates),
                .init(sender: 3, tileArea: 50, wanted: 1, layerRates: rates),
            ],
            // 668: three times 60 leaves 488; the speaker's 600 does not fit (540 more), its 200 does (140 more),
            // 348 left; the large tile's 200 (208 left), the small one's 200 (68 left). One pass gave the speaker
            // 600, the large tile 60 and paused the small one.
            layers: [2: 1, 1: 1, 3: 1]),
        Allocation(
            name: "nothing fits: the dominant speaker keeps its smallest layer, the others pause", budget: 50_000,
            streams: [
                .init(sender: 1, dominant: true, tileArea: 100, wanted: 0, layerRates: rates),
                .init(sender: 2, tileArea: 900, wanted: 0, layerRates: rates),
            ],
            layers: [1: 2, 2: nil]),
        Allocation(
            name: "a sender not drawn gets nothing and takes nothing", budget: 700_000,
            streams: [
                .init(sender: 1, tileArea: 0, wanted: nil, layerRates: rates),
                .init(sender: 2, tileArea: 100, wanted: 0, layerRates: rates),
            ],
            layers: [1: nil, 2: 0]),
    ]

    @Test("a receiver's downlink goes to sound, the dominant speaker, then tiles by size", arguments: allocations)
    func allocation(_ allocation: Allocation) {
        let choices = DownlinkAllocation.allocate(budget: allocation.budget, audio: 32_000, streams: allocation.streams)
        #expect(choices.mapValues(\.layer) == allocation.layers)
    }

    @Test("a tile held below what it asks for says it is the downlink, with the estimate")
    func allocationReason() {
        let choices = DownlinkAllocation.allocate(
            budget: 300_000, audio: 32_000,
            streams: [.init(sender: 7, tileArea: 100, wanted: 0, layerRates: Self.rates)])
        #expect(choices[7] == DownlinkAllocation.Choice(layer: 1, reason: .downlink(300_000)))
    }

    @Test("a step up needs 15 % to spare; stepping down does not; staying may cost 10 % over what is left")
    func stepUpMargin() {
        let stream = DownlinkAllocation.Stream(sender: 7, tileArea: 100, wanted: 0, layerRates: Self.rates)
        // 32 audio + 600 fits in 650, but not with 15 % of 600 to spare (722).
        func layer(budget: Double, now: Int?) -> Int? {
            DownlinkAllocation.allocate(budget: budget, audio: 32_000, streams: [stream], current: [7: now])[7]?.layer
        }
        #expect(layer(budget: 650_000, now: 0) == 0, "the full layer stays")
        #expect(layer(budget: 650_000, now: 1) == 1, "no step up to it from the middle one")
        #expect(layer(budget: 600_000, now: 0) == 0, "568 left, the full layer's 600 within 10 % of it: stays")
        #expect(layer(budget: 550_000, now: 0) == 1, "518 left: 600 is more than 10 % over, down")
        #expect(layer(budget: 600_000, now: 1) == 1)
        #expect(layer(budget: 760_000, now: 1) == 0, "with room to spare, up")
        #expect(layer(budget: 250_000, now: nil) == 2, "paused: 200 does not fit with its margin (262), 60 does")
        #expect(layer(budget: 250_000, now: 2) == 2)
        let new = DownlinkAllocation.allocate(budget: 650_000, audio: 32_000, streams: [stream])[7]?.layer
        #expect(new == 0, "a sender with no layer before takes what fits, no margin")
    }

    // MARK: Pacing

    @Test("a keyframe's burst leaves at the pacing rate; sound never waits behind it")
    func pacing() {
        // 1 Mbit/s: 125 bytes a millisecond, a 1,250-byte packet every 10 ms.
        var pacer = Pacer<Int>(rate: 1_000_000)
        for index in 0..<10 { pacer.enqueue(index, size: 1_250, isAudio: false) }
        let atOnce = pacer.release(at: 0)
        #expect(atOnce.isEmpty)
        var left: [Int] = []
        for step in 1...100 {
            if step == 35 { pacer.enqueue(100, size: 100, isAudio: true) }
            left += pacer.release(at: Double(step)).map { $0 }
            if step == 35 { #expect(left.last == 100 || left.contains(100)) }
        }
        #expect(left.filter { $0 < 100 } == Array(0..<10))
        #expect(pacer.waiting == 0)
        // Ten packets of 10 ms each take 90 to 100 ms, not one instant.
        var timed = Pacer<Int>(rate: 1_000_000)
        for index in 0..<10 { timed.enqueue(index, size: 1_250, isAudio: false) }
        _ = timed.release(at: 0)
        var releasedAt: [Int: Int] = [:]
        for step in 1...200 {
            for packet in timed.release(at: Double(step)) { releasedAt[packet] = step }
        }
        #expect((releasedAt[9] ?? 0) >= 80)
        #expect((releasedAt[0] ?? 999) <= 2)
    }

    @Test("past its limit the pacer drops the oldest video and counts it")
    func pacerBound() {
        var pacer = Pacer<Int>(rate: 1_000, videoLimit: 4)
        for index in 0..<6 { pacer.enqueue(index, size: 1_000, isAudio: false) }
        #expect(pacer.waiting == 4)
        #expect(pacer.dropped == 2)
        #expect(pacer.nextRelease(after: 0) != nil)
    }

    @Test("sound waiting for a caller that stopped releasing is bounded too: the oldest goes, counted")
    func pacerSoundBound() {
        var pacer = Pacer<Int>(rate: 1_000, audioLimit: 3)
        for index in 0..<5 { pacer.enqueue(index, size: 100, isAudio: true) }
        #expect(pacer.droppedAudio == 2)
        #expect(pacer.release(at: 0) == [2, 3, 4])
        #expect(pacer.release(at: 1).isEmpty)
    }

    // MARK: A sender's layers

    @Test("the largest layers go first when the estimate falls, and come back only with headroom")
    func sendLayers() {
        var layers = SendLayers(count: 3)
        let unchanged = layers.update(target: 1_000_000, layerRates: Self.rates)
        #expect(!unchanged)
        #expect(layers.active == [true, true, true])
        let changed = layers.update(target: 700_000, layerRates: Self.rates)
        #expect(changed)
        #expect(layers.active == [false, true, true])
        // 860 k would hold all three (860), but not with 20 % to spare: the large layer stays off.
        layers.update(target: 900_000, layerRates: Self.rates)
        #expect(layers.active == [false, true, true])
        layers.update(target: 1_040_000, layerRates: Self.rates)
        #expect(layers.active == [true, true, true])
        // Below even the smallest: the smallest stays.
        layers.update(target: 10_000, layerRates: Self.rates)
        #expect(layers.active == [false, false, true])
    }
}
