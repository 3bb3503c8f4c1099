// Receiver-side statistics for one RTP stream, as RFC 3550 §6.4.1 and Appendix A.3/A.8 define them, and the
// reception report block built from them.

/// NTP timestamps (64-bit, seconds since 1900 in the high 32 bits) as RTCP sender reports carry them.
public enum NTPTimestamp {
    /// Seconds from 1900-01-01 (NTP epoch) to 1970-01-01 (Unix epoch).
    public static let unixEpochOffset: Int64 = 2_208_988_800

    /// The NTP timestamp of a Unix time (time since 1970-01-01 UTC).
    public static func from(unixTime: Duration) -> UInt64 {
        let (seconds, attoseconds) = unixTime.components
        let fraction = UInt64(max(0, attoseconds) / 1_000_000_000) << 32 / 1_000_000_000
        return UInt64(truncatingIfNeeded: seconds + unixEpochOffset) << 32 | fraction
    }

    /// The middle 32 bits, as used in report blocks' LSR field.
    public static func middle32(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 16) }
}

/// What happened to a packet given to a jitter buffer.
public enum PacketArrival: Sendable, Equatable {
    /// Stored, in order or ahead of a gap.
    case accepted
    /// Stored, and it filled a gap (a reordered packet or a retransmission after a NACK).
    case recovered
    /// Already received; ignored.
    case duplicate
    /// Arrived after its play-out time or after its frame was given up; ignored.
    case late
    /// Sequence number far from the stream's; ignored unless the next packet follows it (a sender restart).
    case outOfRange
    /// Not a usable packet of this stream (bad payload); ignored.
    case malformed(WireError)
}

/// Counters and the interarrival jitter estimate for one received RTP stream.
public struct ReceptionStatistics: Sendable, Equatable {
    /// RTP clock rate of the stream, for jitter in time units.
    public let clockRate: Int
    /// SSRC of the stream, from its first packet.
    public private(set) var ssrc: UInt32?
    /// Distinct packets received.
    public private(set) var packetsReceived = 0
    /// Packets received more than once (extra copies).
    public private(set) var duplicates = 0
    /// Packets that arrived too late to be used.
    public private(set) var late = 0
    /// Packets that filled a gap after it was detected (reordered or retransmitted).
    public private(set) var recovered = 0
    /// Packets that could not be used (malformed payload).
    public private(set) var malformed = 0
    /// Lowest extended sequence number seen.
    public private(set) var baseSequenceNumber: Int64?
    /// Highest extended sequence number seen (wrap count × 65536 + sequence number).
    public private(set) var highestSequenceNumber: Int64?
    /// RFC 3550 interarrival jitter, in RTP timestamp units (as a real number; reports carry it truncated).
    public private(set) var jitter: Double = 0

    var lastTransit: (arrival: Int64, timestamp: UInt32)?
    var expectedPrior = 0
    var receivedPrior = 0
    var lastSenderReport: (ntpMiddle: UInt32, arrival: Duration)?

    /// Empty statistics for a stream with the given clock rate.
    public init(clockRate: Int) { self.clockRate = clockRate }

    /// Packets expected from the sequence numbers seen: highest − base + 1.
    public var expected: Int {
        guard let base = baseSequenceNumber, let highest = highestSequenceNumber else { return 0 }
        return Int(highest - base + 1)
    }

    /// Packets lost since reception began: expected − received (never negative here, duplicates are not counted).
    public var lost: Int { max(0, expected - packetsReceived) }

    /// Interarrival jitter as a duration.
    public var jitterDuration: Duration { RTPClock.duration(ticks: Int64(jitter), clockRate: clockRate) }

    /// Records a distinct packet; updates jitter only for in-order packets (RFC 3550 §A.8).
    public mutating func record(
        ssrc: UInt32, extendedSequenceNumber: Int64, timestamp: UInt32, arrival: Duration
    ) {
        if self.ssrc == nil { self.ssrc = ssrc }
        packetsReceived += 1
        baseSequenceNumber = min(baseSequenceNumber ?? extendedSequenceNumber, extendedSequenceNumber)
        let inOrder = highestSequenceNumber.map { extendedSequenceNumber > $0 } ?? true
        guard inOrder else { return }
        highestSequenceNumber = extendedSequenceNumber
        let arrivalTicks = RTPClock.ticks(arrival, clockRate: clockRate)
        if let last = lastTransit {
            // D(i, j) = (Rj − Ri) − (Sj − Si); J += (|D| − J) / 16
            let difference =
                (arrivalTicks - last.arrival)
                - SequenceNumber.distance(from: last.timestamp, to: timestamp)
            jitter += (Double(abs(difference)) - jitter) / 16
        }
        lastTransit = (arrivalTicks, timestamp)
    }

    /// Counts an extra copy of a packet.
    public mutating func recordDuplicate() { duplicates += 1 }
    /// Counts a packet that came too late.
    public mutating func recordLate() { late += 1 }
    /// Counts a packet that filled a known gap.
    public mutating func recordRecovered() { recovered += 1 }
    /// Counts an unusable packet.
    public mutating func recordMalformed() { malformed += 1 }

    /// Notes a sender report from this stream's sender, for the next report block's LSR and DLSR.
    public mutating func recordSenderReport(ntpTimestamp: UInt64, arrival: Duration) {
        lastSenderReport = (NTPTimestamp.middle32(ntpTimestamp), arrival)
    }

    /// The report block about this stream at `now`; starts a new interval for the fraction lost.
    public mutating func makeReportBlock(now: Duration) -> ReportBlock {
        let expected = self.expected
        let expectedInterval = expected - expectedPrior
        let receivedInterval = packetsReceived - receivedPrior
        let lostInterval = expectedInterval - receivedInterval
        expectedPrior = expected
        receivedPrior = packetsReceived
        let fraction = expectedInterval == 0 || lostInterval <= 0 ? 0 : min(255, (lostInterval << 8) / expectedInterval)
        var lsr: UInt32 = 0
        var dlsr: UInt32 = 0
        if let last = lastSenderReport {
            lsr = last.ntpMiddle
            let (seconds, attoseconds) = (now - last.arrival).components
            let units = seconds * 65_536 + (attoseconds / 1_000_000_000) * 65_536 / 1_000_000_000
            dlsr = UInt32(clamping: max(0, units))
        }
        return ReportBlock(
            ssrc: ssrc ?? 0, fractionLost: UInt8(fraction),
            cumulativeLost: Int32(clamping: expected - packetsReceived),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highestSequenceNumber ?? 0),
            jitter: UInt32(clamping: Int64(jitter)), lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    /// Field-by-field equality.
    public static func == (lhs: ReceptionStatistics, rhs: ReceptionStatistics) -> Bool {
        lhs.clockRate == rhs.clockRate && lhs.ssrc == rhs.ssrc && lhs.packetsReceived == rhs.packetsReceived
            && lhs.duplicates == rhs.duplicates && lhs.late == rhs.late && lhs.recovered == rhs.recovered
            && lhs.malformed == rhs.malformed && lhs.baseSequenceNumber == rhs.baseSequenceNumber
            && lhs.highestSequenceNumber == rhs.highestSequenceNumber && lhs.jitter == rhs.jitter
    }
}
