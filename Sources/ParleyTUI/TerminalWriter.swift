import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes the picture bursts to the terminal on a thread of its own, so the next frame is drawn while the terminal
/// (tmux parsing, an ssh link, a slow emulator) still takes the last one.
///
/// Order on the wire is kept by the caller: nothing else writes to the terminal (curses included) until `wait`
/// returns. At most `limit` bursts wait to be written; `send` blocks while that many are pending.
final class TerminalWriter: @unchecked Sendable {
    /// The most bursts that wait to be written at once.
    static let limit = 2

    private let descriptor: Int32
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [[UInt8]] = []
    private var writing = false
    private var stopping = false
    private var finished = false

    private var started = false

    /// A writer to `descriptor`; its thread starts with the first `send` and ends with `stop`.
    init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
    }

    /// True while bytes handed over are not all written.
    var isBusy: Bool {
        condition.lock()
        defer { condition.unlock() }
        return writing || !pending.isEmpty
    }

    /// Hands `bytes` to the writer thread and returns (after waiting while `limit` bursts are pending).
    func send(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        condition.lock()
        while pending.count >= Self.limit && !finished { condition.wait() }
        if finished {
            condition.unlock()
            Self.writeAll(bytes, to: descriptor)
            return
        }
        pending.append(bytes)
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "parley terminal writer"
            thread.start()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until everything handed over is written.
    func wait() {
        condition.lock()
        while writing || !pending.isEmpty { condition.wait() }
        condition.unlock()
    }

    /// Writes what is pending, then ends the thread. Later `send`s write at once on the caller's thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while started && !finished { condition.wait() }
        finished = true
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while pending.isEmpty && !stopping { condition.wait() }
            if pending.isEmpty { break }
            var bytes = pending.removeFirst()
            writing = true
            condition.unlock()
            Self.writeAll(bytes, to: descriptor)
            // Dropped before anyone is told, so the caller's buffer is uniquely referenced again (no copy when it
            // builds the next burst in it).
            bytes = []
            condition.lock()
            writing = false
            condition.broadcast()
        }
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Writes all of `bytes` to `descriptor`, retrying after interruptions; gives up on any other error (a closed
    /// terminal).
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32 = STDOUT_FILENO) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        // A non-blocking terminal: wait until it takes more instead of spinning.
                        var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&ready, 1, 100)
                        continue
                    }
                    break
                }
                offset += written
            }
        }
    }
}
