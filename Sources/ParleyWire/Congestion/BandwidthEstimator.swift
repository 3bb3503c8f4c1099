// A sender's estimate of what its path carries, from transport-wide feedback (Google congestion control,
// draft-ietf-rmcat-gcc-02, read against libwebrtc's GoogCC and pion's interceptor): the delay trend drives an
// additive-increase, multiplicative-decrease rate (down to 85 % of what the receiver acknowledged when the queue
// fills; up 8 % a second far from the last known capacity, about a packet per response time near it), loss drives a
// second rate (down by half the loss above 10 %, up 8 % a second below 2 %), and the target is the lower of the two.
// Time is an input: every call takes the sender's clock in ms.

/// Why the estimate is where it is, for the `i` overlay and the stats file.
public enum EstimateReason: Sendable, Equatable, CustomStringConvertible {
    /// No feedback yet: the start rate.
    case starting
    /// Delay and loss are low: climbing.
    case climbing
    /// The path's queue is filling: backed off.
    case delay
    /// Packets are being lost (the fraction of the last interval).
    case loss(Double)
    /// Held after a change, or while the queue drains.
    case holding
    /// At the most the sender wants to send.
    case ceiling
    /// Raised to what a probe found the link carries.
    case probed

    public var description: String {
        switch self {
        case .starting: "starting"
        case .climbing: "climbing"
        case .delay: "delay rising"
        case .loss(let fraction): "loss \(Int((fraction * 100).rounded())) %"
        case .holding: "holding"
        case .ceiling: "at the ceiling"
        case .probed: "raised by a probe"
        }
    }
}

/// What the receiver acknowledged lately, as a rate: bytes of packets that arrived over the last `window` of their
/// arrival times.
struct AcknowledgedRate: Sendable {
    static let window = 500.0
    private var arrivals: [(at: Double, size: Int)] = []
    private var bytes = 0

    mutating func add(at arrival: Double, size: Int) {
        arrivals.append((arrival, size))
        bytes += size
        let horizon = (arrivals.last?.at ?? arrival) - Self.window
        var drop = 0
        while drop < arrivals.count, arrivals[drop].at < horizon {
            bytes -= arrivals[drop].size
            drop += 1
        }
        if drop > 0 { arrivals.removeFirst(drop) }
        // Bounded however feedback is shaped: 4,096 packets in half a second is 65 Mbit/s of small packets.
        if arrivals.count > 4_096 {
            bytes -= arrivals[0].size
            arrivals.removeFirst()
        }
    }

    /// Bits a second, nil until half a window (250 ms) of arrivals is known: over less, the first feedback of a
    /// call, a keyframe's burst over a quiet start weighs as much as the rest and the rate says little.
    var bitsPerSecond: Double? {
        guard let first = arrivals.first, let last = arrivals.last, last.at - first.at >= Self.window / 2 else {
            return nil
        }
        return Double(bytes * 8) * 1_000 / (last.at - first.at)
    }
}

/// One sender's bandwidth estimate.
public struct BandwidthEstimator: Sendable {
    /// The range the estimate stays in and where it starts (bits a second).
    public struct Limits: Sendable, Equatable {
        public var minimum: Double
        public var start: Double
        public var maximum: Double

        public init(minimum: Double = 30_000, start: Double = 300_000, maximum: Double = 2_500_000) {
            self.minimum = minimum
            self.start = start
            self.maximum = maximum
        }
    }

    enum RateState: Sendable { case hold, increase, decrease }

    public let limits: Limits
    /// Sent packets waiting for feedback.
    public var history = SentPacketHistory()
    private(set) var delay = DelayTrend()
    private var acknowledged = AcknowledgedRate()
    private var delayBased: Double
    private var lossBased: Double
    private var state = RateState.hold
    private var lastIncrease: Double?
    private var lastDecrease: Double?
    private var lastLossIncrease: Double?
    private var lastLossDecrease: Double?
    /// The acknowledged rate at the last decreases, smoothed: where the link's capacity was last found.
    private var capacity: Double?
    private var lost = 0
    private var reported = 0
    private var lossIntervalStart: Double?
    /// The intervals of the last 2 s (at most 16): loss is judged over them together.
    private var lossIntervals: [(at: Double, reported: Int, lost: Int)] = []
    /// The loss the link has without congestion (random loss on a radio link), learned slowly and at most 5 %.
    public private(set) var inherentLoss = 0.0
    /// Round-trip time used for the response time (ms); the engine sets it from RTCP.
    public var roundTrip = 100.0
    /// Probing for room to climb (`UplinkProbe`).
    public private(set) var probe = UplinkProbe()
    /// When the first feedback came: calm is counted from it until a decrease.
    private var firstFeedback: Double?

