import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyRoom
import ParleySecurity

/// Everything the terminal front end needs to start: what to prefill, whether to join at once, devices, keys.
public struct AppOptions: Sendable {
    /// Join these settings right away (`parley join`, `parley demo`); nil opens the lobby.
    public var directJoin: JoinSettings?
    /// Prefill for the lobby.
    public var lobby: LobbyState
    /// Local video sources (first used first; `c` cycles).
    public var videoSources: [VideoSourceChoice]
    /// Local audio source.
    public var audioSource: AudioSourceChoice
    /// Where received audio goes.
    public var audioSink: AudioSinkChoice
    /// Echo cancellation and noise suppression on a real microphone.
    public var echoCancellation: Bool
    /// The devices real microphones, speakers and cameras are opened through.
    public var devices: MediaDevices
    /// Styles from a theme file, replacing the built-in 256-colour looks.
    public var themeOverrides: [ColorRole: CellStyle] = [:]
    /// Room settings: keys, double-key window, chat history.
    public var roomSettings: RoomSettings
    /// Return to the lobby after a call (true) or exit (false, for `parley join`).
    public var returnToLobby: Bool
    /// Highest redraw rate of the call screen.
    public var drawRate: Int
    /// Where standard error goes while the screen is open (library warnings must not garble it).
    public var standardErrorPath: String?
    /// A file kept up to date (every second) with the call's statistics as JSON, for scripts and benchmarks.
    public var statisticsPath: String?
    /// The engine's logger.
    public var logger: Logger
    /// How signaling is protected: TLS checked against known relays (the CLI's default) or plain (`--insecure`).
    public var signalingSecurity: SignalingSecurity = .insecure
    /// The account the messages screen logs in with; nil when none is logged in on this computer.
    public var messaging: MessagingAccount?
    /// Why there is no account, as the lobby says when [Messages] is pressed.
    public var messagingProblem = "Not logged in: run parley login NAME --server HOST:PORT first."
    /// Open the messages screen first (`parley messages`); Esc there quits instead of showing the lobby.
    public var openMessagesFirst = false
    /// Keep the room out of the account's presence while in a call.
    public var hideRoom = false
    /// Send the camera in simulcast layers (`--no-simulcast` turns it off).
    public var simulcast = true
    /// The VP8 bitstream version the camera is encoded in (`--vp8-profile`; 0, the sharpest, by default).
    public var vp8Profile = VP8EncoderConfig.sharpProfile
    /// Recording the call (`--record`, `--record-tracks`; `R` in a call).
    public var recording = RecordingSettings()
    /// How video is drawn (`--picture`).
    public var picture: PictureMode = .auto

    /// Options with call defaults.
    public init(
        directJoin: JoinSettings? = nil, lobby: LobbyState = LobbyState(),
        videoSources: [VideoSourceChoice] = [.synthetic], audioSource: AudioSourceChoice = .synthetic,
        audioSink: AudioSinkChoice = .none, echoCancellation: Bool = true,
        devices: MediaDevices = .system, roomSettings: RoomSettings = RoomSettings(),
        returnToLobby: Bool = true, drawRate: Int = 30, standardErrorPath: String? = nil,
        statisticsPath: String? = nil, logger: Logger = Logger(label: "parley.engine")
    ) {
        self.directJoin = directJoin
        self.lobby = lobby
        self.videoSources = videoSources
        self.audioSource = audioSource
        self.audioSink = audioSink
        self.echoCancellation = echoCancellation
        self.devices = devices
        self.roomSettings = roomSettings
        self.returnToLobby = returnToLobby
        self.drawRate = drawRate
        self.standardErrorPath = standardErrorPath
        self.statisticsPath = statisticsPath
        self.logger = logger
    }
}

/// The interactive program: lobby → settings → call → lobby, in one terminal, always restored on the way out.
public enum TerminalApp {
    private enum Mode {
        case lobby
        case settings(SettingsState)
        /// Waiting for the relay's answer; from the lobby the lobby stays on screen ("Joining…") so a failure shows
        /// there without leaving it.
        case joining(CallSession, fromLobby: Bool)
        case call(CallSession)
        /// The messages screen over a call that goes on underneath.
        case callMessages(CallSession, MessagesState, MessagesSession)
        case messages(MessagesState, MessagesSession)
    }

