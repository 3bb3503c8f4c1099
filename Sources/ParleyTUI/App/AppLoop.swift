import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleySecurity

/// The app's screens over one terminal: which one is up, the lobby's fields, and the last screens drawn (an
/// unchanged screen is not drawn again). `TerminalApp.run` turns it until it says to exit.
struct AppLoop {
    enum Mode {
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

    /// How one turn ended.
    enum Turn: Equatable {
        /// Take another turn.
        case next
        /// Leave the app, printing this line (if any) once the terminal is restored.
        case exit(String?)
    }

    /// How one screen's turn ended.
    private enum Outcome {
        case next
        case exit(String?)
        /// The call ended with this note: back to the lobby, or out with it.
        case callEnded(String)
        /// The host removed us: back to the lobby with the reason, or out with it as an error.
        case removed(String)
    }

    let terminal: Terminal
    var options: AppOptions
    var lobby: LobbyState
    var mode = Mode.lobby
    private var lastLobbyDraw: Screen?
    private var lastMessagesDraw: Screen?
    private var lastMessagesState: (state: MessagesState, size: TerminalSize)?

    /// The lobby, prefilled from `options`.
    init(terminal: Terminal, options: AppOptions) {
        self.terminal = terminal
        self.options = options
        lobby = options.lobby
    }

    /// One turn of the screen that is up: drawn, and a key or an update handled. Throws when a direct join fails
    /// or, without a lobby to return to, the host removed us.
    mutating func turn() throws -> Turn {
        let outcome: Outcome
        switch mode {
        case .lobby: outcome = stepLobby()
        case .settings(let settings): outcome = stepSettings(settings)
        case .joining(let session, let fromLobby): outcome = try stepJoining(session, fromLobby: fromLobby)
        case .messages(let state, let session): outcome = stepMessages(state, session)
        case .call(let session): outcome = stepCall(session)
        case .callMessages(let call, let state, let messages): outcome = stepCallMessages(call, state, messages)
        }
        switch outcome {
        case .next:
            return .next
        case .exit(let line):
            return .exit(line)
        case .removed(let reason):
            guard options.returnToLobby else { throw CallSetupError(reason) }
            lobby.fail(reason)
        case .callEnded(let note):
            guard options.returnToLobby else { return .exit(note) }
            lobby.callEnded(note)
        }
        lastLobbyDraw = nil
        terminal.invalidate()
        mode = .lobby
        return .next
    }

    private mutating func stepLobby() -> Outcome {
        let size = terminal.size
        let screen = LobbyScreen.render(lobby, size: size, theme: terminal.theme)
        if screen != lastLobbyDraw {
            terminal.draw(screen, cursor: LobbyScreen.cursor(lobby, size: size)?.tuple)
            lastLobbyDraw = screen
        }
        guard let key = terminal.readKey(timeout: 250) else { return .next }
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
                mode = .joining(try Self.startCall(settings, options: options, terminal: terminal), fromLobby: true)
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
                mode = .messages(MessagesState(account: account.identity.name), MessagesSession(account: account))
            } else {
                lobby.fail(options.messagingProblem)
            }
        case .quit?:
            return .exit(nil)
        case nil:
            break
        }
        return .next
    }

    private mutating func stepSettings(_ settings: SettingsState) -> Outcome {
        var settings = settings
        let size = terminal.size
        terminal.draw(SettingsScreen.render(settings, size: size, theme: terminal.theme))
        guard let key = terminal.readKey(timeout: 250) else { return .next }
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
            return .exit(nil)
        case nil:
            mode = .settings(settings)
        }
        return .next
    }

    private mutating func stepJoining(_ session: CallSession, fromLobby: Bool) throws -> Outcome {
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
            return .next
        }
        switch session.step(key: fromLobby ? nil : key, terminal: terminal, draws: !fromLobby) {
        case .running, .openMessages:
            if session.hasJoined {
                terminal.invalidate()
                mode = .call(session)
            }
        case .left(let note):
            session.close()
            guard options.returnToLobby else { return .exit(note) }
            lobby.callEnded(note)
            mode = .lobby
        case .failed(let reason), .removed(let reason):
            session.close()
            guard fromLobby else { throw CallSetupError("could not join: \(reason)") }
            lobby.fail(reason)
            mode = .lobby
        }
        return .next
    }

    private mutating func stepMessages(_ state: MessagesState, _ session: MessagesSession) -> Outcome {
        var state = state
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
        mode = .messages(state, session)
        guard let key = terminal.readKey(timeout: 100) else { return .next }
        if key == .resize {
            terminal.invalidate()
            lastMessagesDraw = nil
            return .next
        }
        switch reduce(&state, key, at: Int64(Date().timeIntervalSince1970 * 1000)) {
        case .back?:
            session.close()
            if options.openMessagesFirst { return .exit(nil) }
            lastLobbyDraw = nil
            terminal.invalidate()
            mode = .lobby
            return .next
        case .quit?:
            session.close()
            return .exit(nil)
        case let action?:
            session.perform(action)
        case nil:
            break
        }
        mode = .messages(state, session)
        return .next
    }

    private mutating func stepCall(_ session: CallSession) -> Outcome {
        let keys = Self.readKeys(terminal, timeout: session.idleTimeoutMilliseconds, wake: session.wake)
        switch session.step(keys: keys, terminal: terminal, draws: true) {
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
            return .callEnded(note)
        case .removed(let reason):
            session.close()
            return .removed(reason)
        }
        return .next
    }

    /// One turn of the messages screen over a call: the call keeps running (undrawn), Esc goes back to it.
    private mutating func stepCallMessages(
        _ call: CallSession, _ state: MessagesState, _ session: MessagesSession
    ) -> Outcome {
        var state = state
        defer { if case .callMessages = mode { mode = .callMessages(call, state, session) } }
        for update in session.takeUpdates() {
            if let action = apply(&state, update) { session.perform(action) }
        }
        switch call.step(key: nil, terminal: terminal, draws: false) {
        case .left(let note), .failed(let note):
            session.close()
            call.close()
            return .callEnded(note)
        case .removed(let reason):
            session.close()
            call.close()
            return .removed(reason)
        case .running, .openMessages:
            break
        }
        let size = terminal.size
        let screen = MessagesScreen.render(state, size: size, theme: terminal.theme)
        if screen != lastMessagesDraw {
            terminal.draw(screen, cursor: MessagesScreen.cursor(state, size: size)?.tuple)
            lastMessagesDraw = screen
        }
        guard let key = terminal.readKey(timeout: 50) else { return .next }
        if key == .resize {
            terminal.invalidate()
            lastMessagesDraw = nil
            return .next
        }
        switch reduce(&state, key, at: Int64(Date().timeIntervalSince1970 * 1000)) {
        case .back?, .quit?:
            session.close()
            terminal.invalidate()
            call.redrawAll()
            mode = .call(call)
        case let action?:
            session.perform(action)
        case nil:
            break
        }
        return .next
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

    /// Starts joining `settings` with the devices and choices of `options`.
    static func startCall(_ settings: JoinSettings, options: AppOptions, terminal: Terminal) throws -> CallSession {
        var requested = CallConfiguration(
            server: settings.server, room: settings.room, name: settings.name, role: settings.role,
            profile: settings.profile, videoSources: options.videoSources, audioSource: options.audioSource,
            audioSink: options.audioSink, echoCancellation: options.echoCancellation, logger: options.logger)
        requested.password = settings.password
        requested.fallbackServers = settings.fallbackServers
        requested.signalingSecurity = options.signalingSecurity
        requested.mediaTransport = options.mediaTransport
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
