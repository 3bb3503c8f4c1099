import ParleyProcesses
import Testing

/// The user-space link element's rules, with time as an input and a fixed seed.
struct LinkModelTests {
    /// Sends `count` packets 20 ms apart; when each arrived (nil: lost).
    static func run(_ settings: LinkModel.Settings, count: Int = 100_000, seed: UInt64 = 7) throws -> [Double?] {
        var link = try LinkModel(settings, seed: seed)
        return (0..<count).map { link.arrival(sentAt: Double($0) * 20) }
    }

    static func bursts(_ arrivals: [Double?]) -> [Int] {
        var runs: [Int] = []
        var current = 0
        for arrival in arrivals {
            if arrival == nil {
                current += 1
            } else if current > 0 {
                runs.append(current)
                current = 0
            }
        }
        return runs
    }

    struct LossRow: Sendable, CustomTestStringConvertible {
        var percent: Double
        var burst: Double
        var testDescription: String { "\(percent) % in bursts of \(burst)" }
    }

    @Test(arguments: [
        LossRow(percent: 1, burst: 1), LossRow(percent: 5, burst: 3), LossRow(percent: 20, burst: 2),
    ])
    func lossAndItsBurstsAreAsAsked(_ row: LossRow) throws {
        let arrivals = try Self.run(LinkModel.Settings(lossPercent: row.percent, meanBurstLength: row.burst))
        let lost = Double(arrivals.filter { $0 == nil }.count) / Double(arrivals.count) * 100
        #expect(abs(lost - row.percent) <= row.percent * 0.1, "lost \(lost) %")
        let runs = Self.bursts(arrivals)
        let mean = Double(runs.reduce(0, +)) / Double(runs.count)
        #expect(abs(mean - row.burst) <= row.burst * 0.1, "mean burst \(mean)")
    }

    @Test func delayAndItsDeviationAreAsAskedAndNothingOvertakesUnlessAllowed() throws {
        let inOrder = try Self.run(
            LinkModel.Settings(delay: .milliseconds(80), delayDeviation: .milliseconds(30)), count: 50_000)
        let arrivals = inOrder.compactMap { $0 }
        #expect(zip(arrivals, arrivals.dropFirst()).allSatisfy { $0 <= $1 }, "no packet overtakes another")
        let delays = arrivals.enumerated().map { $1 - Double($0) * 20 }
        #expect(delays.allSatisfy { $0 >= 0 })
        let mean = delays.reduce(0, +) / Double(delays.count)
        // A packet held behind a slower one waits longer, as in libwebrtc's simulated network without reordering:
        // 20 ms apart with 30 ms of deviation, the mean comes to ~91 ms.
        #expect(mean >= 85 && mean <= 100, "mean delay \(mean) ms")

        let reordered = try Self.run(
            LinkModel.Settings(delay: .milliseconds(80), delayDeviation: .milliseconds(30), reorders: true),
            count: 50_000
        ).compactMap { $0 }
        let freeDelays = reordered.enumerated().map { $1 - Double($0) * 20 }
        let freeMean = freeDelays.reduce(0, +) / Double(freeDelays.count)
        let deviation = (freeDelays.map { ($0 - freeMean) * ($0 - freeMean) }.reduce(0, +) / Double(freeDelays.count))
            .squareRoot()
        #expect(abs(freeMean - 80) <= 1 && abs(deviation - 30) <= 1.5, "mean \(freeMean) ms, deviation \(deviation)")
        #expect(zip(reordered, reordered.dropFirst()).contains { $0 > $1 }, "with reordering some packets overtake")
    }

    @Test func aCleanLinkChangesNothingAndTheSameSeedDrawsTheSame() throws {
        #expect(try Self.run(.clean, count: 100) == (0..<100).map { Double($0) * 20 })
        let settings = LinkModel.Settings(delay: .milliseconds(20), delayDeviation: .milliseconds(15), lossPercent: 5)
        #expect(try Self.run(settings, count: 1_000) == Self.run(settings, count: 1_000))
        #expect(try Self.run(settings, count: 1_000) != Self.run(settings, count: 1_000, seed: 8))
    }

    @Test func settingsItCannotEmulateAreRefusedByName() {
        for (settings, message) in [
            (LinkModel.Settings(lossPercent: 101), "a link loses 0 to 100 % of its packets, not 101.0 %"),
            (LinkModel.Settings(meanBurstLength: 0.5), "a burst of losses is at least 1 packet long, not 0.5"),
            (LinkModel.Settings(delay: .milliseconds(-1)), "a delay and its deviation are not negative"),
        ] {
            let error = #expect(throws: NetworkLabError.self) { try LinkModel(settings, seed: 1) }
            #expect(error?.description == message)
        }
    }
}
