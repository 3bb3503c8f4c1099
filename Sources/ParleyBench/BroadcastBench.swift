import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// `parley-bench broadcast`: one broadcaster and a growing audience through one relay (issue 14, item 6).
///
/// A real `parley serve` and a real broadcaster (`parley bot`, sending the call benchmark's camera file at the call
/// settings); the audience are light receivers in this process (a WebSocket joined as `audience` and a bound UDP
/// socket each, counting what arrives, sending nothing back). At each audience size the broadcaster's and the
/// relay's CPU come from /proc over a window: the broadcaster's should not grow with the audience, and the relay's
/// growth per viewer is what one more viewer costs the server.
public enum BroadcastBench {
    /// Audience sizes and window length.
    public struct Settings: Sendable {
        /// The `parley` executable whose `serve` and `bot` are measured.
        public var parleyPath: String
        /// Audience sizes, ascending; viewers are added between steps and stay.
        public var audiences: [Int]
        /// Measurement window at each size, seconds.
        public var seconds: Double

        /// Defaults: 0, 1, 10, 25 and 50 viewers, 15 s each (about two minutes in all).
        public init(parleyPath: String, audiences: [Int] = [0, 1, 10, 25, 50], seconds: Double = 15) {
            self.parleyPath = parleyPath
            self.audiences = audiences
            self.seconds = seconds
        }

        /// Defaults overridden by `PARLEY_BROADCAST_BENCH_SECONDS` (5…600) and `PARLEY_BROADCAST_BENCH_VIEWERS`
        /// (ascending counts, comma-separated, starting at 0, at most 200); throws a message naming a bad value.
        public static func fromEnvironment(
            parleyPath: String,
            environment: [String: String] = ProcessInfo.processInfo.environment
        )
            throws -> Settings
        {
            var settings = Settings(parleyPath: parleyPath)
            if let text = environment["PARLEY_BROADCAST_BENCH_SECONDS"] {
                guard let value = Double(text), (5...600).contains(value) else {
                    throw CallBenchError.unexpected("PARLEY_BROADCAST_BENCH_SECONDS=\(text) is not a number in 5…600")
                }
                settings.seconds = value
            }
            if let text = environment["PARLEY_BROADCAST_BENCH_VIEWERS"] {
                settings.audiences = try audiences(parsing: text)
            }
            return settings
        }

        /// "0,1,10,25,50" → [0, 1, 10, 25, 50]: whole numbers, ascending, the first 0 (the relay's CPU without
        /// viewers is what the per-viewer figure is measured against), the last at most 200.
        static func audiences(parsing text: String) throws -> [Int] {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            var counts: [Int] = []
            for part in parts {
                guard let count = Int(part), (0...200).contains(count) else {
                    throw CallBenchError.unexpected(
                        "PARLEY_BROADCAST_BENCH_VIEWERS=\(text): \"\(part)\" is not a viewer count in 0…200")
                }
                if let last = counts.last, count <= last {
                    throw CallBenchError.unexpected(
                        "PARLEY_BROADCAST_BENCH_VIEWERS=\(text): counts must go up (\(count) after \(last))")
                }
                counts.append(count)
            }
            guard counts.first == 0, counts.count >= 2 else {
                throw CallBenchError.unexpected(
                    "PARLEY_BROADCAST_BENCH_VIEWERS=\(text): start at 0 and give at least one more count, e.g. 0,10,50")
            }
            return counts
        }
    }

    /// What the broadcaster's `--stats-file` says (the fields used here; the file has more), read through the
    /// `CallStatisticsReport` the call engine writes.
    struct BroadcasterStats: Equatable {
        var time: Double
        var mediaBound: Bool
        var videoFramesSent: Int
        var videoFramesCaptured: Int
        var videoBytesSent: Int
        var audioBytesSent: Int
        var keyframeRequestsReceived: Int

