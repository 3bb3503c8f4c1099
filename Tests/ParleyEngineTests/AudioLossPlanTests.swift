import Testing

@testable import ParleyEngine

/// The loss Opus plans FEC for follows the worst receiver's reports: up at once, down a point a second.
struct AudioLossPlanTests {
    /// One report: (seconds, reporter, fraction lost in 256ths, the plan after it).
    typealias Step = (at: Double, reporter: UInt32, fraction: UInt8, plan: Int)

    static let cases: [(name: String, steps: [Step])] = [
        ("a clean call plans for none", [(0, 1, 0, 0), (1, 1, 0, 0), (2, 2, 0, 0)]),
        ("any loss plans for at least 1 %", [(0, 1, 1, 1)]),
        ("5 % reported (13/256) plans 6 % at once", [(0, 1, 13, 6)]),
        ("the worst receiver counts", [(0, 1, 13, 6), (0.5, 2, 0, 6), (1, 2, 3, 6)]),
        ("capped at 30 %", [(0, 1, 200, 30)]),
        ("eases back one point a second", [(0, 1, 26, 11), (1, 1, 0, 10), (2, 1, 0, 9), (2.5, 1, 0, 9), (3, 1, 0, 8)]),
        ("a rise interrupts the easing", [(0, 1, 26, 11), (1, 1, 0, 10), (2, 1, 52, 21)]),
        (
            "a receiver silent for 10 s no longer counts",
            [(0, 1, 26, 11), (0, 2, 0, 11), (10, 2, 0, 1), (11, 2, 0, 0)]
        ),
    ]

    @Test(arguments: cases.indices)
    func planFollowsReports(_ index: Int) {
        let (name, steps) = Self.cases[index]
        var plan = AudioLossPlan()
        for step in steps {
            let before = plan.percent
            let changed = plan.record(
                reporter: step.reporter, fractionLost: step.fraction,
                at: .milliseconds(Int64(step.at * 1000)))
            #expect(plan.percent == step.plan, "\(name): at \(step.at) s")
            #expect(
                changed == (plan.percent != before ? plan.percent : nil), "\(name): change reported at \(step.at) s")
        }
    }

    @Test func remembersAtMostItsBoundOfReceivers() {
        var plan = AudioLossPlan()
        for reporter in 0..<UInt32(AudioLossPlan.maximumReporters + 50) {
            _ = plan.record(
                reporter: reporter, fractionLost: reporter == 0 ? 100 : 0, at: .milliseconds(Int64(reporter)))
        }
        // The lossy first receiver (planned 30 %) was forgotten as the oldest when the 257th arrived: 9 s later the
        // plan has eased 9 points. Had it been kept, its 30 % would still count.
        #expect(plan.percent == 30)
        _ = plan.record(reporter: 1_000, fractionLost: 0, at: .seconds(9))
        #expect(plan.percent == 21)
    }
}
