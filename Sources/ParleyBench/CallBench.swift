// One file, one thing: the call benchmark's plan (which calls, how many rounds) and its measurement loop; the
// processes, captures, tables and reference clients it drives are in the CallBench*.swift files beside it.
import Foundation
import ParleyEngine
import ParleyMedia
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// What a whole call costs (`parley-bench call`, `make bench-call`): a 1:1 Parley call next to 1:1 calls doing the same
/// work on the same machine in the same run (baresip with its picture discarded, baresip painting into X11 windows
/// under Xvfb, and a Chromium tab holding both sides of a WebRTC call), then 4- and 9-party Parley calls.
///
/// Every figure comes from outside the programs: CPU seconds (user + system, all threads) from /proc/PID/stat over
/// the measurement window, peak RSS from /proc/PID/status (VmHWM), bitrates and frame rates on the wire from a dumpcap
/// capture on `lo`. Parley's own counters (`--stats-file`) and baresip's console (`/video_debug`) add frames shown.
public enum CallBench {
    /// How long and how often to measure.
    public struct Settings: Sendable {
        /// The `parley` executable whose `join`, `bot` and `serve` are measured.
        public var parleyPath: String
        /// Measurement window of each 1:1 call, seconds.
        public var pairSeconds: Double
        /// Measurement window of each group call, seconds.
        public var groupSeconds: Double
        /// Rounds of every call; tables show medians.
        public var runs: Int
        /// Group call sizes.
        public var groupSizes: [Int]

        /// Settings: 30 s 1:1 windows, 15 s group windows, one round, 4- and 9-party calls.
        public init(
            parleyPath: String, pairSeconds: Double = 30, groupSeconds: Double = 15, runs: Int = 1,
            groupSizes: [Int] = [4, 9]
        ) {
            self.parleyPath = parleyPath
            self.pairSeconds = pairSeconds
            self.groupSeconds = groupSeconds
            self.runs = runs
            self.groupSizes = groupSizes
        }

        /// Defaults, overridden by `PARLEY_CALL_BENCH_RUNS`, `PARLEY_CALL_BENCH_SECONDS` (1:1 window) and
        /// `PARLEY_CALL_BENCH_GROUP_SECONDS`; throws a message naming a bad value.
        public static func fromEnvironment(parleyPath: String) throws -> Settings {
            var settings = Settings(parleyPath: parleyPath)
            let environment = ProcessInfo.processInfo.environment
            func number(_ name: String, _ range: ClosedRange<Double>) throws -> Double? {
                guard let text = environment[name] else { return nil }
                guard let value = Double(text), range.contains(value) else {
                    throw CallBenchError.unexpected(
                        "\(name)=\(text) is not a number in \(formatted(range.lowerBound, decimals: 0))…"
                            + formatted(range.upperBound, decimals: 0))
                }
                return value
            }
            if let runs = try number("PARLEY_CALL_BENCH_RUNS", 1...9) { settings.runs = Int(runs) }
            if let seconds = try number("PARLEY_CALL_BENCH_SECONDS", 5...600) { settings.pairSeconds = seconds }
            if let seconds = try number("PARLEY_CALL_BENCH_GROUP_SECONDS", 5...600) { settings.groupSeconds = seconds }
            return settings
        }
    }