    /// Runs until the user quits; returns a line to print after the terminal is restored (or nil), or throws when
    /// the terminal cannot be opened or a direct join fails.
    public static func run(_ options: AppOptions) throws -> String? {
        var options = options
        var terminalOptions = Terminal.Options(standardErrorPath: options.standardErrorPath)
        terminalOptions.themeOverrides = options.themeOverrides
        terminalOptions.picture = options.picture
        let terminal = try Terminal(options: terminalOptions)
        defer { terminal.close() }
        var lobby = options.lobby
        var mode = Mode.lobby
        if let settings = options.directJoin {
            mode = .joining(try startCall(settings, options: options, terminal: terminal), fromLobby: false)
        }
        var lastLobbyDraw: Screen?
        var lastMessagesDraw: Screen?
        var lastMessagesState: (state: MessagesState, size: TerminalSize)?
        if options.openMessagesFirst {
            guard let account = options.messaging else { return options.messagingProblem }
            mode = .messages(
                MessagesState(account: account.identity.name, escape: .quit), MessagesSession(account: account))
        }
        while true {
            // Set when a call ended (from the call screen or under the messages screen): to the lobby, or out.
            var endedCall: String?
            // Set when the host removed us: back to the lobby with the reason, or out with it as an error.
            var removed: String?
            switch mode {
            case .lobby:
                let size = terminal.size
                let screen = LobbyScreen.render(lobby, size: size, theme: terminal.theme)
                if screen != lastLobbyDraw {
                    terminal.draw(screen, cursor: LobbyScreen.cursor(lobby, size: size)?.tuple)
                    lastLobbyDraw = screen
                }
                guard let key = terminal.readKey(timeout: 250) else { continue }
                var action: LobbyAction?
                switch key {
                case .mouseClick(let column, let row), .mouseDoubleClick(let column, let row):
                    action = LobbyScreen.click(&lobby, column: column, row: row, size: size)
                case .resize:
                    terminal.invalidate()
                    lastLobbyDraw = nil
                default:
                    action = reduce(&lobby, key)
                }
                switch action {
                case .join(let settings)?:
                    do {
                        mode = .joining(try startCall(settings, options: options, terminal: terminal), fromLobby: true)
                    } catch {
                        lobby.fail("\(error)")
                    }
                case .openSettings?:
                    var settings = SettingsState(current: lobby.profile, devices: options.deviceSettings())
                    settings.picture = terminal.pictureChoice
                    mode = .settings(settings)
                case .openMessages?:
                    if let account = options.messaging {
                        lastMessagesDraw = nil
                        terminal.invalidate()
                        mode = .messages(
                            MessagesState(account: account.identity.name), MessagesSession(account: account))
                    } else {
                        lobby.fail(options.messagingProblem)
                    }
                case .quit?:
                    return nil
                case nil:
                    break
                }

            case .settings(var settings):
                let size = terminal.size
                terminal.draw(SettingsScreen.render(settings, size: size, theme: terminal.theme))
                guard let key = terminal.readKey(timeout: 250) else { continue }
                var action: SettingsAction?
                switch key {
                case .mouseClick(let column, let row):
                    action = SettingsScreen.click(&settings, column: column, row: row, double: false, size: size)
                case .mouseDoubleClick(let column, let row):
                    action = SettingsScreen.click(&settings, column: column, row: row, double: true, size: size)
                case .resize:
                    terminal.invalidate()
                default:
                    action = reduce(&settings, key)
                }
                switch action {
                case .confirm(let profile)?:
                    lobby.profile = profile
                    if settings.devicesChanged { options.choose(settings.devices) }
                    lastLobbyDraw = nil
                    mode = .lobby
                case .cancel?:
                    lastLobbyDraw = nil
                    mode = .lobby
                case .quit?:
                    return nil
                case nil:
                    mode = .settings(settings)
                }

            case .joining(let session, let fromLobby):
                if fromLobby {
                    let size = terminal.size
                    terminal.draw(LobbyScreen.render(lobby, size: size, theme: terminal.theme))
                    lastLobbyDraw = nil
                }
                let key = terminal.readKey(timeout: session.idleTimeoutMilliseconds, wake: session.wake)
                if fromLobby, key == .control("c") || key == .escape {
                    session.close()
                    lobby.fail("Join cancelled.")
                    mode = .lobby
                    continue
                }
                switch session.step(key: fromLobby ? nil : key, terminal: terminal, draws: !fromLobby) {
                case .running, .openMessages:
                    if session.hasJoined {
                        terminal.invalidate()
                        mode = .call(session)
                    }
                case .left(let note):
                    session.close()
                    guard options.returnToLobby else { return note }
                    lobby.callEnded(note)
                    mode = .lobby
                case .failed(let reason), .removed(let reason):
                    session.close()
                    guard fromLobby else { throw CallSetupError("could not join: \(reason)") }
                    lobby.fail(reason)
                    mode = .lobby
                }

            case .messages(var state, let session):
                for update in session.takeUpdates() {
                    if let action = apply(&state, update) { session.perform(action) }
                }
                let size = terminal.size
                // Drawn only when something changed: the loop wakes ten times a second to take updates.
                if lastMessagesDraw == nil || lastMessagesState?.state != state || lastMessagesState?.size != size {
                    let screen = MessagesScreen.render(state, size: size, theme: terminal.theme)
                    if screen != lastMessagesDraw {
                        terminal.draw(screen, cursor: MessagesScreen.cursor(state, size: size)?.tuple)
                        lastMessagesDraw = screen
                    }
                    lastMessagesState = (state, size)
                }
                guard let key = terminal.readKey(timeout: 100) else {
                    mode = .messages(state, session)
                    continue
                }
                if key == .resize {
                    terminal.invalidate()
                    lastMessagesDraw = nil
                    mode = .messages(state, session)
                    continue
                }
                switch reduce(&state, key) {
                case .back?:
                    session.close()
                    if options.openMessagesFirst { return nil }
                    lastLobbyDraw = nil
                    terminal.invalidate()
                    mode = .lobby
                    continue
                case .quit?:
                    session.close()
                    return nil
                case let action?:
                    session.perform(action)
                case nil:
                    break
                }
                mode = .messages(state, session)

            case .call(let session):
                switch session.step(
                    keys: Self.readKeys(terminal, timeout: session.idleTimeoutMilliseconds, wake: session.wake),
                    terminal: terminal, draws: true)
                {
                case .running:
                    break
                case .openMessages:
                    guard let account = options.messaging else { break }
                    lastMessagesDraw = nil
                    terminal.invalidate()
                    mode = .callMessages(
                        session, MessagesState(account: account.identity.name, escape: .call),
                        MessagesSession(account: account))
                case .left(let note), .failed(let note):
                    session.close()
                    endedCall = note
                case .removed(let reason):
                    session.close()
                    removed = reason
                }

            case .callMessages(let call, var state, let messages):
                switch stepCallMessages(call, &state, messages, terminal: terminal, lastDraw: &lastMessagesDraw) {
                case .stay:
                    mode = .callMessages(call, state, messages)
                case .backToCall:
                    messages.close()
                    terminal.invalidate()
                    call.redrawAll()
                    mode = .call(call)
                case .callEnded(let note):
                    messages.close()
                    call.close()
                    endedCall = note
                case .removed(let reason):
                    messages.close()
                    call.close()
                    removed = reason
                }
            }
            if let reason = removed {
                guard options.returnToLobby else { throw CallSetupError(reason) }
                lobby.fail(reason)
                lastLobbyDraw = nil
                terminal.invalidate()
                mode = .lobby
            }
            if let note = endedCall {
                guard options.returnToLobby else { return note }
                lobby.callEnded(note)
                lastLobbyDraw = nil
                terminal.invalidate()
                mode = .lobby
            }
        }
    }

