import Foundation
import ParleyProcesses

/// `parley-bench first-run`: what a newcomer waits for. This commit is cloned into an empty folder and `make run`
/// started there in a 100x30 tmux pane, with no SwiftPM build folder; the pane is read once a second until it shows
/// the first video cell. The first run starts with an empty package cache (a `HOME` of its own, so SwiftPM clones
/// every dependency again from its source); the runs after it find the cache that first run filled, as a user's
/// second project would. Debian's packages are taken as installed (`make run` checks them, as it always does).
enum FirstRunBench {
    struct Settings: Sendable {
        /// The repository whose commit is cloned.
        var repository: String
        /// The commit measured (HEAD of `repository`).
        var commit: String
        /// Runs with an empty package cache, then runs with the cache they filled.
        var coldRuns = 1
        var warmRuns = 3
        var columns = 100
        var rows = 30
        /// A run that shows no picture by then fails (the issue's 15 minutes and as much again).
        var timeout: Double = 1800
        /// The issue's goal for a warm cache, in seconds.
        static let goal = 480.0

        /// The checkout this program runs in and its HEAD; `PARLEY_FIRST_RUN_COLD`/`_WARM` set the counts.
        static func fromEnvironment(git: String) throws -> Settings {
            let top = try ChildProcess.run(git, ["rev-parse", "--show-toplevel"])
            guard top.status == 0 else { throw BenchFailure("first-run: run it inside Parley's git checkout") }
            let repository = top.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let head = try ChildProcess.run(git, ["-C", repository, "rev-parse", "HEAD"])
            var settings = Settings(
                repository: repository, commit: head.output.trimmingCharacters(in: .whitespacesAndNewlines))
            let environment = ProcessInfo.processInfo.environment
            for (name, count) in [("PARLEY_FIRST_RUN_COLD", \Settings.coldRuns), ("PARLEY_FIRST_RUN_WARM", \.warmRuns)]
            {
                guard let text = environment[name] else { continue }
                guard let value = Int(text), (0...10).contains(value) else {
                    throw BenchFailure("\(name)=\(text): give a number of runs from 0 to 10")
                }
                settings[keyPath: count] = value
            }
            return settings
        }
    }

    /// One clone's wait.
    struct Run: Sendable {
        var warmCache: Bool
        /// Seconds from `make run` to the binary written, and to the first video cell.
        var built: Double?
        var firstPicture: Double
        /// Cores the demo call then kept busy (its one process: relay, bots and screen), over `cpuWindow`.
        var demoCores: Double?
    }

    /// Seconds the call settles after its first picture, and the window its CPU is read over.
    static let settle = 5.0
    static let cpuWindow = 20.0

    /// A picture cell as the call draws it in colour: an upper or lower half block ('█' is also the microphone
    /// meter's, so it does not count). Neither appears in what `make run` prints while it builds.
    static func showsPicture(_ lines: [String]) -> Bool {
        lines.contains { line in line.contains { $0 == "▀" || $0 == "▄" } }
    }

    /// `parley`: the release build, whose demo's CPU is the reference for the first run's build.
    static func run(parley: String, log: @escaping @Sendable (String) -> Void) throws -> [BenchTable] {
        let git = try findTool("git", package: "git")
        let settings = try Settings.fromEnvironment(git: git)
        let dirty = try ChildProcess.run(
            git, ["-C", settings.repository, "status", "--porcelain", "--untracked-files=no"])
        let root = NSTemporaryDirectory() + "parley-first-run-\(getpid())"
        let home = root + "/home"
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var runs: [Run] = []
        let plan = Array(repeating: false, count: settings.coldRuns) + Array(repeating: true, count: settings.warmRuns)
        for (index, warm) in plan.enumerated() {
            log("first-run: run \(index + 1) of \(plan.count), package cache \(warm ? "warm" : "empty")")
            if !warm {
                try? FileManager.default.removeItem(atPath: home)
                try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            }
            let folder = root + "/clone-\(index + 1)"
            let run = try measure(settings, folder: folder, home: home, warmCache: warm, git: git)
            log(String(format: "first-run: first picture after %.0f s", run.firstPicture))
            runs.append(run)
            try? FileManager.default.removeItem(atPath: folder)
        }
        log("first-run: the same demo from the release build, \(parley)")
        let release = try demoCores(
            TmuxPane(
                command: "\(parley) demo --log \(root)/release-demo.log", columns: settings.columns, rows: settings.rows
            ),
            binary: parley, timeout: 60)
        return [table(runs, release: release, settings: settings, uncommitted: !dirty.output.isEmpty)]
    }

