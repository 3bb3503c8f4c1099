import ArgumentParser
import Foundation
import Logging
import ParleyEngine
import ParleyRoom
import ParleyTUI

/// Options shared by the interactive commands (`parley`, `join`, `demo`).
struct InteractiveOptions: ParsableArguments {
    @Option(help: "\"synthetic\" or a .y4m file (looped). Repeat to give `c` (switch camera) more sources.")
    var video: [String] = []

    @Option(help: "\"synthetic\", \"silence\" or a .wav file (looped).")
    var audio = "synthetic"

    @Option(name: .customLong("audio-out"), help: "Write the call's received audio to this .wav file.")
    var audioOut: String?

    @Option(help: "Log file (default: $XDG_STATE_HOME/parley/parley.log). Logs never go to the screen.")
    var log: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: "Key configuration file (default: ~/.config/parley/keys if it exists).")
    var keys: String?

    @Option(name: .customLong("double-key-ms"), help: "Window for pressing a tile's number twice, in ms.")
    var doubleKeyMilliseconds = 400

    @Option(help: "Override the profile's video bitrate, kbit/s.")
    var bitrate: Int?

    @Option(help: "Override the profile's frame rate.")
    var fps: Int?

    @Option(name: .customLong("draw-fps"), help: "Highest redraw rate of the call screen.")
    var drawFPS = 30

    @Option(name: .customLong("stats-file"), help: "Keep this file updated every second with call statistics as JSON.")
    var statsFile: String?

    /// `profile` with the bitrate and frame-rate overrides applied.
    func adjusted(_ profile: VideoProfile) -> VideoProfile {
        var profile = profile
        if let bitrate { profile.bitrateKbps = bitrate }
        if let fps { profile.fps = fps }
        return profile
    }

    func validate() throws {
        do {
            for choice in video { _ = try VideoSourceChoice(parsing: choice) }
            _ = try AudioSourceChoice(parsing: audio)
        } catch {
            throw ValidationError("\(error)")
        }
        if let audioOut, !audioOut.lowercased().hasSuffix(".wav") {
            throw ValidationError("--audio-out must name a .wav file, got \"\(audioOut)\"")
        }
        if let bitrate, !(20...20_000).contains(bitrate) {
            throw ValidationError("--bitrate must be 20…20000 kbit/s, got \(bitrate)")
        }
        if let fps, !(1...60).contains(fps) { throw ValidationError("--fps must be 1…60, got \(fps)") }
        guard (1...60).contains(drawFPS) else { throw ValidationError("--draw-fps must be 1…60, got \(drawFPS)") }
        if let statsFile { try validateStatsFile(statsFile) }
        guard (100...2000).contains(doubleKeyMilliseconds) else {
            throw ValidationError("--double-key-ms must be 100…2000, got \(doubleKeyMilliseconds)")
        }
        _ = try LogSetup.level(logLevel)
        _ = try keymap()
    }

    var logPath: String { log ?? LogSetup.defaultLogPath }

    /// The keymap from the configuration file, or the standard one.
    func keymap() throws -> Keymap {
        let defaultPath = NSHomeDirectory() + "/.config/parley/keys"
        let path = keys ?? (FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil)
        guard let path else { return .standard }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read the key configuration \(path)")
        }
        do {
            return try Keymap.parse(text)
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }

    /// App options with these devices, keys and logs; sets up logging to the file.
    func appOptions(directJoin: JoinSettings?, lobby: LobbyState, returnToLobby: Bool) throws -> AppOptions {
        try LogSetup.toFile(logPath, level: try LogSetup.level(logLevel))
        return AppOptions(
            directJoin: directJoin, lobby: lobby,
            videoSources: try (video.isEmpty ? ["synthetic"] : video).map { try VideoSourceChoice(parsing: $0) },
            audioSource: try AudioSourceChoice(parsing: audio), audioSink: audioOut.map { .file($0) } ?? .none,
            roomSettings: RoomSettings(doubleKeyWindow: .milliseconds(doubleKeyMilliseconds), keymap: try keymap()),
            returnToLobby: returnToLobby, drawRate: drawFPS, standardErrorPath: logPath, statisticsPath: statsFile,
            logger: Logger(label: "parley.engine"))
    }
}

/// Runs the blocking terminal loop on its own thread, so the async runtime's few threads stay free for the
/// engine's event streams.
func runTerminal(_ options: AppOptions) async throws {
    let note: String? = try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try TerminalApp.run(options))
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
    if let note { say(note) }
}

/// `parley` with no subcommand: the lobby.
struct Lobby: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open the lobby: pick a relay, a name and a room, then join.")

    @Option(help: "Relay address to prefill, HOST:PORT.")
    var server = LobbyState.defaultServer

    @Option(help: "Display name to prefill.")
    var name = ProcessInfo.processInfo.environment["USER"] ?? ""

    @Option(help: "Room to prefill.")
    var room = ""

    @OptionGroup var options: InteractiveOptions

    func run() async throws {
        let lobby = LobbyState(server: server, name: name, room: room)
        do {
            try await runTerminal(try options.appOptions(directJoin: nil, lobby: lobby, returnToLobby: true))
        } catch let error as TerminalError {
            throw CommandFailure("\(error)")
        }
    }
}

/// `parley join ROOM --server HOST:PORT --name NAME`: straight into a call.
struct Join: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Join a room directly.")

    @Argument(help: "Room to join (letters, digits, spaces and common punctuation; created on first join).")
    var room: String

    @Option(help: "Relay address, HOST:PORT.")
    var server = LobbyState.defaultServer

    @Option(help: "Display name (no spaces).")
    var name = ProcessInfo.processInfo.environment["USER"] ?? ""

    @Option(help: "Video profile: \(VideoProfile.all.map(\.name).joined(separator: ", ")).")
    var profile = VideoProfile.standard.name

    @Option(help: "broadcaster (send and receive) or audience (watch only).")
    var role = "broadcaster"

    @OptionGroup var options: InteractiveOptions

    func validate() throws {
        do {
            _ = try ServerAddress(parsing: server)
            _ = try VideoProfile.named(profile)
            _ = try DisplayName.validate(name)
            _ = try RoomName.validate(room)
        } catch {
            throw ValidationError("\(error)")
        }
        guard Role(rawValue: role) != nil else {
            throw ValidationError("--role must be broadcaster or audience, got \"\(role)\"")
        }
    }

    func run() async throws {
        let settings = JoinSettings(
            server: try ServerAddress(parsing: server), name: try DisplayName.validate(name),
            room: try RoomName.validate(room), role: Role(rawValue: role) ?? .broadcaster,
            profile: options.adjusted(try VideoProfile.named(profile)), encryption: nil)
        do {
            try await runTerminal(try options.appOptions(
                directJoin: settings, lobby: LobbyState(server: server, name: name, room: room), returnToLobby: false))
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