    /// The 1:1 call settings both clients use.
    static let width = 640, height = 480, fps = 30, videoKbps = 1000
    /// The group call profile (Parley's 320x240 profile: 15 fps, 200 kbit/s).
    static let groupProfile = "320x240"
    /// Seconds between "the call is up" and the start of the window (keyframes, rate control settling).
    static let warmUp = 3.0
    /// The same picture size, rate and bitrate as the other clients.
    static let callArguments = [
        "--profile", "\(width)x\(height)", "--bitrate", "\(videoKbps)", "--fps", "\(fps)",
    ]
    /// `parley join`'s video settings for the equal-work call: the call settings, and the full 640x480 sent,
    /// decoded and drawn (no simulcast: the small layers would make it less work than the others do).
    static let equalWorkArguments = callArguments + ["--no-simulcast"]
    /// baresip's vp8 module always writes VP8 bitstream version 2 (bilinear motion filter, no loop filter: cheaper
    /// to encode and decode, about 1 dB less sharp than Parley's default 0), so the pairs measured against it, the
    /// equal-work and the headless ones, send the same.
    static let baresipBitstreamArguments = ["--vp8-profile", "\(VP8EncoderConfig.lightProfile)"]
    /// What the drawing clients of the equal-work call add: the self view hidden, as baresip and the Chromium page
    /// show none (a self view is a second picture to scale and to send to the terminal every frame).
    static let equalWorkDisplayArguments = ["--hide-self-view"]
    /// Terminal size of Parley's default row: a 1:1 call in a 200x60 pane, each side receiving the simulcast
    /// layer its tile needs.
    static let defaultPaneColumns = 200, defaultPaneRows = 60
    /// Terminal size of the drawing clients.
    static let paneColumns = 120, paneRows = 40
    /// baresip's `video_bitrate`. Debian's baresip 1.0.0 vp8 module hands this number to libvpx's
    /// `rc_target_bitrate`, which is in kbit/s, so 1000 here means 1000 kbit/s on the wire like Parley's
    /// `--bitrate 1000` (its RTP pacer reads the same number as bit/s; it still sends one packet per 4 ms tick).
    static let baresipVideoBitrateSetting = 1000
    /// Opus encoder complexity on both sides: Parley's calls use 5 (`AudioSender.complexity` in ParleyEngine, internal
    /// there; a test in ParleyBenchTests keeps the two equal), and baresip's config is given the same.
    static let opusComplexity = 5

    /// Runs every call `settings.runs` times and returns the tables; `log` gets progress lines.
    public static func run(_ settings: Settings, log: (String) -> Void) throws -> [BenchTable] {
        let tools = try Tools.find(parley: settings.parleyPath)
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Media must outlast set-up, warm-up and the window: baresip's file source pauses a second to rewind.
        // (At least the default's 48 s, so shorter trial runs reuse the same file.)
        let media = try BenchMedia.prepare(videoSeconds: max(48, settings.pairSeconds + warmUp + 15), log: log)

        var pairs = PairRuns()
        var groupRuns: [Int: [GroupResult]] = [:]
        let seconds = Int(settings.pairSeconds)
        for round in 0..<settings.runs {
            // Rotate which call goes first, so slow drift in the machine's load does not favour one kind.
            let kinds = PairKind.allCases
            for kind in kinds[(round % kinds.count)...] + kinds[..<(round % kinds.count)] {
                log("call bench round \(round + 1)/\(settings.runs): \(kind.description) 1:1, \(seconds) s")
                switch kind {
                case .parley:
                    pairs.parley.append(
                        try parleyPair(
                            settings, seconds: settings.pairSeconds, tools: tools, media: media, directory: directory,
                            extraArguments: equalWorkDisplayArguments))
                case .baresip:
                    pairs.baresip.append(try baresipPair(settings, tools: tools, media: media, directory: directory))
                case .baresipX11:
                    pairs.baresipX11.append(
                        try baresipPair(
                            settings, display: .x11Window, tools: tools, media: media, directory: directory))
                case .chromium:
                    pairs.chromium.append(try chromiumPair(settings, tools: tools, media: media, directory: directory))
                }
            }
            if let result = try parleyDefaultPair(settings, tools: tools, media: media, directory: directory) {
                log("call bench round \(round + 1)/\(settings.runs): Parley's default 1:1, \(seconds) s")
                pairs.parleyDefault.append(result)
            }
            log(
                "call bench round \(round + 1)/\(settings.runs): Parley 1:1 headless (parley bot), "
                    + "\(Int(settings.groupSeconds)) s")
            pairs.headless.append(
                try parleyPair(
                    settings, headless: true, seconds: settings.groupSeconds, tools: tools, media: media,
                    directory: directory))
            for size in settings.groupSizes {
                log(
                    "call bench round \(round + 1)/\(settings.runs): Parley \(size)-party, "
                        + "\(Int(settings.groupSeconds)) s")
                groupRuns[size, default: []].append(
                    try group(size: size, settings, tools: tools, directory: directory, log: log))
            }
        }
        let pair = pairTable(settings, pairs, media: media)
        let groups = groupTable(settings, runs: groupRuns)
        let goals = goalTable(settings, pairs, groups: groupRuns)
        log("call bench: VP8 speed, bitstream version and picture quality (300 frames, three times)")
        let speeds = try encoderSpeedTable(media: media)
        return [pair, groups, speeds, goals]
    }

