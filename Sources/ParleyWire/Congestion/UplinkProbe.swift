// Probing the uplink for room to climb. The AIMD rule climbs 8 % a second at best, less near the capacity it last
// found, so a link whose capacity came back took 8 s or more to be used again. A probe (GCC's probe clusters, read
// against libwebrtc's ProbeController and ProbeBitrateEstimator) sends, for a short while, padding beside the media
// at twice the estimate; the relay acknowledges the padding in its transport-wide feedback like any packet and
// drops it. If the padding's arrivals kept pace with its sending, the link carried the probe's rate and the estimate
// jumps there; if they fell behind (the queue grew), the link is full and nothing changes but the wait before the
// next probe.
//
// A token bucket (a `tc tbf`, a cable modem's shaper) lets a burst through at any rate until its tokens are spent,
// so a short probe always looks carried. libwebrtc's 15 ms clusters are that short; here a cluster lasts 150 ms at
// twice the estimate, long enough that a full bucket of 10 ms of the link's rate empties and the queue behind it
// grows by tens of milliseconds, which is what the probe is judged by.

/// A probe under way or being judged: every packet sent between `startedAt` and `endsAt` belongs to it.
public struct ProbeCluster: Sendable, Equatable {
    /// The rate the probe sends at, media and padding together (bits a second).
    public var rate: Double
    /// When it started and ends (ms on the sender's clock).
    public var startedAt: Double
    public var endsAt: Double
    /// Bytes sent within it so far, media and padding.
    public internal(set) var bytes = 0
    /// The transport-wide numbers of its first and last packets (unwrapped), once sent.
    public internal(set) var first: Int64?
    public internal(set) var last: Int64?
}

/// What a probe found.
public enum ProbeOutcome: Sendable, Equatable {
    /// The link carried this rate (bits a second): the arrivals kept pace with the sending.
    case carried(Double)
    /// The queue grew during the probe or its packets were lost: no room at the probe's rate.
    case full
}

/// When to probe, the cluster under way, and the judgement of its packets. Time is an input (ms).
public struct UplinkProbe: Sendable {
    /// How long a cluster sends (ms).
    public static let duration = 150.0
    /// The probe's rate against the estimate.
    public static let factor = 2.0
    /// Calm (no decrease for delay or loss) before a probe (ms).
    public static let calm = 2_000.0
    /// The wait after a probe the link carried in full: the next doubles again (ms).
    public static let afterCarried = 1_000.0
    /// The wait after a probe that found the link full, doubled each time up to `longestWait` (ms).
    public static let firstWait = 3_000.0
    public static let longestWait = 8_000.0
    /// Probes in a row that find the link full before the next waits for a sign that it changed.
    public static let fullBeforeWaiting = 2
    /// The queue's growth over a cluster (ms) that says the link could not carry it.
    public static let queueGrowth = 15.0
    /// Arrivals under this share of the sending rate say the link was saturated (libwebrtc's figure).
    public static let unsaturatedRatio = 0.9
    /// The share of a carried probe's rate the estimate takes (libwebrtc's target utilization).
    public static let utilization = 0.95
    /// Packets a cluster's judgement keeps at most (2.5 Mbit/s for 150 ms in 100-byte packets is 470).
    public static let packetLimit = 512

    /// The cluster sending or waiting for its feedback.
    public private(set) var cluster: ProbeCluster?
    /// The last probe's outcome.
    public private(set) var lastOutcome: ProbeOutcome?
    /// Probes started.
    public private(set) var started = 0
    private var results: [PacketResult] = []
    private var schedule = ProbeSchedule()

    public init() {}

    /// A cluster to start at `now`, or nil: only when the estimate holds the sender under what it `wants` (bits a
    /// second) and the link has been calm since `calmSince` (ms; nil: not calm). An estimate climbing `pastCapacity`
    /// (well past where the link was last found full) does not wait out the doubling wait, only a second after the
    /// last probe: the link has likely changed.
    mutating func start(
        at now: Double, estimate: Double, wanted: Double, calmSince: Double?, pastCapacity: Bool = false
    ) -> ProbeCluster? {
        guard cluster == nil, schedule.mayStart(at: now, pastCapacity: pastCapacity), estimate < 0.9 * wanted,
            let calmSince, now - calmSince >= Self.calm
        else {
            return nil
        }
        let rate = min(wanted, Self.factor * estimate)
        let next = ProbeCluster(rate: rate, startedAt: now, endsAt: now + Self.duration)
        cluster = next
        started += 1
        results = []
        return next
    }

