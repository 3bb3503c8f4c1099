import ArgumentParser
import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleySecurity
import ParleyTUI
import ParleyWire

/// How `parley` and `join` use the account logged in on this computer (the demo always joins as a guest, so it
/// has neither).
struct AccountUseOptions: ParsableArguments {
    @Flag(help: "Join calls as a guest, not as the account logged in on this computer (which others see verified).")
    var guest = false

    @Flag(
        name: .customLong("hide-room"), help: "In a call, your account's presence says \"in a call\" without the room.")
    var hideRoom = false
}

/// Options shared by the interactive commands (`parley`, `join`, `demo`).
struct InteractiveOptions: ParsableArguments {
    @Flag(
        name: .customLong("hide-self-view"),
        help: "Start calls with your own picture hidden (V shows it); the others still see your camera.")
    var hideSelfView = false

    @Flag(
        name: .customLong("no-simulcast"),
        help: "Send your camera at full size only (by default also at half and a quarter, for small tiles).")
    var noSimulcast = false

    @Option(
        help: ArgumentHelp(
            "How video is drawn: auto (default: the best this terminal shows), kitty or sixel (real pixels), sextant "
                + "(2x3 pixels a cell), quadrant (2x2), half (1x2) or shade (no colour). The settings screen says what "
                + "auto chose and why.",
            valueName: "mode"),
        transform: { text in
            do { return try PictureMode.parse(text) } catch { throw ValidationError("\(error)") }
        })
    var picture: PictureMode = .auto

    @Option(help: "\"synthetic\" or a .y4m file (looped), instead of the cameras. Repeat to give `c` more sources.")
    var video: [String] = []

    @Option(help: "A camera by the name `parley devices` shows (or /dev/videoN). Repeat for more; default: every one.")
    var camera: [String] = []

    @Option(help: "\"synthetic\", \"silence\" or a .wav file (looped), instead of the microphone.")
    var audio: String?

    @Option(help: "A microphone by the name `parley devices` shows (default: the system's default microphone).")
    var mic: String?

    @Option(help: "A speaker by the name `parley devices` shows, or \"none\" (default: the system's default output).")
    var speaker: String?

    @Option(name: .customLong("audio-out"), help: "Write the call's received audio to this .wav file (no speaker).")
    var audioOut: String?

    @Flag(name: .customLong("no-echo-cancel"), help: "Turn off echo cancellation and noise suppression.")
    var noEchoCancel = false

    @OptionGroup var recording: RecordingOptions

