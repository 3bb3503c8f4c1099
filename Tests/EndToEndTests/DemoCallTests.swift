import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Golden screens: stored as text, compared after normalising what changes from run to run (the call clock, the
/// speaking highlight, live figures). Re-recorded only with PARLEY_RECORD_GOLDEN=1.
enum Golden {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    /// What varies between runs, replaced by fixed text.
    static func normalise(_ lines: [String]) -> String {
        var text = lines.joined(separator: "\n")
        // Heavy borders mark the speaking tile, solid corners the dominant speaker's and double ones the selected
        // tile: all follow live audio or timers.
        let heavy: [Character: Character] = [
            "┏": "┌", "┓": "┐", "┗": "└", "┛": "┘", "━": "─", "┃": "│",
            "╔": "┌", "╗": "┐", "╚": "└", "╝": "┘", "═": "─", "║": "│",
            "▛": "┌", "▜": "┐", "▙": "└", "▟": "┘",
            // A picture cell is sent as '▀' or, with its colours swapped, '▄', whichever changes fewer colours; in
            // one colour as '█'.
            "▄": "▀", "█": "▀",
        ]
        text = String(text.map { heavy[$0] ?? $0 })
        text = text.replacingOccurrences(of: #"\b\d{1,2}:\d{2}(:\d{2})?\b"#, with: "mm:ss", options: .regularExpression)
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    static func check(_ lines: [String], named name: String) throws {
        let actual = normalise(lines)
        let url = folder.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["PARLEY_RECORD_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try (actual + "\n").write(to: url, atomically: true, encoding: .utf8)
            return
        }
        guard let stored = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("golden \(name).txt is missing; record it with PARLEY_RECORD_GOLDEN=1 swift test")
            return
        }
        let expected = normalise(stored.components(separatedBy: "\n"))
        if actual != expected {
            let a = actual.components(separatedBy: "\n")
            let e = expected.components(separatedBy: "\n")
            let row = zip(a, e).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, e.count)
            Issue.record(
                """
                screen differs from golden \(name).txt at row \(row):
                  expected: \(row < e.count ? e[row] : "(end)")
                  actual:   \(row < a.count ? a[row] : "(end)")
                whole screen:
                \(actual)
                """)
        }
    }
}

/// The real `parley demo` (embedded relay, three bots, real codecs) in a tmux pane, driven by keys.
@Suite(.serialized, .lane(.blocking))
struct DemoCallTests {
    static let sizes = [(80, 24), (160, 48)]

    func demo(columns: Int, rows: Int) throws -> TmuxPane {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built; run swift build")
        let log = NSTemporaryDirectory() + "parley-demo-\(columns)x\(rows).log"
        // Bots chat and toggle video rarely here, so the screens only change when the test presses keys.
        // `swift test` may run with NO_COLOR set; the call is meant to be seen in colour (half blocks, not shades).
        let command =
            "sh -c 'unset NO_COLOR; TERM=tmux-256color \(parley) demo --chat-every 900 --toggle-video-every 900 --log \(log); "
            + "echo EXITED rc=$?; sleep 60'"
        return try TmuxPane(command: command, columns: columns, rows: rows)
    }

    /// Waits until `condition` holds and the screen has settled (two captures 150 ms apart normalise alike), so a
    /// capture never catches a redraw half done.
    func screen(_ pane: TmuxPane, until condition: ([String]) -> Bool, _ what: String) async throws -> [String] {
        try await pane.settledText(what, within: .seconds(18), normalise: Golden.normalise, condition)
    }

    @Test(arguments: sizes)
    func aFourPartyCallDrivenByKeys(columns: Int, rows: Int) async throws {
        let pane = try demo(columns: columns, rows: rows)
        let tag = "\(columns)x\(rows)"
        func has(_ text: String) -> ([String]) -> Bool { { $0.contains { $0.contains(text) } } }
        func lacks(_ text: String) -> ([String]) -> Bool { { !$0.contains { $0.contains(text) } } }

        var lines = try await screen(
            pane, until: { has("4 people · connected")($0) && lacks("waiting for video")($0) },
            "four people with video")
        try Golden.check(lines, named: "demo_\(tag)_start")
        try ColourGolden.check(try pane.escapes(), named: "demo_\(tag)_start")

        try pane.send(["m"])
        lines = try await screen(pane, until: has("Mic off"), "the microphone muted")
        try pane.send(["v"])
        lines = try await screen(pane, until: has("camera off"), "the camera off")
        try Golden.check(lines, named: "demo_\(tag)_muted")
        try ColourGolden.check(try pane.escapes(), named: "demo_\(tag)_muted")

        try pane.send(["2"])
        try pane.send(["2"])
        lines = try await screen(pane, until: has("Esc grid"), "ana fullscreen")
        try Golden.check(lines, named: "demo_\(tag)_fullscreen")
        try ColourGolden.check(try pane.escapes(), named: "demo_\(tag)_fullscreen")
        try pane.send(["Escape"])
        lines = try await screen(pane, until: lacks("Esc grid"), "the grid again")

        try pane.send(["t"])
        try pane.sendLiteral("hello from tmux ✓")
        try pane.send(["Enter"])
        // Enter sends and closes the line: the bar's hotkeys are hotkeys again.
        lines = try await screen(
            pane, until: { has("you: hello from tmux ✓")($0) && lacks("Enter sends")($0) },
            "the chat line sent and the input closed")
        try Golden.check(lines, named: "demo_\(tag)_chat")
        try ColourGolden.check(try pane.escapes(), named: "demo_\(tag)_chat")

        try pane.send(["h"])
        lines = try await screen(pane, until: lacks("Leave"), "controls and chat hidden")
        try Golden.check(lines, named: "demo_\(tag)_hidden")
        try ColourGolden.check(try pane.escapes(), named: "demo_\(tag)_hidden")
        try pane.send(["h"])
        lines = try await screen(pane, until: has("Leave"), "controls back")

        try pane.send(["?"])
        lines = try await screen(pane, until: has("Keys"), "the help overlay")
        try Golden.check(lines, named: "demo_\(tag)_help")
        // Only the chrome here: the help box covers the pictures but for slivers of any height (one row of the
        // moving test picture can be a single colour). The other screens of this test check the pictures.
        try ColourGolden.check(
            try pane.escapes(), named: "demo_\(tag)_help", minimumColours: 0,
            picturesExpected: false)
        try pane.send(["Escape"])
        lines = try await screen(pane, until: lacks("Keys"), "help closed")

        try pane.send(["i"])
        lines = try await screen(pane, until: has("kb/s"), "per-tile stats")
        // The bots send 320x240 and its half; tiles this small get the half (simulcast).
        #expect(lines.contains { $0.contains("160x120") }, "the layer each tile gets shows in it")
        #expect(!lines.contains { $0.contains("320x240") }, "no tile here needs the full layer")
        try pane.send(["i"])

        // The roster: everyone with role, microphone and camera, and the activity with the bots joining.
        try pane.send(["r"])
        lines = try await screen(pane, until: has("Roster · 4"), "the roster")
        #expect(
            lines.contains { $0.contains("you (you)") && $0.contains("in the call") },
            "\(lines.joined(separator: "\n"))")
        #expect(
            lines.contains { $0.contains("Activity") } && lines.contains { $0.contains("joined") },
            "\(lines.joined(separator: "\n"))")
        try pane.send(["Escape"])
        lines = try await screen(pane, until: lacks("Roster"), "roster closed")

        try pane.send(["q"])
        lines = try await screen(pane, until: has("Leave the call?"), "the leave question")
        try pane.send(["y"])
        lines = try await screen(pane, until: has("EXITED rc=0"), "parley to exit")
        #expect(lines.contains { $0.contains("You left demo after") })
        let modes = try pane.modes()
        #expect(modes.contains("alt=0"), "the alternate screen is gone: \(modes)")
        #expect(modes.contains("cursor=1"), "the cursor is back: \(modes)")
    }

    @Test("a call follows its terminal's resizes, with pictures playing and with none at all")
    func followsResizes() async throws {
        func has(_ text: String) -> ([String]) -> Bool { { $0.contains { $0.contains(text) } } }
        // The header ends with the help hint one cell from the screen's right edge; the control bar is on the last
        // row.
        func laidOut(columns: Int, rows: Int) -> ([String]) -> Bool {
            { captured in
                // capture-pane ends with an empty line after the last row.
                let lines = captured.last == "" ? Array(captured.dropLast()) : captured
                return lines.count == rows && lines[0].hasSuffix("? help") && lines[0].count == columns - 1
                    && lines[rows - 1].contains("Leave")
            }
        }
        func resize(_ pane: TmuxPane, through sizes: [(Int, Int)]) async throws {
            for (columns, rows) in sizes {
                try pane.run(["resize-window", "-x", "\(columns)", "-y", "\(rows)"])
                try await pane.text(
                    "the call laid out at \(columns)x\(rows)", within: .seconds(5),
                    laidOut(columns: columns, rows: rows))
            }
        }
        let playing = try demo(columns: 80, rows: 24)
        _ = try await screen(
            playing, until: { has("4 people · connected")($0) && !has("waiting for video")($0) },
            "four people with video")
        try await resize(playing, through: [(120, 36), (100, 30), (80, 24)])

        // Alone with the camera off, no picture wakes the loop: the resize must still be seen.
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built; run swift build")
        let alone = try TmuxPane(
            command: "sh -c 'unset NO_COLOR; TERM=tmux-256color \(parley) demo --bots 0; sleep 60'", columns: 80,
            rows: 24)
        _ = try await screen(alone, until: has("1 person · connected"), "the call alone")
        try alone.send(["v"])
        _ = try await screen(alone, until: has("camera off"), "the camera off")
        try await resize(alone, through: [(110, 32), (80, 24)])
    }
}