    /// Bytes of padding owed at `now` so that the cluster's packets keep to its rate; 0 when none is sending.
    public func paddingOwed(at now: Double) -> Int {
        guard let cluster, now < cluster.endsAt else { return 0 }
        let due = cluster.rate * (min(now, cluster.endsAt) - cluster.startedAt) / 8_000
        return max(0, Int(due) - cluster.bytes)
    }

    /// Notes a packet sent: within a sending cluster it counts toward the cluster.
    mutating func sent(_ sequence: Int64, size: Int, at now: Double) {
        guard var sending = cluster, now >= sending.startedAt, now < sending.endsAt else { return }
        sending.first = sending.first ?? sequence
        sending.last = sequence
        sending.bytes += size
        cluster = sending
    }

    /// Takes the feedback's results; returns the outcome once the whole cluster is reported (or given up on a
    /// second after it ended: a feedback lost).
    mutating func feedback(_ reported: [PacketResult], at now: Double) -> ProbeOutcome? {
        guard let judged = cluster, now >= judged.endsAt else {
            if let sending = cluster, let first = sending.first { keep(reported, from: first, to: nil) }
            return nil
        }
        guard let first = judged.first, let last = judged.last else {
            return finish(.full, at: now)
        }
        keep(reported, from: first, to: last)
        if results.contains(where: { $0.sequence == last }) || now - judged.endsAt > 1_000 {
            return finish(Self.judge(results, expected: Int(last - first + 1)), at: now)
        }
        return nil
    }

    private mutating func keep(_ reported: [PacketResult], from first: Int64, to last: Int64?) {
        for result in reported where result.sequence >= first && result.sequence <= (last ?? .max) {
            guard results.count < Self.packetLimit else { return }
            results.append(result)
        }
    }

    private mutating func finish(_ outcome: ProbeOutcome, at now: Double) -> ProbeOutcome {
        cluster = nil
        results = []
        lastOutcome = outcome
        schedule.finished(outcome, at: now)
        return outcome
    }

    /// A large decrease (the link changed): the next probe waits only for calm.
    mutating func linkChanged() { schedule.linkChanged() }

    /// The judgement of a cluster's packets (`expected` sent): carried at 95 % of the lower of its send and receive
    /// rates when at least 90 % arrived and the queue (arrival minus send time, last quarter against first) grew less than
    /// `queueGrowth`; full otherwise.
    static func judge(_ results: [PacketResult], expected: Int) -> ProbeOutcome {
        let arrived = results.compactMap { result in
            result.arrivedAt.map {
                (sentAt: result.sentAt, arrivedAt: $0, size: result.size, sequence: result.sequence)
            }
        }.sorted { $0.sequence < $1.sequence }
        guard expected >= 5, arrived.count >= 5, Double(arrived.count) >= 0.9 * Double(expected),
            let first = arrived.first, let last = arrived.last
        else { return .full }
        guard growth(ofDelays: arrived.map { $0.arrivedAt - $0.sentAt }) < queueGrowth else { return .full }
        let arrivals = arrived.map(\.arrivedAt)
        let sendSpan = last.sentAt - first.sentAt
        let receiveSpan = (arrivals.max() ?? 0) - (arrivals.min() ?? 0)
        guard sendSpan > 0, receiveSpan > 0 else { return .full }
        let bytes = Double(arrived.reduce(0) { $0 + $1.size })
        let sendRate = (bytes - Double(last.size)) * 8_000 / sendSpan
        let receiveRate = (bytes - Double(first.size)) * 8_000 / receiveSpan
        // libwebrtc's ProbeBitrateEstimator: arrivals under 90 % of the sending say the link was saturated at what
        // arrived. Either way only 95 % counts: a shaper's bucket adds its burst to what a 150 ms cluster gets
        // through (4,000 bytes is 213 kbit/s over 150 ms), so a probe at about the capacity reads a little past it.
        let saturated = receiveRate < Self.unsaturatedRatio * sendRate
        return .carried(Self.utilization * (saturated ? receiveRate : min(sendRate, receiveRate)))
    }
}

