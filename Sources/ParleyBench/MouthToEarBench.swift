// One file, one thing: the mouth-to-ear benchmark's plan (which paths, in what order), its recording of the click
// train and its tables. The paths it starts are in MouthToEarPaths.swift, the click search in MouthToEarClicks.swift,
// the breakdown of Parley's figure in MouthToEarBreakdown.swift.
import Foundation
import ParleyMedia
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// Mouth-to-ear audio latency (`parley-bench mouth-to-ear`): a click a second played into a talker's microphone and
/// recorded, in the same stereo stream, as it comes out of a listener's speaker, for Parley, baresip, a Chromium tab,
/// Parley to a browser guest and back, and PulseAudio's own loop, one after another on the same private sound server in the same run
/// (Resources/sound/mouth-to-ear.pa: the left channel is the click sent, the right the click heard).
public enum MouthToEarBench {
    /// What to run.
    public struct Settings: Sendable {
        /// The `parley` executable whose `serve` and `join` are measured.
        public var parleyPath: String
        /// Clicks per path, one a second.
        public var seconds: Int

        /// Settings: 60 clicks a path.
        public init(parleyPath: String, seconds: Int = 60) {
            self.parleyPath = parleyPath
            self.seconds = seconds
        }
    }

    /// The sound server's devices (Resources/sound/mouth-to-ear.pa).
    enum Device {
        /// Where the click train is played.
        static let mouth = "mouth"
        /// The talker's microphone (the default source).
        static let microphone = "mouth_mic"
        /// The listener's speaker (the default sink).
        static let ear = "ear"
        /// A sink nobody hears, and (its monitor) a microphone that hears nothing.
        static let void = "void"
        static let silence = "void.monitor"
        /// Left: the click sent; right: the click heard.
        static let room = "room.monitor"
    }

    /// Seconds between a path saying it is up and its first click (jitter buffers and rate estimates settling).
    static let warmUp = 3.0
    /// Seconds recorded after the last click was played: longer than the longest delay searched (0.9 s).
    static let tail = 1.3

    /// The paths in the order they run.
    enum Path: CaseIterable, CustomStringConvertible {
        case parley, baresip, chromium, terminalToPage, pageToTerminal, pulseLoop

        var description: String {
            switch self {
            case .parley: "Parley"
            case .baresip: "baresip"
            case .chromium: "Chromium tab"
            case .terminalToPage: "Parley → browser guest"
            case .pageToTerminal: "browser guest → Parley"
            case .pulseLoop: "PulseAudio loop"
            }
        }
    }

    /// One path's clicks, found or not, and what else it says about the window.
    struct PathResult {
        var path: Path
        /// The path's name in the table (with versions).
        var label: String
        var matches: Result<[ClickMatch], ClickSearchError>
        /// Lines for the table's notes (concealment counters).
        var notes: [String] = []
        /// The sound server's queues for the path's streams during the clicks.
        var streams = PathStreams(recording: [:], playing: [:])
        /// The latencies the sound server settled on for the streams the path opened.
        var configured: [ConfiguredLatency] = []
        /// Parley's statistics before and after the clicks (talker, listener).
        var parleyStatistics: (talker: LatencyFields?, listener: LatencyFields?, listenerBefore: LatencyFields?)?
    }

