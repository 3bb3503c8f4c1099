import ParleyMedia
import Testing

@testable import ParleyEngine

/// The layers a 640x360 camera's uplink carries (least rates 414.7, 103.7 and 25.9 kbit/s; the video's budget is
/// 85 % of the estimate less 50 kbit/s for the voice), step by step as the estimate and the relay's demand move.
@Suite struct UplinkLayersTests {
    struct Step: Sendable, CustomStringConvertible {
        /// The estimate (kbit/s) and the relay's demand.
        var estimateKbps: Double
        /// The loss the estimate last saw: 5 % unless a row says.
        var loss = 0.05
        var demand: [Bool]?
        /// What the update returns (nil: no change), and what is encoded after it.
        var changed: [Bool]?
        var encoded: [Bool]

        var description: String { "\(estimateKbps) kbit/s, demand \(demand.map { "\($0)" } ?? "none")" }
    }

    static let plan = SimulcastPlan(width: 640, height: 360, kbps: 600, framesPerSecond: 30)
    static let (on, off) = (true, false)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        var testDescription: String { name }
    }

    @Test(arguments: [
        Case(
            name: "one layer asked (1:1): never dropped, its own picture shrinks instead (VideoRateSteering)",
            steps: [
                Step(estimateKbps: 500, demand: [on, off, off], changed: nil, encoded: [on, off, off]),
                Step(estimateKbps: 200, demand: [on, off, off], changed: nil, encoded: [on, off, off]),
                Step(estimateKbps: 400, demand: nil, changed: nil, encoded: [on, off, off]),
            ]),
        Case(
            name: "a fullscreen viewer and a grid: the full layer out under its least rate, back with 20 % to spare",
            steps: [
                Step(estimateKbps: 700, demand: [on, on, off], changed: nil, encoded: [on, on, off]),
                // 510 kbit/s for video: under 414.7 + 103.7. The half layer goes to both viewers.
                Step(estimateKbps: 650, demand: [on, on, off], changed: [off, on, on], encoded: [off, on, off]),
                // The relay moved them: the full layer, out, is still costed as wanted (518.4 x 1.2 = 622).
                Step(estimateKbps: 650, demand: [off, on, off], changed: nil, encoded: [off, on, off]),
                Step(estimateKbps: 780, demand: [off, on, off], changed: nil, encoded: [off, on, off]),
                // 637.5 for video: room for both with the margin. The relay will move the viewer back up.
                Step(estimateKbps: 800, demand: [off, on, off], changed: [on, on, on], encoded: [off, on, off]),
                Step(estimateKbps: 800, demand: [on, on, off], changed: nil, encoded: [on, on, off]),
            ]),
        Case(
            name: "three receivers on three sizes: the full layer goes first, the others stay",
            steps: [
                Step(estimateKbps: 700, demand: [on, on, on], changed: nil, encoded: [on, on, on]),
                // 544 kbit/s for 414.7 + 103.7 + 25.9 = 544.3: just short.
                Step(estimateKbps: 690, demand: [on, on, on], changed: [off, on, on], encoded: [off, on, on]),
                // 76.5 kbit/s: the half layer goes too; the quarter always stays.
                Step(estimateKbps: 140, demand: [off, on, on], changed: [off, off, on], encoded: [off, off, on]),
            ]),
        Case(
            name: "a layer nobody asks for costs nothing: small tiles need no more than their layer",
            steps: [
                Step(estimateKbps: 120, demand: [off, off, on], changed: nil, encoded: [off, off, on]),
                Step(estimateKbps: 300, demand: [off, on, off], changed: nil, encoded: [off, on, off]),
            ]),
        Case(
            name: "without loss nothing goes (delay alone rises on a busy machine); what is out comes back",
            steps: [
                Step(estimateKbps: 600, loss: 0.01, demand: [on, on, off], changed: nil, encoded: [on, on, off]),
                Step(
                    estimateKbps: 600, loss: 0.02, demand: [on, on, off], changed: [off, on, on],
                    encoded: [off, on, off]),
                Step(
                    estimateKbps: 900, loss: 0, demand: [off, on, off], changed: [on, on, on], encoded: [off, on, off]),
            ]),
    ])
    func layersFollowTheEstimate(_ test: Case) {
        var layers = UplinkLayers(plan: Self.plan)
        for step in test.steps {
            let changed = layers.update(estimate: step.estimateKbps * 1_000, loss: step.loss, demand: step.demand)
            #expect(changed == step.changed, "\(step)")
            #expect(layers.encoded(for: step.demand) == step.encoded, "\(step)")
        }
    }

    @Test func aLayerLeavesBesideItsReplacementUntilTheRelayMovesItsReceiversOrASecondPasses() {
        var layers = UplinkLayers(plan: Self.plan)
        let dropped = layers.update(estimate: 600_000, loss: 0.05, demand: [true, true, false], at: .seconds(10))
        #expect(dropped == [false, true, true])
        // The relay still asks for the full layer: both run.
        #expect(layers.encoded(for: [true, true, false], at: .milliseconds(10_300)) == [true, true, false])
        // The relay moved the receiver (its demand with the half layer only): the full layer stops.
        #expect(layers.encoded(for: [false, true, false], at: .milliseconds(10_400)) == [false, true, false])
        // A relay that never moves it: a second later the full layer stops anyway.
        #expect(layers.encoded(for: [true, true, false], at: .milliseconds(10_999)) == [true, true, false])
        #expect(layers.encoded(for: [true, true, false], at: .seconds(11)) == [false, true, false])
    }

    @Test func aCalmLinkBringsALayerBackWithoutTheMargin() {
        var layers = UplinkLayers(plan: Self.plan)
        _ = layers.update(estimate: 600_000, loss: 0.05, demand: [true, true, false], at: .seconds(1))
        #expect(layers.sending == [false, true, true])
        // 510 kbit/s for video: the full and half layers' 518.4 do not fit even without the margin.
        var changed = layers.update(estimate: 650_000, loss: 0, demand: [false, true, false], at: .seconds(2))
        #expect(changed == nil)
        // 518.5: fits with no margin, but the link has been calm for only 2 s.
        changed = layers.update(estimate: 660_000, loss: 0, demand: [false, true, false], at: .seconds(4))
        #expect(changed == nil)
        changed = layers.update(estimate: 660_000, loss: 0.01, demand: [false, true, false], at: .seconds(5))
        #expect(changed == [true, true, true])
        // A loss starts the calm again.
        _ = layers.update(estimate: 600_000, loss: 0.05, demand: [true, true, false], at: .seconds(6))
        #expect(layers.sending == [false, true, true])
        changed = layers.update(estimate: 660_000, loss: 0, demand: [false, true, false], at: .seconds(8))
        #expect(changed == nil)
    }

    @Test func aCameraOfOneLayerIsNeverDropped() {
        var layers = UplinkLayers(plan: SimulcastPlan(width: 160, height: 120, kbps: 150, framesPerSecond: 15))
        #expect(layers.leastKbps.count == 1)
        let changed = layers.update(estimate: 10_000, loss: 0.5, demand: [true])
        #expect(changed == nil)
        #expect(layers.encoded(for: [true]) == [true])
    }

    @Test func leastRatesComeFromThePicture() {
        let layers = UplinkLayers(plan: Self.plan)
        #expect(layers.leastKbps.map { ($0 * 10).rounded() / 10 } == [414.7, 103.7, 25.9])
    }
}
