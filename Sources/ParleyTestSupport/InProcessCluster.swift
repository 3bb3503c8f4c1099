import Logging
import ParleyBus
import ParleyRelay
import ParleySecurity
import ParleyStore
import ParleyWire
import Synchronization

/// A cluster's bus in memory: each node's events go to the other relays in the order it publishes them (it publishes
/// from its one event loop, as `clusterEvents` asks).
public final class MemoryBus: ClusterBus {
    public let nodeID: String
    private let others = Mutex<[(node: String, relay: Relay)]>([])

    public init(nodeID: String) {
        self.nodeID = nodeID
    }

    /// The relays this node's events go to (itself left out).
    public func connect(_ relays: [(node: String, relay: Relay)]) {
        others.withLock { $0 = relays.filter { $0.node != nodeID } }
    }

    public func publish(_ event: ClusterEvent) {
        for other in others.withLock({ $0 }) { other.relay.clusterEvents([event], from: nodeID) }
    }
}

/// Relays in this process sharing rooms as a cluster's nodes do (`--placement spread`): trunks on loopback
/// authenticated by one cluster secret, the bus in memory (media never crosses it, so a room's media takes the path
/// it takes between `parley serve --database` processes). Nodes are named node-0, node-1, ….
public struct InProcessCluster: Sendable {
    public var relays: [Relay]
    public var buses: [MemoryBus]
    public var trunkPorts: [Int]

    /// Starts `nodes` relays with their trunks open, node `i` forwarding media under `media(i)` and configured further
    /// by `configure`; `connect` introduces them.
    public static func start(
        nodes: Int, logger: Logger, media: (Int) -> MediaLimits = { _ in MediaLimits() },
        configure: (Int, inout RelayConfiguration) -> Void = { _, _ in }
    ) async throws -> InProcessCluster {
        let secret = try ClusterSecret(bytes: (0..<32).map { UInt8($0) })
        var cluster = InProcessCluster(relays: [], buses: [], trunkPorts: [])
        for index in 0..<nodes {
            var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, media: media(index), logger: logger)
            configure(index, &configuration)
            let relay = try await Relay.start(configuration)
            let gate = try TrunkGate(nodeID: "node-\(index)", boot: WallClock.milliseconds, secret: secret)
            cluster.trunkPorts.append(try await relay.openTrunks(gate: gate, host: "127.0.0.1", port: 0))
            let bus = MemoryBus(nodeID: "node-\(index)")
            try await relay.spanRooms(over: bus)
            cluster.relays.append(relay)
            cluster.buses.append(bus)
        }
        return cluster
    }

    /// Connects the buses and gives each node the others' trunks, as the registry would: node `from` reaches node
    /// `to` at the port `port(from, to)` names (by default `to`'s own trunk port; a test puts a proxy between).
    public func connect(port: (_ from: Int, _ to: Int) -> Int = { _, _ in -1 }) async throws {
        let named = relays.enumerated().map { (node: "node-\($0.offset)", relay: $0.element) }
        for (index, relay) in relays.enumerated() {
            buses[index].connect(named)
            try await relay.setTrunkPeers(
                relays.indices.filter { $0 != index }.map { other in
                    let chosen = port(index, other)
                    return TrunkPeer(
                        node: "node-\(other)", address: "127.0.0.1:\(chosen < 0 ? trunkPorts[other] : chosen)")
                })
        }
    }

    public func shutdown() async {
        for relay in relays { await relay.shutdown() }
    }
}
