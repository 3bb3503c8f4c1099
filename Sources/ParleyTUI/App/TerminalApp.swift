import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyPictures
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
    /// How media reaches the relay (`--media`).
    public var mediaTransport = MediaTransport.auto
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
    /// Runs until the user quits; returns a line to print after the terminal is restored (or nil), or throws when
    /// the terminal cannot be opened or a direct join fails.
    public static func run(_ options: AppOptions) throws -> String? {
        var terminalOptions = Terminal.Options(standardErrorPath: options.standardErrorPath)
        terminalOptions.themeOverrides = options.themeOverrides
        terminalOptions.picture = options.picture
        let terminal = try Terminal(options: terminalOptions)
        defer { terminal.close() }
        var app = AppLoop(terminal: terminal, options: options)
        if let settings = options.directJoin {
            app.mode = .joining(
                try AppLoop.startCall(settings, options: options, terminal: terminal), fromLobby: false)
        }
        if options.openMessagesFirst {
            guard let account = options.messaging else { return options.messagingProblem }
            app.mode = .messages(
                MessagesState(account: account.identity.name, escape: .quit), MessagesSession(account: account))
        }
        while true {
            if case .exit(let line) = try app.turn() { return line }
        }
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
