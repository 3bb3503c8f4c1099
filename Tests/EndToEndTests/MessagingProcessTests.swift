import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Messaging between calls with the real `parley` binary: accounts in separate config folders, a `parley serve`
/// relay with its state folder, and a relay killed with SIGKILL between send and delivery.
@Suite(.lane(.processes)) struct MessagingProcessTests {
    let folder = NSTemporaryDirectory() + "parley-msg-\(getpid())-\(UUID().uuidString.prefix(8))"

    func serve(_ parley: String, port: String = "0") async throws -> (BackgroundProcess, String) {
        let relay = try BackgroundProcess(
            parley, ["serve", "--port", port, "--insecure", "--state-dir", folder + "/relay"])
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        return (relay, "127.0.0.1:\(port)")
    }

    /// Runs `parley ARGUMENTS` as `user` (its own config folder), on a thread of its own: the suite's tests run
    /// in parallel, and a wait for a program on the async runtime's threads (one per core) stalled every other test's
    /// deadline in the process (a pane wait of 15 s once ran out that way). Status and output.
    func run(_ parley: String, as user: String, _ arguments: [String]) async throws -> ChildProcess.Result {
        let folder = folder
        let result = try await onOwnThread {
            try ChildProcess.run(
                "/usr/bin/env", ["XDG_CONFIG_HOME=\(folder)/\(user)", parley] + arguments, timeout: .seconds(30))
        }
        #expect(!result.timedOut, "parley \(arguments.joined(separator: " ")) hung")
        return result
    }

    /// `parley login --insecure` is remembered: the account's later commands reach its relay the same way without
    /// being told again. TLS against a relay without it, and `--insecure` against one with it, are one sentence each
    /// naming the flag, with no TLS library's dump.
    @Test func aLoginRemembersHowItReachedItsRelayAndAMismatchIsOneSentence() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (relay, server) = try await serve(parley)
        defer { relay.stop() }
        let tls = try await run(parley, as: "ann", ["login", "ann", "--server", server])
        #expect(tls.status != 0, "\(tls.output)")
        #expect(
            tls.output.contains(
                "the relay at \(server) was started with --insecure (plain ws://, no TLS): add --insecure"),
            "\(tls.output)")
        #expect(!tls.output.contains("BoringSSL") && !tls.output.contains(".cc:"), "no TLS dump: \(tls.output)")

        #expect(try await run(parley, as: "ben", ["login", "ben", "--server", server, "--insecure"]).status == 0)
        #expect(try await run(parley, as: "ann", ["login", "ann", "--server", server, "--insecure"]).status == 0)
        let sent = try await run(parley, as: "ann", ["msg", "ben", "hi"])
        #expect(sent.status == 0 && sent.output.contains("stored for ben"), "\(sent.output)")
        let inbox = try await run(parley, as: "ben", ["inbox"])
        #expect(inbox.status == 0 && inbox.output.contains("ann: hi"), "\(inbox.output)")
        #expect(try await run(parley, as: "ann", ["chats"]).status == 0)
        #expect(try await run(parley, as: "ann", ["status", "ben"]).status == 0)

        let secure = try BackgroundProcess(parley, ["serve", "--port", "0", "--state-dir", folder + "/tls-relay"])
        defer { secure.stop() }
        try await secure.output(containing: "TLS fingerprint", within: .seconds(10))
        let port = try #require(secure.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let plain = try await run(parley, as: "cat", ["login", "cat", "--server", "127.0.0.1:\(port)", "--insecure"])
        #expect(plain.status != 0, "\(plain.output)")
        #expect(
            plain.output.contains("the relay at 127.0.0.1:\(port) speaks TLS: leave out --insecure"), "\(plain.output)")
    }

    @Test func everyAcknowledgedMessageSurvivesARelayKilledBeforeDeliveryAndArrivesOnceInOrder() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var (relay, server) = try await serve(parley)
        #expect(try await run(parley, as: "bob", ["login", "bob", "--server", server, "--insecure"]).status == 0)
        let alice = try await run(parley, as: "alice", ["login", "alice", "--server", server, "--insecure"])
        #expect(alice.status == 0 && alice.output.contains("the relay bound alice to this key"), "\(alice.output)")

        // Bob is offline; each of alice's messages is acknowledged (status 0) only once the relay stored it.
        for index in 1...5 {
            let sent = try await run(parley, as: "alice", ["msg", "bob", "note \(index) ☕", "--insecure"])
            #expect(sent.status == 0 && sent.output.contains("stored for bob"), "\(sent.output)")
        }
        relay.signal(SIGKILL)
        #expect(await relay.exitStatus(within: .seconds(5)) == 128 + SIGKILL)
        // Killed: nothing answers, and a message now is not acknowledged.
        let lost = try await run(parley, as: "alice", ["msg", "bob", "while down", "--insecure"])
        #expect(
            lost.status != 0 && lost.output.contains("kept in this computer's outbox"),
            "a message to a dead relay is not reported stored: \(lost.output)")

        (relay, server) = try await serve(parley)
        defer { relay.stop() }
        let inbox = try await run(parley, as: "bob", ["inbox", "--insecure", "--server", server])
        let lines = inbox.output.split(separator: "\n").filter { $0.contains("alice: ") }
        #expect(
            lines.map { String($0.split(separator: " ", maxSplits: 2)[2]) } == (1...5).map { "alice: note \($0) ☕" },
            "every acknowledged message, once, in order:\n\(inbox.output)")
        let again = try await run(parley, as: "bob", ["inbox", "--insecure", "--server", server])
        #expect(again.output.contains("no messages waiting"), "delivered once: \(again.output)")

        // Alice's next command that reaches the relay sends what her outbox kept, once.
        #expect(try await run(parley, as: "alice", ["chats", "--insecure", "--server", server]).status == 0)
        #expect(try await run(parley, as: "alice", ["chats", "--insecure", "--server", server]).status == 0)
        let late = try await run(parley, as: "bob", ["inbox", "--insecure", "--server", server])
        #expect(
            late.output.split(separator: "\n").filter { $0.hasSuffix("alice: while down") }.count == 1, "\(late.output)"
        )

        let history = try await run(parley, as: "bob", ["history", "alice", "--insecure", "--server", server])
        #expect(history.output.split(separator: "\n").count == 6, "\(history.output)")
        // The sender reads its own messages too: its copy, sealed to itself, comes back only to it.
        let own = try await run(parley, as: "alice", ["history", "bob", "--insecure", "--server", server])
        #expect(own.output.contains("alice: note 1 ☕") && own.output.contains("alice: note 5 ☕"), "\(own.output)")
        let status = try await run(parley, as: "alice", ["status", "bob", "--insecure", "--server", server])
        #expect(status.output.contains("bob is offline, last seen"), "\(status.output)")

        // The relay gone: history reads from this computer's copy.
        relay.stop()
        let offline = try await run(parley, as: "bob", ["history", "alice", "--insecure", "--server", server])
        let offlineLines = offline.output.split(separator: "\n")
        #expect(
            offline.status == 0 && offlineLines.count == 7 && offlineLines[0].hasSuffix("alice: note 1 ☕")
                && offlineLines[5].hasSuffix("alice: while down") && offlineLines[6].hasPrefix("(offline:"),
            "\(offline.output)")
    }

    @Test func channelsAndTheConversationListFromTheCommandLine() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (relay, server) = try await serve(parley)
        defer { relay.stop() }
        for user in ["alice", "bob"] {
            #expect(try await run(parley, as: user, ["login", user, "--server", server, "--insecure"]).status == 0)
        }
        let joined = try await run(parley, as: "alice", ["channel", "join", "release crew", "--insecure"])
        #expect(joined.status == 0 && joined.output.contains("joined release crew: 1 member"), "\(joined.output)")
        #expect(
            try await run(parley, as: "bob", ["channel", "join", "release crew", "--insecure"]).output.contains(
                "2 members"))
        let said = try await run(
            parley, as: "bob", ["channel", "say", "release crew", "tagging 2.0 now", "--insecure"])
        #expect(said.status == 0 && said.output.contains("stored in release crew"), "\(said.output)")
        let outsider = try await run(parley, as: "carol", ["login", "carol", "--server", server, "--insecure"])
        #expect(outsider.status == 0)
        let refused = try await run(parley, as: "carol", ["channel", "say", "release crew", "hi", "--insecure"])
        #expect(
            refused.status != 0 && refused.output.contains("not stored") && refused.output.contains("join it first"),
            "\(refused.output)")
        #expect(try await run(parley, as: "bob", ["msg", "alice", "lunch?", "--insecure"]).status == 0)

        // Alice's list: the direct message is newest, both unread.
        let chats = try await run(parley, as: "alice", ["chats", "--insecure"])
        let lines = chats.output.split(separator: "\n").map(String.init)
        #expect(
            lines.count == 2 && lines[0].hasPrefix("bob (1 unread)") && lines[0].hasSuffix("bob: lunch?")
                && lines[1].hasPrefix("#release crew (2 members) (1 unread)")
                && lines[1].hasSuffix("bob: tagging 2.0 now"),
            "\(chats.output)")
        let history = try await run(parley, as: "alice", ["channel", "history", "release crew", "--insecure"])
        #expect(
            history.output.contains("-- alice joined (1 member)")
                && history.output.contains("-- bob joined (2 members)")
                && history.output.contains("bob: tagging 2.0 now"), "\(history.output)")
        #expect(try await run(parley, as: "alice", ["history", "bob", "--insecure"]).output.contains("bob: lunch?"))
        // Printed is read.
        let after = try await run(parley, as: "alice", ["chats", "--insecure"])
        #expect(!after.output.contains("unread"), "\(after.output)")
        let members = try await run(parley, as: "carol", ["channel", "members", "release crew", "--insecure"])
        #expect(members.output.contains("release crew: 2 members\n  alice\n  bob"), "\(members.output)")
        let left = try await run(parley, as: "bob", ["channel", "leave", "release crew", "--insecure"])
        #expect(left.output.contains("left release crew (1 member now)"), "\(left.output)")
        let badName = try await run(parley, as: "bob", ["channel", "join", "crew/ops", "--insecure"])
        #expect(badName.status != 0 && badName.output.contains("(e.g. crewops)"), "\(badName.output)")
    }

    /// Logged in as bob, `parley join` needs no `--name`: the call is joined as bob, verified; `parley status` with
    /// no name says who you are and your presence.
    @Test func aLoggedInUserJoinsWithoutANameAndAsksForTheirOwnStatus() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (relay, server) = try await serve(parley)
        defer { relay.stop() }
        #expect(try await run(parley, as: "bob", ["login", "bob", "--server", server, "--insecure"]).status == 0)
        let status = try await run(parley, as: "bob", ["status", "--insecure"])
        #expect(
            status.status == 0 && status.output.contains("You are logged in as bob on \(server)")
                && status.output.contains("bob is online"), "\(status.output)")
        // No $USER either: the name can only come from the account.
        let pane = try TmuxPane(
            command: "sh -c 'env -u USER XDG_CONFIG_HOME=\(folder)/bob \(parley) join standup --server \(server) "
                + "--insecure --profile 320x180 --log \(folder)/bob-call.log; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        // The header and the chat pane's first line may come in different frames: wait for both.
        let lines = try await pane.text("the call's header and its first chat line", within: .seconds(15)) { lines in
            lines.contains { $0.contains("1 person · connected") }
                && lines.contains { $0.contains("You joined standup as bob") }
        }
        #expect(lines.contains { $0.contains("1 person · connected") }, "\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("You joined standup as bob") }, "\(lines.joined(separator: "\n"))")
        try pane.send(["q"])
        try pane.send(["y"])
        let end = try await pane.text("\"EXITED\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        #expect(end.contains { $0.contains("EXITED rc=0") }, "\(end.joined(separator: "\n"))")

        // Nobody logged in and no $USER: a clear error, not "Name is empty".
        let folder = folder
        let nameless = try await onOwnThread {
            try ChildProcess.run(
                "/usr/bin/env",
                [
                    "-u", "USER", "XDG_CONFIG_HOME=\(folder)/nobody", parley, "join", "standup", "--server", server,
                    "--insecure",
                ],
                timeout: .seconds(30))
        }
        #expect(
            nameless.status != 0 && nameless.output.contains("no display name: give --name NAME, or log in"),
            "\(nameless.output)")
    }

    /// The messages screen in a real terminal (tmux): what another account sends arrives live, a reply typed there
    /// is stored and read by the other side, a channel is joined from the input line, and the terminal is restored.
    @Test func theMessagesScreenShowsConversationsLiveAndSendsReplies() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Restarted on the same port below: one the kernel never hands out as a source port.
        let (relay, server) = try await serve(parley, port: String(try LoopbackPort.belowEphemeralRange()))
        defer { relay.stop() }
        for user in ["alice", "bob"] {
            #expect(try await run(parley, as: user, ["login", user, "--server", server, "--insecure"]).status == 0)
        }
        // A channel both are in (before bob's message, which stays the newest conversation).
        for user in ["alice", "bob"] {
            #expect(try await run(parley, as: user, ["channel", "join", "crew", "--insecure"]).status == 0)
        }
        #expect(try await run(parley, as: "bob", ["msg", "alice", "are you there?", "--insecure"]).status == 0)
        let pane = try TmuxPane(
            command: "sh -c 'XDG_CONFIG_HOME=\(folder)/alice \(parley) messages --insecure --log \(folder)/alice.log; "
                + "echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        var lines = try await pane.text("\"bob: are you there?\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob: are you there?") }
        }
        #expect(lines.contains { $0.contains("Parley · messages · alice") }, "\(lines.joined(separator: "\n"))")
        #expect(
            lines.contains { $0.contains(">bob") && $0.contains("[1]") }, "unread: \(lines.joined(separator: "\n"))")
        // The channel list gives each channel's member count, as `parley channel members` does.
        lines = try await pane.text("\"#crew (2)\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("#crew (2)") }
        }
        #expect(lines.contains { $0.contains("#crew (2)") }, "\(lines.joined(separator: "\n"))")

        // Open bob's conversation (the first), reply.
        try pane.send(["Enter"])
        lines = try await pane.text("\"bob >\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob >") }
        }
        try pane.sendLiteral("yes, here")
        try pane.send(["Enter"])
        lines = try await pane.text("\"you: yes, here ✓\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("you: yes, here ✓") }
        }
        #expect(lines.contains { $0.contains("you: yes, here ✓") }, "\(lines.joined(separator: "\n"))")
        let bobReads = try await run(parley, as: "bob", ["history", "alice", "--insecure"])
        #expect(bobReads.output.contains("alice: yes, here"), "\(bobReads.output)")
        // Bob printed it: alice sees it read, live.
        lines = try await pane.text("\"you: yes, here ✓✓ read\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("you: yes, here ✓✓ read") }
        }
        #expect(lines.contains { $0.contains("you: yes, here ✓✓ read") }, "\(lines.joined(separator: "\n"))")

        // A live message from bob while the conversation is open.
        #expect(try await run(parley, as: "bob", ["msg", "alice", "great, call at 3", "--insecure"]).status == 0)
        lines = try await pane.text("\"bob: great, call at 3\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob: great, call at 3") }
        }
        #expect(lines.contains { $0.contains("bob: great, call at 3") }, "\(lines.joined(separator: "\n"))")

        // A channel from the input line; bob joins and posts, alice sees both live.
        try pane.sendLiteral("/join ops")
        try pane.send(["Enter"])
        lines = try await pane.text("\"#ops · 1 members\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("#ops · 1 members") }
        }
        #expect(lines.contains { $0.contains("Joined #ops: 1 member") }, "\(lines.joined(separator: "\n"))")
        #expect(try await run(parley, as: "bob", ["channel", "join", "ops", "--insecure"]).status == 0)
        #expect(try await run(parley, as: "bob", ["channel", "say", "ops", "deploy done", "--insecure"]).status == 0)
        lines = try await pane.text("\"bob: deploy done\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob: deploy done") }
        }
        #expect(
            lines.contains { $0.contains("-- bob joined (2 members)") }
                && lines.contains { $0.contains("bob: deploy done") },
            "\(lines.joined(separator: "\n"))")

        // The relay restarts: the screen says so and logs in again by itself; a line typed meanwhile goes then, once.
        relay.stop()
        lines = try await pane.text("\"reconnecting\" or \"Cannot log in\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("reconnecting") || $0.contains("Cannot log in") }
        }
        #expect(
            lines.contains { $0.contains("reconnecting") || $0.contains("Cannot log in") },
            "\(lines.joined(separator: "\n"))")
        try pane.sendLiteral("back soon")
        try pane.send(["Enter"])
        let port = String(server.split(separator: ":").last ?? "0")
        let (again, _) = try await serve(parley, port: port)
        defer { again.stop() }
        lines = try await pane.text("online again, with the line typed meanwhile sent", within: .seconds(40)) {
            $0.first?.hasSuffix("online") == true && $0.contains { $0.contains("you: back soon") }
        }
        #expect(lines.first?.hasSuffix("online") == true, "\(lines.joined(separator: "\n"))")
        let opsHistory = try await run(parley, as: "bob", ["channel", "history", "ops", "--insecure"])
        #expect(opsHistory.output.components(separatedBy: "alice: back soon").count == 2, "once: \(opsHistory.output)")

        // Esc quits `parley messages`; the terminal comes back.
        try pane.send(["Escape"])
        lines = try await pane.text("\"EXITED\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        #expect(lines.contains { $0.contains("EXITED rc=0") }, "\(lines.joined(separator: "\n"))")
        #expect(try pane.modes().contains("alt=0"), "the alternate screen was left")
    }

    @Test func aCallAsAnAccountKeepsTheRoomsChatAndTheChatPaneSwitchesToDirectMessages() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (relay, server) = try await serve(parley)
        defer { relay.stop() }
        for user in ["alice", "bob"] {
            #expect(try await run(parley, as: user, ["login", user, "--server", server, "--insecure"]).status == 0)
        }
        // The room's channel has a line before anyone is in the call.
        #expect(try await run(parley, as: "bob", ["channel", "join", "standup", "--insecure"]).status == 0)
        #expect(
            try await run(parley, as: "bob", ["channel", "say", "standup", "agenda: demo first", "--insecure"]).status
                == 0)

        let pane = try TmuxPane(
            command: "sh -c 'XDG_CONFIG_HOME=\(folder)/alice \(parley) join standup --server \(server) --name alice "
                + "--insecure --video synthetic --audio synthetic --speaker none --log \(folder)/alice.log; "
                + "echo EXITED rc=$?; sleep 60'",
            columns: 110, rows: 32)
        // The chat pane's history and the header's verified name may come in different frames: wait for both.
        var lines = try await pane.text("bob's line before the call, and alice verified", within: .seconds(15)) {
            lines in
            lines.contains { $0.contains("bob: agenda: demo first") } && lines.contains { $0.contains("alice ✓") }
        }
        #expect(lines.contains { $0.contains("earlier in standup above") }, "\(lines.joined(separator: "\n"))")
        #expect(
            lines.contains { $0.contains("alice ✓") }, "her own account, verified: \(lines.joined(separator: "\n"))")

        // Her presence says where she is.
        let status = try await run(parley, as: "bob", ["status", "alice", "--insecure"])
        #expect(status.output.contains("alice is in a call (standup)"), "\(status.output)")

        // A direct message during the call: counted in the chat pane's title; `d` shows the conversation.
        #expect(try await run(parley, as: "bob", ["msg", "alice", "got a minute?", "--insecure"]).status == 0)
        lines = try await pane.text("\"Chat · 1 new DM\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Chat · 1 new DM") }
        }
        #expect(lines.contains { $0.contains("Chat · 1 new DM") }, "\(lines.joined(separator: "\n"))")
        try pane.send(["d"])
        lines = try await pane.text("bob's direct message shown", within: .seconds(15)) {
            $0.contains { $0.contains("DM · bob") } && $0.contains { $0.contains("bob: got a minute?") }
        }
        #expect(lines.contains { $0.contains("bob: got a minute?") }, "\(lines.joined(separator: "\n"))")
        try pane.send(["t"])
        try pane.sendLiteral("sure, after this")
        try pane.send(["Enter"])
        lines = try await pane.text("\"alice: sure, after this\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("alice: sure, after this") }
        }
        let bobReads = try await run(parley, as: "bob", ["history", "alice", "--insecure"])
        #expect(bobReads.output.contains("alice: sure, after this"), "\(bobReads.output)")

        // Back to the room: a line posted in its channel from outside shows, from the verified account. (Enter
        // closed the chat line: `t` opens it again.)
        try pane.send(["t"])
        try pane.sendLiteral("/room")
        try pane.send(["Enter"])
        #expect(
            try await run(parley, as: "bob", ["channel", "say", "standup", "see you at 3", "--insecure"]).status == 0)
        lines = try await pane.text("\"bob ✓: see you at 3\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob ✓: see you at 3") }
        }
        #expect(lines.contains { $0.contains("bob ✓: see you at 3") }, "\(lines.joined(separator: "\n"))")
        try pane.send(["t"])
        try pane.sendLiteral("on my way")
        try pane.send(["Enter"])

        // The messages screen over the call, and back.
        try pane.send(["M"])
        lines = try await pane.text("\"Parley · messages · alice\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Parley · messages · alice") }
        }
        #expect(lines.contains { $0.contains("Parley · messages · alice") }, "\(lines.joined(separator: "\n"))")
        try pane.send(["Escape"])
        lines = try await pane.text("\"bob ✓: see you at 3\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("bob ✓: see you at 3") }
        }
        #expect(!lines.contains { $0.contains("Parley · messages") }, "\(lines.joined(separator: "\n"))")

        try pane.send(["q"])
        try pane.send(["y"])
        lines = try await pane.text("\"EXITED\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED") }
        }
        #expect(lines.contains { $0.contains("EXITED rc=0") }, "\(lines.joined(separator: "\n"))")
        // The room's channel kept the call: what was said in it, who joined and left.
        let history = try await run(parley, as: "bob", ["channel", "history", "standup", "--insecure"])
        #expect(history.output.contains("alice: on my way"), "\(history.output)")
        #expect(
            history.output.contains("alice joined the call") && history.output.contains("alice left the call"),
            "\(history.output)")
        let after = try await run(parley, as: "bob", ["status", "alice", "--insecure"])
        #expect(after.output.contains("alice is offline, last seen"), "\(after.output)")
    }

    @Test(arguments: [
        (["login", "two words"], "use two_words instead"),
        (["msg", "bob", "hi"], "not logged in: run `parley login NAME --server HOST:PORT` first"),
        (["msg", "bob", "   "], "the message is empty"),
        (["msg", "bob", String(repeating: "é", count: 4001)], "the message has 4001 characters; at most 4000"),
        (["account", "shred", "x"], "unknown action \"shred\""),
        (["history", "bob", "--limit", "0"], "--limit must be 1…200, got 0"),
    ])
    func badCommandsSayWhatToType(arguments: [String], expected: String) async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try await run(parley, as: "nobody", arguments)
        #expect(result.status != 0 && result.output.contains(expected), "\(result.output)")
    }

    @Test func anAccountMovesToAnotherComputerByExportAndImport() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (relay, server) = try await serve(parley)
        defer { relay.stop() }
        #expect(try await run(parley, as: "laptop", ["login", "alice", "--server", server, "--insecure"]).status == 0)
        let stranger = try await run(parley, as: "desktop", ["login", "alice", "--server", server, "--insecure"])
        #expect(stranger.status != 0 && stranger.output.contains("belongs to another key"), "\(stranger.output)")
        let exported = try await run(parley, as: "laptop", ["account", "export", "alice"])
        #expect(exported.output.hasPrefix("parley-identity 1"))
        try exported.output.write(toFile: folder + "/alice.export", atomically: true, encoding: .utf8)
        // The rejected attempt left a fresh identity on the desktop: it goes, the exported one comes in.
        try FileManager.default.removeItem(atPath: folder + "/desktop/parley/accounts/alice.identity")
        #expect(try await run(parley, as: "desktop", ["account", "import", folder + "/alice.export"]).status == 0)
        let moved = try await run(parley, as: "desktop", ["login", "alice", "--server", server, "--insecure"])
        #expect(moved.status == 0 && moved.output.contains("logged in as alice"), "\(moved.output)")
    }
}