    /// The 1:1 calls of a round, each its own processes in turn.
    enum PairKind: CaseIterable, CustomStringConvertible {
        case parley, baresip, baresipX11, chromium

        var description: String {
            switch self {
            case .parley: "Parley"
            case .baresip: "baresip (display discarded)"
            case .baresipX11: "baresip (X11 windows under Xvfb)"
            case .chromium: "Chromium tab (both sides in one page, under Xvfb)"
            }
        }
    }

    /// Every 1:1 call measured, one entry per round.
    struct PairRuns {
        /// `parley join` at the call settings in tmux: the equal-work row.
        var parley: [PairResult] = []
        var baresip: [PairResult] = []
        var baresipX11: [PairResult] = []
        var chromium: [BrowserResult] = []
        var headless: [PairResult] = []
        /// `parley join` at the call settings with simulcast (its default) in 200x60 panes.
        var parleyDefault: [PairResult] = []
    }

    /// The "Parley default" row: the same 1:1 call with simulcast on, as `parley join` sends by default, drawn in
    /// 200x60 panes, where each side's tile needs (and the relay forwards) only the 160x120 layer, and each sender
    /// encodes only that layer. The pair table prints its rows and `defaultGoalRows` its goals (≤ 0.5x the X11
    /// baresip, ≤ 0.25x the Chromium tab, per side, tmux and Xvfb counted).
    static func parleyDefaultPair(_ settings: Settings, tools: Tools, media: BenchMedia, directory: String) throws
        -> PairResult?
    {
        try parleyPair(
            settings, profileArguments: callArguments, seconds: settings.pairSeconds, tools: tools,
            media: media, directory: directory, pane: (defaultPaneColumns, defaultPaneRows))
    }

    // MARK: - Programs and media

    struct Tools {
        var parley: String
        var baresip: String
        var tmux: String
        /// Xvfb and Chromium: nil when looked up without the windowed clients (`find(parley:windowed: false)`).
        var xvfb: String?
        var chromium: String?
        /// env(1), to start a program with DISPLAY and HOME set (it execs, so the pid stays the program's).
        var env: String
        var dumpcap: String?
        var dumpcapProblem: String?

        /// Finds every program the call benchmark runs, throwing a message naming the package of the first one
        /// missing; `windowed: false` leaves out Xvfb, Chromium and baresip's x11 module (for benchmarks that run
        /// only Parley and baresip without windows).
        static func find(parley: String, windowed: Bool = true) throws -> Tools {
            guard FileManager.default.isExecutableFile(atPath: parley) else {
                throw CallBenchError.unexpected("the parley executable \(parley) is missing; run `make build`")
            }
            var tools = Tools(
                parley: parley, baresip: try findTool("baresip", package: "baresip-core"),
                tmux: try findTool("tmux", package: "tmux"),
                xvfb: windowed ? try findTool("Xvfb", package: "xvfb") : nil,
                chromium: windowed ? try findTool("chromium", package: "chromium") : nil,
                env: try findTool("env", package: "coreutils"))
            let packages = ["avformat": "baresip-ffmpeg", "x11": "baresip-x11"]
            let modules =
                ["avformat", "vp8", "opus", "fakevideo", "aufile", "aubridge", "cons"]
                + (windowed ? ["x11"] : [])
            for module in modules {
                guard FileManager.default.fileExists(atPath: "\(baresipModules)/\(module).so") else {
                    throw CallBenchError.missingTool(
                        "baresip module \(module)", package: packages[module] ?? "baresip-core")
                }
            }
            do {
                tools.dumpcap = try findTool("dumpcap", package: "tshark")
            } catch {
                tools.dumpcapProblem = "\(error)"
            }
            return tools
        }
    }

