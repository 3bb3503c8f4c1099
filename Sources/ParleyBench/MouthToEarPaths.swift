// The four paths of the mouth-to-ear benchmark, each started on the benchmark's sound server, held up while the
// click train is recorded, and stopped (every process it started) before the next one starts.
import Foundation
import ParleyEngine
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// The names the two Parley clients join with.
enum ParleyNames {
    static let talker = "talker"
    static let listener = "listener"
}

extension MouthToEarBench {
    /// The programs the benchmark runs.
    struct Tools {
        var parley: String
        var baresip: String
        var tmux: String
        var xvfb: String
        var chromium: String
        var env: String

        /// Finds them all, throwing a message naming the package of the first one missing.
        static func find(parley: String) throws -> Tools {
            guard FileManager.default.isExecutableFile(atPath: parley) else {
                throw CallBenchError.unexpected("the parley executable \(parley) is missing; run `make build`")
            }
            for module in ["pulse", "opus", "cons", "account", "menu"] {
                guard FileManager.default.fileExists(atPath: "\(CallBench.baresipModules)/\(module).so") else {
                    throw CallBenchError.missingTool("baresip module \(module)", package: "baresip-core")
                }
            }
            return Tools(
                parley: parley, baresip: try findTool("baresip", package: "baresip-core"),
                tmux: try findTool("tmux", package: "tmux"), xvfb: try findTool("Xvfb", package: "xvfb"),
                chromium: try findTool("chromium", package: "chromium"), env: try findTool("env", package: "coreutils"))
        }
    }

    // MARK: - Parley

    /// `parley serve` on loopback and two `parley join`s in tmux panes on the sound server's default devices: the
    /// talker (its microphone, no speaker) and the listener (silence for a microphone, the speaker), both sending
    /// 160x120 synthetic video, echo cancellation and noise suppression off.
    static func parley(tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder) throws
        -> PathResult
    {
        let (relay, port, _) = try CallBench.startRelay(parley: tools.parley, directory: directory)
        defer { relay.stop() }
        return try parleyClicks(
            tools: tools, sound: sound, directory: directory, recorder: recorder,
            servers: (talker: "127.0.0.1:\(port)", listener: "127.0.0.1:\(port)"),
            label: "Parley: two `parley join` through `parley serve` (loopback), 160x120 video both ways, in tmux")
    }

