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
// estimate (no limit) until a loss says there is one, so a clean link is never held to a guess. A delay-based part
// needs send times the relay could stamp, which it cannot: not built (docs/network.md).

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

    /// No estimate yet.
    public init() {}

    /// The next interval starts at `now` (ms): what came before it is not counted (a new binding, a gap).
    public mutating func restart(at now: Double) { last = now }

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
            reason = .loss(loss)
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
            if let held = ceiling, now - held.at < hold, current > held.rate {
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