extension UplinkProbe {
    /// How much a cluster's queue grew (ms): the median delay (arrival minus send time) of its last quarter of
    /// packets against its first quarter's, the packets in send order.
    static func growth(ofDelays delays: [Double]) -> Double {
        let quarter = max(1, delays.count / 4)
        func median(_ part: ArraySlice<Double>) -> Double {
            let sorted = part.sorted()
            return sorted[sorted.count / 2]
        }
        return median(delays.suffix(quarter)) - median(delays.prefix(quarter))
    }
}

/// The packets a probe pads with: payload type 127 (`MediaPayloadType.probe`) on the sender's audio SSRC, zeros
/// after the header, stamped with the transport-wide number like every packet. Never sealed: they carry nothing.
public enum ProbePadding {
    /// The fewest and most bytes one takes on the wire.
    public static let smallest = 200
    public static let largest = 1_200
    /// The header's bytes: 12, and the one-byte extension holding the transport-wide number (8).
    static let headerBytes = 20

    /// A padding packet of `size` bytes on the wire (clamped to `smallest...largest`).
    public static func packet(ssrc: UInt32, sequenceNumber: UInt16, transportSequence: UInt16, size: Int) -> RTPPacket {
        let bytes = min(max(size, smallest), largest)
        let header = RTPHeader(
            payloadType: MediaPayloadType.probe, sequenceNumber: sequenceNumber, timestamp: 0, ssrc: ssrc,
            headerExtension: TransportSequence.stamp(transportSequence, onto: nil))
        return RTPPacket(header: header, payload: Array(repeating: 0, count: bytes - headerBytes))
    }
}

/// When the next probe of a link may start: a second after one the link carried; after one that found it full, 3 s,
/// doubling up to 8 s; after two full in a row, only on a sign that the link changed (or every 8 s).
struct ProbeSchedule: Sendable {
    /// After two full probes in a row, wait for a sign of change (the uplink); false: go on probing every
    /// `UplinkProbe.longestWait` (the downlink, whose estimate climbs past a full link only through a probe).
    let waitsForChange: Bool
    private var wait = UplinkProbe.firstWait
    private var notBefore = 0.0
    private var lastEnd = -Double.infinity
    /// Probes in a row that found the link full.
    private var fullInARow = 0

    init(waitsForChange: Bool = true) { self.waitsForChange = waitsForChange }

    /// Whether a probe may start at `now` (ms): the wait is over, or the estimate is climbing `pastCapacity` (well
    /// past where the link was last found full) and a second has passed since the last probe.
    func mayStart(at now: Double, pastCapacity: Bool) -> Bool {
        now >= notBefore || (pastCapacity && now >= lastEnd + UplinkProbe.afterCarried)
    }

    /// A probe judged at `now`.
    mutating func finished(_ outcome: ProbeOutcome, at now: Double) {
        lastEnd = now
        switch outcome {
        case .carried:
            fullInARow = 0
            wait = UplinkProbe.firstWait
            notBefore = now + UplinkProbe.afterCarried
        case .full:
            fullInARow += 1
            // Twice full: the link is what the estimate says. Each probe into a full link costs a little queue and,
            // behind a small bucket, a packet or two, so the next waits for a sign of change: an estimate past the
            // capacity found, or a large decrease.
            let waiting = waitsForChange && fullInARow >= UplinkProbe.fullBeforeWaiting
            notBefore = waiting ? .infinity : now + wait
            wait = min(2 * wait, UplinkProbe.longestWait)
        }
    }

    /// A large decrease (the link changed): the next probe waits only for calm.
    mutating func linkChanged() {
        wait = UplinkProbe.firstWait
        notBefore = 0
        fullInARow = 0
    }
}
