import Foundation
import Logging
import ParleyEngine
import ParleyRelay
import ParleySecurity
import ParleyTestSupport
import ParleyWire

extension ClusterBench {
    /// One room on two nodes: a sender's camera to a receiver's decoded picture when both joined through the same
    /// node against through different nodes (the media crossing one trunk), and what the trunk adds on the wire.
    /// The nodes run in this process with the bus in memory (media never crosses the bus): the trunk is the real
    /// UDP trunk of `parley serve --cluster-secret-file`, on loopback.
    static func cascade(settings: Settings, log: @Sendable (String) -> Void) async throws -> BenchTable {
        var quiet = Logger(label: "parley.bench")
        quiet.logLevel = .critical
        let cluster = try await InProcessCluster.start(nodes: 2, logger: quiet)
        do {
            try await cluster.connect()
            // Both trunks up before the first call (their hellos are answered within a second).
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let up = try await cluster.relays[0].counters().trunksUp
                if up >= 1 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let table = try await measureCascade(cluster: cluster, settings: settings, log: log)
            await cluster.shutdown()
            return table
        } catch {
            await cluster.shutdown()
            throw error
        }
    }

    private static func measureCascade(
        cluster: InProcessCluster, settings: Settings, log: @Sendable (String) -> Void
    ) async throws -> BenchTable {
        let latency = LatencyBench.Settings(window: .seconds(settings.cascadeSeconds))
        let profile = latency.profile
        let node = cluster.relays.map { ServerAddress(host: "127.0.0.1", port: $0.signalingPort) }
        let first = cluster.relays[0]
        let trunkPacketsSent: @Sendable () async -> Int = { (try? await first.counters().trunkPacketsSent) ?? 0 }
        var within: [LatencyBench.CallResult] = []
        var across: [LatencyBench.CallResult] = []
        // Alternated, so a slow moment of the machine falls on both paths alike.
        for round in 1...settings.cascadeRounds {
            log("cluster: cascade round \(round): both members on one node")
            within.append(
                try await LatencyBench.measureCall(
                    settings: latency, sender: node[0], receiver: node[0], room: "within-\(round)",
                    count: trunkPacketsSent))
            log("cluster: cascade round \(round): the receiver on the other node")
            across.append(
                try await LatencyBench.measureCall(
                    settings: latency, sender: node[0], receiver: node[1], room: "across-\(round)",
                    count: trunkPacketsSent))
        }
        var table = BenchTable(
            title: "One room on two nodes: capture-to-decoded video latency, \(profile.name) at \(profile.fps) fps, "
                + "\(profile.bitrateKbps) kbit/s (\(settings.cascadeRounds) windows of "
                + "\(Int(settings.cascadeSeconds)) s each, alternated)",
            columns: [
                "Path", "frames", "p50 ms", "p90 ms", "p99 ms", "max ms", "frames lost", "Sender's packets a second",
                "Trunk packets a second", "Trunk bytes added",
            ])
        let seconds = settings.cascadeSeconds * Double(settings.cascadeRounds)
        func add(_ name: String, _ results: [LatencyBench.CallResult]) -> Double {
            let latencies = results.flatMap(\.latencies)
            let lost = results.map(\.lost).reduce(0, +)
            let sent = Double(results.map(\.senderPackets).reduce(0, +))
            let sentBytes = Double(results.map(\.senderBytes).reduce(0, +))
            let trunk = Double(results.map(\.counted).reduce(0, +))
            let added = trunk * Double(TrunkPacket.mediaOverhead)
            table.add(
                LatencyBench.row(name, latencies, lost: lost) + [
                    formatted(sent / seconds, decimals: 0), formatted(trunk / seconds, decimals: 0),
                    trunk == 0
                        ? "none"
                        : "\(formatted(added / seconds, decimals: 0)) B/s (\(formatted(added / sentBytes * 100, decimals: 2)) %)",
                ])
            return Sample.percentile(latencies, 0.5) ?? .infinity
        }
        let p50Within = add("Sender and receiver on node 0", within)
        let p50Across = add("Sender on node 0, receiver on node 1 (one trunk)", across)
        let extra = p50Across - p50Within
        table.notes = [
            "Two `CallEngine`s and two relays in one process; the nodes share rooms as `parley serve --database` "
                + "nodes do (placement spread), their trunk the real authenticated UDP trunk on loopback, their bus in "
                + "memory (room events only: media never crosses it). The same two relays serve both rows.",
            "Captured and decoded as in the Latency table below (the synthetic camera's stamp, one clock). Across "
                + "nodes a packet takes one more hop: node 0 forwards one copy to node 1 over the trunk (framed with "
                + "\(TrunkPacket.mediaOverhead) bytes), node 1 fans it out to its member.",
            "Sender's packets: audio and every simulcast layer it sends; the trunk carries only the layers a member on "
                + "the far node needs (here the full layer: the receiver reports no tile), so it can carry fewer. Trunk "
                + "bytes added: the framing, against the bytes the sender sent.",
            "Goal: across two nodes at most 2 ms more than within one at p50: "
                + (extra <= 2 ? "met" : "NOT met") + " (\(formatted(p50Within, decimals: 1)) ms within one node, "
                + "\(formatted(p50Across, decimals: 1)) ms across two, \(extra >= 0 ? "+" : "")"
                + "\(formatted(extra, decimals: 1)) ms).",
        ]
        return table
    }
}
