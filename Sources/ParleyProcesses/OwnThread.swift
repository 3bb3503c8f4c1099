import Foundation

/// Runs `body` on a thread of its own and awaits its result without holding a thread meanwhile.
///
/// Blocking work (waiting for a program, a socket, a lock) must not run on the async runtime's threads: there is one
/// per core, and on Linux `DispatchQueue.global()` hands out the same ones, so two blocked callers on a 2-core
/// machine stop every task in the process until they return.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// `onOwnThread` for work that cannot fail.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
