import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyProcesses
import ParleySecurity
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension ClusterBench {
    /// What a node's death and a node's drain cost a call, over `trials` each: three `parley serve --database`
    /// nodes with trunks (a, b, c) on one PostgreSQL; alice joins through a (b next in her list), bob through c.
    /// Node a is killed (SIGKILL), or drained (SIGTERM), and started again on its port after each trial. Each
    /// member's engine runs in this process and its decoded frames are sampled every 5 ms: the table gives, per
    /// trial, the longest pause in the frames either member decoded of the other (the frozen video) and when the
    /// frames came back, counted from the signal.
    static func failover(
        executable: String, postgres: PostgresServer, folder: String, trials: Int,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> BenchTable {
        let database = try await postgres.createDatabase(prefix: "parley_failover")
        let url = postgres.url(database: database)
        let secret = try writeSecret(in: folder, name: "failover-secret")
        var ports: [String: Int] = [:]
        for id in ["a", "b", "c"] { ports[id] = try PostgresServer.freePort() }
        func start(_ id: String) throws -> BackgroundProcess {
            try startNode(
                executable: executable, id: id, port: ports[id]!, url: url, secret: secret, folder: folder,
                extra: ["--drain-seconds", "10"])
        }
        var nodes: [String: BackgroundProcess] = [:]
        defer { for node in nodes.values { node.stop(grace: 1) } }
        for id in ["a", "b", "c"] { nodes[id] = try start(id) }

        var kills: [Outage] = []
        var drains: [Outage] = []
        for trial in 0..<(2 * trials) {
            let drain = trial % 2 == 1
            let outage = try await measureOutage(
                room: "trial-\(trial)", ports: ports, signal: drain ? SIGTERM : SIGKILL, node: nodes["a"]!)
            log(
                "cluster: \(drain ? "drain" : "kill") trial \(trial / 2 + 1): frozen "
                    + "\(formatted(outage.frozen * 1000, decimals: 0)) ms, back after "
                    + "\(formatted(outage.back * 1000, decimals: 0)) ms")
            if drain { drains.append(outage) } else { kills.append(outage) }
            if drain, nodes["a"]!.waitForExit(seconds: 15) == nil {
                throw FailoverBenchError("drained node a did not stop within 15 s: \(nodes["a"]!.output.suffix(500))")
            }
            nodes["a"]!.stop(grace: 1)
            nodes["a"] = try start("a")
        }

        var table = BenchTable(
            title: "A node killed and a node drained under a two-member call on three nodes (\(trials) trials each)",
            columns: ["Event", "Frozen video p50 / p95 / max", "Frames back after p50 / p95 / max", "Goal"])
        func spread(_ values: [Double]) -> String {
            let sorted = values.sorted()
            func at(_ q: Double) -> String {
                formatted(
                    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))] * 1000, decimals: 0)
            }
            return "\(at(0.5)) / \(at(0.95)) / \(at(1)) ms"
        }
        let killBack = kills.map(\.back).sorted()
        let killP95 = killBack[min(killBack.count - 1, Int((Double(killBack.count - 1) * 0.95).rounded()))]
        let drainFrozen = drains.map(\.frozen).sorted()
        let drainP95 = drainFrozen[min(drainFrozen.count - 1, Int((Double(drainFrozen.count - 1) * 0.95).rounded()))]
        table.add([
            "kill -9 alice's node", spread(kills.map(\.frozen)), spread(kills.map(\.back)),
            "back within 5 s at p95: " + (killP95 <= 5 ? "met" : "NOT met"),
        ])
        table.add([
            "SIGTERM (drain) alice's node", spread(drains.map(\.frozen)), spread(drains.map(\.back)),
            "under 1 s frozen: " + (drainP95 < 1 ? "met" : "NOT met") + " (p95)",
        ])
        table.notes = [
            "Frozen video: the longest time between two frames decoded, by either member of the other, around the "
                + "event (sampled every 5 ms from the engines' statistics; 160x120 at 30 fps, so 33 ms is no pause). "
                + "Frames back after: from the signal to the end of that pause.",
            "kill -9: alice's client sees its connection to a drop and joins through b, the next of its list, "
                + "presenting its credential; b and c drop her earlier self. Drain: a tells alice to move to the "
                + "least-loaded other node and she joins there before leaving a.",
            "The nodes, PostgreSQL and both engines share this machine's 2 cores.",
        ]
        return table
    }

    /// What one trial saw: the longest pause in decoded frames (seconds) and when it ended, from the signal.
    struct Outage {
        var frozen: Double
        var back: Double
    }

    struct FailoverBenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Set once, read by the samplers.
    final class StopFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// Times of frames `engine` decoded of peers named `peer` (any id: a member that moved comes back under a new
    /// one), sampled every 5 ms until `stop` is set.
    private static func frameTimes(
        _ engine: CallEngine, of peer: String, start: ContinuousClock.Instant, stop: StopFlag
    ) async -> [Double] {
        var last: [UInt32: Int] = [:]
        var times: [Double] = []
        while !stop.isSet {
            let peers = await engine.statistics().peers
            let now = (ContinuousClock.now - start).seconds
            for (id, entry) in peers where entry.name == peer {
                if entry.framesDecoded > last[id, default: 0] { times.append(now) }
                last[id] = entry.framesDecoded
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return times
    }

    private static func measureOutage(
        room: String, ports: [String: Int], signal: Int32, node: BackgroundProcess
    ) async throws -> Outage {
        var quiet = Logger(label: "parley.bench")
        quiet.logLevel = .critical
        func configuration(_ name: String, _ servers: [String]) -> CallConfiguration {
            var configuration = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: ports[servers[0]]!), room: room, name: name,
                role: .broadcaster, profile: VideoProfile(width: 160, height: 120, fps: 30, bitrateKbps: 150),
                audioSource: .synthetic, showsSelfView: false, logger: quiet)
            configuration.fallbackServers = servers.dropFirst().map {
                ServerAddress(host: "127.0.0.1", port: ports[$0]!)
            }
            return configuration
        }
        let alice = try CallEngine(configuration("alice", ["a", "b"]))
        let bob = try CallEngine(configuration("bob", ["c"]))
        let drains = [alice, bob].map { engine in Task { for await _ in engine.events {} } }
        alice.start()
        bob.start()
        defer { for task in drains { task.cancel() } }
        let start = ContinuousClock.now
        let stop = StopFlag()
        let atAlice = Task { await frameTimes(alice, of: "bob", start: start, stop: stop) }
        let atBob = Task { await frameTimes(bob, of: "alice", start: start, stop: stop) }
        /// Whether each decoded `seconds` of the other's frames (within 20 s).
        func flowing(for seconds: Double) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let aliceFrames = await alice.statistics().peers.values.filter { $0.name == "bob" }.map(\.framesDecoded)
                let bobFrames = await bob.statistics().peers.values.filter { $0.name == "alice" }.map(\.framesDecoded)
                if (aliceFrames.max() ?? 0) >= Int(seconds * 30), (bobFrames.max() ?? 0) >= Int(seconds * 30) {
                    return true
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
        guard await flowing(for: 1) else {
            stop.set()
            func seen(_ engine: CallEngine) async -> String {
                let statistics = await engine.statistics()
                let peers = statistics.peers.values.map { "\($0.name) \($0.framesDecoded) frames" }
                return
                    "id \(statistics.localID), media bound \(statistics.mediaBound), video sent \(statistics.videoFramesSent), peers: "
                    + (peers.isEmpty ? "none" : peers.joined(separator: ", "))
            }
            let what = "alice (\(await seen(alice))), bob (\(await seen(bob)))"
            await alice.leave()
            await bob.leave()
            throw FailoverBenchError("\(room): alice and bob never decoded each other within 20 s: \(what)")
        }
        let signalled = (ContinuousClock.now - start).seconds
        node.signal(signal)
        try await Task.sleep(for: .seconds(6))
        stop.set()
        let times = [await atAlice.value, await atBob.value]
        await alice.leave()
        await bob.leave()
        var outage = Outage(frozen: 0, back: 0)
        for list in times {
            let around = list.filter { $0 >= signalled - 0.5 }
            guard around.count > 1, let lastFrame = around.last, lastFrame > signalled + 3 else {
                throw FailoverBenchError("\(room): frames did not come back within 3 s of the signal")
            }
            for (before, after) in zip(around, around.dropFirst()) where after - before > outage.frozen {
                outage = Outage(frozen: after - before, back: after - signalled)
            }
        }
        return outage
    }
}

extension Duration {
    /// In seconds, as a Double.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
