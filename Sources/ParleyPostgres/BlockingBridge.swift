import Dispatch
import Synchronization

// `MessageStore` is synchronous: the relay calls it from its messaging queue, a plain dispatch thread that may block
// (SQLite blocks it too). postgres-nio is asynchronous. The bridge runs the asynchronous work on its own task
// executor, a dispatch queue, and blocks only the calling thread until it is done. The work never needs a thread of
// Swift's cooperative pool, so a caller blocking one of those (a synchronous test body) cannot starve it.

/// Runs async work to completion for a synchronous caller.
final class BlockingBridge: TaskExecutor {
    private let queue = DispatchQueue(label: "parley.postgres", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Starts long-running work (the client's connection pool) on this executor.
    func start(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task(executorPreference: self) { await body() }
    }

    /// Runs `body` and waits for it; after `timeout` the work is cancelled and `onTimeout` thrown.
    func run<T: Sendable>(
        timeout: Duration, onTimeout: @autoclosure () -> any Error,
        _ body: @escaping @Sendable () async throws -> T
    ) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Outcome<T>()
        let task = Task(executorPreference: self) {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.value.withLock { $0 = outcome }
            done.signal()
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if done.wait(timeout: .now() + seconds) == .timedOut {
            task.cancel()
            throw onTimeout()
        }
        return try result.value.withLock { $0! }.get()
    }
}

/// Where the work leaves its result for the waiting caller.
private final class Outcome<T: Sendable>: Sendable {
    let value = Mutex<Result<T, any Error>?>(nil)
}
