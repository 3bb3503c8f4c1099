import Logging
import ParleyStore
import PostgresNIO

// The PostgreSQL store's tables, as versioned migrations. A database records each migration it ran in
// `parley_schema_migration` (one row per version); a node applies the missing ones at start, in one transaction,
// holding a PostgreSQL advisory lock, so several nodes starting at once migrate once: the first takes the lock and
// migrates, the others wait for it and then find nothing left to do. A migration that has shipped is never changed;
// the schema grows by appending one.

/// One step of the schema: its version (1, 2, 3 … with no gaps) and its statements, static SQL with no values.
struct PostgresMigration: Sendable {
    var version: Int
    var description: String
    var statements: [String]
}

enum PostgresSchema {
    /// Every migration, in order. The version this code knows is the last one's.
    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, description: "accounts, direct messages, channels",
            statements: [
                """
                CREATE TABLE account (
                    name TEXT PRIMARY KEY,
                    signing_key BYTEA NOT NULL,
                    agreement_key BYTEA NOT NULL,
                    last_seen BIGINT
                )
                """,
                """
                CREATE TABLE direct_message (
                    sequence BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id TEXT NOT NULL,
                    sender TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    sealed BYTEA NOT NULL,
                    sender_copy BYTEA,
                    received_at BIGINT NOT NULL,
                    delivered_at BIGINT,
                    read_at BIGINT,
                    UNIQUE (sender, id)
                )
                """,
                """
                CREATE INDEX direct_message_undelivered ON direct_message (recipient, sequence)
                    WHERE delivered_at IS NULL
                """,
                "CREATE INDEX direct_message_conversation ON direct_message (sender, recipient, sequence)",
                "CREATE INDEX direct_message_inbound ON direct_message (recipient, sender, sequence)",
                """
                CREATE TABLE channel_member (
                    channel TEXT NOT NULL,
                    account TEXT NOT NULL,
                    joined_at BIGINT NOT NULL,
                    read_through BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (channel, account)
                )
                """,
                "CREATE INDEX channel_member_account ON channel_member (account, joined_at)",
                """
                CREATE TABLE channel_post (
                    sequence BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    channel TEXT NOT NULL,
                    id TEXT NOT NULL,
                    sender TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    text TEXT NOT NULL,
                    posted_at BIGINT NOT NULL,
                    members BIGINT,
                    UNIQUE (channel, sender, id)
                )
                """,
                "CREATE INDEX channel_post_channel ON channel_post (channel, sequence)",
            ]),
        PostgresMigration(
            version: 2, description: "cluster: nodes, presence, room placement and settings",
            statements: [
                // Times are the database's clock (now()), the one clock every node shares.
                """
                CREATE TABLE node (
                    id TEXT PRIMARY KEY,
                    advertise TEXT NOT NULL,
                    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                    alive BOOLEAN NOT NULL DEFAULT true,
                    members INTEGER NOT NULL DEFAULT 0,
                    rooms INTEGER NOT NULL DEFAULT 0,
                    packets_per_second DOUBLE PRECISION NOT NULL DEFAULT 0,
                    cpu DOUBLE PRECISION NOT NULL DEFAULT 0,
                    reaped_by TEXT,
                    reaped_at TIMESTAMPTZ,
                    deaths INTEGER NOT NULL DEFAULT 0
                )
                """,
                """
                CREATE TABLE presence (
                    account TEXT NOT NULL,
                    node TEXT NOT NULL REFERENCES node (id) ON DELETE CASCADE,
                    messaging BOOLEAN NOT NULL,
                    calls TEXT NOT NULL,
                    PRIMARY KEY (account, node)
                )
                """,
                "CREATE INDEX presence_node ON presence (node)",
                """
                CREATE TABLE room_placement (
                    room TEXT PRIMARY KEY,
                    node TEXT NOT NULL REFERENCES node (id) ON DELETE CASCADE,
                    placed_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """,
                "CREATE INDEX room_placement_node ON room_placement (node)",
                """
                CREATE TABLE room_setting (
                    room TEXT PRIMARY KEY,
                    line TEXT NOT NULL,
                    loaded_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """,
            ]),
        PostgresMigration(
            version: 3, description: "cluster: trunks between nodes",
            statements: [
                // Where a node takes trunk datagrams (HOST:PORT, nil without a cluster secret), and how many of its
                // trunks to other nodes are up.
                "ALTER TABLE node ADD COLUMN trunk TEXT",
                "ALTER TABLE node ADD COLUMN trunks_up INTEGER NOT NULL DEFAULT 0",
            ]),
    ]

    /// The schema version this code knows.
    static var knownVersion: Int { migrations.last?.version ?? 0 }

    /// The advisory lock migrations hold ("parley" in ASCII); other advisory locks of the store use other keys.
    static let migrationLock: Int64 = 0x7061_726C_6579

    /// What `migrate` found and did.
    struct Outcome: Sendable, Equatable {
        /// The version before (0: an empty database).
        var from: Int
        /// The version after.
        var to: Int
    }

    /// Brings the database to `knownVersion` in one transaction under the migration lock. Throws `newerSchema` when
    /// the database is ahead of this code, having changed nothing.
    static func migrate(
        _ connection: PostgresConnection, logger: Logger,
        migrations: [PostgresMigration] = PostgresSchema.migrations
    ) async throws -> Outcome {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS parley_schema_migration (
                    version INTEGER PRIMARY KEY,
                    description TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(max(version), 0)::BIGINT FROM parley_schema_migration", logger: logger
            ).decode(Int.self) {
                current = version
            }
            let known = migrations.last?.version ?? 0
            if current > known { throw PostgresSchemaError.newerSchema(database: current, known: known) }
            for migration in migrations where migration.version > current {
                for statement in migration.statements {
                    // Static SQL written above, no values in it: nothing to bind.
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    """
                    INSERT INTO parley_schema_migration (version, description)
                    VALUES (\(migration.version), \(migration.description))
                    """, logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
            return Outcome(from: current, to: max(current, known))
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}

extension PostgresSchema {
    /// For a read-only store: the database's version, refused when it is not the one this code knows.
    static func check(_ connection: PostgresConnection, logger: Logger) async throws -> Outcome {
        var current = 0
        for try await version in try await connection.query(
            "SELECT COALESCE(max(version), 0)::BIGINT FROM parley_schema_migration", logger: logger
        ).decode(Int.self) {
            current = version
        }
        if current > knownVersion { throw PostgresSchemaError.newerSchema(database: current, known: knownVersion) }
        if current < knownVersion { throw PostgresSchemaError.olderSchema(database: current, known: knownVersion) }
        return Outcome(from: current, to: current)
    }
}

/// A schema this code cannot use.
enum PostgresSchemaError: Error, Equatable {
    case newerSchema(database: Int, known: Int)
    /// Only for a read-only store, which cannot migrate.
    case olderSchema(database: Int, known: Int)
}
