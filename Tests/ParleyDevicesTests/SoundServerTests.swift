import Foundation
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Real microphones and speakers through a real sound server: a private headless PulseAudio, reached by the probe
/// through ALSA's `default` device and the pulse plugin, exactly like a desktop. Serialized: each test runs its own
/// server, and the timing checks should not compete with each other for two cores.
@Suite(.serialized, .lane(.realTime)) struct SoundServerTests {
    @Test func startsWithItsSinksAndStopsWithoutTrace() async throws {
        var server: SoundServer? = try await SoundServer.start()
        let directory = try #require(server?.runtimeDirectory)
        let sinks = try #require(server).pactl(["list", "short", "sinks"]).output
        #expect(sinks.contains(SoundServer.speakerSink) && sinks.contains(SoundServer.microphoneFeedSink), "\(sinks)")
        let sources = try #require(server).pactl(["list", "short", "sources"]).output
        #expect(sources.contains(SoundServer.microphoneSource), "\(sources)")
        let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        let address = try #require(server).serverAddress
        server = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
        let after = try ChildProcess.run(
            SoundServer.program("pactl") ?? "/usr/bin/pactl", ["--server=\(address)", "info"])
        #expect(after.status != 0, "the server still answers after deinit")
    }

    @Test func notInstalledSaysThatMakeTestInstallsIt() {
        let message = SoundServerError.notInstalled(program: "pulseaudio", package: "pulseaudio").description
        #expect(message == "pulseaudio is not installed: `make test` installs it (Debian package pulseaudio)")
    }

    @Test func theProbeListsTheServerThroughALSA() async throws {
        let server = try await SoundServer.start()
        defer { withExtendedLifetime(server) {} }  // ARC may otherwise stop the server after its last mention
        let home = try temporaryFolder("pulse-home")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let result = try runProbe(["list"], environment: server.clientEnvironment(home: home))
        #expect(result.status == 0, "\(result.output)")
        let list = try probeJSON(ProbeDeviceList.self, in: result.output)
        #expect(list.microphones.map(\.name).contains("default"), "\(result.output)")
        #expect(list.speakers.map(\.name).contains("default"), "\(result.output)")
    }

    @Test func theMicrophoneHearsWhatIsPlayedIntoIt() async throws {
        let server = try await SoundServer.start()
        defer { withExtendedLifetime(server) {} }  // ARC may otherwise stop the server after its last mention
        let home = try temporaryFolder("pulse-mic")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let signal = noise(seconds: 2, seed: 21)
        try writeWAV(signal, to: home + "/speech.wav")
        let before = try server.recordingStreams()
        let probe = try startProbe(
            ["capture", "--seconds", "5", "--out", home + "/captured.wav"],
            environment: server.clientEnvironment(home: home))
        // Speak only once the microphone is open.
        try await waitUntil("the probe's recording stream on the sound server", timeout: .seconds(10)) {
            try server.recordingStreams() > before
        }
        let player = try server.play(wavPath: home + "/speech.wav")
        #expect(await player.exitStatus(within: .seconds(10)) == 0, "\(player.output)")
        #expect(await probe.exitStatus(within: .seconds(15)) == 0, "\(probe.output)")
        let report = try probeJSON(ProbeReport.self, in: probe.output)
        #expect(report.device == "default")
        let captured = try readWAV(home + "/captured.wav")
        #expect(captured.count == 5 * 48_000)
        let found = locate(signal, in: captured)
        #expect(found.correlation >= 0.95, "best match \(found.correlation) at \(found.lag)")
        // Paced by the server's clock: 5 s of sound took about 5 s once the first block arrived.
        let paced = report.elapsedSeconds - (report.firstBlockSeconds ?? 0)
        #expect(paced > 3 && paced < 6.5, "5 s of capture took \(paced) s after the first block")
    }

    @Test func theSpeakerPlaysAtRealTimeAndTheMonitorHearsIt() async throws {
        let server = try await SoundServer.start()
        defer { withExtendedLifetime(server) {} }  // ARC may otherwise stop the server after its last mention
        let home = try temporaryFolder("pulse-speaker")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let signal = noise(seconds: 3, seed: 33)
        try writeWAV(signal, to: home + "/far-end.wav")
        let recording = try await server.startRecording(to: home + "/monitor.wav")
        let environment = server.clientEnvironment(home: home)
        let result = try await onOwnThread {
            try runProbe(["play", "--in", home + "/far-end.wav"], environment: environment)
        }
        #expect(result.status == 0, "\(result.output)")
        // The monitor hears the last blocks a little after the player is done: half a second more of it is recorded.
        let recordedAtEnd = recording.samplesRecorded
        try await waitUntil("half a second more of the monitor recorded", timeout: .seconds(10)) {
            recording.samplesRecorded >= recordedAtEnd + 24_000
        }
        let recorded = try recording.stop()
        let report = try probeJSON(ProbeReport.self, in: result.output)
        #expect(report.device == "default")
        #expect(report.underruns == 0 && report.dropped == 0)
        // Blocking writes return once the last block is in the server's buffer, so a little under 3 s.
        #expect(report.elapsedSeconds > 2.4 && report.elapsedSeconds < 4.5, "3 s took \(report.elapsedSeconds) s")
        let found = locate(signal, in: recorded)
        #expect(found.correlation >= 0.99, "best match \(found.correlation) at \(found.lag) in \(recorded.count)")
        // One stream at full volume and the sink's own rate: the server copies, so every sample arrives unchanged,
        // the last blocks included (closing waits for the device's buffer to play out).
        let heard = recorded.dropFirst(found.lag).prefix(signal.count)
        #expect(
            zip(heard, signal).filter { $0 != $1 }.count == 0 && heard.count == signal.count,
            "\(zip(heard, signal).filter { $0 != $1 }.count) samples differ")
        #expect(try readWAV(home + "/monitor.wav") == recorded)
    }

    /// A speaker that ran dry (its writer held up for 300 ms) asks the sound server for a longer buffer, so a machine
    /// that cannot keep the short one full gets fewer gaps: the buffer the server grants afterwards is larger.
    @Test func theSpeakerBufferGrowsAfterAnUnderrun() async throws {
        let server = try await SoundServer.start()
        defer { withExtendedLifetime(server) {} }  // ARC may otherwise stop the server after its last mention
        let home = try temporaryFolder("pulse-stall")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = server.clientEnvironment(home: home)
        // The probe runs for seconds: waited for on a thread of its own.
        let result = try await onOwnThread { try runProbe(["stall", "--stall-ms", "300"], environment: environment) }
        #expect(result.status == 0, "\(result.output)")
        let report = try probeJSON(ProbeStallReport.self, in: result.output)
        #expect(report.underruns >= 1, "\(result.output)")
        #expect(report.bufferBefore > 0 && report.bufferAfter > report.bufferBefore, "\(result.output)")
    }

    /// The sound server going away mid-call is the real "unplugged": PortAudio reports an ALSA I/O error, which
    /// becomes `disconnected`, the probe says so in plain words and exits instead of hanging. The server lists the
    /// stream running a moment before PortAudio's start returns, so it may go away while the stream starts: that
    /// says the same.
    @Test(arguments: [["capture", "--seconds", "8", "--out"], ["play", "--in"]])
    func aServerThatGoesAwayIsReportedAsDisconnected(_ command: [String]) async throws {
        let server = try await SoundServer.start()
        defer { withExtendedLifetime(server) {} }  // ARC may otherwise stop the server after its last mention
        let home = try temporaryFolder("pulse-gone")
        defer { try? FileManager.default.removeItem(atPath: home) }
        try writeWAV(noise(seconds: 8, seed: 5), to: home + "/long.wav")
        let probe = try startProbe(command + [home + "/long.wav"], environment: server.clientEnvironment(home: home))
        // Mid-call: the probe's stream is on the server and running (uncorked) when the server goes away.
        let streams = command[0] == "capture" ? "source-outputs" : "sink-inputs"
        try await waitUntil("the probe's \(streams) stream running on the sound server", timeout: .seconds(10)) {
            try server.pactl(["list", streams]).output.contains("Corked: no")
        }
        server.stop()
        let status = await probe.exitStatus(within: .seconds(10))
        #expect(status == 2, "\(probe.output)")
        #expect(
            probe.output.contains("error: \"default\" stopped working (unplugged or taken away)"), "\(probe.output)")
    }
}