    static let baresipModules = "/usr/lib/baresip/modules"

    /// The files both clients send: the synthetic camera (moving pattern, text, sensor noise) as raw Y4M, and the
    /// synthetic voice as WAV. Kept between runs in the temporary folder (they are deterministic).
    struct BenchMedia {
        var video: String
        /// A 10 s voice clip for Parley, which loops WAV files.
        var loopedVoice: String
        /// The same voice, long enough for the whole call, for baresip's aufile, which stops at the end of a file.
        var longVoice: String
        var videoFrames: Int
        /// The camera file kept in memory while the benchmark runs (see `ResidentFile`).
        var residentVideo: ResidentFile? = nil

        static func prepare(
            videoSeconds: Double, width: Int = width, height: Int = height, log: (String) -> Void
        ) throws -> BenchMedia {
            let folder = NSTemporaryDirectory() + "parley-call-bench-media"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let frames = Int(videoSeconds.rounded(.up)) * fps
            let video = "\(folder)/camera-\(width)x\(height)-\(fps)fps-\(frames).y4m"
            let header = Y4MHeader(width: width, height: height, frameRate: (fps, 1))
            let videoSize = header.length + frames * (6 + header.frameDataSize)
            if fileSize(video) != videoSize {
                log("call bench: writing \(frames) frames of the synthetic camera to \(video) (once)")
                // One camera file of a size is kept: drop those of other lengths.
                for other in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                where other.hasPrefix("camera-\(width)x\(height)-") {
                    unlink("\(folder)/\(other)")
                }
                let camera = SyntheticCamera(
                    name: "Bench", participant: 1, width: width, height: height, framesPerSecond: fps)
                let temporary = video + ".part"
                let writer = try Y4MFileWriter(path: temporary, frameRate: (fps, 1))
                for _ in 0..<frames { try writer.write(camera.nextFrame()) }
                guard rename(temporary, video) == 0 else {
                    throw CallBenchError.unexpected("cannot rename \(temporary): \(String(cString: strerror(errno)))")
                }
            }
            func voice(seconds: Int) throws -> String {
                let path = "\(folder)/voice-48k-mono-\(seconds)s.wav"
                let samples = seconds * 48_000
                if fileSize(path) != 44 + 2 * samples {
                    let source = SyntheticVoice(participant: 1)
                    var pcm: [Int16] = []
                    pcm.reserveCapacity(samples)
                    while pcm.count < samples { pcm += source.nextFrame(samplesPerChannel: 960).samples }
                    let bytes = WAVAudio(sampleRate: 48_000, channels: 1, samples: Array(pcm.prefix(samples))).encoded()
                    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
                        throw CallBenchError.unexpected("cannot write \(path)")
                    }
                }
                return path
            }
            return BenchMedia(
                video: video, loopedVoice: try voice(seconds: 10),
                longVoice: try voice(seconds: Int(videoSeconds.rounded(.up)) + 10), videoFrames: frames,
                residentVideo: ResidentFile(path: video))
        }

