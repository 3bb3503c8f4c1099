import Logging
import ParleyEngine
import ParleyMedia
import ParleyRoom
import ParleyWire

/// The per-tile layers of a room spread over three nodes, with real engines and codecs (issue 30): alice sends
/// three layers through node 0; bob watches through node 1 in a small tile, carol through node 2 fullscreen. Run
/// against relays in one process or `parley serve --database` nodes alike; the caller checks what it saw.
public enum LayersAcrossNodes {
    /// What the scenario saw.
    public struct Seen: Sendable, CustomStringConvertible {
        /// Bob and carol decoded alice's full layer before either reported a tile.
        public var fullForBoth = false
        /// After the tile reports: bob decoded 160x90, carol 640x360, and alice sent only those two layers.
        public var split = false
        public var bobSize: VideoSize?
        public var carolSize: VideoSize?
        public var layersWhenSplit: [Bool] = []
        /// Alice's video packets over 2 s of the split; of them, how many node 0 sent over its trunks and how many it
        /// withheld meanwhile (both counted by node 0, so a node that runs behind her on a loaded machine counts
        /// both alike).
        public var sent = 0
        public var forwarded = 0
        public var withheld = 0
        /// Pictures bob and carol could not decode.
        public var decodeErrors = 0
        /// After bob went fullscreen too: he decoded 640x360 and alice paused her small layer.
        public var allFull = false
        public var finalLayers: [Bool] = []

        public var description: String {
            "full for both \(fullForBoth); split \(split): bob \(String(describing: bobSize)), carol "
                + "\(String(describing: carolSize)), alice's layers \(layersWhenSplit); \(sent) video packets sent, node 0 "
                + "forwarded \(forwarded) and withheld \(withheld); \(decodeErrors) decode errors; all full \(allFull), alice's layers \(finalLayers)"
        }
    }

    /// Runs it against nodes listening for signaling on `ports` (0, 1, 2) on 127.0.0.1; `trunkVideo` reads node 0's
    /// counts of video packets sent over trunks to nodes that need their layer and kept from those that do not.
    public static func run(
        ports: [Int], room: String, trunkVideo: @Sendable () async throws -> (forwarded: Int, withheld: Int)
    ) async throws -> Seen {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        func configuration(_ name: String, port: Int, role: Role) -> CallConfiguration {
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: port), room: room, name: name, role: role,
                profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600),
                audioSource: role == .broadcaster ? .synthetic : .silence, showsSelfView: false, logger: logger)
        }
        let alice = try CallEngine(configuration("alice", port: ports[0], role: .broadcaster))
        let bob = try CallEngine(configuration("bob", port: ports[1], role: .audience))
        let carol = try CallEngine(configuration("carol", port: ports[2], role: .audience))
        let engines = [alice, bob, carol]
        let drains = engines.map { engine in Task { for await _ in engine.events {} } }
        defer { drains.forEach { $0.cancel() } }
        for engine in engines {
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
        func eventually(within window: Duration, _ condition: () async -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + window
            while ContinuousClock.now < deadline {
                if await condition() { return true }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return await condition()
        }
        let full = VideoSize(width: 640, height: 360)
        var seen = Seen()
        seen.fullForBoth = await eventually(within: .seconds(15)) {
            let atBob = await received(bob)?.lastFrameSize
            let atCarol = await received(carol)?.lastFrameSize
            return atBob == full && atCarol == full
        }
        guard let atBob = await aliceID(at: bob), let atCarol = await aliceID(at: carol) else {
            for engine in engines { await engine.leave() }
            return seen
        }
        bob.reportTiles([TileSize(id: atBob, width: 150, height: 84)])
        carol.reportTiles([TileSize(id: atCarol, width: 640, height: 360)])
        seen.split = await eventually(within: .seconds(10)) {
            let bobSees = await received(bob)?.lastFrameSize
            let carolSees = await received(carol)?.lastFrameSize
            let active = await alice.statistics().activeVideoLayers
            return bobSees == VideoSize(width: 160, height: 90) && carolSees == full && active == [true, false, true]
        }
        seen.layersWhenSplit = await alice.statistics().activeVideoLayers
        seen.bobSize = await received(bob)?.lastFrameSize
        seen.carolSize = await received(carol)?.lastFrameSize

        // Each video packet of alice's now crosses to one node of the two: node 0 withholds as many as it forwards.
        let before = try await trunkVideo()
        let sentBefore = await alice.statistics().videoPacketsSent
        try await Task.sleep(for: .seconds(2))
        let after = try await trunkVideo()
        seen.forwarded = after.forwarded - before.forwarded
        seen.withheld = after.withheld - before.withheld
        seen.sent = await alice.statistics().videoPacketsSent - sentBefore
        seen.decodeErrors = (await received(bob)?.decodeErrors ?? 0) + (await received(carol)?.decodeErrors ?? 0)

        // Bob goes fullscreen too: nobody anywhere needs the small layer, and alice pauses it.
        bob.reportTiles([TileSize(id: atBob, width: 640, height: 360)])
        seen.allFull = await eventually(within: .seconds(10)) {
            let bobSees = await received(bob)?.lastFrameSize
            let active = await alice.statistics().activeVideoLayers
            return bobSees == full && active == [true, false, false]
        }
        seen.finalLayers = await alice.statistics().activeVideoLayers
        for engine in engines { await engine.leave() }
        return seen
    }

    /// Whether `seen` is what the layer rules promise (the checks both tests make), with what failed.
    public static func problems(in seen: Seen) -> [String] {
        var problems: [String] = []
        if !seen.fullForBoth { problems.append("bob and carol did not both decode alice's full layer at first") }
        if !seen.split { problems.append("bob (160x90) and carol (640x360) did not get their layers, alice [T,F,T]") }
        if seen.sent <= 20 { problems.append("alice sent only \(seen.sent) video packets in 2 s") }
        if seen.forwarded <= 20 { problems.append("node 0 forwarded only \(seen.forwarded) video packets in 2 s") }
        if Double(seen.withheld) < Double(seen.forwarded) * 0.9
            || Double(seen.withheld) > Double(seen.forwarded) * 1.1 + 5
        {
            problems.append(
                "node 0 forwarded \(seen.forwarded) and withheld \(seen.withheld) (each should go to one node of two)")
        }
        if seen.decodeErrors > 0 { problems.append("\(seen.decodeErrors) decode errors") }
        if !seen.allFull { problems.append("bob fullscreen too: alice did not pause her small layer") }
        return problems
    }
}
