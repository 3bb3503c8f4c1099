import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// The end-to-end cipher chosen in the lobby (SFrame with AES-GCM), or none.
public enum LobbyCipher: String, CaseIterable, Hashable, Sendable {
    /// No encryption.
    case none
    /// AES-128 in GCM mode.
    case aes128GCM = "aes-128-gcm"
    /// AES-256 in GCM mode.
    case aes256GCM = "aes-256-gcm"

    /// The SFrame cipher suite, nil for none.
    public var suite: SFrameCipherSuite? {
        switch self {
        case .none: return nil
        case .aes128GCM: return .aes128GCM
        case .aes256GCM: return .aes256GCM
        }
    }

    /// The name shown on screen.
    public var label: String {
        switch self {
        case .none: return "none"
        case .aes128GCM: return "AES-128-GCM"
        case .aes256GCM: return "AES-256-GCM"
        }
    }
}

/// The end-to-end encryption asked for (the lobby's Key, `--secret`, `--secret-file`, `--ask-secret`): a key is
/// always encryption. There is no way to hold a key without a cipher suite: `.none` with a key means the default,
/// AES-128-GCM, so no path can take a secret and join in the clear.
public struct JoinEncryption: Hashable, Sendable {
    /// The SFrame cipher suite.
    public let suite: SFrameCipherSuite
    /// The shared key as typed.
    public let key: String

    /// An encryption choice; `.none` means the default suite, AES-128-GCM.
    public init(cipher: LobbyCipher, key: String) {
        suite = cipher.suite ?? .aes128GCM
        self.key = key
    }

    /// The cipher as the lobby names it.
    public var cipher: LobbyCipher { suite == .aes256GCM ? .aes256GCM : .aes128GCM }
}

/// Everything the lobby hands to the shell to start a call, validated.
public struct JoinSettings: Hashable, Sendable {
    /// The relay to connect to.
    public var server: ServerAddress
    /// Other relays of its cluster, tried when it cannot be reached (`--server a,b`).
    public var fallbackServers: [ServerAddress] = []
    /// The display name (passed `DisplayName.validate`).
    public var name: String
    /// The room name (passed `RoomName.validate`: cleaned, outer spaces trimmed).
    public var room: String
    /// Broadcaster or audience.
    public var role: Role
    /// The camera profile to send.
    public var profile: VideoProfile
    /// The encryption asked for, nil for none.
    public var encryption: JoinEncryption?
    /// The room password (`--password`), nil for none.
    public var password: String? = nil
    /// Said in the chat pane once the call opens (what the name rules changed in the room name typed).
    public var notices: [String] = []
    /// Said once joined, after the members already in the room: the newest line when the call starts.
    public var greeting: String? = nil

    /// Join settings.
    public init(
        server: ServerAddress, name: String, room: String, role: Role, profile: VideoProfile,
        encryption: JoinEncryption?
    ) {
        self.server = server
        self.name = name
        self.room = room
        self.role = role
        self.profile = profile
        self.encryption = encryption
    }
}

/// What a key press in the lobby asks the shell to do.
public enum LobbyAction: Hashable, Sendable {
    /// Connect and join with these settings (the lobby now shows "Joining…" until `fail` or `callEnded`).
    case join(JoinSettings)
    /// Show the settings screen; give its result to `LobbyState.profile`.
    case openSettings
    /// Show the messages screen (conversations between calls).
    case openMessages
    /// Quit Parley.
    case quit
}

/// The lobby's focusable items, in Tab order.
public enum LobbyItem: Int, CaseIterable, Hashable, Sendable {
    /// The relay address field.
    case server
    /// The display name field.
    case name
    /// The room name field.
    case room
    /// The encryption key field.
    case encryptionKey
    /// The cipher choice.
    case cipher
    /// The role choice.
    case role
    /// The [Settings] button.
    case settings
    /// The [Join] button.
    case join
    /// The [Messages] button.
    case messages

    /// True for the items that take typing.
    public var isTextField: Bool {
        switch self {
        case .server, .name, .room, .encryptionKey: return true
        case .cipher, .role, .settings, .join, .messages: return false
        }
    }
}

/// A line under the lobby form: an error to fix, progress, or news from the last call.
public struct LobbyMessage: Hashable, Sendable {
    /// How the message looks.
    public enum Kind: Hashable, Sendable {
        /// Something to fix before joining (shown in the error colour).
        case error
        /// Joining is under way.
        case progress
        /// Plain information.
        case info
    }

