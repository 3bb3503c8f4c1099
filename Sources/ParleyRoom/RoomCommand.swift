/// Every user command of the room: the one table behind key dispatch, the control bar and the help overlay.
/// The raw value is the command's name in the key configuration file.
public enum RoomCommand: String, CaseIterable, Hashable, Sendable {
    /// Mute or unmute the microphone.
    case microphone = "mic"
    /// Turn the camera off or on.
    case camera = "video"
    /// Switch to the next camera.
    case switchCamera = "switch-camera"
    /// Turn call audio playback off or on.
    case speaker = "speaker"
    /// Turn the outgoing video's sepia filter on or off.
    case filter = "filter"
    /// Switch between broadcaster and audience.
    case broadcast = "broadcast"
    /// Open the chat input line.
    case chat = "chat"
    /// Hide or show the control bar and chat pane (the reference's flow views).
    case hideControls = "hide"
    /// Fullscreen the selected tile, or return to the grid.
    case fullscreen = "fullscreen"
    /// Return to the grid, or hide the stats.
    case grid = "grid"
    /// Next page of tiles.
    case nextPage = "next-page"
    /// Previous page of tiles.
    case previousPage = "previous-page"
    /// Show or hide media statistics on tiles.
    case stats = "stats"
    /// Record the call to a WebM file, or stop recording (the room is told).
    case record = "record"
    /// Show the help overlay.
    case help = "help"
    /// Switch the chat pane between the room and a direct conversation.
    case direct = "dm"
    /// Open the messages screen over the call.
    case messages = "messages"
    /// Show the room's meeting link and copy it to the clipboard.
    case invite = "invite"
    /// Show who is in the call and what happened in it.
    case roster = "roster"
    /// Speaker view: the dominant speaker large, the others in a strip.
    case speakerView = "speaker-view"
    /// Hide or show the self view (the others still see the camera).
    case selfView = "self-view"
    /// Say who shares a terminal and how to share one (`parley share`).
    case share = "share"
    /// Ask to leave the call.
    case leave = "leave"

    /// Keys bound when the configuration says nothing.
    public var defaultKeys: [Key] {
        switch self {
        case .microphone: return [.char("m")]
        case .camera: return [.char("v")]
        case .switchCamera: return [.char("c")]
        case .speaker: return [.char("s")]
        case .filter: return [.char("f")]
        case .broadcast: return [.char("b")]
        case .chat: return [.char("t"), .enter]
        case .hideControls: return [.char("h")]
        case .fullscreen: return [.char("z")]
        case .grid: return [.escape]
        case .nextPage: return [.char("]"), .pageDown]
        case .previousPage: return [.char("["), .pageUp]
        case .stats: return [.char("i")]
        case .help: return [.char("?"), .function(1)]
        case .direct: return [.char("d")]
        case .messages: return [.char("M")]
        case .invite: return [.char("l")]
        case .roster: return [.char("r")]
        case .speakerView: return [.char("a")]
        case .selfView: return [.char("V")]
        case .record: return [.char("R")]
        case .share: return [.char("S")]
        case .leave: return [.char("q"), .control("c")]
        }
    }

    /// Short label for the control bar.
    public var label: String {
        switch self {
        case .microphone: return "Mic"
        case .camera: return "Video"
        case .switchCamera: return "Switch"
        case .speaker: return "Speaker"
        case .filter: return "Sepia"
        case .broadcast: return "Live"
        case .chat: return "Chat"
        case .hideControls: return "Hide"
        case .fullscreen: return "Zoom"
        case .grid: return "Grid"
        case .nextPage: return "Next"
        case .previousPage: return "Prev"
        case .stats: return "Stats"
        case .help: return "Help"
        case .direct: return "DM"
        case .messages: return "Messages"
        case .invite: return "Invite"
        case .roster: return "Roster"
        case .speakerView: return "Active"
        case .selfView: return "Self"
        case .record: return "Rec"
        case .share: return "Share"
        case .leave: return "Leave"
        }
    }

