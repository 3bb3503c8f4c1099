/// Gaps in something that should come at a steady pace (a microphone's blocks reaching the media loop, a member's
/// audio packets reaching this one): how many were longer than `limit`, and the longest. A dropout the listener
/// hears is traced to the hop that held the audio up by comparing the sender's count with the receiver's.
struct ArrivalGaps: Sendable, Equatable {
    /// Gaps longer than this are counted.
    let limit: Duration
    private(set) var count = 0
    private(set) var longest: Duration = .zero
    private var last: Duration?

    init(limit: Duration) { self.limit = limit }

    /// One more arrived at `now`.
    mutating func arrived(at now: Duration) {
        defer { last = now }
        guard let last else { return }
        let gap = now - last
        longest = max(longest, gap)
        if gap > limit { count += 1 }
    }

    /// The stream stopped on purpose (a device switch, muting): the next arrival starts afresh.
    mutating func restart() { last = nil }
}
