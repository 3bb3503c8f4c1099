import Testing

@testable import ParleyBench

@Suite("Goals printed under the tables")
struct BenchGoalsTests {
    @Test("a goal note says what, met or NOT met, and the figures")
    func note() {
        #expect(goalNote("p50 ≤ 43.3 ms", met: true, "p50 1.8 ms") == "Goal: p50 ≤ 43.3 ms: met (p50 1.8 ms).")
        #expect(goalNote("≥ 3x chafa", met: false, "1.5x") == "Goal: ≥ 3x chafa: NOT met (1.5x).")
    }

    @Test("renderer: the frame-rate goal reads only 9 tiles at 200x60; the chafa goal names every row below 3x")
    func renderer() {
        let rows = [
            RenderBench.Measured(label: "call half 80x24, 1 tile", goalCase: false, fps: 40, ratio: 12.7),
            RenderBench.Measured(label: "motion half 200x60, 9 tiles", goalCase: true, fps: 184, ratio: 2.8),
            RenderBench.Measured(label: "motion sextant 200x60, 9 tiles", goalCase: true, fps: 129, ratio: 3.9),
            RenderBench.Measured(label: "motion half 200x60, 1 tile", goalCase: false, fps: 341, ratio: 1.5),
        ]
        #expect(
            RenderBench.goalNotes(rows) == [
                "Goal: ≥ 60 frames/s through tmux, 9 tiles at 200x60, every cell mode: met (129 at worst, motion "
                    + "sextant 200x60, 9 tiles).",
                "Goal: ≥ 3x chafa, every row: NOT met (below on motion half 200x60, 9 tiles: 2.80x; motion half "
                    + "200x60, 1 tile: 1.50x).",
            ])
        #expect(
            RenderBench.goalNotes([rows[0]]) == ["Goal: ≥ 3x chafa, every row: met (12.7x at worst)."])
    }

    @Test("a small negative that rounds to zero prints as 0, never -0")
    func noNegativeZero() {
        #expect(formatted(-0.3, decimals: 0) == "0")
        #expect(formatted(-0.04, decimals: 1) == "0.0")
        #expect(formatted(-0.6, decimals: 0) == "-1")
    }
}
