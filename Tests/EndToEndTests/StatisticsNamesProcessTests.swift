import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Display names JSON must escape, through real processes: two `parley bot`s in a call through `parley serve`, one
/// keeping a `--stats-file`, the other printing its `--stats` line when it leaves; both read back the other's exact
/// name through the Codable types the bot writes with.
@Suite(.serialized, .lane(.blocking))
struct StatisticsNamesProcessTests {
    /// Polls `condition` every 100 ms until it holds or `seconds` pass (without blocking a thread).
    static func eventually(seconds: Int, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }

    @Test("names with a quote and a backslash read back exactly from --stats-file and --stats")
    func namesWithQuoteAndBackslash() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = NSTemporaryDirectory() + "parley-names-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try BackgroundProcess(
            parley, ["serve", "--port", "0", "--insecure", "--state-dir", folder + "/relay"])
        defer { relay.signal(SIGTERM) }  // and its deinit kills and reaps it
        #expect(try await Self.eventually(seconds: 10) { relay.output.contains("listening on") }, "\(relay.output)")
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })

        let alice = #"al"i\ce"#
        let bob = #"b\o"b"#
        func bot(_ name: String, _ extra: [String]) throws -> BackgroundProcess {
            try BackgroundProcess(
                parley,
                [
                    "bot", "names", "--server", "127.0.0.1:\(port)", "--insecure",
                    "--name", name, "--no-decode", "--log-level", "warning",
                ] + extra)
        }
        let statistics = CallStatisticsFile(path: folder + "/bob.json")
        let bobProcess = try bot(bob, ["--stats-file", statistics.path])
        defer { bobProcess.signal(SIGTERM) }
        let aliceProcess = try bot(alice, ["--stats", "--duration", "6"])
        defer { aliceProcess.signal(SIGTERM) }

        var names: [String] = []
        let bobSawAlice = try await Self.eventually(seconds: 20) {
            names = (try? statistics.read())?.peers.map(\.name) ?? []
            return names == [alice]
        }
        #expect(bobSawAlice, "bob's statistics name \(names); bob:\n\(bobProcess.output)\nrelay:\n\(relay.output)")
        let fileText = try String(contentsOfFile: statistics.path, encoding: .utf8)
        #expect(fileText.contains(#""name":"al\"i\\ce""#), "\(fileText)")

        // Alice leaves after her duration and prints her statistics as one line of JSON.
        var line: Substring?
        let printed = try await Self.eventually(seconds: 30) {
            line = aliceProcess.output.split(separator: "\n").first { $0.hasPrefix("{") }
            return line != nil
        }
        #expect(printed, "alice printed no statistics:\n\(aliceProcess.output)")
        let summary = try JSONDecoder().decode(CallStatisticsSummary.self, from: Data((line ?? "").utf8))
        #expect(summary.peers.map(\.name) == [bob], "\(line ?? "")")
        #expect(line?.contains(#""name":"b\\o\"b""#) == true, "\(line ?? "")")
    }
}
