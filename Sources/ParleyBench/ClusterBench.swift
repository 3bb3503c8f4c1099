import Foundation
import NIOPosix
import ParleyEngine
import ParleyProcesses
import ParleySecurity
import ParleyWire

/// `parley-bench cluster`: one room's video within one node against across two (latency, what the trunk adds); a
/// node killed and a node drained under a call (frozen video, over trials); the largest broadcast audience one node
/// holds against three; three `parley serve --database` nodes on one PostgreSQL against one node on SQLite, on this
/// machine: direct messages across nodes (rate, delivery p50/p99), the rate of notifications PostgreSQL carries to
/// three listening nodes, and what a redirect adds to a join.
public enum ClusterBench {
    /// What to run (PARLEY_CLUSTER_SECONDS shortens the message runs; PARLEY_CLUSTER_RATES picks the offered rates).
    public struct Settings: Sendable {
        public var users = 99
        public var rates = [5_000]
        public var seconds = 5.0
        public var joins = 20
        /// One room on two nodes: windows per path and their length (PARLEY_CLUSTER_CASCADE_SECONDS).
        public var cascadeRounds = 2
        public var cascadeSeconds = 10.0
        /// Node deaths and drains timed, each (PARLEY_CLUSTER_FAILOVER_TRIALS; 0 skips them).
        public var failoverTrials = 10
        /// Broadcast audiences tried on one node and on three (PARLEY_CLUSTER_AUDIENCES, ascending; empty skips),
        /// and the window at each.
        public var audiences = [250, 500, 750, 1000, 1250]
        public var audienceSeconds = 5.0

        public init() {}

        public static func fromEnvironment() -> Settings {
            var settings = Settings()
            let environment = ProcessInfo.processInfo.environment
            if let text = environment["PARLEY_CLUSTER_SECONDS"], let value = Double(text), value >= 1 {
                settings.seconds = value
            }
            if let text = environment["PARLEY_CLUSTER_CASCADE_SECONDS"], let value = Double(text), value >= 2 {
                settings.cascadeSeconds = value
            }
            if let text = environment["PARLEY_CLUSTER_FAILOVER_TRIALS"], let value = Int(text),
                (0...100).contains(value)
            {
                settings.failoverTrials = value
            }
            if let text = environment["PARLEY_CLUSTER_AUDIENCES"] {
                settings.audiences = text.split(separator: ",").compactMap { Int($0) }.filter {
                    (1...5_000).contains($0)
                }
                .sorted()
            }
            if let text = environment["PARLEY_CLUSTER_RATES"] {
                let rates = text.split(separator: ",").compactMap { Int($0) }.filter { (100...20_000).contains($0) }
                if !rates.isEmpty { settings.rates = rates }
            }
            return settings
        }
    }

