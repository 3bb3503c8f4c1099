import Testing

@testable import ParleyEngine

/// When the engine pings the relay and when the relay's silence means a stalled connection; times are inputs.
struct KeepAliveScheduleTests {
    /// (name, configured interval in ms, liveness timeout announced in s, expected interval in ms).
    static let intervals: [(name: String, configured: Int64, liveness: Double, interval: Int64)] = [
        ("a 10 s timeout leaves 2 s as it is (a third is 3.3 s)", 2_000, 10, 2_000),
        ("a 3 s timeout pings every second", 2_000, 3, 1_000),
        ("a third of the timeout, rounded down to the millisecond", 5_000, 10, 3_333),
        ("no timeout announced: as configured", 2_000, 0, 2_000),
        ("never faster than 50 ms", 2_000, 0.09, 50),
        ("a configured 10 ms is held to 50 ms", 10, 0, 50),
    ]

    @Test(arguments: intervals.indices)
    func interval(_ index: Int) {
        let row = Self.intervals[index]
        let schedule = KeepAliveSchedule(configured: .milliseconds(row.configured), livenessTimeout: row.liveness)
        #expect(schedule.interval == .milliseconds(row.interval), "\(row.name)")
        #expect(schedule.stallAfter == .milliseconds(row.interval * 3), "\(row.name)")
    }

    /// (name, when the relay last spoke in ms, the tick's time in ms, what the tick does); interval 1 s.
    static let ticks: [(name: String, lastHeard: Int64, now: Int64, action: KeepAliveSchedule.Action)] = [
        ("just heard from: ping", 1_000, 1_000, .ping),
        ("silent two intervals: ping", 0, 2_000, .ping),
        ("silent exactly three intervals: still a ping", 0, 3_000, .ping),
        ("silent a millisecond past three intervals: reconnect", 0, 3_001, .reconnect),
        ("silent long: reconnect", 0, 60_000, .reconnect),
        ("heard from late in the call: ping", 57_500, 60_000, .ping),
    ]

    @Test(arguments: ticks.indices)
    func tick(_ index: Int) {
        let row = Self.ticks[index]
        let schedule = KeepAliveSchedule(configured: .seconds(2), livenessTimeout: 3)
        #expect(
            schedule.action(now: .milliseconds(row.now), lastHeard: .milliseconds(row.lastHeard)) == row.action,
            "\(row.name)")
    }

    @Test("a relay that stops answering: pings at every tick, then the fourth tick after its last word reconnects")
    func aFrozenRelay() {
        let schedule = KeepAliveSchedule(configured: .seconds(2), livenessTimeout: 10)
        // The relay last answered at 4 s; the timer ticks every 2 s from 2 s on.
        let actions = (1...6).map { schedule.action(now: .seconds(2 * $0), lastHeard: .seconds(4)) }
        #expect(actions == [.ping, .ping, .ping, .ping, .ping, .reconnect])
    }
}
