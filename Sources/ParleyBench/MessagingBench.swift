import Foundation
import NIOPosix
import ParleyEngine
import ParleySecurity
import ParleyWire
import Synchronization

/// `parley-bench messaging`: direct messages through one `parley serve` (its own process, SQLite in a fresh state
/// folder) with 100 logged-in users on loopback: messages stored a second and delivery latency at offered rates,
/// and a 10,000-message backlog delivered and opened at login.
public enum MessagingBench {
    /// What to run.
    public struct Settings: Sendable {
        public var users = 100
        /// Offered rates, messages a second over all users (each user at most 200: the relay's request limit).
        public var rates = [5_000, 15_000]
        public var seconds = 5.0
        public var backlog = 10_000

        public init() {}

        /// PARLEY_MSG_SECONDS and PARLEY_MSG_BACKLOG shorten a run; PARLEY_MSG_RATES (e.g. "1000,5000") picks the rates.
        public static func fromEnvironment() -> Settings {
            var settings = Settings()
            let environment = ProcessInfo.processInfo.environment
            if let text = environment["PARLEY_MSG_SECONDS"], let value = Double(text), value >= 1 {
                settings.seconds = value
            }
            if let text = environment["PARLEY_MSG_BACKLOG"], let value = Int(text), value >= 100 {
                settings.backlog = value
            }
            if let text = environment["PARLEY_MSG_RATES"] {
                let rates = text.split(separator: ",").compactMap { Int($0) }.filter { (100...20_000).contains($0) }
                if !rates.isEmpty { settings.rates = rates }
            }
            return settings
        }
    }

    /// What the clients saw, shared with their event callbacks.
    final class Tally: Sendable {
        let sentAt = Mutex<[String: ContinuousClock.Instant]>([:])
        let latencies = Mutex<[Double]>([])
        let stored = Atomic<Int>(0)
        let errors = Mutex<[String]>([])
        /// Per user: sequences delivered and not yet acknowledged.
        let unacknowledged: Mutex<[[Int64]]>

        init(users: Int) { unacknowledged = Mutex(Array(repeating: [], count: users)) }
    }

