import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// A trunk carries at most the sum of its members' rates: each member of another node is held to the rate a member
/// is held to on the receiving node, whatever the sending node let through.
@Suite(.serialized, .lane(.timing))
struct TrunkRateTests {
    /// Alice sends 600 kbit/s of video through node 0, which limits nobody; node 1 holds every member to 150 kbit/s.
    /// Bob, on node 1, gets no more of alice than that: node 1 drops the rest of what comes over the trunk and counts
    /// it, and alice's audio still gets through.
    @Test func aNodeHoldsAnotherNodesMemberToItsOwnRate() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let limitKbps = 150
        let cluster = try await InProcessCluster.start(nodes: 2, logger: logger) { index in
            var limits = MediaLimits()
            limits.memberKbps = index == 0 ? 0 : limitKbps
            return limits
        }
        try await cluster.connect()
        func configuration(_ name: String, node: Int, role: Role) -> CallConfiguration {
            var configuration = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: cluster.relays[node].signalingPort), room: "rate",
                name: name, role: role, profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600),
                audioSource: role == .broadcaster ? .synthetic : .silence, showsSelfView: false, logger: logger)
            configuration.simulcast = false
            return configuration
        }
        let alice = try CallEngine(configuration("alice", node: 0, role: .broadcaster))
        let bob = try CallEngine(configuration("bob", node: 1, role: .audience))
        let logs = [EventLog(), EventLog()]
        var tasks: [Task<Void, Never>] = []
        for (engine, log) in zip([alice, bob], logs) {
            tasks.append(log.consume(engine))
            engine.start()
        }
        func fromAlice() async -> CallStatistics.Peer? {
            await bob.statistics().peers.values.first { $0.name == "alice" }
        }
        let flowing = try await eventually(within: .seconds(10)) {
            let over = try await cluster.relays[1].counters().trunkPacketsOverRate
            let audio = await fromAlice()?.audioPacketsReceived ?? 0
            return over > 0 && audio > 0
        }
        #expect(flowing, "alice's media crosses the trunk and node 1 drops what is over her rate there")

        // Over a measured window, from a bucket left empty by the excess.
        let window = 4.0
        let before = (try await cluster.relays[1].counters(), try await cluster.relays[0].counters(), await fromAlice())
        try await Task.sleep(for: .seconds(window))
        let after = (try await cluster.relays[1].counters(), try await cluster.relays[0].counters(), await fromAlice())
        let dropped = after.0.trunkPacketsOverRate - before.0.trunkPacketsOverRate
        let crossed = after.1.trunkPacketsSent - before.1.trunkPacketsSent
        let videoBytes = (after.2?.videoBytesReceived ?? 0) - (before.2?.videoBytesReceived ?? 0)
        let audio = (after.2?.audioPacketsReceived ?? 0) - (before.2?.audioPacketsReceived ?? 0)
        // Sent at 600 kbit/s, alice's video crosses in full (node 0 limits nobody) ...
        #expect(crossed > Int(window) * 60, "node 0 sent \(crossed) datagrams over the trunk in \(window) s")
        #expect(dropped > crossed / 3, "node 1 dropped \(dropped) of \(crossed) for going over alice's rate there")
        // ... and bob gets at most her rate on node 1, with its second of burst (audio shares the allowance).
        let allowed = Double(limitKbps) * 1000 / 8 * (window + 1)
        #expect(Double(videoBytes) <= allowed, "bob got \(videoBytes) bytes of alice's video; at most \(allowed)")
        #expect(audio > 0, "alice's audio still reaches bob")

        await alice.leave()
        await bob.leave()
        tasks.forEach { $0.cancel() }
        await cluster.shutdown()
    }
}
