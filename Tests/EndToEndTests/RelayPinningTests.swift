import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// `parley serve` and `parley bot` as a user runs them: the relay's certificate kept in its state directory, the
/// client pinning it in its known_relays, a replaced certificate refused until forgotten.
@Suite(.serialized, .lane(.processes))
struct RelayPinningTests {
    let parley: String
    let files = NSTemporaryDirectory() + "parley-pinning-\(getpid())-\(UUID().uuidString.prefix(8))"

    init() throws {
        parley = try #require(parleyBinaryPath())
    }

    /// Starts `parley serve` and returns it with its port and the fingerprint it printed.
    func serve(_ extra: [String]) async throws -> (BackgroundProcess, String, String?) {
        let relay = try BackgroundProcess(parley, ["serve", "--log-level", "error"] + extra)
        try await relay.output(containing: "media udp", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).map { String($0.1) })
        try await relay.output("its TLS fingerprint or INSECURE line", within: .seconds(2)) {
            $0.contains("TLS fingerprint") || $0.contains("INSECURE")
        }
        let fingerprint = relay.output.firstMatch(of: /TLS fingerprint (SHA256:[A-Za-z0-9+\/]{43})/).map {
            String($0.1)
        }
        return (relay, port, fingerprint)
    }

    /// Runs a bot for a moment; its exit status and everything it printed.
    func bot(port: String, _ extra: [String] = [], host: String = "127.0.0.1") async throws -> (Int32?, String) {
        let bot = try BackgroundProcess(
            parley,
            [
                "bot", "pins", "--server", "\(host):\(port)", "--name", "bot",
                "--duration", "1", "--no-decode",
            ] + extra)
        let status = await bot.exitStatus(within: .seconds(15))
        return (status, bot.output)
    }

    func knownRelays() -> String {
        (try? String(contentsOfFile: files + "/known_relays", encoding: .utf8)) ?? ""
    }

    @Test func pinnedOnFirstUseKeptAcrossRestartsAndAReplacedCertificateIsRefused() async throws {
        defer { try? FileManager.default.removeItem(atPath: files) }
        let trust = ["--known-relays", files + "/known_relays"]

        // First start: a new certificate in the state directory, its fingerprint printed.
        // Restarted on the same port below: one the kernel never hands out as a source port.
        var (relay, port, fingerprint) = try await serve([
            "--port", String(try LoopbackPort.belowEphemeralRange()), "--state-dir", files + "/relay",
        ])
        #expect(relay.output.contains("new self-signed certificate saved in \(files)/relay"), "\(relay.output)")
        let first = try #require(fingerprint, "\(relay.output)")
        var (status, output) = try await bot(port: port, trust)
        #expect(status == 0, "\(output)")
        #expect(knownRelays().contains("127.0.0.1:\(port) \(first)"), "\(knownRelays())")

        // Restarted on the same port: the same certificate, so the pinned client goes straight in.
        relay.stop()
        (relay, port, fingerprint) = try await serve(["--port", port, "--state-dir", files + "/relay"])
        #expect(fingerprint == first && relay.output.contains("self-signed certificate from"), "\(relay.output)")
        (status, output) = try await bot(port: port, trust)
        #expect(status == 0, "\(output)")

        // The same certificate and key given as files (--tls-cert/--tls-key): the same fingerprint, still trusted.
        relay.stop()
        (relay, port, fingerprint) = try await serve([
            "--port", port, "--tls-cert", files + "/relay/relay-cert.pem", "--tls-key", files + "/relay/relay-key.pem",
        ])
        #expect(
            fingerprint == first && relay.output.contains("certificate \(files)/relay/relay-cert.pem"),
            "\(relay.output)")
        (status, output) = try await bot(port: port, trust)
        #expect(status == 0, "\(output)")

        // The certificate replaced (state lost, or someone in the middle): refused, with what to do.
        relay.stop()
        try FileManager.default.removeItem(atPath: files + "/relay")
        (relay, port, fingerprint) = try await serve(["--port", port, "--state-dir", files + "/relay"])
        let second = try #require(fingerprint)
        #expect(second != first)
        (status, output) = try await bot(port: port, trust)
        #expect(status != 0 && status != nil, "\(output)")
        #expect(output.contains("shows a different TLS certificate"), "\(output)")
        #expect(
            output.contains("pinned \(first), now \(second)")
                && output.contains("parley relays forget 127.0.0.1:\(port)"),
            "\(output)")
        #expect(knownRelays().contains("127.0.0.1:\(port) \(first)"), "the pin stays until the user forgets it")

        // Forgotten on purpose: the next connection pins the new certificate.
        let (parley, forgotten) = (parley, "127.0.0.1:\(port)")
        let forget = try await onOwnThread { try ChildProcess.run(parley, ["relays", "forget", forgotten] + trust) }
        #expect(forget.output.contains("forgot 127.0.0.1:\(port)"), "\(forget.output)")
        (status, output) = try await bot(port: port, trust)
        #expect(status == 0, "\(output)")
        #expect(knownRelays().contains("127.0.0.1:\(port) \(second)"), "\(knownRelays())")
        let list = try await onOwnThread { try ChildProcess.run(parley, ["relays", "list"] + trust) }
        #expect(list.output.contains("127.0.0.1:\(port) \(second)"), "\(list.output)")
        relay.stop()
    }

    /// A relay on every interface is joined at whatever address reaches it (a LAN address): its self-signed
    /// certificate names only localhost and its loopback addresses, and the pin is what vouches for it.
    @Test func aSelfSignedRelayIsJoinedAtAnAddressItsCertificateDoesNotName() async throws {
        defer { try? FileManager.default.removeItem(atPath: files) }
        let trust = ["--known-relays", files + "/known_relays"]
        let relay = try BackgroundProcess(
            parley,
            ["serve", "--log-level", "error", "--host", "0.0.0.0", "--port", "0", "--state-dir", files + "/relay"])
        defer { relay.stop() }
        try await relay.output(containing: "media udp", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 0\.0\.0\.0:(\d+)/).map { String($0.1) })
        // 127.0.0.2 is loopback too, and not in the certificate.
        let (status, output) = try await bot(port: port, trust, host: "127.0.0.2")
        #expect(status == 0, "\(output)")
        #expect(knownRelays().contains("127.0.0.2:\(port) SHA256:"), "\(knownRelays())")
    }

    @Test func plainSignalingOnlyWhenBothSidesAskForIt() async throws {
        defer { try? FileManager.default.removeItem(atPath: files) }
        let (relay, port, fingerprint) = try await serve(["--port", "0", "--insecure"])
        #expect(fingerprint == nil && relay.output.contains("signaling ws, INSECURE: no TLS"), "\(relay.output)")
        var (status, output) = try await bot(port: port, ["--known-relays", files + "/known_relays"])
        #expect(
            status != 0
                && output.contains("the relay at 127.0.0.1:\(port) was started with --insecure (plain ws://, no TLS)"),
            "\(output)")
        #expect(output.contains("--insecure"), "\(output)")
        (status, output) = try await bot(port: port, ["--insecure"])
        #expect(status == 0, "\(output)")
        // And the call screen says so for as long as it lasts.
        let pane = try TmuxPane(
            command: "sh -c '\(parley) join pins --server 127.0.0.1:\(port) --name alice --insecure --video synthetic "
                + "--audio synthetic --speaker none --log /dev/null; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        // The header may show "connected" a moment before the engine's word on the link's security reaches it (a
        // fresh-clone run read that frame): wait for the line that says both.
        let lines = try await pane.text("\"connected\" with \"INSECURE\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("connected") && $0.contains("INSECURE") }
        }
        #expect(
            lines.first { $0.contains("connected") }?.contains("INSECURE") == true, "\(lines.joined(separator: "\n"))")
        try pane.send(["q"])
        try pane.send(["y"])
        try await pane.text("\"EXITED rc=0\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED rc=0") }
        }
        relay.stop()
    }

    @Test func aPortInUseIsSaidInPlainWords() async throws {
        let (relay, port, _) = try await serve(["--port", "0", "--insecure"])
        let second = try await onOwnThread { try ChildProcess.run(parley, ["serve", "--port", port, "--insecure"]) }
        #expect(second.status != 0)
        #expect(second.output.contains("port \(port) is already in use on 127.0.0.1"), "\(second.output)")
        #expect(!second.output.contains("errno") && !second.output.contains("bind(descriptor"), "\(second.output)")
        relay.stop()
    }

    @Test func aRoomsFileGivesARoomItsPassword() async throws {
        defer { try? FileManager.default.removeItem(atPath: files) }
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        try "# rooms of this relay\npins password=open-sesame stage=host\n".write(
            toFile: files + "/rooms", atomically: true, encoding: .utf8)
        let (relay, port, _) = try await serve(["--port", "0", "--insecure", "--rooms", files + "/rooms"])
        #expect(relay.output.contains("rooms file \(files)/rooms: 1 rooms"), "\(relay.output)")
        var (status, output) = try await bot(port: port, ["--insecure"])
        #expect(status != 0 && output.contains("password"), "joining without the password fails: \(output)")
        (status, output) = try await bot(port: port, ["--insecure", "--password", "guess-again"])
        #expect(status != 0, "a wrong password fails: \(output)")
        (status, output) = try await bot(port: port, ["--insecure", "--password", "open-sesame"])
        #expect(status == 0, "\(output)")
        relay.stop()
    }

    /// `HOME` decides where the relay keeps its state (certificate, logs) and a client its settings, as it does for
    /// known_relays: a relay started with another `HOME` never opens the account's real folders.
    @Test func anotherHomeIsHonoured() async throws {
        defer { try? FileManager.default.removeItem(atPath: files) }
        let home = files + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let relay = try BackgroundProcess(
            "/usr/bin/env",
            ["-u", "XDG_STATE_HOME", "-u", "XDG_CONFIG_HOME", "HOME=\(home)", parley, "serve", "--port", "0"])
        defer { relay.stop() }
        try await relay.output(containing: "TLS fingerprint", within: .seconds(10))
        #expect(
            relay.output.contains("new self-signed certificate saved in \(home)/.local/state/parley"), "\(relay.output)"
        )
        #expect(FileManager.default.fileExists(atPath: home + "/.local/state/parley/relay-cert.pem"))
        // A client's key map comes from that home's config folder: a broken one there is refused by name.
        try FileManager.default.createDirectory(atPath: home + "/.config/parley", withIntermediateDirectories: true)
        try "mic = \n".write(toFile: home + "/.config/parley/keys", atomically: true, encoding: .utf8)
        let client = try await onOwnThread {
            try ChildProcess.run(
                "/usr/bin/env",
                [
                    "-u", "XDG_CONFIG_HOME", "HOME=\(home)", parley, "join", "r", "--name", "a", "--server",
                    "127.0.0.1:9",
                ],
                timeout: .seconds(20))
        }
        #expect(client.status != 0 && client.output.contains("\(home)/.config/parley/keys"), "\(client.output)")
    }

    @Test(arguments: [
        (["serve", "--tls-cert", "/tmp/c.pem"], "--tls-cert and --tls-key go together"),
        (["serve", "--insecure", "--tls-cert", "c", "--tls-key", "k"], "--insecure serves without TLS"),
        (
            ["serve", "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--port", "0"],
            "/nonexistent/c.pem: cannot be read"
        ),
        (
            ["serve", "--rooms", "/nonexistent/rooms", "--port", "0", "--insecure"],
            "rooms file /nonexistent/rooms cannot be read"
        ),
        (["bot", "r", "--secret", "short"], "the room secret has 5 characters; it needs at least 8"),
        // Without --duration a bot waits for a signal; a relay it cannot reach ends it at once, with the reason.
        (
            ["bot", "r", "--server", "127.0.0.1:9", "--insecure"],
            "cannot reach the relay at 127.0.0.1:9: connection refused"
        ),
        (["bot", "r", "--server", "127.0.0.1:9"], "cannot reach the relay at 127.0.0.1:9: connection refused"),
        (["bot", "r", "--insecure", "--known-relays", "k"], "--insecure does not use TLS"),
        (["relays", "forget"], "say which: `parley relays forget HOST:PORT`"),
        (["serve", "--max-members", "1"], "--max-members must be 2…10000, got 1"),
        (["serve", "--host", "10.9.9.9", "--insecure"], "10.9.9.9 is not an address of this machine"),
        (["serve", "--join-timeout", "0"], "--join-timeout must be 1…600 seconds, got 0.0"),
        (["serve", "--max-member-kbps=-5"], "--max-member-kbps must be 0…1000000, got -5"),
        (["serve", "--max-message-bytes", "1023"], "--max-message-bytes must be 1024…16384, got 1023"),
        (["serve", "--max-message-bytes", "16385"], "--max-message-bytes must be 1024…16384, got 16385"),
        (["serve", "--max-chat-characters", "2001"], "--max-chat-characters must be 1…2000, got 2001"),
        (["serve", "--max-chat-characters", "0"], "--max-chat-characters must be 1…2000, got 0"),
        (["relays", "shred"], "unknown action \"shred\""),
        (["bot", "r", "--vp8-profile", "4"], "--vp8-profile must be 0, 1, 2 or 3 (VP8's bitstream versions"),
        (["join", "r", "--vp8-profile=-1"], "--vp8-profile must be 0, 1, 2 or 3 (VP8's bitstream versions"),
        (["bot", "r", "--vp8-profile", "sharp"], "The value 'sharp' is invalid for '--vp8-profile <n>'"),
    ])
    func badOptionsAreClearErrors(arguments: [String], expected: String) async throws {
        let result = try await onOwnThread { try ChildProcess.run(parley, arguments, timeout: .seconds(30)) }
        #expect(!result.timedOut, "still running after 30 s: \(result.output)")
        #expect(result.status != 0)
        #expect(result.output.contains(expected), "\(result.output)")
    }
}

@Suite struct ChildProcessTimeoutTests {
    @Test func aProgramThatHangsIsKilledAtItsTimeoutAndSaysSo() async throws {
        let hung = try await onOwnThread { try ChildProcess.run("/bin/sleep", ["30"], timeout: .milliseconds(300)) }
        #expect(hung.timedOut && hung.status == 128 + SIGKILL)
        let quick = try await onOwnThread {
            try ChildProcess.run("/bin/sh", ["-c", "echo done"], timeout: .seconds(30))
        }
        #expect(!quick.timedOut && quick.status == 0 && quick.output == "done\n")
    }
}
