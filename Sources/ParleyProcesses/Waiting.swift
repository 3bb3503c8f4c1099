import Foundation

// Waiting in tests without holding a thread: a test looks at what it waits for, and between looks suspends with
// `Task.sleep`, so the one or two threads of the async runtime stay free for the code under test (a blocked
// `usleep` on a 2-core machine stops every other task in the process until it returns).

/// A wait that ran out of time: what it waited for, how long, and what it saw last.
public struct WaitTimeout: Error, CustomStringConvertible {
    /// What the test waited for, in words ("bob sees alice").
    public var what: String
    /// How long it waited.
    public var timeout: Duration
    /// The last value looked at, when there was one.
    public var lastSeen: String?

    public var description: String {
        "timed out after \(timeout) waiting for \(what)" + (lastSeen.map { "; last saw: \($0)" } ?? "")
    }
}

/// Looks at `look()` until `done` holds for what it returned, and returns that value; between looks it suspends for
/// `interval`. Throws `WaitTimeout` naming `what` (and the last value seen) once `timeout` has passed.
@discardableResult
public func poll<Value>(
    _ what: String, timeout: Duration, every interval: Duration = .milliseconds(20),
    _ look: () async throws -> Value, until done: (Value) throws -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        let value = try await look()
        if try done(value) { return value }
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(what: what, timeout: timeout, lastSeen: "\(value)")
        }
        try await Task.sleep(for: interval)
    }
}

/// Looks at `condition` until it holds, suspending for `interval` between looks; throws `WaitTimeout` naming `what`
/// once `timeout` has passed.
public func waitUntil(
    _ what: String, timeout: Duration, every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(what: what, timeout: timeout) }
        try await Task.sleep(for: interval)
    }
}

extension BackgroundProcess {
    /// Waits (suspended, not blocking) until the program's output satisfies `condition`; throws `WaitTimeout`, with
    /// the output, after `timeout` or when the program exits first without it.
    @discardableResult
    public func output(
        _ what: String, within timeout: Duration, _ condition: (String) -> Bool
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = output
            if condition(seen) { return seen }
            let exited = exitStatusNow() != nil
            if exited, condition(output) { return output }
            guard !exited, ContinuousClock.now < deadline else {
                throw WaitTimeout(
                    what: what + (exited ? " (it exited first)" : "") + " from \(command)", timeout: timeout,
                    lastSeen: output)
            }
            try await Task.sleep(for: .milliseconds(30))
        }
    }

    /// Waits (suspended, not blocking) until the program's output contains `text`; see `output(_:within:_:)`.
    @discardableResult
    public func output(containing text: String, within timeout: Duration) async throws -> String {
        try await output("\"\(text)\"", within: timeout) { $0.contains(text) }
    }

    /// Waits (suspended, not blocking) up to `timeout` for the program to exit; its status (128 + signal when
    /// killed), or nil if it is still running.
    public func exitStatus(within timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = exitStatusNow() { return status }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

extension TmuxPane {
    /// Waits (suspended, not blocking) until `condition` holds on the pane's text, looking every `interval` (each look
    /// runs tmux), and returns that text; throws `WaitTimeout` naming `what`, with the pane, after `timeout`.
    @discardableResult
    public func text(
        _ what: String, within timeout: Duration, every interval: Duration = .milliseconds(30),
        _ condition: ([String]) -> Bool
    ) async throws -> [String] {
        try await poll(what, timeout: timeout, every: interval) {
            PaneCapture(lines: try text(), same: true)
        } until: {
            condition($0.lines)
        }.lines
    }

    /// Waits (suspended, not blocking) until `condition` holds on two captures of the pane's escapes in a row that
    /// are the same (a whole frame, not one caught between two of a program's writes); throws `WaitTimeout` after
    /// `timeout`.
    @discardableResult
    public func steadyEscapes(_ what: String, within timeout: Duration, _ condition: ([String]) -> Bool)
        async throws -> [String]
    {
        var previous: [String]?
        let steady = try await poll(what, timeout: timeout, every: .milliseconds(30)) { () throws -> PaneCapture in
            let lines = try escapes()
            defer { previous = lines }
            return PaneCapture(lines: lines, same: lines == previous)
        } until: { capture in
            capture.same && condition(capture.lines)
        }
        return steady.lines
    }
}

extension TmuxPane {
    /// Waits (suspended, not blocking) until `condition` holds on the pane's text and two captures `interval` apart
    /// are alike after `normalise` (a screen settled, not one caught halfway through a redraw); returns the last
    /// capture. Throws `WaitTimeout` naming `what`, with the pane, after `timeout`.
    @discardableResult
    public func settledText(
        _ what: String, within timeout: Duration, every interval: Duration = .milliseconds(150),
        normalise: ([String]) -> String = { $0.joined(separator: "\n") }, _ condition: ([String]) -> Bool
    ) async throws -> [String] {
        var previous: String?
        return try await poll(what + " on a settled screen", timeout: timeout, every: interval) {
            () throws -> PaneCapture in
            let lines = try text()
            let normalised = normalise(lines)
            defer { previous = normalised }
            return PaneCapture(lines: lines, same: normalised == previous)
        } until: { capture in
            capture.same && condition(capture.lines)
        }.lines
    }
}

/// A capture of a pane (printed as its lines, for `WaitTimeout`) and whether it equals the one before.
private struct PaneCapture: CustomStringConvertible {
    var lines: [String]
    var same: Bool
    var description: String { lines.joined(separator: "\n") }
}
