import ParleyEngine
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Lobby")
struct LobbyTests {
    static let theme = Theme(depth: .palette256)

    /// Types text into the focused field, one key per character.
    static func type(_ text: String, into lobby: inout LobbyState) {
        for character in text {
            #expect(reduce(&lobby, .char(character)) == nil)
        }
    }

    @Test("Tab and Down walk every item in order and wrap; Up walks back")
    func focusOrder() {
        var lobby = LobbyState(name: "alice", room: "standup")
        lobby.focus = .server
        var seen: [LobbyItem] = []
        for _ in 0..<LobbyItem.allCases.count {
            seen.append(lobby.focus)
            #expect(reduce(&lobby, .tab) == nil)
        }
        #expect(seen == LobbyItem.allCases)
        #expect(lobby.focus == .server)
        #expect(reduce(&lobby, .up) == nil)
        #expect(lobby.focus == .messages)
        #expect(reduce(&lobby, .down) == nil)
        #expect(lobby.focus == .server)
    }

    @Test("focus starts on the first empty field")
    func initialFocus() {
        #expect(LobbyState().focus == .name)
        #expect(LobbyState(name: "alice").focus == .room)
        #expect(LobbyState(name: "alice", room: "standup").focus == .join)
        #expect(LobbyState().server.text == "127.0.0.1:7878")
    }

    @Test("typing edits the focused field at the cursor")
    func typing() {
        var lobby = LobbyState()
        Self.type("alce", into: &lobby)
        _ = reduce(&lobby, .left)
        _ = reduce(&lobby, .left)
        Self.type("i", into: &lobby)
        #expect(lobby.name.text == "alice")
        _ = reduce(&lobby, .end)
        _ = reduce(&lobby, .backspace)
        #expect(lobby.name.text == "alic")
        // q is a letter while typing, not quit.
        #expect(reduce(&lobby, .char("q")) == nil)
        #expect(lobby.name.text == "alicq")
    }

    struct RoomCase: Sendable, CustomTestStringConvertible {
        var typed: String
        var field: String
        var testDescription: String { typed }
    }

    @Test(
        "the room name is cleaned as it is typed",
        arguments: [
            RoomCase(typed: "stand/up", field: "standup"),
            RoomCase(typed: "my room!", field: "my room!"),
            RoomCase(typed: "café*", field: "caf"),
            RoomCase(typed: "日本 room", field: " room"),
            RoomCase(typed: String(repeating: "a", count: 70), field: String(repeating: "a", count: 64)),
        ])
    func roomCleaning(_ row: RoomCase) {
        var lobby = LobbyState(name: "alice")
        Self.type(row.typed, into: &lobby)
        #expect(lobby.room.text == row.field)
        #expect(lobby.room.text == RoomName.clean(row.typed))
        #expect(lobby.room.cursor == lobby.room.text.count)
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        var name: String
        var server = "127.0.0.1:7878"
        var displayName = "alice"
        var room = "standup"
        var cipher = LobbyCipher.none
        var item: LobbyItem
        var message: String
        var testDescription: String { name }
    }

    static let badCases: [BadCase] = [
        BadCase(
            name: "empty name", displayName: "", item: .name,
            message: "Name is empty: pick a name such as alice."),
        BadCase(
            name: "name with a space", displayName: "alice smith", item: .name,
            message: "Name \"alice smith\" contains a space: use alice_smith instead."),
        BadCase(
            name: "name too long", displayName: String(repeating: "x", count: 129), item: .name,
            message: "Name is 129 characters long: the limit is 128."),
        BadCase(name: "room of spaces", room: "   ", item: .room, message: NameError.emptyRoomName.description),
        BadCase(
            name: "empty server", server: "", item: .server,
            message: "server address is empty; type HOST:PORT, e.g. 127.0.0.1:7878"),
        BadCase(
            name: "port out of range", server: "relay:99999", item: .server,
            message: "server port \"99999\" is not a number from 1 to 65535"),
        BadCase(
            name: "bare IPv6", server: "::1", item: .server,
            message: "server address \"::1\" looks like a bare IPv6 address; write it as [::1]:7878"),
        BadCase(
            name: "server checked before the name", server: ":7878", displayName: "", item: .server,
            message: "server address \":7878\" has no host; type HOST:PORT, e.g. 127.0.0.1:7878"),
        BadCase(
            name: "cipher without a key", cipher: .aes256GCM, item: .encryptionKey,
            message: "Encryption key is empty: type a key, or set the cipher to none."),
    ]

