import Foundation
import ParleyPostgres
import ParleyProcesses
import ParleyStore
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `MessageStore` implementations every store test runs against.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// One PostgreSQL for the whole test process, started by the first test that needs it (starting one costs seconds)
/// and stopped when the process exits.
enum SharedPostgres {
    private static let starting = Task<PostgresServer, any Error> {
        let server = try await PostgresServer.start()
        running.withLock { $0 = server }
        print(
            "test PostgreSQL on 127.0.0.1:\(server.port) in \(server.directory), as \(server.runAs ?? "this user"), "
                + "started in \(String(format: "%.2f", server.startSeconds)) s")
        atexit { SharedPostgres.running.withLock { $0 }?.stop() }
        return server
    }
    fileprivate static let running = Mutex<PostgresServer?>(nil)

    /// The server, started on first use.
    static var server: PostgresServer {
        get async throws { try await starting.value }
    }
}

/// A fresh store of one backend for one test: a new SQLite folder, or a new database on the shared PostgreSQL.
/// `open()` twice opens the same store again (a relay restarting on it).
struct StoreFixture {
    let backend: StoreBackend
    private let folder = NSTemporaryDirectory() + "parley-store-\(UUID().uuidString)"
    private let database: String?
    private let server: PostgresServer?

    init(_ backend: StoreBackend) async throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            server = nil
            database = nil
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        case .postgres:
            let server = try await SharedPostgres.server
            self.server = server
            database = try await server.createDatabase()
        }
    }

    /// The store's settings (PostgreSQL only).
    var settings: DatabaseSettings {
        get throws { try DatabaseSettings(url: server!.url(database: database!)) }
    }

    /// Opens the store, creating or migrating it.
    func open(maximumBytes: Int? = nil) async throws -> any MessageStore {
        switch backend {
        case .sqlite: return try SQLiteMessageStore(path: folder + "/messages.sqlite", maximumBytes: maximumBytes)
        case .postgres: return try await PostgresMessageStore.open(settings, maximumBytes: maximumBytes).store
        }
    }

    /// Opens the store so that it refuses every write (a read-only file; a read-only session, as on a standby).
    func openReadOnly() async throws -> any MessageStore {
        switch backend {
        case .sqlite: return try SQLiteMessageStore(path: folder + "/messages.sqlite", readOnly: true)
        case .postgres: return try await PostgresMessageStore.open(settings, readOnly: true).store
        }
    }

    /// A size limit the store will reach after a few hundred KiB more.
    func smallLimit() async throws -> Int {
        switch backend {
        case .sqlite: return 128 * 1024
        case .postgres:
            let size = try await server!.psql("SELECT pg_database_size(current_database())", database: database!)
            // The schema a store makes when it opens comes on top of what the empty database holds.
            return (Int(size) ?? 0) + 1024 * 1024
        }
    }

    /// Opening a store that cannot be reached, and the place its error must name.
    static func unreachable(_ backend: StoreBackend) async -> (where: String, error: (any Error)?) {
        switch backend {
        case .sqlite:
            let path = "/nonexistent/folder/messages.sqlite"
            do { _ = try SQLiteMessageStore(path: path) } catch { return (path, error) }
            return (path, nil)
        case .postgres:
            // A port nobody listens on: connection refused.
            let settings = try! DatabaseSettings(url: "postgres://parley:x@127.0.0.1:1/parley")
            do { _ = try await PostgresMessageStore.open(settings) } catch { return (settings.redacted, error) }
            return (settings.redacted, nil)
        }
    }

    /// Runs `body` with a fresh store of `backend`, removing it afterwards whatever happens.
    static func with(_ backend: StoreBackend, _ body: (StoreFixture) async throws -> Void) async throws {
        let fixture = try await StoreFixture(backend)
        do { try await body(fixture) } catch {
            await fixture.remove()
            throw error
        }
        await fixture.remove()
    }

    /// Removes the folder or drops the database (closing the connections still open to it).
    func remove() async {
        switch backend {
        case .sqlite: try? FileManager.default.removeItem(atPath: folder)
        case .postgres: _ = try? await server?.psql("DROP DATABASE IF EXISTS \(database!) WITH (FORCE)")
        }
    }
}
