import Dispatch
import ParleyStore
import Synchronization

/// What `/healthz` found about the message store.
public enum StoreHealth: Sendable, Equatable {
    /// The relay has no message store.
    case none
    /// The check answered.
    case reachable
    /// The check failed; the store's own words.
    case failed(String)
    /// The check did not answer within the probe's timeout (or an earlier check still has not).
    case timedOut(Duration)
}

/// Asks the message store whether it answers: one cheap call, run on a thread of its own and given `timeout`. At
/// most one check runs at a time: callers while it runs share its answer, and while a timed-out check still hangs
/// every caller is told so at once, so a stuck database never piles up threads or requests.
public final class StoreHealthProbe: Sendable {
    private struct State: Sendable {
        var running = false
        var run = 0
        var stuck = false
        var waiters: [CheckedContinuation<StoreHealth, Never>] = []
    }

    private let check: @Sendable () throws -> Void
    private let timeout: Duration
    private let queue = DispatchQueue(label: "parley.admin.store-probe")
    private let state = Mutex(State())

    /// A probe running `check` (it throws when the store fails), answering `.timedOut` past `timeout`.
    public init(timeout: Duration = .seconds(2), check: @escaping @Sendable () throws -> Void) {
        self.timeout = timeout
        self.check = check
    }

    /// A probe of `store`: the last-seen time of an account name no account can have, one indexed read.
    public convenience init(store: any MessageStore, timeout: Duration = .seconds(2)) {
        // Account names are never empty, so this reads an index and finds nothing, on SQLite and PostgreSQL alike.
        self.init(timeout: timeout) { _ = try store.lastSeen("") }
    }

    /// Runs a check (or joins the one running) and says how it went.
    public func health() async -> StoreHealth {
        await withCheckedContinuation { continuation in
            let start: Int? = state.withLock { state in
                if state.stuck { return nil }
                state.waiters.append(continuation)
                if state.running { return -1 }
                state.running = true
                state.run += 1
                return state.run
            }
            guard let start else { return continuation.resume(returning: .timedOut(timeout)) }
            guard start >= 0 else { return }
            queue.async { [check] in
                let outcome: StoreHealth
                do {
                    try check()
                    outcome = .reachable
                } catch {
                    outcome = .failed("\(error)")
                }
                self.finish(outcome)
            }
            let nanoseconds =
                timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                self.expire(run: start)
            }
        }
    }

    private func finish(_ outcome: StoreHealth) {
        let waiters = state.withLock { state in
            state.running = false
            state.stuck = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    private func expire(run: Int) {
        let waiters = state.withLock { state in
            guard state.running, state.run == run, !state.stuck else {
                return [CheckedContinuation<StoreHealth, Never>]()
            }
            state.stuck = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: .timedOut(timeout)) }
    }
}