    /// One-line explanation for the help overlay.
    public var help: String {
        switch self {
        case .microphone: return "Mute or unmute your microphone"
        case .camera: return "Turn your camera off or on"
        case .switchCamera: return "Switch to the next camera (camera on)"
        case .speaker: return "Turn call audio playback off or on"
        case .filter: return "Sepia filter on or off: your picture in brown and cream, for you and everyone"
        case .broadcast: return "Switch between broadcasting and watching (audience)"
        case .chat: return "Type a chat message: Enter sends, Esc closes"
        case .hideControls: return "Hide or show the control bar and chat pane"
        case .fullscreen: return "Fullscreen the selected tile, or return to the grid"
        case .grid: return "Return to the grid from fullscreen, or hide the stats"
        case .nextPage: return "Show the next page of tiles"
        case .previousPage: return "Show the previous page of tiles"
        case .stats: return "Show or hide resolution, frame rate, bitrate and loss"
        case .help: return "Show this help"
        case .direct: return "Chat pane: the room, or your last direct messages (/dm NAME)"
        case .messages: return "Your messages and channels; the call goes on (Esc returns)"
        case .invite: return "Show the meeting link and copy it to the clipboard"
        case .roster: return "Show or hide who is here (role, mic, camera, since when) and the activity"
        case .speakerView: return "Speaker view: whoever is talking large, the rest in a strip (grid again: a)"
        case .selfView: return "Hide or show your own picture (the others still see your camera)"
        case .record: return "Record the call to a WebM file, or stop (the room sees it)"
        case .share: return "Who shares a terminal, and how to share yours (parley share)"
        case .leave: return "Leave the call (asks to confirm)"
        }
    }

    /// True for the commands the control bar shows as buttons.
    public var isInControlBar: Bool {
        switch self {
        case .microphone, .camera, .switchCamera, .speaker, .filter, .broadcast, .chat, .stats, .record, .help,
            .leave:
            return true
        case .hideControls, .fullscreen, .grid, .nextPage, .previousPage, .direct, .messages, .invite, .roster,
            .speakerView, .selfView, .share:
            return false
        }
    }
}

/// Names and labels of keys, as written in the key configuration and shown in the control bar and help.
public enum KeyName {
    private static let named: [(String, Key)] = [
        ("space", .char(" ")), ("enter", .enter), ("return", .enter), ("esc", .escape), ("escape", .escape),
        ("tab", .tab), ("backspace", .backspace), ("delete", .delete), ("del", .delete),
        ("up", .up), ("down", .down), ("left", .left), ("right", .right), ("home", .home), ("end", .end),
        ("pageup", .pageUp), ("pgup", .pageUp), ("pagedown", .pageDown), ("pgdn", .pageDown),
    ]

    /// Parses a key name: one character (case matters), a name such as `enter`, `esc`, `space`, `pageup`, `f1`…`f12`,
    /// or `ctrl-a`…`ctrl-z` (also `c-a`, `^a`). Names are case-insensitive. Nil when it names no key.
    public static func parse(_ name: String) -> Key? {
        if name.count == 1, let character = name.first, !character.isWhitespace {
            return .char(character)
        }
        let lower = name.lowercased()
        if let key = named.first(where: { $0.0 == lower })?.1 { return key }
        if lower.hasPrefix("f"), let number = Int(lower.dropFirst()), (1...12).contains(number),
            lower.dropFirst().allSatisfy(\.isASCII)
        {
            return .function(number)
        }
        for prefix in ["ctrl-", "ctrl+", "c-", "^"] where lower.hasPrefix(prefix) {
            let rest = lower.dropFirst(prefix.count)
            if rest.count == 1, let letter = rest.first, letter.isASCII, letter.isLetter {
                return .control(letter)
            }
        }
        return nil
    }