        /// Parses one statistics file's contents; throws a message naming the file and what is wrong.
        static func parse(_ data: Data, path: String) throws -> BroadcasterStats {
            do {
                let report = try JSONDecoder().decode(CallStatisticsReport.self, from: data)
                return BroadcasterStats(
                    time: report.time, mediaBound: report.mediaBound, videoFramesSent: report.videoFramesSent,
                    videoFramesCaptured: report.videoFramesCaptured, videoBytesSent: report.videoBytesSent,
                    audioBytesSent: report.audioBytesSent, keyframeRequestsReceived: report.keyframeRequestsReceived)
            } catch let DecodingError.keyNotFound(key, _) {
                throw CallBenchError.unexpected("broadcaster statistics \(path): no \"\(key.stringValue)\" field")
            } catch let DecodingError.typeMismatch(_, context) {
                let field = context.codingPath.map(\.stringValue).joined(separator: ".")
                throw CallBenchError.unexpected("broadcaster statistics \(path): \"\(field)\" has the wrong type")
            } catch {
                throw CallBenchError.unexpected("broadcaster statistics \(path) is not a JSON object: \(error)")
            }
        }

        /// The file now, nil while it does not exist yet.
        static func read(_ path: String) throws -> BroadcasterStats? {
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            return try parse(data, path: path)
        }
    }

    /// One audience size.
    struct Step {
        var viewers: Int
        var broadcaster: CallBench.ProcessFigures
        var relay: CallBench.ProcessFigures
        /// This process: the viewers' receiver thread and their keep-alives.
        var audienceProcessPercent: Double
        /// RTP bytes (header and payload) that reached the viewers, all together, Mbit/s.
        var forwardedMbps: Double
        /// The same per viewer, kbit/s (0 without viewers).
        var perViewerKbps: Double
        /// Payload the broadcaster sent (video + audio), kbit/s, from its statistics.
        var sentKbps: Double
        /// Frames the broadcaster sent per second.
        var framesPerSecond: Double
        /// Keyframes the broadcaster was asked for during the window.
        var keyframeRequests: Int
    }

    /// Runs every audience size once and returns the step table and the goal table.
    public static func run(_ settings: Settings, log: @escaping @Sendable (String) -> Void) throws -> [BenchTable] {
        guard FileManager.default.isExecutableFile(atPath: settings.parleyPath) else {
            throw CallBenchError.unexpected("the parley executable \(settings.parleyPath) is missing; run `make build`")
        }
        let directory = try CallBench.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let media = try CallBench.BenchMedia.prepare(videoSeconds: 48, log: log)
        let largest = settings.audiences.max() ?? 0
        // Room for the broadcaster and every viewer (the default, 50 members a room, would refuse the 50th
        // viewer), all from 127.0.0.1.
        let (relay, port, _) = try CallBench.startRelay(
            parley: settings.parleyPath, directory: directory,
            extraArguments: [
                "--insecure", "--max-members", "\(largest + 8)",
                "--max-connections-per-address", "\(largest + 16)",
            ])
        defer { relay.stop() }
        let statsPath = directory + "/broadcaster.json"
        let broadcaster = try BackgroundProcess(
            settings.parleyPath,
            ["bot", room, "--server", "127.0.0.1:\(port)", "--insecure", "--name", "host"]
                + CallBench.equalWorkArguments
                + [
                    "--video", media.video, "--audio", media.loopedVoice, "--log-level", "warning",
                    "--stats-file", statsPath,
                ],
            outputPath: directory + "/broadcaster.log")
        defer { broadcaster.stop() }
        // Alone in the room it reads its camera and encodes nothing (nobody watches: every layer paused).
        try CallBench.waitUntil(seconds: 30, "the broadcaster reading its camera (\(statsPath))") {
            ((try? BroadcasterStats.read(statsPath))?.videoFramesCaptured ?? 0) > 0
        }

        var members: [(SignalingSocket, LoadMember)] = []
        let counters = LoadCounters()
        var receiver: LoadReceiver?
        var receiving: DispatchSemaphore?
        defer {
            receiver?.stop()
            receiving?.wait()
            for (socket, _) in members { socket.leave() }
        }
        var steps: [Step] = []
        for audience in settings.audiences {
            log("broadcast bench: \(audience) viewer\(audience == 1 ? "" : "s"), \(Int(settings.seconds)) s")
            while members.count < audience {
                let socket = try SignalingSocket(port: Int(port))
                let grant = try socket.join(room: room, name: "viewer\(members.count + 1)", role: .audience)
                let media = try MediaSocket(connectingTo: grant.media.udpPort)
                try media.bind(grant)
                members.append(
                    (
                        socket,
                        LoadMember(
                            media: media, ssrcs: grant.media.ssrcs, room: 0, sends: false,
                            fanOut: 0)
                    ))
            }
            // One receiver thread for the whole audience: restarted with the new sockets at each size.
            receiver?.stop()
            receiving?.wait()
            receiver = nil
            if !members.isEmpty {
                let started = LoadReceiver(sockets: members.map(\.1.media.descriptor), counters: counters)
                receiving = started.start(cpu: nil)
                receiver = started
            }
            keepAlive(members.map(\.0), for: CallBench.warmUp)
            steps.append(
                try measure(
                    viewers: audience, seconds: settings.seconds, broadcaster: broadcaster, relay: relay,
                    statsPath: statsPath, counters: counters, sockets: members.map(\.0)))
        }
        return [stepTable(settings, steps: steps, media: media), goalTable(steps: steps)]
    }

