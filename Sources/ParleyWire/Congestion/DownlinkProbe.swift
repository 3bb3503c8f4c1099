// Probing the downlink for room to climb. After a cut the downlink estimate holds under the level it overflowed at
// and then climbs a few per cent a second, so a link whose capacity came back (or a first guess that was low) held
// every tile to its smaller layer for tens of seconds, and a link that had no more room was found full again only by
// overflowing it (a freeze of every tile). While the relay holds video back for this member's downlink and the
// estimate has been calm for 2 s, the member asks the relay (`ProbeRequest`) to send padded marks (`SendTimeMark`)
// beside the media for 150 ms at half the estimate's rate, so media and padding together reach up to 1.5 times it:
// about what the next layer of a tile costs, and a full link overflows by a few kilobytes, not by a keyframe. The
// marks' arrivals are judged as the uplink's probes are (`UplinkProbe`): carried when at least 90 % came and their
// queue grew less than 15 ms (the estimate rises to 95 % of everything that arrived meanwhile), full otherwise. The
// waits between probes are the uplink's (`ProbeSchedule`), except that full probes go on every 8 s: a full probe
// keeps the estimate from climbing past the level it overflowed at (`DownlinkEstimator.probeFound`).

/// The downlink probe under way, its judgement, and when the next may start. Time is an input (ms).
public struct DownlinkProbe: Sendable {
    /// The longest a cluster's judgement waits for its last marks after it should have ended (ms).
    public static let patience = 500.0
    /// Marks a cluster keeps at most (5 Mbit/s of padding for 150 ms in kilobyte marks is 94).
    public static let markLimit = 128

    struct Arrival: Sendable {
        var index: UInt16
        var sentAt: Double
        var arrivedAt: Double
        /// Bytes from the relay arrived so far, this mark included.
        var arrivedBytes: Int
    }

    /// The cluster asked for and not yet judged: its number, when it was asked for (ms), and its padding's rate.
    public private(set) var pending: (cluster: UInt16, askedAt: Double, kbps: Int)?
    /// The last probe's outcome.
    public private(set) var lastOutcome: ProbeOutcome?
    /// Probes asked for.
    public private(set) var started = 0
    private var arrivals: [Arrival] = []
    private var expected = 0
    private var nextCluster: UInt16 = 1
    private var schedule = ProbeSchedule(waitsForChange: false)

    public init() {}

    /// A probe finds room only past this multiple of the level the link last overflowed at.
    public static let roomPastOverflow = 1.15
    /// The padding's rate against the estimate.
    public static let paddingShare = 0.5

    /// A probe to ask the relay for at `now`, or nil: only while it `held` video back for our downlink, with an
    /// estimate calm (no cut) since `calmSince` for `UplinkProbe.calm`. The padding's rate is half the estimate's.
    public mutating func start(at now: Double, estimate: Double?, held: Bool, calmSince: Double?) -> (
        cluster: UInt16, kbps: Int
    )? {
        guard pending == nil, held, let estimate, let calmSince, now - calmSince >= UplinkProbe.calm,
            schedule.mayStart(at: now, pastCapacity: false)
        else { return nil }
        let cluster = nextCluster
        nextCluster = nextCluster == .max ? 1 : nextCluster + 1
        let kbps = min(
            max(Int(Self.paddingShare * estimate / 1_000), ProbeRequest.rates.lowerBound), ProbeRequest.rates.upperBound
        )
        pending = (cluster, now, kbps)
        arrivals = []
        expected = 0
        started += 1
        return (cluster, kbps)
    }

    /// Takes one padded mark: sent at `sentAt` (ms, the relay's clock), arrived at `now` (ms) when `arrivedBytes` had
    /// arrived from the relay in all. Returns the outcome once the cluster's last mark is here: a rate carried no
    /// higher than `roomPastOverflow` times `overflowLevel` (where the link last overflowed, bits a second) is no
    /// room, and counts as full.
    public mutating func marked(
        _ tag: ProbeTag, sentAt: Double, at now: Double, arrivedBytes: Int, overflowLevel: Double? = nil
    ) -> ProbeOutcome? {
        guard let asked = pending, tag.cluster == asked.cluster, arrivals.count < Self.markLimit else { return nil }
        expected = Int(tag.count)
        arrivals.append(Arrival(index: tag.index, sentAt: sentAt, arrivedAt: now, arrivedBytes: arrivedBytes))
        guard tag.index == tag.count - 1 else { return nil }
        return finish(at: now, overflowLevel: overflowLevel)
    }

    /// The outcome of a cluster whose last marks never came (judged on those that did), once `patience` has passed
    /// since it should have ended; nil otherwise.
    public mutating func poll(at now: Double, overflowLevel: Double? = nil) -> ProbeOutcome? {
        guard let asked = pending, now - asked.askedAt > UplinkProbe.duration + Self.patience else { return nil }
        return finish(at: now, overflowLevel: overflowLevel)
    }

    /// A large decrease (the link changed): the next probe waits only for calm.
    public mutating func linkChanged() { schedule.linkChanged() }

    private mutating func finish(at now: Double, overflowLevel: Double?) -> ProbeOutcome {
        var outcome = Self.judge(arrivals, expected: expected)
        // The link carrying about what it carried when it overflowed says nothing new: a probe at about the capacity
        // reads as carried, and raised to it the estimate let the relay switch a tile up, whose larger keyframe
        // overflowed the link again (in the lab every 5-8 s). Room is 15 % past that level: the link changed.
        if case .carried(let rate) = outcome, let overflowLevel, rate <= Self.roomPastOverflow * overflowLevel {
            outcome = .full
        }
        pending = nil
        arrivals = []
        lastOutcome = outcome
        schedule.finished(outcome, at: now)
        return outcome
    }

    /// Carried at 95 % of everything that arrived between the first and the last mark (media and padding) when at
    /// least 90 % of `expected` marks came and their queue grew less than `UplinkProbe.queueGrowth`; full otherwise.
    static func judge(_ arrivals: [Arrival], expected: Int) -> ProbeOutcome {
        let marks = arrivals.sorted { $0.index < $1.index }
        guard expected >= 5, marks.count >= 5, Double(marks.count) >= 0.9 * Double(expected),
            UplinkProbe.growth(ofDelays: marks.map { $0.arrivedAt - $0.sentAt }) < UplinkProbe.queueGrowth,
            let first = marks.min(by: { $0.arrivedAt < $1.arrivedAt }),
            let last = marks.max(by: { $0.arrivedAt < $1.arrivedAt }), last.arrivedAt > first.arrivedAt
        else { return .full }
        let rate = Double(last.arrivedBytes - first.arrivedBytes) * 8_000 / (last.arrivedAt - first.arrivedAt)
        return .carried(UplinkProbe.utilization * rate)
    }
}