    /// A short label for screens: "m", "Enter", "Esc", "Ctrl-C", "F1", "PgDn", "Space".
    public static func label(_ key: Key) -> String {
        switch key {
        case .char(" "): return "Space"
        case .char(let character): return String(character)
        case .enter: return "Enter"
        case .escape: return "Esc"
        case .backspace: return "Backspace"
        case .delete: return "Del"
        case .tab: return "Tab"
        case .up: return "Up"
        case .down: return "Down"
        case .left: return "Left"
        case .right: return "Right"
        case .home: return "Home"
        case .end: return "End"
        case .pageUp: return "PgUp"
        case .pageDown: return "PgDn"
        case .function(let number): return "F\(number)"
        case .control(let character): return "Ctrl-" + String(character).uppercased()
        case .mouseClick: return "Click"
        case .mouseDoubleClick: return "Double-click"
        case .resize: return "Resize"
        }
    }

    /// True for keys a configuration may not bind: the tile numbers 1–9, mouse actions and resizes.
    public static func isReserved(_ key: Key) -> Bool {
        switch key {
        case .char(let character): return ("1"..."9").contains(character)
        case .mouseClick, .mouseDoubleClick, .resize: return true
        default: return false
        }
    }

    /// The same key with a control letter lowercased, so `.control("C")` and `.control("c")` match.
    static func normalized(_ key: Key) -> Key {
        if case .control(let character) = key { return .control(Character(character.lowercased())) }
        return key
    }
}

/// Why a key configuration was rejected; `description` names the line and what to write instead.
public enum KeymapError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A line without `=`.
    case missingEquals(line: Int, text: String)
    /// The name before `=` is not a command.
    case unknownCommand(line: Int, name: String)
    /// Nothing after `=`.
    case missingKey(line: Int, command: String)
    /// A key name that names no key.
    case unknownKey(line: Int, name: String)
    /// A key kept for tile numbers or the mouse.
    case reservedKey(line: Int, name: String)
    /// The same command set on two lines.
    case duplicateCommand(line: Int, command: String, firstLine: Int)
    /// One key given to two commands in the configuration.
    case duplicateKey(line: Int, name: String, command: String, otherCommand: String, otherLine: Int)
    /// Taking this key would leave a command not mentioned in the configuration without any key.
    case noKeyLeft(line: Int, name: String, command: String)

    /// The message for the user, naming the line.
    public var description: String {
        switch self {
        case .missingEquals(let line, let text):
            return "line \(line): expected `command = key`, got \"\(text)\""
        case .unknownCommand(let line, let name):
            let names = RoomCommand.allCases.map(\.rawValue).joined(separator: ", ")
            return "line \(line): unknown command \"\(name)\"; commands are \(names)"
        case .missingKey(let line, let command):
            return "line \(line): no key given for \(command); write `\(command) = none` to unbind it"
        case .unknownKey(let line, let name):
            return "line \(line): unknown key \"\(name)\"; use one character, space, enter, esc, tab, backspace,"
                + " delete, up, down, left, right, home, end, pageup, pagedown, f1…f12 or ctrl-a…ctrl-z"
        case .reservedKey(let line, let name):
            return "line \(line): key \(name) is reserved (1–9 address tiles)"
        case .duplicateCommand(let line, let command, let firstLine):
            return "line \(line): \(command) is already set on line \(firstLine)"
        case .duplicateKey(let line, let name, let command, let otherCommand, let otherLine):
            return "line \(line): key \(name) is bound to both \(command) and \(otherCommand) (line \(otherLine))"
        case .noKeyLeft(let line, let name, let command):
            return "line \(line): key \(name) was the only key for \(command); give \(command) another key too"
        }
    }
}

/// Which key runs which command: the defaults from ``RoomCommand/defaultKeys``, overridable from configuration.
public struct Keymap: Hashable, Sendable {
    private var bindings: [RoomCommand: [Key]]
    private var lookup: [Key: RoomCommand]

