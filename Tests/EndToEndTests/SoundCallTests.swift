import Foundation
import ParleyEngine
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import Testing

/// A call heard through a real sound server: speech goes into alice's microphone (a headless PulseAudio source),
/// through the relay, out of bob's speaker (a null sink), and is recorded from that sink's monitor. Both ends are the
/// real `parley join` drawing in tmux, with their default devices (ALSA `default` → PulseAudio).
@Suite(.serialized, .lane(.realTime))
struct SoundCallTests {
    static let speech = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/media/speech.wav").path

    @Test("parley devices lists the sound server's devices by the names --mic and --speaker take, the default marked")
    func listing() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let sound = try await SoundServer.start()
        let home = NSTemporaryDirectory() + "parley-devices-\(getpid())"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let command = ChildEnvironment.command(
            environment: sound.clientEnvironment(home: home), program: parley, arguments: ["devices"])
        let result = try ChildProcess.run(command.path, command.arguments)
        withExtendedLifetime(sound) {}
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let microphones = try #require(lines.firstIndex(of: "Microphones (--mic NAME):"), "\(result.output)")
        let speakers = try #require(lines.firstIndex(of: "Speakers (--speaker NAME):"), "\(result.output)")
        let cameras = try #require(lines.firstIndex(of: "Cameras (--camera NAME):"), "\(result.output)")
        #expect(microphones < speakers && speakers < cameras)
        // Through the sound server itself (libpulse), by the descriptions its settings show, the defaults marked.
        #expect(
            lines[microphones..<speakers].contains {
                $0.hasPrefix("* \"Monitor of Parley-test-microphone-feed\" (parley_microphone.monitor, ")
            }, "\(result.output)")
        #expect(
            lines[speakers..<cameras].contains { $0.hasPrefix("* \"Parley-test-speaker\" (parley_speaker, ") },
            "\(result.output)")
        #expect(lines[(cameras + 1)...].first?.contains("none found") == true, "no camera on this machine")
    }

    @Test("join and the lobby open the default microphone and speaker; demo and bot keep synthetic sources")
    func whichCommandsOpenDevices() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let sound = try await SoundServer.start()
        let folder = NSTemporaryDirectory() + "parley-device-choice-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try BackgroundProcess(parley, ["serve", "--port", "0", "--insecure", "--log-level", "error"])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let environment = sound.clientEnvironment(home: folder).merging(
            ["TERM": "tmux-256color", "LANG": "C.UTF-8"]) { $1 }
        let variables = environment.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        /// Streams the sound server has open: (recording, playing).
        func streams() throws -> (recording: Int, playing: Int) {
            (
                try sound.recordingStreams(),
                try sound.pactl(["list", "short", "sink-inputs"]).output.split(separator: "\n").count
            )
        }
        #expect(try streams() == (0, 0))

        // Each command runs on its own in a pane; after it shows its call, the sound server's streams are counted.
        let cases: [(command: String, screen: String, expected: (Int, Int))] = [
            ("join devices --server 127.0.0.1:\(port) --insecure --name carol", "carol", (1, 1)),
            ("--server 127.0.0.1:\(port) --insecure --name dave --room devices", "[ Join ]", (0, 0)),
            ("demo --bots 1 --insecure", "ana", (0, 0)),
        ]
        for (command, screen, expected) in cases {
            let pane = try TmuxPane(
                command: "sh -c \"env -i \(variables) \(parley) \(command) --log \(folder)/run.log; sleep 60\"",
                columns: 100, rows: 30)
            try await pane.text("parley \(command) showing \(screen)", within: .seconds(20)) {
                $0.contains { $0.contains(screen) }
            }
            try await poll(
                "parley \(command) holding \(expected) streams (recording, playing)", timeout: .seconds(5),
                every: .milliseconds(100)
            ) {
                try streams()
            } until: {
                $0 == expected
            }
            if command.hasPrefix("--server") {
                // The lobby itself opens nothing; joining from it opens both.
                try pane.send(["Enter"])
                try await poll(
                    "one recording and one playing stream after joining from the lobby", timeout: .seconds(12),
                    every: .milliseconds(100)
                ) {
                    try streams()
                } until: {
                    $0 == (1, 1)
                }
            }
            try pane.send(["q"])
            try pane.send(["y"])
            try await poll("no streams after leaving \(command)", timeout: .seconds(6), every: .milliseconds(100)) {
                try streams()
            } until: {
                $0 == (0, 0)
            }
        }

        let botCommand = ChildEnvironment.command(
            environment: environment, program: parley,
            arguments: [
                "bot", "devices", "--server", "127.0.0.1:\(port)", "--insecure", "--name", "erin", "--duration", "3",
                // Its events (the join among them) in its output, to watch from the moment it is in the call.
                "--log-level", "info",
            ])
        let bot = try BackgroundProcess(botCommand.path, botCommand.arguments)
        try await bot.output("the bot in the call", within: .seconds(10)) { $0.contains("joined(localID:") }
        // Watched for the rest of its 3 s call, each look taken while it still runs, not at one moment of it.
        var seen: [(recording: Int, playing: Int)] = []
        try await waitUntil("the bot to end its 3 s call", timeout: .seconds(10), every: .milliseconds(100)) {
            let look = try streams()
            guard bot.exitStatusNow() == nil else { return true }
            seen.append(look)
            return false
        }
        #expect(!seen.isEmpty, "no look while the bot was in the call")
        #expect(seen.allSatisfy { $0 == (0, 0) }, "the bot opened a device: \(seen)")
        #expect(bot.exitStatusNow() == 0, "\(bot.output)")
        withExtendedLifetime(sound) {}
    }

    @Test("named sinks are listed by name, --speaker Headset plays only there, device changes are said")
    func namedSpeakers() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let sound = try await SoundServer.start()
        let folder = NSTemporaryDirectory() + "parley-named-sinks-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (sink, description) in [("hs", "Headset"), ("laptop", "Speakers")] {
            try sound.pactl([
                "load-module", "module-null-sink", "sink_name=\(sink)", "rate=48000",
                "sink_properties=device.description=\(description)",
            ])
        }
        let environment = sound.clientEnvironment(home: folder)
        let listing = ChildEnvironment.command(environment: environment, program: parley, arguments: ["devices"])
        let listed = try ChildProcess.run(listing.path, listing.arguments)
        #expect(listed.output.contains("  \"Headset\" (hs, 2 ch, 48000 Hz, PulseAudio)"), "\(listed.output)")
        #expect(listed.output.contains("  \"Speakers\" (laptop, 2 ch, 48000 Hz, PulseAudio)"), "\(listed.output)")

        let relay = try BackgroundProcess(parley, ["serve", "--port", "0", "--insecure", "--log-level", "error"])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let variables = environment.merging(["TERM": "tmux-256color", "LANG": "C.UTF-8"]) { $1 }
            .sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        func join(_ name: String, _ options: String) throws -> TmuxPane {
            try TmuxPane(
                command: "sh -c \"env -i \(variables) \(parley) join named --server 127.0.0.1:\(port) --insecure "
                    + "--name \(name) --video synthetic --log \(folder)/\(name).log \(options); sleep 60\"",
                columns: 100, rows: 30)
        }
        // Alice's synthetic voice (no microphone needed); bob listens on the headset by its name.
        let alice = try join("alice", "--audio synthetic --speaker none")
        let bob = try join("bob", "--audio silence --speaker Headset")
        defer {
            _ = try? alice.send(["q", "y"])
            _ = try? bob.send(["q", "y"])
        }
        try await bob.text("bob sees alice", within: .seconds(20)) { $0.contains { $0.contains("alice") } }
        func rms(_ samples: ArraySlice<Int16>) -> Double {
            (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
        }
        func rms(_ samples: [Int16]) -> Double { rms(samples[...]) }
        // Alice is heard on the headset first (her last tenth of a second there as loud as the test asks below).
        let lookout = try await sound.startRecording(from: "hs.monitor", to: folder + "/lookout.wav")
        try await poll("alice heard on the headset", timeout: .seconds(10), every: .milliseconds(100)) {
            rms(lookout.samplesSoFar().suffix(4_800))
        } until: {
            $0 > 300
        }
        _ = try lookout.stop()
        let headset = try await sound.startRecording(from: "hs.monitor", to: folder + "/headset.wav")
        let speakers = try await sound.startRecording(from: "laptop.monitor", to: folder + "/speakers.wav")
        // Three seconds of each sink, counted in what the recorders wrote.
        try await waitUntil("3 s recorded from each sink", timeout: .seconds(10), every: .milliseconds(100)) {
            headset.samplesRecorded >= 48_000 * 3 && speakers.samplesRecorded >= 48_000 * 3
        }
        let heard = try headset.stop()
        let elsewhere = try speakers.stop()
        #expect(heard.count >= 48_000 * 2 && rms(heard) > 300, "the headset heard alice: RMS \(rms(heard))")
        #expect(elsewhere.count >= 48_000, "recorded \(elsewhere.count) samples from the other sink")
        #expect(elsewhere.allSatisfy { $0 == 0 }, "the other sink stayed silent: RMS \(rms(elsewhere))")

        // A device plugged in, made the default, and pulled out again: each said in bob's chat pane.
        let module = try sound.pactl([
            "load-module", "module-null-sink", "sink_name=usb", "rate=48000",
            "sink_properties=device.description=USB-Headset",
        ]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        for (change, line) in [
            ({ () }, "Speaker plugged in: USB-Headset"),
            ({ try sound.pactl(["set-default-sink", "usb"]) }, "Default speaker is now USB-Headset"),
            ({ try sound.pactl(["unload-module", module]) }, "Speaker unplugged: USB-Headset"),
        ] as [(() throws -> Void, String)] {
            try change()
            try await bob.text("\"\(line)\" in bob's chat", within: .seconds(10)) { $0.contains { $0.contains(line) } }
        }
        withExtendedLifetime(sound) {}
    }

    /// How long the call settles before the speech, from when bob plays alice's audio: the jitter buffer's first
    /// adaptation window (2 s) and the catch-up after it (see the test). Time the product's timers take, not an event.
    static let settleWindow = Duration.seconds(8)

    /// Speaker underruns, and separately concealed frames, allowed in 30 s of speech (see the test).
    static let speakerGapsAllowed = 3

    @Test("30 s of speech from one microphone reaches the other speaker intact: correlation ≥ 0.9, no dropouts")
    func speechThroughTheRelay() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let sound = try await SoundServer.start()
        let folder = NSTemporaryDirectory() + "parley-sound-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // PARLEY_KEEP_SOUND=1 keeps the recordings, logs and statistics for a look afterwards; a call that failed
        // keeps them anyway (a failure beside a build is rare and cannot be made again at will).
        var keepFolder = ProcessInfo.processInfo.environment["PARLEY_KEEP_SOUND"] != nil
        defer {
            if keepFolder {
                print("sound path: the recordings, logs and statistics are in \(folder)")
            } else {
                try? FileManager.default.removeItem(atPath: folder)
            }
        }

        let relay = try BackgroundProcess(
            parley,
            [
                "serve", "--port", "0", "--log-level", "error",
                "--state-dir", folder + "/relay",
            ])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })

        // The recorder listens on bob's speaker before anyone joins: a recording stream attached to a sink mid-call
        // makes the sound server lower that sink's latency under the streams already playing, and bob's speaker ran
        // dry twice right then (counted by the server as his underruns, at the instant the test started listening).
        let recording = try await sound.startRecording(to: folder + "/heard.wav")
        let recordingStarted = Date()
        func join(_ name: String, _ options: String) throws -> TmuxPane {
            let environment = sound.clientEnvironment(home: folder).merging(
                ["TERM": "tmux-256color", "LANG": "C.UTF-8"]) { $1 }
            let variables = environment.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(
                separator: " ")
            let command =
                "env -i \(variables) \(parley) join sound --server 127.0.0.1:\(port) --name \(name) "
                + "--video synthetic --profile 320x240 --log \(folder)/\(name).log \(options); echo EXITED rc=$?; sleep 60"
            return try TmuxPane(command: "sh -c \"\(command)\"", columns: 100, rows: 30)
        }
        // Both ends of the call share this machine's two cores (with the relay, tmux and the sound server), where each
        // end of a real call has a machine of its own: they send 320x240 at 15 fps, not the default 640x360 at 30,
        // which at two encodes, two decodes and two drawing clients left the media loops no time to spare.
        // Alice talks into her default microphone and plays nothing; bob only listens on the default speaker and keeps
        // statistics. Noise suppression reshapes the waveform by design (that is its job, measured on its own by the
        // echo tests and `parley-bench echo`), so this test of the path itself runs alice without it.
        let alice = try join("alice", "--speaker none --no-echo-cancel --stats-file \(folder)/alice.json")
        let bob = try join("bob", "--audio silence --stats-file \(folder)/bob.json")
        defer {
            _ = try? alice.send(["q", "y"])
            _ = try? bob.send(["q", "y"])
        }
        try await bob.text("bob sees alice", within: .seconds(20)) { lines in lines.contains { $0.contains("alice") } }
        // The call settles first: two clean seconds lower bob's jitter buffer target to its floor, and the excess
        // that leaves is played away at 0.25 % over a few seconds (a pitch change nobody hears, but one that this
        // sample-exact comparison would count against the path). That adaptation runs on the product's own timers,
        // so the wait is time itself, counted from when bob plays alice's audio.
        try await poll("bob playing alice's audio (his statistics)", timeout: .seconds(10), every: .milliseconds(100)) {
            (try? CallStatisticsFile(path: folder + "/bob.json").read())?.peers.first { $0.name == "alice" }?
                .audioPlayed ?? 0
        } until: {
            $0 > 0
        }
        try await Task.sleep(for: Self.settleWindow)
        // Counters before the speech: what the call's start cost is printed, the speech itself must cost nothing.
        let bobBefore = try CallStatisticsFile(path: folder + "/bob.json").read()
        let aliceBefore = try CallStatisticsFile(path: folder + "/alice.json").read()
        print(
            "sound path: before the speech, bob's speaker underran \(bobBefore.speakerUnderruns) (mix late) and "
                + "\(bobBefore.speakerDeviceUnderruns) (sound server) times; alice's microphone overran "
                + "\(aliceBefore.microphoneOverruns) times")
        // The sample twice, as one file: 30 s of speech without a gap.
        let input = try WAVAudio.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: Self.speech)))).samples
        let sent = input + input
        let talk = folder + "/talk.wav"
        try Data(WAVAudio(sampleRate: 48_000, channels: 1, samples: sent).encoded()).write(
            to: URL(fileURLWithPath: talk))
        // Alice's own tile shows her microphone's level while she talks.
        let playStarted = Date()
        let speaker = try sound.play(wavPath: talk)
        do {
            // A look every 250 ms, as before: each runs tmux, and the speech is being measured meanwhile.
            try await alice.text("alice's meter moving", within: .seconds(10), every: .milliseconds(250)) {
                $0.contains { $0.contains(" mic █") }
            }
        } catch {
            Issue.record(error)  // and the speech is still compared
        }
        #expect(await speaker.exitStatus(within: .seconds(60)) == 0, "paplay: \(speaker.output)")
        // The speech's last second reaches bob's speaker: one more second of it recorded.
        let recordedAtEnd = recording.samplesRecorded
        try await waitUntil("one more second recorded from bob's speaker", timeout: .seconds(10)) {
            recording.samplesRecorded >= recordedAtEnd + 48_000
        }
        // What was heard from a quarter second before the speech was played in (the path's delay is measured from
        // there).
        let lead = max(0, Int((playStarted.timeIntervalSince(recordingStarted) - 0.25) * Double(SpeechMatch.rate)))
        let heard = Array(try recording.stop().dropFirst(lead))

        let match = SpeechMatch(sent: sent, heard: heard)
        #expect(match.delaySeconds > 0 && match.delaySeconds < 1.5, "delay \(match.delaySeconds) s")
        print(
            "sound path: delay \(match.delaySeconds) s (moved \(match.delayDrift) s, in steps of \(match.delaySteps) ms), "
                + "correlation \(match.correlation), worst quarter second \(match.worstWindow)")
        #expect(
            match.correlation >= 0.9, "correlation \(match.correlation) (worst quarter second \(match.worstWindow))")
        #expect(match.dropouts.isEmpty, "silent 20 ms frames where speech was sent, at seconds \(match.dropouts)")
        #expect(match.speechSeconds >= 25, "compared \(match.speechSeconds) s of speech")
        // Each step of the delay is a late mix or a concealed frame, of which 3 each are allowed below.
        #expect(
            match.delaySteps.count <= Self.speakerGapsAllowed * 2, "the delay stepped by \(match.delaySteps) ms")
        // A packet that missed its turn is concealed, and a speaker underrun is a hole shorter than a frame, which the
        // level check above cannot always tell from speech: bob's own counters say how many there were.
        let stats = try CallStatisticsFile(path: folder + "/bob.json").read()
        let mixLate = stats.speakerUnderruns - bobBefore.speakerUnderruns
        let ranDry = stats.speakerDeviceUnderruns - bobBefore.speakerDeviceUnderruns
        let fromAlice = stats.peers.first { $0.name == "alice" }
        let concealedBefore = bobBefore.peers.first { $0.name == "alice" }?.concealments ?? 0
        let concealed = (fromAlice?.concealments ?? 0) - concealedBefore
        print(
            "sound path: during the speech, bob's speaker underran \(mixLate) (mix late) and \(ranDry) (sound server) "
                + "times and dropped \(stats.speakerDropped) blocks; play-out buffer "
                + "\(stats.speakerLatencyMs.map { "\($0) ms" } ?? "unknown"); \(stats.videoFramesDroppedBusy) of bob's "
                + "camera frames dropped while the one before was encoding; \(concealed) of alice's frames concealed")
        // The speaker's buffer grows after each underrun and the jitter buffer after each late packet (as NetEq's
        // does): on this shared machine the first late event of a stretch is the price of their short defaults, so
        // a few are allowed, each named; a systematic fault is not (the mix waiting behind video frames cost 69 to
        // 184 a call before the camera got its own thread). The listener-side checks above allow no gap at all.
        #expect(
            mixLate + ranDry <= Self.speakerGapsAllowed,
            """
            during the speech bob's speaker wrote \(mixLate) blocks of silence (the mix came late) and the sound \
            server ran it dry \(ranDry) times: over \(Self.speakerGapsAllowed)
            """)
        let talker = try CallStatisticsFile(path: folder + "/alice.json").read()
        let overruns = talker.microphoneOverruns - aliceBefore.microphoneOverruns
        print(
            "sound path: during the speech alice's microphone overran \(overruns) times, hands over every "
                + "\(talker.microphoneLatencyMs.map { "\($0) ms" } ?? "?")")
        #expect(
            overruns == 0,
            "during the speech the sound server dropped alice's microphone audio \(overruns) times (not read in time)")
        // The device threads ask for real-time scheduling; as root (CI) it is granted, elsewhere they say what they got.
        let expected: Set<String> = geteuid() == 0 ? ["realtime"] : ["realtime", "raised", "normal"]
        #expect(
            stats.speakerThread.map(expected.contains) == true, "bob's speaker thread: \(stats.speakerThread ?? "none")"
        )
        #expect(
            talker.microphoneThread.map(expected.contains) == true,
            "alice's microphone thread: \(talker.microphoneThread ?? "none")")
        // The media loops that mix each block (bob) and send each microphone block (alice) ask for nice −11 only
        // (granted to root), never real-time. Alice's, left ordinary, sent late enough for bob to conceal 7 frames
        // and the test to fail once in 12 idle runs.
        let media: Set<String> = geteuid() == 0 ? ["raised"] : ["raised", "normal"]
        #expect(stats.mediaThread.map(media.contains) == true, "bob's media loop: \(stats.mediaThread ?? "none")")
        #expect(
            talker.mediaThread.map(media.contains) == true, "alice's media loop: \(talker.mediaThread ?? "none")")
        // Their whole sessions (each client in a tmux pane of its own) weigh against the build on the other core
        // as a raised nice value too: with autogroups a thread's nice value counts only inside its session.
        // A kernel without autogroups has no session group to raise, and the stats say none. (This test's own process
        // may have no group to read, as on CI where it runs in the first process's session, but each tmux pane is a
        // session of its own: the file's presence is the kernel's word.)
        if FileManager.default.fileExists(atPath: "/proc/self/autogroup") {
            #expect(stats.sessionGroup.map(media.contains) == true, "bob's session: \(stats.sessionGroup ?? "none")")
            #expect(
                talker.sessionGroup.map(media.contains) == true, "alice's session: \(talker.sessionGroup ?? "none")")
        } else {
            #expect(stats.sessionGroup == nil && talker.sessionGroup == nil, "no session groups on this kernel")
        }
        #expect((fromAlice?.audioPlayed ?? 0) >= 1_400, "bob played alice's audio: \(stats.peers)")
        // Where a concealed frame's packet was held up: alice's microphone blocks reaching her media loop late (her
        // device thread or media loop), or her packets reaching bob late though they left on time (the relay, the
        // kernel, bob's loop).
        let leftLate = (talker.microphoneBlockGaps ?? 0) - (aliceBefore.microphoneBlockGaps ?? 0)
        let arrivedLate =
            (fromAlice?.audioArrivalGaps ?? 0)
            - (bobBefore.peers.first { $0.name == "alice" }?.audioArrivalGaps ?? 0)
        let holdUps =
            "alice's microphone blocks left over 40 ms apart \(leftLate) times (longest in the call "
            + "\(talker.microphoneLongestBlockGapMs ?? 0) ms); her packets reached bob over 40 ms apart \(arrivedLate) "
            + "times (longest \(fromAlice?.longestAudioArrivalGapMs ?? 0) ms)"
        print("sound path: during the speech \(holdUps)")
        let peerBefore = bobBefore.peers.first { $0.name == "alice" }
        print(
            "sound path: during the speech bob's jitter buffer saw \((fromAlice?.audioLate ?? 0) - (peerBefore?.audioLate ?? 0)) "
                + "of alice's packets come after their turn (dropped; \((fromAlice?.audioLateKept ?? 0) - (peerBefore?.audioLateKept ?? 0)) more "
                + "played after the slots concealed before them), held \((fromAlice?.audioHeld ?? 0) - (peerBefore?.audioHeld ?? 0)) "
                + "slots to refill and dropped \((fromAlice?.audioDiscarded ?? 0) - (peerBefore?.audioDiscarded ?? 0)) "
                + "packets; its target went from \(peerBefore?.audioTargetMs ?? 0) to \(fromAlice?.audioTargetMs ?? 0) ms "
                + "and the delay from \(peerBefore?.audioDelayMs ?? 0) to \(fromAlice?.audioDelayMs ?? 0) ms")
        #expect(
            fromAlice != nil && concealed <= Self.speakerGapsAllowed,
            "concealed 20 ms frames during the speech (\(concealedBefore) before it); \(holdUps): \(stats.peers)")
        if match.correlation < 0.9 || !match.dropouts.isEmpty || concealed > Self.speakerGapsAllowed
            || mixLate + ranDry > Self.speakerGapsAllowed || overruns > 0
        {
            keepFolder = true
            try? FileManager.default.copyItem(atPath: sound.logPath, toPath: folder + "/pulseaudio.log")
            // The sound server's own account of the call: its streams' buffers and latencies as they ended.
            for (name, arguments) in [("sinks", ["list", "sinks"]), ("sources", ["list", "sources"])] {
                if let text = try? sound.pactl(arguments).output {
                    try? text.write(toFile: folder + "/pactl-\(name).txt", atomically: false, encoding: .utf8)
                }
            }
        }
        withExtendedLifetime(sound) {}
    }
}