    public static func run(
        executable: String, settings: Settings = .fromEnvironment(),
        log: @escaping @Sendable (String) -> Void
    ) async throws -> [BenchTable] {
        let folder = NSTemporaryDirectory() + "parley-msg-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try RelayProcess(executable: executable, cpu: nil, extraArguments: ["--state-dir", folder])
        defer { relay.stop() }
        let server = try ServerAddress(parsing: "127.0.0.1:\(relay.signalingPort)")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { group.shutdownGracefully { _ in } }
        let tally = Tally(users: settings.users)
        let clock = ContinuousClock()

        log("messaging: \(settings.users) users log in")
        let (identities, clients) = try await logIn(
            users: settings.users, servers: [server], group: group, tally: tally)
        // Each user writes to the next; one sealed blob per pair stands for every live message (the relay stores
        // and forwards without opening, so its work is the same; the backlog below seals and opens each one).
        let blobs = blobs(identities, recipients: identities.indices.map { ($0 + 1) % settings.users })

        var table = BenchTable(
            title: "Direct messages through one relay: \(settings.users) users online on loopback, "
                + "\(Int(settings.seconds)) s at each offered rate",
            columns: [
                "Offered", "Stored (acknowledged) a second", "Delivery p50 / p99", "Relay CPU", "Errors",
                "Goal at 5,000/s: all stored, p99 ≤ 20 ms",
            ])
        var serial = 0
        for rate in settings.rates {
            log("messaging: \(rate) a second for \(settings.seconds) s")
            let cpuBefore = relay.cpuSeconds()
            let result = try await offer(
                rate: rate, seconds: settings.seconds, serial: &serial, clients: clients,
                recipients: identities.indices.map { identities[($0 + 1) % settings.users].name }, blobs: blobs,
                tally: tally)
            let cpu = (relay.cpuSeconds() - cpuBefore) / result.elapsed
            let met = result.stored == result.total && result.p99 <= 20 && result.errors.isEmpty
            table.add(result.row(rate: rate, cpu: cpu) + [rate != 5_000 ? "" : met ? "met" : "NOT met"])
        }
        table.notes = [
            "Delivery: from the sender posting the message to the recipient's client receiving it, live, through the "
                + "relay's store (each message committed, WAL, synchronous=NORMAL, before it is forwarded or acknowledged). "
                + "Recipients acknowledge what they got every 100 ms (a receipt per batch). Each user sends to the next "
                + "at the offered rate divided among them; the relay's limit is 200 requests a second per connection.",
            "Relay CPU: the `parley serve` process (one core = 100 %); the 100 clients run in this process on two event "
                + "loop threads, 2 cores in all. Past about 14,000 a second the relay's one messaging queue is the limit: "
                + "what is offered beyond it waits in line (the 15,000 row), nothing is lost.",
        ]

        // The backlog: an account offline while others leave it messages, then its login.
        log("messaging: a backlog of \(settings.backlog) for an offline account")
        let late = AccountIdentity.create(name: "late")
        let first = try await MessagingClient.connect(
            to: server, security: .insecure, identity: late, loop: group.next())
        await first.close()
        let senders = min(settings.users, max(1, settings.backlog / 300))
        try await Task.sleep(for: .seconds(2))  // the senders' request allowance refills
        tally.stored.store(0, ordering: .relaxed)
        let sealStart = clock.now
        var sealed: [(sender: Int, id: String, bytes: [UInt8])] = []
        for index in 0..<settings.backlog {
            let sender = index % senders
            let id = "b\(index)"
            sealed.append(
                (
                    sender, id,
                    DirectMessageSeal.seal(
                        "backlog message \(index)", from: identities[sender],
                        to: "late", keys: late.keys, id: id)
                ))
        }
        let sealSeconds = seconds(clock.now - sealStart)
        for (offset, message) in sealed.enumerated() {
            clients[message.sender].post(id: message.id, to: "late", sealed: message.bytes)
            // At most 200 a second per sender (the relay's request limit): spread over the senders.
            if offset % (senders * 100) == senders * 100 - 1 { try await Task.sleep(for: .milliseconds(500)) }
        }
        let storedDeadline = clock.now + .seconds(60)
        while tally.stored.load(ordering: .relaxed) < settings.backlog && clock.now < storedDeadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let storedCount = tally.stored.load(ordering: .relaxed)
        let loginStart = clock.now
        let lateClient = try await MessagingClient.connect(
            to: server, security: .insecure, identity: late,
            loop: group.next())
        let received = try await lateClient.receiveWaiting()
        let loginSeconds = seconds(clock.now - loginStart)
        let opened = received.filter { $0.text.hasPrefix("backlog message") }.count
        // In order: the relay's commit order (rising sequences), each message once.
        let inOrder =
            received.map(\.sequence) == received.map(\.sequence).sorted()
            && Set(received.map(\.id)) == Set(sealed.map(\.id)) && received.count == sealed.count
        await lateClient.close()
        var backlog = BenchTable(
            title: "A backlog delivered at login: \(settings.backlog) messages from \(senders) accounts",
            columns: ["Measure", "Value", "Goal"])
        backlog.add(["Stored while offline", "\(storedCount) of \(settings.backlog)", ""])
        backlog.add([
            "Login to every message received, opened (X25519 + Ed25519 + AES-GCM each) and acknowledged",
            "\(formatted(loginSeconds * 1000, decimals: 0)) ms (\(opened) opened, in order: \(inOrder ? "yes" : "NO"))",
            "< 1 s: " + (loginSeconds < 1 && opened == settings.backlog && inOrder ? "met" : "NOT met"),
        ])
        backlog.add([
            "Sealing them, in the senders (for comparison)",
            "\(formatted(sealSeconds * 1000, decimals: 0)) ms", "",
        ])
        backlog.notes = [
            "Delivered in pages of 200, each after the client's receipt for the previous one; the client opens each "
                + "message (sender's signature, agreement, decryption) on one thread."
        ]
        for client in clients { await client.close() }
        return [table, backlog]
    }

    /// What one offered rate got: messages stored, delivery latencies (seconds, sorted), errors.
    struct RateResult {
        var total: Int
        var stored: Int
        var elapsed: Double
        var latencies: [Double]
        var errors: [String]

        /// The `p` quantile of delivery in milliseconds, as text.
        func percentile(_ p: Double) -> String {
            guard let seconds = Sample.percentile(latencies, p) else { return "–" }
            return formatted(seconds * 1000, decimals: 1)
        }

        /// Offered, stored a second, delivery p50 / p99, CPU and errors, as table cells.
        func row(rate: Int, cpu: Double) -> [String] {
            [
                "\(rate) /s (\(total))", "\(formatted(Double(stored) / elapsed, decimals: 0)) (\(stored) of \(total))",
                "\(percentile(0.5)) / \(percentile(0.99)) ms (\(latencies.count) delivered)",
                "\(formatted(cpu * 100, decimals: 0)) %", errors.isEmpty ? "0" : "\(errors.count): \(errors[0])",
            ]
        }

