import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

let restoredModes = "alt=0 cursor=1 mouse=0 keypad=0"

@Suite("Terminal in a tmux pane", .enabled(if: TmuxPane.tmuxPath != nil, "tmux is not installed"), .lane(.blocking))
struct TerminalTmuxTests {
    /// Each cell of a `capture-pane -e` line as a viewer sees it: half blocks as their "top/bottom" colours (a
    /// picture cell may be sent as '▀' or as '▄' with its colours swapped, or in one colour as '█' on any
    /// background), anything else as its character and colours.
    static func visible(_ line: String) -> [String] {
        var foreground = "default"
        var background = "default"
        var bold = false
        var cells: [String] = []
        var scalars = Array(line.unicodeScalars)[...]
        while let scalar = scalars.first {
            if scalar == "\u{1B}", scalars.dropFirst().first == "[", let end = scalars.firstIndex(of: "m") {
                var codes = String(String.UnicodeScalarView(scalars[(scalars.startIndex + 2)..<end]))
                    .split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 }[...]
                while let code = codes.popFirst() {
                    switch code {
                    case 0: (foreground, background, bold) = ("default", "default", false)
                    case 1: bold = true
                    case 22: bold = false
                    case 39: foreground = "default"
                    case 49: background = "default"
                    case 38, 48:
                        let value =
                            codes.popFirst() == 5
                            ? "\(codes.popFirst() ?? 0)"
                            : (0..<3).map { _ in "\(codes.popFirst() ?? 0)" }.joined(separator: ",")
                        if code == 38 { foreground = value } else { background = value }
                    default: break
                    }
                }
                scalars = scalars[(end + 1)...]
                continue
            }
            switch scalar {
            case "▀": cells.append("\(foreground)/\(background)")
            case "▄": cells.append("\(background)/\(foreground)")
            case "█": cells.append("\(foreground)/\(foreground)")
            default: cells.append("\(scalar) \(foreground)/\(background)" + (bold ? " bold" : ""))
            }
            scalars = scalars.dropFirst()
        }
        return cells
    }

    /// The probe's first screen is up, picture included: its picture goes out from a writer thread after curses
    /// has drawn the text, so "q quits" alone can be captured before the picture lands.
    static func pictureShown(_ lines: [String]) -> Bool {
        lines.contains("q quits") && lines.count > 1 && (lines[1].hasPrefix("▀▀▀▀") || lines[1].hasPrefix("████"))
    }

    static func pid(_ lines: [String]) -> pid_t? {
        guard let first = lines.first, let range = first.range(of: "pid=") else { return nil }
        return pid_t(first[range.upperBound...].prefix { $0.isNumber })
    }

    @Test("draws video, text and colours; reads keys and clicks; 'q' restores the terminal")
    func drawAndKeys() async throws {
        let pane = try TmuxPane(command: try probeCommand())
        let lines = try await pane.text("the probe's picture", within: .seconds(15), Self.pictureShown)
        #expect(lines[0].hasPrefix("Parley probe pid=") && lines[0].hasSuffix(" depth=palette256"))
        #expect(
            lines[1...5].map { String($0.dropFirst(20)) } == [
                " ┌ Ada ─────┐",
                " │          │",
                " │日本 ok   │",
                " │          │",
                " └──────────┘",
            ])
        #expect(Array(lines[6...8]) == ["", "key: none", "header role"])
        let escapes = try pane.escapes()
        #expect(Self.visible(escapes[1]).prefix(20) == ArraySlice(repeating: "196/196", count: 20), "red above red")
        #expect(
            Self.visible(escapes[3]).prefix(20) == ArraySlice(repeating: "196/21", count: 20),
            "red above blue at the boundary")
        #expect(Self.visible(escapes[5]).prefix(20) == ArraySlice(repeating: "21/21", count: 20), "blue above blue")
        #expect(escapes[1].contains("\u{1B}[1m\u{1B}[38;5;46m┌"), "speaking border is bold green")
        #expect(escapes[8].contains("\u{1B}[38;5;231m\u{1B}[48;5;24mheader role"), "header role colours")
        #expect(try pane.modes() == "alt=1 cursor=0 mouse=1 keypad=1")

        // X10 mouse report: ESC [ M, button + 32, column + 33, row + 33. Press then release is a click.
        let press: [UInt8] = [0x1B, 0x5B, 0x4D, 32, 33 + 5, 33 + 3]
        let release: [UInt8] = [0x1B, 0x5B, 0x4D, 32 + 3, 33 + 5, 33 + 3]
        let inputs: [(name: String, send: () throws -> Void, shows: String)] = [
            ("letter", { try pane.send(["a"]) }, "key: char(\"a\")"),
            ("arrow", { try pane.send(["Up"]) }, "key: up"),
            ("UTF-8", { try pane.sendLiteral("ä") }, "key: char(\"ä\")"),
            ("function key", { try pane.send(["F5"]) }, "key: function(5)"),
            ("control", { try pane.send(["C-x"]) }, "key: control(\"x\")"),
            ("page down", { try pane.send(["NPage"]) }, "key: pageDown"),
            ("Esc alone", { try pane.send(["Escape"]) }, "key: escape"),
            ("enter", { try pane.send(["Enter"]) }, "key: enter"),
            ("backspace", { try pane.send(["BSpace"]) }, "key: backspace"),
            ("click", { try pane.sendBytes(press + release) }, "key: mouseClick(column: 5, row: 3)"),
            (
                "double click", { try pane.sendBytes(press + release + press + release) },
                "key: mouseDoubleClick(column: 5, row: 3)"
            ),
        ]
        for input in inputs {
            try input.send()
            let shown = try await pane.text("the key shown", within: .seconds(15)) {
                $0.count > 7 && $0[7] == input.shows
            }
            #expect(shown[7] == input.shows, "\(input.name)")
        }

        try pane.send(["q"])
        let after = try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
        #expect(after.contains("RESTORED rc=0"))
        #expect(!after.contains { $0.contains("Parley probe") }, "the alternate screen is gone")
        #expect(try pane.modes() == restoredModes)
    }

    @Test("the text cursor shows where asked and hides again")
    func cursor() async throws {
        let pane = try TmuxPane(command: try probeCommand())
        try await pane.text("the probe's screen", within: .seconds(15)) { $0.contains("q quits") }
        func cursorState() throws -> String {
            try pane.run(["display", "-p", "#{cursor_flag} #{cursor_x},#{cursor_y}"])
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try cursorState().hasPrefix("0 "))
        try pane.send(["c"])
        try await pane.text("the key c shown", within: .seconds(15)) { $0.count > 7 && $0[7] == "key: char(\"c\")" }
        #expect(try cursorState() == "1 5,9")
        try pane.send(["c"])
        try await pane.text("the key c shown", within: .seconds(15)) { $0.count > 7 && $0[7] == "key: char(\"c\")" }
        try await poll("the cursor hidden again", timeout: .seconds(5)) {
            try cursorState()
        } until: {
            $0.hasPrefix("0 ")
        }
        try pane.send(["q"])
        try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
    }

    @Test("colours stay right after curses runs out of colour pairs")
    func pairExhaustion() async throws {
        let pane = try TmuxPane(command: try probeCommand())
        try await pane.text("the probe's screen", within: .seconds(15)) { $0.contains("q quits") }
        try pane.send(["p"])
        let lines = try await pane.text("the key shown", within: .seconds(60)) {
            $0.count > 7 && $0[7] == "key: char(\"p\")"
        }
        #expect(lines[7] == "key: char(\"p\")")
        let escapes = try pane.escapes()
        #expect(Self.visible(escapes[1]).prefix(20) == ArraySlice(repeating: "196/196", count: 20), "red above red")
        #expect(Self.visible(escapes[3]).prefix(20) == ArraySlice(repeating: "196/21", count: 20), "red above blue")
        #expect(escapes[1].contains("\u{1B}[1m\u{1B}[38;5;46m┌"), "speaking border")
        #expect(escapes[8].contains("\u{1B}[38;5;231m\u{1B}[48;5;24mheader role"), "header role")
        #expect(!escapes.joined().contains("x"), "nothing of the pair-cycling screens is left")
        try pane.send(["q"])
        try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
    }

    /// What the probe's pane shows (characters and colours, as tmux re-encodes them) after each step: first
    /// screen, a box opened over the video, the box closed again, every picture cell changed, and the same with the
    /// text cursor showing; plus where the cursor is.
    static func pictureSteps(environment: String) async throws -> [[String]] {
        let pane = try TmuxPane(command: try probeCommand(environment: environment))
        try await pane.text("the probe's picture", within: .seconds(15), Self.pictureShown)
        // The text goes out through curses and a picture straight to the terminal, in two writes: a capture between
        // them holds the new text over the old picture. Each step waits for the picture the keys so far call for
        // (red on top, blue after each 'v') on a capture that stays the same.
        var swapped = false
        func frame() async throws -> [String] {
            try await pane.steadyEscapes("the picture the keys call for", within: .seconds(15)) { lines in
                lines.count > 1 && Self.visible(lines[1]).first == (swapped ? "21/21" : "196/196")
            }
        }
        var shown: [[String]] = [try await frame()]
        for (key, shows) in [
            ("o", "OVER"), ("o", "▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀"), ("v", "char(\"v\")"), ("c", "char(\"c\")"),
            ("v", "char(\"v\")"),
        ] {
            try pane.send(["x"])
            try await pane.text("the key shown", within: .seconds(15)) { $0.count > 7 && $0[7] == "key: char(\"x\")" }
            try pane.send([key])
            // A flat picture is written as '█' straight to the terminal, as '▀' in two equal colours by curses.
            let flat = shows.replacingOccurrences(of: "▀", with: "█")
            try await pane.text("the key and what it shows", within: .seconds(15)) {
                $0.count > 7 && $0[7] == "key: char(\"\(key)\")"
                    && ($0.joined().contains(shows) || $0.joined().contains(flat))
            }
            if key == "v" { swapped.toggle() }
            let picture = try await frame()
            let cursor = try pane.run(["display", "-p", "#{cursor_flag} #{cursor_x},#{cursor_y}"])
            shown.append(picture + [cursor.trimmingCharacters(in: .whitespacesAndNewlines)])
        }
        try pane.send(["q"])
        try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
        return shown
    }

    @Test("pictures written straight to the terminal look exactly as curses would have drawn them")
    func picturesMatchCurses() async throws {
        let direct = try await Self.pictureSteps(environment: "TERM=tmux-256color NO_COLOR=")
        let curses = try await Self.pictureSteps(
            environment: "TERM=tmux-256color NO_COLOR= PARLEY_PICTURES_VIA_CURSES=1")
        #expect(direct.count == 6)
        for (step, (viaDirect, viaCurses)) in zip(direct, curses).enumerated() {
            // Line 0 holds the pid.
            #expect(viaDirect.dropFirst().map(Self.visible) == viaCurses.dropFirst().map(Self.visible), "step \(step)")
        }
        #expect(direct[1][3].contains("OVER"), "the box covers the video")
        #expect(
            Self.visible(direct[2][1]).prefix(20) == ArraySlice(repeating: "196/196", count: 20),
            "video back under the box")
        #expect(
            Self.visible(direct[3][1]).prefix(20) == ArraySlice(repeating: "21/21", count: 20),
            "swapped: blue on top")
        #expect(direct[4].last == "1 5,9" && direct[5].last == "1 5,9", "the text cursor stays where curses put it")
    }

    @Test(
        "quadrant and sextant pictures written straight to the terminal look exactly as curses would have drawn them",
        arguments: ["quadrant", "sextant"])
    func blockPicturesMatchCurses(_ mode: String) async throws {
        let environment = "TERM=tmux-256color NO_COLOR= PARLEY_PROBE_PICTURE=\(mode)"
        let direct = try await Self.pictureSteps(environment: environment)
        let curses = try await Self.pictureSteps(environment: environment + " PARLEY_PICTURES_VIA_CURSES=1")
        #expect(direct.count == 6)
        for (step, (viaDirect, viaCurses)) in zip(direct, curses).enumerated() {
            #expect(viaDirect.dropFirst().map(Self.visible) == viaCurses.dropFirst().map(Self.visible), "step \(step)")
        }
        // The tile's middle cell row holds the red/blue boundary: two-colour block characters, not half blocks.
        let boundary = direct[0][3].unicodeScalars.filter {
            (0x2596...0x259F).contains($0.value) || (0x1FB00...0x1FB3B).contains($0.value) || $0 == "▄" || $0 == "▀"
        }
        #expect(boundary.count >= 20, "\(direct[0][3])")
        #expect(direct[0].joined().contains("picture: \(mode) 256"))
    }

    @Test("24-bit pictures through a 256-colour terminfo where COLORTERM says so; in tmux, tmux's word after attaches")
    func trueColorPictures() async throws {
        let outside = try TmuxPane(
            command: try probeCommand(
                environment: "TERM=xterm-256color NO_COLOR= TMUX= COLORTERM=truecolor PARLEY_PROBE_PICTURE=auto"))
        let lines = try await outside.text("the probe's picture line", within: .seconds(15)) {
            $0.count > 10 && $0[10].hasPrefix("picture:")
        }
        #expect(lines[10] == "picture: quadrant 24-bit")
        let escapes = try outside.escapes().joined()
        #expect(escapes.contains("8;2;254;0;0m"), "red sent as 24-bit colour")
        #expect(!escapes.contains("38;5;196"), "not as palette red")
        try outside.send(["q"])
        try await outside.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }

        // The probe's pane is inside tmux, whose client (none attached) has no RGB feature.
        let inside = try TmuxPane(
            command: try probeCommand(
                environment: "TERM=tmux-256color NO_COLOR= COLORTERM=truecolor PARLEY_PROBE_PICTURE=auto"))
        let insideLines = try await inside.text("the probe's picture line", within: .seconds(15)) {
            $0.count > 10 && $0[10].hasPrefix("picture:")
        }
        #expect(insideLines[10] == "picture: half 256")

        // A client whose terminal has RGB attaches (at another size, so tmux resizes the pane): the probe asks
        // tmux again and draws in 24-bit colour from then on.
        try inside.run(["set", "-as", "terminal-features", "*:RGB"])
        let tmux = try #require(TmuxPane.tmuxPath)
        let client = try TmuxPane(
            command: "env -u TMUX TERM=xterm-256color \(tmux) -u -L \(inside.socket) attach",
            columns: 60, rows: 16)
        // auto takes quadrants where it has 24-bit colour (sextants stay off inside tmux: the font is unknown).
        let attached = try await inside.text("the probe's picture line", within: .seconds(15)) {
            $0.count > 10 && $0[10] == "picture: quadrant 24-bit"
        }
        #expect(attached[10] == "picture: quadrant 24-bit")
        #expect(try client.text().joined().contains("picture: quadrant 24-bit"), "the client shows the inner pane")
        #expect(try inside.escapes().joined().contains("8;2;"), "pictures now in 24-bit colour")
        try inside.send(["q"])
        try await inside.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
    }

    @Test("a resize redraws at the new size")
    func resize() async throws {
        let pane = try TmuxPane(command: try probeCommand())
        try await pane.text("the probe's screen", within: .seconds(15)) { $0.contains("q quits") }
        try pane.run(["resize-window", "-x", "50", "-y", "15"])
        let lines = try await pane.text("the probe's screen", within: .seconds(15)) {
            $0.count >= 15 && $0[14] == "q quits" && $0[7] == "key: resize"
        }
        #expect(lines[14] == "q quits")
        #expect(lines[7] == "key: resize")
        try pane.send(["q"])
        try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
    }

    struct SignalCase: CustomTestStringConvertible, Sendable {
        var name: String
        var signal: Int32
        var status: Int32
        var testDescription: String { name }
    }

    @Test(
        "signals restore the terminal and exit with 128 + signal",
        arguments: [
            SignalCase(name: "SIGTERM", signal: SIGTERM, status: 143),
            SignalCase(name: "SIGINT", signal: SIGINT, status: 130),
            SignalCase(name: "SIGHUP", signal: SIGHUP, status: 129),
        ])
    func signals(_ c: SignalCase) async throws {
        let pane = try TmuxPane(command: try probeCommand())
        let lines = try await pane.text("the probe's screen", within: .seconds(15)) { $0.contains("q quits") }
        let pid = try #require(Self.pid(lines))
        #expect(kill(pid, c.signal) == 0)
        let after = try await pane.text("the terminal restored", within: .seconds(15)) {
            $0.contains { $0.hasPrefix("RESTORED") }
        }
        #expect(after.contains("RESTORED rc=\(c.status)"))
        #expect(try pane.modes() == restoredModes)
    }

    @Test("a crash (Swift trap) restores the terminal before the process dies")
    func crash() async throws {
        let environment = "TERM=tmux-256color NO_COLOR= SWIFT_BACKTRACE=enable=no"
        let pane = try TmuxPane(command: try probeCommand("--crash 2>/dev/null", environment: environment))
        let after = try await pane.text("the terminal restored", within: .seconds(15)) {
            $0.contains { $0.hasPrefix("RESTORED") }
        }
        let status = after.first { $0.hasPrefix("RESTORED") }
        // fatalError traps with SIGILL on x86-64 and SIGTRAP on arm64.
        #expect(status == "RESTORED rc=132" || status == "RESTORED rc=133")
        #expect(try pane.modes() == restoredModes)
    }

    @Test("NO_COLOR: shades instead of colours, attributes only")
    func noColor() async throws {
        let pane = try TmuxPane(command: try probeCommand(environment: "TERM=tmux-256color NO_COLOR=1"))
        let lines = try await pane.text("the probe's screen", within: .seconds(15)) { $0.contains("q quits") }
        #expect(lines[0].hasSuffix(" depth=monochrome"))
        // Shade from luminance summed over both halves: red over red (76 + 76) and red over blue (76 + 29) give the
        // lightest shade, blue over blue (29 + 29) none.
        #expect(lines[1].hasPrefix(String(repeating: "░", count: 20) + " ┌ Ada"))
        #expect(lines[3].hasPrefix(String(repeating: "░", count: 20) + " │日本 ok"))
        #expect(lines[4].hasPrefix(String(repeating: " ", count: 20) + " │ "))
        let escapes = try pane.escapes().joined(separator: "\n")
        #expect(!escapes.contains("38;5;") && !escapes.contains("48;5;"))
        #expect(escapes.range(of: "\u{1B}\\[(3|4)[0-7]m", options: .regularExpression) == nil)
        #expect(escapes.contains("\u{1B}[1;7mheader role"), "header role is bold reverse")
        try pane.send(["q"])
        try await pane.text("the terminal restored", within: .seconds(15)) { $0.contains("RESTORED rc=0") }
    }

    struct RefusalCase: CustomTestStringConvertible, Sendable {
        var name: String
        var environment: String
        var redirect: String
        var message: String
        var testDescription: String { name }
    }

    @Test(
        "bad terminals are refused with a clear message",
        arguments: [
            RefusalCase(
                name: "unknown TERM", environment: "TERM=no-such-terminal", redirect: "",
                message: "terminal type 'no-such-terminal' is unknown to terminfo"),
            RefusalCase(
                name: "output redirected", environment: "TERM=tmux-256color NO_COLOR=", redirect: ">/dev/null",
                message: "standard output is not a terminal"),
        ])
    func refusals(_ c: RefusalCase) async throws {
        let pane = try TmuxPane(command: try probeCommand(c.redirect, environment: c.environment), columns: 120)
        let lines = try await pane.text("the terminal restored", within: .seconds(15)) {
            $0.contains { $0.hasPrefix("RESTORED") }
        }
        #expect(lines.contains { $0.contains(c.message) }, "\(lines)")
        #expect(lines.contains("RESTORED rc=1"))
        #expect(try pane.modes() == restoredModes)
    }
}
