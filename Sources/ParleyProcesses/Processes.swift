import Foundation

#if canImport(Glibc)
import Glibc
import Synchronization
#endif

// Running real programs: the tests drive `parley`, tmux and the reference tools, the benchmarks measure them.
//
// posix_spawn rather than Foundation's `Process`, for two reasons. Tests run in parallel, and a tmux server forked
// while another test's output pipe is open would inherit that pipe and keep it from ever reaching end-of-file: every
// pipe here is made close-on-exec under a lock that every spawn also takes. And the child starts with no signals
// blocked and default dispositions: the async runtime's threads block SIGTERM, and a child (a tmux server, a relay)
// inheriting that mask would ignore it.

/// A program could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    /// The command line.
    public var command: String
    /// The system's reason.
    public var errno: Int32

    public var description: String { "cannot start \(command): \(String(cString: strerror(errno)))" }
}

/// Where a spawned program's standard output and error go.
private enum OutputTarget {
    case devNull
    case file(String)
    case pipe(Int32)
}

private let spawnLock = NSLock()

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not import.
private let closeInheritedDescriptors:
    (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let program = dlopen(nil, RTLD_NOW),
            let symbol = dlsym(program, "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

/// Starts `path` with `arguments`: standard input from /dev/null, output as given, clean signal state, the same
/// environment. Callers that create pipes hold `spawnLock` around pipe creation and this call.
private func spawn(_ path: String, _ arguments: [String], output: OutputTarget) throws(SpawnError) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    switch output {
    case .devNull:
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    case .file(let outputPath):
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    case .pipe(let descriptor):
        posix_spawn_file_actions_adddup2(&actions, descriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, descriptor, 2)
    }
    // Last, after the pipe is in place: SwiftNIO's sockets are not close-on-exec, and a child (a tmux server living
    // on for a minute) would otherwise inherit a relay's listening socket and keep its port busy after it closed.
    _ = closeInheritedDescriptors?(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    var allSignals = sigset_t()
    sigemptyset(&noSignals)
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw SpawnError(command: ([path] + arguments).joined(separator: " "), errno: spawned) }
    return pid
}

/// The exit status of a wait: 128 + signal when the program was killed.
private func exitCode(_ status: Int32) -> Int32 {
    (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}

/// Runs a program to completion.
public enum ChildProcess {
    /// Exit status (128 + signal when killed) and combined output.
    public struct Result: Sendable {
        public var status: Int32
        public var output: String
        /// Killed (SIGKILL) because it ran past the timeout given to `run`.
        public var timedOut = false
    }

    /// Runs `path` with `arguments` and waits for it; with `captureOutput`, its standard output and error. With a
    /// `timeout`, a program still running then is killed and its result says `timedOut`, so a program that hangs
    /// fails a test instead of hanging the suite.
    public static func run(
        _ path: String, _ arguments: [String], captureOutput: Bool = true,
        timeout: Duration? = nil
    ) throws -> Result {
        var fds: [Int32] = [-1, -1]
        spawnLock.lock()
        if captureOutput {
            guard pipe(&fds) == 0 else {
                spawnLock.unlock()
                throw SpawnError(command: path, errno: errno)
            }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        }
        let pid: pid_t
        do {
            pid = try spawn(path, arguments, output: captureOutput ? .pipe(fds[1]) : .devNull)
        } catch {
            spawnLock.unlock()
            if captureOutput {
                close(fds[0])
                close(fds[1])
            }
            throw error
        }
        spawnLock.unlock()
        // The watchdog kills only while the child is unreaped (its pid cannot have been reused): `exited` is set
        // after the child is seen to exit and before it is reaped.
        let exited = Mutex(false)
        let killed = Mutex(false)
        if let timeout {
            let nanoseconds =
                timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                exited.withLock { done in
                    guard !done else { return }
                    kill(pid, SIGKILL)
                    killed.withLock { $0 = true }
                }
            }
        }
        var output = [UInt8]()
        if captureOutput {
            close(fds[1])
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(fds[0], &buffer, buffer.count)
                if count > 0 { output += buffer[0..<count] } else if count == 0 || errno != EINTR { break }
            }
            close(fds[0])
        }
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        exited.withLock { $0 = true }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Result(
            status: exitCode(status), output: String(decoding: output, as: UTF8.self),
            timedOut: killed.withLock { $0 })
    }
}

/// A program running in the background with its output in a file; killed (SIGKILL) on deinit if still running.
public final class BackgroundProcess: @unchecked Sendable {
    /// Its process id.
    public let pid: pid_t
    /// The command line, for messages.
    public let command: String
    /// Where standard output and error go.
    public let outputPath: String
    private let ownsOutput: Bool
    private var exitStatus: Int32?