    /// The two `parley join`s of the Parley path against a relay already up at `servers`, each command passed
    /// through `wrap` (the network lab runs the talker's or the listener's in its member's namespace), with
    /// `joinArguments` added to both; with `soundAlone`, both turn their cameras off (`v`) once the sound plays.
    static func parleyClicks(
        tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder,
        servers: (talker: String, listener: String), joinArguments: [String] = [], warmUp: Double = warmUp,
        soundAlone: Bool = false, label: String,
        wrap: (_ listener: Bool, String, [String]) -> (String, [String]) = { ($1, $2) }
    ) throws -> PathResult {
        let statistics = [ParleyNames.talker, ParleyNames.listener].map { "\(directory)/parley-\($0)-m2e.json" }
        var panes: [BenchPane] = []
        defer { panes.forEach { $0.close() } }
        for (index, (name, devices)) in [
            (ParleyNames.talker, ["--speaker", "none"]), (ParleyNames.listener, ["--audio", "silence"]),
        ].enumerated() {
            panes.append(
                try joinPane(
                    tools: tools, sound: sound, directory: directory,
                    server: index == 0 ? servers.talker : servers.listener, name: name,
                    arguments: devices + joinArguments, statistics: statistics[index]
                ) { wrap(index == 1, $0, $1) })
        }
        func read(_ index: Int) -> LatencyFields? { try? LatencyFields.read(path: statistics[index]) }
        do {
            try CallBench.waitUntil(seconds: 30, "the Parley listener playing the talker's audio") {
                (read(1)?.peer(ParleyNames.talker)?.audioPlayed ?? 0) > 0
            }
        } catch {
            func log(_ name: String) -> String {
                let text = (try? String(contentsOfFile: "\(directory)/parley-\(name)-m2e.log", encoding: .utf8)) ?? ""
                return String(text.suffix(600))
            }
            throw CallBenchError.unexpected(
                "\(error)\nlistener's pane:\n\(panes[1].text())\nits log: \(log(ParleyNames.listener))\n"
                    + "talker's pane:\n\(panes[0].text())\nits log: \(log(ParleyNames.talker))")
        }
        if soundAlone {
            // As Chromium's page sends the microphone alone: no video queues ahead of the voice on a slow link.
            for pane in panes { try pane.send(keys: ["v"]) }
            func framesSent() -> Int? { (try? CallStatisticsFile(path: statistics[0]).read())?.videoFramesSent }
            Thread.sleep(forTimeInterval: 1.5)  // the next statistics write is after the key
            let first = framesSent()
            Thread.sleep(forTimeInterval: 2.2)  // two more writes
            guard let first, framesSent() == first else {
                throw CallBenchError.unexpected("the Parley talker still sends video after `v`: \(panes[0].text())")
            }
        }
        Thread.sleep(forTimeInterval: warmUp)
        let before = read(1)
        let (matches, streams) = try recorder.clicks()
        // The next statistics write covers the whole train.
        Thread.sleep(forTimeInterval: 1.1)
        let (talker, listener) = (read(0), read(1))
        var notes: [String] = []
        if let before, let listener, let now = listener.peer(ParleyNames.talker),
            let then = before.peer(ParleyNames.talker)
        {
            let concealed = now.concealments - then.concealments
            let underruns = listener.speakerUnderruns - before.speakerUnderruns
            notes.append(
                goalNote(
                    "nothing concealed and no speaker underrun at Parley's listener during the clicks",
                    met: concealed == 0 && underruns == 0,
                    "\(concealed) frames concealed, \(underruns) speaker underruns, "
                        + "\(listener.speakerDropped - before.speakerDropped) speaker blocks dropped, "
                        + "\(now.audioPlayed - then.audioPlayed) frames played"))
        } else {
            notes.append(
                "Goal: nothing concealed and no speaker underrun at Parley's listener during the clicks: not "
                    + "measured (no statistics from the listener).")
        }
        return PathResult(
            path: .parley, label: label, matches: matches, notes: notes, streams: streams,
            parleyStatistics: (talker, listener, before))
    }

    /// One `parley join` of the mouth-to-ear room as `name` in a tmux pane on the sound server (`arguments` after the
    /// common ones: its devices), 160x120 synthetic video, echo cancellation off, statistics written to `statistics`;
    /// the command passed through `wrap`.
    static func joinPane(
        tools: Tools, sound: SoundServer, directory: String, server: String, name: String, arguments: [String],
        statistics: String, wrap: (String, [String]) -> (String, [String]) = { ($0, $1) }
    ) throws -> BenchPane {
        let environment = sound.clientEnvironment(home: directory, sink: Device.ear, source: Device.microphone)
            .merging(["TERM": "tmux-256color", "LANG": "C.UTF-8"]) { $1 }
        let inner = ChildEnvironment.command(
            environment: environment, program: tools.parley,
            arguments: [
                "join", "mouth-to-ear", "--server", server, "--name", name, "--profile", "160x120",
                "--video", "synthetic", "--no-echo-cancel", "--log", "\(directory)/parley-\(name)-m2e.log",
                "--log-level", "warning", "--stats-file", statistics, "--known-relays",
                "\(directory)/known_relays-\(name)",
            ] + arguments)
        let command = wrap(inner.path, inner.arguments)
        return try BenchPane(
            command: ([command.0] + command.1).map(ResultsPage.shellQuoted).joined(separator: " "),
            columns: CallBench.paneColumns, rows: CallBench.paneRows, tmux: tools.tmux, directory: directory)
    }

