import Crypto
import Foundation
import ParleyPostgres
import ParleyProcesses
import ParleyTestLanes
import Testing
import X509

#if canImport(Glibc)
import Glibc
#endif

/// `parley serve --database …`, the real binary against the shared test PostgreSQL: several relays starting at once
/// migrate once, and each way of failing at start is one line on standard error and a non-zero exit.
@Suite(.serialized, .lane(.database))
struct PostgresServeTests {
    /// Runs `parley ARGUMENTS` (through `env` when `environment` is given) to its end, off the test's thread.
    func parley(_ arguments: [String], environment: [String] = []) async throws -> ChildProcess.Result {
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        return try await onOwnThread {
            try ChildProcess.run("/usr/bin/env", environment + [binary] + arguments, timeout: .seconds(30))
        }
    }

    /// Polls a process's output with Task.sleep until `text` shows up (or it exits, or `seconds` pass).
    func waitFor(_ text: String, in process: BackgroundProcess, seconds: Double = 30) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if process.output.contains(text) { return true }
            if process.exitStatusNow() != nil { return process.output.contains(text) }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    func serveArguments(_ url: String, state: String) -> [String] {
        ["serve", "--port", "0", "--insecure", "--state-dir", state, "--database", url]
    }

    /// The lines a failed start printed: exactly one, and the exit status non-zero.
    func expectOneLineFailure(_ result: ChildProcess.Result, containing text: String) {
        let lines = result.output.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(result.status != 0 && !result.timedOut, "\(result.status): \(result.output)")
        #expect(lines.count == 1, "one line: \(result.output)")
        #expect(result.output.contains(text), "\(result.output)")
    }