    /// The most keys one step of a call takes before it draws: a long paste shows in pieces rather than late.
    static let keysPerStep = 256

    /// Waits up to `timeout` ms for a key (or until `wake` is signalled), then takes every key already waiting behind
    /// it (a paste, a held arrow key), so the call draws once for the lot instead of once per key.
    private static func readKeys(_ terminal: Terminal, timeout: Int, wake: LoopWake?) -> [Key] {
        guard let first = terminal.readKey(timeout: timeout, wake: wake) else { return [] }
        var keys = [first]
        while keys.count < keysPerStep, let next = terminal.readKey(timeout: 0) {
            keys.append(next)
        }
        return keys
    }

    /// One turn of the messages screen over a call: the call keeps running (undrawn), Esc goes back to it.
    private static func stepCallMessages(
        _ call: CallSession, _ state: inout MessagesState, _ session: MessagesSession,
        terminal: Terminal, lastDraw: inout Screen?
    ) -> CallMessagesStep {
        for update in session.takeUpdates() {
            if let action = apply(&state, update) { session.perform(action) }
        }
        switch call.step(key: nil, terminal: terminal, draws: false) {
        case .left(let note), .failed(let note): return .callEnded(note)
        case .removed(let reason): return .removed(reason)
        case .running, .openMessages: break
        }
        let size = terminal.size
        let screen = MessagesScreen.render(state, size: size, theme: terminal.theme)
        if screen != lastDraw {
            terminal.draw(screen, cursor: MessagesScreen.cursor(state, size: size)?.tuple)
            lastDraw = screen
        }
        guard let key = terminal.readKey(timeout: 50) else { return .stay }
        if key == .resize {
            terminal.invalidate()
            lastDraw = nil
            return .stay
        }
        switch reduce(&state, key) {
        case .back?, .quit?:
            return .backToCall
        case let action?:
            session.perform(action)
        case nil:
            break
        }
        return .stay
    }

