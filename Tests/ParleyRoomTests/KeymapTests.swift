import ParleyRoom
import Testing

@Suite("Command table and keymap")
struct KeymapTests {
    @Test("defaults: every command has a key and no key runs two commands")
    func defaults() {
        var owners: [Key: RoomCommand] = [:]
        for command in RoomCommand.allCases {
            #expect(!command.defaultKeys.isEmpty, "\(command)")
            #expect(!command.label.isEmpty && !command.help.isEmpty)
            for key in command.defaultKeys {
                #expect(owners[key] == nil, "\(key) bound twice")
                owners[key] = command
                #expect(Keymap.standard.command(for: key) == command)
            }
        }
        #expect(Keymap.standard.command(for: .control("C")) == .leave)
        #expect(Keymap.standard.command(for: .char("1")) == nil)
    }

    @Test(
        "key names parse and label",
        arguments: [
            ("m", Key.char("m"), "m"), ("M", .char("M"), "M"), ("space", .char(" "), "Space"),
            ("Enter", .enter, "Enter"), ("esc", .escape, "Esc"), ("F12", .function(12), "F12"),
            ("ctrl-x", .control("x"), "Ctrl-X"), ("^A", .control("a"), "Ctrl-A"), ("C-b", .control("b"), "Ctrl-B"),
            ("pgdn", .pageDown, "PgDn"), ("=", .char("="), "="), ("#", .char("#"), "#"),
        ])
    func keyNames(name: String, key: Key, label: String) {
        #expect(KeyName.parse(name) == key)
        #expect(KeyName.label(key) == label)
    }

    @Test("unknown key names", arguments: ["f13", "ctrl-1", "ctrl-", "mm", "", "hyper-x", "f0"])
    func badKeyNames(name: String) {
        #expect(KeyName.parse(name) == nil)
    }

    @Test("configuration overrides keys")
    func parse() throws {
        let keymap = try Keymap.parse(
            """
            # my keys
            mic = x
            leave = Q ctrl-d
            stats = m

            speaker = none
            """)
        #expect(keymap.keys(for: .microphone) == [.char("x")])
        #expect(keymap.command(for: .char("x")) == .microphone)
        #expect(keymap.command(for: .char("m")) == .stats)
        #expect(keymap.keys(for: .leave) == [.char("Q"), .control("d")])
        #expect(keymap.command(for: .char("q")) == nil)
        #expect(keymap.keys(for: .speaker) == [])
        #expect(keymap.keyLabels(for: .speaker) == "—")
        #expect(keymap.keys(for: .camera) == [.char("v")], "untouched commands keep their defaults")
        // Taking one of two default keys moves it silently.
        let moved = try Keymap.parse("grid = enter")
        #expect(moved.keys(for: .chat) == [.char("t")])
        #expect(moved.keys(for: .grid) == [.enter])
    }

    @Test(
        "bad configuration lines name the problem",
        arguments: [
            ("mic m", "line 1: expected `command = key`, got \"mic m\""),
            (
                "\nmik = m",
                "line 2: unknown command \"mik\"; commands are mic, video, switch-camera, speaker, filter,"
                    + " broadcast, chat, hide, fullscreen, grid, next-page, previous-page, stats, record, help, dm, messages, invite, roster, speaker-view, self-view, share, leave"
            ),
            ("mic =", "line 1: no key given for mic; write `mic = none` to unbind it"),
            (
                "mic = ctrl-1",
                "line 1: unknown key \"ctrl-1\"; use one character, space, enter, esc, tab, backspace,"
                    + " delete, up, down, left, right, home, end, pageup, pagedown, f1…f12 or ctrl-a…ctrl-z"
            ),
            ("mic = 3", "line 1: key 3 is reserved (1–9 address tiles)"),
            ("mic = x\nmic = y", "line 2: mic is already set on line 1"),
            ("mic = x\nstats = x", "line 2: key x is bound to both stats and mic (line 1)"),
            ("stats = v", "line 1: key v was the only key for video; give video another key too"),
        ])
    func badConfig(text: String, message: String) {
        do {
            _ = try Keymap.parse(text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("help overlay and control bar come from the table")
    func generated() throws {
        let keymap = try Keymap.parse("mic = x")
        let help = HelpOverlay.lines(keymap: keymap)
        #expect(help.first == HelpLine(keys: "x", text: "Mute or unmute your microphone"))
        #expect(help.contains(HelpLine(keys: "t/Enter", text: "Type a chat message: Enter sends, Esc closes")))
        // Each command, six fixed keys, a blank line and a heading, then each chat command.
        #expect(help.count == RoomCommand.allCases.count + 8 + ChatCommand.allCases.count)
        #expect(help.suffix(ChatCommand.allCases.count).map(\.keys) == ChatCommand.allCases.map(\.usage))

        var settings = RoomSettings()
        settings.keymap = keymap
        let state = RoomState(roomName: "r", localName: "me", settings: settings)
        let bar = ControlBar.items(for: state)
        #expect(
            bar.map(\.label) == [
                "Mic", "Video", "Switch", "Speaker", "Sepia", "Live", "Chat", "Stats", "Rec", "Help", "Leave",
            ])
        #expect(bar[0] == ControlItem(command: .microphone, label: "Mic", key: "x", isOn: true, isEnabled: true))
        #expect(bar.last == ControlItem(command: .leave, label: "Leave", key: "q", isOn: nil, isEnabled: true))
    }
}