    /// Starts `path` with `arguments`; output goes to `outputPath`, or to a new temporary file removed on deinit.
    public init(_ path: String, _ arguments: [String], outputPath: String? = nil) throws {
        command = ([path] + arguments).joined(separator: " ")
        ownsOutput = outputPath == nil
        self.outputPath =
            outputPath
            ?? NSTemporaryDirectory() + "parley-process-\(getpid())-\(UUID().uuidString.prefix(8)).log"
        spawnLock.lock()
        defer { spawnLock.unlock() }
        pid = try spawn(path, arguments, output: .file(self.outputPath))
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        if ownsOutput { unlink(outputPath) }
    }

    /// Everything the program printed so far.
    public var output: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// Sends a signal.
    public func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Its status (128 + signal when killed) if it has exited, nil while it runs; never waits.
    public func exitStatusNow() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        exitStatus = exitCode(status)
        return exitStatus
    }

    /// Waits up to `seconds` for the program to exit; its status (128 + signal when killed), or nil if still running.
    @discardableResult
    public func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if let status = exitStatusNow() { return status }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds.
    public func stop(grace: Double = 3) {
        guard exitStatus == nil else { return }
        signal(SIGTERM)
        if waitForExit(seconds: grace) == nil {
            signal(SIGKILL)
            waitForExit(seconds: 2)
        }
    }

    /// Polls the output until `condition` holds; false after `seconds` (or when the program exits first).
    public func waitForOutput(seconds: Double = 10, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(output) { return true }
            if waitForExit(seconds: 0) != nil { return condition(output) }
            usleep(30_000)
        }
        return condition(output)
    }

    /// Polls the output until it contains `text`.
    public func waitForOutput(containing text: String, seconds: Double = 10) -> Bool {
        waitForOutput(seconds: seconds) { $0.contains(text) }
    }
}

public final class TmuxPane {
    public static let tmuxPath: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    public let socket: String
    private var socketPath = ""

    /// Starts `command` (a shell command line) in a new detached session.
    public init(command: String, columns: Int = 40, rows: Int = 12) throws {
        socket = "parley-tui-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        _ = try ChildProcess.run(
            Self.tmuxPath ?? "/usr/bin/tmux",
            [
                "-u", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "\(columns)",
                "-y", "\(rows)", "-e", "TERM=tmux-256color", command,
            ], captureOutput: false)
        socketPath = try run(["display", "-p", "#{socket_path}"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        _ = try? run(["kill-server"])
        // The server leaves its socket file behind when it is killed.
        if socketPath.hasSuffix("/" + socket) { unlink(socketPath) }
    }

    @discardableResult
    public func run(_ arguments: [String]) throws -> String {
        try ChildProcess.run(Self.tmuxPath ?? "/usr/bin/tmux", ["-u", "-L", socket] + arguments).output
    }

    /// The pane's characters, one line per row, trailing spaces removed.
    public func text() throws -> [String] {
        try run(["capture-pane", "-p"]).components(separatedBy: "\n")
    }

    /// The pane with colour and attribute escapes.
    public func escapes() throws -> [String] {
        try run(["capture-pane", "-p", "-e"]).components(separatedBy: "\n")
    }

    /// tmux's view of the pane's modes: alternate screen, cursor, mouse reporting, keypad.
    public func modes() throws -> String {
        try run([
            "display", "-p",
            "alt=#{alternate_on} cursor=#{cursor_flag} mouse=#{mouse_standard_flag} "
                + "keypad=#{keypad_cursor_flag}",
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func send(_ keys: [String]) throws { try run(["send-keys"] + keys) }
    public func sendLiteral(_ text: String) throws { try run(["send-keys", "-l", text]) }
    public func sendBytes(_ bytes: [UInt8]) throws {
        try run(["send-keys", "-H"] + bytes.map { String($0, radix: 16) })
    }

    /// Polls the pane's escapes until `condition` holds on two captures in a row that are the same (a whole frame,
    /// not one caught between two of a program's writes); returns the last capture (even if it never held).
    @discardableResult
    public func waitForSteadyEscapes(seconds: Double = 15, _ condition: ([String]) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var previous: [String]?
        var lines = try escapes()
        while !(condition(lines) && lines == previous) && Date() < deadline {
            usleep(30_000)
            previous = lines
            lines = try escapes()
        }
        return lines
    }

    /// Polls the pane until `condition` holds on its text; returns the text (the last one seen if it never held).
    @discardableResult
    public func waitFor(seconds: Double = 15, _ condition: ([String]) -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var lines = try text()
        while !condition(lines) && Date() < deadline {
            usleep(30_000)
            lines = try text()
        }
        return lines
    }
}

/// The `parley` binary under test: `PARLEY_BIN` (set by `make test`), else the build folder next to the tests.
public func parleyBinaryPath() -> String? {
    var candidates: [String] = []
    let environment = ProcessInfo.processInfo.environment
    if let path = environment["PARLEY_BIN"] { candidates.append(path) }
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("parley").path)
    }
    let argumentZero = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    candidates.append(argumentZero.appendingPathComponent("parley").path)
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}