/// How well a recording matches what was sent, over the full band at 48 kHz: delay by cross-correlation, then the
/// correlation of the two in quarter-second windows, the heard signal read at a delay followed every 50 ms (±3 ms a
/// step, plus 0.3 % of any pause) and interpolated in between, since the receiver's drift compensation moves it by up
/// to 1 ms a second and its catch-up after a hiccup or a lowered jitter target by up to 2.5 ms a second. One delay per
/// window was not enough: a sub-millisecond move inside a window misaligns its high frequencies (a 3-party recording
/// made while its recorder played an excess away scored 0.88 so, 0.93 followed). Measured here on the shipped speech:
/// libopus alone at Parley's 32 kbit/s gives 0.957 (it was about 0.89 through the path while FEC always planned for
/// 10 % loss; comparing below 2 kHz only, as this test once did, hid that).
struct SpeechMatch {
    var delaySeconds = 0.0
    /// How far the delay moved between the first and last speech window.
    var delayDrift = 0.0
    /// Steps of the delay the tracking found (ms each, + later): each needs a counted cause (a late mix, a concealed
    /// frame).
    var delaySteps: [Double] = []
    var correlation = 0.0
    var worstWindow = 1.0
    var speechSeconds = 0.0
    /// Seconds into the sent signal of 20 ms frames that carried speech but arrived as silence.
    var dropouts: [Double] = []

