import ArgumentParser
import Foundation
import ParleyPostgres
import ParleyRelay
import ParleyStore

/// `parley cluster`: the relays sharing one PostgreSQL database.
struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The relays of a cluster sharing one PostgreSQL database.",
        subcommands: [ClusterStatusCommand.self, ClusterRooms.self, ClusterDrain.self])
}

/// `parley cluster drain NODE`: the node moves its members to the other nodes and stops.
struct ClusterDrain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Drain a node: it takes no new joins, moves its members to the other nodes and stops (as on SIGTERM)."
    )

    @Argument(help: "The node's id (parley cluster status lists them).")
    var node: String

    @Option(
        parsing: .unconditional,
        help: "Seconds to wait for the node to leave the cluster (0: do not wait). (default: 40)")
    var wait: Int = 40

    @OptionGroup var database: ClusterDatabaseOptions

    func validate() throws {
        guard (0...3600).contains(wait) else { throw ValidationError("--wait must be 0…3600 seconds, got \(wait)") }
    }

    func run() async throws {
        let settings = try database.settings()
        let asked: Bool
        do {
            asked = try await PostgresCluster.requestDrain(settings, node: node)
        } catch {
            throw CommandFailure("\(error)")
        }
        guard asked else {
            throw CommandFailure("no live node \(node) in the cluster (parley cluster status lists the nodes)")
        }
        say("node \(node) asked to drain")
        guard wait > 0 else { return }
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(wait) {
            try await Task.sleep(for: .milliseconds(250))
            let status = try? await PostgresCluster.status(settings)
            if let status, !status.nodes.contains(where: { $0.id == node && $0.alive }) {
                let took = ContinuousClock.now - start
                say("node \(node) drained and left the cluster after \(took.spokenSeconds)")
                return
            }
        }
        throw CommandFailure("node \(node) is still in the cluster after \(wait) s (it drains for --drain-seconds)")
    }
}

/// Where the cluster's database is, as `parley serve` takes it.
struct ClusterDatabaseOptions: ParsableArguments {
    @Option(help: "The cluster's database, postgres://USER[:PASSWORD]@HOST:PORT/DB (default: $PARLEY_DATABASE_URL).")
    var database: String?

    @Option(
        name: .customLong("database-password-file"),
        help: "A file whose first line is the PostgreSQL password (else the URL's, else PGPASSFILE or ~/.pgpass).")
    var databasePasswordFile: String?

    func settings() throws -> DatabaseSettings {
        guard let url = database ?? ProcessInfo.processInfo.environment["PARLEY_DATABASE_URL"] else {
            throw CommandFailure(
                "no database: give --database postgres://USER@HOST:PORT/DB, or set PARLEY_DATABASE_URL")
        }
        do {
            return try DatabaseSettings(
                url: url, passwordFile: databasePasswordFile, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

/// `parley cluster status`: the nodes, their load, rooms and accounts online.
struct ClusterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Print the cluster's nodes (address, alive, load), rooms and accounts online.")

    @OptionGroup var database: ClusterDatabaseOptions

    func run() async throws {
        let settings = try database.settings()
        let status: ClusterStatus
        do {
            status = try await PostgresCluster.status(settings)
        } catch {
            throw CommandFailure("\(error)")
        }
        say(Self.table(status))
    }

    /// The status as a table, one node a line.
    static func table(_ status: ClusterStatus) -> String {
        let alive = status.nodes.filter(\.alive).count
        var lines = [
            "\(status.nodes.count) node\(status.nodes.count == 1 ? "" : "s") (\(alive) alive), "
                + "\(status.accountsOnline) account\(status.accountsOnline == 1 ? "" : "s") online"
        ]
        let header = [
            "NODE", "ADDRESS", "STATE", "MEMBERS", "ROOMS", "PLACED", "ACCOUNTS", "PACKETS/S", "CPU", "TRUNKS UP",
        ]
        var rows = [header]
        for node in status.nodes {
            let state =
                node.alive
                ? "alive" : node.reapedBy.map { "dead (found by \($0))" } ?? "silent \(node.silentMs / 1000) s"
            rows.append([
                node.id, node.advertise, state, "\(node.members)", "\(node.rooms)", "\(node.placedRooms)",
                "\(node.accounts)", String(format: "%.0f", node.packetsPerSecond),
                String(format: "%.0f%%", node.cpu * 100), node.trunk == nil ? "-" : "\(node.trunksUp)",
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(
                row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                    .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        return lines.joined(separator: "\n")
    }
}

/// `parley cluster rooms load FILE`: the rooms' settings every node applies.
struct ClusterRooms: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms",
        abstract:
            "Put a rooms file (passwords, stage rules) into the cluster's database: `parley cluster rooms load FILE`.")

    @Argument(help: "\"load\".")
    var action: String

    @Argument(help: "The rooms file: one room a line, `NAME [password=TEXT|verifier=HEX] [stage=open|host]`.")
    var file: String

    @OptionGroup var database: ClusterDatabaseOptions

    func validate() throws {
        guard action == "load" else { throw ValidationError("unknown action \"\(action)\": use load FILE") }
    }

    func run() async throws {
        let settings = try database.settings()
        let rooms: [String: ConfiguredRoom]
        do {
            rooms = try RoomsFile.load(path: file)
        } catch {
            throw CommandFailure("\(error)")
        }
        let lines = rooms.keys.sorted().map { RoomsFile.line(room: $0, rooms[$0]!) }
        let replaced: Int
        do {
            replaced = try await PostgresCluster.loadRooms(settings, lines: lines)
        } catch {
            throw CommandFailure("\(error)")
        }
        say(
            "\(lines.count) room\(lines.count == 1 ? "" : "s") from \(file) in the cluster's database (replacing "
                + "\(replaced)); every node applies them to rooms opened from now on (passwords kept as verifiers)")
    }
}
