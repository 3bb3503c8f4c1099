import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The write end of the self-pipe; the C signal handler may only touch async-signal-safe things like this.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Turns SIGINT and SIGTERM into an async wait, so commands shut down cleanly instead of dying mid-write.
///
/// A `sigaction` handler replaces the default action atomically and writes the signal number into a pipe (the
/// self-pipe trick), so no signal is lost or fatal however early it comes. (A dispatch signal source arms
/// asynchronously, which left a window where an early SIGTERM was ignored.) Create it before announcing readiness.
final class Signals: @unchecked Sendable {
    private let lock = NSLock()
    private var received: Int32?
    private var continuation: CheckedContinuation<Int32, Never>?
    private var cancelled = false

    /// Catches `signals` from now on.
    init(_ signals: [Int32] = [SIGINT, SIGTERM]) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            signalPipeWriteEnd = ends[1]
        }
        for number in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
        let readEnd = ends[0]
        let thread = Thread { [weak self] in
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) < 0 && errno == EINTR {}
            self?.fire(Int32(byte))
        }
        thread.start()
    }

    /// Returns when the first caught signal arrives (at once if one already did).
    /// A cancelled task's wait returns 0 (no signal), so a task group waiting on it can end.
    func wait() async -> Int32 {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let already = lock.withLock { () -> Int32? in
                    if let received { return received }
                    if cancelled { return 0 }
                    self.continuation = continuation
                    return nil
                }
                if let already { continuation.resume(returning: already) }
            }
        } onCancel: {
            let waiting = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
                cancelled = true
                defer { continuation = nil }
                return continuation
            }
            waiting?.resume(returning: 0)
        }
    }

    private func fire(_ number: Int32) {
        let waiting = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
            if received == nil { received = number }
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: number)
    }
}
