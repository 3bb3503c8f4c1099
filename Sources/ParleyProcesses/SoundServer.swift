import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why the test sound server could not be used.
public enum SoundServerError: Error, CustomStringConvertible {
    /// A program is missing; `make test` installs the packages.
    case notInstalled(program: String, package: String)
    /// The configuration folder (Resources/sound) was not found.
    case missingResources(String)
    /// The server did not come up; its log is included.
    case startFailed(reason: String, log: String)
    /// A client program failed.
    case commandFailed(command: String, output: String)

    public var description: String {
        switch self {
        case .notInstalled(let program, let package):
            return "\(program) is not installed: `make test` installs it (Debian package \(package))"
        case .missingResources(let path):
            return "sound-server configuration not found at \(path) (set PARLEY_SOUND_RESOURCES to Resources/sound)"
        case .startFailed(let reason, let log):
            return "the test sound server did not start: \(reason)\n--- pulseaudio log ---\n\(log)"
        case .commandFailed(let command, let output):
            return "\(command) failed: \(output)"
        }
    }
}

/// A private, headless PulseAudio for tests: its own runtime folder (mode 700), no sound card, two null sinks paced by
/// the wall clock — `parley_speaker` for a program's speaker, and `parley_microphone`, whose monitor is a program's
/// microphone. Children reach it through `clientEnvironment`; it is stopped (SIGTERM) and its folder removed on
/// deinit, which ARC may run right after the last mention: keep it alive (`withExtendedLifetime`) while children use
/// it. Configuration: Resources/sound/parley-test.pa.
public final class SoundServer: Sendable {
    /// The sink a program plays into.
    public static let speakerSink = "parley_speaker"
    /// The sink whose monitor is the microphone: play into it to speak into the microphone.
    public static let microphoneFeedSink = "parley_microphone"
    /// The source a program records from.
    public static let microphoneSource = "parley_microphone.monitor"
    /// The source that hears what was played on the speaker.
    public static let speakerMonitor = "parley_speaker.monitor"

    /// The private runtime folder (the socket is `pulse/native` inside).
    public let runtimeDirectory: String
    private let daemon: BackgroundProcess