    @Test("Enter with a bad field stays, focuses it and shows the validator's exact message", arguments: badCases)
    func badJoin(_ row: BadCase) {
        var lobby = LobbyState(server: row.server, name: row.displayName, room: row.room)
        lobby.cipher = row.cipher
        lobby.focus = .join
        #expect(reduce(&lobby, .enter) == nil)
        #expect(lobby.message == LobbyMessage(text: row.message, kind: .error, item: row.item))
        #expect(lobby.focus == row.item)
        #expect(!lobby.isJoining)
        let screen = LobbyScreen.render(lobby, size: RoomFixture.large, theme: Self.theme)
        let lines = DisplayWidth.wrap(row.message, width: LobbyScreen.maximumBoxWidth - 6)
        for line in lines {
            #expect(screen.rows(containing: line).count == 1, "\(line) not on screen")
        }
    }

    @Test("Enter with a good form joins with every setting, then ignores keys until fail")
    func goodJoin() {
        var lobby = LobbyState(server: "relay.example:9000", name: "alice", room: "  standup ")
        lobby.focus = .encryptionKey
        Self.type("k3y phrase", into: &lobby)
        _ = reduce(&lobby, .tab)
        _ = reduce(&lobby, .char(" "))
        #expect(lobby.cipher == .aes256GCM)
        _ = reduce(&lobby, .tab)
        _ = reduce(&lobby, .right)
        #expect(lobby.role == .audience)
        lobby.profile = VideoProfile.all[0]
        let expected = JoinSettings(
            server: ServerAddress(host: "relay.example", port: 9000), name: "alice", room: "standup", role: .audience,
            profile: VideoProfile.all[0], encryption: JoinEncryption(cipher: .aes256GCM, key: "k3y phrase"))
        #expect(reduce(&lobby, .enter) == .join(expected))
        #expect(lobby.isJoining)
        #expect(lobby.message?.kind == .progress)
        #expect(lobby.message?.text == "Joining standup at relay.example:9000…")
        #expect(reduce(&lobby, .escape) == nil)
        #expect(reduce(&lobby, .enter) == nil)
        #expect(LobbyScreen.cursor(lobby, size: RoomFixture.small) == nil)
        #expect(reduce(&lobby, .control("c")) == .quit)
        lobby.fail("cannot reach the relay at relay.example:9000")
        #expect(!lobby.isJoining)
        #expect(lobby.message == LobbyMessage(text: "cannot reach the relay at relay.example:9000", kind: .error))
        // Editing clears a stale error.
        lobby.focus = .server
        _ = reduce(&lobby, .backspace)
        #expect(lobby.message == nil)
    }

    struct KeyCase: Sendable, CustomTestStringConvertible {
        var name: String
        var focus: LobbyItem
        var key: Key
        var action: LobbyAction?
        var testDescription: String { name }
    }

    @Test(
        "quitting, settings and buttons",
        arguments: [
            KeyCase(name: "Esc quits from a field", focus: .name, key: .escape, action: .quit),
            KeyCase(name: "Ctrl-C quits", focus: .room, key: .control("c"), action: .quit),
            KeyCase(name: "q quits from a choice", focus: .role, key: .char("q"), action: .quit),
            KeyCase(name: "q quits from a button", focus: .settings, key: .char("q"), action: .quit),
            KeyCase(name: "q types in a field", focus: .room, key: .char("q"), action: nil),
            KeyCase(name: "Enter on Settings opens them", focus: .settings, key: .enter, action: .openSettings),
            KeyCase(name: "Space on Settings opens them", focus: .settings, key: .char(" "), action: .openSettings),
            KeyCase(name: "Enter on Messages opens them", focus: .messages, key: .enter, action: .openMessages),
            KeyCase(name: "Space on Messages opens them", focus: .messages, key: .char(" "), action: .openMessages),
            KeyCase(name: "Space on a text field types a space", focus: .encryptionKey, key: .char(" "), action: nil),
        ])
    func keys(_ row: KeyCase) {
        var lobby = LobbyState(name: "alice", room: "standup")
        lobby.focus = row.focus
        #expect(reduce(&lobby, row.key) == row.action)
    }