    /// The words shown.
    public var text: String
    /// Error, progress or info.
    public var kind: Kind
    /// The item it is about, marked on the form.
    public var item: LobbyItem?

    /// A message.
    public init(text: String, kind: Kind, item: LobbyItem? = nil) {
        self.text = text
        self.kind = kind
        self.item = item
    }
}

/// The lobby form: where to connect, who you are, which room, encryption, role and video profile.
public struct LobbyState: Hashable, Sendable {
    /// The default relay address.
    public static let defaultServer = "127.0.0.1:\(ServerAddress.defaultPort)"

    /// Relay address as typed (`HOST:PORT`).
    public var server: InputLine
    /// Display name as typed.
    public var name: InputLine
    /// Room name, cleaned to the legal characters as it is typed.
    public var room: InputLine
    /// Encryption key as typed (shown masked).
    public var encryptionKey: InputLine
    /// The cipher choice.
    public var cipher: LobbyCipher
    /// Broadcaster or audience.
    public var role: Role
    /// The video profile (changed through the settings screen).
    public var profile: VideoProfile
    /// The focused item.
    public var focus: LobbyItem
    /// The message under the form, if any.
    public private(set) var message: LobbyMessage?
    /// True between `.join` and `fail`/`callEnded`: keys other than Ctrl-C are ignored.
    public private(set) var isJoining: Bool

    /// A lobby prefilled from the command line or the last session; focus starts on the first empty field.
    public init(
        server: String = LobbyState.defaultServer, name: String = "", room: String = "",
        role: Role = .broadcaster, profile: VideoProfile = .standard
    ) {
        self.server = InputLine(server, maximumLength: 255)
        self.name = InputLine(name, maximumLength: 256)
        var roomLine = InputLine(room, maximumLength: RoomName.maximumBytes)
        roomLine.clean(with: RoomName.clean)
        self.room = roomLine
        encryptionKey = InputLine("", maximumLength: 256)
        cipher = .none
        self.role = role
        self.profile = profile
        focus = name.isEmpty ? .name : room.isEmpty ? .room : .join
        message = nil
        isJoining = false
    }

    /// Connecting failed: shows `message` (e.g. "cannot reach the relay at 10.0.0.5:7878") and lets the user
    /// edit again.
    public mutating func fail(_ message: String) {
        isJoining = false
        self.message = LobbyMessage(text: message, kind: .error)
    }

    /// The call ended and the lobby shows again, with an optional note ("You left standup after 12:04").
    public mutating func callEnded(_ note: String? = nil) {
        isJoining = false
        message = note.map { LobbyMessage(text: $0, kind: .info) }
    }

    /// The settings the form holds, or the first problem: server, then name, then room, then encryption.
    public func validated() -> Result<JoinSettings, LobbyValidationError> {
        let address: ServerAddress
        do {
            address = try ServerAddress(parsing: server.text)
        } catch {
            return .failure(LobbyValidationError(item: .server, message: error.description))
        }
        let validName: String
        let validRoom: String
        do {
            validName = try DisplayName.validate(name.text)
        } catch {
            return .failure(LobbyValidationError(item: .name, message: error.description))
        }
        do {
            validRoom = try RoomName.validate(room.text)
        } catch {
            return .failure(LobbyValidationError(item: .room, message: error.description))
        }
        var encryption: JoinEncryption?
        if cipher != .none || !encryptionKey.text.isEmpty {
            guard !encryptionKey.text.isEmpty else {
                return .failure(
                    LobbyValidationError(
                        item: .encryptionKey,
                        message: "Encryption key is empty: type a key, or set the cipher to none."))
            }
            do {
                try CallEncryption.checkSecret(encryptionKey.text)
            } catch {
                return .failure(LobbyValidationError(item: .encryptionKey, message: error.description))
            }
            encryption = JoinEncryption(cipher: cipher, key: encryptionKey.text)
        }
        return .success(
            JoinSettings(
                server: address, name: validName, room: validRoom, role: role, profile: profile,
                encryption: encryption))
    }

    /// Fills the Key and Cipher from the command line's secret (`parley --secret-file F`), nil leaves them empty.
    public mutating func prefill(_ encryption: JoinEncryption?) {
        guard let encryption else { return }
        encryptionKey = InputLine(encryption.key, maximumLength: max(256, encryption.key.count))
        cipher = encryption.cipher
    }