    // MARK: - baresip

    /// A baresip configuration for one side of the audio-only call: Opus 32 kbit/s mono as in the call benchmark
    /// (VOIP, in-band FEC), the pulse module on the given source and player, baresip's default jitter buffer
    /// (5–10 frames), a console on UDP.
    static func baresipConfig(
        sipPort: UInt16, consolePort: UInt16, rtpPorts: ClosedRange<Int>, source: String, player: String
    ) -> String {
        """
        poll_method\t\tepoll
        sip_listen\t\t127.0.0.1:\(sipPort)
        net_interface\t\t127.0.0.1
        call_local_timeout\t120
        audio_player\t\tpulse,\(player)
        audio_source\t\tpulse,\(source)
        audio_alert\t\tpulse,\(Device.void)
        ausrc_srate\t\t48000
        auplay_srate\t\t48000
        ausrc_channels\t\t1
        auplay_channels\t\t1
        audio_level\t\tno
        rtp_ports\t\t\(rtpPorts.lowerBound)-\(rtpPorts.upperBound)
        rtcp_mux\t\tyes
        jitter_buffer_delay\t5-10
        rtp_stats\t\tno
        statmode_default\toff
        module_path\t\t\(CallBench.baresipModules)
        module\t\t\tcons.so
        module\t\t\topus.so
        module\t\t\tpulse.so
        module_tmp\t\taccount.so
        module_app\t\tmenu.so
        cons_listen\t\t127.0.0.1:\(consolePort)
        opus_bitrate\t\t32000
        opus_stereo\t\tno
        opus_sprop_stereo\tno
        opus_inbandfec\t\tyes
        opus_application\tvoip
        opus_complexity\t\t\(CallBench.opusComplexity)

        """
    }

