import Testing

@testable import ParleyTUI

/// The call screen's draw pacing, driven by arrival times given by hand: pictures at the draw rate with jitter are
/// each drawn when they arrive; faster pictures are drawn at the draw rate; a lag left by a burst does not stay.
struct DrawPacerTests {
    /// Runs the loop's rule over pictures arriving at `arrivals` (ms): a picture is drawn on arrival when the pacer
    /// allows, else at the moment the pacer says it is due (if no newer picture replaced it first). Returns each
    /// draw's time and how long after its picture's arrival it came.
    static func run(_ arrivals: [Double], interval: Duration = .milliseconds(33)) -> [(at: Double, late: Double)] {
        var pacer = DrawPacer(interval: interval)
        var draws: [(at: Double, late: Double)] = []
        var pending: Double?
        var index = 0
        var now = 0.0
        while index < arrivals.count || pending != nil {
            // The next thing to happen: a picture arriving, or the pending one falling due.
            pacer.advance(to: .microseconds(Int64(now * 1000)))
            let due = pending.map { _ in now + pacer.untilDue / .milliseconds(1) }
            let next = index < arrivals.count ? arrivals[index] : Double.infinity
            if let due, due <= next {
                now = due
                pacer.advance(to: .microseconds(Int64((now * 1000).rounded(.up))))
                pacer.drew()
                draws.append((now, now - pending!))
                pending = nil
            } else {
                now = next
                index += 1
                if pending == nil { pending = now }
                pacer.advance(to: .microseconds(Int64(now * 1000)))
                if pacer.mayDraw {
                    pacer.drew()
                    draws.append((now, now - pending!))
                    pending = nil
                }
            }
        }
        return draws
    }

    /// Pictures every `period` ms for `seconds`, each moved by a repeating jitter pattern (ms).
    static func arrivals(period: Double, seconds: Double, jitter: [Double] = [0]) -> [Double] {
        let count = Int(seconds * 1000 / period)
        return (0..<count).map { 100 + Double($0) * period + jitter[$0 % jitter.count] }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var period: Double
        var jitter: [Double]
        /// At most this many pictures may be drawn late (more than 0.01 ms after arriving).
        var lateAtMost: Int
        var testDescription: String { name }
    }

    static let onTime: [Case] = [
        Case(name: "30 fps, steady", period: 1000 / 30, jitter: [0], lateAtMost: 0),
        Case(name: "29.97 fps, steady", period: 1000 / 29.97, jitter: [0], lateAtMost: 0),
        Case(name: "30 fps, ±6 ms jitter", period: 1000 / 30, jitter: [0, 6, -6, 3, -3, 5, -5, 0], lateAtMost: 0),
        Case(name: "30 fps, a late one then an early one", period: 1000 / 30, jitter: [0, 0, 12, -12], lateAtMost: 0),
        Case(name: "25 fps, ±8 ms jitter", period: 40, jitter: [8, -8, 0], lateAtMost: 0),
    ]

    @Test("pictures at or below the draw rate are drawn as they arrive, jitter and all", arguments: onTime)
    func drawnOnArrival(_ c: Case) {
        let draws = Self.run(Self.arrivals(period: c.period, seconds: 10, jitter: c.jitter))
        let late = draws.filter { $0.late > 0.01 }
        #expect(late.count <= c.lateAtMost, "late draws: \(late.prefix(5))")
        #expect(draws.count == Self.arrivals(period: c.period, seconds: 10).count)
    }

    @Test("pictures faster than the draw rate are drawn at the draw rate, plus the bucket's few in hand")
    func capped() {
        for period in [1000 / 60.0, 1000 / 45.0, 5.0] {
            let draws = Self.run(Self.arrivals(period: period, seconds: 10))
            let span = draws.last!.at - draws.first!.at
            let allowed = Int(span / 33) + 1 + Int(DrawPacer.burst)
            #expect(draws.count <= allowed, "period \(period) ms: \(draws.count) draws in \(span) ms")
            #expect(draws.count >= allowed - 4, "period \(period) ms: \(draws.count) draws in \(span) ms")
            // No stretch of one second holds more than a second's draws and the bucket.
            for first in draws.indices {
                let inSecond = draws[first...].prefix { $0.at < draws[first].at + 1000 }.count
                #expect(inSecond <= 31 + Int(DrawPacer.burst), "period \(period) ms from \(draws[first].at)")
            }
        }
    }

    @Test("after a burst of fast pictures empties the bucket, pictures at the draw rate catch up within 4 s")
    func recovers() {
        // 30 fps is 33.3 ms, the interval 33 ms: the bucket gains 1 % of a draw a picture, so a lag of a whole
        // interval (the worst) is gone after 100 pictures.
        let burst = (0..<100).map { 100 + Double($0) * 5 }
        let steady = Self.arrivals(period: 1000 / 30, seconds: 8).map { $0 + 600 }
        let draws = Self.run(burst + steady)
        #expect(draws.contains { $0.at > 600 && $0.late > 1 }, "the burst left a lag (else this shows nothing)")
        let afterRecovery = draws.filter { $0.at > 600 + 4000 }
        #expect(!afterRecovery.isEmpty)
        #expect(afterRecovery.allSatisfy { $0.late < 0.01 }, "\(afterRecovery.filter { $0.late >= 0.01 }.prefix(5))")
    }

    @Test("the bucket: full at start, one draw per interval earned, never above its size or below empty")
    func bucket() {
        var pacer = DrawPacer(interval: .milliseconds(10))
        #expect(pacer.tokens == DrawPacer.burst)
        for _ in 0..<5 { pacer.drew() }
        #expect(pacer.tokens == 0)
        #expect(!pacer.mayDraw)
        #expect(pacer.untilDue == .milliseconds(10))
        pacer.advance(to: .milliseconds(5))
        #expect(pacer.untilDue == .milliseconds(5))
        pacer.advance(to: .milliseconds(3))
        #expect(pacer.tokens == 0.5, "time running backwards changes nothing")
        pacer.advance(to: .milliseconds(10))
        #expect(pacer.mayDraw)
        #expect(pacer.untilDue == .zero)
        pacer.advance(to: .seconds(10))
        #expect(pacer.tokens == DrawPacer.burst)
    }
}
