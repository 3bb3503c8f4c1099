import Foundation
import ParleyProcesses
import Testing

@testable import ParleyBench

/// What `parley-bench first-run` counts as the first picture, and how it judges the goal.
@Suite("First run")
struct FirstRunBenchTests {
    struct Screen: CustomTestStringConvertible, Sendable {
        var name: String
        var lines: [String]
        var picture: Bool
        var testDescription: String { name }
    }

    static let screens: [Screen] = [
        Screen(
            name: "the build's progress line",
            lines: ["Building Parley: the first build takes about 5 minutes", "  compiling: 45 % (2:10)"],
            picture: false),
        Screen(
            name: "a call screen before any video: borders, names, a microphone meter",
            lines: ["┌─ alice ─────┐┌─ bob ──┐", "│  █ █        ││        │", "└─────────────┘└────────┘"],
            picture: false),
        Screen(name: "one upper half block", lines: ["│ ▀ │"], picture: true),
        Screen(name: "one lower half block, after other rows", lines: ["", "header", "│▄▄▄▄"], picture: true),
        Screen(name: "an empty pane", lines: [], picture: false),
    ]

    @Test(arguments: screens)
    func firstPicture(_ screen: Screen) {
        #expect(FirstRunBench.showsPicture(screen.lines) == screen.picture)
    }

    static let settings = FirstRunBench.Settings(repository: "/src/parley", commit: String(repeating: "a", count: 40))

    @Test("the goal is met only when every warm run is within 480 s; the empty-cache runs are shown, not judged")
    func goal() {
        let met = FirstRunBench.table(
            [
                .init(warmCache: false, built: 700, firstPicture: 712, demoCores: 0.6),
                .init(warmCache: true, built: 300, firstPicture: 311, demoCores: 0.58),
                .init(warmCache: true, built: nil, firstPicture: 480, demoCores: nil),
            ], release: 0.35, settings: Self.settings, uncommitted: false)
        #expect(met.rows.map { $0[1] } == ["empty", "warm", "warm", "–"])
        #expect(met.rows[2][2] == "–" && met.rows[2][5] == "–")
        #expect(met.rows[3] == ["release build", "–", "–", "–", "–", "0.35"])
        #expect(
            met.notes[0]
                == "Goal: warm package cache, first picture within 480 s in every run: met (slowest 480 s of 2).")
        let missed = FirstRunBench.table(
            [
                .init(warmCache: true, built: 300, firstPicture: 311, demoCores: 0.6),
                .init(warmCache: true, built: 470, firstPicture: 481, demoCores: 0.6),
            ], release: 0.35, settings: Self.settings, uncommitted: true)
        #expect(missed.notes[0].contains(": NOT met (slowest 481 s of 2)"))
        #expect(missed.notes[1].contains("uncommitted changes"))
    }

    @Test("the demo's process is found by its executable under the pane's shell, not elsewhere")
    func processUnderAnAncestor() throws {
        #expect(ProcessFamily.stat(getpid())?.parent == getppid())
        // An executable of its own: other tests of this process start /bin/sleep too (a shared program's shell
        // does), and one of those was found first in a fresh-clone run.
        let program = NSTemporaryDirectory() + "parley-first-run-sleep-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: program)
        defer { try? FileManager.default.removeItem(atPath: program) }
        // Killed when it goes.
        let sleeper = try BackgroundProcess(program, ["30"])
        let pid = sleeper.pid
        #expect(FirstRunBench.process(running: program, under: getpid()) == pid)
        #expect(FirstRunBench.process(running: program, under: pid + 100_000) == nil)
        withExtendedLifetime(sleeper) {}
    }
}
