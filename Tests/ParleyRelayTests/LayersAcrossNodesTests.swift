import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyStore
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Three relays in this process sharing a room as a cluster's nodes do; real engines and codecs join through
/// different nodes.
@Suite(.serialized)
struct LayersAcrossNodesTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func configuration(_ name: String, port: Int, role: Role) -> CallConfiguration {
        CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "spread", name: name, role: role,
            profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600),
            audioSource: role == .broadcaster ? .synthetic : .silence, showsSelfView: false, logger: quietLogger())
    }

    /// Alice sends three layers through node 0; bob watches through node 1 in a small tile, carol through node 2
    /// fullscreen. Each node's trunk from node 0 carries only the layer its viewer needs (the other is withheld, and
    /// counted), the middle layer nobody needs anywhere is paused at alice, and when bob goes fullscreen too the
    /// small layer is paused: pausing and resuming reach the sender from other nodes.
    @Test func aViewerOnEachNodeGetsTheLayerItsTileNeeds() async throws {
        let cluster = try await InProcessCluster.start(nodes: 3, logger: quietLogger())
        try await cluster.connect()
        let alice = try CallEngine(configuration("alice", port: cluster.relays[0].signalingPort, role: .broadcaster))
        let bob = try CallEngine(configuration("bob", port: cluster.relays[1].signalingPort, role: .audience))
        let carol = try CallEngine(configuration("carol", port: cluster.relays[2].signalingPort, role: .audience))
        let logs = [EventLog(), EventLog(), EventLog()]
        var tasks: [Task<Void, Never>] = []
        for (engine, log) in zip([alice, bob, carol], logs) {
            tasks.append(log.consume(engine))
            engine.start()
            try await Task.sleep(for: .milliseconds(200))
        }
        /// What `engine` receives of alice (its own node gave her an id of its own).
        func received(_ engine: CallEngine) async -> CallStatistics.Peer? {
            await engine.statistics().peers.values.first { $0.name == "alice" }
        }
        func aliceID(at engine: CallEngine) async -> UInt32? {
            await engine.statistics().peers.first { $0.value.name == "alice" }?.key
        }

        let fullForBoth = await eventually(within: .seconds(15)) {
            let atBob = await received(bob)?.lastFrameSize
            let atCarol = await received(carol)?.lastFrameSize
            return atBob == VideoSize(width: 640, height: 360) && atCarol == VideoSize(width: 640, height: 360)
        }
        #expect(fullForBoth, "bob and carol decode alice's full layer through nodes 1 and 2 before any tile report")

        let atBob = try #require(await aliceID(at: bob))
        let atCarol = try #require(await aliceID(at: carol))
        bob.reportTiles([TileSize(id: atBob, width: 150, height: 84)])
        carol.reportTiles([TileSize(id: atCarol, width: 640, height: 360)])
        let split = await eventually(within: .seconds(10)) {
            let bobSees = await received(bob)?.lastFrameSize
            let carolSees = await received(carol)?.lastFrameSize
            let active = await alice.statistics().activeVideoLayers
            return bobSees == VideoSize(width: 160, height: 90) && carolSees == VideoSize(width: 640, height: 360)
                && active == [true, false, true]
        }
        let active = await alice.statistics().activeVideoLayers
        let bobSize = await received(bob)?.lastFrameSize
        let carolSize = await received(carol)?.lastFrameSize
        #expect(
            split,
            """
            bob (node 1) decodes 160x90, carol (node 2) 640x360, alice encodes those two layers only; \
            bob \(String(describing: bobSize)), carol \(String(describing: carolSize)), alice's layers \(active)
            """)

        // Each video packet of alice's now crosses to one node of the two: node 0 withholds as many as alice sends.
        let before = try await cluster.relays[0].counters()
        let sentBefore = await alice.statistics().videoPacketsSent
        try await Task.sleep(for: .seconds(2))
        let after = try await cluster.relays[0].counters()
        let sent = await alice.statistics().videoPacketsSent - sentBefore
        let withheld = after.trunkPacketsWithheld - before.trunkPacketsWithheld
        #expect(sent > 20, "alice sent \(sent) video packets in 2 s")
        #expect(
            Double(withheld) >= Double(sent) * 0.8 && Double(withheld) <= Double(sent) * 1.2 + 5,
            "node 0 withheld \(withheld) of alice's \(sent) video packets (each goes to one node of two)")
        let bobPeer = try #require(await received(bob))
        let carolPeer = try #require(await received(carol))
        #expect(bobPeer.decodeErrors == 0 && carolPeer.decodeErrors == 0, "\(bobPeer) \(carolPeer)")
        // The layer needs crossed as authenticated control messages, none refused.
        #expect(after.trunkControlReceived > 0 && after.trunkControlRefused == 0, "\(after)")

        // Bob goes fullscreen too: nobody anywhere needs the small layer, and alice pauses it.
        bob.reportTiles([TileSize(id: atBob, width: 640, height: 360)])
        let allFull = await eventually(within: .seconds(10)) {
            let bobSees = await received(bob)?.lastFrameSize
            let active = await alice.statistics().activeVideoLayers
            return bobSees == VideoSize(width: 640, height: 360) && active == [true, false, false]
        }
        let finalLayers = await alice.statistics().activeVideoLayers
        #expect(allFull, "bob decodes 640x360 and alice paused her small layer: \(finalLayers)")

        for engine in [alice, bob, carol] { await engine.leave() }
        tasks.forEach { $0.cancel() }
        await cluster.shutdown()
    }
}
