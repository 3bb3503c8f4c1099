import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Meeting links with the real `parley` binary and a `parley serve` relay: joining by link (also as `parley LINK`),
/// the answers to every wrong form, a room name the rules change said in the call, and the invite link copied to
/// the clipboard with OSC 52 (tmux with set-clipboard on keeps it as a paste buffer).
@Suite(.lane(.blocking)) struct MeetingLinkProcessTests {
    /// The relay's state folder, removed by the test that started it.
    static var stateDirectory: String { NSTemporaryDirectory() + "parley-link-\(getpid())" }

    func serve(_ parley: String) async throws -> (BackgroundProcess, String) {
        let relay = try BackgroundProcess(
            parley, ["serve", "--port", "0", "--insecure", "--state-dir", Self.stateDirectory])
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        return (relay, port)
    }

    @Test func wrongFormsSayWhatToType() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let cases: [([String], String)] = [
            (
                ["join", "standup", "--server", "ws://127.0.0.1:7878/room", "--insecure"],
                "is a link, not a relay address: join it with parley join ws://127.0.0.1:7878/room"
            ),
            (
                ["join", "ws://127.0.0.1:7878/room"],
                "is a link to a relay without TLS (ws:// or http://): add --insecure"
            ),
            (["join", "parley://127.0.0.1:7878"], "names no room; add it after a slash: parley://127.0.0.1:7878/ROOM"),
            (
                ["join", "http://127.0.0.1:7878/room"],
                "is a link to a relay without TLS (ws:// or http://): add --insecure"
            ),
            (
                ["join", "parley://relay.example/standup", "--server", "other.example:7878"],
                "the link names the relay relay.example:7878 and --server says other.example:7878"
            ),
            (["standup"], "is not a meeting link or a command: to join a room by name run parley join standup"),
        ]
        for (arguments, expected) in cases {
            let result = try ChildProcess.run(parley, arguments, timeout: .seconds(20))
            #expect(result.status != 0 && result.output.contains(expected), "\(arguments): \(result.output)")
        }
    }

    @Test func aLinkJoinsTheChangedRoomIsSaidAndTheInviteIsCopied() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let (relay, port) = try await serve(parley)
        defer { try? FileManager.default.removeItem(atPath: Self.stateDirectory) }
        defer { relay.stop() }
        let pane = try TmuxPane(
            command: "sh -c '\(parley) ws://127.0.0.1:\(port)/team%2Falpha --insecure --guest --name alice "
                + "--video synthetic --audio synthetic --speaker none --log /dev/null; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        try pane.run(["set-option", "-s", "set-clipboard", "on"])
        var lines = try await pane.text("the changed room said", within: .seconds(15)) {
            $0.contains { $0.contains("Joined teamalpha:") }
        }
        #expect(
            lines.contains { $0.contains("Joined teamalpha: '/' is not allowed in room names") },
            "\(lines.joined(separator: "\n"))")
        #expect(lines.first?.contains("teamalpha") == true, "\(lines.joined(separator: "\n"))")

        try pane.send(["l"])
        try await pane.text("the invite said", within: .seconds(15)) {
            $0.contains { $0.contains("Invite: ws://127.0.0.1:\(port)/teamalpha") }
        }
        // tmux holds the copied link as a paste buffer once the OSC 52 reached it.
        let buffer = try await poll(
            "the invite in tmux's paste buffer", timeout: .seconds(5), every: .milliseconds(100)
        ) {
            (try? pane.run(["show-buffer"])) ?? ""
        } until: {
            !$0.isEmpty
        }
        #expect(buffer == "ws://127.0.0.1:\(port)/teamalpha", "the clipboard holds \"\(buffer)\"")

        try pane.send(["q"])
        try pane.send(["y"])
        lines = try await pane.text("parley to exit", within: .seconds(15)) { $0.contains { $0.contains("EXITED") } }
        #expect(lines.contains { $0.contains("EXITED rc=0") }, "\(lines.joined(separator: "\n"))")
    }

    /// The lobby's Key with the Cipher left at "none", and a meeting link with `--secret-file`: both join a TLS
    /// relay's room end-to-end encrypted (AES-128-GCM), so a bot with the same `--secret` is let in, and the two
    /// members show the same safety code.
    @Test func aKeyFromTheLobbyOrAFileAlwaysEncrypts() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let files = NSTemporaryDirectory() + "parley-key-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: files) }
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        let secret = "my room secret 123"
        try (secret + "\n").write(toFile: files + "/secret", atomically: true, encoding: .utf8)
        let relay = try BackgroundProcess(parley, ["serve", "--port", "0", "--state-dir", files + "/relay"])
        defer { relay.stop() }
        try await relay.output(containing: "TLS fingerprint", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let media = "--video synthetic --audio synthetic --speaker none --log /dev/null --guest"

        let lobby = try TmuxPane(
            command: "sh -c '\(parley) --server 127.0.0.1:\(port) --name zed --room keyroom \(media) "
                + "--known-relays \(files)/known_relays; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        try await lobby.text("\"[ Join ]\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("[ Join ]") }
        }
        // From Join: Up past Settings, Role and Cipher to Key; the Cipher is left as it is.
        try lobby.send(["Up", "Up", "Up", "Up"])
        try lobby.sendLiteral(secret)
        try lobby.send(["Enter"])
        var lines = try await lobby.text("\"🔒\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("🔒") }
        }
        let header = lines.first { $0.contains("🔒") } ?? ""
        let code = try #require(
            header.firstMatch(of: /🔒 (\d{4} \d{4})/).map { String($0.1) }, "\(lines.joined(separator: "\n"))")

        let bot = try ChildProcess.run(
            parley,
            [
                "bot", "keyroom", "--server", "127.0.0.1:\(port)", "--name", "bot", "--secret", secret,
                "--duration", "1", "--no-decode", "--known-relays", files + "/known_relays",
            ], timeout: .seconds(30))
        #expect(bot.status == 0, "the bot with the same secret is let in: \(bot.output)")

        let link = try TmuxPane(
            command: "sh -c '\(parley) parley://127.0.0.1:\(port)/keyroom --secret-file \(files)/secret --name amy "
                + "\(media) --known-relays \(files)/known_relays; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        lines = try await link.text("\"🔒\" on the screen", within: .seconds(15)) { $0.contains { $0.contains("🔒") } }
        #expect(
            lines.contains { $0.contains("🔒 \(code)") },
            "the link joins with the same key: \(lines.joined(separator: "\n"))")
        for pane in [lobby, link] {
            try pane.send(["q"])
            try pane.send(["y"])
        }
    }
}
