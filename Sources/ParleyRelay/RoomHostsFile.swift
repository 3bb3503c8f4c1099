import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The rooms' hosts kept in the relay's state folder (`room-hosts.json`), so a restarted relay gives each room's
/// host role back to whoever held it. Written atomically, readable only by the relay's user.
public struct RoomHostsFile: Sendable {
    /// Where the file is.
    public let path: String
    /// Largest file read, in bytes (1,000 rooms take about 150 kB).
    public static let maximumBytes = 4 << 20

    /// The file at `path` (it need not exist yet).
    public init(path: String) { self.path = path }

    private struct Contents: Codable {
        var version: Int
        var rooms: [String: RoomHostRecord]
    }

    /// A hosts file that cannot be read or written: the relay goes on without it (no host is awaited) and says why.
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// The records kept; empty when there is no file yet.
    public func load() throws(Problem) -> [String: RoomHostRecord] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int,
            size > Self.maximumBytes
        {
            throw Problem(description: "\(path) is \(size) bytes; the limit is \(Self.maximumBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(description: "\(path) cannot be read")
        }
        do {
            let contents = try JSONDecoder().decode(Contents.self, from: data)
            guard contents.version == 1 else {
                throw Problem(description: "\(path) is version \(contents.version); this relay reads version 1")
            }
            return contents.rooms
        } catch let error as Problem {
            throw error
        } catch {
            throw Problem(description: "\(path) is not a room hosts file: \(error)")
        }
    }

    /// Replaces the file with `records` (write to a temporary file, then rename).
    public func save(_ records: [String: RoomHostRecord]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Contents(version: 1, rooms: records))
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw Problem(description: "\(temporary) cannot be written") }
        guard rename(temporary, path) == 0 else {
            throw Problem(description: "\(temporary) cannot be renamed to \(path): error \(errno)")
        }
    }
}

/// The rooms' hosts file as the relay keeps it: read once at start, written off the event loop (in order) only when
/// the hosts changed since the last write. Used on the relay's event loop.
final class RoomHostsKeeper {
    let file: RoomHostsFile
    private let logger: Logger
    /// What was last written (or read at start).
    private var saved: [String: RoomHostRecord] = [:]
    private let queue = DispatchQueue(label: "parley.relay.room-hosts")

    init(file: RoomHostsFile, logger: Logger) {
        self.file = file
        self.logger = logger
    }

    /// The hosts kept by the last run.
    func load() throws(RoomHostsFile.Problem) -> [String: RoomHostRecord] {
        saved = try file.load()
        return saved
    }

    /// Writes `hosts` unless they are what was last written; a failure is logged (the relay goes on).
    func save(_ hosts: [String: RoomHostRecord]) {
        guard hosts != saved else { return }
        saved = hosts
        let (file, logger) = (file, logger)
        queue.async {
            do {
                try file.save(hosts)
            } catch {
                logger.warning("room hosts not saved", metadata: ["path": "\(file.path)", "error": "\(error)"])
            }
        }
    }

    /// Returns once every write asked for so far is done.
    func waitForWrites() { queue.sync {} }
}