    @Test("Left and Right move between the buttons; Space on Join joins")
    func buttons() {
        var lobby = LobbyState(name: "alice", room: "standup")
        #expect(lobby.focus == .join)
        _ = reduce(&lobby, .left)
        #expect(lobby.focus == .settings)
        _ = reduce(&lobby, .right)
        #expect(lobby.focus == .join)
        _ = reduce(&lobby, .right)
        #expect(lobby.focus == .messages)
        _ = reduce(&lobby, .right)
        #expect(lobby.focus == .settings)
        _ = reduce(&lobby, .left)
        #expect(lobby.focus == .messages)
        _ = reduce(&lobby, .left)
        guard case .join(let settings) = reduce(&lobby, .char(" ")) else {
            Issue.record("Space on Join did not join")
            return
        }
        #expect(settings.encryption == nil)
        #expect(settings.profile == .standard)
    }

    struct KeyCipherCase: Sendable, CustomTestStringConvertible {
        var name: String
        /// Keys pressed from a lobby with the focus on Key.
        var keys: [Key]
        var cipher: LobbyCipher
        /// What Enter then joins with (nil: in the clear).
        var encryption: JoinEncryption?
        var testDescription: String { name }
    }

    static let keyCipherCases: [KeyCipherCase] = {
        let secret = "my room secret 123"
        let typed = secret.map { Key.char($0) }
        return [
            KeyCipherCase(
                name: "a key typed with the cipher left at none encrypts with AES-128-GCM", keys: typed,
                cipher: .aes128GCM, encryption: JoinEncryption(cipher: .aes128GCM, key: secret)),
            KeyCipherCase(
                name: "with a key the cipher cycles between the two suites, never to none",
                keys: typed + [.tab, .char(" "), .char(" "), .left, .left], cipher: .aes128GCM,
                encryption: JoinEncryption(cipher: .aes128GCM, key: secret)),
            KeyCipherCase(
                name: "AES-256-GCM chosen after the key stays", keys: typed + [.tab, .right], cipher: .aes256GCM,
                encryption: JoinEncryption(cipher: .aes256GCM, key: secret)),
            KeyCipherCase(
                name: "a chosen cipher is kept while the key changes",
                keys: typed + [.tab, .right, .up, .backspace, .char("4")], cipher: .aes256GCM,
                encryption: JoinEncryption(cipher: .aes256GCM, key: "my room secret 124")),
            KeyCipherCase(
                name: "the key erased turns encryption off", keys: typed + Array(repeating: .backspace, count: 18),
                cipher: .none, encryption: nil),
            KeyCipherCase(name: "no key, no cipher: in the clear", keys: [], cipher: .none, encryption: nil),
        ]
    }()

    @Test("the cipher follows the key: a typed key always encrypts", arguments: keyCipherCases)
    func cipherFollowsTheKey(_ row: KeyCipherCase) {
        var lobby = LobbyState(name: "zed", room: "keyroom")
        lobby.focus = .encryptionKey
        for key in row.keys { _ = reduce(&lobby, key) }
        #expect(lobby.cipher == row.cipher)
        lobby.focus = .join
        guard case .join(let settings) = reduce(&lobby, .enter) else {
            Issue.record("Enter did not join: \(String(describing: lobby.message))")
            return
        }
        #expect(settings.encryption == row.encryption)
        #expect(settings.encryption?.suite == row.encryption?.suite)
    }