        private static func fileSize(_ path: String) -> Int? {
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        }
    }

    // MARK: - Measurements

    /// CPU share and peak memory of one process over the window.
    struct ProcessFigures {
        /// Percent of one core (100 = one core busy all the time).
        var cpuPercent: Double
        /// Peak resident set size, MiB.
        var peakMiB: Double
    }

    /// One client of a call.
    struct ClientResult {
        var process: ProcessFigures
        var wire: WireTraffic.Figures?
        /// Frames decoded (Parley) or handed to the display (baresip) per second.
        var shownPerSecond: Double?
        /// Screens drawn per second (Parley's terminal).
        var redrawsPerSecond: Double?
        /// The tmux server the client draws into.
        var terminal: ProcessFigures?
        /// The X server the client paints its window into (baresip x11: one Xvfb each).
        var display: ProcessFigures?
    }

    /// One 1:1 call.
    struct PairResult {
        var clients: [ClientResult]
        var relay: ProcessFigures?
        var captureProblem: String?

        /// Each client's figures with what paints its picture: its terminal (tmux) or its X server.
        var sides: [SideFigures] {
            clients.map { client in
                SideFigures(
                    cpuPercent: client.process.cpuPercent,
                    withDisplayPercent: client.process.cpuPercent + (client.terminal?.cpuPercent ?? 0)
                        + (client.display?.cpuPercent ?? 0),
                    peakMiB: client.process.peakMiB, wire: client.wire, shownPerSecond: client.shownPerSecond,
                    redrawsPerSecond: client.redrawsPerSecond)
            }
        }
    }

    /// One side of a 1:1 call as the tables compare it, whatever program made it.
    struct SideFigures {
        /// The client's own processes, % of one core.
        var cpuPercent: Double
        /// The same plus the program that paints its picture (tmux server, Xvfb), % of one core.
        var withDisplayPercent: Double
        var peakMiB: Double
        var wire: WireTraffic.Figures?
        var shownPerSecond: Double?
        var redrawsPerSecond: Double?
    }

    /// One group call.
    struct GroupResult {
        var size: Int
        var drawing: ClientResult
        var headless: [ClientResult]
        var relay: ProcessFigures
        /// Median over remote tiles of the frames per second the drawing client decoded.
        var decodedPerTile: Double
        var tilesDecoding: Int
    }

    /// CPU seconds of some processes at the start of a window.
    struct CPUWindow {
        let start: [pid_t: Double]
        let startTime: Double

        init(_ pids: [pid_t]) {
            var start: [pid_t: Double] = [:]
            for pid in pids { start[pid] = ProcessProbe.cpuSeconds(pid) ?? 0 }
            self.start = start
            startTime = WallClock.seconds
        }

        /// Figures for every process since the start.
        func finish() -> [pid_t: ProcessFigures] {
            let elapsed = max(0.001, WallClock.seconds - startTime)
            var result: [pid_t: ProcessFigures] = [:]
            for (pid, before) in start {
                let after = ProcessProbe.cpuSeconds(pid) ?? before
                result[pid] = ProcessFigures(
                    cpuPercent: 100 * (after - before) / elapsed,
                    peakMiB: Double(ProcessProbe.peakResidentKiB(pid) ?? 0) / 1024)
            }
            return result
        }
    }

    /// Totals read from a Parley `--stats-file`.
    struct StatsSnapshot {
        var time: Double
        var framesDecoded: [Int: Int]
        var screenDraws: Int?

        init?(path: String) {
            guard let report = try? CallStatisticsFile(path: path).read() else { return nil }
            time = report.time
            framesDecoded = Dictionary(report.peers.map { (Int($0.id), $0.framesDecoded) }) { $1 }
            screenDraws = report.extra["screenDraws"]
        }

        /// Decoded frames per second of each peer between `earlier` and this snapshot.
        func decodedPerSecond(since earlier: StatsSnapshot) -> [Double] {
            let seconds = max(0.001, time - earlier.time)
            return framesDecoded.map { id, total in Double(total - (earlier.framesDecoded[id] ?? 0)) / seconds }
        }

        /// Screens drawn per second between `earlier` and this snapshot.
        func drawsPerSecond(since earlier: StatsSnapshot) -> Double? {
            guard let now = screenDraws, let then = earlier.screenDraws else { return nil }
            return Double(now - then) / max(0.001, time - earlier.time)
        }
    }

    // MARK: - Parley 1:1

    /// Starts `parley serve` on free ports; returns it with its signaling and media ports.
    static func startRelay(_ tools: Tools, directory: String) throws -> (BackgroundProcess, UInt16, UInt16) {
        try startRelay(parley: tools.parley, directory: directory)
    }

    /// Starts `parley serve` from `parley` on free ports with `extraArguments`; with its signaling and media ports.
    static func startRelay(parley: String, directory: String, extraArguments: [String] = []) throws
        -> (BackgroundProcess, UInt16, UInt16)
    {
        let relay = try spawnRelay(parley: parley, directory: directory, extraArguments: extraArguments)
        guard relay.waitForOutput(seconds: 15, { $0.contains("media udp ") }) else {
            relay.stop()
            throw CallBenchError.timedOut("parley serve did not start: \(relay.output)")
        }
        return try relayPorts(relay)
    }

    /// `startRelay` for async code: waits for the relay's first line suspended, not blocking a thread.
    static func launchRelay(parley: String, directory: String, extraArguments: [String] = []) async throws
        -> (BackgroundProcess, UInt16, UInt16)
    {
        let relay = try spawnRelay(parley: parley, directory: directory, extraArguments: extraArguments)
        do {
            try await relay.output(containing: "media udp ", within: .seconds(15))
        } catch {
            relay.signal(SIGKILL)
            throw CallBenchError.timedOut("parley serve did not start: \(error)")
        }
        return try relayPorts(relay)
    }

    private static func spawnRelay(parley: String, directory: String, extraArguments: [String]) throws
        -> BackgroundProcess
    {
        try BackgroundProcess(
            parley,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning",
                "--state-dir", directory + "/relay-state",
            ] + extraArguments,
            outputPath: directory + "/relay-\(UUID().uuidString.prefix(8)).log")
    }

    /// The ports in the relay's first line, "parley relay listening on 127.0.0.1:PORT (signaling wss, media udp
    /// PORT)"; stops the relay and throws when they are not there.
    private static func relayPorts(_ relay: BackgroundProcess) throws -> (BackgroundProcess, UInt16, UInt16) {
        let text = relay.output
        guard let listening = text.range(of: "listening on 127.0.0.1:"), let media = text.range(of: "media udp "),
            let signaling = UInt16(text[listening.upperBound...].prefix { $0.isNumber }),
            let mediaPort = UInt16(text[media.upperBound...].prefix { $0.isNumber })
        else {
            relay.signal(SIGKILL)
            throw CallBenchError.unexpected("cannot read the relay's ports from: \(text)")
        }
        return (relay, signaling, mediaPort)
    }

    /// A 1:1 Parley call: two `parley join`s drawing into tmux panes, or (`headless`) two `parley bot`s that decode
    /// everything and draw nothing; measured over `seconds`.
    static func parleyPair(
        _ settings: Settings, headless: Bool = false,
        profileArguments: [String] = equalWorkArguments + baresipBitstreamArguments, seconds: Double, tools: Tools,
        media: BenchMedia, directory: String, extraArguments: [String] = [],
        pane: (columns: Int, rows: Int) = (paneColumns, paneRows)
    ) throws -> PairResult {
        let (relay, port, mediaPort) = try startRelay(tools, directory: directory)
        defer { relay.stop() }
        var capture: PacketCapture?
        var captureProblem = tools.dumpcapProblem
        if let dumpcap = tools.dumpcap {
            do {
                capture = try PacketCapture(
                    dumpcap: dumpcap, filter: "udp port \(mediaPort)", path: directory + "/parley.pcap",
                    directory: directory)
            } catch {
                captureProblem = "\(error)"
            }
        }
        var panes: [BenchPane] = []
        defer { panes.forEach { $0.close() } }
        var bots: [BackgroundProcess] = []
        defer { bots.forEach { $0.stop() } }
        var statsPaths: [String] = []
        for name in ["alice", "bob"] {
            let stats = "\(directory)/parley-\(name).json"
            statsPaths.append(stats)
            let call =
                [
                    "callbench", "--server", "127.0.0.1:\(port)", "--name", name,
                ] + profileArguments + [
                    "--video", media.video, "--audio", media.loopedVoice,
                    "--log-level", "warning", "--stats-file", stats, "--known-relays",
                    "\(directory)/known_relays-\(name)",
                ] + extraArguments
            if headless {
                bots.append(
                    try BackgroundProcess(
                        tools.parley, ["bot"] + call, outputPath: "\(directory)/parley-\(name).log"))
            } else {
                let command = ([tools.parley, "join"] + call + ["--log", "\(directory)/parley-\(name).log"])
                    .map(ResultsPage.shellQuoted).joined(separator: " ")
                panes.append(
                    try BenchPane(
                        command: command, columns: pane.columns, rows: pane.rows, tmux: tools.tmux, directory: directory
                    ))
            }
        }
        try waitUntil(seconds: 30, "both Parley clients decoding each other's video") {
            statsPaths.allSatisfy { StatsSnapshot(path: $0)?.framesDecoded.values.contains { $0 > 0 } == true }
        }
        Thread.sleep(forTimeInterval: warmUp)

        let clientPIDs = headless ? bots.map(\.pid) : panes.map(\.panePID)
        let ports = clientPIDs.map { ProcessProbe.udpPorts($0) }
        let before = statsPaths.map { StatsSnapshot(path: $0) }
        let window = CPUWindow(clientPIDs + panes.map(\.serverPID) + [relay.pid])
        let start = WallClock.seconds
        Thread.sleep(forTimeInterval: seconds)
        let end = WallClock.seconds
        let figures = window.finish()
        // Let the next statistics write land so the counters cover the window.
        Thread.sleep(forTimeInterval: 1.1)
        let after = statsPaths.map { StatsSnapshot(path: $0) }

        let traffic = WireTraffic.stopping(capture, window: start...end, problem: &captureProblem)
        var clients: [ClientResult] = []
        for (index, pid) in clientPIDs.enumerated() {
            var shown: Double?
            var redraws: Double?
            if let earlier = before[index], let later = after[index] {
                shown = later.decodedPerSecond(since: earlier).first
                redraws = later.drawsPerSecond(since: earlier)
            }
            clients.append(
                ClientResult(
                    process: figures[pid] ?? ProcessFigures(cpuPercent: .nan, peakMiB: .nan),
                    wire: traffic?.figures(forPorts: ports[index]), shownPerSecond: shown, redrawsPerSecond: redraws,
                    terminal: headless ? nil : figures[panes[index].serverPID]))
        }
        return PairResult(clients: clients, relay: figures[relay.pid], captureProblem: captureProblem)
    }

    // MARK: - Group calls

    static let groupNames = ["ana", "bruno", "chen", "dara", "emeka", "fumiko", "gus", "hana", "ines", "jun", "kai"]

    /// One group call measured; `log` hears why, when the drawing client's statistics show fewer tiles decoding
    /// than there are others (the table's tile count is the worst run's).
    static func group(
        size: Int, _ settings: Settings, tools: Tools, directory: String, log: (String) -> Void = { _ in }
    ) throws -> GroupResult {
        let (relay, port, _) = try startRelay(tools, directory: directory)
        defer { relay.stop() }
        let server = "127.0.0.1:\(port)"
        let room = "group\(size)"
        let drawingStats = "\(directory)/group-\(size)-\(groupNames[0]).json"
        let command = [
            tools.parley, "join", room, "--server", server, "--name", groupNames[0], "--profile", groupProfile,
            "--log", "\(directory)/group-\(size)-\(groupNames[0]).log", "--log-level", "warning",
            "--stats-file", drawingStats,
        ].map(ResultsPage.shellQuoted).joined(separator: " ")
        let pane = try BenchPane(
            command: command, columns: paneColumns, rows: paneRows, tmux: tools.tmux, directory: directory)
        defer { pane.close() }
        var bots: [BackgroundProcess] = []
        defer { bots.forEach { $0.stop() } }
        for index in 1..<size {
            let name = groupNames[index % groupNames.count] + (index >= groupNames.count ? "\(index)" : "")
            bots.append(
                try BackgroundProcess(
                    tools.parley,
                    [
                        "bot", room, "--server", server, "--name", name, "--profile", groupProfile, "--log-level",
                        "warning",
                        "--stats-file", "\(directory)/group-\(size)-\(name).json",
                    ],
                    outputPath: "\(directory)/group-\(size)-\(name).log"))
        }
        try waitUntil(seconds: 40, "the drawing client decoding all \(size - 1) others") {
            (StatsSnapshot(path: drawingStats)?.framesDecoded.values.filter { $0 > 0 }.count ?? 0) >= size - 1
        }
        Thread.sleep(forTimeInterval: warmUp)

        let before = StatsSnapshot(path: drawingStats)
        let window = CPUWindow([pane.panePID, pane.serverPID, relay.pid] + bots.map(\.pid))
        Thread.sleep(forTimeInterval: settings.groupSeconds)
        let figures = window.finish()
        Thread.sleep(forTimeInterval: 1.1)
        let after = StatsSnapshot(path: drawingStats)

        var decoded: [Double] = []
        var redraws: Double?
        if let before, let after {
            decoded = after.decodedPerSecond(since: before)
            redraws = after.drawsPerSecond(since: before)
        }
        if decoded.filter({ $0 > 0 }).count < size - 1 {
            var why = "its statistics could not be read at an end of the window (they can now)"
            if let before, let after {
                why =
                    "decoded frames per second \(decoded.map { formatted($0, decimals: 1) }), its statistics' clock "
                    + "\(formatted(before.time, decimals: 1)) → \(formatted(after.time, decimals: 1))"
            } else {
                do { _ = try CallStatisticsFile(path: drawingStats).read() } catch { why = "its statistics: \(error)" }
            }
            log("call bench: \(size)-party drawing client shows fewer than \(size - 1) tiles decoding: \(why)")
        }
        let missing = ProcessFigures(cpuPercent: .nan, peakMiB: .nan)
        return GroupResult(
            size: size,
            drawing: ClientResult(
                process: figures[pane.panePID] ?? missing, shownPerSecond: Sample.median(decoded),
                redrawsPerSecond: redraws, terminal: figures[pane.serverPID]),
            headless: bots.map { ClientResult(process: figures[$0.pid] ?? missing) },
            relay: figures[relay.pid] ?? missing, decodedPerTile: Sample.median(decoded) ?? 0,
            tilesDecoding: decoded.filter { $0 > 0 }.count)
    }

    // MARK: - Helpers

    static func waitUntil(seconds: Double, _ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw CallBenchError.timedOut("\(what) (waited \(Int(seconds)) s)") }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    static func mean(_ values: [Double]) -> Double? {
        values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }

    /// The median of some runs' values, or "n/a".
    static func cell(_ values: [Double?], decimals: Int = 1) -> String {
        guard let value = Sample.median(values) else { return "n/a" }
        return formatted(value, decimals: decimals)
    }

    static func fileBytes(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }

    static func fileSeconds(_ path: String) -> Int { (fileBytes(path) - 44) / 96_000 }

    static func makeTemporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "parley-call-bench-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CallBenchError.unexpected("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
