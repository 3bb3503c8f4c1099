import Foundation
import Logging
import ParleyBus
import ParleyStore
import PostgresNIO
import Synchronization

// One relay's membership in a cluster that shares a PostgreSQL database:
//
//   node table      each node's row: its address for clients, its load, a heartbeat every second
//   presence table  where each account is, one row per (account, node), written with the event that announces it
//   parley_bus      the LISTEN/NOTIFY channel every node listens on; a payload is one JSON batch of events
//
// A node silent for `deadAfter` is dead: the first node to notice marks its row dead and clears its presence and
// rooms in one transaction, under the row's lock (`FOR UPDATE SKIP LOCKED` and `alive` in the condition), so it
// happens exactly once however many nodes notice together.

/// One node of a relay cluster on PostgreSQL: its registry row and heartbeat, and the bus to the other nodes.
public final class PostgresCluster: ClusterBus, Sendable {
    public let nodeID: String
    /// The address clients reach this node at (`--advertise`).
    public let advertise: String
    /// Where this node takes trunk datagrams (HOST:PORT), nil without a cluster secret.
    public let trunk: String?
    let settings: DatabaseSettings
    let client: PostgresClient
    let bridge = BlockingBridge()
    let logger: Logger
    /// Events waiting to be published, in order (bounded by `outboxLimit`), and the publisher's wake-up call.
    private let outbox = Mutex<[ClusterEvent]>([])
    private let wakeup: AsyncStream<Void>.Continuation
    private let tasks = Mutex<[Task<Void, Never>]>([])
    let figures = SharedFigures()

    /// PostgreSQL's limit on a notification's payload is 8,000 bytes.
    static let payloadLimit = 7_900
    /// Events waiting to be published; past it new events are dropped and counted.
    public static let outboxLimit = 10_000
    /// A batch older than this when it arrives delivers its messages only after checking the table.
    static let freshness = 1.0
    /// How long a heartbeat or a publication may wait for the database before it counts as failed.
    static let operationTimeout: Duration = .seconds(2)
    /// A node whose own last heartbeat is older than this does not reap others (it was cut off itself).
    static let steadyBeat: Duration = .milliseconds(1500)
    /// A node whose heartbeat is older than this is dead.
    public static let deadAfter: Duration = .seconds(3)
    /// The bus's channel.
    static let channel = "parley_bus"

    /// What the cluster did so far (for `/metrics`, `parley cluster status` and tests).
    public var counters: ClusterFigures { figures.withLock { $0 } }

    /// Registers `nodeID` in the database (refused when another live process holds that id), clears what an earlier
    /// life of this node left, and starts the heartbeat, the publisher and the listener. `load` is asked each
    /// second; `deliver` gets other nodes' events in order; `caughtUp` is called each time the bus (re)connects,
    /// after it listens, with the presence of every other live node: the relay compares and redelivers from the tables
    /// what it may have missed. `revived` is called when this node finds itself declared dead (it was silent) and
    /// must announce its presence again.
    /// `trunk` is where this node takes trunk datagrams (nil: no trunks); `peers` gets, after each heartbeat, the
    /// other live nodes that take them.
    public static func join(
        _ settings: DatabaseSettings, nodeID: String, advertise: String, trunk: String? = nil, logger: Logger,
        load: @escaping @Sendable () async -> NodeLoad,
        deliver: @escaping @Sendable (_ events: [ClusterEvent], _ from: String) -> Void,
        caughtUp: @escaping @Sendable (_ presence: [(account: String, node: String, presence: NodePresence)]) -> Void,
        revived: @escaping @Sendable () -> Void,
        peers: @escaping @Sendable (_ peers: [TrunkPeer]) -> Void = { _ in }
    ) async throws(StoreError) -> PostgresCluster {
        let cluster = PostgresCluster(
            settings: settings, nodeID: nodeID, advertise: advertise, trunk: trunk, logger: logger)
        do {
            try await cluster.register()
        } catch {
            cluster.stop(announce: false)
            throw error
        }
        cluster.start(load: load, deliver: deliver, caughtUp: caughtUp, revived: revived, peers: peers)
        return cluster
    }