    @Test("a key with the cipher set to none by hand still encrypts; a short key is refused with the reason")
    func aKeyIsNeverInTheClear() {
        var lobby = LobbyState(name: "zed", room: "keyroom")
        lobby.focus = .encryptionKey
        Self.type("my room secret 123", into: &lobby)
        lobby.cipher = .none
        lobby.focus = .join
        guard case .join(let settings) = reduce(&lobby, .enter) else {
            Issue.record("Enter did not join")
            return
        }
        #expect(settings.encryption?.suite == .aes128GCM)

        var short = LobbyState(name: "zed", room: "keyroom")
        short.focus = .encryptionKey
        Self.type("abc", into: &short)
        short.focus = .join
        #expect(reduce(&short, .enter) == nil)
        #expect(short.focus == .encryptionKey)
        #expect(
            short.message?.text
                == "the room secret has 3 characters; it needs at least 8 (a phrase is easiest to share by voice)")
    }

    @Test("the Cipher row's note is whole at 80x24 beside every choice", arguments: LobbyCipher.allCases)
    func cipherNoteFits(_ cipher: LobbyCipher) {
        var lobby = LobbyState(name: "zed", room: "keyroom")
        if cipher != .none {
            lobby.focus = .encryptionKey
            Self.type("my room secret 123", into: &lobby)
            lobby.cipher = cipher
        }
        let screen = LobbyScreen.render(lobby, size: RoomFixture.small, theme: Self.theme)
        let note = LobbyScreen.cipherNote(cipher)
        #expect(screen.rows(containing: cipher.label).count == 1)
        #expect(screen.rows(containing: note).count == 1, "\(note) is cut off")
    }

    @Test("JoinEncryption never holds none: a key alone means AES-128-GCM")
    func joinEncryptionHasASuite() {
        #expect(JoinEncryption(cipher: .none, key: "a secret phrase").suite == .aes128GCM)
        #expect(JoinEncryption(cipher: .aes128GCM, key: "a secret phrase").suite == .aes128GCM)
        #expect(JoinEncryption(cipher: .aes256GCM, key: "a secret phrase").suite == .aes256GCM)
    }

    @Test("choices cycle both ways")
    func choices() {
        var lobby = LobbyState(name: "alice", room: "standup")
        lobby.focus = .cipher
        _ = reduce(&lobby, .left)
        #expect(lobby.cipher == .aes256GCM)
        _ = reduce(&lobby, .right)
        #expect(lobby.cipher == .none)
        lobby.focus = .role
        _ = reduce(&lobby, .char(" "))
        #expect(lobby.role == .audience)
        _ = reduce(&lobby, .left)
        #expect(lobby.role == .broadcaster)
    }

    @Test("the cursor sits in the focused field after its text; none on choices or buttons")
    func cursor() throws {
        var lobby = LobbyState(name: "alice")
        let size = RoomFixture.small
        let screen = LobbyScreen.render(lobby, size: size, theme: Self.theme)
        let nameRow = try #require(screen.rows(containing: "Name").first)
        let valueColumn = try #require(screen.column(of: "alice", row: nameRow))
        lobby.focus = .name
        #expect(LobbyScreen.cursor(lobby, size: size) == CursorPosition(column: valueColumn + 5, row: nameRow))
        lobby.focus = .room
        Self.type("abc", into: &lobby)
        #expect(LobbyScreen.cursor(lobby, size: size) == CursorPosition(column: valueColumn + 3, row: nameRow + 1))
        lobby.focus = .encryptionKey
        Self.type("secret", into: &lobby)
        #expect(LobbyScreen.cursor(lobby, size: size) == CursorPosition(column: valueColumn + 6, row: nameRow + 2))
        let masked = LobbyScreen.render(lobby, size: size, theme: Self.theme)
        #expect(masked.text(row: nameRow + 2).contains("******"))
        #expect(!masked.text.contains("secret"))
        lobby.focus = .role
        #expect(LobbyScreen.cursor(lobby, size: size) == nil)
        #expect(LobbyScreen.cursor(lobby, size: TerminalSize(columns: 60, rows: 20)) == nil)
    }

    @Test("below 80x24 the lobby asks for a larger terminal")
    func tooSmall() {
        let screen = LobbyScreen.render(LobbyState(), size: TerminalSize(columns: 60, rows: 20), theme: Self.theme)
        #expect(screen.rows(containing: "Parley needs at least 80x24; this terminal is 60x20").count == 1)
    }

    @Test("callEnded shows a note and accepts keys again")
    func callEnded() {
        var lobby = LobbyState(name: "alice", room: "standup")
        guard case .join = reduce(&lobby, .enter) else {
            Issue.record("did not join")
            return
        }
        lobby.callEnded("You left standup after 12:04")
        #expect(!lobby.isJoining)
        #expect(lobby.message == LobbyMessage(text: "You left standup after 12:04", kind: .info))
        #expect(reduce(&lobby, .escape) == .quit)
    }
}

