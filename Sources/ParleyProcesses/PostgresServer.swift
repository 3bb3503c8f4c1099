import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why the test PostgreSQL could not be used.
public struct PostgresServerError: Error, CustomStringConvertible {
    public var description: String
}

/// A private PostgreSQL 15 for tests: `initdb` in a new temporary folder, started on a free loopback port with its
/// socket in that folder, stopped (`pg_ctl stop -m fast`) and the folder removed by `stop()`. PostgreSQL refuses to
/// run as root, so as root (CI) every server program runs through `runuser` as the `postgres` system user that
/// Debian's package creates (else `nobody`), in a folder chowned to it; as anybody else, as that user directly.
///
/// The superuser `parley` has password `parley`: TCP connections must give it (SCRAM-SHA-256), so a wrong password is
/// refused as on a real server; the socket in the folder trusts local connections (what `psql` here uses).
public final class PostgresServer: Sendable {
    /// Where Debian's `postgresql` package puts the programs.
    public static let binaries = "/usr/lib/postgresql/15/bin"
    /// The superuser and its password.
    public static let user = "parley"
    public static let password = "parley"

    /// The folder holding the data, the socket and the log.
    public let directory: String
    /// The loopback port it listens on.
    public let port: Int
    /// The user the server runs as when the tests run as root, nil otherwise.
    public let runAs: String?
    /// How long initdb plus start took.
    public let startSeconds: Double

    /// `postgres://parley:parley@127.0.0.1:PORT/DATABASE`.
    public func url(database: String, password: String? = PostgresServer.password) -> String {
        "postgres://\(Self.user)\(password.map { ":" + $0 } ?? "")@127.0.0.1:\(port)/\(database)"
    }

    private init(directory: String, port: Int, runAs: String?, startSeconds: Double) {
        self.directory = directory
        self.port = port
        self.runAs = runAs
        self.startSeconds = startSeconds
    }