    /// The cipher follows the key: typing a key turns "none" into AES-128-GCM, clearing it turns encryption off.
    mutating func cipherFollowsKey() {
        if encryptionKey.text.isEmpty {
            cipher = .none
        } else if cipher == .none {
            cipher = .aes128GCM
        }
    }

    mutating func setMessage(_ message: LobbyMessage?) {
        self.message = message
    }

    mutating func setJoining() {
        isJoining = true
    }
}

/// Why the lobby refused to join: the item to fix and the message for the user.
public struct LobbyValidationError: Error, Hashable, Sendable {
    /// The field with the problem.
    public var item: LobbyItem
    /// The message, exactly as the validator words it.
    public var message: String

    /// A validation error.
    public init(item: LobbyItem, message: String) {
        self.item = item
        self.message = message
    }
}

/// Applies a key to the lobby: Tab/Down and Up move the focus, typing edits the focused field, Space and
/// Left/Right change a choice, Enter joins (or opens settings on [Settings]), Esc quits, and q quits when the
/// focus is not on a text field. Ctrl-C always quits.
public func reduce(_ lobby: inout LobbyState, _ key: Key) -> LobbyAction? {
    if case .control(let letter) = key, letter == "c" || letter == "C" { return .quit }
    if lobby.isJoining { return nil }
    let items = LobbyItem.allCases
    switch key {
    case .escape:
        return .quit
    case .tab, .down:
        lobby.focus = items[(lobby.focus.rawValue + 1) % items.count]
        return nil
    case .up:
        lobby.focus = items[(lobby.focus.rawValue + items.count - 1) % items.count]
        return nil
    case .enter:
        return lobby.focus == .settings ? .openSettings : lobby.focus == .messages ? .openMessages : join(&lobby)
    default:
        break
    }

    switch lobby.focus {
    case .server:
        if lobby.server.edit(key) { lobby.clearError() }
    case .name:
        if lobby.name.edit(key) { lobby.clearError() }
    case .room:
        // Cleaned as typed: an illegal character is dropped at once, as the reference's room field does.
        let before = lobby.room
        lobby.room.edit(key)
        lobby.room.clean(with: RoomName.clean)
        if lobby.room != before { lobby.clearError() }
    case .encryptionKey:
        if lobby.encryptionKey.edit(key) {
            lobby.clearError()
            lobby.cipherFollowsKey()
        }
    case .cipher:
        if let step = choiceStep(key) {
            // While a key is typed the cipher cannot be none: a key is always encryption.
            let choices = LobbyCipher.allCases.filter { $0 != .none || lobby.encryptionKey.text.isEmpty }
            lobby.cipher = cycle(choices, from: lobby.cipher, by: step)
            lobby.clearError()
        } else if key == .char("q") {
            return .quit
        }
    case .role:
        if let step = choiceStep(key) {
            lobby.role = cycle(Role.allCases, from: lobby.role, by: step)
        } else if key == .char("q") {
            return .quit
        }
    case .settings, .join, .messages:
        let buttons: [LobbyItem] = [.settings, .join, .messages]
        switch key {
        case .char(" "):
            return lobby.focus == .settings ? .openSettings : lobby.focus == .messages ? .openMessages : join(&lobby)
        case .left, .right:
            let index = buttons.firstIndex(of: lobby.focus) ?? 0
            lobby.focus = buttons[(index + (key == .right ? 1 : buttons.count - 1)) % buttons.count]
        case .char("q"):
            return .quit
        default:
            break
        }
    }
    return nil
}

/// Space and Right step a choice forward, Left steps it back.
private func choiceStep(_ key: Key) -> Int? {
    switch key {
    case .char(" "), .right: return 1
    case .left: return -1
    default: return nil
    }
}

private func cycle<T: Equatable>(_ all: [T], from current: T, by step: Int) -> T {
    let index = all.firstIndex(of: current) ?? 0
    return all[(index + step + all.count) % all.count]
}

private func join(_ lobby: inout LobbyState) -> LobbyAction? {
    switch lobby.validated() {
    case .success(let settings):
        lobby.setJoining()
        lobby.setMessage(
            LobbyMessage(text: "Joining \(settings.room) at \(settings.server)…", kind: .progress))
        return .join(settings)
    case .failure(let error):
        lobby.focus = error.item
        lobby.setMessage(LobbyMessage(text: error.message, kind: .error, item: error.item))
        return nil
    }
}

extension LobbyState {
    /// An edit makes an error about the form stale; news from the last call stays until then too.
    mutating func clearError() {
        if message != nil { message = nil }
    }
}
