import ArgumentParser
import Foundation
import Logging
import ParleyBus
import ParleyEngine
import ParleyPostgres
import ParleyRelay
import ParleySecurity
import ParleyStore
import ParleyWire
import Synchronization

/// `parley serve`: the relay.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a Parley relay: WebSocket signaling on TCP and RTP forwarding on UDP, same port number.")

    @Option(help: "Interface to listen on.")
    var host = "127.0.0.1"

    @Option(parsing: .unconditional, help: "TCP port for signaling; media uses the same UDP port (0 picks free ports).")
    var port = 7878

    @Option(parsing: .unconditional, help: "Seconds of signaling silence after which a member is removed.")
    var liveness = 10.0

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: "Write logs to this file instead of standard error.")
    var log: String?

    @Option(
        name: .customLong("tls-cert"),
        help: "TLS certificate (chain) for signaling, PEM. Without it the relay uses a self-signed one.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "Private key of --tls-cert, PEM.")
    var tlsKey: String?

    @Option(
        name: .customLong("state-dir"),
        help: "Where the self-signed certificate is kept (default: $XDG_STATE_HOME/parley, or ~/.local/state/parley).")
    var stateDir: String?

    @Flag(
        help:
            "Serve signaling as plain ws:// without TLS: anyone on the network can read chat, names and media credentials."
    )
    var insecure = false

    @Option(
        help: "Rooms file: one room a line, `NAME [password=TEXT|verifier=HEX] [stage=open|host] [record=yes|no]`.")
    var rooms: String?

    @Option(
        name: .customLong("join-timeout"), parsing: .unconditional,
        help: "Seconds a WebSocket may stay open without joining a room.")
    var joinTimeout = 10.0

    @Option(
        name: .customLong("max-connections-per-address"), parsing: .unconditional,
        help: "Open signaling connections one IP address may hold.")
    var maxConnectionsPerAddress = 16

    @Option(
        name: .customLong("max-connections"),
        parsing: .unconditional,
        help:
            "Open signaling connections in all (default: what the file descriptor limit allows, 64 kept for the relay)."
    )
    var maxConnections: Int?

    @Option(name: .customLong("max-rooms"), parsing: .unconditional, help: "Rooms the relay holds at once.")
    var maxRooms = 1000

    @Option(name: .customLong("max-members"), parsing: .unconditional, help: "Members one room may hold.")
    var maxMembers = 50

    @Option(
        name: .customLong("max-message-bytes"), parsing: .unconditional,
        help: "Bytes one signaling message may have (at most 16384).")
    var maxMessageBytes = 16384

    @Option(
        name: .customLong("max-chat-characters"), parsing: .unconditional,
        help: "Characters one chat line may have (at most 2000).")
    var maxChatCharacters = 2000

    @Option(
        name: .customLong("max-member-kbps"),
        parsing: .unconditional,
        help: "RTP one member may send, kbit/s (0: no limit); beyond it packets are dropped and counted.")
    var maxMemberKbps = 3200

    @Option(
        name: .customLong("max-store-mb"),
        parsing: .unconditional,
        help:
            "Size the accounts and direct messages may take on disk, MiB; past it new messages are refused as the store being full."
    )
    var maxStoreMB = 4096

    @Option(
        help:
            "Keep accounts and messages in PostgreSQL, shared by several relays: postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=…] (default: $PARLEY_DATABASE_URL; without either, SQLite in --state-dir)."
    )
    var database: String?

    @Option(
        name: .customLong("database-password-file"),
        help: "A file whose first line is the PostgreSQL password (else the URL's, else PGPASSFILE or ~/.pgpass).")
    var databasePasswordFile: String?

    @Option(
        name: .customLong("node-id"),
        help: "This relay's id in a cluster sharing --database (default: HOST:PORT as it listens).")
    var nodeID: String?

    @Option(
        help:
            "The HOST:PORT clients reach this node at, for redirects from the other nodes of a cluster (default: --host and the port)."
    )
    var advertise: String?

    @Option(
        name: .customLong("cluster-secret-file"),
        help:
            "A file (mode 600) whose first line is the secret every node of the cluster shares: it authenticates the trunks between nodes (make one with: openssl rand -hex 32)."
    )
    var clusterSecretFile: String?

    @Option(
        name: .customLong("trunk-port"),
        parsing: .unconditional,
        help:
            "UDP port of the trunks to the cluster's other nodes, with --cluster-secret-file (default 0: any free port)."
    )
    var trunkPort = 0

    @Option(
        help:
            "Where a cluster's rooms live: spread (a room spans the nodes its members reach, media cascaded over the trunks; the default with --cluster-secret-file) or single (each room on one node, joins sent there; the default without)."
    )
    var placement: String?

    @Option(
        help:
            "Serve /metrics (Prometheus text) and /healthz on this HOST:PORT, e.g. 127.0.0.1:9100 (default: not served; never on --port)."
    )
    var admin: String?

    @Option(
        name: .customLong("drain-seconds"),
        parsing: .unconditional,
        help:
            "On SIGTERM (or parley cluster drain), a node whose rooms span the cluster moves its members to the other nodes and stops once they left, or after this many seconds."
    )
    var drainSeconds = 30

    /// Whether rooms span the cluster's nodes (`--placement spread`).
    var spreadsRooms: Bool { (placement ?? (clusterSecretFile != nil ? "spread" : "single")) == "spread" }

    func validate() throws {
        if let nodeID {
            guard !nodeID.isEmpty, nodeID.utf8.count <= 128, nodeID.allSatisfy({ !$0.isWhitespace && !$0.isNewline })
            else {
                throw ValidationError("--node-id must be 1…128 bytes without spaces, got \"\(nodeID.prefix(140))\"")
            }
        }
        if let advertise {
            do {
                _ = try ServerAddress(parsing: advertise)
            } catch {
                throw ValidationError("--advertise \(advertise.prefix(140)): \(error)")
            }
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError(
                "--tls-cert and --tls-key go together: give both, or neither for a self-signed certificate")
        }
        if insecure, tlsCert != nil {
            throw ValidationError("--insecure serves without TLS: drop it, or drop --tls-cert and --tls-key")
        }
        guard joinTimeout >= 1, joinTimeout <= 600 else {
            throw ValidationError("--join-timeout must be 1…600 seconds, got \(joinTimeout)")
        }
        for (name, value, range) in [
            ("--max-connections-per-address", maxConnectionsPerAddress, 1...100_000),
            ("--max-rooms", maxRooms, 1...1_000_000),
            ("--max-members", maxMembers, 2...10_000), ("--max-member-kbps", maxMemberKbps, 0...1_000_000),
            ("--max-message-bytes", maxMessageBytes, 1024...16_384),
            ("--max-chat-characters", maxChatCharacters, 1...2000),
            ("--max-store-mb", maxStoreMB, 1...1_000_000),
        ] where !range.contains(value) {
            throw ValidationError("\(name) must be \(range.lowerBound)…\(range.upperBound), got \(value)")
        }
        if let maxConnections, !(1...10_000_000).contains(maxConnections) {
            throw ValidationError("--max-connections must be 1…10000000, got \(maxConnections)")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, got \(port)") }
        guard (0...65535).contains(trunkPort) else {
            throw ValidationError("--trunk-port must be 0…65535, got \(trunkPort)")
        }
        if clusterSecretFile != nil, database == nil, ProcessInfo.processInfo.environment["PARLEY_DATABASE_URL"] == nil
        {
            throw ValidationError(
                "--cluster-secret-file is for a cluster: give --database (or PARLEY_DATABASE_URL) too")
        }
        if let placement {
            guard placement == "spread" || placement == "single" else {
                throw ValidationError("--placement must be spread or single, got \"\(placement.prefix(40))\"")
            }
            if database == nil, ProcessInfo.processInfo.environment["PARLEY_DATABASE_URL"] == nil {
                throw ValidationError("--placement is for a cluster: give --database (or PARLEY_DATABASE_URL) too")
            }
            if placement == "spread", clusterSecretFile == nil {
                throw ValidationError(
                    "--placement spread carries media between nodes over trunks: give --cluster-secret-file too")
            }
        }
        guard (0...3600).contains(drainSeconds) else {
            throw ValidationError("--drain-seconds must be 0…3600, got \(drainSeconds)")
        }
        guard liveness >= 1, liveness <= 600 else {
            throw ValidationError("--liveness must be 1…600 seconds, got \(liveness)")
        }
        _ = try LogSetup.level(logLevel)
        if let admin {
            do { _ = try AdminAddress(parsing: admin) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        let level = try LogSetup.level(logLevel)
        if let log { try LogSetup.toFile(log, level: level) } else { LogSetup.toStandardError(level: level) }
        let logger = Logger(label: "parley.relay")
        let signals = Signals()
        var configuration = try relayConfiguration(logger: logger)
        let stores: Stores
        do {
            stores = try await openStores(&configuration)
        } catch {
            throw CommandFailure("\(error)")
        }
        let webNote = configuration.loadWebPage(selfSigned: tlsCert == nil)
        let clusterLag = ClusterLag()
        if stores.clusterSettings != nil {
            configuration.busLag = { clusterLag.read() }
            configuration.clusterCounters = { clusterLag.counters() }
        }
        let relay: Relay
        do {
            relay = try await Relay.start(configuration)
        } catch {
            throw CommandFailure("\(error)")
        }
        let scheme = configuration.tls == nil ? "ws, INSECURE: no TLS" : "wss"
        say(
            "parley relay listening on \(host):\(relay.signalingPort) (signaling \(scheme), media udp \(relay.mediaPort))"
        )
        if let identity = configuration.tls {
            say(
                "TLS fingerprint \(identity.fingerprint) (\(stores.certificateNote)); members compare it with what they pinned"
            )
        }
        say(webNote(relay.signalingPort))
        if !configuration.rooms.isEmpty { say("rooms file \(rooms ?? ""): \(configuration.rooms.count) rooms") }
        say(stores.storeNote)
        var cluster: PostgresCluster?
        if let clusterSettings = stores.clusterSettings, let messaging = relay.messaging {
            cluster = try await joinCluster(
                clusterSettings, secret: stores.clusterSecret, relay: relay, messaging: messaging,
                fileRooms: configuration.rooms, clusterLag: clusterLag)
        }
        if let address = configuration.admin, let adminPort = relay.adminPort {
            say(
                "admin endpoints /metrics and /healthz on http://\(AdminAddress(host: address.host, port: adminPort)) "
                    + "(keep them off the internet)")
        }
        let signal = await signals.wait()
        if signal == SIGTERM, cluster != nil, spreadsRooms, drainSeconds > 0 {
            await drain(relay)
        }
        cluster?.stop()
        let counters = try? await relay.counters()
        logger.info("shutting down", metadata: ["signal": "\(signal)"])
        await relay.shutdown()
        if let counters {
            say(
                """
                relay stopped: forwarded \(counters.packetsForwarded) packets, dropped \(counters.packetsDropped), \
                refused \(counters.signalingErrors) signaling messages, rate-limited \(counters.rateLimited)
                """)
        }
    }

    /// The relay's limits, media limits and admin address from the options.
    private func relayConfiguration(logger: Logger) throws -> RelayConfiguration {
        var limits = SignalingLimits(livenessTimeout: .milliseconds(Int64(liveness * 1000)))
        limits.joinTimeout = .milliseconds(Int64(joinTimeout * 1000))
        limits.connectionsPerAddress = maxConnectionsPerAddress
        // Each connection is a file descriptor: the relay takes what the hard limit allows and stays below it.
        let descriptors = DescriptorBudget.raiseSoftLimit()
        let budget = descriptors.map { DescriptorBudget.connections(descriptors: $0) } ?? 100_000
        limits.connections = min(maxConnections ?? budget, budget)
        if let maxConnections, maxConnections > budget {
            say(
                "--max-connections \(maxConnections) is more than \(descriptors ?? 0) file descriptors allow "
                    + "(ulimit -n): holding at most \(budget)")
        }
        limits.rooms = maxRooms
        limits.membersPerRoom = maxMembers
        limits.messageBytes = maxMessageBytes
        limits.chatCharacters = maxChatCharacters
        var media = MediaLimits()
        media.memberKbps = maxMemberKbps
        var configuration = RelayConfiguration(host: host, port: port, limits: limits, media: media, logger: logger)
        configuration.admin = try admin.map { try AdminAddress(parsing: $0) }
        return configuration
    }

    /// What `openStores` opened, and the lines that say so.
    private struct Stores {
        var storeNote: String
        var certificateNote = ""
        /// The cluster's database, with `--database` (or PARLEY_DATABASE_URL).
        var clusterSettings: DatabaseSettings?
        var clusterSecret: ClusterSecret?
    }

    /// Opens the message store (SQLite in the state folder, or PostgreSQL), the room hosts, the rooms file, the
    /// cluster secret and the TLS identity.
    private func openStores(_ configuration: inout RelayConfiguration) async throws -> Stores {
        let directory = stateDir ?? LogSetup.stateDirectory
        let messagesPath = directory + "/messages.sqlite"
        var stores = Stores(storeNote: "accounts and direct messages kept in \(messagesPath)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let databaseURL = database ?? ProcessInfo.processInfo.environment["PARLEY_DATABASE_URL"] {
            let settings = try DatabaseSettings(
                url: databaseURL, passwordFile: databasePasswordFile,
                environment: ProcessInfo.processInfo.environment)
            let (store, schema) = try await PostgresMessageStore.open(settings, maximumBytes: maxStoreMB << 20)
            configuration.messageStore = store
            stores.clusterSettings = settings
            stores.storeNote =
                "accounts and direct messages kept in PostgreSQL \(settings.redacted) (schema version \(schema.to)"
                + (schema.from == schema.to ? ")" : ", migrated from \(schema.from))")
        } else {
            configuration.messageStore = try SQLiteMessageStore(path: messagesPath, maximumBytes: maxStoreMB << 20)
        }
        if let clusterSecretFile { stores.clusterSecret = try ClusterSecret.load(path: clusterSecretFile) }
        configuration.roomHosts = RoomHostsFile(path: directory + "/room-hosts.json")
        if let rooms { configuration.rooms = try RoomsFile.load(path: rooms) }
        if let tlsCert, let tlsKey {
            configuration.tls = try RelayIdentity.load(certificate: tlsCert, key: tlsKey)
            stores.certificateNote = "certificate \(tlsCert)"
        } else if !insecure {
            let (identity, created) = try RelayIdentity.loadOrCreate(in: directory, hosts: [host])
            configuration.tls = identity
            stores.certificateNote =
                created
                ? "new self-signed certificate saved in \(directory)" : "self-signed certificate from \(directory)"
        }
        return stores
    }

    /// Joins the cluster in `settings` (trunks to the other nodes with a cluster secret), places or spans rooms,
    /// and says how; the relay is shut down when it cannot.
    private func joinCluster(
        _ settings: DatabaseSettings, secret: ClusterSecret?, relay: Relay, messaging: MessagingService,
        fileRooms: [String: ConfiguredRoom], clusterLag: ClusterLag
    ) async throws -> PostgresCluster {
        let address = "\(host):\(relay.signalingPort)"
        var trunk: String?
        if let secret {
            do {
                let gate = try TrunkGate(
                    nodeID: nodeID ?? address, boot: Int64(Date().timeIntervalSince1970 * 1000), secret: secret)
                let trunkPort = try await relay.openTrunks(gate: gate, host: host, port: self.trunkPort)
                let advertisedHost = (try? ServerAddress(parsing: advertise ?? address))?.host ?? host
                trunk = "\(advertisedHost):\(trunkPort)"
            } catch {
                await relay.shutdown()
                throw CommandFailure("\(error)")
            }
        }
        let hasTrunks = trunk != nil
        let myID = nodeID ?? address
        let cluster: PostgresCluster
        do {
            cluster = try await PostgresCluster.join(
                settings, nodeID: myID, advertise: advertise ?? address, trunk: trunk,
                logger: Logger(label: "parley.cluster"), load: NodeLoadMeter(relay: relay).read,
                deliver: { [clusterLag] events, node in
                    if events.contains(.roomSettingsChanged), let cluster = clusterLag.cluster.withLock({ $0 }) {
                        Task { await Self.applyRoomSettings(from: cluster, to: relay, fileRooms: fileRooms) }
                    }
                    relay.clusterEvents(events, from: node)
                    messaging.clusterEvents(events, from: node)
                    // `parley cluster drain` this node: as SIGTERM.
                    if events.contains(.drainNode(myID)) { kill(getpid(), SIGTERM) }
                },
                caughtUp: { presence in
                    messaging.clusterCaughtUp(presence: presence)
                    relay.busConnected()
                },
                revived: { messaging.clusterRevived() },
                peers: { peers in
                    guard hasTrunks else { return }
                    Task { try? await relay.setTrunkPeers(peers) }
                })
        } catch {
            await relay.shutdown()
            throw CommandFailure("\(error)")
        }
        messaging.attach(cluster: cluster)
        clusterLag.cluster.withLock { $0 = cluster }
        await Self.applyRoomSettings(from: cluster, to: relay, fileRooms: fileRooms)
        if spreadsRooms {
            try? await relay.spanRooms(over: cluster)
        } else {
            try? await relay.placeRooms(with: cluster)
        }
        say("cluster node \(myID), clients sent to \(advertise ?? address)")
        say(
            spreadsRooms
                ? "rooms span the nodes their members reach (--placement spread)"
                : "each room lives on one node; joins are sent there (--placement single)")
        if let trunk, let clusterSecretFile {
            say("trunks to the other nodes on udp \(trunk) (cluster secret from \(clusterSecretFile))")
        }
        return cluster
    }
}

extension Serve {
    /// Moves the members to the other nodes and waits until they left, at most `--drain-seconds`.
    func drain(_ relay: Relay) async {
        let told = (try? await relay.drain()) ?? 0
        say(
            "draining: \(told) member\(told == 1 ? "" : "s") told to move to the other nodes (at most \(drainSeconds) s)"
        )
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(drainSeconds) {
            guard let left = try? await relay.localMembers(), left > 0 else { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        let left = (try? await relay.localMembers()) ?? 0
        say(
            left == 0
                ? "drained after \((ContinuousClock.now - start).spokenSeconds): every member moved"
                : "drain time over: \(left) member\(left == 1 ? "" : "s") still here")
    }

    /// Reads the rooms' settings the cluster keeps (`parley cluster rooms load`) and gives them to the relay, under
    /// the rooms of this node's own `--rooms` file, which win for the rooms they name.
    static func applyRoomSettings(
        from cluster: PostgresCluster, to relay: Relay, fileRooms: [String: ConfiguredRoom]
    ) async {
        let logger = Logger(label: "parley.cluster")
        do {
            let lines = try await cluster.roomLines()
            var rooms = try RoomsFile.parse(lines.joined(separator: "\n"), source: "the cluster's rooms")
            rooms.merge(fileRooms) { _, file in file }
            try await relay.configureRooms(rooms)
            logger.notice("rooms' settings from the cluster applied", metadata: ["rooms": "\(lines.count)"])
        } catch {
            logger.warning("rooms' settings from the cluster not applied", metadata: ["reason": "\(error)"])
        }
    }
}

/// `parley relays`: the relays this user has pinned, and forgetting one whose certificate legitimately changed.
struct Relays: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List pinned relay certificates, or forget one (`parley relays forget HOST:PORT`).")

    @Argument(help: "\"list\" (default) or \"forget\".")
    var action = "list"

    @Argument(help: "The relay to forget, HOST:PORT.")
    var relay: String?

    @Option(
        name: .customLong("known-relays"),
        help: "File of pinned relay certificates (default: $XDG_CONFIG_HOME/parley/known_relays).")
    var knownRelays: String?

    func validate() throws {
        switch action {
        case "list": guard relay == nil else { throw ValidationError("`parley relays list` takes no relay") }
        case "forget": guard relay != nil else { throw ValidationError("say which: `parley relays forget HOST:PORT`") }
        default: throw ValidationError("unknown action \"\(action)\": use list or forget")
        }
    }

    func run() async throws {
        let path = knownRelays ?? RelayTrustStore.defaultPath()
        do {
            let store = try RelayTrustStore(path: path)
            if let relay {
                let address = try ServerAddress(parsing: relay)
                say(
                    try store.forget(address.description)
                        ? "forgot \(address) in \(path); the next connection pins the certificate it shows then"
                        : "\(address) is not pinned in \(path)")
            } else {
                let pins = store.known.pins
                if pins.isEmpty { say("no relays pinned in \(path)") }
                for relay in pins.keys.sorted() { say("\(relay) \(pins[relay]!)") }
            }
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

/// Measures this relay's load for the cluster's registry: members and rooms now, packets forwarded and CPU used
/// since the last reading.
final class NodeLoadMeter: Sendable {
    private let relay: Relay
    private let last = Mutex<(time: ContinuousClock.Instant, packets: Int, cpu: Double)?>(nil)

    init(relay: Relay) { self.relay = relay }

    func read() async -> NodeLoad {
        // The members and rooms `/metrics` shows: this node's own (another node's member counts there).
        let sample = try? await relay.sample()
        let packets = sample?.counters.packetsForwarded ?? 0
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let now = ContinuousClock.now
        let previous = last.withLock { last in
            defer { last = (now, packets, cpu) }
            return last
        }
        var load = NodeLoad(
            members: sample?.members ?? 0, rooms: sample?.rooms ?? 0, trunksUp: sample?.counters.trunksUp ?? 0)
        if let previous {
            let elapsed = now - previous.time
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if seconds > 0 {
                load.packetsPerSecond = Double(packets - previous.packets) / seconds
                load.cpu = (cpu - previous.cpu) / seconds
            }
        }
        return load
    }
}

/// The bus lag `/metrics` shows: the delay of the last batch of events the cluster's bus brought, once joined.
final class ClusterLag: Sendable {
    let cluster = Mutex<PostgresCluster?>(nil)

    func read() -> Duration? {
        cluster.withLock { $0 }.map { .milliseconds(Int64($0.counters.busLagSeconds * 1000)) }
    }

    /// The cluster's counters for `/metrics`, once joined.
    func counters() -> ClusterCounters? {
        guard let figures = cluster.withLock({ $0 })?.counters else { return nil }
        var counters = ClusterCounters()
        counters.heartbeatsFailed = figures.failedHeartbeats
        counters.nodesReaped = figures.reaped
        counters.revivals = figures.revivals
        counters.eventsPublished = figures.published
        counters.eventsReceived = figures.received
        counters.eventsDropped = figures.dropped
        counters.busConnections = figures.busConnections
        return counters
    }
}

extension RelayConfiguration {
    /// Reads the browser guests' page from the resources folder (Resources/web) into `webPage`; the line to print
    /// once the relay listens says where guests go, or why there is no page.
    mutating func loadWebPage(selfSigned: Bool) -> @Sendable (Int) -> String {
        do {
            webPage = try WebPage(folder: try BundledResources.path("web"))
        } catch {
            let reason = "\(error)"
            webPage = WebPage(missing: reason)
            return { _ in "no page for browser guests: \(reason)" }
        }
        let host = ["0.0.0.0", "::", ""].contains(host) ? "HOST" : host
        guard let identity = tls else {
            return { port in "browser guests join at http://\(host):\(port)/ROOM (no TLS: only from this machine)" }
        }
        let advice =
            selfSigned
            ? "; the certificate is self-signed, so a browser warns once: proceed if its SHA-256 fingerprint is "
                + "\(identity.fingerprint.hex) (or serve a real one with --tls-cert)"
            : ""
        return { port in "browser guests join at https://\(host):\(port)/ROOM" + advice }
    }
}