@Suite("Settings")
struct SettingsTests {
    @Test("Up/Down move and stop at the ends; Enter confirms the highlighted profile")
    func moving() {
        var settings = SettingsState(current: .standard)
        #expect(settings.highlightedProfile == .standard)
        for _ in 0..<10 { _ = reduce(&settings, .down) }
        #expect(settings.highlighted == VideoProfile.all.count - 1)
        _ = reduce(&settings, .up)
        #expect(reduce(&settings, .enter) == .confirm(VideoProfile.all[VideoProfile.all.count - 2]))
        _ = reduce(&settings, .home)
        #expect(settings.highlighted == 0)
        _ = reduce(&settings, .char("k"))
        #expect(settings.highlighted == 0)
        _ = reduce(&settings, .char("j"))
        #expect(settings.highlighted == 1)
        _ = reduce(&settings, .end)
        #expect(reduce(&settings, .char(" ")) == .confirm(VideoProfile.all.last!))
    }

    struct KeyCase: Sendable, CustomTestStringConvertible {
        var key: Key
        var action: SettingsAction?
        var highlighted: Int
        var testDescription: String { "\(key)" }
    }

    @Test(
        "keys",
        arguments: [
            KeyCase(key: .escape, action: .cancel, highlighted: 3),
            KeyCase(key: .char("q"), action: .cancel, highlighted: 3),
            KeyCase(key: .control("c"), action: .quit, highlighted: 3),
            KeyCase(key: .char("1"), action: nil, highlighted: 0),
            KeyCase(key: .char("6"), action: nil, highlighted: 5),
            KeyCase(key: .char("7"), action: nil, highlighted: 3),
            KeyCase(key: .char("x"), action: nil, highlighted: 3),
        ])
    func keys(_ row: KeyCase) {
        var settings = SettingsState(current: .standard)
        #expect(reduce(&settings, row.key) == row.action)
        #expect(settings.highlighted == row.highlighted)
    }

    @Test("a profile not in the list highlights the first row; the screen marks the one in use")
    func unlisted() throws {
        let odd = VideoProfile(width: 100, height: 100, fps: 5, bitrateKbps: 10)
        #expect(SettingsState(current: odd).highlighted == 0)
        let screen = SettingsScreen.render(
            SettingsState(current: .standard), size: RoomFixture.small,
            theme: Theme(depth: .palette256))
        let row = try #require(screen.rows(containing: "640x360").first)
        #expect(screen.text(row: row).contains("(in use)"))
        #expect(screen.text(row: row).contains("> 640x360"))
        #expect(screen.rows(containing: "(in use)").count == 1)
    }

    @Test("why auto chose its picture is wrapped, never cut off, at every width", arguments: [(80, 24), (200, 60)])
    func pictureReasonWrapped(columns: Int, rows: Int) throws {
        var settings = SettingsState(current: .standard)
        let reason =
            "auto: half blocks (inside tmux the outer terminal is unknown: sextants and quadrants need a font that "
            + "has them), 24-bit colour (COLORTERM=truecolor)"
        settings.picture = PictureChoice(colors: .trueColor, cells: .halfBlocks, reason: reason)
        let screen = SettingsScreen.render(
            settings, size: TerminalSize(columns: columns, rows: rows), theme: Theme(depth: .palette256))
        let first = try #require(screen.rows(containing: "auto: half blocks").first)
        let shown = (first..<first + 4).map { screen.text(row: $0) }
            .map { $0.replacingOccurrences(of: "│", with: " ").trimmingCharacters(in: .whitespaces) }
            .prefix { !$0.isEmpty && !$0.contains("╰") && !$0.contains("Devices") }
        #expect(shown.joined(separator: " ") == reason, "\(shown)")
        #expect(screen.rows(containing: "Up/Down choose").count == 1, "the hint still shows")
        #expect(screen.rows(containing: "Echo cancellation").count == 1, "the devices still show")
    }
}

