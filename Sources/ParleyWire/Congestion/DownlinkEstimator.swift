// A receiver's estimate of its own downlink (the relay → member leg), from what arrived and what was lost there.
//
// The sender's estimate rests on transport-wide feedback about packets it numbered; the relay cannot number what it
// forwards (SFrame authenticates the RTP header, extensions included), so the receiver judges the leg itself from
// what arrived against what the relay says it sent (`ForwardedCount`: gaps in the senders' sequence numbers would
// blame the receiver's link for what a sender's uplink lost) and tells the relay the result
// (`TileReport.downlinkKbps`).
// The rule is GCC's loss-based controller (draft-ietf-rmcat-gcc-02, section 6) applied at the receiving end:
// more than 10 % lost cuts the estimate to what arrived, less half the loss; under 2 % it climbs 8 % a second, and
// about 5 % a second of the rate where loss was last found once it is near it; in between it holds. After a cut it
// climbs no higher than 90 % of the estimate it overflowed at (at a call's first cut, of what arrived in the
// overflow's seconds) for 20 s (`ceilingHold`): each climb past the link's capacity
// costs every tile a freeze (lost packets, keyframes asked for on a full link), and climbing straight back to the
// level that overflowed it made the lab's `congested-downlink` call overflow every 10 s. A climb past the ceiling
// that overflows again at about the same level (within 15 %) doubles the next hold, up to 80 s. Loss is judged
// against the link's own (the random loss of a radio link, learned from the seconds that cut nothing, at most 5 %), so
// a second of bursty Wi-Fi loss over 10 % does not set a limit on a link with room. There is no
// estimate (no limit) until a loss says there is one, so a clean link is never held to a guess.
//
// The delay-based part reads the relay's send-time marks (`SendTimeMark`, every 50 ms behind the media): their
// delay trend (`DelayTrend`, as the uplink's) says when the downlink's queue fills, before anything is lost. Once
// loss has shown a limit (never before: a radio link's jitter reads as a queue filling), the estimate is cut to 85 % of what arrived over the last half second (GCC's delay-based decrease), at most once a
// second (the relay needs that long to give the member less), and it does not climb while the queue is filling or
// draining. A trend alone is not enough: the marks must also stand 15 ms above the lowest delay of the last 5-10 s,
// so a relay's or a machine's hiccup on a link with room never sets a limit. A probe (`DownlinkProbe`) that found
// room raises the estimate to what arrived during it and ends the hold after a cut; one that found the link full
// keeps the hold until one finds room.

/// One receiver's estimate of its downlink: nil until losses show a limit. Time is an input (ms).
public struct DownlinkEstimator: Sendable {
    /// The lowest estimate: several voices and the smallest layers still fit.
    public static let minimum = 150_000.0
    /// Fewer packets than this in an interval say nothing about loss.
    public static let fewestPackets = 20
    /// How long after a cut the estimate stays under 90 % of where the loss began (ms), at first and at most.
    public static let ceilingHold = 20_000.0
    public static let longestHold = 80_000.0
    /// Cuts this soon after another (ms) are the same overflow's aftermath: they keep its ceiling.
    static let aftermath = 3_000.0

    /// Bits a second the downlink carries, as far as losses showed; nil while none did.
    public private(set) var estimate: Double?
    /// Why `estimate` is where it is.
    public private(set) var reason = EstimateReason.starting
    /// The received rate at the last cut: where the link's capacity was last found.
    private var capacity: Double?
    /// The loss the link has without congestion, learned from the intervals that cut nothing, at most 5 %.
    public private(set) var inherentLoss = 0.0
    private var last: Double?
    /// 90 % of where the last overflow began, and when it was cut for (ms).
    private var ceiling: (rate: Double, at: Double)?
    /// How long the ceiling holds now (ms).
    public private(set) var hold = ceilingHold

