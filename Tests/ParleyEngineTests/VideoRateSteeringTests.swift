import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyEngine

@Suite struct VideoRateSteeringTests {
    struct FitRow: Sendable, CustomTestStringConvertible {
        var budget: Int
        var active: [Bool]
        var full: Int
        var testDescription: String { "\(budget) kbit/s for layers \(active) → full layer \(full)" }
    }

    /// 640x360 at 600 kbit/s: layers of 600, 200 and 60 (a third and a tenth, floors 50 and 30).
    @Test(arguments: [
        FitRow(budget: 2_000, active: [true, true, true], full: 600),
        FitRow(budget: 860, active: [true, true, true], full: 600),
        FitRow(budget: 859, active: [true, true, true], full: 599),
        // 300 + 100 + 30 = 430.
        FitRow(budget: 430, active: [true, true, true], full: 300),
        FitRow(budget: 430, active: [true, false, false], full: 430),
        // Only the half layer is watched: the full layer's rate is three times what it may take.
        FitRow(budget: 100, active: [false, true, false], full: 302),
        // Below the floors: the least the full layer is given, the small layers at their floors.
        FitRow(budget: 60, active: [true, true, true], full: 50),
        FitRow(budget: 0, active: [true, false, false], full: 50),
        FitRow(budget: 500, active: [], full: 600),
    ])
    func fullLayerFitsTheBudget(_ row: FitRow) {
        #expect(SimulcastPlan.fullLayerKbps(fitting: row.budget, upTo: 600, active: row.active) == row.full)
    }

    @Test func aProfileBelowTheLeastRateKeepsItsOwn() {
        #expect(SimulcastPlan.fullLayerKbps(fitting: 10, upTo: 40, active: [true]) == 40)
    }

    struct StepRow: Sendable, CustomTestStringConvertible {
        var label: String
        /// Estimates (kbit/s) in order, and what the encoder is told after each: the full layer's rate and the
        /// divisor of its picture (nil: nothing changes).
        var steps: [(estimate: Double, set: (kbps: Int, divisor: Int)?)]
        /// The loss the estimate saw, the same at every step.
        var loss = 0.05
        var testDescription: String { label }
    }

    /// 640x360 at 30 fps, 600 kbit/s: its picture needs at least 415 kbit/s, 320x180 104, 160x90 26.
    static let stepRows: [StepRow] = [
        StepRow(label: "the start estimate leaves the profile's rate", steps: [(1_062, nil), (1_500, nil)]),
        StepRow(
            label: "a narrow uplink cuts the rate and the picture, and a wider one gives them back",
            // (300 - 50) * 0.85 = 212 for three layers: 132 + 50 + 30; (1000 - 50) * 0.85 = 807: 563 + 187 + 56.
            steps: [(300, (132, 2)), (290, (124, 2)), (1_000, (563, 1)), (1_200, (600, 1))]),
        StepRow(
            label: "changes under 5 % are not passed on, except back to the profile's rate",
            steps: [(700, (386, 2)), (710, nil), (1_100, (600, 1))]),
        StepRow(label: "no room at all: the least rate, a quarter of the picture", steps: [(30, (50, 4)), (40, nil)]),
        StepRow(
            label: "the full picture comes back only with a quarter to spare over its least rate (519 kbit/s)",
            steps: [(700, (386, 2)), (800, (445, 2)), (850, (475, 2)), (950, (534, 1))]),
        StepRow(
            label: "without loss the rate follows the estimate, the picture keeps its size",
            steps: [(300, (132, 1)), (1_000, (563, 1))], loss: 0),
    ]

    @Test(arguments: stepRows) func steering(_ row: StepRow) {
        var steering = VideoRateSteering(profile: .standard)
        for step in row.steps {
            let told = steering.update(estimate: step.estimate * 1_000, loss: row.loss, active: [true, true, true])
            #expect(told?.fullLayerKbps == step.set?.kbps, "estimate \(step.estimate) kbit/s")
            #expect(told?.divisor == step.set?.divisor, "estimate \(step.estimate) kbit/s")
        }
    }

    @Test func theFullLayersPictureIsTheProfilesDivided() {
        var steering = VideoRateSteering(profile: .standard)
        _ = steering.update(estimate: 300_000, loss: 0.1, active: [true, true, true])
        #expect(steering.fullLayerSize == VideoSize(width: 320, height: 180))
        // A profile whose half is under 160x90 keeps its size however little room there is.
        var small = VideoRateSteering(profile: VideoProfile.all[0])
        _ = small.update(estimate: 30_000, loss: 0.1, active: [true])
        #expect(small.fullLayerSize == VideoSize(width: 160, height: 120))
    }

    @Test func aSmallerLayerInTheFullLayersPlaceGetsItsRate() {
        var steering = VideoRateSteering(profile: .standard)
        // 450 kbit/s: 340 for video. With the full layer out, the half layer takes all of it (not a third), so what
        // it sends grows with the estimate and shows when the full layer fits again; the picture is not judged.
        let told = steering.update(estimate: 450_000, loss: 0.1, active: [false, true, false], largestLayer: 1)
        #expect(told == .init(fullLayerKbps: 340, divisor: 1, largestLayer: 1))
        // The quarter layer, sent too, gets its third of it.
        let both = steering.update(estimate: 450_000, loss: 0.1, active: [false, true, true], largestLayer: 1)
        #expect(both?.fullLayerKbps == 255)
        // Back: the full layer's rate and picture are judged again.
        let back = steering.update(estimate: 1_000_000, loss: 0, active: [true, false, false])
        #expect(back == .init(fullLayerKbps: 600, divisor: 1, largestLayer: 0))
    }

    @Test func theEstimateStartsAtWhatThePlanSends() {
        let plan = SimulcastPlan.forCall(width: 640, height: 360, kbps: 600, framesPerSecond: 30, simulcast: true)
        let start = VideoRateSteering.startEstimate(for: plan)
        #expect(abs(start - (860 / 0.85 + 50) * 1_000) < 1)
        var steering = VideoRateSteering(profile: .standard)
        #expect(steering.update(estimate: start, loss: 0, active: [true, true, true]) == nil)
        #expect(steering.fullLayerKbps == 600)
    }
}