    /// The default keys.
    public static let standard = Keymap(
        uncheckedBindings: Dictionary(
            uniqueKeysWithValues: RoomCommand.allCases.map { ($0, $0.defaultKeys) }))

    private init(uncheckedBindings: [RoomCommand: [Key]]) {
        bindings = uncheckedBindings
        var lookup: [Key: RoomCommand] = [:]
        for command in RoomCommand.allCases {
            for key in uncheckedBindings[command] ?? [] {
                lookup[KeyName.normalized(key)] = command
            }
        }
        self.lookup = lookup
    }

    /// The keys of a command, in the order configured (the first is shown in the control bar).
    public func keys(for command: RoomCommand) -> [Key] {
        bindings[command] ?? []
    }

    /// The command a key runs, if any.
    public func command(for key: Key) -> RoomCommand? {
        lookup[KeyName.normalized(key)]
    }

    /// "m", "t/Enter": the labels of a command's keys joined by slashes, or "—" when it has none.
    public func keyLabels(for command: RoomCommand) -> String {
        let keys = keys(for: command)
        return keys.isEmpty ? "—" : keys.map(KeyName.label).joined(separator: "/")
    }

    /// Parses a key configuration over `base`: one `command = key [key…]` per line (keys separated by blanks,
    /// `none` to unbind), `#` starts a comment line. A key taken from a command not mentioned moves silently.
    public static func parse(_ text: String, base: Keymap = .standard) throws(KeymapError) -> Keymap {
        var overrides: [RoomCommand: (keys: [Key], line: Int)] = [:]
        var owner: [Key: (command: RoomCommand, line: Int)] = [:]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (offset, rawLine) in lines.enumerated() {
            let lineNumber = offset + 1
            let line = rawLine.trimmingBlanks()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw .missingEquals(line: lineNumber, text: String(line))
            }
            let name = line[..<equals].trimmingBlanks()
            guard let command = RoomCommand(rawValue: name.lowercased()) else {
                throw .unknownCommand(line: lineNumber, name: String(name))
            }
            if let earlier = overrides[command] {
                throw .duplicateCommand(line: lineNumber, command: command.rawValue, firstLine: earlier.line)
            }
            let names = line[line.index(after: equals)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard !names.isEmpty else { throw .missingKey(line: lineNumber, command: command.rawValue) }
            var keys: [Key] = []
            if names.count == 1, names[0].lowercased() == "none" {
                keys = []
            } else {
                for keyName in names {
                    guard let parsed = KeyName.parse(String(keyName)) else {
                        throw .unknownKey(line: lineNumber, name: String(keyName))
                    }
                    let key = KeyName.normalized(parsed)
                    guard !KeyName.isReserved(key) else { throw .reservedKey(line: lineNumber, name: String(keyName)) }
                    if let other = owner[key] {
                        if other.command == command { continue }
                        throw .duplicateKey(
                            line: lineNumber, name: String(keyName), command: command.rawValue,
                            otherCommand: other.command.rawValue, otherLine: other.line)
                    }
                    owner[key] = (command, lineNumber)
                    keys.append(key)
                }
            }
            overrides[command] = (keys, lineNumber)
        }

        var bindings: [RoomCommand: [Key]] = [:]
        for command in RoomCommand.allCases {
            if let override = overrides[command] {
                bindings[command] = override.keys
                continue
            }
            let kept = base.keys(for: command).filter { owner[KeyName.normalized($0)] == nil }
            if kept.isEmpty, let stolen = base.keys(for: command).first {
                let taker = owner[KeyName.normalized(stolen)]!
                throw .noKeyLeft(line: taker.line, name: KeyName.label(stolen), command: command.rawValue)
            }
            bindings[command] = kept
        }
        return Keymap(uncheckedBindings: bindings)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and carriage returns.
    func trimmingBlanks() -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else {
            return Substring()
        }
        return Substring(self[first...last])
    }
}