    public static func run(
        executable: String, settings: Settings = .fromEnvironment(), log: @escaping @Sendable (String) -> Void
    ) async throws -> [BenchTable] {
        let folder = NSTemporaryDirectory() + "parley-cluster-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // First, on a quiet machine: one room's media within one node and across two.
        let cascade = try await cascade(settings: settings, log: log)
        log("cluster: starting PostgreSQL")
        let postgres = try await PostgresServer.start()
        defer { postgres.stop() }
        let database = try await postgres.createDatabase(prefix: "parley_bench")
        let url = postgres.url(database: database)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { group.shutdownGracefully { _ in } }

        var messages = BenchTable(
            title: "Direct messages: one node on SQLite against three nodes on one PostgreSQL, \(settings.users) "
                + "users online, \(Int(settings.seconds)) s at each offered rate",
            columns: [
                "Relays", "Offered", "Stored (acknowledged) a second", "Delivery p50 / p99", "Relays' CPU",
                "Errors", "Goal across nodes at 5,000/s: all stored, p99 ≤ 50 ms",
            ])

        // One node, SQLite: every user on it.
        do {
            log("cluster: one node on SQLite")
            let relay = try RelayProcess(
                executable: executable, cpu: nil, extraArguments: ["--state-dir", folder + "/single"])
            defer { relay.stop() }
            let server = ServerAddress(host: "127.0.0.1", port: relay.signalingPort)
            for row in try await measure(settings, servers: [server], relays: [relay], group: group, log: log) {
                messages.add(["1 (SQLite)"] + row.cells + [""])
            }
        }

        // Three nodes, PostgreSQL: user i on node i % 3 writes to user i + 1, always on another node.
        log("cluster: three nodes on PostgreSQL")
        var nodes: [RelayProcess] = []
        defer { for node in nodes { node.stop() } }
        for id in ["n1", "n2", "n3"] {
            nodes.append(
                try RelayProcess(
                    executable: executable, cpu: nil,
                    extraArguments: ["--state-dir", folder + "/" + id, "--database", url, "--node-id", id]))
        }
        // Joined the cluster (registry, bus) a moment after listening.
        try await Task.sleep(for: .seconds(2))
        let servers = nodes.map { ServerAddress(host: "127.0.0.1", port: $0.signalingPort) }
        var postgresCPU = 0.0
        for row in try await measure(
            settings, servers: servers, relays: nodes, group: group, log: log,
            postgres: { postgresCPUSeconds(postgres) }, postgresCPU: &postgresCPU)
        {
            messages.add(["3 + PostgreSQL"] + row.cells + [row.rate == 5_000 ? (row.met(50) ? "met" : "NOT met") : ""])
        }
        messages.notes = [
            "Delivery: from the sender posting to the recipient's client receiving it live. On one node the message "
                + "is committed to SQLite and forwarded; across nodes it is committed to PostgreSQL (a transaction per "
                + "group commit, under the table's advisory lock), then its sequence goes on the bus (LISTEN/NOTIFY, "
                + "batched) and the recipient's node reads it back by sequence before forwarding.",
            "Relays' CPU: the `parley serve` processes together (one core = 100 %); PostgreSQL's own processes used "
                + "\(formatted(postgresCPU * 100, decimals: 0)) % during the three-node runs. Everything shares the "
                + "machine's 2 cores with the 99 clients, which run in this process.",
        ]

        // The bus's ceiling here: notifications a second PostgreSQL takes and delivers to the three nodes.
        log("cluster: notifications with pgbench")
        let notify = try await notificationRate(postgres: postgres, database: database, folder: folder)
        var bus = BenchTable(
            title: "The bus: notifications PostgreSQL carries to three listening nodes (pgbench, 4 clients, 5 s)",
            columns: ["Payload", "Notifications a second", "Message references a second (at ~85 bytes each)"])
        for (bytes, rate) in notify {
            bus.add([
                "\(bytes) bytes", formatted(rate, decimals: 0),
                formatted(rate * Double(bytes / 85), decimals: 0),
            ])
        }
        bus.notes = [
            "Each node publishes a batch of events (up to 7,900 bytes) in one notification; a direct message costs "
                + "one ~85-byte reference in a batch, so the bus carries far more messages than the store commits."
        ]

        // A join answered directly against one that is redirected first.
        log("cluster: joins, direct and redirected")
        let joins = try joinTimes(nodes: nodes, count: settings.joins)
        var redirect = BenchTable(
            title: "What a redirect adds to a join (\(settings.joins) joins each, loopback)",
            columns: ["Join", "p50", "p95"])
        redirect.add(["To the room's node", joins.direct.p50, joins.direct.p95])
        redirect.add(["Through another node, redirected", joins.redirected.p50, joins.redirected.p95])
        redirect.notes = [
            "From opening the WebSocket to the relay's `joined`; a redirected join also waits for the first node's "
                + "placement query in PostgreSQL, its `redirect`, and a second WebSocket."
        ]
        // Last, so their thousands of sockets and killed nodes leave nothing behind for the tables above.
        for node in nodes { node.stop() }
        nodes = []
        var nodeTables: [BenchTable] = []
        if settings.failoverTrials > 0 {
            log("cluster: a node killed and a node drained, \(settings.failoverTrials) trials each")
            nodeTables.append(
                try await failover(
                    executable: executable, postgres: postgres, folder: folder, trials: settings.failoverTrials,
                    log: log))
        }
        if !settings.audiences.isEmpty {
            var urls: [Int: String] = [:]
            for count in [1, 3] {
                urls[count] = postgres.url(database: try await postgres.createDatabase(prefix: "parley_capacity"))
            }
            let audiences = settings.audiences
            let seconds = settings.audienceSeconds
            let databases = urls
            nodeTables.append(
                try await runBlocking {
                    try capacity(
                        executable: executable, urls: databases, folder: folder, audiences: audiences, seconds: seconds,
                        log: log)
                })
        }
        return [cascade] + nodeTables + [messages, bus, redirect]
    }

    struct Row {
        var rate: Int
        var cells: [String]
        var result: MessagingBench.RateResult
        func met(_ p99: Double) -> Bool {
            result.stored == result.total && result.p99 <= p99 && result.errors.isEmpty
        }
    }