    /// Two baresip 1.0.0 calling each other on 127.0.0.1, audio only: alice talks (the microphone; she plays into
    /// the void), bob listens (a silent microphone; the speaker).
    static func baresip(tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder) throws
        -> PathResult
    {
        let ports = freePorts(4)
        var base = 30_000
        for _ in 0..<50 {
            let candidate = 30_000 + 20 * Int.random(in: 0..<1000)
            if udpPortsFree(from: UInt16(candidate), count: 20) {
                base = candidate
                break
            }
        }
        let sides = [
            (name: "alice", sip: ports[0], console: ports[2], source: Device.microphone, player: Device.void),
            (name: "bob", sip: ports[1], console: ports[3], source: Device.silence, player: Device.ear),
        ]
        var folders: [String] = []
        for (index, side) in sides.enumerated() {
            let folder = "\(directory)/m2e-baresip-\(side.name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let config = baresipConfig(
                sipPort: side.sip, consolePort: side.console, rtpPorts: (base + 10 * index)...(base + 10 * index + 9),
                source: side.source, player: side.player)
            let answer = side.name == "bob" ? ";answermode=auto" : ""
            let account = "<sip:\(side.name)@127.0.0.1:\(side.sip)>;regint=0\(answer);audio_codecs=opus\n"
            guard FileManager.default.createFile(atPath: folder + "/config", contents: Data(config.utf8)),
                FileManager.default.createFile(atPath: folder + "/accounts", contents: Data(account.utf8))
            else { throw CallBenchError.unexpected("cannot write baresip's configuration in \(folder)") }
            folders.append(folder)
        }
        func start(_ index: Int, _ extra: [String]) throws -> BackgroundProcess {
            let command = ChildEnvironment.command(
                environment: sound.clientEnvironment(
                    home: folders[index], sink: Device.ear, source: Device.microphone),
                program: tools.baresip, arguments: ["-f", folders[index]] + extra)
            return try BackgroundProcess(
                command.path, command.arguments, outputPath: "\(directory)/m2e-baresip-\(sides[index].name).log")
        }
        var children: [BackgroundProcess] = []
        defer { children.forEach { $0.stop() } }
        let bob = try start(1, [])
        children.append(bob)
        guard bob.waitForOutput(seconds: 15, { $0.contains("baresip is ready") }) else {
            throw CallBenchError.timedOut("baresip (bob) did not start: \(bob.output.suffix(600))")
        }
        let alice = try start(0, ["-e", "/dial sip:bob@127.0.0.1:\(sides[1].sip)"])
        children.append(alice)
        try CallBench.waitUntil(seconds: 30, "both baresip clients receiving audio") {
            children.allSatisfy { $0.output.contains("incoming rtp for 'audio' established") }
        }
        Thread.sleep(forTimeInterval: warmUp)
        let version =
            bob.output.firstMatch(of: /baresip v(\d+\.\d+\.\d+)/).map { " " + String($0.1) } ?? ""
        let (matches, streams) = try recorder.clicks()
        return PathResult(
            path: .baresip,
            label: "baresip\(version): two instances on 127.0.0.1, pulse module, Opus 32 kbit/s, audio only",
            matches: matches, streams: streams)
    }

    // MARK: - Chromium

    /// The page of the Chromium row: the microphone (processing off) sent by one RTCPeerConnection to another in
    /// the same page, the received track played by an `<audio>` element. It logs `PARLEYBENCH playing` once the
    /// element plays, and once a second the receiver's packets, concealment events and average jitter-buffer delay.
    static let chromiumPage = """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>Parley mouth-to-ear</title></head>
        <body><audio id="ear" autoplay></audio>
        <script>
        function report(text) { console.log('PARLEYBENCH ' + text); }
        function fail(error) { report('error=' + encodeURIComponent(String((error && error.stack) || error))); }
        window.onerror = (message) => fail(message);
        async function main() {
          const microphone = await navigator.mediaDevices.getUserMedia({ audio: {
            echoCancellation: false, noiseSuppression: false, autoGainControl: false, channelCount: 1 } });
          const talker = new RTCPeerConnection(), listener = new RTCPeerConnection();
          talker.onicecandidate = (event) => { if (event.candidate) listener.addIceCandidate(event.candidate).catch(fail); };
          listener.onicecandidate = (event) => { if (event.candidate) talker.addIceCandidate(event.candidate).catch(fail); };
          const ear = document.getElementById('ear');
          listener.ontrack = (event) => {
            ear.srcObject = new MediaStream([event.track]);
            ear.play().then(() => report('playing')).catch(fail);
          };
          talker.addTrack(microphone.getAudioTracks()[0]);
          await talker.setLocalDescription(await talker.createOffer());
          await listener.setRemoteDescription(talker.localDescription);
          await listener.setLocalDescription(await listener.createAnswer());
          await talker.setRemoteDescription(listener.localDescription);
          setInterval(async () => {
            (await listener.getStats()).forEach((s) => {
              if (s.type !== 'inbound-rtp' || s.kind !== 'audio') return;
              const jitter = s.jitterBufferEmittedCount ? 1000 * s.jitterBufferDelay / s.jitterBufferEmittedCount : 0;
              report('stats packets=' + s.packetsReceived + ' concealments=' + (s.concealmentEvents || 0)
                + ' jitterMs=' + jitter.toFixed(1));
            });
          }, 1000);
        }
        main().catch(fail);
        </script></body></html>

        """

    /// One `PARLEYBENCH stats` line of the page: packets received, concealment events, average jitter-buffer delay.
    struct ChromiumStats: Equatable {
        var packets: Int
        var concealments: Int
        var jitterMilliseconds: Double

        /// Every stats line in Chromium's output, oldest first; throws the page's own error reports.
        static func all(in output: String) throws -> [ChromiumStats] {
            try output.split(separator: "\n").compactMap { line in
                if let error = line.firstMatch(of: /PARLEYBENCH error=([^" ]*)/) {
                    let message = String(error.1)
                    throw CallBenchError.unexpected(
                        "the mouth-to-ear page failed: \(message.removingPercentEncoding ?? message)")
                }
                guard
                    let match = line.firstMatch(
                        of: /PARLEYBENCH stats packets=(\d+) concealments=(\d+) jitterMs=([0-9.]+)/),
                    let packets = Int(match.1), let concealments = Int(match.2), let jitter = Double(match.3)
                else { return nil }
                return ChromiumStats(packets: packets, concealments: concealments, jitterMilliseconds: jitter)
            }
        }
    }

    /// A Chromium tab under Xvfb on the sound server's default devices, running `chromiumPage`.
    static func chromium(tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder) throws
        -> PathResult
    {
        let pagePath = directory + "/mouth-to-ear.html"
        guard FileManager.default.createFile(atPath: pagePath, contents: Data(chromiumPage.utf8)) else {
            throw CallBenchError.unexpected("cannot write the mouth-to-ear page \(pagePath)")
        }
        let tab = try ChromiumTab(
            tools: tools, sound: sound, directory: directory, url: "file://" + pagePath, sink: Device.ear,
            source: Device.microphone)
        defer { tab.stop() }
        let browser = tab.browser
        func stats() throws -> [ChromiumStats] {
            if let status = browser.waitForExit(seconds: 0) {
                throw CallBenchError.unexpected(
                    "Chromium exited (status \(status)): \(browser.output.suffix(800))")
            }
            return try ChromiumStats.all(in: browser.output)
        }
        var failure: (any Error)?
        try CallBench.waitUntil(seconds: 45, "the Chromium tab playing its received audio") {
            do {
                let playing = browser.output.contains("PARLEYBENCH playing")
                return try playing && (stats().last?.packets ?? 0) > 0
            } catch {
                failure = error
                return true
            }
        }
        if let failure { throw failure }
        tab.noteProcesses()
        Thread.sleep(forTimeInterval: warmUp)
        let before = try stats().last
        let (matches, streams) = try recorder.clicks()
        Thread.sleep(forTimeInterval: 1.1)
        let after = try stats().last
        tab.noteProcesses()
        var notes: [String] = []
        if let before, let after {
            notes.append(
                "Chromium's receiver during the clicks: \(after.concealments - before.concealments) concealment "
                    + "events, jitter buffer \(formatted(after.jitterMilliseconds)) ms on average (its own "
                    + "`jitterBufferDelay`).")
        }
        return PathResult(
            path: .chromium,
            label:
                "Chromium\(chromiumVersion(tools, in: directory)) tab: two RTCPeerConnections in one page, `<audio>` element, audio only",
            matches: matches, notes: notes, streams: streams)
    }

    // MARK: - PulseAudio's own loop

    /// PulseAudio's `module-loopback` from the microphone to the speaker, at the latency it is asked for.
    static let loopbackMilliseconds = 20

    /// The floor: the sound server copying the microphone to the speaker itself, no client, codec or network.
    static func pulseLoop(sound: SoundServer, recorder: ClickRecorder) throws -> PathResult {
        let loaded = try sound.pactl([
            "load-module", "module-loopback", "source=\(Device.microphone)", "sink=\(Device.ear)",
            "latency_msec=\(loopbackMilliseconds)", "source_dont_move=true", "sink_dont_move=true",
        ])
        guard loaded.status == 0, let module = Int(loaded.output.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw CallBenchError.unexpected("pactl load-module module-loopback failed: \(loaded.output)")
        }
        defer { _ = try? sound.pactl(["unload-module", "\(module)"]) }
        Thread.sleep(forTimeInterval: warmUp)
        let (matches, streams) = try recorder.clicks()
        return PathResult(
            path: .pulseLoop,
            label: "PulseAudio's own loop: module-loopback microphone → speaker, latency_msec=\(loopbackMilliseconds)",
            matches: matches, streams: streams)
    }
}