    private enum CallMessagesStep {
        case stay, backToCall, callEnded(String), removed(String)
    }

    private static func startCall(_ settings: JoinSettings, options: AppOptions, terminal: Terminal) throws
        -> CallSession
    {
        var requested = CallConfiguration(
            server: settings.server, room: settings.room, name: settings.name, role: settings.role,
            profile: settings.profile, videoSources: options.videoSources, audioSource: options.audioSource,
            audioSink: options.audioSink, echoCancellation: options.echoCancellation, logger: options.logger)
        requested.password = settings.password
        requested.fallbackServers = settings.fallbackServers
        requested.signalingSecurity = options.signalingSecurity
        requested.account = options.messaging?.identity
        requested.hideRoom = options.hideRoom
        requested.simulcast = options.simulcast
        requested.vp8Profile = options.vp8Profile
        requested.recording = options.recording
        if let encryption = settings.encryption {
            requested.encryption = try CallEncryption(
                secret: encryption.key, room: settings.room, suite: encryption.suite)
        }
        let (configuration, notices) = requested.resolvingDevices(options.devices)
        return try CallSession(
            configuration: configuration, settings: options.roomSettings, theme: terminal.theme,
            videoMode: terminal.videoColorMode, cells: terminal.pictureCells, pixels: terminal.pixelCanvas != nil,
            drawRate: options.drawRate, statisticsPath: options.statisticsPath,
            devices: options.devices, notices: settings.notices + notices, greeting: settings.greeting,
            messaging: options.messaging)
    }
}

extension AppOptions {
    /// The devices found now, with the ones these options use chosen.
    func deviceSettings() -> DeviceSettings {
        let microphones = ((try? devices.audio.inputDevices()) ?? []).map(\.name)
        let speakers = ((try? devices.audio.outputDevices()) ?? []).map(\.name)
        let cameras = ((try? devices.cameras.cameras()) ?? []).map(\.name)
        var chosen = DeviceSettings(
            microphones: microphones, speakers: speakers, cameras: cameras, echoCancellation: echoCancellation)
        if case .microphone(let name) = audioSource { chosen.microphone = name }
        if case .speaker(let name) = audioSink { chosen.speaker = name }
        if videoSources.count == 1, case .camera(let name) = videoSources[0] { chosen.camera = name }
        return chosen
    }

    /// Uses the devices chosen on the settings screen for the next call: they replace files and synthetic sources
    /// given on the command line.
    mutating func choose(_ chosen: DeviceSettings) {
        audioSource = .microphone(chosen.microphone)
        audioSink = .speaker(chosen.speaker)
        videoSources = chosen.camera.map { [.camera($0)] } ?? [.allCameras]
        echoCancellation = chosen.echoCancellation
    }
}
