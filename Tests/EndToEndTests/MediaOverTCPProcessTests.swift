import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// `parley join --media tcp` as a user runs it, in tmux beside a bot: the call works and the header says where its
/// media goes; a wrong `--media` is refused by name.
@Suite(.serialized, .lane(.processes))
struct MediaOverTCPProcessTests {
    let parley: String

    init() throws {
        parley = try #require(parleyBinaryPath())
    }

    @Test func aCallWithMediaOverTCPShowsThePeerAndSaysSo() async throws {
        let relay = try BackgroundProcess(parley, ["serve", "--log-level", "error", "--port", "0", "--insecure"])
        defer { relay.stop() }
        try await relay.output(containing: "media udp", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let bot = try BackgroundProcess(
            parley,
            ["bot", "tcpcall", "--server", "127.0.0.1:\(port)", "--insecure", "--name", "bob", "--duration", "60"])
        defer { bot.stop() }
        let pane = try TmuxPane(
            command: "sh -c '\(parley) join tcpcall --server 127.0.0.1:\(port) --name alice --insecure --media tcp "
                + "--video synthetic --audio synthetic --speaker none --log /dev/null; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        // The header and the chat line are two events: the screen may be drawn between them, so both are awaited.
        try await pane.text("\"media over TCP\" in the header, bob's tile and the chat line", within: .seconds(15)) {
            $0.first?.contains("media over TCP") == true && $0.contains { $0.contains("bob") }
                && $0.contains { $0.contains("media goes over TCP, on the relay's WebSocket") }
        }
        // Bob's picture arrives over the connection: his tile fills with picture cells (not the waiting text).
        try await pane.text("bob's picture in his tile", within: .seconds(15)) { screen in
            !screen.contains { $0.contains("waiting for video") || $0.contains("connecting") }
        }
        try pane.send(["q"])
        try pane.send(["y"])
        try await pane.text("\"EXITED rc=0\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("EXITED rc=0") }
        }
    }

    @Test func aMediaChoiceThatDoesNotExistIsRefusedByName() async throws {
        let result = try await onOwnThread { try ChildProcess.run(parley, ["bot", "x", "--media", "carrier-pigeon"]) }
        #expect(result.status != 0)
        #expect(result.output.contains("--media is auto, tcp or udp, not \"carrier-pigeon\""), "\(result.output)")
    }
}