    @Option(help: "Log file (default: $XDG_STATE_HOME/parley/parley.log). Logs never go to the screen.")
    var log: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: "Key configuration file (default: ~/.config/parley/keys if it exists).")
    var keys: String?

    @Option(
        help: "Theme file (default: ~/.config/parley/theme if it exists; `parley resources` shows the default one).")
    var theme: String?

    @Option(
        name: .customLong("double-key-ms"), parsing: .unconditional,
        help: "Window for pressing a tile's number twice, in ms.")
    var doubleKeyMilliseconds = 400

    @Option(parsing: .unconditional, help: "Override the profile's video bitrate, kbit/s.")
    var bitrate: Int?

    @Option(parsing: .unconditional, help: "Override the profile's frame rate.")
    var fps: Int?

    @OptionGroup var videoCodec: VideoCodecOptions

    @Option(name: .customLong("draw-fps"), parsing: .unconditional, help: "Highest redraw rate of the call screen.")
    var drawFPS = 30

    @Option(name: .customLong("stats-file"), help: "Keep this file updated every second with call statistics as JSON.")
    var statsFile: String?

    @OptionGroup var relayTrust: RelayTrustOptions

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
            if let audio { _ = try AudioSourceChoice(parsing: audio) }
        } catch {
            throw ValidationError("\(error)")
        }
        if audio != nil, mic != nil {
            throw ValidationError("give either --mic (a microphone) or --audio (a file or synthetic source), not both")
        }
        if audioOut != nil, speaker != nil {
            throw ValidationError("give either --speaker or --audio-out (a .wav file), not both")
        }
        for name in [mic, speaker].compactMap({ $0 }) + camera where name.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("a device name cannot be empty: `parley devices` lists the names")
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
        try recording.validate()
        try videoCodec.validate()
        _ = try LogSetup.level(logLevel)
        _ = try keymap()
        _ = try themeOverrides()
    }

    /// The shipped theme (Resources/theme/default.theme) with the user's theme file on top.
    func themeOverrides() throws -> [ColorRole: CellStyle] {
        let mine = try settingsFile(theme, named: "theme", what: "the theme file") { try Theme.parseOverrides($0) }
        return try shipped().themeOverrides.merging(mine ?? [:]) { $1 }
    }

    /// The key map and theme in Parley's resources folder (the built-in ones when it has none).
    func shipped() throws -> ShippedSettings {
        do {
            return try ShippedSettings.installed()
        } catch {
            throw ValidationError("\(error)")
        }
    }

    var logPath: String { log ?? LogSetup.defaultLogPath }

    /// The shipped key map (Resources/keys/default.keys) with the user's key configuration on top.
    func keymap() throws -> Keymap {
        let base = try shipped().keymap
        return try settingsFile(keys, named: "keys", what: "the key configuration") {
            try Keymap.parse($0, base: base)
        } ?? base
    }

    /// Parses the file `given`, else `~/.config/parley/NAME` if it exists; nil when there is neither. A file that
    /// cannot be read or parsed is a usage error naming the file (and the parser's line).
    func settingsFile<Value>(
        _ given: String?, named name: String, what: String, parse: (String) throws -> Value
    ) throws -> Value? {
        let defaultPath = UserFolders.config() + "/" + name
        let path = given ?? (FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil)
        guard let path else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read \(what) \(path)")
        }
        do {
            return try parse(text)
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }

    /// Where local video comes from: the cameras named, then the files given; with neither, every camera
    /// (`realDevices`) or the synthetic picture.
    func videoSources(realDevices: Bool) throws -> [VideoSourceChoice] {
        let files = try video.map { try VideoSourceChoice(parsing: $0) }
        let cameras = camera.map { VideoSourceChoice.camera($0) }
        if cameras.isEmpty && files.isEmpty { return realDevices ? [.allCameras] : [.synthetic] }
        return cameras + files
    }

    /// Local audio: `--mic`, `--audio`, else the default microphone (`realDevices`) or the synthetic voice.
    func audioSource(realDevices: Bool) throws -> AudioSourceChoice {
        if let mic { return .microphone(mic) }
        if let audio { return try AudioSourceChoice(parsing: audio) }
        return realDevices ? .microphone(nil) : .synthetic
    }

    /// Received audio: `--audio-out`, `--speaker`, else the default speaker (`realDevices`) or nowhere.
    func audioSink(realDevices: Bool) -> AudioSinkChoice {
        if let audioOut { return .file(audioOut) }
        if let speaker { return speaker.lowercased() == "none" ? .none : .speaker(speaker) }
        return realDevices ? .speaker(nil) : .none
    }

    /// App options with these devices, keys and logs; sets up logging to the file. `realDevices`: use the
    /// microphone, speaker and cameras unless told otherwise (`parley`, `join`); the demo keeps synthetic sources.
    /// `account` nil joins as a guest with no messages (the demo).
    func appOptions(
        directJoin: JoinSettings?, lobby: LobbyState, returnToLobby: Bool, account: AccountUseOptions?,
        realDevices: Bool = true
    ) throws -> AppOptions {
        try LogSetup.toFile(logPath, level: try LogSetup.level(logLevel))
        var options = AppOptions(
            directJoin: directJoin, lobby: lobby,
            videoSources: try videoSources(realDevices: realDevices),
            audioSource: try audioSource(realDevices: realDevices), audioSink: audioSink(realDevices: realDevices),
            echoCancellation: !noEchoCancel,
            roomSettings: RoomSettings(
                doubleKeyWindow: .milliseconds(doubleKeyMilliseconds), keymap: try keymap(),
                showsSelfView: !hideSelfView),
            returnToLobby: returnToLobby, drawRate: drawFPS, standardErrorPath: logPath, statisticsPath: statsFile,
            logger: Logger(label: "parley.engine"))
        options.themeOverrides = try themeOverrides()
        options.signalingSecurity = try relayTrust.security()
        options.mediaTransport = try relayTrust.mediaTransport()
        options.hideRoom = account?.hideRoom ?? false
        options.simulcast = !noSimulcast
        options.vp8Profile = videoCodec.vp8Profile
        options.recording = recording.settings
        options.picture = picture
        if let account, !account.guest {
            // Logged in: calls are joined as the account, and its messages are reachable from the call.
            switch AccountFiles.standard.messagingAccount(server: nil, security: options.signalingSecurity) {
            case .success(let account): options.messaging = account
            case .failure(let problem): options.messagingProblem = problem.description
            }
        } else if account != nil {
            options.messagingProblem = "Joined as a guest (--guest): no account, no messages."
        }
        return options
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
        abstract: "Open the lobby: pick a relay, a name and a room, then join. With a meeting link, join it.")

    @Argument(help: "A meeting link, parley://HOST:PORT/ROOM: join it at once (Parley ends with the call).")
    var link: String?

    @Option(help: "Relay address to prefill, HOST:PORT.")
    var server = LobbyState.defaultServer

    @Option(help: "Display name to prefill (default: the account logged in, else $USER).")
    var name: String?

    @Option(help: "Room to prefill.")
    var room = ""

    @OptionGroup var options: InteractiveOptions

    @OptionGroup var account: AccountUseOptions

    @OptionGroup var access: RoomAccessOptions

    func run() async throws {
        let name = self.name ?? defaultDisplayName(guest: account.guest)
        var lobby = LobbyState(server: server, name: name, room: room)
        let encryption = try access.joinEncryption()
        lobby.prefill(encryption)
        var direct: JoinSettings?
        if let link {
            guard MeetingLink.looksLikeLink(link) else {
                throw ValidationError(
                    "\"\(link)\" is not a meeting link or a command: to join a room by name run "
                        + "parley join \(link) --server HOST:PORT; see parley --help")
            }
            let (address, roomName, notices, _) = try target(link, server: nil, insecure: options.relayTrust.insecure)
            lobby = LobbyState(server: address.description, name: name, room: roomName)
            lobby.prefill(encryption)
            var settings = JoinSettings(
                server: address, name: try DisplayName.validate(name), room: roomName, role: .broadcaster,
                profile: options.adjusted(lobby.profile), encryption: encryption)
            settings.password = try access.roomPassword()
            settings.notices = notices
            direct = settings
        }
        do {
            try await runTerminal(
                try options.appOptions(
                    directJoin: direct, lobby: lobby, returnToLobby: direct == nil, account: account))
        } catch let error as TerminalError {
            throw CommandFailure("\(error)")
        }
    }
}