/// The layer a fullscreened bot's tile really receives (decoded size in the `i` overlay), per picture mode: the bots
/// send 320x240, 160x120 and 80x60, and every cell mode asks for twice the pixels it draws.
@Suite(.serialized, .lane(.processes))
struct FullscreenLayerProcessTests {
    @Test(arguments: [
        ("half", 200, 60, "320x240"), ("quadrant", 200, 60, "320x240"), ("sextant", 200, 60, "320x240"),
        ("half", 120, 40, "160x120"),
    ])
    func aFullscreenTileGetsTheLayerItsPictureUses(mode: String, columns: Int, rows: Int, layer: String) async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built; run swift build")
        let log = NSTemporaryDirectory() + "parley-layer-\(mode)-\(columns)x\(rows).log"
        let pane = try TmuxPane(
            command: "sh -c 'unset NO_COLOR; TERM=tmux-256color \(parley) demo --picture \(mode) --chat-every 900 "
                + "--toggle-video-every 900 --log \(log); echo EXITED rc=$?; sleep 60'",
            columns: columns, rows: rows)
        try await pane.text("\"4 people · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("4 people · connected") }
        }
        try pane.send(["2"])
        try pane.send(["2"])
        try await pane.text("\"Esc grid\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Esc grid") }
        }
        try pane.send(["i"])
        let lines = try await pane.text("the layer \(layer) in the tile's stats", within: .seconds(20)) {
            $0.contains { $0.contains(layer + " ") }
        }
        #expect(
            lines.contains { $0.contains(layer + " ") },
            "\(mode) at \(columns)x\(rows):\n\(lines.joined(separator: "\n"))")
        try pane.send(["q"])
        try pane.send(["y"])
    }
}