    static func measure(
        _ settings: Settings, servers: [ServerAddress], relays: [RelayProcess], group: MultiThreadedEventLoopGroup,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> [Row] {
        var ignored = 0.0
        return try await measure(
            settings, servers: servers, relays: relays, group: group, log: log, postgres: { 0 }, postgresCPU: &ignored)
    }

    static func measure(
        _ settings: Settings, servers: [ServerAddress], relays: [RelayProcess], group: MultiThreadedEventLoopGroup,
        log: @escaping @Sendable (String) -> Void, postgres: () -> Double, postgresCPU: inout Double
    ) async throws -> [Row] {
        let tally = MessagingBench.Tally(users: settings.users)
        let (identities, clients) = try await MessagingBench.logIn(
            users: settings.users, servers: servers, group: group, tally: tally)
        let recipients = identities.indices.map { ($0 + 1) % settings.users }
        let blobs = MessagingBench.blobs(identities, recipients: recipients)
        var rows: [Row] = []
        var serial = 0
        for rate in settings.rates {
            log("cluster: \(rate) a second on \(servers.count) node(s)")
            let before = relays.map { $0.cpuSeconds() }.reduce(0, +)
            let postgresBefore = postgres()
            let result = try await MessagingBench.offer(
                rate: rate, seconds: settings.seconds, serial: &serial, clients: clients,
                recipients: recipients.map { identities[$0].name }, blobs: blobs, tally: tally)
            let cpu = (relays.map { $0.cpuSeconds() }.reduce(0, +) - before) / result.elapsed
            postgresCPU = (postgres() - postgresBefore) / result.elapsed
            rows.append(Row(rate: rate, cells: result.row(rate: rate, cpu: cpu), result: result))
        }
        for client in clients { await client.close() }
        return rows
    }

    /// CPU seconds of every process of the PostgreSQL server (its postmaster and backends), from /proc.
    static func postgresCPUSeconds(_ server: PostgresServer) -> Double {
        let pidFile = server.directory + "/data/postmaster.pid"
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let master = Int32(text.split(separator: "\n").first ?? "")
        else { return 0 }
        var total = 0.0
        let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in all {
            guard let pid = Int32(entry) else { continue }
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { continue }
            // After the command's closing parenthesis: state, ppid, … utime (14th field), stime (15th).
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, pid == master || Int32(fields[1]) == master else { continue }
            let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
            total += ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        return total
    }

    /// pgbench sending `pg_notify` on the bus's channel (which the three nodes listen on) with payloads of a few
    /// sizes: notifications a second.
    static func notificationRate(postgres: PostgresServer, database: String, folder: String) async throws
        -> [(bytes: Int, rate: Double)]
    {
        var results: [(Int, Double)] = []
        for bytes in [200, 2_000, 7_900] {
            // A batch the nodes decode and find empty: they do the work of reading it, and nothing else.
            let filler = String(repeating: "x", count: max(0, bytes - 60))
            let payload = #"{"node":"bench","sent":0,"events":[],"pad":"\#(filler)"}"#
            let script = folder + "/notify-\(bytes).sql"
            try "SELECT pg_notify('parley_bus', '\(payload)');\n".write(
                toFile: script, atomically: true, encoding: .utf8)
            let result = try await runBlocking {
                try ChildProcess.run(
                    "/usr/bin/env",
                    [
                        "PGPASSWORD=\(PostgresServer.password)", PostgresServer.binaries + "/pgbench", "-h",
                        "127.0.0.1",
                        "-p", "\(postgres.port)", "-U", PostgresServer.user, "-n", "-c", "4", "-j", "2", "-T", "5",
                        "-f", script, database,
                    ], timeout: .seconds(30))
            }
            guard let match = result.output.firstMatch(of: /tps = ([0-9.]+)/), let rate = Double(match.1) else {
                throw RelayBenchError.relayDidNotStart("pgbench printed no rate: \(result.output)")
            }
            results.append((bytes, rate))
        }
        return results
    }

    /// Times of joins straight to the room's node against joins through another node that redirects them.
    static func joinTimes(nodes: [RelayProcess], count: Int) throws
        -> (direct: (p50: String, p95: String), redirected: (p50: String, p95: String))
    {
        // The room is placed by its first join (on the least-loaded node); later joins find it.
        let placed = try SignalingSocket(port: nodes[0].signalingPort).joinFollowingRedirect(
            room: "bench-join", name: "anchor")
        let home = placed.port
        let other = nodes.map(\.signalingPort).first { $0 != home }!
        var direct: [Double] = []
        var redirected: [Double] = []
        for index in 0..<count {
            for (port, into) in [(home, 0), (other, 1)] {
                let start = ContinuousClock.now
                let joined = try SignalingSocket(port: port).joinFollowingRedirect(
                    room: "bench-join", name: "m\(index)x\(into)")
                let took = seconds(ContinuousClock.now - start) * 1000
                if into == 0 { direct.append(took) } else { redirected.append(took) }
                withExtendedLifetime(joined.socket) {}
            }
        }
        func quantiles(_ values: [Double]) -> (p50: String, p95: String) {
            let at = { (p: Double) in Sample.percentile(values, p).map { formatted($0, decimals: 1) + " ms" } ?? "n/a" }
            return (at(0.5), at(0.95))
        }
        withExtendedLifetime(placed.socket) {}
        return (quantiles(direct), quantiles(redirected))
    }

    /// Runs blocking work on a thread of its own, off the caller's.
    static func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await onOwnThread(body)
    }
}