    /// What the sender should aim at now (bits a second).
    public private(set) var target: Double
    /// Why `target` is where it is.
    public private(set) var reason = EstimateReason.starting
    /// The loss fraction over the last 2 s of full intervals.
    public private(set) var loss = 0.0

    /// An estimator within `limits`.
    public init(limits: Limits = Limits()) {
        self.limits = limits
        delayBased = limits.start
        lossBased = limits.maximum
        target = limits.start
    }

    /// Notes a packet sent (`size` bytes at `now` ms) and returns its transport-wide sequence number.
    public mutating func sent(size: Int, at now: Double) -> UInt16 {
        let sequence = history.next()
        noteSent(sequence, size: size, at: now)
        return sequence
    }

    /// Notes that the packet numbered `sequence` (from `history.next()`) left at `now` (ms), `size` bytes on the
    /// wire: remembered for feedback, and counted toward a probe sending.
    public mutating func noteSent(_ sequence: UInt16, size: Int, at now: Double) {
        let unwrapped = history.sent(sequence, size: size, at: now)
        probe.sent(unwrapped, size: size, at: now)
    }

    /// A probe to start at `now` when the estimate holds the sender under what it `wanted` (bits a second) and the
    /// link has been calm for 2 s (no decrease, no queue filling, loss no more than the link's own); nil otherwise.
    /// The caller sends padding beside its media while it runs (`probe.paddingOwed(at:)`).
    public mutating func startProbe(at now: Double, wanted: Double) -> ProbeCluster? {
        let calm =
            state == .increase && delay.usage == .normal && loss - inherentLoss < 0.02
            ? [firstFeedback, lastDecrease, lastLossDecrease].compactMap { $0 }.max() : nil
        // 10 % past the capacity found at the last decreases, without a decrease since: the link has room again.
        let pastCapacity = capacity.map { target > 1.1 * $0 } ?? false
        return probe.start(
            at: now, estimate: target, wanted: min(wanted, limits.maximum), calmSince: calm, pastCapacity: pastCapacity)
    }

    /// Takes one feedback packet received at `now` (ms) and returns the new target (bits a second).
    @discardableResult
    public mutating func feedback(_ feedback: TransportFeedback, at now: Double) -> Double {
        let results = history.results(of: feedback)
        guard !results.isEmpty else { return target }
        firstFeedback = firstFeedback ?? now
        for result in results {
            reported += 1
            guard let arrival = result.arrivedAt else {
                lost += 1
                continue
            }
            acknowledged.add(at: arrival, size: result.size)
            delay.add(sentAt: result.sentAt, arrivedAt: arrival)
        }
        let before = delayBased
        updateDelayBased(at: now)
        updateLossBased(at: now)
        // A decrease to under 70 %: the link changed, so the next probe waits only for calm.
        if delayBased < 0.7 * before { probe.linkChanged() }
        var probed = false
        if case .carried(let rate)? = probe.feedback(results, at: now), rate > target, state == .increase {
            // The link carried more than the estimate: start from there, the old capacity forgotten.
            delayBased = min(max(delayBased, rate), limits.maximum)
            lossBased = max(lossBased, delayBased)
            capacity = nil
            probed = true
        }
        let lower = min(delayBased, lossBased)
        target = min(max(lower, limits.minimum), limits.maximum)
        if probed {
            reason = .probed
        } else if lossBased < delayBased, loss - inherentLoss > 0.1 {
            reason = .loss(loss)
        } else if target >= limits.maximum {
            reason = .ceiling
        } else if delay.usage == .overusing || state == .decrease {
            reason = .delay
        } else if state == .increase {
            reason = .climbing
        } else {
            reason = .holding
        }
        return target
    }