    /// A queue this deep (ms above the lowest delay of the marks lately) is needed before a rising trend cuts.
    public static let queueFloor = 15.0
    /// The shortest time between two cuts for delay (ms).
    public static let delayCutInterval = 1_000.0
    /// The lowest delay is kept over two windows of this length (ms), so it forgets a path that got longer.
    static let lowestWindow = 5_000.0
    /// The received rate is measured over this long (ms).
    static let rateWindow = 500.0

    /// The trend of the marks' delays.
    private var trend = DelayTrend()
    /// The marks' lowest delay (arrival minus send time, ms; the two clocks' offset included) in the current window
    /// and the one before, and when the current began.
    private var lowest: (current: Double, previous: Double, since: Double)?
    /// What had arrived from the relay in all at each recent mark (the last `rateWindow`, at most 64).
    private var arrivals: [(at: Double, bytes: Int)] = []
    private var lastDelayCut: Double?
    /// When the estimate was last cut, for loss or delay (ms).
    public private(set) var lastCut: Double?
    /// The last probe found the link full: the ceiling holds until one finds room.
    private var probedFull = false
    /// How far the last mark's delay stood above the lowest lately (ms): the downlink's queue.
    public private(set) var queueDelay = 0.0
    /// What the marks' trend says of the downlink now.
    public private(set) var usage = LinkUsage.normal

    /// No estimate yet.
    public init() {}

    /// The next interval starts at `now` (ms): what came before it is not counted (a new binding, a gap); the marks'
    /// delays start afresh too (the path may be another).
    public mutating func restart(at now: Double) {
        last = now
        trend = DelayTrend()
        lowest = nil
        arrivals = []
        usage = .normal
        queueDelay = 0
    }

    /// What arrived over the last `rateWindow` (bits a second), nil until half of it is known.
    var receivedRate: Double? {
        guard let first = arrivals.first, let last = arrivals.last, last.at - first.at >= Self.rateWindow / 2 else {
            return nil
        }
        return Double(last.bytes - first.bytes) * 8_000 / (last.at - first.at)
    }

    /// Takes one of the relay's send-time marks: written at `sentAt` (ms on the relay's clock), arrived at `now` (ms)
    /// when `arrivedBytes` had arrived from the relay in all. Returns true when it cut the estimate: the queue is
    /// filling.
    @discardableResult
    public mutating func marked(sentAt: Double, at now: Double, arrivedBytes: Int) -> Bool {
        usage = trend.add(sentAt: sentAt, arrivedAt: now)
        let delay = now - sentAt
        if var kept = lowest {
            if now - kept.since >= Self.lowestWindow {
                kept = (delay, kept.current, now)
            } else {
                kept.current = min(kept.current, delay)
            }
            lowest = kept
        } else {
            lowest = (delay, delay, now)
        }
        queueDelay = delay - min(lowest?.current ?? delay, lowest?.previous ?? delay)
        arrivals.append((now, arrivedBytes))
        if let newest = arrivals.last?.at {
            let keep = arrivals.firstIndex { newest - $0.at <= Self.rateWindow } ?? arrivals.count - 1
            arrivals.removeFirst(min(keep, arrivals.count - 1))
        }
        if arrivals.count > 64 { arrivals.removeFirst(arrivals.count - 64) }
        // Only a limit loss has shown is refined: on a radio link with room, jitter reads as a queue filling (the
        // lab's `lossy-wifi` and `rebind` calls were cut to 85 % of what arrived and held to smaller pictures).
        guard estimate != nil, usage == .overusing, queueDelay >= Self.queueFloor,
            lastDelayCut.map({ now - $0 >= Self.delayCutInterval }) ?? true, let received = receivedRate
        else { return false }
        let cut = max(Self.minimum, 0.85 * received)
        guard let current = estimate, cut < current else { return false }
        estimate = cut
        capacity = received
        reason = .delay
        lastDelayCut = now
        lastCut = now
        return true
    }

