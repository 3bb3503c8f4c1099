import ArgumentParser
import Foundation
import Logging
import ParleySecurity

/// Log destinations: stderr for headless commands, a file for the terminal UI (never the screen).
enum LogSetup {
    /// Parses a level name, with a message listing the choices.
    static func level(_ text: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ValidationError(
                "unknown log level \"\(text)\"; choose trace, debug, info, notice, warning, error or critical")
        }
        return level
    }

    /// Sends every logger to standard error.
    static func toStandardError(level: Logger.Level) {
        // The same plain lines as the log file (time, level, logger, message, fields), without swift-log's
        // default `[Module]` source tag.
        let standardError = FileLogHandler.SharedFile(handle: FileHandle.standardError, path: nil)
        LoggingSystem.bootstrap { label in
            var handler = FileLogHandler(label: label, file: standardError)
            handler.logLevel = level
            return handler
        }
    }

    /// Sends every logger to a file (created with its folders), appending.
    static func toFile(_ path: String, level: Logger.Level) throws {
        let handle = try FileLogHandler.open(path)
        LoggingSystem.bootstrap { label in
            var handler = FileLogHandler(label: label, file: handle)
            handler.logLevel = level
            return handler
        }
    }

    /// `$XDG_STATE_HOME/parley/parley.log`, or `~/.local/state/parley/parley.log`.
    static var defaultLogPath: String { stateDirectory + "/parley.log" }

    /// Parley's state folder (logs, the relay's certificate): `$XDG_STATE_HOME/parley`, or `~/.local/state/parley`.
    static var stateDirectory: String { UserFolders.state() }
}

/// A swift-log handler writing one line per message to a shared file.
struct FileLogHandler: LogHandler {
    /// The log file, capped: past `maximumBytes` it is renamed to `NAME.1` (replacing the previous one) and a new
    /// one starts, so a long call or a demo with eight bots never fills the disk (at most twice the cap is kept).
    final class SharedFile: @unchecked Sendable {
        static let maximumBytes: UInt64 = 16 << 20
        private var handle: FileHandle
        /// nil for a stream (standard error), which is never rotated.
        private let path: String?
        private var bytes: UInt64
        private let lock = NSLock()

        init(handle: FileHandle, path: String?) {
            self.handle = handle
            self.path = path
            bytes = path == nil ? 0 : handle.offsetInFile
        }

        func write(_ line: String) {
            let data = Data(line.utf8)
            lock.withLock {
                if let path, bytes + UInt64(data.count) > Self.maximumBytes { rotate(path) }
                handle.write(data)
                bytes += UInt64(data.count)
            }
        }

        private func rotate(_ path: String) {
            try? handle.close()
            let files = FileManager.default
            try? files.removeItem(atPath: path + ".1")
            try? files.moveItem(atPath: path, toPath: path + ".1")
            _ = files.createFile(atPath: path, contents: nil)
            if let fresh = FileHandle(forWritingAtPath: path) { handle = fresh }
            bytes = 0
        }
    }

    static func open(_ path: String) throws -> SharedFile {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CommandFailure("cannot create the log file \(path)")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw CommandFailure("cannot open the log file \(path) for writing")
        }
        handle.seekToEndOfFile()
        return SharedFile(handle: handle, path: path)
    }

    let label: String
    let file: SharedFile
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init(label: String, file: SharedFile) {
        self.label = label
        self.file = file
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields =
            all.isEmpty
            ? ""
            : " "
                + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: " ")
        let time = ISO8601DateFormatter().string(from: Date())
        file.write("\(time) \(event.level) \(label): \(event.message)\(fields)\n")
    }
}

/// Writes a line to standard output at once (print is block-buffered when stdout is a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A failure while running (not a usage mistake): printed as "Error: …" without the usage text, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
