import Dispatch
import NIOCore
import Synchronization

/// Whether an event loop runs a task within a time limit: the relay's liveness for `/healthz`. A relay loop stuck in
/// a long task, or spinning, forwards nothing either, so "the process answers HTTP" alone would be a false "up".
enum EventLoopProbe {
    /// True when `loop` ran an empty task within `limit`; false past it (a late answer is ignored).
    static func answers(_ loop: any EventLoop, within limit: Duration) async -> Bool {
        let answer = FirstAnswer()
        return await withCheckedContinuation { continuation in
            answer.wait(continuation)
            loop.submit {}.whenComplete { result in answer.give((try? result.get()) != nil) }
            let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { answer.give(false) }
        }
    }
}

/// A continuation resumed by whichever answer comes first.
private final class FirstAnswer: Sendable {
    private let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)

    func wait(_ waiting: CheckedContinuation<Bool, Never>) {
        continuation.withLock { $0 = waiting }
    }

    func give(_ answer: Bool) {
        let waiting = continuation.withLock { waiting in
            defer { waiting = nil }
            return waiting
        }
        waiting?.resume(returning: answer)
    }
}