/// `parley join` against a separate `parley serve` process: what the keys do must reach the relay.
@Suite(.serialized, .lane(.processes))
struct JoinAgainstRelayTests {
    @Test func muteFromTheKeyboardReachesTheRelayAndTheOthers() async throws {
        let parley = try #require(parleyBinaryPath())
        let files = NSTemporaryDirectory() + "parley-join-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: files) }
        let relay = try BackgroundProcess(
            parley,
            [
                "serve", "--port", "0", "--log-level", "info",
                "--state-dir", files + "/relay",
            ])
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/)?.1)
        let bot = try BackgroundProcess(
            parley,
            [
                "bot", "standup", "--server", "127.0.0.1:\(port)", "--name", "watcher",
                "--log-level", "info", "--no-decode",
                "--known-relays", files + "/bot-known_relays",
            ])
        try await relay.output(containing: "member joined", within: .seconds(10))
        let log = NSTemporaryDirectory() + "parley-join-\(getpid()).log"
        let pane = try TmuxPane(
            command: "sh -c '\(parley) join standup --server 127.0.0.1:\(port) --name alice --profile 320x180 "
                + "--known-relays \(files)/known_relays --log \(log); echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        let lines = try await pane.text("\"2 people · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("2 people · connected") }
        }
        #expect(lines.contains { $0.contains("2 people · connected") }, "\(lines.joined(separator: "\n"))")

        // A chat line sent with Enter closes the input: the `m` after it mutes, it is not typed into the chat.
        try pane.send(["t"])
        try pane.sendLiteral("hi")
        try pane.send(["Enter"])
        try await bot.output(containing: "text: \"hi\"", within: .seconds(10))
        try pane.send(["m"])
        try await relay.output(containing: "audio=true", within: .seconds(10))
        try await bot.output(containing: "remoteAudioMuted", within: .seconds(10))
        let muted = try await pane.text("\"Mic off\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Mic off") }
        }
        #expect(muted.contains { $0.contains("Mic off") }, "the bar shows the microphone off")
        #expect(!muted.contains { $0.hasPrefix(">") || $0.contains("> m") }, "no chat input holds the m")
        try pane.send(["v"])
        try await relay.output(containing: "video=true", within: .seconds(10))

        try pane.send(["q"])
        try pane.send(["y"])
        let end = try await pane.text("\"EXITED rc=0\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED rc=0") }
        }
        #expect(end.contains { $0.contains("EXITED rc=0") })
        // The other member saw alice quit ("reason: ParleyRoom.OfflineReason.quit", or at least "quit").
        try await bot.output("alice's quit", within: .seconds(20)) { $0.contains("quit") }
        relay.signal(SIGTERM)
        #expect(await relay.exitStatus(within: .seconds(5)) == 0, "the relay shuts down cleanly on SIGTERM")
    }

    /// The host removes m2 (a `parley join` in tmux): m2's call screen closes and `parley join` exits non-zero with
    /// who removed them; a `parley bot` m2 is refused at once with the same; after `/allow m2` it gets in.
    @Test func aRemovedMemberLeavesWithTheReasonAndStaysOutUntilAllowed() async throws {
        let parley = try #require(parleyBinaryPath())
        let files = NSTemporaryDirectory() + "parley-remove-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: files) }
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        try "board password=letmein stage=host\n".write(toFile: files + "/rooms", atomically: true, encoding: .utf8)
        let relay = try BackgroundProcess(
            parley,
            [
                "serve", "--port", "0", "--log-level", "info", "--state-dir", files + "/relay", "--rooms",
                files + "/rooms",
            ])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/)?.1)
        func join(_ name: String) throws -> TmuxPane {
            try TmuxPane(
                command: "sh -c '\(parley) join board --server 127.0.0.1:\(port) --name \(name) --password letmein "
                    + "--profile 320x180 --known-relays \(files)/known_relays --log \(files)/\(name).log; "
                    + "echo EXITED rc=$?; sleep 60'",
                columns: 100, rows: 30)
        }
        let host = try join("alice")
        try await host.text("\"1 person · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("1 person · connected") }
        }
        let m2 = try join("m2")
        let both = try await host.text("\"2 people · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("2 people · connected") }
        }
        #expect(both.contains { $0.contains("2 people · connected") }, "\(both.joined(separator: "\n"))")

        try host.send(["t"])
        try host.sendLiteral("/remove m2")
        try host.send(["Enter"])
        let gone = try await m2.text("\"EXITED\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        let shown = gone.joined(separator: "\n")
        #expect(shown.contains("EXITED rc=1"), "removed, parley join fails: \(shown)")
        #expect(shown.contains("alice, the host, removed you from board"), "\(shown)")
        let modes = try m2.modes()
        #expect(modes.contains("alt=0"), "the call screen closed and the terminal is restored: \(modes)")

        func bot() throws -> BackgroundProcess {
            try BackgroundProcess(
                parley,
                [
                    "bot", "board", "--server", "127.0.0.1:\(port)", "--name", "m2", "--password", "letmein",
                    "--no-decode", "--known-relays", files + "/known_relays",
                ])
        }
        let refused = try bot()
        #expect(await refused.exitStatus(within: .seconds(15)) == 1, "a rejoin is refused: \(refused.output)")
        #expect(
            refused.output.contains("alice, the host, removed you from board; only the host can let you back in"),
            "\(refused.output)")

        try host.send(["t"])
        try host.sendLiteral("/allow m2")
        try host.send(["Enter"])
        let allowed = try await host.text("\"You let m2 back into the room\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("You let m2 back into the room") }
        }
        #expect(allowed.contains { $0.contains("You let m2 back into the room") }, "\(allowed.joined(separator: "\n"))")
        let back = try bot()
        defer { back.stop() }
        let again = try await host.text("\"2 people · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("2 people · connected") }
        }
        #expect(again.contains { $0.contains("2 people · connected") }, "m2 is back: \(back.output)")
        try host.send(["q"])
        try host.send(["y"])
    }

    /// alice hosts, bob (a bot) is in the room; the relay is killed with SIGKILL and started again with the same state
    /// folder: whoever reconnects first, alice hosts again and her host commands work.
    @Test func theHostKeepsTheRoleAcrossARelayRestart() async throws {
        let parley = try #require(parleyBinaryPath())
        let files = NSTemporaryDirectory() + "parley-host-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: files) }
        func serve(port: String) throws -> BackgroundProcess {
            try BackgroundProcess(
                parley, ["serve", "--port", port, "--log-level", "info", "--state-dir", files + "/relay"])
        }
        // Restarted on the same port below: one the kernel never hands out as a source port.
        let port = String(try LoopbackPort.belowEphemeralRange())
        var relay = try serve(port: port)
        try await relay.output(containing: "listening on 127.0.0.1:\(port)", within: .seconds(10))
        let host = try TmuxPane(
            command: "sh -c '\(parley) join standup --server 127.0.0.1:\(port) --name alice --profile 320x180 "
                + "--known-relays \(files)/known_relays --log \(files)/alice.log; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        try await host.text("alice alone in the call", within: .seconds(15)) {
            $0.contains { $0.contains("1 person · connected") }
        }
        let bob = try BackgroundProcess(
            parley,
            [
                "bot", "standup", "--server", "127.0.0.1:\(port)", "--name", "bob", "--no-decode",
                "--known-relays", files + "/bot-known_relays",
            ])
        defer { bob.stop() }
        try await host.text("bob in alice's call", within: .seconds(15)) {
            $0.contains { $0.contains("2 people · connected") }
        }
        // The relay writes its rooms' hosts once a second.
        let kept = files + "/relay/room-hosts.json"
        try await waitUntil("the room's host kept in \(kept)", timeout: .seconds(5), every: .milliseconds(100)) {
            (try? String(contentsOfFile: kept, encoding: .utf8))?.contains("standup") ?? false
        }

        relay.signal(SIGKILL)
        #expect(await relay.exitStatus(within: .seconds(5)) == 128 + SIGKILL)
        relay = try serve(port: port)
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        try await host.text("alice reconnected with bob", within: .seconds(30)) {
            $0.contains { $0.contains("2 people · connected") } && $0.contains { $0.contains("Reconnected") }
        }
        try host.send(["r"])
        let roster = try await host.text("alice the host in the roster", within: .seconds(15)) {
            $0.contains { $0.contains("alice (you) (host)") }
        }
        #expect(!roster.contains { $0.contains("bob (host)") }, "\(roster.joined(separator: "\n"))")
        try host.send(["Escape"])
        try host.send(["t"])
        try host.sendLiteral("/remove bob")
        try host.send(["Enter"])
        let removed = await bob.exitStatus(within: .seconds(15))
        let screen = (try? host.text())?.joined(separator: "\n") ?? ""
        #expect(removed == 1, "alice's /remove works after the restart: \(bob.output)\nalice's screen:\n\(screen)")
        try host.send(["q"])
        try host.send(["y"])
    }

    @Test func anUnreachableRelayIsAClearErrorAndTheTerminalIsRestored() async throws {
        let parley = try #require(parleyBinaryPath())
        let pane = try TmuxPane(
            command: "sh -c '\(parley) join standup --server 127.0.0.1:9 --name alice --log /dev/null; "
                + "echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        let lines = try await pane.text("\"EXITED\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        let text = lines.joined(separator: "\n")
        #expect(text.contains("cannot reach the relay at 127.0.0.1:9"), "\(text)")
        #expect(text.contains("EXITED rc=64") || text.contains("EXITED rc=1"), "\(text)")
        #expect(try pane.modes().contains("alt=0"))
    }

    @Test func badArgumentsSayWhatToTypeInstead() throws {
        let parley = try #require(parleyBinaryPath())
        let cases: [([String], String)] = [
            (["join", "standup", "--name", "a b"], "contains a space: use a_b instead"),
            (["join", "", "--name", "alice"], "Room name is empty"),
            (["join", "r", "--name", "alice", "--server", "host:99999"], "not a number from 1 to 65535"),
            (["join", "r", "--name", "alice", "--profile", "999x1"], "unknown video profile \"999x1\""),
            (["join", "r", "--name", "alice", "--role", "king"], "--role must be broadcaster or audience"),
            (["serve", "--port", "70000"], "--port must be 0…65535"),
            (["serve", "--trunk-port", "70000"], "--trunk-port must be 0…65535"),
            (["serve", "--placement", "everywhere"], "--placement must be spread or single, got \"everywhere\""),
            (["serve", "--placement", "single"], "--placement is for a cluster: give --database"),
            (
                ["serve", "--placement", "spread", "--database", "postgres://p@127.0.0.1:1/d"],
                "--placement spread carries media between nodes over trunks: give --cluster-secret-file too"
            ),
            (["serve", "--drain-seconds", "5000"], "--drain-seconds must be 0…3600, got 5000"),
            (["cluster", "drain", "a", "--wait", "5000"], "--wait must be 0…3600 seconds, got 5000"),
            (
                ["serve", "--cluster-secret-file", "/etc/hostname"],
                "--cluster-secret-file is for a cluster: give --database (or PARLEY_DATABASE_URL) too"
            ),
            (["bot", "r", "--video", "cat.png"], "neither \"synthetic\" nor a .y4m file"),
            (
                ["join", "r", "--name", "alice", "--stats-file", "/nonexistent-parley/s.json"],
                "--stats-file /nonexistent-parley/s.json: the folder /nonexistent-parley does not exist"
            ),
            (["bot", "r", "--stats-file", "/tmp"], "--stats-file /tmp is a folder; give a file name"),
            (
                ["join", "r", "--name", "alice", "--mic", "USB", "--audio", "synthetic"],
                "give either --mic (a microphone) or --audio (a file or synthetic source), not both"
            ),
            (
                ["join", "r", "--name", "alice", "--speaker", "Headphones", "--audio-out", "call.wav"],
                "give either --speaker or --audio-out (a .wav file), not both"
            ),
            (
                ["join", "r", "--name", "alice", "--camera", " "],
                "a device name cannot be empty: `parley devices` lists the names"
            ),
            (["join", "r", "--name", "alice", "--video", "/dev/video0"], "(a camera goes in --camera)"),
        ]
        for (arguments, message) in cases {
            let result = try ChildProcess.run(parley, arguments)
            #expect(result.status != 0, "\(arguments) should fail")
            #expect(result.output.contains(message), "\(arguments): \(result.output)")
        }
    }
}
