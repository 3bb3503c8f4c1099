import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `parley serve --admin`, the real binary: `/metrics` and `/healthz` over real TCP while two bots are in a call,
/// garbage answered with an error and the server answering afterwards, and the public port refused with one line.
@Suite(.serialized, .lane(.database))
struct AdminEndpointProcessTests {
    /// An HTTP answer as read off the socket.
    struct Answer {
        var status: Int
        var head: String
        var body: String
    }

    /// Writes `request` to 127.0.0.1:`port` and reads until the server closes (or 10 s pass), on a thread of its own.
    static func exchange(_ request: [UInt8], port: Int) async throws -> Answer {
        let raw = try await onOwnThread { try Self.exchangeBlocking(request, port: port) }
        let parts = raw.components(separatedBy: "\r\n\r\n")
        let head = parts.first ?? ""
        let statusWord = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        return Answer(
            status: Int(statusWord) ?? -1, head: head, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    static func get(_ path: String, port: Int) async throws -> Answer {
        try await exchange(
            Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8), port: port)
    }

    struct SocketFailure: Error, CustomStringConvertible {
        var description: String
    }

    private static func exchangeBlocking(_ request: [UInt8], port: Int) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw SocketFailure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            throw SocketFailure(description: "connect to \(port): \(String(cString: strerror(errno)))")
        }
        // A server that refuses a request part-way may close before all of it is sent: what it answered is still
        // read below.
        _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 { answer += buffer[0..<count] } else if count == 0 || errno != EINTR { break }
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Polls a process's output with Task.sleep until `text` shows up (or it exits, or `seconds` pass).
    static func waitFor(_ text: String, in process: BackgroundProcess, seconds: Double = 20) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if process.output.contains(text) { return true }
            if process.exitStatusNow() != nil { return process.output.contains(text) }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Stops processes on a thread of their own (stopping waits for each to exit).
    static func stop(_ processes: [BackgroundProcess]) async {
        await onOwnThread { for process in processes { process.stop() } }
    }

    /// Runs `parley ARGUMENTS` to its end, off the test's thread.
    static func parley(_ arguments: [String]) async throws -> ChildProcess.Result {
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        return try await onOwnThread { try ChildProcess.run(binary, arguments, timeout: .seconds(30)) }
    }

    /// The lines a failed start printed: exactly one, and the exit status non-zero.
    static func expectOneLineFailure(_ result: ChildProcess.Result, containing text: String) {
        let lines = result.output.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(result.status != 0 && !result.timedOut, "\(result.status): \(result.output)")
        #expect(lines.count == 1, "one line: \(result.output)")
        #expect(result.output.contains(text), "\(result.output)")
    }

