// Where rooms live across the cluster (placement), draining a node, and the rooms file kept in the database.
import Foundation
import Logging
import ParleyBus
import ParleyStore
import PostgresNIO

extension PostgresCluster: RoomPlacer {
    public func place(_ room: String, answer: @escaping @Sendable (RoomPlacement) -> Void) {
        let nodeID = nodeID
        let logger = logger
        let deadAfter = Double(Self.deadAfter.inMilliseconds) / 1000
        _ = bridge.start { [client, settings, figures] in
            do {
                let placed = try await deadline(Self.operationTimeout) {
                    try await client.withTransaction(logger: logger) { connection -> (node: String, server: String)? in
                        // A placement on a node found dead is stale.
                        try await connection.query(
                            """
                            DELETE FROM room_placement r USING node n
                            WHERE r.room = \(room) AND n.id = r.node AND NOT n.alive
                            """, logger: logger)
                        // The least-loaded live node: fewest rooms placed on it, then fewest members.
                        try await connection.query(
                            """
                            INSERT INTO room_placement (room, node)
                            SELECT \(room), n.id FROM node n
                            WHERE n.alive AND n.heartbeat_at >= now() - make_interval(secs => \(deadAfter))
                            ORDER BY (SELECT count(*) FROM room_placement p WHERE p.node = n.id), n.members, n.id
                            LIMIT 1
                            ON CONFLICT (room) DO NOTHING
                            """, logger: logger)
                        var found: (node: String, server: String)?
                        for try await (node, server) in try await connection.query(
                            """
                            SELECT r.node, n.advertise FROM room_placement r JOIN node n ON n.id = r.node
                            WHERE r.room = \(room)
                            """, logger: logger
                        ).decode((String, String).self) {
                            found = (node, server)
                        }
                        return found
                    }
                }
                figures.withLock { $0.placements += 1 }
                guard let placed, placed.node != nodeID else { return answer(.here) }
                answer(.elsewhere(server: placed.server, node: placed.node))
            } catch {
                figures.withLock { $0.failedPlacements += 1 }
                logger.warning(
                    "room placed here without asking the cluster",
                    metadata: [
                        "room": "\(room)",
                        "reason": "\(PostgresFailure.explain(error, doing: "place room \(room)", settings: settings))",
                    ])
                answer(.here)
            }
        }
    }

    public func release(_ room: String) {
        let nodeID = nodeID
        let logger = logger
        _ = bridge.start { [client] in
            _ = try? await deadline(Self.operationTimeout) {
                try await client.query(
                    "DELETE FROM room_placement WHERE room = \(room) AND node = \(nodeID)", logger: logger)
            }
        }
    }
}

// MARK: Draining

extension PostgresCluster {
    /// Asks node `node` to drain (move its members to the other nodes and stop). False when no live node has that id.
    public static func requestDrain(
        _ settings: DatabaseSettings, node: String, logger: Logger = Logger(label: "parley.cluster")
    ) async throws(StoreError) -> Bool {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 4, logger: logger)
            defer { connection.close().whenComplete { _ in } }
            var alive = false
            for try await found in try await connection.query(
                """
                SELECT alive AND heartbeat_at >= now() - interval '3 seconds' FROM node WHERE id = \(node)
                """, logger: logger
            ).decode(Bool.self) {
                alive = found
            }
            guard alive else { return false }
            let payload = try BusBatch(node: "", sent: Self.milliseconds(), events: [.drainNode(node)]).encoded()
            try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
            return true
        } catch {
            throw PostgresFailure.explain(error, doing: "ask node \(node) to drain", settings: settings)
        }
    }
}

// MARK: Room settings

extension PostgresCluster {
    /// Replaces the rooms' settings kept in the database with `lines` (rooms file lines, one a room, passwords as
    /// verifiers) in one transaction, and tells every node; returns how many rooms it replaced.
    public static func loadRooms(
        _ settings: DatabaseSettings, lines: [String], logger: Logger = Logger(label: "parley.cluster")
    )
        async throws(StoreError) -> Int
    {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 3, logger: logger)
            defer { connection.close().whenComplete { _ in } }
            return try await connection.withTransaction(logger: logger) { connection in
                var replaced = 0
                for try await count in try await connection.query(
                    "WITH gone AS (DELETE FROM room_setting RETURNING 1) SELECT count(*) FROM gone", logger: logger
                ).decode(Int64.self) {
                    replaced = Int(count)
                }
                for line in lines {
                    let room = String(line.split(separator: " ", maxSplits: 1).first ?? "")
                    try await connection.query(
                        "INSERT INTO room_setting (room, line) VALUES (\(room), \(line))", logger: logger)
                }
                let payload = try BusBatch(node: "", sent: Self.milliseconds(), events: [.roomSettingsChanged])
                    .encoded()
                try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                return replaced
            }
        } catch {
            throw PostgresFailure.explain(
                error, doing: "load the rooms into the cluster's database", settings: settings)
        }
    }

    /// The rooms' settings kept in the database, as rooms file lines.
    public func roomLines() async throws(StoreError) -> [String] {
        let logger = logger
        do {
            return try await deadline(Self.operationTimeout) { [client] in
                var lines: [String] = []
                for try await line in try await client.query(
                    "SELECT line FROM room_setting ORDER BY room", logger: logger
                ).decode(String.self) {
                    lines.append(line)
                }
                return lines
            }
        } catch {
            throw PostgresFailure.explain(error, doing: "read the rooms' settings", settings: settings)
        }
    }
}
