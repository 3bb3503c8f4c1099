import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyProcesses
import ParleyShare
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Issue 52's goals for a shared terminal, on loopback through a real `parley serve`:
///
/// - keystroke to the viewer's screen: `parley share` (a shell) and `parley join` in tmux panes; a key typed into the
///   sharer's pane until the viewer's pane shows it echoed, by polling the viewer's pane; beside it the same polling
///   of a shell's echo in a pane of its own, which is the measurement's floor;
/// - CPU of the sharer while its shell is idle, and of a viewer drawing `htop` (both real processes, 20 s each);
/// - bytes on the wire for an idle shell, `htop` refreshing every second and `seq 1 200000`: the sharer's RTP bytes
///   (the real `SharedTerminal` and engine in this process, to the real relay), against a 320x240 VP8 stream of the
///   same screens (every screen the share published, drawn 4x10 pixels a cell with Parley's bitmap font, encoded at
///   30 fps, the share's most updates a second, and the 320x240 profile's 200 kbit/s) and the raw bytes a share of
///   the program's output would send.
public enum ShareBench {
    static let keystrokes = 60
    static let cpuSeconds = 20.0
    static let workloadSeconds = 20.0

    public static func run(parley: String, log: @escaping @Sendable (String) -> Void) async throws -> [BenchTable] {
        guard TmuxPane.tmuxPath != nil else { throw BenchFailure("share: tmux is needed (apt-get install tmux)") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/htop") else {
            throw BenchFailure("share: htop is needed for the htop workload (make bench-deps installs it)")
        }
        let directory = NSTemporaryDirectory() + "parley-share-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (relay, port, _) = try CallBench.startRelay(
            parley: parley, directory: directory, extraArguments: ["--insecure"])
        defer { relay.stop() }
        let live = try await measureLive(parley: parley, port: Int(port), log: log)
        var workloads: [WorkloadResult] = []
        for workload in Workload.all {
            log("share: \(workload.name)…")
            workloads.append(try await measureBytes(workload, port: Int(port)))
        }
        return [liveTable(live), bytesTable(workloads)]
    }

    // MARK: - Keystrokes and CPU, with the real binaries

    struct LiveResult {
        var parley: [Double]
        var floor: [Double]
        var sharerIdleCPU: Double
        var viewerHtopCPU: Double
        var sharerHtopCPU: Double
        /// Seconds from a late viewer's `parley join` starting to the share's screen on it, each try.
        var lateJoins: [Double]
    }

    static func measureLive(parley: String, port: Int, log: @Sendable (String) -> Void) async throws -> LiveResult {
        let server = "--server 127.0.0.1:\(port) --insecure --guest --log /dev/null"
        let viewer = try TmuxPane(
            command: "env -u NO_COLOR TERM=tmux-256color \(parley) join bench \(server) --name bob --role audience "
                + "--audio silence --speaker none",
            columns: 120, rows: 40)
        let sharer = try TmuxPane(
            command: "env PS1='$ ' \(parley) share bench \(server) --name alice -- bash --norc --noprofile",
            columns: 80, rows: 24)
        try await viewer.text("the share on the viewer's screen", within: .seconds(20)) {
            $0.contains { $0.contains("alice's terminal") } && $0.contains { $0.contains("│$") }
        }
        log("share: \(keystrokes) keystrokes…")
        let parleyTimes = try await keystrokeTimes(typeInto: sharer, watch: viewer, prefix: "│$ ")
        log(
            "share: keystroke to viewer p50 \(Int(percentile(parleyTimes, 0.5))) ms, p95 "
                + "\(Int(percentile(parleyTimes, 0.95))) ms")
        let local = try TmuxPane(command: "env PS1='$ ' bash --norc --noprofile", columns: 80, rows: 24)
        let floorTimes = try await keystrokeTimes(typeInto: local, watch: local, prefix: "$ ")

        log("share: late joiners…")
        var lateJoins: [Double] = []
        try sharer.send(["C-u"])
        try sharer.sendLiteral("echo LATE-MARK")
        try sharer.send(["Enter"])
        try await viewer.text("the mark at the first viewer", within: .seconds(10)) {
            $0.contains { $0.contains("│LATE-MARK") }
        }
        for attempt in 0..<5 {
            let started = ContinuousClock.now
            let late = try TmuxPane(
                command: "env -u NO_COLOR TERM=tmux-256color \(parley) join bench \(server) --name late\(attempt) "
                    + "--role audience --audio silence --speaker none",
                columns: 120, rows: 40)
            try await late.text("the share at a late joiner", within: .seconds(20), every: .milliseconds(2)) {
                $0.contains { $0.contains("│LATE-MARK") }
            }
            lateJoins.append(milliseconds(ContinuousClock.now - started) / 1_000)
            _ = try? late.run(["kill-server"])
            try await Task.sleep(for: .seconds(1))
        }
        log("share: CPU of an idle sharer…")
        let sharerPID = try pid(of: sharer)
        let viewerPID = try pid(of: viewer)
        try await Task.sleep(for: .seconds(2))
        let idle = try await cpuShare(of: sharerPID, over: cpuSeconds)
        log("share: CPU while htop runs…")
        try sharer.send(["C-u"])
        try sharer.sendLiteral("htop -d 10")
        try sharer.send(["Enter"])
        try await viewer.text("htop on the viewer's screen", within: .seconds(20)) {
            $0.contains { $0.contains("Load average") }
        }
        try await Task.sleep(for: .seconds(2))
        async let viewerCPU = cpuShare(of: viewerPID, over: cpuSeconds)
        async let sharerCPU = cpuShare(of: sharerPID, over: cpuSeconds)
        let (htopViewer, htopSharer) = try await (viewerCPU, sharerCPU)
        try sharer.send(["q"])
        return LiveResult(
            parley: parleyTimes, floor: floorTimes, sharerIdleCPU: idle, viewerHtopCPU: htopViewer,
            sharerHtopCPU: htopSharer, lateJoins: lateJoins)
    }

    /// Milliseconds from a key sent into `typeInto` to `watch` showing it after `prefix`, one key at a time.
    static func keystrokeTimes(typeInto: TmuxPane, watch: TmuxPane, prefix: String) async throws -> [Double] {
        var times: [Double] = []
        var line = ""
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        for index in 0..<keystrokes {
            if line.count >= 40 {
                try typeInto.send(["C-u"])
                let typed = prefix + line
                line = ""
                try await watch.text("the line cleared", within: .seconds(10)) { lines in
                    !lines.contains { $0.contains(typed) }
                }
            }
            try await Task.sleep(for: .milliseconds(150))
            let letter = letters[index % letters.count]
            line.append(letter)
            let expected = prefix + line
            let started = ContinuousClock.now
            try typeInto.sendLiteral(String(letter))
            try await watch.text("\"\(line)\" echoed", within: .seconds(10), every: .milliseconds(1)) { lines in
                lines.contains { $0.contains(expected) }
            }
            times.append(milliseconds(ContinuousClock.now - started))
        }
        return times
    }

    static func pid(of pane: TmuxPane) throws -> Int32 {
        let text = try pane.run(["display", "-p", "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text) else { throw BenchFailure("share: no pane pid in \"\(text)\"") }
        return pid
    }

    /// The share of one core `pid` used over `seconds` (its every thread, from the scheduler).
    static func cpuShare(of pid: Int32, over seconds: Double) async throws -> Double {
        let before = processSchedulerSeconds(pid: pid).run
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let elapsed = milliseconds(ContinuousClock.now - started) / 1_000
        return (processSchedulerSeconds(pid: pid).run - before) / elapsed
    }

    // MARK: - Bytes, in this process

    struct Workload {
        var name: String
        var command: [String]
        /// Ends when the program does, or after `seconds`.
        var seconds: Double

        static let all = [
            Workload(
                name: "an idle shell", command: ["bash", "--norc", "--noprofile", "-i"], seconds: workloadSeconds),
            Workload(name: "htop refreshing every second", command: ["htop", "-d", "10"], seconds: workloadSeconds),
            Workload(
                name: "seq 1 200000 scrolling", command: ["sh", "-c", "seq 1 200000; sleep 60"],
                seconds: workloadSeconds),
        ]
    }

    struct WorkloadResult {
        var name: String
        var seconds: Double
        var shareBytes: Int
        var updates: Int
        var rawBytes: Int
        var vp8Bytes: Int
    }

    /// The screens a share published, with when.
    final class ScreenLog: Sendable {
        private let entries = Mutex<[(Double, TerminalScreen)]>([])
        func add(_ screen: TerminalScreen, at seconds: Double) { entries.withLock { $0.append((seconds, screen)) } }
        var all: [(Double, TerminalScreen)] { entries.withLock { $0 } }
    }

    static func measureBytes(_ workload: Workload, port: Int) async throws -> WorkloadResult {
        var logger = Logger(label: "bench.share")
        logger.logLevel = .critical
        let feed = TerminalShareFeed()
        var configuration = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "bytes-\(UUID().uuidString.prefix(6))",
            name: "alice", audioSource: .silence, microphoneMuted: true, decodesVideo: false, decodesAudio: false,
            showsSelfView: false, logger: logger)
        configuration.share = feed
        let engine = try CallEngine(configuration)
        engine.start()
        var bound = false
        for _ in 0..<200 where !bound {
            try await Task.sleep(for: .milliseconds(50))
            bound = await engine.statistics().mediaBound
        }
        guard bound else { throw BenchFailure("share: the sharer never bound its media") }
        let null = open("/dev/null", O_RDWR)
        defer { close(null) }
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "xterm-256color"
        environment["PS1"] = "$ "
        let terminal = try SharedTerminal(
            command: workload.command, environment: environment, input: null, output: null)
        let screens = ScreenLog()
        let started = ContinuousClock.now
        let bytesBefore = await engine.statistics().mediaBytesSent
        let finished = Atomic<Bool>(false)
        let thread = Thread {
            _ = terminal.run(publish: { screen in
                feed.publish(screen)
                screens.add(screen, at: milliseconds(ContinuousClock.now - started) / 1_000)
            })
            finished.store(true, ordering: .releasing)
        }
        thread.start()
        while !finished.load(ordering: .acquiring),
            milliseconds(ContinuousClock.now - started) < workload.seconds * 1_000
        {
            try await Task.sleep(for: .milliseconds(100))
        }
        terminal.stop()
        while !finished.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(20)) }
        // What was published last has left.
        try await Task.sleep(for: .milliseconds(300))
        let elapsed = milliseconds(ContinuousClock.now - started) / 1_000
        let stats = await engine.statistics()
        await engine.leave()
        return WorkloadResult(
            name: workload.name, seconds: elapsed, shareBytes: stats.mediaBytesSent - bytesBefore,
            updates: stats.shareUpdatesSent, rawBytes: terminal.outputBytes,
            vp8Bytes: try vp8Bytes(of: screens.all, seconds: elapsed))
    }

    /// The bytes a 320x240 VP8 stream at 30 fps (the share's most updates a second) and 200 kbit/s (the 320x240
    /// profile's rate) spends on `screens` over `seconds`: at each frame time the screen showing then, drawn 4x10
    /// pixels a cell.
    static func vp8Bytes(of screens: [(Double, TerminalScreen)], seconds: Double) throws -> Int {
        let encoder = try VP8Encoder(
            VP8EncoderConfig(width: 320, height: 240, targetBitrateKbps: 200, framesPerSecond: 30))
        var total = 0
        var next = 0
        var current: TerminalScreen?
        var picture: VideoFrame?
        for index in 0..<Int(seconds * 30) {
            let time = Double(index) / 30
            var changed = false
            while next < screens.count, screens[next].0 <= time {
                current = screens[next].1
                next += 1
                changed = true
            }
            guard let current else { continue }
            if changed || picture == nil { picture = draw(current) }
            guard var frame = picture else { continue }
            frame.timestampMicros = Int64(time * 1_000_000)
            total += try encoder.encode(frame).reduce(0) { $0 + $1.bytes.count }
        }
        return total
    }

    /// A screen as a 320x240 picture: each cell 4x10 pixels, its character's glyph (Parley's 5x7 font, its first
    /// four columns) in the foreground's brightness on the background's.
    static func draw(_ screen: TerminalScreen) -> VideoFrame {
        let width = 320
        let height = 240
        var y = [UInt8](repeating: 16, count: width * height)
        let cellWidth = width / max(1, screen.columns)
        let cellHeight = height / max(1, screen.rows)
        for row in 0..<screen.rows {
            for column in 0..<screen.columns {
                let cell = screen[row, column]
                let background = brightness(cell.style.background, default: 16)
                let foreground = brightness(cell.style.foreground, default: 220)
                let glyph = cell.text.first.map(PixelFont.glyph) ?? []
                for dy in 0..<cellHeight {
                    for dx in 0..<cellWidth {
                        let glyphRow = dy - 1
                        let lit =
                            glyphRow >= 0 && glyphRow < glyph.count && dx < 5
                            && glyph[glyphRow] & (0x10 >> UInt8(dx)) != 0
                        y[(row * cellHeight + dy) * width + column * cellWidth + dx] = lit ? foreground : background
                    }
                }
            }
        }
        let chroma = [UInt8](repeating: 128, count: (width / 2) * (height / 2))
        return VideoFrame(width: width, height: height, y: y, u: chroma, v: chroma)
    }

    static func brightness(_ color: ShareColor, default value: UInt8) -> UInt8 {
        switch color {
        case .terminalDefault: value
        case .indexed(let index): UInt8(40 + Int(index) * 215 / 255)
        case .rgb(let red, let green, let blue): UInt8((Int(red) * 3 + Int(green) * 6 + Int(blue)) / 10)
        }
    }

    // MARK: - Tables

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }

    static func liveTable(_ live: LiveResult) -> BenchTable {
        var table = BenchTable(
            title: "Sharing a terminal: a keystroke to the viewer's screen, and CPU (loopback, through parley serve)",
            columns: ["What", "Measured", "Goal", "Met"])
        let p50 = percentile(live.parley, 0.5)
        let p95 = percentile(live.parley, 0.95)
        table.add([
            "sharer's keystroke echoed → viewer's cell, p50 / p95", String(format: "%.1f / %.1f ms", p50, p95),
            "p95 ≤ 20 ms", p95 <= 20 ? "yes" : "no",
        ])
        table.add([
            "the same polling of a shell's echo in its own pane (the measurement's floor), p50 / p95",
            String(format: "%.1f / %.1f ms", percentile(live.floor, 0.5), percentile(live.floor, 0.95)), "—", "—",
        ])
        let lateWorst = live.lateJoins.max() ?? .nan
        table.add([
            "a late joiner: `parley join` started → the share's current screen on it, median / worst of "
                + "\(live.lateJoins.count)",
            String(format: "%.2f / %.2f s", percentile(live.lateJoins, 0.5), lateWorst), "≤ 1 s",
            lateWorst <= 1 ? "yes" : "no",
        ])
        table.add([
            "sharer (`parley share`) while its shell is idle",
            String(format: "%.2f %% of a core", live.sharerIdleCPU * 100),
            "≤ 1 %", live.sharerIdleCPU <= 0.01 ? "yes" : "no",
        ])
        table.add([
            "viewer (`parley join`) drawing htop", String(format: "%.2f %% of a core", live.viewerHtopCPU * 100),
            "≤ 3 %",
            live.viewerHtopCPU <= 0.03 ? "yes" : "no",
        ])
        table.add([
            "sharer (`parley share`) while htop runs", String(format: "%.2f %% of a core", live.sharerHtopCPU * 100),
            "—", "—",
        ])
        table.notes = [
            "\(keystrokes) keystrokes, one every 150 ms or more, each sent with `tmux send-keys` into the sharer's pane "
                + "(80x24, bash) and looked for in the viewer's pane (120x40, `parley join`) with `tmux capture-pane` "
                + "every 1 ms; the floor row is the same, typing into and watching one plain bash pane.",
            "A late joiner's time includes starting the process, the terminal setup, joining, binding media and the "
                + "full screen its keyframe request brings; polled every 2 ms.",
            "CPU: the process's every thread from the scheduler (/proc/PID/task/*/schedstat) over \(Int(cpuSeconds)) s; "
                + "htop with -d 10 (a second between refreshes). The relay's CPU is not in these rows.",
        ]
        return table
    }

    static func bytesTable(_ results: [WorkloadResult]) -> BenchTable {
        var table = BenchTable(
            title: "Sharing a terminal: bytes on the wire, against a 320x240 VP8 stream of the same screens",
            columns: [
                "Workload", "Parley share", "Updates", "VP8 320x240 of the same screens", "Share / VP8",
                "The program's raw output (a tmate-style share)", "Goal: ≤ 1/10 of VP8", "Met",
            ])
        for result in results {
            let ratio = Double(result.shareBytes) / Double(max(1, result.vp8Bytes))
            func rate(_ bytes: Int) -> String {
                String(format: "%.1f kbit/s (%d B)", Double(bytes) * 8 / 1_000 / result.seconds, bytes)
            }
            table.add([
                result.name, rate(result.shareBytes), "\(result.updates)", rate(result.vp8Bytes),
                String(format: "%.3f", ratio), rate(result.rawBytes), "≤ 0.1", ratio <= 0.1 ? "yes" : "no",
            ])
        }
        table.notes = [
            "Each workload \(Int(workloadSeconds)) s (seq's 200,000 lines take a fraction of it; its last screen then stays) in an 80x24 terminal (the program's output not a terminal, so "
                + "80x24), shared by the real SharedTerminal and engine in this process to parley serve. Parley: every "
                + "RTP byte the sharer sent (headers included, not IP and UDP's 28 a packet); updates at most 30 a second.",
            "VP8: every screen the share published, drawn 4x10 pixels a cell (Parley's 5x7 bitmap font, grey levels for "
                + "colours), encoded by libvpx at 30 fps (the share's most updates a second) and 200 kbit/s (the 320x240 "
                + "profile's rate), payload bytes only (no RTP headers): the comparison favours VP8.",
            "Raw output: the bytes the program wrote, which a share of the byte stream (tmate, upterm, ttyd) sends to "
                + "every viewer before its own framing.",
        ]
        return table
    }
}
