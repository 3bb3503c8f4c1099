/// How often the call screen may redraw for something new: a bucket of draws refilled at the draw rate.
///
/// A plain "one interval since the last draw" rule, fed pictures at the draw rate, holds back every picture that
/// comes a little early (network and decoding jitter) until the interval is up, and then keeps drawing that much
/// behind the pictures for good: nothing pulls the draws back onto them. The bucket keeps a few draws in hand, so
/// a picture is drawn when it arrives while the rate over any stretch stays at most `burst` above the draw rate.
struct DrawPacer: Equatable {
    /// Time between draws at the highest rate.
    let interval: Duration
    /// Draws that may come sooner than `interval` after the one before (the bucket's size).
    static let burst = 3.0
    /// Draws in hand (0…`burst`).
    private(set) var tokens = Self.burst
    private var refilledAt: Duration

    /// A full bucket at `now`.
    init(interval: Duration, now: Duration = .zero) {
        self.interval = interval
        refilledAt = now
    }

    /// Adds the draws earned since the last call (time runs forward only).
    mutating func advance(to now: Duration) {
        guard now > refilledAt else { return }
        tokens = min(Self.burst, tokens + (now - refilledAt) / interval)
        refilledAt = now
    }

    /// Whether a draw for something new may happen now.
    var mayDraw: Bool { tokens >= 1 }

    /// A paced draw happened (draws answering a key do not count: they come at once whatever the bucket holds).
    mutating func drew() { tokens = max(0, tokens - 1) }

    /// How long until `mayDraw` (zero when it already is).
    var untilDue: Duration { mayDraw ? .zero : interval * (1 - tokens) }
}