    static let room = "broadcast"

    /// Pings and drains every viewer's signaling for `seconds`.
    static func keepAlive(_ sockets: [SignalingSocket], for seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            for socket in sockets {
                socket.keepAlive()
                socket.discardIncoming()
            }
            Thread.sleep(forTimeInterval: min(0.25, max(0, end.timeIntervalSinceNow)))
        }
    }

    static func measure(
        viewers: Int, seconds: Double, broadcaster: BackgroundProcess, relay: BackgroundProcess,
        statsPath: String, counters: LoadCounters, sockets: [SignalingSocket]
    ) throws -> Step {
        for (name, process) in [("the broadcaster", broadcaster), ("parley serve", relay)] {
            if let status = process.waitForExit(seconds: 0) {
                throw CallBenchError.unexpected("\(name) exited (status \(status)): \(process.output.suffix(600))")
            }
        }
        let statsBefore = try BroadcasterStats.read(statsPath)
        let countersBefore = counters.snapshot()
        let ownBefore = ProcessProbe.cpuSeconds(getpid()) ?? 0
        let window = CallBench.CPUWindow([broadcaster.pid, relay.pid])
        let start = WallClock.seconds
        keepAlive(sockets, for: seconds)
        let elapsed = max(0.001, WallClock.seconds - start)
        let figures = window.finish()
        let own = (ProcessProbe.cpuSeconds(getpid()) ?? 0) - ownBefore
        let countersAfter = counters.snapshot()
        // The statistics file is rewritten every second: wait for the one after the window.
        Thread.sleep(forTimeInterval: 1.1)
        guard let before = statsBefore, let after = try BroadcasterStats.read(statsPath), after.time > before.time
        else { throw CallBenchError.unexpected("the broadcaster's statistics (\(statsPath)) stopped changing") }
        let statsSeconds = after.time - before.time
        let forwarded = Double(countersAfter.receivedBytes - countersBefore.receivedBytes) * 8 / elapsed
        if viewers > 0, forwarded <= 0 {
            throw CallBenchError.unexpected("\(viewers) viewers received nothing from the relay in \(Int(seconds)) s")
        }
        let missing = CallBench.ProcessFigures(cpuPercent: .nan, peakMiB: .nan)
        return Step(
            viewers: viewers, broadcaster: figures[broadcaster.pid] ?? missing, relay: figures[relay.pid] ?? missing,
            audienceProcessPercent: 100 * own / elapsed, forwardedMbps: forwarded / 1e6,
            perViewerKbps: viewers > 0 ? forwarded / 1000 / Double(viewers) : 0,
            sentKbps: Double(
                after.videoBytesSent + after.audioBytesSent - before.videoBytesSent
                    - before.audioBytesSent) * 8 / 1000 / statsSeconds,
            framesPerSecond: Double(after.videoFramesSent - before.videoFramesSent) / statsSeconds,
            keyframeRequests: after.keyframeRequestsReceived - before.keyframeRequestsReceived)
    }

    /// The relay's CPU above its CPU with no viewers, per viewer, % of a core (nil at 0 viewers or without a
    /// 0-viewer step).
    static func relayPerViewer(_ step: Step, baseline: Step?) -> Double? {
        guard step.viewers > 0, let baseline, baseline.viewers == 0 else { return nil }
        return (step.relay.cpuPercent - baseline.relay.cpuPercent) / Double(step.viewers)
    }

    static func stepTable(_ settings: Settings, steps: [Step], media: CallBench.BenchMedia) -> BenchTable {
        var table = BenchTable(
            title: "Broadcast through one relay: one broadcaster at \(CallBench.width)x\(CallBench.height) "
                + "\(CallBench.fps) fps, VP8 \(CallBench.videoKbps) kbit/s + Opus, to a growing audience of light "
                + "receivers (\(Int(settings.seconds)) s window per size)",
            columns: [
                "Viewers", "Broadcaster CPU %", "Broadcaster sent kbit/s", "Broadcaster fps",
                "Relay CPU %", "Relay CPU per viewer %", "Forwarded Mbit/s", "Per viewer kbit/s",
                "Relay peak RSS MiB", "Audience process CPU %",
            ])
        let baseline = steps.first { $0.viewers == 0 }
        for step in steps {
            table.add([
                "\(step.viewers)", formatted(step.broadcaster.cpuPercent), formatted(step.sentKbps, decimals: 0),
                formatted(step.framesPerSecond), formatted(step.relay.cpuPercent),
                relayPerViewer(step, baseline: baseline).map { formatted($0, decimals: 2) } ?? "",
                formatted(step.forwardedMbps, decimals: 2),
                step.viewers > 0 ? formatted(step.perViewerKbps, decimals: 0) : "",
                formatted(step.relay.peakMiB), formatted(step.audienceProcessPercent),
            ])
        }
        let keyframes = steps.map(\.keyframeRequests).reduce(0, +)
        table.notes = [
            "`parley serve --insecure` (plain WebSocket, so the light receivers need no TLS; media is the same UDP "
                + "forwarding either way) with room for the audience (`--max-members`, "
                + "`--max-connections-per-address`). "
                + "Broadcaster: `parley bot \(room) \(CallBench.equalWorkArguments.joined(separator: " ")) --video "
                + "FILE.y4m --audio FILE.wav`, the call benchmark's \(media.videoFrames)-frame camera file and 10 s "
                + "voice clip, encoding once whatever the audience.",
            "Viewers: light receivers in the benchmark's own process, each a WebSocket joined as `audience` and a "
                + "UDP socket bound with its credential, counting the RTP that arrives (header + payload); they send "
                + "no RTCP, so no NACKs or keyframe requests (\(keyframes) keyframe requests reached the broadcaster "
                + "in all windows). Viewers are added between windows and stay; each window starts "
                + "\(formatted(CallBench.warmUp, decimals: 0)) s after the last join.",
            "CPU: user + system seconds of all threads from /proc/PID/stat over the window, % of one core. Relay CPU "
                + "per viewer: (relay CPU − relay CPU with no viewers) ÷ viewers. Broadcaster sent: video + audio "
                + "payload from its `--stats-file`. Audience process: this benchmark (the viewers' receiver thread and "
                + "keep-alives), not part of Parley's cost.",
        ]
        return table
    }

    static func goalTable(steps: [Step]) -> BenchTable {
        var table = BenchTable(title: "Broadcast goals", columns: ["Goal", "Target", "Measured", "Met"])
        let one = steps.first { $0.viewers == 1 } ?? steps.first { $0.viewers > 0 }
        if let one, let most = steps.last, most.viewers > one.viewers {
            let growth = (most.broadcaster.cpuPercent / one.broadcaster.cpuPercent - 1) * 100
            table.add([
                "Broadcaster CPU at \(most.viewers) viewers against \(one.viewers): flat", "≤ +10 %",
                "\(formatted(one.broadcaster.cpuPercent)) % → \(formatted(most.broadcaster.cpuPercent)) % "
                    + "(\(growth >= 0 ? "+" : "")\(formatted(growth)) %)",
                growth <= 10 ? "yes" : "**no**",
            ])
        }
        if let most = steps.last, let perViewer = relayPerViewer(most, baseline: steps.first { $0.viewers == 0 }) {
            table.add([
                "Relay CPU per viewer at \(most.viewers) viewers", "reported",
                "\(formatted(perViewer, decimals: 2)) % of a core", "",
            ])
        }
        table.notes = ["One run; the machine is shared, so a window can be off by a point or two."]
        return table
    }
}
