import Foundation
import Logging
import ParleyTestLanes
import PostgresNIO
import Testing

@testable import ParleyPostgres

/// The migrations themselves, on the shared test PostgreSQL: all or nothing, once, and never past a newer schema.
@Suite(.lane(.stores))
struct PostgresSchemaTests {
    let logger = Logger(label: "parley.test.schema")

    func connect(_ database: String) async throws -> PostgresConnection {
        let server = try await SharedPostgres.server
        let settings = try DatabaseSettings(url: server.url(database: database))
        return try await PostgresConnection.connect(
            configuration: try settings.connectionConfiguration(), id: 1, logger: logger)
    }

    @Test func aFailingMigrationChangesNothingAndTheNextStartMigratesOnce() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_schema")
        let connection = try await connect(database)
        let broken =
            PostgresSchema.migrations + [
                PostgresMigration(
                    version: PostgresSchema.knownVersion + 1, description: "broken",
                    statements: ["CREATE TABLE later (x INTEGER)", "THIS IS NOT SQL"])
            ]
        await #expect(throws: (any Error).self) {
            try await PostgresSchema.migrate(connection, logger: logger, migrations: broken)
        }
        // One transaction: not even version 1's tables or the log survived the failure.
        #expect(
            try await server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: database)
                == "0")
        let first = try await PostgresSchema.migrate(connection, logger: logger)
        #expect(first == PostgresSchema.Outcome(from: 0, to: PostgresSchema.knownVersion))
        let again = try await PostgresSchema.migrate(connection, logger: logger)
        #expect(again == PostgresSchema.Outcome(from: PostgresSchema.knownVersion, to: PostgresSchema.knownVersion))
        #expect(
            try await server.psql(
                "SELECT string_agg(version::TEXT, ',') FROM parley_schema_migration", database: database)
                == (1...PostgresSchema.knownVersion).map(String.init).joined(separator: ","))
        try await connection.close()
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }

    @Test func aNewerSchemaIsRefusedWithoutChangingIt() async throws {
        let server = try await SharedPostgres.server
        let database = try await server.createDatabase(prefix: "parley_schema")
        let connection = try await connect(database)
        _ = try await PostgresSchema.migrate(connection, logger: logger)
        _ = try await server.psql(
            "INSERT INTO parley_schema_migration (version, description) VALUES (\(PostgresSchema.knownVersion + 1), 'x')",
            database: database)
        await #expect(
            throws: PostgresSchemaError.newerSchema(
                database: PostgresSchema.knownVersion + 1, known: PostgresSchema.knownVersion)
        ) {
            try await PostgresSchema.migrate(connection, logger: logger)
        }
        #expect(
            try await server.psql("SELECT count(*) FROM parley_schema_migration", database: database)
                == "\(PostgresSchema.knownVersion + 1)")
        try await connection.close()
        _ = try? await server.psql("DROP DATABASE \(database) WITH (FORCE)")
    }
}
