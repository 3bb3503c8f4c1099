import Foundation
import ParleyProcesses
import ParleyMedia

#if canImport(Glibc)
import Glibc
#endif

/// What a whole call costs (`parley bench call`, `make bench-call`): a 1:1 Parley call next to a 1:1 baresip call doing
/// the same work on the same machine in the same run, then 4- and 9-party Parley calls through the relay.
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
        public init(parleyPath: String, pairSeconds: Double = 30, groupSeconds: Double = 15, runs: Int = 1,
                    groupSizes: [Int] = [4, 9]) {
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
    /// Terminal size of the drawing clients.
    static let paneColumns = 120, paneRows = 40
    /// baresip's `video_bitrate`. Debian's baresip 1.0.0 vp8 module hands this number to libvpx's
    /// `rc_target_bitrate`, which is in kbit/s, so 1000 here means 1000 kbit/s on the wire like Parley's
    /// `--bitrate 1000` (its RTP pacer reads the same number as bit/s; it still sends one packet per 4 ms tick).
    static let baresipVideoBitrateSetting = 1000

    /// Runs every call `settings.runs` times and returns the tables; `log` gets progress lines.
    public static func run(_ settings: Settings, log: (String) -> Void) throws -> [BenchTable] {
        let tools = try Tools.find(parley: settings.parleyPath)
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Media must outlast set-up, warm-up and the window: baresip's file source pauses a second to rewind.
        // (At least the default's 48 s, so shorter trial runs reuse the same file.)
        let media = try BenchMedia.prepare(videoSeconds: max(48, settings.pairSeconds + warmUp + 15), log: log)

        var parleyRuns: [PairResult] = []
        var baresipRuns: [PairResult] = []
        var headlessRuns: [PairResult] = []
        var groupRuns: [Int: [GroupResult]] = [:]
        for round in 0..<settings.runs {
            // Alternate which client goes first, so slow drift in the machine's load does not favour one side.
            let order = round % 2 == 0 ? [true, false] : [false, true]
            for parley in order {
                if parley {
                    log("call bench round \(round + 1)/\(settings.runs): Parley 1:1, \(Int(settings.pairSeconds)) s")
                    parleyRuns.append(try parleyPair(
                        settings, seconds: settings.pairSeconds, tools: tools, media: media, directory: directory))
                } else {
                    log("call bench round \(round + 1)/\(settings.runs): baresip 1:1, \(Int(settings.pairSeconds)) s")
                    baresipRuns.append(try baresipPair(settings, tools: tools, media: media, directory: directory))
                }
            }
            log("call bench round \(round + 1)/\(settings.runs): Parley 1:1 headless (parley bot), "
                + "\(Int(settings.groupSeconds)) s")
            headlessRuns.append(try parleyPair(
                settings, headless: true, seconds: settings.groupSeconds, tools: tools, media: media,
                directory: directory))
            for size in settings.groupSizes {
                log("call bench round \(round + 1)/\(settings.runs): Parley \(size)-party, "
                    + "\(Int(settings.groupSeconds)) s")
                groupRuns[size, default: []].append(
                    try group(size: size, settings, tools: tools, directory: directory))
            }
        }
        let pair = pairTable(
            settings, parley: parleyRuns, headless: headlessRuns, baresip: baresipRuns, media: media)
        let groups = groupTable(settings, runs: groupRuns)
        let goals = goalTable(settings, parley: parleyRuns, baresip: baresipRuns, groups: groupRuns)
        log("call bench: VP8 speed and picture quality (300 frames, twice)")
        let speeds = try encoderSpeedTable(media: media)
        return [pair, groups, speeds, goals]
    }

    // MARK: - Programs and media

    struct Tools {
        var parley: String
        var baresip: String
        var tmux: String
        var dumpcap: String?
        var dumpcapProblem: String?

        static func find(parley: String) throws -> Tools {
            guard FileManager.default.isExecutableFile(atPath: parley) else {
                throw CallBenchError.unexpected("the parley executable \(parley) is missing; run `make build`")
            }
            var tools = Tools(
                parley: parley, baresip: try findTool("baresip", package: "baresip-core"),
                tmux: try findTool("tmux", package: "tmux"))
            for module in ["avformat", "vp8", "opus", "fakevideo", "aufile", "aubridge", "cons"] {
                guard FileManager.default.fileExists(atPath: "\(baresipModules)/\(module).so") else {
                    let package = module == "avformat" ? "baresip-ffmpeg" : "baresip-core"
                    throw CallBenchError.missingTool("baresip module \(module)", package: package)
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

        static func prepare(videoSeconds: Double, log: (String) -> Void) throws -> BenchMedia {
            let folder = NSTemporaryDirectory() + "parley-call-bench-media"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let frames = Int(videoSeconds.rounded(.up)) * fps
            let video = "\(folder)/camera-\(width)x\(height)-\(fps)fps-\(frames).y4m"
            let header = Y4MHeader(width: width, height: height, frameRate: (fps, 1))
            let videoSize = header.length + frames * (6 + header.frameDataSize)
            if fileSize(video) != videoSize {
                log("call bench: writing \(frames) frames of the synthetic camera to \(video) (once)")
                // Only one camera file is kept: drop those of other lengths.
                for other in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                where other.hasPrefix("camera-") {
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
                longVoice: try voice(seconds: Int(videoSeconds.rounded(.up)) + 10), videoFrames: frames)
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
    }

    /// One 1:1 call.
    struct PairResult {
        var clients: [ClientResult]
        var relay: ProcessFigures?
        var captureProblem: String?
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
            startTime = wallClock()
        }

        /// Figures for every process since the start.
        func finish() -> [pid_t: ProcessFigures] {
            let elapsed = max(0.001, wallClock() - startTime)
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
            guard let data = FileManager.default.contents(atPath: path),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let time = object["time"] as? Double, let peers = object["peers"] as? [[String: Any]]
            else { return nil }
            self.time = time
            var frames: [Int: Int] = [:]
            for peer in peers {
                if let id = peer["id"] as? Int, let decoded = peer["framesDecoded"] as? Int { frames[id] = decoded }
            }
            framesDecoded = frames
            screenDraws = object["screenDraws"] as? Int
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
        let relay = try BackgroundProcess(
            tools.parley, ["serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning",
                           "--state-dir", directory + "/relay-state"],
            outputPath: directory + "/relay-\(UUID().uuidString.prefix(8)).log")
        guard relay.waitForOutput(seconds: 15, { $0.contains("media udp ") }) else {
            relay.stop()
            throw CallBenchError.timedOut("parley serve did not start: \(relay.output)")
        }
        // "parley relay listening on 127.0.0.1:PORT (signaling wss, media udp PORT)"
        let text = relay.output
        guard let listening = text.range(of: "listening on 127.0.0.1:"), let media = text.range(of: "media udp "),
              let signaling = UInt16(text[listening.upperBound...].prefix { $0.isNumber }),
              let mediaPort = UInt16(text[media.upperBound...].prefix { $0.isNumber })
        else { throw CallBenchError.unexpected("cannot read the relay's ports from: \(text)") }
        return (relay, signaling, mediaPort)
    }

    /// A 1:1 Parley call: two `parley join`s drawing into tmux panes, or (`headless`) two `parley bot`s that decode
    /// everything and draw nothing; measured over `seconds`.
    static func parleyPair(_ settings: Settings, headless: Bool = false, seconds: Double, tools: Tools,
                           media: BenchMedia, directory: String, extraArguments: [String] = []) throws -> PairResult {
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
            let call = [
                "callbench", "--server", "127.0.0.1:\(port)", "--name", name, "--profile", "\(width)x\(height)",
                "--bitrate", "\(videoKbps)", "--fps", "\(fps)", "--video", media.video, "--audio", media.loopedVoice,
                "--log-level", "warning", "--stats-file", stats, "--known-relays", "\(directory)/known_relays-\(name)",
            ] + extraArguments
            if headless {
                bots.append(try BackgroundProcess(
                    tools.parley, ["bot"] + call, outputPath: "\(directory)/parley-\(name).log"))
            } else {
                let command = ([tools.parley, "join"] + call + ["--log", "\(directory)/parley-\(name).log"])
                    .map(shellQuoted).joined(separator: " ")
                panes.append(try BenchPane(
                    command: command, columns: paneColumns, rows: paneRows, tmux: tools.tmux, directory: directory))
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
        let start = wallClock()
        Thread.sleep(forTimeInterval: seconds)
        let end = wallClock()
        let figures = window.finish()
        // Let the next statistics write land so the counters cover the window.
        Thread.sleep(forTimeInterval: 1.1)
        let after = statsPaths.map { StatsSnapshot(path: $0) }

        var traffic: WireTraffic?
        if let capture {
            do {
                traffic = WireTraffic(try capture.stop(), window: start...end)
            } catch {
                captureProblem = "\(error)"
            }
        }
        var clients: [ClientResult] = []
        for (index, pid) in clientPIDs.enumerated() {
            var shown: Double?
            var redraws: Double?
            if let earlier = before[index], let later = after[index] {
                shown = later.decodedPerSecond(since: earlier).first
                redraws = later.drawsPerSecond(since: earlier)
            }
            clients.append(ClientResult(
                process: figures[pid] ?? ProcessFigures(cpuPercent: .nan, peakMiB: .nan),
                wire: traffic?.figures(forPorts: ports[index]), shownPerSecond: shown, redrawsPerSecond: redraws,
                terminal: headless ? nil : figures[panes[index].serverPID]))
        }
        return PairResult(clients: clients, relay: figures[relay.pid], captureProblem: captureProblem)
    }

    // MARK: - baresip 1:1

    /// A baresip configuration doing what Parley's call does: the same Y4M and WAV files as sources, VP8 at
    /// 640x480@30 and Opus 32 kbit/s (mono, VOIP, in-band FEC, 10 % loss, its default complexity 10) over RTP on
    /// 127.0.0.1, the picture decoded and handed to a display that discards it, received audio decoded into a
    /// bridge nobody listens to. A console on UDP answers `/video_debug`.
    static func baresipConfig(sipPort: UInt16, consolePort: UInt16, rtpPorts: ClosedRange<Int>, media: BenchMedia)
        -> String
    {
        """
        poll_method\t\tepoll
        sip_listen\t\t127.0.0.1:\(sipPort)
        net_interface\t\t127.0.0.1
        call_local_timeout\t120
        call_max_calls\t\t4
        audio_player\t\taubridge,nil
        audio_source\t\taufile,\(media.longVoice)
        audio_alert\t\taubridge,nil
        ausrc_srate\t\t48000
        auplay_srate\t\t48000
        ausrc_channels\t\t1
        auplay_channels\t\t1
        audio_level\t\tno
        video_source\t\tavformat,\(media.video)
        video_display\t\tfakevideo,nil
        video_size\t\t\(width)x\(height)
        video_bitrate\t\t\(baresipVideoBitrateSetting)
        video_fps\t\t\(fps).00
        video_fullscreen\tno
        videnc_format\t\tyuv420p
        rtp_ports\t\t\(rtpPorts.lowerBound)-\(rtpPorts.upperBound)
        rtcp_mux\t\tyes
        jitter_buffer_delay\t5-10
        rtp_stats\t\tno
        statmode_default\toff
        module_path\t\t\(baresipModules)
        module\t\t\tcons.so
        module\t\t\topus.so
        module\t\t\tvp8.so
        module\t\t\tavformat.so
        module\t\t\tfakevideo.so
        module\t\t\taufile.so
        module\t\t\taubridge.so
        module_tmp\t\taccount.so
        module_app\t\tmenu.so
        cons_listen\t\t127.0.0.1:\(consolePort)
        opus_bitrate\t\t32000
        opus_stereo\t\tno
        opus_sprop_stereo\tno
        opus_inbandfec\t\tyes
        opus_packet_loss\t10
        opus_application\tvoip
        opus_complexity\t\t10

        """
    }

    static func baresipPair(_ settings: Settings, tools: Tools, media: BenchMedia, directory: String) throws
        -> PairResult
    {
        let ports = freePorts(4)
        let (sipA, sipB, consoleA, consoleB) = (ports[0], ports[1], ports[2], ports[3])
        var base = 20_000
        for _ in 0..<50 {
            let candidate = 20_000 + 40 * Int.random(in: 0..<250)
            if udpPortsFree(from: UInt16(candidate), count: 40) {
                base = candidate
                break
            }
        }
        var children: [BackgroundProcess] = []
        defer { children.forEach { $0.stop() } }
        var capture: PacketCapture?
        var captureProblem = tools.dumpcapProblem
        if let dumpcap = tools.dumpcap {
            do {
                capture = try PacketCapture(
                    dumpcap: dumpcap, filter: "udp portrange \(base)-\(base + 39)",
                    path: directory + "/baresip.pcap", directory: directory)
            } catch {
                captureProblem = "\(error)"
            }
        }
        var folders: [String] = []
        for (index, (name, sip, console)) in [("alice", sipA, consoleA), ("bob", sipB, consoleB)].enumerated() {
            let folder = "\(directory)/baresip-\(name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let config = baresipConfig(
                sipPort: sip, consolePort: console, rtpPorts: (base + 20 * index)...(base + 20 * index + 19),
                media: media)
            let answer = name == "bob" ? ";answermode=auto" : ""
            let account = "<sip:\(name)@127.0.0.1:\(sip)>;regint=0\(answer);audio_codecs=opus;video_codecs=vp8\n"
            guard FileManager.default.createFile(atPath: folder + "/config", contents: Data(config.utf8)),
                  FileManager.default.createFile(atPath: folder + "/accounts", contents: Data(account.utf8))
            else { throw CallBenchError.unexpected("cannot write baresip's configuration in \(folder)") }
            folders.append(folder)
        }
        let bob = try BackgroundProcess(tools.baresip, ["-f", folders[1]], outputPath: directory + "/baresip-bob.log")
        children.append(bob)
        guard bob.waitForOutput(seconds: 15, { $0.contains("baresip is ready") }) else {
            throw CallBenchError.timedOut("baresip (bob) did not start: \(bob.output.suffix(600))")
        }
        let alice = try BackgroundProcess(
            tools.baresip, ["-f", folders[0], "-e", "/dial sip:bob@127.0.0.1:\(sipB)"],
            outputPath: directory + "/baresip-alice.log")
        children.append(alice)
        try waitUntil(seconds: 30, "both baresip clients receiving video") {
            children.allSatisfy { $0.output.contains("video: receiving with resolution") }
        }
        Thread.sleep(forTimeInterval: warmUp)

        let clients = [alice, bob]
        let consoles = [consoleA, consoleB]
        let udp = clients.map { ProcessProbe.udpPorts($0.pid) }
        let shownBefore = consoles.map { displayedFrames(console: $0) }
        let window = CPUWindow(clients.map(\.pid))
        let start = wallClock()
        Thread.sleep(forTimeInterval: settings.pairSeconds)
        let end = wallClock()
        let figures = window.finish()
        let shownAfter = consoles.map { displayedFrames(console: $0) }

        var traffic: WireTraffic?
        if let capture {
            do {
                traffic = WireTraffic(try capture.stop(), window: start...end)
            } catch {
                captureProblem = "\(error)"
            }
        }
        var results: [ClientResult] = []
        for (index, client) in clients.enumerated() {
            var shown: Double?
            if let before = shownBefore[index], let after = shownAfter[index] {
                shown = Double(after.frames - before.frames) / max(0.001, after.time - before.time)
            }
            results.append(ClientResult(
                process: figures[client.pid] ?? ProcessFigures(cpuPercent: .nan, peakMiB: .nan),
                wire: traffic?.figures(forPorts: udp[index]), shownPerSecond: shown))
        }
        return PairResult(clients: results, relay: nil, captureProblem: captureProblem)
    }

    /// Frames baresip has handed to its display so far ("vidisp: fakevideo 640 x 480 frames=N" in `/video_debug`).
    static func displayedFrames(console: UInt16) -> (frames: Int, time: Double)? {
        let time = wallClock()
        let answer = baresipConsole(port: console, command: "/video_debug")
        guard let line = answer.split(separator: "\n").first(where: { $0.contains("vidisp:") }),
              let range = line.range(of: "frames="), let frames = Int(line[range.upperBound...].prefix { $0.isNumber })
        else { return nil }
        return (frames, time)
    }

    // MARK: - Group calls

    static let groupNames = ["ana", "bruno", "chen", "dara", "emeka", "fumiko", "gus", "hana", "ines", "jun", "kai"]

    static func group(size: Int, _ settings: Settings, tools: Tools, directory: String) throws -> GroupResult {
        let (relay, port, _) = try startRelay(tools, directory: directory)
        defer { relay.stop() }
        let server = "127.0.0.1:\(port)"
        let room = "group\(size)"
        let drawingStats = "\(directory)/group-\(size)-\(groupNames[0]).json"
        let command = [
            tools.parley, "join", room, "--server", server, "--name", groupNames[0], "--profile", groupProfile,
            "--log", "\(directory)/group-\(size)-\(groupNames[0]).log", "--log-level", "warning",
            "--stats-file", drawingStats,
        ].map(shellQuoted).joined(separator: " ")
        let pane = try BenchPane(
            command: command, columns: paneColumns, rows: paneRows, tmux: tools.tmux, directory: directory)
        defer { pane.close() }
        var bots: [BackgroundProcess] = []
        defer { bots.forEach { $0.stop() } }
        for index in 1..<size {
            let name = groupNames[index % groupNames.count] + (index >= groupNames.count ? "\(index)" : "")
            bots.append(try BackgroundProcess(
                tools.parley,
                ["bot", room, "--server", server, "--name", name, "--profile", groupProfile, "--log-level", "warning",
                 "--stats-file", "\(directory)/group-\(size)-\(name).json"],
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
        let missing = ProcessFigures(cpuPercent: .nan, peakMiB: .nan)
        return GroupResult(
            size: size,
            drawing: ClientResult(
                process: figures[pane.panePID] ?? missing, shownPerSecond: median(decoded),
                redrawsPerSecond: redraws, terminal: figures[pane.serverPID]),
            headless: bots.map { ClientResult(process: figures[$0.pid] ?? missing) },
            relay: figures[relay.pid] ?? missing, decodedPerTile: median(decoded) ?? 0,
            tilesDecoding: decoded.filter { $0 > 0 }.count)
    }

    // MARK: - Tables

    static func pairTable(_ settings: Settings, parley: [PairResult], headless: [PairResult],
                          baresip: [PairResult], media: BenchMedia) -> BenchTable {
        var table = BenchTable(
            title: "Call 1:1 on loopback, Parley vs baresip: \(width)x\(height) at \(fps) fps, VP8 \(videoKbps) "
                + "kbit/s, Opus 32 kbit/s (\(Int(settings.pairSeconds)) s window, median of \(settings.runs) "
                + "run\(settings.runs == 1 ? "" : "s"))",
            columns: ["Process", "CPU % of a core", "Peak RSS MiB", "Video sent kbit/s", "All sent kbit/s",
                      "Frames in/s (wire)", "Frames shown/s", "Redraws/s"])
        func clientRow(_ label: String, _ runs: [PairResult], _ index: Int) {
            let clients = runs.map { $0.clients[index] }
            table.add([
                label, cell(clients.map { $0.process.cpuPercent }), cell(clients.map { $0.process.peakMiB }),
                cell(clients.map { $0.wire?.videoKbps }, decimals: 0), cell(clients.map { $0.wire?.totalKbps },
                                                                             decimals: 0),
                cell(clients.map { $0.wire?.framesArrivingPerSecond }), cell(clients.map { $0.shownPerSecond }),
                cell(clients.map { $0.redrawsPerSecond }),
            ])
        }
        let pane = "\(paneColumns)x\(paneRows)"
        clientRow("Parley alice (`parley join`, draws into tmux \(pane))", parley, 0)
        clientRow("Parley bob (`parley join`, draws into tmux \(pane))", parley, 1)
        clientRow("baresip alice (display discarded)", baresip, 0)
        clientRow("baresip bob (display discarded)", baresip, 1)

        // Ratio of the two clients' mean, per run, then the median over runs.
        func ratio(_ ours: [PairResult], _ value: (ClientResult) -> Double?) -> String {
            let ratios = zip(ours, baresip).map { pair -> Double? in
                let mine = pair.0.clients.compactMap(value)
                let theirs = pair.1.clients.compactMap(value)
                guard mine.count == 2, theirs.count == 2, theirs.reduce(0, +) > 0 else { return nil }
                return mine.reduce(0, +) / theirs.reduce(0, +)
            }
            guard let middle = median(ratios.compactMap { $0 }) else { return "n/a" }
            return formatted(middle, decimals: 2) + "x"
        }
        func ratioRow(_ label: String, _ ours: [PairResult]) {
            table.add([
                label, ratio(ours) { $0.process.cpuPercent }, ratio(ours) { $0.process.peakMiB },
                ratio(ours) { $0.wire?.videoKbps }, ratio(ours) { $0.wire?.totalKbps },
                ratio(ours) { $0.wire?.framesArrivingPerSecond }, ratio(ours) { $0.shownPerSecond }, "",
            ])
        }
        ratioRow("**Parley / baresip** (mean of the two clients)", parley)
        if !headless.isEmpty {
            clientRow("Parley alice headless (`parley bot`: decodes, draws nothing)", headless, 0)
            clientRow("Parley bob headless (`parley bot`)", headless, 1)
            ratioRow("Parley headless / baresip", headless)
        }
        table.add([
            "parley serve (Parley's relay; not in the client figures)", cell(parley.map { $0.relay?.cpuPercent }),
            cell(parley.map { $0.relay?.peakMiB }), "", "", "", "", "",
        ])
        let terminals = parley.map { run in run.clients.compactMap { $0.terminal } }
        table.add([
            "tmux server per Parley pane (the terminal; not in the client figures)",
            cell(terminals.map { mean($0.map(\.cpuPercent)) }), cell(terminals.map { mean($0.map(\.peakMiB)) }),
            "", "", "", "", "",
        ])

        var notes = [
            "CPU: user + system seconds of all threads from /proc/PID/stat over the window, as % of one core. "
                + "Peak RSS: VmHWM from /proc/PID/status at the end of the window.",
            "Wire: dumpcap on `lo` during the window; UDP payload bytes (RTP header + payload, RTCP in \"all\") "
                + "sent by each client's own sockets; streams told apart by their RTP clock rate (90 kHz video, "
                + "48 kHz audio). Parley's media goes through the relay, baresip's goes peer to peer. "
                + "Frames in/s: video RTP packets with the marker bit arriving at the client's sockets.",
            "Frames shown/s: Parley, frames decoded (`--stats-file`); baresip, frames handed to its display "
                + "(`/video_debug` on its console). Redraws/s: Parley's call screen written to the terminal.",
            "Headless rows: the same Parley call between two `parley bot`s (same files and settings, every frame "
                + "decoded, nothing drawn), measured over \(Int(settings.groupSeconds)) s: what drawing costs.",
            "Same work on both sides: video from the same file, \(media.videoFrames) frames of Parley's synthetic "
                + "camera (moving pattern, text, sensor noise) as raw Y4M (Parley `--video`, baresip `avformat`); "
                + "audio the synthetic voice as 48 kHz mono WAV (Parley loops a 10 s clip, baresip's `aufile` "
                + "cannot loop and holds the whole \(fileSeconds(media.longVoice)) s file, ~"
                + "\(formatted(Double(fileBytes(media.longVoice)) / 1_048_576, decimals: 1)) MiB, in memory).",
            "Parley: `parley join --profile \(width)x\(height) --bitrate \(videoKbps) --fps \(fps)` twice, each in "
                + "its own tmux server (TERM=tmux-256color), VP8 CBR at speed -16, Opus 32 kbit/s mono VOIP FEC "
                + "complexity 5 (Parley's call default; baresip runs its default, 10).",
            "baresip 1.0.0: `video_bitrate \(baresipVideoBitrateSetting)`. Its vp8 module passes this number to "
                + "libvpx's rc_target_bitrate, which is in kbit/s, so the video on the wire is ~\(videoKbps) kbit/s "
                + "like Parley's (compare the \"Video sent\" column); VP8 VBR at its fixed speed 16; Opus "
                + "32 kbit/s mono VOIP FEC complexity 10; modules avformat, fakevideo (display), aufile, aubridge "
                + "(player), cons; direct SIP call on 127.0.0.1 without a registrar.",
        ]
        let problems = Set((parley + baresip).compactMap(\.captureProblem))
        if !problems.isEmpty { notes.append("No wire figures: " + problems.sorted().joined(separator: "; ")) }
        table.notes = notes
        return table
    }

    static func groupTable(_ settings: Settings, runs: [Int: [GroupResult]]) -> BenchTable {
        var table = BenchTable(
            title: "Group calls through the relay, \(groupProfile) at 15 fps (200 kbit/s) per peer "
                + "(\(Int(settings.groupSeconds)) s window, median of \(settings.runs) "
                + "run\(settings.runs == 1 ? "" : "s"))",
            columns: ["Call", "Drawing client CPU %", "Drawing client RSS MiB", "Headless CPU % median (max)",
                      "Headless RSS MiB max", "Relay CPU %", "Terminal CPU %", "Total % of 2 cores",
                      "Decoded fps per tile"])
        for size in runs.keys.sorted() {
            let results = runs[size] ?? []
            let headlessMedian = results.map { median($0.headless.map(\.process.cpuPercent)) }
            let headlessMax = results.map { $0.headless.map(\.process.cpuPercent).max() }
            table.add([
                "\(size)-party", cell(results.map(\.drawing.process.cpuPercent)),
                cell(results.map(\.drawing.process.peakMiB)),
                cell(headlessMedian) + " (" + cell(headlessMax) + ")",
                cell(results.map { $0.headless.map(\.process.peakMiB).max() }),
                cell(results.map(\.relay.cpuPercent)), cell(results.map { $0.drawing.terminal?.cpuPercent }),
                cell(results.map { totalOfTwoCores($0) }),
                cell(results.map(\.decodedPerTile)) + " × " + "\(results.map(\.tilesDecoding).min() ?? 0) tiles",
            ])
        }
        table.notes = [
            "One client is `parley join` drawing every tile into tmux \(paneColumns)x\(paneRows); the others are "
                + "headless `parley bot`s (they decode all video and audio but draw nothing). Every peer sends "
                + "its synthetic camera and voice at the \(groupProfile) profile.",
            "Total: all clients + relay + the drawing client's terminal (tmux), as % of the machine's 2 cores. "
                + "The goal is at most 70 % (30 % to spare).",
        ]
        return table
    }

    static func totalOfTwoCores(_ result: GroupResult) -> Double {
        let clients = result.headless.map(\.process.cpuPercent).reduce(0, +) + result.drawing.process.cpuPercent
        return (clients + result.relay.cpuPercent + (result.drawing.terminal?.cpuPercent ?? 0)) / 2
    }

    static func goalTable(_ settings: Settings, parley: [PairResult], baresip: [PairResult],
                          groups: [Int: [GroupResult]]) -> BenchTable {
        var table = BenchTable(title: "Call benchmark goals", columns: ["Goal", "Target", "Measured", "Met"])
        let cpuRatios = zip(parley, baresip).map { pair in
            pair.0.clients.map(\.process.cpuPercent).reduce(0, +) / pair.1.clients.map(\.process.cpuPercent)
                .reduce(0, +)
        }
        if let ratio = median(cpuRatios) {
            table.add(["1:1 client CPU, Parley (drawing included) / baresip", "≤ 0.80x",
                       formatted(ratio, decimals: 2) + "x", ratio <= 0.8 ? "yes" : "**no**"])
        }
        let peaks = parley.flatMap { $0.clients.map(\.process.peakMiB) }
        if let peak = median(parley.map { run in run.clients.map(\.process.peakMiB).max() ?? .nan }) {
            table.add(["Parley client peak RSS (1:1, larger client)", "≤ 50 MiB", formatted(peak) + " MiB"
                       + " (max \(formatted(peaks.max() ?? .nan)))", peak <= 50 ? "yes" : "**no**"])
        }
        let videoRatios = zip(parley, baresip).compactMap { pair -> Double? in
            let ours = pair.0.clients.compactMap { $0.wire?.videoKbps }
            let theirs = pair.1.clients.compactMap { $0.wire?.videoKbps }
            guard ours.count == 2, theirs.count == 2 else { return nil }
            return theirs.reduce(0, +) / ours.reduce(0, +)
        }
        if let ratio = median(videoRatios) {
            table.add(["Fair comparison: baresip video on the wire / Parley's", "0.90x…1.10x",
                       formatted(ratio, decimals: 2) + "x", (0.9...1.1).contains(ratio) ? "yes" : "**no**"])
        }
        if let largest = groups.keys.max(), let total = median((groups[largest] ?? []).map(totalOfTwoCores)) {
            table.add(["\(largest)-party call on 2 cores, 30 % to spare", "≤ 70 % of 2 cores",
                       formatted(total) + " %", total <= 70 ? "yes" : "**no**"])
        }
        table.notes = ["Medians over \(settings.runs) run\(settings.runs == 1 ? "" : "s"); the machine is shared, "
                       + "so single runs can be off by a few points."]
        return table
    }

    // MARK: - Helpers

    static func waitUntil(seconds: Double, _ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw CallBenchError.timedOut("\(what) (waited \(Int(seconds)) s)") }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    static func median(_ values: [Double?]) -> Double? {
        median(values.compactMap { $0 })
    }

    static func median(_ values: [Double]) -> Double? {
        let sorted = values.filter { $0.isFinite }.sorted()
        guard !sorted.isEmpty else { return nil }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func mean(_ values: [Double]) -> Double? {
        values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }

    /// The median of some runs' values, or "n/a".
    static func cell(_ values: [Double?], decimals: Int = 1) -> String {
        guard let value = median(values) else { return "n/a" }
        return formatted(value, decimals: decimals)
    }

    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
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
