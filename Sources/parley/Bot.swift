import ArgumentParser
import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// `parley bot`: a headless participant for tests and the demo.
struct Bot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join a room headless with a synthetic (or file) camera and voice; chat and toggle video on a timer.")

    @Argument(help: "Room to join.")
    var room: String

    @Option(help: "Relay address, HOST:PORT; relays of one cluster as HOST:PORT,HOST:PORT, tried in turn.")
    var server = "127.0.0.1:7878"

    @Option(help: "Display name (no spaces).")
    var name = "bot"

    @Option(help: "\"synthetic\" or a .y4m file (looped). Repeat to give switch-camera more sources.")
    var video: [String] = []

    @Option(help: "\"synthetic\", \"silence\" or a .wav file (looped).")
    var audio = "synthetic"

    @Option(help: "Video profile: \(VideoProfile.all.map(\.name).joined(separator: ", ")).")
    var profile = "320x240"

    @Option(parsing: .unconditional, help: "Override the profile's video bitrate, kbit/s.")
    var bitrate: Int?

    @Option(parsing: .unconditional, help: "Override the profile's frame rate.")
    var fps: Int?

    @Option(name: .customLong("audio-out"), help: "Write received, mixed audio to this .wav file.")
    var audioOut: String?

    @Option(name: .customLong("chat-every"), parsing: .unconditional, help: "Send a chat line every S seconds.")
    var chatEvery: Double?

    @Option(
        name: .customLong("toggle-video-every"), parsing: .unconditional,
        help: "Turn the camera off/on every S seconds.")
    var toggleVideoEvery: Double?

    @Option(parsing: .unconditional, help: "Leave after S seconds (default: stay until SIGINT/SIGTERM).")
    var duration: Double?

    @Flag(name: .customLong("no-decode"), help: "Do not decode received video and audio (saves CPU).")
    var noDecode = false

    @Flag(name: .customLong("no-simulcast"), help: "Send the camera at full size only, not also at half and a quarter.")
    var noSimulcast = false

    @OptionGroup var videoCodec: VideoCodecOptions

    @Flag(help: "Print call statistics as JSON when leaving.")
    var stats = false

    @Option(name: .customLong("stats-file"), help: "Keep this file updated every second with call statistics as JSON.")
    var statsFile: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "notice"

    @OptionGroup var recording: RecordingOptions

    @OptionGroup var relayTrust: RelayTrustOptions

    @OptionGroup var access: RoomAccessOptions

    func validate() throws {
        do {
            _ = try ServerAddress.list(parsing: server)
            _ = try VideoProfile.named(profile)
            _ = try DisplayName.validate(name)
            _ = try RoomName.validate(room)
            for choice in video { _ = try VideoSourceChoice(parsing: choice) }
            _ = try AudioSourceChoice(parsing: audio)
        } catch {
            throw ValidationError("\(error)")
        }
        for (flag, value) in [
            ("--chat-every", chatEvery), ("--toggle-video-every", toggleVideoEvery),
            ("--duration", duration),
        ] {
            if let value, !(value > 0) { throw ValidationError("\(flag) must be a positive number of seconds") }
        }
        if let bitrate, !(20...20_000).contains(bitrate) {
            throw ValidationError("--bitrate must be 20…20000 kbit/s, got \(bitrate)")
        }
        if let fps, !(1...60).contains(fps) { throw ValidationError("--fps must be 1…60, got \(fps)") }
        if let statsFile { try validateStatsFile(statsFile) }
        if let audioOut, !audioOut.lowercased().hasSuffix(".wav") {
            throw ValidationError("--audio-out must name a .wav file, got \"\(audioOut)\"")
        }
        try recording.validate()
        try videoCodec.validate()
        if recording.record != nil, noDecode {
            throw ValidationError("--record keeps what this member receives: leave out --no-decode")
        }
        _ = try LogSetup.level(logLevel)
    }

    func run() async throws {
        LogSetup.toStandardError(level: try LogSetup.level(logLevel))
        let logger = Logger(label: "parley.bot.\(name)")
        var videoProfile = try VideoProfile.named(profile)
        if let bitrate { videoProfile.bitrateKbps = bitrate }
        if let fps { videoProfile.fps = fps }
        var configuration = CallConfiguration(
            server: try ServerAddress.list(parsing: server)[0], room: try RoomName.validate(room), name: name,
            profile: videoProfile,
            videoSources: try (video.isEmpty ? ["synthetic"] : video).map { try VideoSourceChoice(parsing: $0) },
            audioSource: try AudioSourceChoice(parsing: audio), audioSink: audioOut.map { .file($0) } ?? .none,
            decodesVideo: !noDecode, decodesAudio: !noDecode,
            showsSelfView: false, logger: logger)
        configuration.fallbackServers = Array(try ServerAddress.list(parsing: server).dropFirst())
        configuration.signalingSecurity = try relayTrust.security()
        configuration.mediaTransport = try relayTrust.mediaTransport()
        configuration.simulcast = !noSimulcast
        configuration.vp8Profile = videoCodec.vp8Profile
        configuration.recording = recording.settings
        configuration.password = try access.roomPassword()
        if let encryption = try access.joinEncryption() {
            do {
                configuration.encryption = try CallEncryption(
                    secret: encryption.key, room: configuration.room, suite: encryption.suite)
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        let engine = try CallEngine(configuration)
        let runner = BotRunner(engine: engine, name: name, logger: logger)
        engine.start()
        await runner.run(
            chatEvery: chatEvery, toggleVideoEvery: toggleVideoEvery, duration: duration,
            statisticsFile: statsFile.map(CallStatisticsFile.init(path:)))
        if stats {
            let summary = CallStatisticsSummary(await engine.statistics())
            do {
                say(String(decoding: try summary.encoded(), as: UTF8.self))
            } catch {
                logger.warning("statistics not printed", metadata: ["error": "\(error)"])
            }
        }
        await engine.leave()
        if let failure = runner.failure { throw CommandFailure(failure) }
    }
}

/// Drives one bot's engine: logs events, chats and toggles video on timers, stops on a signal or after a while.
final class BotRunner: @unchecked Sendable {
    let engine: CallEngine
    let name: String
    let logger: Logger
    private(set) var failure: String?

    init(engine: CallEngine, name: String, logger: Logger) {
        self.engine = engine
        self.name = name
        self.logger = logger
    }

    func run(
        chatEvery: Double?, toggleVideoEvery: Double?, duration: Double?,
        statisticsFile: CallStatisticsFile? = nil
    ) async {
        let signals = duration == nil ? Signals() : nil
        await withTaskGroup(of: Bool.self) { group in
            if let statisticsFile {
                group.addTask { [self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        guard !Task.isCancelled else { break }
                        do {
                            try statisticsFile.write(await engine.statistics())
                        } catch {
                            logger.warning("statistics file not written", metadata: ["error": "\(error)"])
                        }
                    }
                    return false
                }
            }
            group.addTask { [self] in
                for await event in engine.events {
                    // Levels and statistics arrive many times a second: at info they wrote ~150 MB an hour per demo.
                    switch event {
                    case .audioLevel, .microphoneLevel, .remoteStats, .localStats:
                        logger.debug("event", metadata: ["event": "\(event)"])
                    case .recording, .recordingRule:
                        logger.notice("event", metadata: ["event": "\(event)"])
                    case .notice(let text) where text.contains("ecording"):
                        logger.notice("\(text)")
                    case .alert(.message(let text)) where text.contains("ecording"):
                        logger.notice("\(text)")
                    default:
                        logger.info("event", metadata: ["event": "\(event)"])
                    }
                    if case .joinFailed(let reason) = event {
                        failure = "could not join: \(reason)"
                        return true
                    }
                    if case .removedFromRoom(let reason) = event {
                        failure = reason
                        return true
                    }
                }
                return true
            }
            if let chatEvery {
                group.addTask { [self] in
                    var line = 1
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(Int64(chatEvery * 1000)))
                        guard !Task.isCancelled else { break }
                        engine.perform(.sendChat(BotRunner.chatLine(line, from: name)))
                        line += 1
                    }
                    return false
                }
            }
            if let toggleVideoEvery {
                group.addTask { [self] in
                    var cameraOn = true
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(Int64(toggleVideoEvery * 1000)))
                        guard !Task.isCancelled else { break }
                        cameraOn.toggle()
                        engine.perform(.setCameraEnabled(cameraOn))
                    }
                    return false
                }
            }
            group.addTask {
                if let duration {
                    try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                    return true
                }
                _ = await signals?.wait()
                return true
            }
            for await finished in group where finished {
                group.cancelAll()
                break
            }
        }
    }

    private static let phrases = [
        "morning all", "can you see my screen?", "I'll take that one", "sounds good", "back in a minute",
        "the build is green again", "let's sync after standup", "+1", "any blockers?", "thanks!",
    ]

    /// The bot's n-th chat line: a rotating phrase, numbered so tests can check order.
    static func chatLine(_ number: Int, from name: String) -> String {
        "\(phrases[(number - 1) % phrases.count]) (#\(number))"
    }
}

/// Checks that a `--stats-file` can be created: its folder exists and it is not a folder itself.
func validateStatsFile(_ path: String) throws {
    var isDirectory: ObjCBool = false
    let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
    guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw ValidationError("--stats-file \(path): the folder \(folder) does not exist")
    }
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
        throw ValidationError("--stats-file \(path) is a folder; give a file name")
    }
}