    /// The folder holding parley-test.pa and client.conf: PARLEY_SOUND_RESOURCES, else `sound` in PARLEY_RESOURCES,
    /// else Resources/sound in the source tree this file was built from.
    public static var resourcesDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["PARLEY_SOUND_RESOURCES"], !path.isEmpty { return path }
        if let path = environment["PARLEY_RESOURCES"], !path.isEmpty { return path + "/sound" }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Resources/sound").path
    }

    /// The path of a PulseAudio program, or nil when it is not installed.
    public static func program(_ name: String) -> String? {
        ["/usr/bin/", "/usr/local/bin/", "/bin/"].map { $0 + name }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts the server with `configuration` (a .pa script in `resourcesDirectory`; the tests' own by default),
    /// logging at `logLevel` into `logPath`, and waits (up to 15 s, blocking the caller) until it answers.
    public convenience init(configuration: String = "parley-test.pa", logLevel: String = "notice") throws {
        try self.init(spawning: configuration, logLevel: logLevel)
        let deadline = Date().addingTimeInterval(15)
        while try !answers(before: deadline) { usleep(50_000) }
    }

    /// Starts the server as `init(configuration:logLevel:)` does, and waits until it answers without blocking a
    /// thread (Task.sleep between looks).
    public static func start(configuration: String = "parley-test.pa", logLevel: String = "notice") async throws
        -> SoundServer
    {
        let server = try SoundServer(spawning: configuration, logLevel: logLevel)
        let deadline = Date().addingTimeInterval(15)
        while try !server.answers(before: deadline) { try await Task.sleep(for: .milliseconds(50)) }
        return server
    }

    /// Whether the server answers; throws when it exited or `deadline` passed without an answer.
    private func answers(before deadline: Date) throws -> Bool {
        if (try? pactl(["info"]))?.status == 0 { return true }
        if daemon.exitStatusNow() != nil {
            throw SoundServerError.startFailed(reason: "pulseaudio exited", log: daemon.output)
        }
        if Date() > deadline { throw SoundServerError.startFailed(reason: "no answer within 15 s", log: daemon.output) }
        return false
    }

    /// Starts the daemon (without waiting for it to answer).
    private init(spawning configuration: String, logLevel: String) throws {
        guard let pulseaudio = Self.program("pulseaudio") else {
            throw SoundServerError.notInstalled(program: "pulseaudio", package: "pulseaudio")
        }
        guard Self.program("pactl") != nil, Self.program("parec") != nil, Self.program("paplay") != nil else {
            throw SoundServerError.notInstalled(program: "pactl/parec/paplay", package: "pulseaudio-utils")
        }
        let script = Self.resourcesDirectory + "/" + configuration
        guard FileManager.default.fileExists(atPath: script) else {
            throw SoundServerError.missingResources(script)
        }
        var template = Array((NSTemporaryDirectory() + "parley-sound-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw SoundServerError.startFailed(reason: "mkdtemp: \(String(cString: strerror(errno)))", log: "")
        }
        let directory = String(cString: made)
        chmod(directory, 0o700)
        runtimeDirectory = directory
        // Its own HOME too: PulseAudio keeps a cookie and state under ~/.config/pulse.
        let environment = ["HOME": directory, "XDG_RUNTIME_DIR": directory, "PATH": "/usr/bin:/bin"]
        // Real-time and raised like a desktop's sound server (PulseAudio's defaults, granted through rtkit or to
        // root): at nice 0, a build beside the tests held its timer threads up to 160 ms, and the microphone's and
        // the speaker's streams both stopped, a fault of the fixture that no user's sound server has.
        let command = ChildEnvironment.command(
            environment: environment, program: pulseaudio,
            arguments: [
                "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disable-shm=yes",
                "--realtime=yes", "--high-priority=yes", "--log-target=stderr", "--log-level=\(logLevel)",
                "-F", script,
            ])
        daemon = try BackgroundProcess(command.path, command.arguments, outputPath: directory + "/pulseaudio.log")
    }

    deinit {
        daemon.stop()
        try? FileManager.default.removeItem(atPath: runtimeDirectory)
    }

    /// Stops the server now (SIGTERM), as a desktop's sound server going away would; deinit does it too.
    public func stop() {
        daemon.stop()
    }

    /// The server's log (`info` level names each stream it creates and the latency it settled on for it).
    public var logPath: String { runtimeDirectory + "/pulseaudio.log" }

    /// `PULSE_SERVER` for clients.
    public var serverAddress: String { "unix:\(runtimeDirectory)/pulse/native" }

    /// What a child needs to use this server by default (`default` ALSA device → pulse plugin → `sink`/`source`,
    /// the tests' speaker and microphone unless told), plus `home` as HOME so it reads no personal sound configuration.
    public func clientEnvironment(
        home: String, sink: String = SoundServer.speakerSink, source: String = SoundServer.microphoneSource
    ) -> [String: String] {
        [
            "HOME": home, "PATH": "/usr/bin:/bin", "PULSE_SERVER": serverAddress,
            "PULSE_SINK": sink, "PULSE_SOURCE": source,
            "PULSE_CLIENTCONFIG": Self.resourcesDirectory + "/client.conf",
        ]
    }

    /// Runs `pactl` against this server.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> ChildProcess.Result {
        try ChildProcess.run(Self.program("pactl") ?? "/usr/bin/pactl", ["--server=\(serverAddress)"] + arguments)
    }

    /// How many recording streams are connected (to wait until a recorder is really listening).
    public func recordingStreams() throws -> Int {
        try pactl(["list", "short", "source-outputs"]).output.split(separator: "\n").count
    }

    /// Plays a WAV file into `sink` (by default: speaks into the microphone) in the background.
    public func play(wavPath: String, into sink: String = SoundServer.microphoneFeedSink) throws -> BackgroundProcess {
        try BackgroundProcess(
            Self.program("paplay") ?? "/usr/bin/paplay", ["--server=\(serverAddress)", "--device=\(sink)", wavPath])
    }

    /// Starts recording `source` (by default: what was played on the speaker) as 48 kHz mono 16-bit; returns once
    /// the recorder is connected (blocking the caller until then).
    public func record(from source: String = SoundServer.speakerMonitor, to wavPath: String) throws -> SoundRecording {
        let before = try recordingStreams()
        let recording = try SoundRecording(
            parec: Self.program("parec") ?? "/usr/bin/parec", server: serverAddress, source: source, wavPath: wavPath)
        let deadline = Date().addingTimeInterval(10)
        while try !connected(beyond: before, before: deadline) { usleep(20_000) }
        return recording
    }

    /// Starts recording as `record(from:to:)` does, and waits until the recorder is connected without blocking a
    /// thread (Task.sleep between looks).
    public func startRecording(from source: String = SoundServer.speakerMonitor, to wavPath: String) async throws
        -> SoundRecording
    {
        let before = try recordingStreams()
        let recording = try SoundRecording(
            parec: Self.program("parec") ?? "/usr/bin/parec", server: serverAddress, source: source, wavPath: wavPath)
        let deadline = Date().addingTimeInterval(10)
        while try !connected(beyond: before, before: deadline) { try await Task.sleep(for: .milliseconds(20)) }
        return recording
    }

    /// Whether more than `streams` recording streams are connected; throws once `deadline` passed without.
    private func connected(beyond streams: Int, before deadline: Date) throws -> Bool {
        if try recordingStreams() > streams { return true }
        guard Date() < deadline else {
            throw SoundServerError.commandFailed(command: "parec", output: "did not connect within 10 s")
        }
        return false
    }
}

/// A recording of a source in progress; `stop()` writes it as a WAV file (48 kHz mono 16-bit) and returns its samples.
public final class SoundRecording: Sendable {
    /// Where the WAV file goes.
    public let wavPath: String
    private let rawPath: String
    private let process: BackgroundProcess

    init(parec: String, server: String, source: String, wavPath: String) throws {
        self.wavPath = wavPath
        rawPath = wavPath + ".raw"
        // With a file argument, parec writes raw samples there and its messages to the log: nothing mixes.
        process = try BackgroundProcess(
            parec,
            [
                "--server=\(server)", "--device=\(source)", "--raw", "--format=s16le", "--rate=48000",
                "--channels=1", "--latency-msec=20", rawPath,
            ])
    }

    deinit {
        process.stop()
        unlink(rawPath)
    }

    /// Samples recorded so far (the recorder writes as it goes), for a test that waits until enough has been heard.
    public var samplesRecorded: Int {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: rawPath)[.size] as? Int) ?? nil
        return (bytes ?? 0) / 2
    }

    /// The samples recorded so far, without ending the recording.
    public func samplesSoFar() -> [Int16] {
        Self.samples(FileManager.default.contents(atPath: rawPath) ?? Data())
    }

    /// 16-bit little-endian samples (a trailing odd byte is left out).
    private static func samples(_ data: Data) -> [Int16] {
        let bytes = [UInt8](data.prefix(data.count & ~1))
        return stride(from: 0, to: bytes.count, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
        }
    }

    /// Ends the recording; the samples recorded, also written to `wavPath`.
    public func stop() throws -> [Int16] {
        process.stop()
        guard let data = FileManager.default.contents(atPath: rawPath) else {
            throw SoundServerError.commandFailed(command: "parec", output: "no recording at \(rawPath)")
        }
        let bytes = [UInt8](data.prefix(data.count & ~1))
        try Data(Self.wavHeader(dataBytes: bytes.count) + bytes).write(to: URL(fileURLWithPath: wavPath))
        return Self.samples(data)
    }

    /// A canonical 44-byte header for 48 kHz mono 16-bit PCM.
    static func wavHeader(dataBytes: Int) -> [UInt8] {
        func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        func le16(_ value: Int) -> [UInt8] { (0..<2).map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        return Array("RIFF".utf8) + le32(36 + dataBytes) + Array("WAVEfmt ".utf8) + le32(16) + le16(1) + le16(1)
            + le32(48_000) + le32(96_000) + le16(2) + le16(16) + Array("data".utf8) + le32(dataBytes)
    }
}

/// Starting a program with exactly the environment given (through `/usr/bin/env -i`), since the spawn helpers pass
/// the test process's own environment on.
public enum ChildEnvironment {
    /// The path and arguments that run `program` with only `environment`.
    public static func command(
        environment: [String: String], program: String, arguments: [String]
    ) -> (path: String, arguments: [String]) {
        (
            "/usr/bin/env",
            ["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                + [program] + arguments
        )
    }
}
