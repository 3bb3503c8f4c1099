import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes the picture bursts to the terminal without making the draw loop wait on it: what the terminal takes at
/// once is written on the caller's thread, and the rest on a thread of its own, so the next frame is drawn while
/// the terminal (tmux parsing, an ssh link, a slow emulator) still takes the last one.
///
/// Why not always the thread: handing every burst over woke a second thread once a frame, for a write the terminal
/// takes at once nearly always (a tmux pane buffers 64 KiB, a frame's burst is ~6 KiB), and a wake-up is not free
/// on a virtual machine (two threads waking each other 100 times a second took 0.5 % of a core on an idle one here;
/// a drawing client in a 1:1 call cost 0.2–0.5 points less per side without the hand-over).
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
    /// The terminal opened a second time, non-blocking, for the writes made on the caller's thread: a descriptor of
    /// its own, so curses' descriptor stays blocking. Nil where it cannot be reopened; every burst then goes
    /// through the thread.
    private let direct: Int32?

    /// A writer to `descriptor`; its thread starts with the first burst the terminal cannot take at once and ends
    /// with `stop`.
    init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
        direct = Self.reopenNonBlocking(descriptor)
    }

    deinit {
        if let direct { close(direct) }
    }

    /// True once the writer thread runs (a burst had to wait for the terminal).
    var hasThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        return started
    }

    /// True while bytes handed over are not all written.
    var isBusy: Bool {
        condition.lock()
        defer { condition.unlock() }
        return writing || !pending.isEmpty
    }

    /// Writes what the terminal takes of `bytes` now and hands the rest to the writer thread, then returns (after
    /// waiting while `limit` bursts are pending).
    func send(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        var bytes = bytes
        if let direct, isIdle {
            // Nothing is pending, so nothing can overtake: what fits goes now, the rest to the thread below.
            let written = Self.writeWhatFits(bytes, to: direct)
            if written == bytes.count { return }
            if written > 0 { bytes.removeFirst(written) }
        }
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

    /// Nothing waits to be written and the thread is not stopped.
    private var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !writing && pending.isEmpty && !finished
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

    /// Opens what `descriptor` refers to once more, non-blocking (Linux: through /proc), when it is a terminal or a
    /// pipe; nil otherwise (a regular file would be written from its start).
    static func reopenNonBlocking(_ descriptor: Int32) -> Int32? {
        #if os(Linux)
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFCHR || kind == S_IFIFO else { return nil }
        let reopened = open("/proc/self/fd/\(descriptor)", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        return reopened >= 0 ? reopened : nil
        #else
        return nil
        #endif
    }

    /// Writes as much of `bytes` to the non-blocking `descriptor` as it takes now; returns how many bytes went.
    static func writeWhatFits(_ bytes: [UInt8], to descriptor: Int32) -> Int {
        bytes.withUnsafeBytes { write($0, from: 0, to: descriptor).reached }
    }

    /// Writes all of `bytes` to `descriptor`, retrying after interruptions and waiting while a non-blocking terminal
    /// is full; gives up on any other error (a closed terminal).
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32 = STDOUT_FILENO) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let (reached, error) = write(buffer, from: offset, to: descriptor)
                offset = reached
                guard error == EAGAIN else { break }
                // Wait until it takes more instead of spinning.
                var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, 100)
            }
        }
    }

    /// Writes `buffer` from `start` until it is all written or a write fails (retrying after interruptions): where
    /// it stopped, and the error that stopped it (nil when all went, or the descriptor took nothing).
    private static func write(_ buffer: UnsafeRawBufferPointer, from start: Int, to descriptor: Int32)
        -> (reached: Int, error: Int32?)
    {
        var offset = start
        while offset < buffer.count {
            let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return (offset, errno)
            }
            if written == 0 { return (offset, nil) }
            offset += written
        }
        return (offset, nil)
    }
}
