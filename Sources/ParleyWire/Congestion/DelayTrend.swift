// The delay-based half of Google congestion control (draft-ietf-rmcat-gcc-02 §5, as libwebrtc's trendline estimator
// does it): packets are grouped by send time (5 ms) and by arrival in one burst, each group's arrival spread is
// compared with its send spread, and the growth of that difference over the last 20 groups is a straight-line slope.
// A queue filling on the path makes packets arrive ever later than they were sent: the slope rises above an adaptive
// threshold and the link is "overusing" before any packet is lost.

/// Whether the path's queue is filling (overusing), draining (underusing) or steady.
public enum LinkUsage: String, Sendable, Equatable {
    case normal, overusing, underusing
}

/// The delay trend of one path, fed with each packet's send and arrival time.
public struct DelayTrend: Sendable {
    struct Group: Sendable {
        var firstSent: Double
        var lastSent: Double
        var firstArrival: Double
        var lastArrival: Double

        init(sentAt: Double, arrivedAt: Double) {
            firstSent = sentAt
            lastSent = sentAt
            firstArrival = arrivedAt
            lastArrival = arrivedAt
        }

        /// A packet that arrived within 5 ms of the group's last, sooner after it than it was sent (it queued behind
        /// the group somewhere and left with it), within 100 ms of the group's first arrival: the same burst.
        func holds(burstOf sentAt: Double, arrivedAt: Double) -> Bool {
            let arrivalDelta = arrivedAt - lastArrival
            return arrivalDelta - (sentAt - lastSent) < 0 && arrivalDelta <= DelayTrend.burstSpan
                && arrivedAt - firstArrival < DelayTrend.longestBurst
        }
    }

    /// Packets sent within this long of a group's first belong to it (ms).
    static let groupSpan = 5.0
    /// A packet arriving this soon (ms) after a group's last, sooner than it was sent after it, is of its burst…
    static let burstSpan = 5.0
    /// …while the burst has lasted less than this (ms).
    static let longestBurst = 100.0
    /// Groups the slope is fitted over.
    static let window = 20
    /// Smoothing of the accumulated delay.
    static let smoothing = 0.9
    /// Gain from slope to the compared trend.
    static let gain = 4.0
    /// Overuse must last this long (ms) and two groups before it counts.
    static let overuseTime = 10.0
    /// The threshold adapts up slowly and down fast, within these bounds (ms).
    static let thresholdUp = 0.0087
    static let thresholdDown = 0.039
    static let thresholdRange = 6.0...600.0

    private var current: Group?
    private var previous: Group?
    private var points: [(x: Double, y: Double)] = []
    private var firstArrival: Double?
    private var accumulated = 0.0
    private var smoothed = 0.0
    private var deltas = 0
    private var previousTrend = 0.0
    private var overusingFor = -1.0
    private var overuseCount = 0
    private var lastThresholdUpdate: Double?

    /// The threshold the trend is compared with (ms), adapting to the path.
    public private(set) var threshold = 12.5
    /// The slope fitted last (ms of delay per ms), and it scaled as compared with `threshold`.
    public private(set) var trend = 0.0
    public private(set) var comparedTrend = 0.0
    /// What the trend says of the path now.
    public private(set) var usage = LinkUsage.normal

    public init() {}

    /// Adds one packet the receiver got: sent at `sentAt` (sender's clock), arrived at `arrivedAt` (receiver's
    /// clock), both ms. Packets must come in send order; one sent before the current group began is ignored.
    @discardableResult
    public mutating func add(sentAt: Double, arrivedAt: Double) -> LinkUsage {
        guard var group = current else {
            current = Group(sentAt: sentAt, arrivedAt: arrivedAt)
            return usage
        }
        guard sentAt >= group.firstSent else { return usage }
        // A burst released at once (packets held behind a late one on a jittery link, or a radio's batch) is one
        // group, as libwebrtc's inter-arrival grouping has it: its packets' spacing says nothing of a queue
        // building, and counted apart they read as overuse on a link with room to spare.
        if sentAt - group.firstSent <= Self.groupSpan || group.holds(burstOf: sentAt, arrivedAt: arrivedAt) {
            group.lastSent = max(group.lastSent, sentAt)
            group.lastArrival = max(group.lastArrival, arrivedAt)
            current = group
            return usage
        }
        if let before = previous {
            let sendDelta = group.lastSent - before.lastSent
            let arrivalDelta = group.lastArrival - before.lastArrival
            // A group that arrived before the one sent ahead of it says nothing of the queue (reordering).
            if arrivalDelta >= 0 { update(sendDelta: sendDelta, arrivalDelta: arrivalDelta, at: group.lastArrival) }
        }
        previous = group
        current = Group(sentAt: sentAt, arrivedAt: arrivedAt)
        return usage
    }

    private mutating func update(sendDelta: Double, arrivalDelta: Double, at arrival: Double) {
        deltas = min(deltas + 1, 1_000)
        accumulated += arrivalDelta - sendDelta
        smoothed = Self.smoothing * smoothed + (1 - Self.smoothing) * accumulated
        let start = firstArrival ?? arrival
        firstArrival = start
        points.append((arrival - start, smoothed))
        if points.count > Self.window { points.removeFirst(points.count - Self.window) }
        if points.count == Self.window, let slope = Self.slope(points) { trend = slope }
        detect(sendDelta: sendDelta, at: arrival)
    }

    private mutating func detect(sendDelta: Double, at now: Double) {
        guard deltas >= 2 else { return }
        comparedTrend = Double(min(deltas, 60)) * trend * Self.gain
        if comparedTrend > threshold {
            overusingFor = overusingFor < 0 ? sendDelta / 2 : overusingFor + sendDelta
            overuseCount += 1
            if overusingFor > Self.overuseTime, overuseCount > 1, trend >= previousTrend {
                overusingFor = 0
                overuseCount = 0
                usage = .overusing
            }
        } else if comparedTrend < -threshold {
            overusingFor = -1
            overuseCount = 0
            usage = .underusing
        } else {
            overusingFor = -1
            overuseCount = 0
            usage = .normal
        }
        previousTrend = trend
        adaptThreshold(at: now)
    }

    /// The threshold follows the trend's size (so a path with steady cross traffic does not read as overuse
    /// forever), ignoring spikes far above it.
    private mutating func adaptThreshold(at now: Double) {
        defer { lastThresholdUpdate = now }
        guard let last = lastThresholdUpdate else { return }
        let size = abs(comparedTrend)
        guard size <= threshold + 15 else { return }
        let rate = size < threshold ? Self.thresholdDown : Self.thresholdUp
        threshold += rate * (size - threshold) * min(now - last, 100)
        threshold = min(max(threshold, Self.thresholdRange.lowerBound), Self.thresholdRange.upperBound)
    }

    /// The least-squares slope of the points, nil when every x is the same.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / count
        let meanY = points.reduce(0) { $0 + $1.y } / count
        var numerator = 0.0
        var denominator = 0.0
        for point in points {
            numerator += (point.x - meanX) * (point.y - meanY)
            denominator += (point.x - meanX) * (point.x - meanX)
        }
        return denominator == 0 ? nil : numerator / denominator
    }
}
