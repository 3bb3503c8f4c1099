import ParleyWire

/// The tile sizes this member tells the relay it shows (so it forwards each sender's layer that fits): sent only
/// when they changed, at most every `interval`, and again in full after a reconnect. Time is an input.
struct TileReporting: Equatable {
    /// Shortest time between two reports: a window dragged to a new size reports its last size, not every step.
    static let interval: Duration = .milliseconds(250)

    /// What to do now.
    enum Step: Equatable {
        /// Send these tiles (they are recorded as sent at the time given).
        case send([TileSize])
        /// Ask again after this long (nothing is due before).
        case wait(Duration)
        /// Nothing to send.
        case nothing
    }

    private(set) var wanted: [TileSize]?
    private(set) var sent: [TileSize]?
    private(set) var sentAt: Duration?

    /// The tiles shown now.
    mutating func want(_ tiles: [TileSize]) { wanted = tiles }

    /// A new connection to the relay: what it knew is gone, so the tiles go again at once.
    mutating func forgetSent() {
        sent = nil
        sentAt = nil
    }

    /// At `now`, with `joined` while in a room and `waiting` while a wake-up from an earlier `.wait` is pending.
    mutating func next(now: Duration, joined: Bool, waiting: Bool) -> Step {
        guard joined, let tiles = wanted, tiles != sent, !waiting else { return .nothing }
        if let sentAt, now - sentAt < Self.interval { return .wait(Self.interval - (now - sentAt)) }
        sent = tiles
        sentAt = now
        return .send(tiles)
    }
}
