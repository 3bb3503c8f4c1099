import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// `parley share` with the real binary: alice shares a shell from one tmux pane through a `parley serve` relay, bob
/// watches with `parley join` in another. He sees her text and its colour; a burst of 2,000 lines ends on the same
/// screen for him as for her; carol, joining after it, sees the screen as it is; bob's window made smaller leaves
/// alice's terminal its size; her leaving the shell ends the share for everyone.
@Suite(.serialized, .lane(.blocking))
struct ShareProcessTests {
    static var stateDirectory: String { NSTemporaryDirectory() + "parley-share-\(getpid())" }

    func serve(_ parley: String) async throws -> (BackgroundProcess, String) {
        let relay = try BackgroundProcess(
            parley, ["serve", "--port", "0", "--insecure", "--state-dir", Self.stateDirectory])
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        return (relay, port)
    }

    func viewer(_ parley: String, name: String, port: String, columns: Int = 120, rows: Int = 40) throws -> TmuxPane {
        try TmuxPane(
            command:
                "sh -c 'unset NO_COLOR; TERM=tmux-256color \(parley) join pairing --server 127.0.0.1:\(port) --insecure --guest --name \(name) "
                + "--video synthetic --audio silence --speaker none --log /dev/null; echo EXITED rc=$?; sleep 60'",
            columns: columns, rows: rows)
    }

    @Test func aSharedShellIsSeenLiveByEveryViewerAndEndsWithIt() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let (relay, port) = try await serve(parley)
        defer { try? FileManager.default.removeItem(atPath: Self.stateDirectory) }
        defer { relay.stop() }
        let bob = try viewer(parley, name: "bob", port: port)
        try await bob.text("bob in the call", within: .seconds(15)) { $0.contains { $0.contains("bob (you)") } }

        let alice = try TmuxPane(
            command: "sh -c 'PS1=\"share$ \" \(parley) share pairing --server 127.0.0.1:\(port) --insecure --guest "
                + "--name alice --log /dev/null -- bash --norc --noprofile; echo EXITED rc=$?; sleep 60'",
            columns: 80, rows: 24)
        try await alice.text("the share started", within: .seconds(15)) {
            $0.contains { $0.contains("Sharing this terminal with pairing as alice's terminal") }
        }
        try await bob.text("alice's terminal in bob's call", within: .seconds(15)) {
            $0.contains { $0.contains("alice's terminal") }
        }