    static let rate = 48_000

    init(sent: [Int16], heard: [Int16]) {
        let x = sent.map(Double.init)
        let y = heard.map(Double.init)
        let rate = Self.rate
        // Coarse delay on 1 ms energy envelopes, then exact over two seconds of speech.
        func envelope(_ signal: [Double]) -> [Double] {
            stride(from: 0, to: signal.count - 47, by: 48).map { start in
                (0..<48).reduce(0) { $0 + abs(signal[start + $1]) }
            }
        }
        // Over the first six seconds only: the delay is measured exactly at 2–4 s below, and over the whole
        // recording a delay that moved (drift compensation, catch-up) smears the envelopes' peak away from it.
        let ex = Array(envelope(x).prefix(6000))
        let ey = envelope(y)
        var bestLag = 0
        var best = -Double.infinity
        for lag in 0..<min(3000, max(1, ey.count - ex.count / 2)) {
            var sum = 0.0
            for index in 0..<min(ex.count, ey.count - lag) { sum += ex[index] * ey[index + lag] }
            if sum > best {
                best = sum
                bestLag = lag
            }
        }
        func correlate(_ a: ArraySlice<Double>, _ b: ArraySlice<Double>) -> Double {
            let n = Double(a.count)
            let ma = a.reduce(0, +) / n
            let mb = b.reduce(0, +) / n
            var ab = 0.0
            var aa = 0.0
            var bb = 0.0
            for (p, q) in zip(a, b) {
                ab += (p - ma) * (q - mb)
                aa += (p - ma) * (p - ma)
                bb += (q - mb) * (q - mb)
            }
            return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
        }
        var lag = bestLag * 48
        var fine = -1.0
        for candidate in max(0, lag - 96)...(lag + 96) where candidate + rate * 4 <= y.count {
            let value = correlate(x[rate * 2..<rate * 4], y[(candidate + rate * 2)..<(candidate + rate * 4)])
            if value > fine {
                fine = value
                lag = candidate
            }
        }
        delaySeconds = Double(lag) / Double(rate)
        // The delay is followed every 50 ms (over 100 ms of sent speech at a time): ±3 ms from one step to the next,
        // and more across a pause, since the receiver may play a lasting excess away at up to 0.25 %
        // (PeerAudioPlayout's catch-up), which moves the delay by 2.5 ms over a second of silence.
        let trackWidth = rate / 10
        let baseFollow = rate * 3 / 1000
        /// Where within `reach` of the lag `centre` (every `step` samples) the heard signal best matches `window`
        /// (sent from `start`), and how well.
        func bestMatch(
            _ window: ArraySlice<Double>, from start: Int, around centre: Int, within reach: Int, by step: Int = 1
        )
            -> (value: Double, lag: Int)
        {
            var found = (value: -1.0, lag: centre)
            for lag in stride(from: centre - reach, through: centre + reach, by: step)
            where start + lag >= 0 && start + lag + trackWidth <= y.count {
                let value = correlate(window, y[(start + lag)..<(start + lag + trackWidth)])
                if value > found.value { found = (value, lag) }
            }
            return found
        }
        var tracked = lag
        var lastTracked = rate * 2
        var track: [(centre: Double, lag: Double)] = []
        for start in stride(from: 0, to: x.count - trackWidth, by: trackWidth / 2) {
            let window = x[start..<(start + trackWidth)]
            let rms = (window.reduce(0) { $0 + $1 * $1 } / Double(trackWidth)).squareRoot()
            let follow = baseFollow + Int(Double(abs(start - lastTracked)) * 0.003)
            guard rms > 300, start + tracked + follow + trackWidth <= y.count else { continue }
            lastTracked = start
            let (local, nearest) = bestMatch(window, from: start, around: tracked, within: follow)
            var localLag = nearest
            // A block of silence the speaker played (a late mix, counted) or a concealed frame moves everything after
            // it 20 ms later at once, which the ±3 ms steps cannot follow: once lost, every window after it compares
            // the wrong samples (a run with one late mix scored 0.60 so, though every half second of what was heard
            // matched the speech at 0.8–0.97 at the new delay). So a window that matches poorly is looked for ±30 ms
            // away, coarsely and then to the sample, and a clearly better match there is a step of the delay.
            if local < 0.6 {
                let coarse = bestMatch(window, from: start, around: tracked, within: rate * 30 / 1000, by: 8)
                let (wide, wideLag) = bestMatch(window, from: start, around: coarse.lag, within: 7)
                if wide >= 0.6 && wide > local + 0.2 && abs(wideLag - localLag) > follow {
                    localLag = wideLag
                    delaySteps.append(Double(wideLag - tracked) / Double(rate) * 1000)
                }
            }
            tracked = localLag
            track.append((Double(start + trackWidth / 2), Double(tracked)))
        }
        /// The delay at a sent sample: interpolated between the track's points (each belongs to its window's centre).
        func delay(at sample: Double) -> Double {
            var (low, high) = (0, track.count)  // the first point at or after `sample`, by bisection
            while low < high {
                let middle = (low + high) / 2
                if track[middle].centre < sample { low = middle + 1 } else { high = middle }
            }
            let after = low
            guard after < track.count else { return track.last?.lag ?? 0 }
            guard after > 0 else { return track[after].lag }
            let (a, b) = (track[after - 1], track[after])
            return a.lag + (b.lag - a.lag) * (sample - a.centre) / (b.centre - a.centre)
        }
        // Then a quarter second at a time wherever the sent signal has speech, the heard signal read at the delay of
        // each sample (within a quarter second of catch-up the delay moves 0.6 ms, enough to misalign the high
        // frequencies: a 3-party recording scored 0.88 with one delay per window, 0.93 so).
        let width = rate / 4
        var sum = 0.0
        var windows = 0
        for start in stride(from: 0, to: x.count - width, by: width) where !track.isEmpty {
            let window = x[start..<(start + width)]
            let rms = (window.reduce(0) { $0 + $1 * $1 } / Double(width)).squareRoot()
            guard rms > 300 else { continue }
            var heardWindow: [Double] = []
            heardWindow.reserveCapacity(width)
            for sample in start..<(start + width) {
                let position = Double(sample) + delay(at: Double(sample))
                let low = Int(position.rounded(.down))
                guard low >= 0, low + 1 < y.count else { break }
                let fraction = position - Double(low)
                heardWindow.append(y[low] * (1 - fraction) + y[low + 1] * fraction)
            }
            guard heardWindow.count == width else { continue }
            let score = correlate(window, heardWindow[...])
            sum += score
            windows += 1
            worstWindow = min(worstWindow, score)
        }
        correlation = windows > 0 ? sum / Double(windows) : 0
        speechSeconds = Double(windows) / 4
        // Dropouts: a 20 ms frame of clear speech (above -30 dBFS) heard 30 dB quieter or not at all, at the delay
        // followed above.
        let frame = rate / 50
        for start in stride(from: 0, to: x.count - frame, by: frame) {
            let here = track.isEmpty ? lag : Int(delay(at: Double(start)).rounded())
            guard start + here >= 0, start + here + frame <= y.count else { continue }
            let sentRMS = (x[start..<(start + frame)].reduce(0) { $0 + $1 * $1 } / Double(frame)).squareRoot()
            guard sentRMS > 1000 else { continue }
            let heardRMS = (y[(start + here)..<(start + here + frame)].reduce(0) { $0 + $1 * $1 } / Double(frame))
                .squareRoot()
            if heardRMS < sentRMS / 31.6 { dropouts.append(Double(start) / Double(rate)) }
        }
        delayDrift = ((track.last?.lag ?? 0) - (track.first?.lag ?? 0)) / Double(rate)
    }
}
