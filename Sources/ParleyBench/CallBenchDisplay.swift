import Foundation
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// An X server without a screen (Xvfb) for the clients that paint into windows: baresip's x11 display and Chromium.
/// Xvfb picks a free display number itself (`-displayfd`) and prints it; `stop()` ends it.
final class VirtualDisplay {
    /// The screen every windowed client gets: wide enough for two 640x480 videos side by side plus a browser's
    /// toolbar and borders.
    static let screen = "1920x1080x24"

    /// The Xvfb process (its CPU is what painting into the windows costs the X server).
    let process: BackgroundProcess
    /// `:N`, for `DISPLAY`.
    let name: String

    /// Starts Xvfb (`xvfb` is its path, nil when it was not looked up).
    init(xvfb: String?, directory: String) throws {
        guard let xvfb else { throw CallBenchError.missingTool("Xvfb", package: "xvfb") }
        process = try BackgroundProcess(
            xvfb, ["-displayfd", "1", "-screen", "0", Self.screen, "-nolisten", "tcp"],
            outputPath: directory + "/xvfb-\(UUID().uuidString.prefix(8)).log")
        var number: Int?
        let ready = process.waitForOutput(seconds: 10) { output in
            number = Self.displayNumber(in: output)
            return number != nil
        }
        guard ready, let number else {
            process.stop(grace: 1)
            throw CallBenchError.timedOut(
                "Xvfb did not report a display number within 10 s: \(process.output.suffix(400))")
        }
        name = ":\(number)"
    }

    /// The display number Xvfb writes on a line of its own (`-displayfd 1`), nil until it has.
    static func displayNumber(in output: String) -> Int? {
        for line in output.split(separator: "\n", omittingEmptySubsequences: true) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if !text.isEmpty, text.count <= 5, text.allSatisfy(\.isNumber), let number = Int(text) { return number }
        }
        return nil
    }

    var pid: pid_t { process.pid }

    func stop() { process.stop(grace: 3) }
}

/// Every process a program made, found through /proc: its descendants, and processes whose command line names the
/// run's own folder (Chromium's crash handler re-parents itself to init but keeps its database in that folder).
/// Used to count a multi-process program's CPU and memory and to leave none of it running.
struct ProcessFamily {
    /// A process identity that survives pid reuse: the pid and its start time in clock ticks since boot.
    struct Member: Hashable {
        var pid: pid_t
        var startTicks: UInt64
    }

    let root: pid_t
    let marker: String

    /// The family now.
    func members() -> Set<Member> {
        var parents: [pid_t: pid_t] = [:]
        var starts: [pid_t: UInt64] = [:]
        var marked: Set<pid_t> = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = ProcessFamily.stat(pid) else { continue }
            parents[pid] = stat.parent
            starts[pid] = stat.startTicks
            if pid == root || ProcessFamily.commandLine(pid).contains(marker) { marked.insert(pid) }
        }
        var family = marked
        // Descendants of any member: walk the parent links until nothing new joins.
        var grew = true
        while grew {
            grew = false
            for (pid, parent) in parents where !family.contains(pid) && family.contains(parent) {
                family.insert(pid)
                grew = true
            }
        }
        return Set(family.compactMap { pid in starts[pid].map { Member(pid: pid, startTicks: $0) } })
    }

    /// Every process running now.
    static func everyProcess() -> Set<Member> {
        Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
                guard let pid = pid_t(entry), let stat = stat(pid) else { return nil }
                return Member(pid: pid, startTicks: stat.startTicks)
            })
    }

    /// True while `member` is still the same running process.
    static func isAlive(_ member: Member) -> Bool {
        stat(member.pid)?.startTicks == member.startTicks
    }

    /// SIGKILL to every member still running (after the root had its chance to close them itself).
    static func kill(_ members: Set<Member>) {
        for member in members where isAlive(member) { Glibc.kill(member.pid, SIGKILL) }
    }

    /// Parent pid and start time from /proc/PID/stat (fields 4 and 22).
    static func stat(_ pid: pid_t) -> (parent: pid_t, startTicks: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let parent = pid_t(fields[1]), let start = UInt64(fields[19]) else { return nil }
        return (parent, start)
    }

    /// The command line with its arguments joined by spaces ("" when unreadable).
    static func commandLine(_ pid: pid_t) -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return "" }
        return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
    }

    /// Proportional set size (shared pages divided among the processes sharing them) in KiB, from smaps_rollup.
    static func proportionalKiB(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Pss:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
}

/// CPU seconds of a process family over a window, where processes may come and go: a process that appears during
/// the window counts from zero; one that exits during it is missing from the total (the table says how many).
struct FamilyCPUWindow {
    /// The processes counted, asked again at the end.
    private let members: () -> Set<ProcessFamily.Member>
    private let start: [ProcessFamily.Member: Double]
    private let startTime: Double

    init(_ family: ProcessFamily) {
        self.init(members: family.members)
    }

    /// A window over whatever processes `members` gives at its start and at its end.
    init(members: @escaping () -> Set<ProcessFamily.Member>) {
        self.members = members
        var start: [ProcessFamily.Member: Double] = [:]
        for member in members() { start[member] = ProcessProbe.cpuSeconds(member.pid) ?? 0 }
        self.start = start
        startTime = WallClock.seconds
    }

    /// What the family used since the start.
    struct Figures {
        /// Percent of one core, all processes together.
        var cpuPercent: Double
        /// Sum of every process's peak RSS (VmHWM), MiB: shared pages count once per process.
        var peakMiBSum: Double
        /// Sum of proportional set sizes at the end, MiB: shared pages divided among their sharers.
        var proportionalMiB: Double
        /// Processes at the end of the window.
        var processes: Int
        /// Processes of the start that exited during the window (their last CPU seconds are missing).
        var exited: Int
    }

    func finish() -> Figures {
        let elapsed = max(0.001, WallClock.seconds - startTime)
        let members = members()
        var cpu = 0.0
        var peak = 0
        var proportional = 0
        for member in members {
            let now = ProcessProbe.cpuSeconds(member.pid) ?? 0
            cpu += now - (start[member] ?? 0)
            peak += ProcessProbe.peakResidentKiB(member.pid) ?? 0
            proportional += ProcessFamily.proportionalKiB(member.pid) ?? 0
        }
        return Figures(
            cpuPercent: 100 * cpu / elapsed, peakMiBSum: Double(peak) / 1024,
            proportionalMiB: Double(proportional) / 1024, processes: members.count,
            exited: start.keys.filter { !members.contains($0) }.count)
    }
}