        // Text and colour: the red word reaches bob as red cells (palette red, however his terminal draws it).
        try alice.sendLiteral("printf '\\033[31mRED-MARK\\033[0m wide:日本\\n'")
        try alice.send(["Enter"])
        try await bob.text("RED-MARK on bob's screen", within: .seconds(15)) {
            $0.contains { $0.contains("RED-MARK") && !$0.contains("printf") }
        }
        // Cells once drawn stay: one capture with escapes (bob's moving self view shares the row, so the screen is
        // never the same twice).
        let escapes = try bob.escapes()
        let line = try #require(escapes.first { $0.contains("RED-MARK") && !$0.contains("printf") })
        let before = line.components(separatedBy: "RED-MARK")[0]
        #expect(
            before.hasSuffix("\u{1B}[31m") || before.contains("38;5;1m") || before.contains("38;5;9m")
                || before.contains("38;5;196m"), "RED-MARK is not red for bob: \(line.debugDescription)")
        let bobText = try bob.text()
        #expect(bobText.contains { $0.contains("RED-MARK wide:日本") }, "\(bobText.joined(separator: "\n"))")

        // A burst of 2,000 lines: bob ends on the screen alice ends on.
        try alice.sendLiteral("seq 1 2000; echo BURST-DONE")
        try alice.send(["Enter"])
        try await alice.text("the burst at alice", within: .seconds(15)) {
            $0.contains { $0.hasPrefix("BURST-DONE") }
        }
        let seen = try await bob.text("the end of the burst at bob", within: .seconds(15)) {
            $0.contains { $0.contains("│BURST-DONE") } && $0.contains { $0.contains("│2000") }
        }
        #expect(seen.contains { $0.contains("│1999") }, "\(seen.joined(separator: "\n"))")

        // carol joins after it all: the screen as it is now, within moments.
        let carol = try viewer(parley, name: "carol", port: port)
        try await carol.text("the current screen at carol", within: .seconds(15)) {
            $0.contains { $0.contains("BURST-DONE") } && $0.contains { $0.contains("2000") }
        }

        // bob's window made smaller: his tile shows the part by the cursor, alice's terminal keeps its size.
        try bob.run(["resize-window", "-x", "90", "-y", "26"])
        try await bob.text("the part by the cursor at bob", within: .seconds(15)) {
            $0.contains { $0.contains("part by the cursor") } && $0.contains { $0.contains("BURST-DONE") }
        }
        try alice.sendLiteral("stty size")
        try alice.send(["Enter"])
        try await alice.text("alice's size unchanged", within: .seconds(15)) { $0.contains { $0 == "24 80" } }

        // Leaving the shell ends the share: alice's command exits, bob and carol see the terminal go.
        try alice.sendLiteral("exit")
        try alice.send(["Enter"])
        let end = try await alice.text("the share ended", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        #expect(end.contains { $0.contains("Stopped sharing this terminal with pairing") })
        #expect(end.contains { $0.contains("EXITED rc=0") }, "\(end.joined(separator: "\n"))")
        try await carol.text("the terminal gone at carol", within: .seconds(15)) {
            $0.contains { $0.contains("alice's terminal left") }
        }
    }

    @Test func aShareIntoARoomItCannotJoinSaysWhyAndStartsNoShell() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let (relay, port) = try await serve(parley)
        defer { try? FileManager.default.removeItem(atPath: Self.stateDirectory) }
        defer { relay.stop() }
        let first = try TmuxPane(
            command: "sh -c '\(parley) share pairing --server 127.0.0.1:\(port) --insecure --guest --name alice "
                + "--log /dev/null -- sh; sleep 60'", columns: 80, rows: 24)
        try await first.text("the first share", within: .seconds(15)) { $0.contains { $0.contains("Sharing this") } }
        let result = try ChildProcess.run(
            parley,
            [
                "share", "pairing", "--server", "127.0.0.1:\(port)", "--insecure", "--guest", "--name", "alice",
                "--log", "/dev/null", "--", "sh", "-c", "echo SHOULD-NOT-RUN",
            ], timeout: .seconds(30))
        #expect(result.status != 0)
        #expect(result.output.contains("Could not share into pairing: "), "\(result.output)")
        #expect(result.output.contains("alice already shares a terminal"), "\(result.output)")
        #expect(!result.output.contains("SHOULD-NOT-RUN"))
    }

    /// alice, in the call herself, lets bob type in her shared shell with /control bob: with it large on his screen
    /// his keys reach her shell and her terminal's title says he may type; /control off gives his keys back to his
    /// call (m mutes his microphone again).
    @Test func theSharerLetsOneMemberTypeAndTakesItBack() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let (relay, port) = try await serve(parley)
        defer { try? FileManager.default.removeItem(atPath: Self.stateDirectory) }
        defer { relay.stop() }
        let alice = try viewer(parley, name: "alice", port: port)
        let bob = try viewer(parley, name: "bob", port: port)
        // alice joins before her terminal, so bob's tiles are bob, alice, then the terminal.
        try await bob.text("alice at bob", within: .seconds(15)) { $0.contains { $0.contains("2 alice ") } }
        let share = try TmuxPane(
            command: "sh -c 'PS1=\"share$ \" \(parley) share pairing --server 127.0.0.1:\(port) --insecure --guest "
                + "--name alice --log /dev/null -- bash --norc --noprofile; sleep 60'",
            columns: 80, rows: 24)
        try await bob.text("alice's terminal at bob", within: .seconds(15)) {
            $0.contains { $0.contains("alice's terminal") }
        }
        try await alice.text("her terminal at alice", within: .seconds(15)) {
            $0.contains { $0.contains("alice's terminal") }
        }
        try alice.send(["t"])
        try alice.sendLiteral("/control bob")
        try alice.send(["Enter"])
        try await bob.text("bob told he may type", within: .seconds(15)) {
            $0.contains { $0.contains("you may type") }
        }
        try await alice.text("alice told bob may type", within: .seconds(15)) {
            $0.contains { $0.contains("bob types") }
        }
        // Tile 3 is alice's terminal at bob (bob, alice, then it): large with its number twice.
        try bob.send(["3"])
        try bob.send(["3"])
        try await bob.text("bob typing", within: .seconds(15)) {
            $0.contains { $0.contains("you type (Ctrl-] to stop)") }
        }
        try bob.sendLiteral("echo typed-by-bob")
        try bob.send(["Enter"])
        try await share.text("bob's keys in alice's shell", within: .seconds(15)) {
            $0.contains { $0 == "typed-by-bob" }
        }
        let title = try share.run(["display", "-p", "#{pane_title}"])
        #expect(title.contains("parley share: bob can type here"), "the title is \(title)")

        try alice.send(["t"])
        try alice.sendLiteral("/control off")
        try alice.send(["Enter"])
        // The tile's edge no longer says he types (the chat pane's line wraps in a narrow pane).
        try await bob.text("bob's tile no longer saying he types", within: .seconds(15)) { lines in
            lines.contains { $0.contains("alice's terminal") } && !lines.contains { $0.contains("· you") }
        }
        try bob.send(["m"])
        try await bob.text("m is bob's own again", within: .seconds(15)) {
            $0.contains { $0.contains("Mic off") }
        }
        let shell = try share.text()
        #expect(!shell.contains { $0.contains("share$ m") }, "\(shell.joined(separator: "\n"))")
    }
}
