// The relay drops a member it has not heard from for its liveness timeout (announced in `joined`), and answers every
// ping. So the engine pings three times per timeout at most apart, so one late ping does not get it dropped, and
// never slower than configured; and three intervals without a word from the relay mean the connection stalled (a
// frozen relay or a dead network path that closed nothing): it is dropped and the reconnect begins.

/// When the engine pings the relay and when the relay's silence means a stalled connection. A value type given "now"
/// and when the relay last spoke; the engine core's repeating timer asks it at every tick.
struct KeepAliveSchedule: Equatable, Sendable {
    /// What one tick of the keep-alive timer does.
    enum Action: Equatable, Sendable {
        /// Send a ping.
        case ping
        /// The relay has been silent too long: drop the connection and reconnect.
        case reconnect
    }

    /// Shortest interval between pings, whatever the relay announces.
    static let shortestInterval: Duration = .milliseconds(50)

    /// Time between pings.
    let interval: Duration

    /// Silence from the relay longer than this (three intervals) means the connection stalled.
    var stallAfter: Duration { interval * 3 }

    /// The schedule for a configured interval and the relay's liveness timeout in seconds (0: none announced).
    init(configured: Duration, livenessTimeout seconds: Double) {
        var interval = configured
        if seconds > 0 { interval = min(interval, .milliseconds(Int64(seconds * 1000 / 3))) }
        self.interval = max(interval, Self.shortestInterval)
    }

    /// What the tick at `now` does when the relay last spoke at `lastHeard`.
    func action(now: Duration, lastHeard: Duration) -> Action {
        now - lastHeard > stallAfter ? .reconnect : .ping
    }
}