    @Test func threeRelaysStartedAtOnceMigrateOnce() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_three")
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        let states = (0..<3).map { _ in NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)" }
        defer { for state in states { try? FileManager.default.removeItem(atPath: state) } }
        let relays = try states.map {
            try BackgroundProcess(binary, serveArguments(server.url(database: database), state: $0))
        }
        defer { for relay in relays { relay.stop() } }
        for relay in relays {
            #expect(try await waitFor("parley relay listening", in: relay), "\(relay.output)")
        }
        // Each relay says what it found; exactly one migrated the empty database.
        let notes = relays.map(\.output)
        let version = PostgresMessageStore.schemaVersion
        #expect(notes.filter { $0.contains("(schema version \(version), migrated from 0)") }.count == 1, "\(notes)")
        #expect(notes.filter { $0.contains("(schema version \(version))") }.count == 2, "\(notes)")
        #expect(
            try await server.psql(
                "SELECT count(*), min(version), max(version) FROM parley_schema_migration", database: database)
                == "\(version)|1|\(version)")
        #expect(
            try await server.psql(
                "SELECT count(*) FROM pg_tables WHERE tablename IN ('account', 'direct_message', 'channel_post')",
                database: database) == "3")
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    @Test func aDatabaseOfANewerSchemaIsRefused() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_newer")
        let state = NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Migrated by this version, then by a newer one that added the next version.
        let version = PostgresMessageStore.schemaVersion
        _ = try await PostgresMessageStore.open(try DatabaseSettings(url: server.url(database: database)))
        _ = try await server.psql(
            "INSERT INTO parley_schema_migration (version, description) VALUES (\(version + 1), 'from the future')",
            database: database)
        let result = try await parley(serveArguments(server.url(database: database), state: state))
        expectOneLineFailure(
            result, containing: "has schema version \(version + 1), newer than this parley knows (\(version))")
        #expect(
            try await server.psql("SELECT count(*) FROM parley_schema_migration", database: database)
                == "\(version + 1)")
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    @Test func badClusterSecretFilesAreOneLineEach() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_secret")
        let state = NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rows: [(content: String?, mode: Int, says: String)] = [
            (String(repeating: "a", count: 64), 0o644, "can be read by others (mode 644): chmod 600 it"),
            ("short\n", 0o600, "has 5 bytes, fewer than 32"),
            (nil, 0o600, "cannot be used: No such file or directory"),
        ]
        for (index, row) in rows.enumerated() {
            let path = state + "/secret-\(index)"
            if let content = row.content {
                try content.write(toFile: path, atomically: false, encoding: .utf8)
                chmod(path, mode_t(row.mode))
            }
            let result = try await parley(
                serveArguments(server.url(database: database), state: state) + ["--cluster-secret-file", path])
            expectOneLineFailure(result, containing: row.says)
        }
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    @Test func badURLsAreRefusedWithWhatToType() async throws {
        let state = NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rows: [(url: String, says: String)] = [
            ("mysql://parley@127.0.0.1/parley", "only PostgreSQL is supported"),
            ("postgres://127.0.0.1:5432/parley", "names no user"),
            ("postgres://parley@127.0.0.1:5432/", "names no database"),
            ("postgres://parley@127.0.0.1:5432/parley?sslmode=sometimes", "sslmode=sometimes is unknown"),
            ("postgres://parley@127.0.0.1:5432/parley?application=x", "parameter application is not supported"),
            ("just words", "use postgres://USER@HOST:PORT/DATABASE"),
        ]
        for row in rows {
            expectOneLineFailure(try await parley(serveArguments(row.url, state: state)), containing: row.says)
        }
    }

    @Test func aWrongPasswordAndAnUnreachableServerAreOneLineEach() async throws {
        let server = try await SharedPostgres.server
        let state = NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let wrong = try await parley(serveArguments(server.url(database: "postgres", password: "wrong"), state: state))
        expectOneLineFailure(wrong, containing: "refused the password of user parley")
        #expect(!wrong.output.contains("wrong"), "the password is never printed: \(wrong.output)")
        let missing = try await parley(serveArguments(server.url(database: "postgres", password: nil), state: state))
        expectOneLineFailure(missing, containing: "asks a password of user parley")
        let unreachable = try await parley(serveArguments("postgres://parley:x@127.0.0.1:1/parley", state: state))
        expectOneLineFailure(unreachable, containing: "cannot reach PostgreSQL at 127.0.0.1:1: connection refused")
        let noDatabase = try await parley(serveArguments(server.url(database: "nothing_here"), state: state))
        expectOneLineFailure(noDatabase, containing: "has no database nothing_here")
        let tls = try await parley(serveArguments(server.url(database: "postgres") + "?sslmode=require", state: state))
        expectOneLineFailure(tls, containing: "does not offer TLS, and sslmode=require requires it")
    }

    @Test func thePasswordComesFromAFileOrPGPASSFILEOrTheEnvironmentsURL() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_password")
        let binary = try #require(parleyBinaryPath())
        let state = NSTemporaryDirectory() + "parley-node-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let passwordFile = state + "/password"
        try "\(PostgresServer.password)\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let passFile = state + "/pgpass"
        try "# host:port:database:user:password\n127.0.0.1:\(server.port):*:parley:\(PostgresServer.password)\n"
            .write(toFile: passFile, atomically: true, encoding: .utf8)
        chmod(passFile, 0o600)
        let url = server.url(database: database, password: nil)
        let ways: [[String]] = [
            [binary] + serveArguments(url, state: state) + ["--database-password-file", passwordFile],
            ["PGPASSFILE=\(passFile)", binary] + serveArguments(url, state: state),
            [
                "PARLEY_DATABASE_URL=\(server.url(database: database))", binary, "serve", "--port", "0", "--insecure",
                "--state-dir", state,
            ],
        ]
        for way in ways {
            let relay = try BackgroundProcess("/usr/bin/env", way)
            #expect(try await waitFor("kept in PostgreSQL postgres://parley@127.0.0.1", in: relay), "\(relay.output)")
            relay.stop()
        }
        // A password file others can read is refused, as PostgreSQL's own tools refuse it.
        chmod(passFile, 0o644)
        let open = try await parley(serveArguments(url, state: state), environment: ["PGPASSFILE=\(passFile)"])
        expectOneLineFailure(open, containing: "can be read by others: chmod 600 it")
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    @Test func aMessageAcknowledgedByOneRelayReachesItsRecipientOnAnotherAfterAKill() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_nodes")
        let binary = try #require(parleyBinaryPath())
        let folder = NSTemporaryDirectory() + "parley-nodes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func relay(_ name: String) async throws -> (BackgroundProcess, String) {
            let relay = try BackgroundProcess(
                binary, serveArguments(server.url(database: database), state: folder + "/" + name))
            #expect(try await waitFor("kept in PostgreSQL", in: relay), "\(relay.output)")
            let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
            return (relay, "127.0.0.1:\(port)")
        }
        func run(as user: String, _ arguments: [String]) async throws -> ChildProcess.Result {
            try await parley(arguments + ["--insecure"], environment: ["XDG_CONFIG_HOME=\(folder)/\(user)"])
        }
        let (a, onA) = try await relay("a")
        let (b, onB) = try await relay("b")
        defer { b.stop() }
        #expect(try await run(as: "bob", ["login", "bob", "--server", onB]).status == 0)
        #expect(try await run(as: "alice", ["login", "alice", "--server", onA]).status == 0)
        let sent = try await run(as: "alice", ["msg", "bob", "from node a"])
        #expect(sent.status == 0 && sent.output.contains("stored for bob"), "\(sent.output)")
        // Acknowledged means committed: relay A killed at once loses nothing.
        a.signal(SIGKILL)
        #expect(await a.exitStatus(within: .seconds(5)) == 128 + SIGKILL)
        let inbox = try await run(as: "bob", ["inbox", "--server", onB])
        #expect(
            inbox.output.split(separator: "\n").filter { $0.hasSuffix("alice: from node a") }.count == 1,
            "\(inbox.output)")
        let again = try await run(as: "bob", ["inbox", "--server", onB])
        #expect(again.output.contains("no messages waiting"), "delivered once: \(again.output)")
        #expect(try await server.psql("SELECT count(*) FROM direct_message", database: database) == "1")
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    /// A certificate authority and a server certificate it signed for `host`, as PEM.
    func certificates(host: String) throws -> (authority: String, certificate: String, key: String) {
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("Parley test authority") }
        let now = Date()
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(authorityKey.publicKey), notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86400), issuer: authorityName, subject: authorityName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86400),
            issuer: authorityName, subject: try DistinguishedName { CommonName(host) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                KeyUsage(digitalSignature: true)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName(host)])
            }, issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        return (
            try authority.serializeAsPEM().pemString, try certificate.serializeAsPEM().pemString, key.pemRepresentation
        )
    }

    /// The TLS modes against a server of its own that offers TLS with a certificate for localhost.
    @Test func sslModesAgainstAServerWithTLS() async throws {
        let issued = try certificates(host: "localhost")
        let server = try await PostgresServer.start(tls: (certificatePEM: issued.certificate, keyPEM: issued.key))
        defer { server.stop() }
        let database = try await server.createDatabase(prefix: "parley_tls")
        let folder = NSTemporaryDirectory() + "parley-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let root = folder + "/root.pem"
        try issued.authority.write(toFile: root, atomically: true, encoding: .utf8)
        let otherRoot = folder + "/other.pem"
        try certificates(host: "localhost").authority.write(toFile: otherRoot, atomically: true, encoding: .utf8)
        let binary = try #require(parleyBinaryPath())
        let localhost = "postgres://parley:parley@localhost:\(server.port)/\(database)"
        for query in [
            "sslmode=disable", "sslmode=require", "sslmode=verify-ca&sslrootcert=\(root)",
            "sslmode=verify-full&sslrootcert=\(root)",
        ] {
            // The server logs each connection, with "SSL enabled" when it is encrypted.
            func encrypted() -> Int {
                server.log.split(separator: "\n").filter {
                    $0.contains("database=\(database)") && $0.contains("SSL enabled")
                }.count
            }
            let before = encrypted()
            let relay = try BackgroundProcess(binary, serveArguments(localhost + "?" + query, state: folder + "/state"))
            #expect(try await waitFor("kept in PostgreSQL", in: relay), "\(query): \(relay.output)")
            relay.stop()
            #expect((encrypted() > before) == (query != "sslmode=disable"), "\(query): \(server.log)")
        }
        let untrusted = try await parley(
            serveArguments(localhost + "?sslmode=verify-full&sslrootcert=\(otherRoot)", state: folder + "/state"))
        expectOneLineFailure(
            untrusted,
            containing: "TLS to PostgreSQL at localhost:\(server.port) failed: its certificate is not trusted for "
                + "localhost by sslrootcert \(otherRoot) (sslmode=verify-full")
        // verify-ca checks the issuer only; verify-full also the name: the certificate names localhost, not the IP.
        let byAddress = "postgres://parley:parley@127.0.0.1:\(server.port)/\(database)"
        let anyName = try BackgroundProcess(
            binary, serveArguments(byAddress + "?sslmode=verify-ca&sslrootcert=\(root)", state: folder + "/state"))
        #expect(try await waitFor("kept in PostgreSQL", in: anyName), "\(anyName.output)")
        anyName.stop()
        let wrongName = try await parley(
            serveArguments(byAddress + "?sslmode=verify-full&sslrootcert=\(root)", state: folder + "/state"))
        expectOneLineFailure(wrongName, containing: "its certificate is not trusted for 127.0.0.1")
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }
}
