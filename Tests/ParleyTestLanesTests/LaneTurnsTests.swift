import ParleyTestLanes
import Testing

@Suite struct LaneTurnsTests {
    enum Step: Sendable, CustomStringConvertible {
        case arrive(TestLane, starts: Bool)
        case leave(next: TestLane?)

        var description: String {
            switch self {
            case .arrive(let lane, let starts): "\(lane) arrives, \(starts ? "starts" : "waits")"
            case .leave(let next): "one leaves, \(next.map { "\($0) goes next" } ?? "no lane goes next")"
            }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var label: String
        var steps: [Step]
        /// The lane running and how many of its suites run, after the last step.
        var current: TestLane?
        var running: Int
        var testDescription: String { label }
    }

    static let rows: [Row] = [
        Row(
            label: "the first suite starts its lane", steps: [.arrive(.processes, starts: true)], current: .processes,
            running: 1),
        Row(
            label: "suites of the running lane join it",
            steps: [.arrive(.timing, starts: true), .arrive(.timing, starts: true)], current: .timing, running: 2),
        Row(
            label: "another lane waits until the running one is empty",
            steps: [
                .arrive(.timing, starts: true), .arrive(.timing, starts: true), .arrive(.recording, starts: false),
                .leave(next: nil), .leave(next: .recording),
            ], current: .recording, running: 1),
        Row(
            label: "every waiting suite of the next lane starts together",
            steps: [
                .arrive(.blocking, starts: true), .arrive(.database, starts: false), .arrive(.database, starts: false),
                .leave(next: .database),
            ], current: .database, running: 2),
        Row(
            label: "the earliest lane in `TestLane` order goes next, not the first to arrive",
            steps: [
                .arrive(.realTime, starts: true), .arrive(.database, starts: false), .arrive(.timing, starts: false),
                .leave(next: .timing), .leave(next: .database),
            ], current: .database, running: 1),
        Row(
            label: "the last suite out leaves no lane running",
            steps: [.arrive(.lossy, starts: true), .leave(next: nil)], current: nil, running: 0),
    ]

    @Test(arguments: rows) func turns(_ row: Row) {
        var turns = LaneTurns()
        for step in row.steps {
            switch step {
            case .arrive(let lane, let starts):
                #expect(turns.arrive(lane) == starts, "\(step)")
            case .leave(let next):
                #expect(turns.leave() == next, "\(step)")
            }
        }
        #expect(turns.current == row.current)
        #expect(turns.running == row.running)
    }

    /// Suites of two lanes in one process: no suite of one runs while a suite of the other runs.
    @Test func twoLanesNeverOverlap() async throws {
        let log = OverlapLog()
        let taker = LaneTaker()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 {
                let lane: TestLane = index.isMultiple(of: 2) ? .processes : .database
                group.addTask {
                    try await LaneTrait(lane: lane, taker: taker).provideScope(
                        for: Test.current!, testCase: nil,
                        performing: {
                            await log.enter(lane)
                            try await Task.sleep(for: .milliseconds(20))
                            await log.leave(lane)
                        })
                }
            }
            try await group.waitForAll()
        }
        #expect(await log.overlaps == 0)
        #expect(await log.entered == 6)
    }
}

actor OverlapLog {
    private var inside: [TestLane: Int] = [:]
    private(set) var overlaps = 0
    private(set) var entered = 0

    func enter(_ lane: TestLane) {
        entered += 1
        if inside.contains(where: { $0.key != lane && $0.value > 0 }) { overlaps += 1 }
        inside[lane, default: 0] += 1
    }

    func leave(_ lane: TestLane) { inside[lane, default: 0] -= 1 }
}