    /// Where the link last overflowed (bits a second): the level its ceiling is 90 % of; nil before any overflow.
    public var overflowLevel: Double? { ceiling.map { $0.rate / 0.9 } }

    /// What a probe of the downlink found at `now` (ms). Carried: the estimate rises to the rate, and a hold after an
    /// overflow ends (the link has room again). Full: the ceiling after the last overflow holds until a probe finds
    /// room, however long: climbing past it would only overflow the link again.
    public mutating func probeFound(_ outcome: ProbeOutcome, at now: Double) {
        switch outcome {
        case .full:
            probedFull = true
        case .carried(let rate):
            probedFull = false
            guard let current = estimate, rate > current else { return }
            estimate = rate
            capacity = nil
            ceiling = nil
            hold = Self.ceilingHold
            reason = .probed
        }
    }

    /// Takes one interval ending at `now` (ms): `bytes` of media arrived, `expected` packets were sent this way and
    /// `lost` of them never came. Returns the estimate (bits a second), nil for no limit.
    @discardableResult
    public mutating func update(at now: Double, bytes: Int, expected: Int, lost: Int) -> Double? {
        guard let previous = last else {
            last = now
            return estimate
        }
        guard now > previous else { return estimate }
        last = now
        let seconds = (now - previous) / 1_000
        let rate = Double(max(0, bytes) * 8) / seconds
        let loss = expected >= Self.fewestPackets ? Double(min(max(0, lost), expected)) / Double(expected) : 0
        let excess = loss - inherentLoss
        if excess <= 0.10, expected >= Self.fewestPackets {
            inherentLoss = min(0.05, 0.75 * inherentLoss + 0.25 * loss)
        }
        if excess > 0.10 {
            if let held = ceiling, now - held.at < Self.aftermath {
                // The same overflow: what arrived in its seconds is at least what the link carries.
                ceiling = (max(held.rate, 0.9 * rate), now)
            } else {
                // The level an estimate overflowed at; at the first cut of a call, with everything sent and no
                // estimate, what arrived (at least what the link carries; raised by the aftermath's seconds).
                let level = max(estimate ?? rate, rate)
                // Past the last ceiling and overflowing again at about its level: the link has no more room.
                let again = ceiling.map { level <= 1.15 * $0.rate / 0.9 && now - $0.at >= hold } ?? false
                hold = again ? min(2 * hold, Self.longestHold) : Self.ceilingHold
                ceiling = (0.9 * level, now)
            }
            estimate = max(Self.minimum, min(estimate ?? rate, rate) * (1 - 0.5 * loss))
            capacity = rate
            lastCut = now
            reason = .loss(loss)
        } else if excess < 0.02, estimate != nil, usage != .normal || recentlyCutForDelay(now) {
            // The queue is filling or draining (or a cut for it has not reached the relay yet): no climb.
            reason = reason == .delay ? .delay : .holding
        } else if excess < 0.02, var current = estimate {
            let near = capacity.map { current >= 0.9 * $0 } ?? false
            if near, let capacity {
                current += 0.05 * capacity * min(seconds, 1)
            } else {
                current *= 1 + 0.08 * min(seconds, 1)
            }
            // What arrived bounds how far a guess may run ahead of it: once everything asked for fits, the estimate
            // stays within reach of the rate instead of climbing for ever (and a new tile then finds it near).
            current = min(current, max(rate * 1.5, rate + 500_000))
            if let held = ceiling, now - held.at < hold || probedFull, current > held.rate {
                estimate = max(held.rate, estimate ?? held.rate)
                reason = .holding
                return estimate
            }
            estimate = current
            reason = .climbing
        } else if estimate != nil {
            reason = .holding
        }
        return estimate
    }
}

extension DownlinkEstimator {
    /// A cut for delay less than `delayCutInterval` before `now`.
    func recentlyCutForDelay(_ now: Double) -> Bool {
        lastDelayCut.map { now - $0 < Self.delayCutInterval } ?? false
    }
}
