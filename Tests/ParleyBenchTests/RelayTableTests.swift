import Testing

@testable import ParleyBench

@Suite("Relay table")
struct RelayTableTests {
    static func step(_ delivered: Double, cpu: Double, loss: Double = 0) -> RelayBench.StepResult {
        RelayBench.StepResult(
            offered: delivered, delivered: delivered, megabits: delivered * 5.25 / 1000, forwarderCPU: cpu,
            forwarderWait: 0, perCore: delivered / cpu, loss: loss, generatorCPU: 0.25)
    }

    @Test("one row per layout and rate, each figure parley / raw; the summary and the per-core goal under it")
    func sideBySide() {
        let measured: [(layout: String, parley: [RelayBench.StepResult], reference: [RelayBench.StepResult])] = [
            (
                "4 rooms × 4", [Self.step(50_000, cpu: 0.25), Self.step(100_000, cpu: 0.4, loss: 0.02)],
                [Self.step(50_000, cpu: 0.125), Self.step(100_000, cpu: 0.25)]
            )
        ]
        let table = RelayBench.table(measured)
        #expect(
            table.rows == [
                [
                    "4 rooms × 4", "50000 / 50000", "50000 / 50000", "263 / 263", "25.0 / 12.5", "0 / 0",
                    "200000 / 400000", "0.00 / 0.00", "25 / 25",
                ],
                [
                    "4 rooms × 4", "100000 / 100000", "100000 / 100000", "525 / 525", "40.0 / 25.0", "0 / 0",
                    "250000 / 400000", "2.00 / 0.00", "25 / 25",
                ],
            ])
        #expect(
            RelayBench.summary(measured) == [
                "4 rooms × 4: parley serve 225000 pkt/s per core (median of the steps), raw 400000 (0.56x); "
                    + "highest delivered under 1 % loss: 50000 pkt/s.",
                "Goal: ≥ 100000 pkt/s per core, every layout: met (225000).",
            ])
    }
}
