import Foundation
import Testing

@testable import ParleyWire

/// Probing the uplink: the judgement of a cluster's packets as a table, and the estimator probing over the simulated
/// bottleneck of `CongestionControlTests` (a manual clock, 1 ms steps).
@Suite("Uplink probes")
struct UplinkProbeTests {
    struct Judgement: CustomTestStringConvertible, Sendable {
        var name: String
        /// Packets sent 1 ms apart, 1,000 bytes each; the arrival of packet i (nil: lost).
        var count: Int
        var arrival: @Sendable (Int) -> Double?
        var expected: ProbeOutcome
        var testDescription: String { name }
    }

    static let judgements: [Judgement] = [
        Judgement(
            name: "kept pace: carried at 95 % of 8 Mbit/s", count: 20, arrival: { 20 + Double($0) },
            expected: .carried(7_600_000)),
        Judgement(
            name: "arrivals 2 ms apart: the queue grew 19 ms, full", count: 20, arrival: { 20 + 2 * Double($0) },
            expected: .full),
        Judgement(
            name: "arrivals 1.5 ms apart: grew under 15 ms, saturated: carried at 95 % of what arrived (5.33 Mbit/s)",
            count: 20, arrival: { 20 + 1.5 * Double($0) }, expected: .carried(0.95 * 19_000 * 8_000 / 28.5)),
        Judgement(
            name: "arrivals a little slower than the sending (1.05 ms apart): 95 % of what arrived", count: 20,
            arrival: { 20 + 1.05 * Double($0) }, expected: .carried(0.95 * 19_000 * 8_000 / 19.95)),
        Judgement(
            name: "3 of 20 lost: full", count: 20, arrival: { [4, 9, 14].contains($0) ? nil : 20 + Double($0) },
            expected: .full),
        Judgement(name: "4 packets: too few to say, full", count: 4, arrival: { 20 + Double($0) }, expected: .full),
        Judgement(
            name: "a burst through a token bucket, then the queue: full", count: 40,
            arrival: { $0 < 10 ? 20 + Double($0) : 30 + 2 * Double($0 - 10) }, expected: .full),
    ]

    @Test(
        "a cluster is carried when its arrivals keep pace, full when the queue grows or packets are lost",
        arguments: judgements)
    func judge(_ row: Judgement) {
        let results = (0..<row.count).map {
            PacketResult(sequence: Int64($0), sentAt: Double($0), size: 1_000, arrivedAt: row.arrival($0))
        }
        let outcome = UplinkProbe.judge(results, expected: row.count)
        switch (outcome, row.expected) {
        case (.carried(let rate), .carried(let expected)):
            #expect(abs(rate - expected) < 1_000, "\(rate)")
        default:
            #expect(outcome == row.expected)
        }
    }

    @Test("no probe while the estimate gives the sender what it wants, or before 2 s of calm; padding keeps the rate")
    func schedule() {
        var probe = UplinkProbe()
        #expect(probe.start(at: 5_000, estimate: 1_000_000, wanted: 1_050_000, calmSince: 0) == nil)
        #expect(probe.start(at: 5_000, estimate: 400_000, wanted: 1_000_000, calmSince: 4_000) == nil)
        #expect(probe.start(at: 5_000, estimate: 400_000, wanted: 1_000_000, calmSince: nil) == nil)
        let cluster = probe.start(at: 5_000, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000)
        #expect(cluster?.rate == 800_000 && cluster?.endsAt == 5_150)
        // 800 kbit/s for 10 ms is 1,000 bytes, less the 600 sent.
        probe.sent(7, size: 600, at: 5_005)
        #expect(probe.paddingOwed(at: 5_010) == 400)
        #expect(probe.paddingOwed(at: 5_150) == 0)
        // No feedback for a second after its end: given up as full, the next a wait later.
        let outcome = probe.feedback([], at: 6_200)
        #expect(outcome == .full && probe.cluster == nil)
        #expect(probe.start(at: 7_000, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000) == nil)
        #expect(probe.start(at: 9_200, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000) != nil)
        // Full a second time: no more probes while nothing says the link changed…
        #expect(probe.feedback([], at: 10_400) == .full)
        #expect(probe.start(at: 60_000, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000) == nil)
        // …until the estimate climbs past the capacity found (a second after the last probe),
        let past = probe.start(at: 60_000, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000, pastCapacity: true)
        #expect(past != nil)
        #expect(probe.feedback([], at: 61_200) == .full)
        // or a large decrease says it changed.
        probe.linkChanged()
        #expect(probe.start(at: 61_300, estimate: 400_000, wanted: 1_000_000, calmSince: 3_000) != nil)
    }

    /// 4 Mbit/s, 500 kbit/s from 15 s, 4 Mbit/s again from 35 s; 60 ms of queue behind a bucket of 5,000 bytes.
    static func dropAndReturn() -> CongestionControlTests.Link {
        CongestionControlTests.Link(
            capacity: { $0 < 15_000 ? 4_000_000 : $0 < 35_000 ? 500_000 : 4_000_000 }, queueLimit: 60, burst: 5_000)
    }

    /// Seconds after the capacity returns (35 s) until the estimate reaches 90 % of what the sender wants.
    static func returnTime(_ trace: [(at: Double, target: Double, reason: EstimateReason)], wanted: Double) -> Double {
        let back = trace.first { $0.at >= 35_000 && $0.target >= 0.9 * wanted }?.at ?? .infinity
        return (back - 35_000) / 1_000
    }

    @Test("when the capacity returns, probes find it in under half the time the climb alone takes")
    func probesFindTheReturn() {
        let wanted = 1_200_000.0
        let climbing = Self.returnTime(
            CongestionControlTests.simulate(Self.dropAndReturn(), seconds: 50), wanted: wanted)
        var estimator = BandwidthEstimator()
        let trace = CongestionControlTests.simulate(
            Self.dropAndReturn(), seconds: 50, probingUpTo: wanted, estimator: &estimator)
        let probing = Self.returnTime(trace, wanted: wanted)
        #expect(probing <= 4, "probing \(probing) s, climbing alone \(climbing) s")
        #expect(probing * 2 <= climbing, "probing \(probing) s, climbing alone \(climbing) s")
        #expect(trace.contains { $0.reason == .probed })
        // The squeeze is still found within 2 s.
        let afterDrop = trace.first { $0.at >= 17_000 }?.target ?? .infinity
        #expect(afterDrop < 500_000, "2 s after the drop: \(afterDrop)")
    }

    /// A full bucket of tokens lets the first part of a probe through at any rate: judged by its rate alone, a
    /// probe on a full link would look carried, and raise the estimate past the capacity every time.
    @Test("on a full link behind a token bucket, probes find it full and never lift the estimate past the capacity")
    func fullLinkBehindABucket() {
        let link = CongestionControlTests.Link(capacity: { _ in 500_000 }, queueLimit: 60, burst: 4_000)
        var estimator = BandwidthEstimator()
        let trace = CongestionControlTests.simulate(link, seconds: 40, probingUpTo: 1_200_000, estimator: &estimator)
        #expect(estimator.probe.started >= 2, "\(estimator.probe.started) probes")
        let raised = trace.filter { $0.at >= 10_000 && $0.reason == .probed }.map(\.at)
        #expect(raised.isEmpty, "\(raised)")
        // The climb alone saws up to about 10 % past the capacity before the queue says so; probes add nothing.
        let settled = trace.filter { $0.at >= 10_000 }.map(\.target)
        #expect((settled.max() ?? .infinity) <= 600_000, "\(settled.max() ?? 0)")
    }
}