    /// Runs every path for `settings.seconds` clicks and returns the latency table and the breakdown of Parley's
    /// figure. Throws naming the path and the seconds when any click was not found: no silent pass.
    public static func run(_ settings: Settings, log: (String) -> Void) throws -> [BenchTable] {
        guard settings.seconds >= 3 else {
            throw CallBenchError.unexpected("mouth-to-ear: \(settings.seconds) clicks is too few (at least 3)")
        }
        let tools = try Tools.find(parley: settings.parleyPath)
        let directory = try CallBench.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sound: SoundServer
        do {
            // At `info`, the server logs the latency it settles on for each stream (`ConfiguredLatency`).
            sound = try SoundServer(configuration: "mouth-to-ear.pa", logLevel: "info")
        } catch {
            throw CallBenchError.unexpected("\(error)")
        }
        defer { sound.stop() }
        let train = try writeClickTrain(seconds: settings.seconds, in: directory)

        var results: [PathResult] = []
        for path in Path.allCases {
            let logOffset = ConfiguredLatency.read(sound.logPath, from: 0).end
            log("mouth-to-ear: \(path), \(settings.seconds) clicks")
            let recorder = ClickRecorder(
                sound: sound, train: train, seconds: settings.seconds, directory: directory, name: "\(path)")
            var result: PathResult
            switch path {
            case .parley:
                result = try parley(tools: tools, sound: sound, directory: directory, recorder: recorder)
            case .baresip:
                result = try baresip(tools: tools, sound: sound, directory: directory, recorder: recorder)
            case .chromium:
                result = try chromium(tools: tools, sound: sound, directory: directory, recorder: recorder)
            case .terminalToPage:
                result = try terminalToPage(tools: tools, sound: sound, directory: directory, recorder: recorder)
            case .pageToTerminal:
                result = try pageToTerminal(tools: tools, sound: sound, directory: directory, recorder: recorder)
            case .pulseLoop:
                result = try pulseLoop(sound: sound, recorder: recorder)
            }
            result.configured = ConfiguredLatency.parse(ConfiguredLatency.read(sound.logPath, from: logOffset).text)
            switch result.matches {
            case .success(let matches):
                let delays = ClickDelays(matches)
                log(
                    "mouth-to-ear: \(path): p50 \(formatted(delays.percentile(0.5) ?? .nan)) ms, "
                        + "max \(formatted(delays.percentile(1) ?? .nan)) ms")
            case .failure(let error):
                log("mouth-to-ear: \(path): \(error)")
            }
            results.append(result)
        }
        withExtendedLifetime(sound) {}
        let failures = results.compactMap { result -> String? in
            guard case .failure(let error) = result.matches else { return nil }
            return "\(result.path): \(error)"
        }
        guard failures.isEmpty else {
            for table in tables(results, seconds: settings.seconds) { log(table.markdown) }
            throw CallBenchError.unexpected("mouth-to-ear: " + failures.joined(separator: "; "))
        }
        return tables(results, seconds: settings.seconds)
    }

    /// Writes a train of `seconds` clicks, one a second, as a WAV file in `directory`; returns its path.
    static func writeClickTrain(seconds: Int, in directory: String) throws -> String {
        let train = directory + "/clicks.wav"
        let samples = ClickTrain(seconds: seconds).samples
        guard
            FileManager.default.createFile(
                atPath: train,
                contents: Data(WAVAudio(sampleRate: ClickTrain.sampleRate, channels: 1, samples: samples).encoded()))
        else { throw CallBenchError.unexpected("cannot write the click train \(train)") }
        return train
    }

    /// " 156" for Chromium 156, empty when its version cannot be read.
    static func chromiumVersion(_ tools: Tools, in directory: String) -> String {
        (try? runToCompletion(tools.chromium, ["--version"], in: directory).output)?
            .firstMatch(of: /Chromium (\d+)/).map { " " + String($0.1) } ?? ""
    }

    // MARK: - Tables