    /// The samples of a `/metrics` body, by series.
    static func samples(_ body: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            let words = line.split(separator: " ")
            if words.count == 2, let value = Double(words[1]) { samples[String(words[0])] = value }
        }
        return samples
    }

    @Test func metricsAndHealthOverTCPFollowACallAndSurviveGarbage() async throws {
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        let state = NSTemporaryDirectory() + "parley-admin-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let relay = try BackgroundProcess(
            binary, ["serve", "--port", "0", "--insecure", "--state-dir", state, "--admin", "127.0.0.1:0"])
        var processes = [relay]
        do {
            #expect(try await Self.waitFor("admin endpoints /metrics and /healthz on http://127.0.0.1:", in: relay))
            let relayPort = try #require(
                relay.output.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }, "\(relay.output)")
            let adminPort = try #require(
                relay.output.firstMatch(of: /admin endpoints \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/)
                    .flatMap { Int($0.1) }, "\(relay.output)")
            #expect(adminPort != relayPort)

            let health = try await Self.get("/healthz", port: adminPort)
            #expect(health.status == 200, "\(health.head)")
            #expect(health.body == #"{"node":"up","status":"ok","store":"reachable"}"# + "\n")
            var metrics = try await Self.get("/metrics", port: adminPort)
            #expect(metrics.status == 200)
            #expect(metrics.head.contains("Content-Type: text/plain; version=0.0.4"), "\(metrics.head)")
            var samples = Self.samples(metrics.body)
            #expect(samples["parley_members"] == 0 && samples["parley_rooms"] == 0, "\(metrics.body)")
            #expect(metrics.body.contains("# TYPE parley_packets_forwarded_total counter"))
            // The public port does not serve them: /metrics there is the page of a room called "metrics".
            let publicMetrics = try await Self.get("/metrics", port: relayPort)
            #expect(publicMetrics.status == 200 && !publicMetrics.body.contains("parley_"), "\(publicMetrics.head)")

            // Two bots in one room: the gauges say so, and the forwarded packets rise from one scrape to the next.
            for name in ["alice", "bob"] {
                processes.append(
                    try BackgroundProcess(
                        binary,
                        [
                            "bot", "admin-room", "--server", "127.0.0.1:\(relayPort)", "--insecure", "--name", name,
                            "--no-decode", "--profile", "160x120",
                        ]))
            }
            var inCall = false
            for _ in 0..<150 where !inCall {
                try await Task.sleep(for: .milliseconds(200))
                samples = Self.samples(try await Self.get("/metrics", port: adminPort).body)
                inCall =
                    samples["parley_members"] == 2 && samples["parley_rooms"] == 1
                    && (samples["parley_packets_forwarded_total"] ?? 0) > 0
            }
            #expect(inCall, "members, rooms, forwarded: \(samples.filter { !$0.key.contains("store") })")
            let forwarded = samples["parley_packets_forwarded_total"] ?? 0
            try await Task.sleep(for: .seconds(1))
            metrics = try await Self.get("/metrics", port: adminPort)
            let later = Self.samples(metrics.body)["parley_packets_forwarded_total"] ?? 0
            #expect(later > forwarded, "forwarded \(forwarded) then \(later)")

            // Garbage, a wrong method and a wrong path: each an error status; the server answers afterwards.
            let garbage = try await Self.exchange(Array("\u{1}\u{2}NOT HTTP AT ALL\r\n\r\n".utf8), port: adminPort)
            #expect(garbage.status == 400, "\(garbage.head)")
            let huge = try await Self.exchange(
                Array("GET /metrics HTTP/1.1\r\nX-Filler: \(String(repeating: "a", count: 200_000))\r\n\r\n".utf8),
                port: adminPort)
            // NIO's parser stops at 80 KiB of head and answers 400; the server closing with the rest of the head
            // unread may reset the connection before the client reads that answer, so an empty answer counts too.
            #expect(
                (400..<500).contains(huge.status) || huge.head.isEmpty, "an oversized head: \(huge.head.prefix(200))")
            let post = try await Self.exchange(
                Array("POST /metrics HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi".utf8),
                port: adminPort)
            #expect(post.status == 405 && post.head.contains("Allow: GET"), "\(post.head)")
            #expect(try await Self.get("/", port: adminPort).status == 404)
            #expect(try await Self.get("/healthz", port: adminPort).status == 200)
            #expect(relay.exitStatusNow() == nil, "the relay is still running")

            // The bots leave: the gauges go back to zero.
            await Self.stop(Array(processes.dropFirst()))
            var empty = false
            for _ in 0..<100 where !empty {
                try await Task.sleep(for: .milliseconds(200))
                samples = Self.samples(try await Self.get("/metrics", port: adminPort).body)
                empty = samples["parley_members"] == 0 && samples["parley_rooms"] == 0
            }
            #expect(empty, "\(samples.filter { !$0.key.contains("store") })")
        } catch {
            await Self.stop(processes)
            throw error
        }
        await Self.stop(processes)
        #expect(!relay.output.contains("Fatal error"), "\(relay.output)")
    }

    @Test func healthSays503WhileItsPostgreSQLIsDown() async throws {
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        let server = try await PostgresServer.start()
        let database = try await server.createDatabase(prefix: "parley_admin")
        let state = NSTemporaryDirectory() + "parley-admin-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let relay = try BackgroundProcess(
            binary,
            [
                "serve", "--port", "0", "--insecure", "--state-dir", state, "--admin", "127.0.0.1:0", "--database",
                server.url(database: database),
            ])
        do {
            #expect(try await Self.waitFor("admin endpoints /metrics and /healthz on http://127.0.0.1:", in: relay))
            let adminPort = try #require(
                relay.output.firstMatch(of: /admin endpoints \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/)
                    .flatMap { Int($0.1) }, "\(relay.output)")
            let up = try await Self.get("/healthz", port: adminPort)
            #expect(up.status == 200 && up.body.contains(#""store":"reachable""#), "\(up.head)\n\(up.body)")
            /// Polls `/metrics` until `series` satisfies `condition` (at most 10 s).
            func eventually(_ series: String, _ condition: (Double) -> Bool) async throws -> Bool {
                let deadline = Date().addingTimeInterval(10)
                while Date() < deadline {
                    let value = Self.samples(try await Self.get("/metrics", port: adminPort).body)[series]
                    if let value, condition(value) { return true }
                    try await Task.sleep(for: .milliseconds(200))
                }
                return false
            }
            // A cluster node (on PostgreSQL): its bus connected, no heartbeat failed yet.
            #expect(try await eventually("parley_bus_connections_total") { $0 >= 1 })
            #expect(try await eventually("parley_cluster_heartbeats_failed_total") { $0 == 0 })

            // PostgreSQL stops: the store check fails or times out, and says so; the node itself is still up.
            await onOwnThread { server.stop() }
            let down = try await Self.get("/healthz", port: adminPort)
            #expect(down.status == 503, "\(down.head)\n\(down.body)")
            #expect(down.body.contains(#""node":"up""#) && down.body.contains(#""status":"failing""#), "\(down.body)")
            #expect(
                down.body.contains("the message store did not answer within 2 s")
                    || down.body.contains("the message store failed"), "\(down.body)")
            #expect(try await Self.get("/metrics", port: adminPort).status == 200, "metrics do not need the store")
            #expect(
                try await eventually("parley_cluster_heartbeats_failed_total") { $0 >= 1 },
                "heartbeats fail while the database is down, and /metrics counts them")
        } catch {
            await Self.stop([relay])
            server.stop()
            throw error
        }
        await Self.stop([relay])
    }

    @Test func theAdminAddressIsNeverThePublicPort() async throws {
        let state = NSTemporaryDirectory() + "parley-admin-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rows: [(host: String, admin: String)] = [
            ("127.0.0.1", "127.0.0.1:47813"),
            ("127.0.0.1", "0.0.0.0:47813"),
            ("0.0.0.0", "127.0.0.1:47813"),
            ("127.0.0.1", "localhost:47813"),
        ]
        for row in rows {
            let result = try await Self.parley([
                "serve", "--host", row.host, "--port", "47813", "--insecure", "--state-dir", state, "--admin",
                row.admin,
            ])
            Self.expectOneLineFailure(
                result, containing: "--admin \(row.admin) is the relay's public port (\(row.host):47813)")
        }
        let malformed = try await Self.parley(["serve", "--port", "0", "--insecure", "--admin", "9100"])
        #expect(malformed.status != 0, "\(malformed.output)")
        #expect(malformed.output.contains("--admin takes HOST:PORT (a port 0…65535), e.g. --admin 127.0.0.1:9100"))
    }

    @Test func anAdminPortInUseIsOneLine() async throws {
        let state = NSTemporaryDirectory() + "parley-admin-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Something else listens on the port asked for.
        let holder = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(holder, $0, length) == 0 && listen(holder, 1) == 0 && getsockname(holder, $0, &length) == 0
            }
        }
        #expect(bound, "\(String(cString: strerror(errno)))")
        let port = Int(UInt16(bigEndian: address.sin_port))
        let result = try await Self.parley([
            "serve", "--port", "0", "--insecure", "--state-dir", state, "--admin", "127.0.0.1:\(port)",
        ])
        Self.expectOneLineFailure(
            result,
            containing: "port \(port) is already in use on 127.0.0.1 (admin (HTTP)): another relay or program has it; "
                + "pick another with --admin")
    }
}
