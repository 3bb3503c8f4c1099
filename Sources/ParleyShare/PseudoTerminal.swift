import CVTermShim
import Foundation
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// A shared program could not be started or its terminal not made.
public struct PseudoTerminalError: Error, Equatable, Sendable, CustomStringConvertible {
    public var step: String
    public var errno: Int32

    public var description: String { "cannot \(step): \(String(cString: strerror(errno)))" }
}

/// A program running in a pseudo-terminal of its own, the session leader with that terminal as its controlling one
/// (so job control and ^C work in it as in any terminal): what it writes is read from `primary`, what is written
/// there is its input.
public final class PseudoTerminalProgram {
    /// The terminal's primary side (non-blocking).
    public let primary: Int32
    public let pid: pid_t
    private var exitStatus: Int32?

    /// POSIX_SPAWN_SETSID (glibc 2.26), a macro Swift's Glibc module does not import.
    private static let spawnSetSID: Int32 = 0x80

    /// Starts `command` (a path and its arguments) in a terminal of `rows` × `columns` with `environment`.
    public init(command: [String], rows: Int, columns: Int, environment: [String: String]) throws(PseudoTerminalError) {
        guard let program = command.first else {
            throw PseudoTerminalError(step: "start an empty command", errno: EINVAL)
        }
        var name = [CChar](repeating: 0, count: 128)
        let primary = parley_pty_open(&name, name.count)
        guard primary >= 0 else { throw PseudoTerminalError(step: "open a pseudo-terminal", errno: -primary) }
        let size = parley_pty_set_size(primary, Int32(rows), Int32(columns))
        guard size == 0 else {
            close(primary)
            throw PseudoTerminalError(step: "size the pseudo-terminal \(columns)x\(rows)", errno: size)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // After setsid, the first terminal the new session opens becomes its controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, name, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        var allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | Self.spawnSetSID))
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
        guard status == 0 else {
            close(primary)
            throw PseudoTerminalError(step: "start \(program)", errno: status)
        }
        _ = fcntl(primary, F_SETFL, fcntl(primary, F_GETFL) | O_NONBLOCK)
        self.primary = primary
        self.pid = pid
    }

    /// Hangs the terminal up (the program gets SIGHUP, as when a terminal window closes); one still there 100 ms
    /// later is killed, so this never waits long on a program that ignores the hangup.
    deinit {
        close(primary)
        guard exitStatus == nil else { return }
        kill(pid, SIGHUP)
        var status: Int32 = 0
        var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
        for _ in 0..<20 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            nanosleep(&pause, nil)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    /// What the program wrote since the last read, at most `limit` bytes; empty when nothing is waiting, nil once
    /// its terminal is closed (the program and everything it started have gone).
    public func read(limit: Int = 65_536) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(primary, $0.baseAddress, limit) }
        if count > 0 { return Array(buffer[..<count]) }
        if count < 0, errno == EAGAIN || errno == EINTR { return [] }
        return nil  // EIO: the last holder of the terminal's other side closed it
    }

    /// Types `bytes` into the program, as much as its terminal takes now; returns how many were taken.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Int {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(primary, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            written += count
        }
        return written
    }

    /// Tells the program its terminal has a new size (it gets SIGWINCH).
    public func resize(rows: Int, columns: Int) throws(PseudoTerminalError) {
        let status = parley_pty_set_size(primary, Int32(rows), Int32(columns))
        guard status == 0 else { throw PseudoTerminalError(step: "resize the terminal", errno: status) }
    }

    /// The program's exit status once it has ended (nil while it runs); a signal's number is given as 128 + it.
    public func exited() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        exitStatus = code
        return code
    }
}