    private mutating func updateDelayBased(at now: Double) {
        let acked = acknowledged.bitsPerSecond
        switch delay.usage {
        case .overusing:
            state = .decrease
            guard lastDecrease.map({ now - $0 >= roundTrip }) ?? true else { return }
            // Too early to know what gets through (the first quarter second of a call): held, not decreased.
            guard let acked else { return }
            delayBased = min(delayBased, 0.85 * acked)
            capacity = capacity.map { 0.95 * $0 + 0.05 * acked } ?? acked
            lastDecrease = now
            lastIncrease = nil
        case .underusing:
            state = .hold
            lastIncrease = nil
        case .normal:
            if state != .increase {
                state = .increase
                lastIncrease = now
                return
            }
            let elapsed = min(now - (lastIncrease ?? now), 1_000)
            lastIncrease = now
            // A sender that does not use what it has cannot learn it has more: no climb past 1.5 times what gets
            // through. The limit holds the rate, never lowers it (as libwebrtc's AIMD): lowering it made a spiral
            // down whenever the encoder sent under its target (a `mobile` link's call fell from 441 to 210 kbit/s
            // "climbing", its camera with it).
            let limit = acked.map { 1.5 * $0 + 10_000 } ?? .infinity
            guard delayBased < limit else { return }
            var increased = delayBased
            if let capacity, delayBased > 0.9 * capacity, delayBased < 1.5 * capacity {
                // Near the capacity found last: about one packet more per response time.
                let responseTime = roundTrip + 100
                increased += max(1_000 * elapsed / 1_000, 1_200 * 8 * elapsed / responseTime)
            } else {
                if let found = capacity, delayBased >= 1.5 * found { capacity = nil }
                increased += max(1_000, delayBased * (pow108(elapsed / 1_000) - 1))
            }
            delayBased = min(increased, limit)
        }
        delayBased = min(max(delayBased, limits.minimum), limits.maximum)
    }

    /// GCC's loss rule, judged against the link's own loss: loss over the last 2 s of intervals, less what the link
    /// loses anyway (learned while the delay says no queue is filling, at most 5 %). Judged interval by interval, a
    /// burst of three lost in twenty packets read as 15 % congestion, and random loss in bursts (5 % on a Wi-Fi link,
    /// 1 % on a mobile one) held the estimate near 200 kbit/s on a link with room for megabits.
    private mutating func updateLossBased(at now: Double) {
        let start = lossIntervalStart ?? now
        lossIntervalStart = start
        // An interval is at least 20 packets and 200 ms, so one lost packet of five is not 20 % loss.
        guard reported >= 20, now - start >= 200 else { return }
        lossIntervals.append((now, reported, lost))
        lossIntervals.removeAll { now - $0.at > 2_000 }
        if lossIntervals.count > 16 { lossIntervals.removeFirst(lossIntervals.count - 16) }
        lost = 0
        reported = 0
        lossIntervalStart = now
        let (windowLost, windowReported) = lossIntervals.reduce((0, 0)) { ($0.0 + $1.lost, $0.1 + $1.reported) }
        loss = Double(windowLost) / Double(max(1, windowReported))
        if delay.usage != .overusing, state != .decrease {
            inherentLoss = min(0.05, 0.9 * inherentLoss + 0.1 * loss)
        }
        let excess = loss - inherentLoss
        if excess > 0.1 {
            guard lastLossDecrease.map({ now - $0 >= 300 + roundTrip }) ?? true else { return }
            lossBased = max(limits.minimum, min(lossBased, target) * (1 - 0.5 * loss))
            lastLossDecrease = now
        } else if excess < 0.02 {
            guard lastLossIncrease.map({ now - $0 >= 1_000 }) ?? true else { return }
            lossBased = min(limits.maximum, lossBased * 1.08 + 1_000)
            lastLossIncrease = now
        }
    }
}

/// 1.08 to the power `seconds` (0...1), without Foundation.
private func pow108(_ seconds: Double) -> Double {
    // exp(seconds * ln 1.08) by its series: seconds * ln 1.08 is at most 0.077, so four terms are exact to 1e-7.
    let x = seconds * 0.076_961_041_136_128_3
    return 1 + x + x * x / 2 + x * x * x / 6 + x * x * x * x / 24
}
