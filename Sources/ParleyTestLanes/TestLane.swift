import Testing

/// Which share of the machine a suite needs while it runs. One `swift test` of everything starts every suite at once;
/// suites of one lane run together and the lanes take turns, so a suite that times a relay never runs beside one that
/// keeps a sound server, three relays or a PostgreSQL busy. Suites without a lane (the quick, pure ones) run whenever.
/// `make test` runs each lane as a `swift test` process of its own, in this order (Tests/Tools/lanes.py reads the
/// lanes from the sources); `timing` runs with the suites that have no lane.
public enum TestLane: String, CaseIterable, Sendable {
    /// Suites that block their thread while they wait (for a device thread, a program, tmux): the async runtime has
    /// one thread per core here, and beside them the async tests with deadlines got no thread for 15 s.
    case blocking
    /// Async tests with deadlines of seconds: relays and engines over loopback, handlers counting a rate.
    case timing
    /// The store's guarantees on SQLite and a PostgreSQL of their own: `MessageStore` is synchronous, so each call on
    /// PostgreSQL holds a thread of the async runtime until the database answers, fsync included.
    case stores
    /// Whole processes: relays, bots, tmux, terminals on Xvfb, simulcast calls across nodes.
    case processes
    /// The network lab: up to three bots at 640x360 and a relay, each in a namespace, timed against shaped links.
    /// They fill both cores; beside the processes lane a capture test recovered a tone at 0.21 instead of > 0.5.
    case lab
    /// Calls recorded to WebM and read back by FFmpeg and GStreamer (several bots, a recorder, decoders).
    case recording
    /// Relays on a PostgreSQL of their own: each test starts a database server and several relays.
    case database
    /// Long CPU-bound audio simulations (simulated minutes of drift, echo convergence).
    case simulations
    /// A call over a lossy link that asserts no 20 ms of audio goes missing, so it needs its threads on time.
    case lossy
    /// A real sound server and a real-time sound call: two cores shared with anything else cannot keep a sound
    /// server, two drawing clients and a relay on time.
    case realTime = "real-time"
    /// A headless Chromium: as it starts, its browser, renderer and network processes take both cores for a second;
    /// beside the processes lane, a terminal's answer to the graphics query came too late and kitty was taken for a
    /// terminal without pixel graphics.
    case browsers
}

/// Whose turn it is: the suites running now are all of one lane; a suite of another lane waits until they are done,
/// and then every suite waiting in the first lane (in `TestLane` order) that has any starts together.
public struct LaneTurns: Sendable, Equatable {
    /// The lane running now, if any suite runs.
    public private(set) var current: TestLane?
    /// How many suites of `current` run now.
    public private(set) var running = 0
    /// How many suites wait, by lane.
    public private(set) var waiting: [TestLane: Int] = [:]

    public init() {}

    /// A suite of `lane` asks to start: true if it may start now, false if it waits its lane's turn.
    public mutating func arrive(_ lane: TestLane) -> Bool {
        guard current == nil || current == lane else {
            waiting[lane, default: 0] += 1
            return false
        }
        current = lane
        running += 1
        return true
    }

    /// A suite finished: the lane whose waiting suites start now, if the turn passed to one.
    public mutating func leave() -> TestLane? {
        precondition(running > 0, "a suite left a lane nobody ran in")
        running -= 1
        guard running == 0 else { return nil }
        current = nil
        guard let next = TestLane.allCases.first(where: { waiting[$0, default: 0] > 0 }) else { return nil }
        current = next
        running = waiting.removeValue(forKey: next) ?? 0
        return next
    }
}

/// A `LaneTurns` with the suites waiting for their turn; `shared` is the test process's.
public actor LaneTaker {
    /// The turns every `.lane(_:)` trait of this process takes.
    public static let shared = LaneTaker()
    @TaskLocal static var held: TestLane?

    private var turns = LaneTurns()
    private var parked: [TestLane: [CheckedContinuation<Void, Never>]] = [:]

    public init() {}

    func take(_ lane: TestLane) async {
        if turns.arrive(lane) { return }
        await withCheckedContinuation { parked[lane, default: []].append($0) }
    }

    func give() {
        guard let next = turns.leave() else { return }
        for suite in parked.removeValue(forKey: next) ?? [] { suite.resume() }
    }
}

/// Runs a suite (or a test) in its lane: see `TestLane`.
public struct LaneTrait: SuiteTrait, TestTrait, TestScoping {
    public let lane: TestLane
    /// Whose turns it takes: the process's, or a test's own.
    public let taker: LaneTaker

    public init(lane: TestLane, taker: LaneTaker = .shared) {
        self.lane = lane
        self.taker = taker
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if let held = LaneTaker.held {
            // A suite inside a suite that has the turn runs in that turn: waiting for a turn of its own, it would
            // wait for itself.
            if held != lane {
                Issue.record("\(test.name) asks for lane \(lane) inside a suite of lane \(held); it ran in \(held)")
            }
            try await function()
            return
        }
        await taker.take(lane)
        do {
            try await LaneTaker.$held.withValue(lane) { try await function() }
        } catch {
            await taker.give()
            throw error
        }
        await taker.give()
    }
}

extension Trait where Self == LaneTrait {
    /// Runs this suite in `lane`, never beside suites of another lane: see `TestLane`.
    public static func lane(_ lane: TestLane) -> Self { LaneTrait(lane: lane) }
}
