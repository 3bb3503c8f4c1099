/// Stretches a peer's picture stood still: a gap of over 300 ms between two decoded frames (the network issue's
/// measure of a freeze, WebRTC's without its "three times the average gap" term), counted with the whole gap. Time is
/// an input: the engine's clock.
public struct VideoFreezes: Sendable, Equatable {
    /// A gap longer than this is a freeze.
    public static let threshold: Duration = .milliseconds(300)

    /// Freezes so far, and the time they lasted.
    public private(set) var count = 0
    public private(set) var total: Duration = .zero
    private var last: Duration?

    public init() {}

    /// A frame decoded at `now`.
    public mutating func frame(at now: Duration) {
        if let last, now - last > Self.threshold {
            count += 1
            total += now - last
        }
        last = max(last ?? now, now)
    }

    /// The picture stands still on purpose from `now` (a camera turned off or on): the gap to the next frame is
    /// none. A freeze going on until now is kept, so the figures never go back.
    public mutating func restart(at now: Duration) {
        (count, total) = asOf(now)
        last = nil
    }

    /// The freezes as of `now`, the one going on counted up to `now`: a tile stood still for the whole of a window
    /// (paused, or its frames lost) is frozen all along, not only once a frame ends it.
    public func asOf(_ now: Duration) -> (count: Int, total: Duration) {
        guard let last, now - last > Self.threshold else { return (count, total) }
        return (count + 1, total + (now - last))
    }
}