@Suite("Input line")
struct InputLineTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var start: String
        var keys: [Key]
        var text: String
        var cursor: Int
        var testDescription: String { name }
    }

    @Test(
        "editing keys",
        arguments: [
            Case(name: "insert at the end", start: "ab", keys: [.char("c")], text: "abc", cursor: 3),
            Case(name: "insert in the middle", start: "ac", keys: [.left, .char("b")], text: "abc", cursor: 2),
            Case(
                name: "backspace at the start does nothing", start: "ab", keys: [.home, .backspace], text: "ab",
                cursor: 0),
            Case(name: "delete under the cursor", start: "abc", keys: [.home, .delete], text: "bc", cursor: 0),
            Case(
                name: "Ctrl-A and Ctrl-E", start: "abc", keys: [.control("a"), .char("x"), .control("e"), .char("y")],
                text: "xabcy", cursor: 5),
            Case(
                name: "Ctrl-W deletes a word and its blanks", start: "one two  ", keys: [.control("w")], text: "one ",
                cursor: 4),
            Case(name: "Ctrl-U clears", start: "abc", keys: [.control("u")], text: "", cursor: 0),
            Case(name: "controls are refused", start: "a", keys: [.char("\u{1B}"), .char("\n")], text: "a", cursor: 1),
            Case(name: "Right stops at the end", start: "a", keys: [.right, .right], text: "a", cursor: 1),
        ])
    func edit(_ row: Case) {
        var line = InputLine(row.start)
        for key in row.keys { line.edit(key) }
        #expect(line.text == row.text)
        #expect(line.cursor == row.cursor)
    }

    @Test("the length limit refuses more characters")
    func limit() {
        var line = InputLine("abcd", maximumLength: 4)
        let accepted = line.edit(.char("e"))
        #expect(!accepted)
        #expect(line.text == "abcd")
        #expect(InputLine("abcdef", maximumLength: 3).text == "abc")
    }

    @Test("cleaning keeps the cursor after the same cleaned prefix")
    func cleaning() {
        var line = InputLine("ab/cd")
        line.edit(.left)
        let changed = line.clean(with: RoomName.clean)
        #expect(changed)
        #expect(line.text == "abcd")
        #expect(line.cursor == 3)
        let again = line.clean(with: RoomName.clean)
        #expect(!again)
    }
}

@Suite("Lobby and settings clicks")
struct ClickTests {
    static let theme = Theme(depth: .palette256)

    @Test("clicks on the lobby focus fields, step choices and press buttons where they are drawn")
    func lobbyClicks() throws {
        let size = RoomFixture.small
        var lobby = LobbyState(name: "alice", room: "standup")
        let screen = LobbyScreen.render(lobby, size: size, theme: Self.theme)
        let serverRow = try #require(screen.rows(containing: "Server").first)
        #expect(LobbyScreen.click(&lobby, column: 40, row: serverRow, size: size) == nil)
        #expect(lobby.focus == .server)
        let cipherRow = try #require(screen.rows(containing: "Cipher").first)
        #expect(LobbyScreen.click(&lobby, column: 20, row: cipherRow, size: size) == nil)
        #expect(lobby.focus == .cipher && lobby.cipher == .aes128GCM)
        let buttonRow = try #require(screen.rows(containing: "[ Join ]").first)
        let settings = try #require(screen.column(of: "[ Settings ]", row: buttonRow))
        #expect(LobbyScreen.click(&lobby, column: settings + 3, row: buttonRow, size: size) == .openSettings)
        // Between the buttons and outside the box nothing happens.
        #expect(LobbyScreen.click(&lobby, column: settings + 14, row: buttonRow, size: size) == nil)
        #expect(LobbyScreen.click(&lobby, column: 0, row: serverRow, size: size) == nil)
        #expect(lobby.focus == .settings)
        let messages = try #require(screen.column(of: "[ Messages ]", row: buttonRow))
        #expect(LobbyScreen.click(&lobby, column: messages + 2, row: buttonRow, size: size) == .openMessages)
        lobby.cipher = .none
        let join = try #require(screen.column(of: "[ Join ]", row: buttonRow))
        guard case .join = LobbyScreen.click(&lobby, column: join, row: buttonRow, size: size) else {
            Issue.record("a click on Join did not join")
            return
        }
    }

