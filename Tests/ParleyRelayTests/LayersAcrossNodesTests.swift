import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Three relays in this process sharing a room as a cluster's nodes do; real engines and codecs join through
/// different nodes (the scenario is `LayersAcrossNodes`, run on `parley serve --database` nodes too by
/// `ClusterProcessTests`).
@Suite(.serialized, .lane(.processes))
struct LayersAcrossNodesTests {
    /// Alice sends three layers through node 0; bob watches through node 1 in a small tile, carol through node 2
    /// fullscreen. Each node's trunk from node 0 carries only the layer its viewer needs (the other is withheld, and
    /// counted), the middle layer nobody needs anywhere is paused at alice, and when bob goes fullscreen too the
    /// small layer is paused: pausing and resuming reach the sender from other nodes.
    @Test func aViewerOnEachNodeGetsTheLayerItsTileNeeds() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let cluster = try await InProcessCluster.start(nodes: 3, logger: logger)
        try await cluster.connect()
        let first = cluster.relays[0]
        let seen = try await LayersAcrossNodes.run(
            ports: cluster.relays.map(\.signalingPort), room: "spread",
            trunkVideo: {
                let counters = try await first.counters()
                return (counters.trunkVideoPacketsSent, counters.trunkPacketsWithheld)
            })
        #expect(LayersAcrossNodes.problems(in: seen).isEmpty, "\(LayersAcrossNodes.problems(in: seen)): \(seen)")
        // The layer needs crossed as authenticated control messages, none refused.
        let counters = try await first.counters()
        #expect(counters.trunkControlReceived > 0 && counters.trunkControlRefused == 0, "\(counters)")
        await cluster.shutdown()
    }
}