/// `parley join ROOM --server HOST:PORT --name NAME`: straight into a call.
struct Join: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Join a room directly, by name or by meeting link.")

    @Argument(
        help: ArgumentHelp(
            "Room to join (letters, digits, spaces and common punctuation; created on first join), or a meeting link "
                + "parley://HOST:PORT/ROOM."))
    var room: String

    @Option(
        help:
            "Relay address, HOST:PORT (default \(LobbyState.defaultServer); a link names its own); relays of one cluster as HOST:PORT,HOST:PORT, tried in turn."
    )
    var server: String?

    @Option(help: "Display name, no spaces (default: the account logged in with `parley login`, else $USER).")
    var name: String?

    @Option(help: "Video profile: \(VideoProfile.all.map(\.name).joined(separator: ", ")).")
    var profile = VideoProfile.standard.name

    @Option(help: "broadcaster (send and receive) or audience (watch only).")
    var role = "broadcaster"

    @OptionGroup var options: InteractiveOptions

    @OptionGroup var account: AccountUseOptions

    @OptionGroup var access: RoomAccessOptions

    func validate() throws {
        do {
            _ = try target(room, server: server, insecure: options.relayTrust.insecure)
            _ = try VideoProfile.named(profile)
            _ = try displayName()
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("\(error)")
        }
        guard Role(rawValue: role) != nil else {
            throw ValidationError("--role must be broadcaster or audience, got \"\(role)\"")
        }
    }

    func run() async throws {
        let (address, roomName, notices, fallbacks) = try target(
            room, server: server, insecure: options.relayTrust.insecure)
        let name = try displayName()
        var settings = JoinSettings(
            server: address, name: name,
            room: roomName, role: Role(rawValue: role) ?? .broadcaster,
            profile: options.adjusted(try VideoProfile.named(profile)), encryption: try access.joinEncryption())
        settings.password = try access.roomPassword()
        settings.notices = notices
        settings.fallbackServers = fallbacks
        do {
            try await runTerminal(
                try options.appOptions(
                    directJoin: settings, lobby: LobbyState(server: address.description, name: name, room: roomName),
                    returnToLobby: false, account: account))
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

extension Join {
    /// `--name`, else the logged-in account's name (unless `--guest`), else `$USER`, checked by the name rules.
    func displayName() throws -> String { try chosenDisplayName(name, guest: account.guest) }
}

/// `name`, else the logged-in account's name (unless `guest`), else `$USER`, checked by the name rules.
func chosenDisplayName(_ name: String?, guest: Bool) throws -> String {
    let chosen = name ?? defaultDisplayName(guest: guest)
    guard !chosen.isEmpty else {
        throw ValidationError("no display name: give --name NAME, or log in with parley login NAME --server HOST:PORT")
    }
    return try DisplayName.validate(chosen)
}

/// The name a call uses when none is given: the account logged in on this computer (its calls are joined as that
/// account, so its name is the natural one), else the login name in `$USER`, else empty.
func defaultDisplayName(guest: Bool) -> String {
    if !guest, let account = AccountFiles.standard.current()?.name { return account }
    return ProcessInfo.processInfo.environment["USER"] ?? ""
}

/// The relay and room a join names: a room and `--server`, or a meeting link (which names both). A room name the
/// name rules change is joined cleaned and the change is said, never made silently.
func target(_ text: String, server: String?, insecure: Bool) throws
    -> (server: ServerAddress, room: String, notices: [String], fallbacks: [ServerAddress])
{
    var fallbacks: [ServerAddress] = []
    var typedRoom = text
    var address: ServerAddress
    if MeetingLink.looksLikeLink(text) {
        let link = try MeetingLink(parsing: text)
        if let server, let given = try? ServerAddress.list(parsing: server).first, given != link.server {
            throw ValidationError(
                "the link names the relay \(link.server) and --server says \(given): give one of them")
        }
        if link.insecure && !insecure {
            throw ValidationError(
                "\(text) is a link to a relay without TLS (ws:// or http://): add --insecure to join it")
        }
        address = link.server
        typedRoom = link.room
    } else {
        let listed = try ServerAddress.list(parsing: server ?? LobbyState.defaultServer)
        address = listed[0]
        fallbacks = Array(listed.dropFirst())
    }
    let room = try RoomName.validate(typedRoom)
    let notices = RoomName.changes(typedRoom).map { ["Joined \(room): \($0)"] } ?? []
    return (address, room, notices, fallbacks)
}
