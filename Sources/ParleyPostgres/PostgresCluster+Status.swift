// What a node counts of its cluster membership, and the cluster status `parley cluster status` prints.
import Foundation
import Logging
import ParleyStore
import PostgresNIO

/// What a node's cluster membership counted.
public struct ClusterFigures: Sendable, Equatable {
    public var heartbeats = 0
    public var failedHeartbeats = 0
    /// Nodes this node found dead and cleared.
    public var reaped = 0
    /// Times this node found itself declared dead and announced itself again.
    public var revivals = 0
    public var published = 0
    public var notifications = 0
    public var failedPublishes = 0
    /// Events dropped because the outbox was full (`outboxLimit`).
    public var dropped = 0
    public var received = 0
    public var undecodable = 0
    /// Times the bus connected (the first, then each reconnection).
    public var busConnections = 0
    /// Delay of the last batch received, from its publishing.
    public var busLagSeconds = 0.0
    /// Whether the last heartbeat reached the database.
    public var databaseReachable = true
    /// When the last heartbeat reached the database.
    public var lastBeat: ContinuousClock.Instant?
    /// Rooms placed (or found placed), and placements that could not ask the database (placed here).
    public var placements = 0
    public var failedPlacements = 0
}

extension Duration {
    var inMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// The cluster as `parley cluster status` prints it.
public struct ClusterStatus: Sendable, Equatable {
    public struct Node: Sendable, Equatable {
        public var id: String
        public var advertise: String
        public var alive: Bool
        /// Milliseconds since its last heartbeat.
        public var silentMs: Int64
        public var members: Int
        public var rooms: Int
        public var packetsPerSecond: Double
        public var cpu: Double
        /// Rooms placed on it.
        public var placedRooms: Int
        /// Accounts with presence on it.
        public var accounts: Int
        /// Who found it dead, when it is dead.
        public var reapedBy: String?
        /// Where it takes trunk datagrams (nil: no cluster secret), and how many of its trunks are up.
        public var trunk: String? = nil
        public var trunksUp = 0
    }
    public var nodes: [Node]
    /// Accounts online anywhere in the cluster.
    public var accountsOnline: Int
}

extension PostgresCluster {
    /// Reads the registry: every node (alive or dead), its load, rooms and accounts.
    public static func status(_ settings: DatabaseSettings, logger: Logger = Logger(label: "parley.cluster"))
        async throws(StoreError) -> ClusterStatus
    {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 2, logger: logger)
            defer { connection.close().whenComplete { _ in } }
            var nodes: [ClusterStatus.Node] = []
            let rows = try await connection.query(
                """
                SELECT n.id, n.advertise, n.alive AND n.heartbeat_at >= now() - interval '3 seconds',
                    (extract(epoch FROM now() - n.heartbeat_at) * 1000)::BIGINT, n.members, n.rooms,
                    n.packets_per_second, n.cpu,
                    (SELECT count(*) FROM room_placement r WHERE r.node = n.id),
                    (SELECT count(*) FROM presence p WHERE p.node = n.id), n.reaped_by, n.trunk, n.trunks_up
                FROM node n ORDER BY n.id
                """, logger: logger)
            for try await row in rows.decode(
                (String, String, Bool, Int64, Int, Int, Double, Double, Int64, Int64, String?, String?, Int).self)
            {
                nodes.append(
                    ClusterStatus.Node(
                        id: row.0, advertise: row.1, alive: row.2, silentMs: row.3, members: row.4, rooms: row.5,
                        packetsPerSecond: row.6, cpu: row.7, placedRooms: Int(row.8), accounts: Int(row.9),
                        reapedBy: row.10, trunk: row.11, trunksUp: row.12))
            }
            var online = 0
            for try await count in try await connection.query(
                "SELECT count(DISTINCT account) FROM presence", logger: logger
            ).decode(Int64.self) {
                online = Int(count)
            }
            return ClusterStatus(nodes: nodes, accountsOnline: online)
        } catch {
            throw PostgresFailure.explain(error, doing: "read the cluster's status", settings: settings)
        }
    }
}
