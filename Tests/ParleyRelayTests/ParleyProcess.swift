import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `parley` binary run as a child process, with its standard output collected line by line.
/// Tests that start one must end it; `deinit` kills it (SIGKILL, by its own pid) if a test failed half-way.
final class ParleyProcess: Sendable {
    /// What went wrong finding, starting or waiting for the binary.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// What the child wrote, filled from the pipes' reader threads.
    private final class Transcript: Sendable {
        let output = Mutex("")
        let errors = Mutex("")
        /// A signal to send the moment standard output contains a text: (text, signal, pid).
        let trigger = Mutex<(text: String, signal: Int32, pid: Int32)?>(nil)

        func append(output text: String) {
            let all = output.withLock {
                $0 += text
                return $0
            }
            trigger.withLock { pending in
                guard let armed = pending, all.contains(armed.text) else { return }
                kill(armed.pid, armed.signal)
                pending = nil
            }
        }
    }

    private let process: Process
    private let transcript = Transcript()

    /// `PARLEY_BIN` (set by `make test`), else `.build/debug/parley` or `.build/release/parley` under the package
    /// root, the configuration of this test build first.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["PARLEY_BIN"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw Failure(description: "PARLEY_BIN=\(path) is not an executable file")
            }
            return URL(fileURLWithPath: path)
        }
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #if DEBUG
        let configurations = ["debug", "release"]
        #else
        let configurations = ["release", "debug"]
        #endif
        for configuration in configurations {
            let candidate = root.appendingPathComponent(".build/\(configuration)/parley")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw Failure(
            description: """
                no parley binary under \(root.path)/.build/{debug,release}: run `swift build` first or set PARLEY_BIN
                """)
    }

    /// Starts `parley` with these arguments.
    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = try Self.binary()
        process.arguments = arguments
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        let transcript = self.transcript
        try process.run()
        Self.read(stdout.fileHandleForReading) { transcript.append(output: $0) }
        Self.read(stderr.fileHandleForReading) { text in transcript.errors.withLock { $0 += text } }
    }

    /// Reads `handle` on a thread of its own until end of file, which then closes it.
    ///
    /// Not `readabilityHandler`: that registers the descriptor with libdispatch's epoll, and a handle closed (the
    /// test's process object dropped) before its source was torn down left a stale registration behind. The
    /// descriptor number, soon reused by a socket of another test, then crashed libdispatch's event loop
    /// (`_dispatch_event_loop_drain`, about one run in eight of the relay suites beside `WebSocketLimitTests`).
    private static func read(_ handle: FileHandle, _ append: @escaping @Sendable (String) -> Void) {
        let thread = Thread {
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                append(String(decoding: data, as: UTF8.self))
            }
            try? handle.close()
        }
        thread.start()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything written to standard output so far.
    var standardOutput: String { transcript.output.withLock { $0 } }
    /// Everything written to standard error so far.
    var standardError: String { transcript.errors.withLock { $0 } }

    /// Sends a signal to this process (and only it).
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Sends `signal` the moment standard output contains `text` (from the thread reading the pipe, with no
    /// polling delay), or at once if it already does.
    func send(_ signal: Int32, whenOutputContains text: String) {
        transcript.trigger.withLock { $0 = (text, signal, process.processIdentifier) }
        transcript.append(output: "")
    }

    /// Waits for the first standard-output line that `match` maps to a value.
    func line<T>(within window: Duration = .seconds(10), _ match: (Substring) -> T?) async throws -> T {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline {
            if let found = standardOutput.split(separator: "\n").lazy.compactMap(match).first { return found }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Failure(
            description: """
                parley \(process.arguments ?? []) printed no expected line; stdout: \(standardOutput) stderr: \
                \(standardError)
                """)
    }

    /// Waits for the process to end; its exit status, or nil with a signal's number when a signal ended it.
    func exit(within window: Duration = .seconds(10)) async throws -> (status: Int32?, signal: Int32?) {
        let deadline = ContinuousClock.now + window
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                throw Failure(description: "parley \(process.arguments ?? []) still running after \(window)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationReason == .exit
            ? (process.terminationStatus, nil) : (nil, process.terminationStatus)
    }
}