    /// The latency table and the breakdown of Parley's p50.
    static func tables(_ results: [PathResult], seconds: Int) -> [BenchTable] {
        func delays(_ path: Path) -> ClickDelays? {
            guard let result = results.first(where: { $0.path == path }), case .success(let matches) = result.matches
            else { return nil }
            return ClickDelays(matches)
        }
        let chromiumP50 = delays(.chromium)?.percentile(0.5)
        var latency = BenchTable(
            title: "Mouth-to-ear audio latency: one click a second for \(seconds) s into the talker's microphone, "
                + "heard on the listener's speaker, every path on the same headless PulseAudio in the same run",
            columns: ["path", "clicks found", "p50 ms", "p90 ms", "max ms", "p50 ÷ Chromium's"])
        for result in results {
            let found: Int
            var cells = ["n/a", "n/a", "n/a", "n/a"]
            switch result.matches {
            case .success(let matches):
                let delays = ClickDelays(matches)
                found = delays.milliseconds.count
                let p50 = delays.percentile(0.5)
                cells = [
                    p50.map { formatted($0) } ?? "n/a", delays.percentile(0.9).map { formatted($0) } ?? "n/a",
                    delays.percentile(1).map { formatted($0) } ?? "n/a",
                    p50.flatMap { p50 in chromiumP50.map { formatted(p50 / $0, decimals: 2) } } ?? "n/a",
                ]
            case .failure(let error):
                if case .notHeard(let missing, let total, _) = error {
                    found = total - missing.count
                } else {
                    found = 0
                }
            }
            latency.add([result.label, "\(found)/\(seconds)"] + cells)
        }
        let parleyP50 = delays(.parley)?.percentile(0.5)
        latency.notes = [
            "Sound server: one stereo null sink at 48 kHz (Resources/sound/mouth-to-ear.pa). The click (a 5 ms chirp, "
                + "500 Hz–4 kHz, -6 dBFS) is played into a remap sink on its left channel; the talker's microphone "
                + "is a remap source reading that left channel; the listener's speaker is a remap sink writing its "
                + "right channel. One `parec` of the sink's monitor records both, sample-aligned: the delay is where "
                + "the click best correlates in the right channel minus where it starts in the left (searched up to "
                + "0.9 s; a click not found there fails the run). Echo cancellation, noise suppression and gain "
                + "control are off in every client; the talker hears nothing back.",
            "What differs: Parley sends 160x120 synthetic video both ways through its relay (`parley serve` on "
                + "loopback) and both clients draw into 120x40 tmux panes; baresip and the Chromium tab send audio "
                + "only, straight from one endpoint to the other on 127.0.0.1, Chromium with both peer connections "
                + "in one page painting into Xvfb. Each client opens the sound server through its own audio stack "
                + "(Parley: libpulse directly; baresip: its pulse module; Chromium: its PulseAudio "
                + "back end; formats in the next table); the PulseAudio loop is the sound server alone (no codec, no "
                + "network), the floor of this set-up.",
        ]
        latency.notes += results.flatMap(\.notes)
        if let parleyP50, let chromiumP50 {
            let goal = 0.7 * chromiumP50
            latency.notes.append(
                goalNote(
                    "Parley's p50 ≤ 0.7 × Chromium's p50 in the same run", met: parleyP50 <= goal,
                    "Parley \(formatted(parleyP50)) ms, 0.7 × \(formatted(chromiumP50)) = \(formatted(goal)) ms"))
        } else {
            latency.notes.append("Goal: Parley's p50 ≤ 0.7 × Chromium's p50 in the same run: not measured.")
        }
        latency.notes.append(
            "The browser-guest rows (issue 53): one `parley join` and the guests' page that `parley serve` itself "
                + "serves (Resources/web, `?processing=off`: the page's microphone without echo cancellation, noise "
                + "suppression or gain control, as every client here), in a Chromium tab under Xvfb, through the "
                + "relay on loopback (TLS signaling, DTLS-SRTP to the page); the page has no camera here, so it "
                + "sends audio only, and `parley join` its 160x120 video.")
        for path in [Path.terminalToPage, .pageToTerminal] {
            guard let p50 = delays(path)?.percentile(0.5), let chromiumP50 else {
                latency.notes.append("Goal: \(path)'s p50 ≤ the Chromium tab's p50 in the same run: not measured.")
                continue
            }
            latency.notes.append(
                goalNote(
                    "\(path)'s p50 ≤ the Chromium tab's p50 in the same run", met: p50 <= chromiumP50,
                    "\(formatted(p50)) ms against \(formatted(chromiumP50)) ms"))
        }
        var tables = [latency, streamsTable(results)]
        if let parley = results.first(where: { $0.path == .parley }), let parleyP50 {
            tables.append(breakdownTable(parley, p50: parleyP50))
        }
        return tables
    }

    /// The sound server's queue for each path's streams, and their latency as configured.
    static func streamsTable(_ results: [PathResult]) -> BenchTable {
        var streams = BenchTable(
            title: "The sound server's queue for each path's streams during the clicks",
            columns: [
                "path", "recording stream on the microphone, ms queued", "its latency as configured",
                "playing stream on the speaker, ms queued", "its latency as configured",
            ])
        for result in results {
            streams.add([
                result.path.description, PathStreams.cell(result.streams.recording),
                ConfiguredLatency.cell(result.configured, recording: true, device: Device.microphone),
                PathStreams.cell(result.streams.playing),
                ConfiguredLatency.cell(result.configured, recording: false, device: Device.ear),
            ])
        }
        streams.notes = [
            "\"Buffer Latency\" of each client stream in `pactl list source-outputs` and `pactl list sink-inputs` "
                + "(named by the client's application name, with the format it opened), median of 5 samples taken "
                + "while the clicks play. The "
                + "sink's own latency is left out: it delays both channels of the recording alike. What a client "
                + "buffers itself (before it writes, after it reads) is not visible from here.",
            "As configured: the \"Final latency\" the sound server logged when the client opened the stream "
                + "(recording: the fragment it delivers at once + the source's latency; playing: the sink's latency "
                + "+ twice the request size + the rest of the target length). A recording client gets nothing "
                + "until a fragment is full, which the queue above cannot show.",
        ]
        return streams
    }