    private init(settings: DatabaseSettings, nodeID: String, advertise: String, trunk: String?, logger: Logger) {
        self.settings = settings
        self.nodeID = nodeID
        self.advertise = advertise
        self.trunk = trunk
        self.logger = logger
        var configuration = settings.clientConfiguration(readOnly: false)
        configuration.options.maximumConnections = 3
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger.quiet)
        self.client = client
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wakeup = continuation
        let running = bridge.start { await client.run() }
        tasks.withLock { $0.append(running) }
        let publisher = bridge.start { [weak self] in await self?.publishLoop(stream) }

        tasks.withLock { $0.append(publisher) }
    }

    deinit { for task in tasks.withLock({ $0 }) { task.cancel() } }

    /// Leaves the cluster: with `announce`, the node's row, presence and rooms go at once (the others are told)
    /// rather than after `deadAfter`.
    public func stop(announce: Bool = true) {
        wakeup.finish()
        if announce {
            let nodeID = nodeID
            let logger = logger
            _ = try? bridge.run(timeout: .seconds(3), onTimeout: StoreError.database("leaving the cluster timed out")) {
                [client] in
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query("DELETE FROM node WHERE id = \(nodeID)", logger: logger)
                    let payload = try BusBatch(node: nodeID, sent: Self.milliseconds(), events: [.nodeGone(nodeID)])
                        .encoded()
                    try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                }
            }
        }
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    public func publish(_ event: ClusterEvent) {
        let taken = outbox.withLock { events in
            guard events.count < Self.outboxLimit else { return false }
            events.append(event)
            return true
        }
        if taken { wakeup.yield() } else { figures.withLock { $0.dropped += 1 } }
    }

    // MARK: Registry

    func register() async throws(StoreError) {
        let nodeID = nodeID
        let advertise = advertise
        let trunk = trunk
        let logger = logger
        let deadAfter = Self.deadAfter.inMilliseconds
        do {
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    SELECT alive, (extract(epoch FROM now() - heartbeat_at) * 1000)::BIGINT FROM node
                    WHERE id = \(nodeID) FOR UPDATE
                    """, logger: logger)
                for try await (alive, silentMs) in rows.decode((Bool, Int64).self) where alive && silentMs < deadAfter {
                    throw StoreError.database(
                        "node id \(nodeID) is already alive in this cluster (its heartbeat is \(silentMs) ms old): "
                            + "give each node its own --node-id")
                }
                try await connection.query(
                    """
                    INSERT INTO node (id, advertise, trunk) VALUES (\(nodeID), \(advertise), \(trunk))
                    ON CONFLICT (id) DO UPDATE SET advertise = EXCLUDED.advertise, trunk = EXCLUDED.trunk,
                        started_at = now(), heartbeat_at = now(), alive = true, members = 0, rooms = 0,
                        packets_per_second = 0, cpu = 0, trunks_up = 0
                    """, logger: logger)
                // What an earlier life of this node left (it was killed and came back before anyone reaped it).
                try await connection.query("DELETE FROM presence WHERE node = \(nodeID)", logger: logger)
                try await connection.query("DELETE FROM room_placement WHERE node = \(nodeID)", logger: logger)
            }
        } catch {
            throw PostgresFailure.explain(error, doing: "join the cluster as node \(nodeID)", settings: settings)
        }
    }

    private func start(
        load: @escaping @Sendable () async -> NodeLoad,
        deliver: @escaping @Sendable ([ClusterEvent], String) -> Void,
        caughtUp: @escaping @Sendable ([(account: String, node: String, presence: NodePresence)]) -> Void,
        revived: @escaping @Sendable () -> Void,
        peers: @escaping @Sendable ([TrunkPeer]) -> Void
    ) {
        let heartbeat = bridge.start { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self else { return }
                // The nodes this one found dead are gone here too (the others hear it on the bus).
                let me = self.nodeID
                let found = await self.beat(load: await load(), revived: revived) { reaped in
                    deliver(reaped.map { .nodeGone($0) }, me)
                }
                if let found { peers(found) }
            }
        }
        let listener = bridge.start { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                await self.listen(deliver: deliver, caughtUp: caughtUp)
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        tasks.withLock { $0 += [heartbeat, listener] }
    }

    /// One heartbeat: this node's load, then the reaping of nodes silent past `deadAfter`. Returns the other live
    /// nodes' trunks (nil when the database did not answer).
    @discardableResult
    func beat(load: NodeLoad, revived: @Sendable () -> Void, reaped found: @Sendable ([String]) -> Void = { _ in })
        async -> [TrunkPeer]?
    {
        // Only a node that has itself been beating steadily may find others dead: after the database was down every
        // heartbeat is old, and the first node back must not reap the rest.
        let steady = figures.withLock { $0.lastBeat.map { ContinuousClock.now - $0 < Self.steadyBeat } ?? false }
        let nodeID = nodeID
        let advertise = advertise
        let trunk = trunk
        let logger = logger
        let deadAfter = Self.deadAfter.inMilliseconds
        do {
            let (wasAlive, reaped, peers) = try await deadline(Self.operationTimeout) { [client] in
                try await client.withTransaction(logger: logger) { connection in
                    let wasAlive = try await Self.writeHeartbeat(
                        connection, node: nodeID, advertise: advertise, trunk: trunk, load: load, logger: logger)
                    let peers = try await Self.liveTrunks(
                        connection, besides: nodeID, deadAfterMilliseconds: deadAfter, logger: logger)
                    guard steady else { return (wasAlive, [String](), peers) }
                    let reaped = try await Self.reapSilentNodes(
                        connection, by: nodeID, deadAfterMilliseconds: deadAfter, logger: logger)
                    return (wasAlive, reaped, peers)
                }
            }
            figures.withLock {
                $0.lastBeat = ContinuousClock.now
                $0.heartbeats += 1
                $0.reaped += reaped.count
                $0.databaseReachable = true
            }
            for id in reaped {
                logger.notice("node found dead: its presence and rooms cleared", metadata: ["node": "\(id)"])
            }
            if !reaped.isEmpty { found(reaped) }
            if !wasAlive {
                logger.notice("this node had been declared dead (silent too long): announcing its presence again")
                figures.withLock { $0.revivals += 1 }
                revived()
            }
            return peers
        } catch {
            let first = figures.withLock { figures in
                let wasReachable = figures.databaseReachable
                figures.databaseReachable = false
                figures.failedHeartbeats += 1
                return wasReachable
            }
            if first {
                logger.warning(
                    "heartbeat failed: calls go on; messaging waits for the database",
                    metadata: ["reason": "\(PostgresFailure.explain(error, doing: "heartbeat", settings: settings))"])
            }
            return nil
        }
    }

    /// In the heartbeat's transaction: this node's row, locked first to learn whether another node had declared it
    /// dead (it was alive unless so), then written with its load.
    private static func writeHeartbeat(
        _ connection: PostgresConnection, node nodeID: String, advertise: String, trunk: String?, load: NodeLoad,
        logger: Logger
    ) async throws -> Bool {
        var wasAlive = false
        for try await alive in try await connection.query(
            "SELECT alive FROM node WHERE id = \(nodeID) FOR UPDATE", logger: logger
        ).decode(Bool.self) {
            wasAlive = alive
        }
        try await connection.query(
            """
            INSERT INTO node (id, advertise, trunk, members, rooms, packets_per_second, cpu, trunks_up)
            VALUES (\(nodeID), \(advertise), \(trunk), \(load.members), \(load.rooms),
                \(load.packetsPerSecond), \(load.cpu), \(load.trunksUp))
            ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), alive = true, members = EXCLUDED.members,
                rooms = EXCLUDED.rooms, packets_per_second = EXCLUDED.packets_per_second, cpu = EXCLUDED.cpu,
                trunk = EXCLUDED.trunk, trunks_up = EXCLUDED.trunks_up
            """, logger: logger)
        return wasAlive
    }

    /// The other live nodes that take trunks, by id.
    private static func liveTrunks(
        _ connection: PostgresConnection, besides nodeID: String, deadAfterMilliseconds deadAfter: Int64,
        logger: Logger
    ) async throws -> [TrunkPeer] {
        var peers: [TrunkPeer] = []
        for try await (id, address, advertised, members) in try await connection.query(
            """
            SELECT id, trunk, advertise, members FROM node
            WHERE alive AND id <> \(nodeID) AND trunk IS NOT NULL
                AND heartbeat_at >= now() - make_interval(secs => \(Double(deadAfter) / 1000))
            ORDER BY id
            """, logger: logger
        ).decode((String, String, String, Int).self) {
            peers.append(TrunkPeer(node: id, address: address, advertise: advertised, members: members))
        }
        return peers
    }

    /// Nodes silent past `deadAfter` marked dead (each by one reaper: rows another is reaping are skipped), their
    /// presence and room placements cleared, and the bus told; returns their ids.
    private static func reapSilentNodes(
        _ connection: PostgresConnection, by nodeID: String, deadAfterMilliseconds deadAfter: Int64, logger: Logger
    ) async throws -> [String] {
        var reaped: [String] = []
        for try await id in try await connection.query(
            """
            UPDATE node SET alive = false, reaped_by = \(nodeID), reaped_at = now(), deaths = deaths + 1
            WHERE id IN (
                SELECT id FROM node WHERE alive AND id <> \(nodeID)
                    AND heartbeat_at < now() - make_interval(secs => \(Double(deadAfter) / 1000))
                FOR UPDATE SKIP LOCKED)
            RETURNING id
            """, logger: logger
        ).decode(String.self) {
            reaped.append(id)
        }
        guard !reaped.isEmpty else { return reaped }
        try await connection.query("DELETE FROM presence WHERE node = ANY(\(reaped))", logger: logger)
        try await connection.query("DELETE FROM room_placement WHERE node = ANY(\(reaped))", logger: logger)
        let payload = try BusBatch(node: nodeID, sent: milliseconds(), events: reaped.map { .nodeGone($0) }).encoded()
        try await connection.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
        return reaped
    }

    // MARK: Bus

    /// Publishes what waits in the outbox: every batch in one transaction (presence rows written with the events
    /// that announce them), payloads split to fit PostgreSQL's 8,000 bytes. A batch that fails is retried once the
    /// database answers again: order is kept, nothing later overtakes it.
    private func publishLoop(_ wakeups: AsyncStream<Void>) async {
        let nodeID = nodeID
        let logger = logger
        for await _ in wakeups {
            while true {
                let batch = outbox.withLock { Array($0.prefix(500)) }
                guard !batch.isEmpty else { break }
                await publish(batch, nodeID: nodeID, logger: logger)
                if Task.isCancelled { return }
                outbox.withLock { $0.removeFirst(batch.count) }
            }
        }
    }

    /// Publishes `batch`, retrying until the database takes it. A batch that waited for a retry goes out with its
    /// messages as references only: by then the recipients' nodes may have caught up from the tables and been
    /// acknowledged, and only the table (delivered or not) can say so.
    private func publish(_ batch: [ClusterEvent], nodeID: String, logger: Logger) async {
        var batch = batch
        var failed = false
        while !Task.isCancelled {
            if failed { batch = batch.map(Self.referencesOnly) }
            let batch = batch
            do {
                let payloads = try Self.payloads(for: batch, node: nodeID)
                let writesPresence = batch.contains { if case .presence = $0 { true } else { false } }
                if !writesPresence, payloads.count == 1 {
                    // One notification and no rows: one statement, its own transaction, one round trip.
                    _ = try await deadline(Self.operationTimeout) { [client] in
                        try await client.query("SELECT pg_notify(\(Self.channel), \(payloads[0]))", logger: logger)
                    }
                    figures.withLock {
                        $0.published += batch.count
                        $0.notifications += 1
                    }
                    return
                }
                try await deadline(Self.operationTimeout) { [client] in
                    try await client.withTransaction(logger: logger) { connection in
                        for event in batch {
                            guard case .presence(let account, let presence) = event else { continue }
                            if let presence {
                                let calls = String(decoding: try JSONEncoder().encode(presence.calls), as: UTF8.self)
                                try await connection.query(
                                    """
                                    INSERT INTO presence (account, node, messaging, calls)
                                    VALUES (\(account), \(nodeID), \(presence.messaging), \(calls))
                                    ON CONFLICT (account, node) DO UPDATE SET messaging = EXCLUDED.messaging,
                                        calls = EXCLUDED.calls
                                    """, logger: logger)
                            } else {
                                try await connection.query(
                                    "DELETE FROM presence WHERE account = \(account) AND node = \(nodeID)",
                                    logger: logger)
                            }
                        }
                        for payload in payloads {
                            try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                        }
                    }
                }
                figures.withLock {
                    $0.published += batch.count
                    $0.notifications += payloads.count
                }
                return
            } catch {
                failed = true
                figures.withLock { $0.failedPublishes += 1 }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// Listens on the bus until the connection fails. Once listening, `caughtUp` gets the other nodes' presence.
    private func listen(
        deliver: @escaping @Sendable ([ClusterEvent], String) -> Void,
        caughtUp: @escaping @Sendable ([(account: String, node: String, presence: NodePresence)]) -> Void
    ) async {
        let logger = logger
        let nodeID = nodeID
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 1, logger: logger)
            defer { connection.close().whenComplete { _ in } }
            try await connection.listen(on: Self.channel) { notifications in
                caughtUp(try await self.presence(on: connection))
                self.figures.withLock { $0.busConnections += 1 }
                var newerNodes = Set<String>()
                for try await notification in notifications {
                    let batch: BusBatch
                    do throws(BusBatchError) {
                        batch = try BusBatch.decode(notification.payload)
                    } catch {
                        self.figures.withLock { $0.undecodable += 1 }
                        // Said once per node (a bounded set: a cluster has a few nodes), not once per batch.
                        if case .newerVersion(_, let node) = error, newerNodes.count < 1_000,
                            newerNodes.insert(node).inserted
                        {
                            logger.error("\(error)")
                        }
                        continue
                    }
                    guard batch.node != nodeID else { continue }
                    let lag = Double(max(0, Self.milliseconds() - batch.sent)) / 1000
                    self.figures.withLock {
                        $0.received += batch.events.count
                        $0.busLagSeconds = lag
                    }
                    // A batch that took long (a publication that hung while the database was away and went out when
                    // it came back) may carry messages the recipient got since from the tables and acknowledged:
                    // only the table can say, so its messages are read back as references.
                    deliver(
                        lag > Self.freshness ? batch.events.map(Self.referencesOnly) : batch.events, batch.node)
                }
            }
        } catch {
            if !Task.isCancelled {
                logger.warning(
                    "the cluster's bus is down: reconnecting",
                    metadata: [
                        "reason": "\(PostgresFailure.explain(error, doing: "listen on the bus", settings: settings))"
                    ])
            }
        }
    }

    /// `event` with any message it carries reduced to its reference.
    static func referencesOnly(_ event: ClusterEvent) -> ClusterEvent {
        guard case .messages(let references) = event else { return event }
        return .messages(
            references.map { MessageReference(sender: $0.sender, recipient: $0.recipient, sequence: $0.sequence) })
    }

    /// Every live node's presence but this one's.
    func presence(on connection: PostgresConnection) async throws -> [(
        account: String, node: String, presence: NodePresence
    )] {
        var result: [(account: String, node: String, presence: NodePresence)] = []
        let rows = try await connection.query(
            """
            SELECT p.account, p.node, p.messaging, p.calls FROM presence p JOIN node n ON n.id = p.node
            WHERE n.alive AND p.node <> \(nodeID)
            """, logger: logger)
        for try await (account, node, messaging, calls) in rows.decode((String, String, Bool, String).self) {
            let rooms = (try? JSONDecoder().decode([String?].self, from: Data(calls.utf8))) ?? []
            result.append((account, node, NodePresence(messaging: messaging, calls: rooms)))
        }
        return result
    }

    /// `events` as notification payloads of at most `payloadLimit` bytes each; a list too long for one is split.
    static func payloads(for events: [ClusterEvent], node: String) throws -> [String] {
        try BusBatch.payloads(for: events, node: node, sent: milliseconds(), limit: payloadLimit)
    }

    static func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// The figures, shared with the tasks that count them.
final class SharedFigures: Sendable {
    private let figures = Mutex(ClusterFigures())
    func withLock<T>(_ body: (inout ClusterFigures) -> T) -> T { figures.withLock { body(&$0) } }
}

/// The database did not answer in time.
struct DeadlineExceeded: Error, CustomStringConvertible {
    var description: String { "the database did not answer in time" }
}

/// Runs `body`, cancelled and failed with `DeadlineExceeded` after `limit`.
func deadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw DeadlineExceeded()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