        /// The 99th percentile in milliseconds (infinity when nothing arrived).
        var p99: Double {
            latencies.isEmpty
                ? .infinity : latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))] * 1000
        }
    }

    /// Offers `rate` messages a second for `seconds`, client `i` sending `blobs[i]` to `recipients[i]`, acknowledging
    /// what arrives every 100 ms; waits (up to 10 s) for the tail to be stored.
    static func offer(
        rate: Int, seconds duration: Double, serial: inout Int, clients: [MessagingClient], recipients: [String],
        blobs: [[UInt8]], tally: Tally
    ) async throws -> RateResult {
        let clock = ContinuousClock()
        tally.latencies.withLock { $0.removeAll() }
        tally.stored.store(0, ordering: .relaxed)
        tally.errors.withLock { $0.removeAll() }
        let start = clock.now
        let total = Int(Double(rate) * duration)
        let tick = 0.01
        let perTick = Double(rate) * tick
        var posted = 0
        var nextAck = start + .milliseconds(100)
        while posted < total {
            let due = min(total, Int(perTick * (seconds(clock.now - start) / tick + 1)))
            while posted < due {
                let sender = posted % clients.count
                let id = "m\(serial)"
                serial += 1
                tally.sentAt.withLock { $0[id] = clock.now }
                clients[sender].post(id: id, to: recipients[sender], sealed: blobs[sender])
                posted += 1
            }
            if clock.now >= nextAck {
                acknowledgeAll(clients, tally)
                nextAck = clock.now + .milliseconds(100)
            }
            try await Task.sleep(for: .milliseconds(Int64(tick * 1000)))
        }
        // Let the tail arrive.
        let deadline = clock.now + .seconds(10)
        while tally.stored.load(ordering: .relaxed) < total && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = seconds(clock.now - start)
        try await Task.sleep(for: .milliseconds(300))
        acknowledgeAll(clients, tally)
        for client in clients { client.discardEvents() }
        return RateResult(
            total: total, stored: tally.stored.load(ordering: .relaxed), elapsed: elapsed,
            latencies: tally.latencies.withLock { $0 }.sorted(), errors: tally.errors.withLock { $0 })
    }

    /// Logs in `users` accounts (`user0`…), user `i` on `servers[i % servers.count]`, each counting what it gets
    /// in `tally`.
    static func logIn(users: Int, servers: [ServerAddress], group: MultiThreadedEventLoopGroup, tally: Tally)
        async throws -> (identities: [AccountIdentity], clients: [MessagingClient])
    {
        let clock = ContinuousClock()
        var identities: [AccountIdentity] = []
        var clients: [MessagingClient] = []
        for index in 0..<users {
            let identity = AccountIdentity.create(name: "user\(index)")
            identities.append(identity)
            let client = try await MessagingClient.connect(
                to: servers[index % servers.count], security: .insecure, identity: identity, loop: group.next()
            ) { event in
                switch event {
                case .message(let delivery):
                    let now = clock.now
                    if let sent = tally.sentAt.withLock({ $0.removeValue(forKey: delivery.id) }) {
                        tally.latencies.withLock { $0.append(seconds(now - sent)) }
                    }
                    tally.unacknowledged.withLock { $0[index].append(delivery.sequence) }
                case .stored:
                    tally.stored.add(1, ordering: .relaxed)
                case .error(let error):
                    tally.errors.withLock { if $0.count < 10 { $0.append("\(error)") } }
                default:
                    break
                }
            }
            clients.append(client)
        }
        return (identities, clients)
    }

    /// One sealed blob per sender, to the recipient of each (the relay stores and forwards without opening, so one
    /// blob per pair stands for every live message).
    static func blobs(_ identities: [AccountIdentity], recipients: [Int]) -> [[UInt8]] {
        identities.indices.map { index in
            let next = identities[recipients[index]]
            return DirectMessageSeal.seal(
                String(repeating: "a typical short message ", count: 3), from: identities[index], to: next.name,
                keys: next.keys, id: "blob")
        }
    }

    static func acknowledgeAll(_ clients: [MessagingClient], _ tally: Tally) {
        for (index, client) in clients.enumerated() {
            let pending = tally.unacknowledged.withLock { lists in
                defer { lists[index].removeAll(keepingCapacity: true) }
                return lists[index]
            }
            if !pending.isEmpty { client.acknowledge(pending) }
        }
    }
}
