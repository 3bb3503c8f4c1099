import Dispatch
import Foundation

/// Turns SIGINT and SIGTERM into an async wait, so commands can shut down cleanly instead of dying mid-write.
enum Signals {
    /// Ignores the default action of `signals` and returns when the first of them arrives.
    static func wait(for signals: [Int32] = [SIGINT, SIGTERM]) async -> Int32 {
        await withCheckedContinuation { continuation in
            let box = SignalSources(continuation: continuation)
            for number in signals {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { box.fire(number) }
                source.resume()
                box.retain(source)
            }
        }
    }
}

/// Keeps the dispatch sources alive and resumes the waiter once.
private final class SignalSources: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(continuation: CheckedContinuation<Int32, Never>) {
        self.continuation = continuation
    }

    func retain(_ source: any DispatchSourceSignal) {
        lock.withLock { sources.append(source) }
    }

    func fire(_ number: Int32) {
        let waiting = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: number)
    }
}