    /// Where Parley's p50 goes, stage by stage, from its clients' statistics.
    static func breakdownTable(_ parley: PathResult, p50 parleyP50: Double) -> BenchTable {
        let statistics = parley.parleyStatistics
        let breakdown = MouthToEarBreakdown(
            p50: parleyP50, talker: statistics?.talker, listener: statistics?.listener,
            talkerName: ParleyNames.talker, serverRecordingMs: parley.streams.recording.values.max(),
            serverPlayingMs: parley.streams.playing.values.max())
        var table = BenchTable(
            title: "Where Parley's \(formatted(parleyP50)) ms (p50) go",
            columns: ["stage", "ms", "from"], rows: breakdown.rows)
        table.notes = [
            "Read from the clients' `--stats-file`s at the end of the clicks (the talker's for its microphone, "
                + "the listener's for the rest); a stage they do not report yet is n/a and counted in the "
                + "remainder. The PulseAudio loop above is what the sound server alone costs a recorder and a "
                + "player; the latencies the server configured for Parley's streams (the table above) bound "
                + "what its device buffers can hold."
        ]
        if !breakdown.otherFields.isEmpty {
            table.notes.append("Other timings the clients report: " + breakdown.otherFields.joined(separator: "; "))
        }
        return table
    }
}

/// Plays the click train into the mouth while recording the room's monitor in stereo; the two channels apart.
struct ClickRecorder {
    let sound: SoundServer
    let train: String
    let seconds: Int
    let directory: String
    let name: String
    /// Clicks not heard are kept as such instead of failing the search (a link that loses packets may lose one).
    var toleratesLoss = false

    /// Records, plays the train (sampling the sound server's stream queues meanwhile), waits for the tail, and
    /// returns the sent (left) and heard (right) channels and the queues.
    func record() throws -> (sent: [Int16], heard: [Int16], streams: PathStreams) {
        let raw = "\(directory)/room-\(name).raw"
        defer { unlink(raw) }
        let before = try sound.recordingStreams()
        let parec = try BackgroundProcess(
            SoundServer.program("parec") ?? "/usr/bin/parec",
            [
                "--server=\(sound.serverAddress)", "--device=\(MouthToEarBench.Device.room)", "--raw",
                "--format=s16le", "--rate=48000", "--channels=2", "--latency-msec=20", raw,
            ], outputPath: "\(directory)/parec-\(name).log")
        defer { parec.stop() }
        try CallBench.waitUntil(seconds: 10, "the recorder connected to the sound server") {
            ((try? sound.recordingStreams()) ?? 0) > before
        }
        let player = try BackgroundProcess(
            SoundServer.program("paplay") ?? "/usr/bin/paplay",
            ["--server=\(sound.serverAddress)", "--device=\(MouthToEarBench.Device.mouth)", train],
            outputPath: "\(directory)/paplay-\(name).log")
        defer { player.stop() }
        let streams = PathStreams.sample(sound, interval: min(1, Double(seconds) / 6))
        guard let status = player.waitForExit(seconds: Double(seconds) + 30) else {
            throw CallBenchError.timedOut("paplay did not finish the \(seconds) s click train")
        }
        guard status == 0 else {
            throw CallBenchError.unexpected("paplay failed (status \(status)): \(player.output.suffix(400))")
        }
        Thread.sleep(forTimeInterval: MouthToEarBench.tail)
        parec.stop()
        guard let data = FileManager.default.contents(atPath: raw) else {
            throw CallBenchError.unexpected("parec wrote no recording: \(parec.output.suffix(400))")
        }
        let frames = data.count / 4
        var sent = [Int16](repeating: 0, count: frames)
        var heard = [Int16](repeating: 0, count: frames)
        data.withUnsafeBytes { bytes in
            for frame in 0..<frames {
                sent[frame] = Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 4 * frame, as: Int16.self))
                heard[frame] = Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 4 * frame + 2, as: Int16.self))
            }
        }
        return (sent, heard, streams)
    }

    /// Records, and searches the recording for every click; with the stream queues.
    func clicks() throws -> (Result<[ClickMatch], ClickSearchError>, PathStreams) {
        let (sent, heard, streams) = try record()
        do {
            let finder = ClickFinder(seconds: seconds)
            return (
                .success(
                    try toleratesLoss ? finder.findAll(sent: sent, heard: heard) : finder.find(sent: sent, heard: heard)
                ),
                streams
            )
        } catch {
            return (.failure(error), streams)
        }
    }
}
