import Foundation

/// Asks tmux now and then what its client terminal can do (`#{client_termfeatures}`), so that a re-attach from
/// another terminal (one with 24-bit colour, or one without) changes how pictures are coloured.
///
/// tmux sends the pane a resize when the new client's size differs, and `Terminal` asks at once then (`askNow`);
/// a client of the same size is seen within `interval`. The asking runs on a thread of its own (tmux answers in a
/// few milliseconds, or within a second at worst), so drawing never waits for it.
final class TmuxClientWatch: @unchecked Sendable {
    /// Longest time a re-attach from a terminal of the same size goes unnoticed.
    static let interval: TimeInterval = 5

    private let ask: @Sendable () -> String?
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var features: String?
    private var changes = 0
    private var asked = false
    private var stopped = false

    /// Watches with `ask` (which returns the client's features, or nil when tmux did not answer), starting from
    /// `initial`, what start-up saw.
    init(initial: String?, interval: TimeInterval = TmuxClientWatch.interval, ask: @escaping @Sendable () -> String?) {
        self.ask = ask
        features = initial
        let thread = Thread { [self] in run(interval: interval) }
        thread.name = "parley tmux client watch"
        thread.start()
    }

    /// The client's features as last seen, and how many times they changed since start-up.
    var latest: (features: String?, changes: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (features, changes)
    }

    /// Asks tmux again without waiting for the interval (after a resize: a client may have attached).
    func askNow() {
        condition.lock()
        asked = true
        condition.broadcast()
        condition.unlock()
    }

    /// Ends the thread after the question under way, if any.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func run(interval: TimeInterval) {
        while true {
            condition.lock()
            let until = Date().addingTimeInterval(interval)
            while !asked && !stopped && condition.wait(until: until) {}
            asked = false
            if stopped {
                condition.unlock()
                return
            }
            condition.unlock()
            guard let answer = ask() else { continue }
            condition.lock()
            if answer != features {
                features = answer
                changes += 1
            }
            condition.unlock()
        }
    }
}
