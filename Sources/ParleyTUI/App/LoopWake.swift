import Foundation
import Synchronization

/// Wakes the call's draw loop from other threads: a decoded picture or an engine event writes one byte into a
/// pipe that the loop's wait for keys also watches, so the loop sleeps until something arrived instead of looking
/// again every millisecond.
///
/// Signals between two drains cost one `write`: a flag says a byte is already waiting. The loop drains and only
/// then looks at what arrived, and a sender sets what it sends before it signals, so nothing sent is missed.
public final class LoopWake: Sendable {
    /// The end the loop polls for reading.
    public let descriptor: Int32
    private let writeEnd: Int32
    private let signalled = Atomic<Bool>(false)

    /// A wake with a fresh pipe (both ends non-blocking and closed on exec); nil if the system has no descriptors
    /// to spare, and the loop then falls back to waking on a timer.
    public init?() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        descriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(descriptor)
        close(writeEnd)
    }

    /// Something arrived: make the loop's wait return (once, however often this is called before it drains).
    public func signal() {
        guard !signalled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe; call when the wait returned, before looking at what arrived.
    public func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(descriptor, &bytes, bytes.count) > 0 {}
        signalled.store(false, ordering: .sequentiallyConsistent)
    }
}
