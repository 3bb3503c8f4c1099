/// The receiving end of transport-wide feedback (the relay for each sender's uplink, a client for the relay's leg to
/// it): notes each packet's transport-wide sequence number and arrival, and when asked (every `interval`) builds the
/// feedback reporting every packet since the last report, the missing ones as lost. Bounded: at most
/// `TransportFeedback.packetLimit` packets are waiting; past that the oldest are reported lost without waiting.
public struct FeedbackRecorder: Sendable {
    /// How often feedback is sent (ms): often enough for the sender to react within a round trip.
    public static let interval = 50.0

    private var unwrapper = SequenceUnwrapper<UInt16>()
    /// Arrival ticks of packets not yet reported, by unwrapped sequence number.
    private var arrivals: [Int64: Int64] = [:]
    /// The first sequence number the next feedback reports.
    private var nextToReport: Int64?
    private var feedbackCount: UInt8 = 0
    /// Packets that came after their number was already reported (as lost): reordered past a report.
    public private(set) var lateArrivals = 0

    public init() {}

    /// Notes packet `sequence` arriving at `now` (ms on this receiver's clock).
    public mutating func received(_ sequence: UInt16, at now: Double) {
        let unwrapped = unwrapper.unwrap(sequence)
        let first = nextToReport ?? unwrapped
        guard unwrapped >= first else {
            lateArrivals += 1
            return
        }
        nextToReport = first
        arrivals[unwrapped] = Int64((now * 1_000 / Double(TransportFeedback.tickMicroseconds)).rounded())
        let highest = unwrapper.highest ?? unwrapped
        let limit = Int64(TransportFeedback.packetLimit)
        if highest - first >= limit {
            let newFirst = highest - limit + 1
            arrivals = arrivals.filter { $0.key >= newFirst }
            nextToReport = newFirst
        }
    }

    /// The feedback for everything since the last, nil when nothing arrived meanwhile.
    public mutating func feedback(senderSSRC: UInt32, mediaSSRC: UInt32) -> TransportFeedback? {
        guard let first = nextToReport, let highest = unwrapper.highest, highest >= first, !arrivals.isEmpty
        else { return nil }
        let reported = (first...highest).map { arrivals[$0] }
        arrivals.removeAll(keepingCapacity: true)
        nextToReport = highest + 1
        defer { feedbackCount &+= 1 }
        return TransportFeedback(
            senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequence: UInt16(truncatingIfNeeded: first),
            feedbackCount: feedbackCount, arrivals: reported)
    }
}
