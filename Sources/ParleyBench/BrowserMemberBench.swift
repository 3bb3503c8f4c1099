import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyProcesses
import ParleyRelay
import ParleyRoom
import ParleyTestSupport
import ParleyWire

/// `parley-bench browser`: how soon a browser member and a Parley client see each other (issue 53's goals: the
/// browser's first remote frame ≤ 2 s after it joins, the terminal client's first frame of the browser ≤ 1 s after it
/// joined). Each run: a relay in this process, alice (a `CallEngine`, real codecs, 640x360 at 15 fps) already in
/// the room, then a fresh headless Chromium on Resources/lab/browser-member.html joining with its fake camera. Then
/// `BrowserCallBench`'s 4-party call with real `parley serve` and `parley bot` processes from `parley`.
public enum BrowserMemberBench {
    /// Joins measured.
    static let runs = 5

    struct Run {
        /// The page's first decoded frame of alice, after it sent its join.
        var browserFirstFrame: Double
        /// Alice's first decoded frame of the browser, after the browser appeared in her call.
        var terminalFirstFrame: Double
        var offerBytes: Int
        var answerBytes: Int
    }

    public static func run(parley: String, log: @escaping @Sendable (String) -> Void) async throws -> [BenchTable] {
        if let missing = BrowserMember.missing { throw BenchFailure(missing) }
        var results: [Run] = []
        for index in 1...runs {
            let result = try await measure()
            log(
                "browser join \(index)/\(runs): page's first frame \(Int(result.browserFirstFrame)) ms, "
                    + "alice's \(Int(result.terminalFirstFrame)) ms")
            results.append(result)
        }
        return [table(results)] + (try await BrowserCallBench.run(parley: parley, log: log))
    }

    private static func measure() async throws -> Run {
        var quiet = Logger(label: "parley.bench")
        quiet.logLevel = .critical
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quiet))
        let alice = try CallEngine(
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: "bench", name: "alice",
                profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600), audioSource: .synthetic,
                showsSelfView: false, logger: quiet))
        let drain = Task { for await _ in alice.events {} }
        alice.start()
        let server = try await PageServer.start(page: BrowserMember.page)
        var browser: BrowserMember?
        func finish() async {
            browser?.stop()
            drain.cancel()
            await alice.leave()
            await relay.shutdown()
            await server.stop()
        }
        do {
            try await waitUntil("alice joined", timeout: .seconds(10)) { await alice.statistics().localID != 0 }
            browser = try BrowserMember(server: server, relayPort: relay.signalingPort, room: "bench", name: "bea")
            // Alice's side: from the moment the browser is a peer of hers to her first decoded frame of it. Her tile
            // for it is a 2-up grid's (320x180: the middle layer).
            var appeared: ContinuousClock.Instant?
            var beaID: UInt32 = 0
            var terminal: Duration?
            let deadline = ContinuousClock.now + .seconds(30)
            while terminal == nil, ContinuousClock.now < deadline {
                let peers = await alice.statistics().peers
                if appeared == nil, let (id, _) = peers.first(where: { $0.value.name == "bea" }) {
                    appeared = .now
                    beaID = id
                    alice.reportTiles([TileSize(id: id, width: 320, height: 180)])
                }
                if let appeared, (peers[beaID]?.framesDecoded ?? 0) > 0 { terminal = appeared.duration(to: .now) }
                try await Task.sleep(for: .milliseconds(5))
            }
            guard let terminal else { throw BenchFailure("alice decoded no frame of the browser in 30 s") }
            var browserFirst: Double?
            try await waitUntil("the page decoded alice", timeout: .seconds(30), every: .milliseconds(100)) {
                let report = server.report("bea") ?? [:]
                browserFirst = (report["firstFrameMs"] as? [String: Any])?.values
                    .compactMap { ($0 as? NSNumber)?.doubleValue }.min()
                return browserFirst != nil
            }
            let report = server.report("bea") ?? [:]
            let run = Run(
                browserFirstFrame: browserFirst ?? .nan, terminalFirstFrame: terminal / .milliseconds(1),
                offerBytes: (report["offerBytes"] as? NSNumber)?.intValue ?? 0,
                answerBytes: (report["answerBytes"] as? NSNumber)?.intValue ?? 0)
            await finish()
            return run
        } catch {
            await finish()
            throw error
        }
    }

    static func table(_ results: [Run]) -> BenchTable {
        func cell(_ values: [Double]) -> String {
            let sorted = values.sorted()
            guard let worst = sorted.last else { return "-" }
            return "\(Int(sorted[sorted.count / 2].rounded())) ms (worst \(Int(worst.rounded())))"
        }
        var table = BenchTable(
            title: "A browser member (headless Chromium) and a Parley client in one room: first frames (loopback)",
            columns: ["Figure", "Median of \(results.count) joins", "Goal", "Met (every join)"])
        func met(_ values: [Double], _ goal: Double) -> String {
            values.allSatisfy { $0 <= goal } ? "yes" : "no"
        }
        let page = results.map(\.browserFirstFrame)
        let terminal = results.map(\.terminalFirstFrame)
        table.add([
            "The page's first frame of the Parley client, after it sent its join", cell(page), "≤ 2 s",
            met(page, 2_000),
        ])
        table.add(
            [
                "The Parley client's first frame of the browser, after it appeared in the call", cell(terminal),
                "≤ 1 s",
                met(terminal, 1_000),
            ])
        table.notes = [
            "Each join: a relay in the benchmark's process, alice (`CallEngine`, 640x360 at 15 fps, synthetic camera) "
                + "in the room, then a fresh `chromium --headless=new` on Resources/lab/browser-member.html with its "
                + "fake camera (640x360 in three simulcast layers) joining over the relay's WebSocket. The page had "
                + "its camera and offer ready before it sent the join (a page showing its preview before Join). Alice "
                + "draws the browser at 320x180 (its middle layer); the page draws alice at 640x360.",
            "The page's offer was \(results.first?.offerBytes ?? 0) bytes and the relay's answer "
                + "\(results.first?.answerBytes ?? 0) (3 receive pairs; the signaling limit is 16,384).",
        ]
        return table
    }
}