    /// Makes a cluster and starts it; returns once it accepts connections (polled, up to 30 s). With `tls` (a PEM
    /// certificate and its key) the server offers TLS (`ssl=on`) beside plain connections.
    public static func start(tls: (certificatePEM: String, keyPEM: String)? = nil) async throws -> PostgresServer {
        let started = Date()
        guard FileManager.default.isExecutableFile(atPath: binaries + "/initdb") else {
            throw PostgresServerError(
                description:
                    "\(binaries)/initdb is missing: `make deps` installs PostgreSQL (Debian package postgresql)")
        }
        var template = Array((NSTemporaryDirectory() + "parley-postgres-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw PostgresServerError(
                description: "cannot make a temporary folder: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        let runAs = getuid() == 0 ? (getpwnam("postgres") != nil ? "postgres" : "nobody") : nil
        if let runAs, let account = getpwnam(runAs) {
            guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw PostgresServerError(description: "cannot chown \(directory) to \(runAs)")
            }
        }
        let passwordFile = directory + "/password"
        try (password + "\n").write(toFile: passwordFile, atomically: false, encoding: .utf8)
        if let runAs, let account = getpwnam(runAs) {
            _ = chown(passwordFile, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let initdb = try await run(
            runAs,
            binaries + "/initdb",
            [
                "-D", directory + "/data", "-U", user, "--pwfile", passwordFile, "--auth-host=scram-sha-256",
                "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync",
            ])
        guard initdb.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PostgresServerError(description: "initdb failed (\(initdb.status)): \(initdb.output)")
        }
        var tlsOptions = ""
        if let tls {
            for (name, text) in [("server.crt", tls.certificatePEM), ("server.key", tls.keyPEM)] {
                let path = directory + "/" + name
                try text.write(toFile: path, atomically: false, encoding: .utf8)
                // PostgreSQL refuses a key that others can read.
                chmod(path, 0o600)
                if let runAs, let account = getpwnam(runAs) {
                    _ = chown(path, account.pointee.pw_uid, account.pointee.pw_gid)
                }
            }
            // Each connection's log line says whether it is encrypted ("SSL enabled"), which the TLS tests read.
            tlsOptions =
                " -c ssl=on -c ssl_cert_file=\(directory)/server.crt -c ssl_key_file=\(directory)/server.key"
                + " -c log_connections=on"
        }
        // A free port can be taken between choosing it and binding it: try a few.
        for _ in 0..<3 {
            let port = try freePort()
            let server = PostgresServer(directory: directory, port: port, runAs: runAs, startSeconds: 0)
            let start = try await run(
                runAs,
                binaries + "/pg_ctl",
                [
                    "-D", directory + "/data", "-l", directory + "/log", "-W", "-o",
                    "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1" + tlsOptions, "start",
                ])
            guard start.status == 0 else {
                try? FileManager.default.removeItem(atPath: directory)
                throw PostgresServerError(description: "pg_ctl start failed (\(start.status)): \(start.output)")
            }
            if try await server.waitUntilReady() {
                return PostgresServer(
                    directory: directory, port: port, runAs: runAs, startSeconds: Date().timeIntervalSince(started))
            }
            server.stopServer()
        }
        let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: directory)
        throw PostgresServerError(description: "PostgreSQL did not start within 30 s:\n\(log)")
    }

    /// Polls `pg_isready` (Task.sleep between tries); false when the server process is gone or 30 s passed.
    private func waitUntilReady(logAfter offset: Int = 0) async throws -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let ready = try await Self.run(
                nil, Self.binaries + "/pg_isready", ["-h", "127.0.0.1", "-p", "\(port)", "-U", Self.user])
            if ready.status == 0 { return true }
            let log =
                String(
                    ((try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "").utf8.dropFirst(offset))
                ?? ""
            if log.contains("could not bind") || log.contains("database system is shut down") { return false }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// The server's log so far.
    public var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }

    /// Stops the server (`pg_ctl stop -m fast`: every connection is cut), keeping its data; `resume` starts it again.
    public func pause() async throws {
        let result = try await Self.run(
            runAs, Self.binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"])
        guard result.status == 0 else {
            throw PostgresServerError(description: "pg_ctl stop failed (\(result.status)): \(result.output)")
        }
    }

    /// Starts a paused server again on its port; returns once it accepts connections.
    public func resume() async throws {
        let offset = log.utf8.count
        let result = try await Self.run(
            runAs, Self.binaries + "/pg_ctl",
            [
                "-D", directory + "/data", "-l", directory + "/log", "-W", "-o",
                "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1", "start",
            ])
        guard result.status == 0, try await waitUntilReady(logAfter: offset) else {
            throw PostgresServerError(description: "pg_ctl start failed (\(result.status)): \(result.output)\n\(log)")
        }
    }

    /// Stops the server and removes its folder.
    public func stop() {
        stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func stopServer() {
        _ = try? Self.runBlocking(
            runAs, Self.binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"])
    }

    /// Runs SQL through `psql` on the local socket (trusted) and returns its unaligned output, trimmed.
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let result = try await Self.run(
            nil, Self.binaries + "/psql",
            ["-h", directory, "-p", "\(port)", "-U", Self.user, "-d", database, "-v", "ON_ERROR_STOP=1", "-tAc", sql])
        guard result.status == 0 else {
            throw PostgresServerError(description: "psql -c \(sql) failed (\(result.status)): \(result.output)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes a new, empty database and returns its name.
    public func createDatabase(prefix: String = "parley_test") async throws -> String {
        let name = prefix + "_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        // A name made here of letters, digits and underscores: psql takes no bound values for CREATE DATABASE.
        _ = try await psql("CREATE DATABASE \(name)")
        return name
    }

    /// Runs a program (as `user` through runuser when given) on a thread of its own, so the awaiting task's thread
    /// is never blocked.
    private static func run(_ user: String?, _ path: String, _ arguments: [String]) async throws
        -> ChildProcess.Result
    {
        try await onOwnThread { try runBlocking(user, path, arguments) }
    }

    private static func runBlocking(_ user: String?, _ path: String, _ arguments: [String]) throws
        -> ChildProcess.Result
    {
        if let user {
            return try ChildProcess.run(
                "/usr/sbin/runuser", ["-u", user, "--", path] + arguments, timeout: .seconds(60))
        }
        return try ChildProcess.run(path, arguments, timeout: .seconds(60))
    }

    /// A loopback TCP port nobody listens on now.
    public static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw PostgresServerError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw PostgresServerError(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