    /// Waits for the pane's first picture, lets the call settle and returns the cores the process running `binary`
    /// kept busy over `cpuWindow`.
    static func demoCores(_ pane: TmuxPane, binary: String, timeout: Double) throws -> Double {
        let deadline = Date().addingTimeInterval(timeout)
        while !showsPicture(try pane.text()) {
            guard Date() < deadline else { throw BenchFailure("first-run: \(binary) demo drew no picture") }
            Thread.sleep(forTimeInterval: 0.2)
        }
        Thread.sleep(forTimeInterval: settle)
        let panePID = Int32(
            try pane.run(["display", "-p", "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines))
        guard let panePID, let pid = process(running: binary, under: panePID) else {
            throw BenchFailure("first-run: no process in the pane runs \(binary)")
        }
        let before = processSchedulerSeconds(pid: pid).run
        Thread.sleep(forTimeInterval: cpuWindow)
        return (processSchedulerSeconds(pid: pid).run - before) / cpuWindow
    }

    /// The process under `ancestor` (the pane's shell) whose executable is `binary`: not another program's `parley`.
    static func process(running binary: String, under ancestor: Int32) -> Int32? {
        let target = URL(fileURLWithPath: binary).resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).first { pid in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == target else {
                return false
            }
            var current = pid
            while current > 1 {
                if current == ancestor { return true }
                current = ProcessFamily.stat(current)?.parent ?? 1
            }
            return false
        }
    }

    /// Clones, starts `make run` in a pane and reads the pane once a second until the first picture cell.
    static func measure(_ settings: Settings, folder: String, home: String, warmCache: Bool, git: String) throws -> Run
    {
        let clone = try ChildProcess.run(git, ["clone", "--quiet", settings.repository, folder])
        guard clone.status == 0 else { throw BenchFailure("first-run: git clone failed: \(clone.output)") }
        let checkout = try ChildProcess.run(git, ["-C", folder, "checkout", "--quiet", settings.commit])
        guard checkout.status == 0 else { throw BenchFailure("first-run: checkout failed: \(checkout.output)") }
        // The pane's shell gets the run's own HOME (its SwiftPM cache) and stays after `make run` ends, so a failed
        // build can be read.
        let command =
            "sh -c 'cd \(folder) && HOME=\(home) make run; echo FIRST-RUN-EXITED rc=$?; sleep 3600'"
        let started = Date()
        let pane = try TmuxPane(command: command, columns: settings.columns, rows: settings.rows)
        let binary = folder + "/.build/debug/parley"
        var built: Double?
        while true {
            let lines = try pane.text()
            let now = Date().timeIntervalSince(started)
            if built == nil, let written = modified(binary) { built = written.timeIntervalSince(started) }
            if showsPicture(lines) {
                let cores = try demoCores(pane, binary: binary, timeout: 10)
                return Run(warmCache: warmCache, built: built, firstPicture: now, demoCores: cores)
            }
            if lines.contains(where: { $0.contains("FIRST-RUN-EXITED") }) || now > settings.timeout {
                let shown = lines.filter { !$0.isEmpty }.suffix(12).joined(separator: "\n")
                throw BenchFailure(
                    String(format: "first-run: no picture after %.0f s; the pane shows:\n", now) + shown)
            }
            Thread.sleep(forTimeInterval: 1)
        }
    }

    static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    static func table(_ runs: [Run], release: Double, settings: Settings, uncommitted: Bool) -> BenchTable {
        var table = BenchTable(
            title:
                "The first run: `make run` on a fresh clone in a \(settings.columns)x\(settings.rows) tmux pane, "
                + "seconds until the first video cell",
            columns: [
                "run", "package cache", "binary built, s", "first picture, s", "first picture, min",
                "the demo call then, cores busy",
            ])
        for (index, run) in runs.enumerated() {
            table.add([
                "\(index + 1)", run.warmCache ? "warm" : "empty",
                run.built.map { String(format: "%.0f", $0) } ?? "–", String(format: "%.0f", run.firstPicture),
                String(format: "%.1f", run.firstPicture / 60), run.demoCores.map { String(format: "%.2f", $0) } ?? "–",
            ])
        }
        table.add(["release build", "–", "–", "–", "–", String(format: "%.2f", release)])
        let warm = runs.filter(\.warmCache).map(\.firstPicture)
        if let worst = warm.max() {
            let met = worst <= Settings.goal ? "met" : "NOT met"
            table.notes.append(
                String(
                    format:
                        "Goal: warm package cache, first picture within %.0f s in every run: %@ (slowest %.0f s of %d).",
                    Settings.goal, met, worst, warm.count))
        }
        table.notes.append(
            "Commit \(settings.commit.prefix(12))\(uncommitted ? " (the checkout also had uncommitted changes, not measured)" : ""); "
                + "Debian packages already installed; an empty cache is a HOME of the run's own, whose SwiftPM "
                + "clones every dependency again (here from the machine's local copies of the packages, not over the "
                + "internet); the warm runs reuse what it fetched. The pane is read once a second. `make run` builds "
                + "the debug configuration with Parley's pixel modules optimized; the last row is the same demo from "
                + "the release build (`make build`). Cores busy: the demo's one process (relay, three bots, the "
                + String(format: "screen) over %.0f s, %.0f s after its first picture.", cpuWindow, settle))
        return table
    }
}