    @Test("a click highlights a profile; a double-click confirms it")
    func settingsClicks() throws {
        let size = RoomFixture.large
        var settings = SettingsState(current: .standard)
        let screen = SettingsScreen.render(settings, size: size, theme: Self.theme)
        let row = try #require(screen.rows(containing: "1280x720").first)
        let column = try #require(screen.column(of: "1280x720", row: row))
        #expect(SettingsScreen.click(&settings, column: column, row: row, double: false, size: size) == nil)
        #expect(settings.highlighted == VideoProfile.all.count - 1)
        let small = try #require(screen.rows(containing: "160x120").first)
        #expect(
            SettingsScreen.click(&settings, column: column, row: small, double: true, size: size)
                == .confirm(VideoProfile.all[0]))
        #expect(SettingsScreen.click(&settings, column: column, row: row - 10, double: true, size: size) == nil)
    }
}

@Suite("Settings: devices")
struct DeviceSettingsTests {
    static let found = DeviceSettings(
        microphones: ["USB Mic", "Built-in"], speakers: ["Headphones"], cameras: ["Webcam"])

    @Test("Tab moves to the devices; Left/Right cycle default → each device → default; Enter confirms")
    func cycling() {
        var settings = SettingsState(current: .standard, devices: Self.found)
        #expect(reduce(&settings, .tab) == nil)
        #expect(settings.deviceRow == .microphone)
        #expect(!settings.devicesChanged)
        _ = reduce(&settings, .right)
        #expect(settings.devices.microphone == "USB Mic")
        _ = reduce(&settings, .right)
        #expect(settings.devices.microphone == "Built-in")
        _ = reduce(&settings, .right)
        #expect(settings.devices.microphone == nil, "back to the system default")
        _ = reduce(&settings, .left)
        #expect(settings.devices.microphone == "Built-in")
        _ = reduce(&settings, .down)
        _ = reduce(&settings, .char(" "))
        #expect(settings.devices.speaker == "Headphones")
        _ = reduce(&settings, .down)
        _ = reduce(&settings, .down)
        #expect(settings.deviceRow == .echoCancellation)
        _ = reduce(&settings, .down)
        #expect(settings.deviceRow == .echoCancellation, "stops at the last row")
        _ = reduce(&settings, .right)
        #expect(!settings.devices.echoCancellation)
        #expect(settings.devicesChanged)
        #expect(settings.highlightedProfile == .standard, "the profile choice is untouched")
        #expect(reduce(&settings, .enter) == .confirm(.standard))
        _ = reduce(&settings, .tab)
        #expect(settings.deviceRow == nil)
        #expect(reduce(&settings, .escape) == .cancel)
    }

    @Test("the devices panel shows each choice; the focused one between arrows; nothing found says so")
    func drawn() throws {
        var settings = SettingsState(current: .standard, devices: Self.found)
        _ = reduce(&settings, .tab)
        _ = reduce(&settings, .right)
        let screen = SettingsScreen.render(settings, size: RoomFixture.small, theme: Theme(depth: .palette256))
        let mic = try #require(screen.rows(containing: "Microphone").first)
        #expect(screen.text(row: mic).contains("< USB Mic >"))
        let echo = try #require(screen.rows(containing: "Echo cancellation").first)
        #expect(screen.text(row: echo).contains("on (and noise suppression)"))
        let empty = SettingsScreen.render(
            SettingsState(current: .standard), size: RoomFixture.small, theme: Theme(depth: .palette256))
        let camera = try #require(empty.rows(containing: "Camera").first)
        #expect(empty.text(row: camera).contains("none found"))
    }
}
