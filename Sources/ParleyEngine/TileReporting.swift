import ParleyWire

/// The tile sizes this member tells the relay it shows (so it forwards each sender's layer that fits), with its
/// downlink estimate: sent only when they changed, at most every `interval`, and again in full after a reconnect.
/// Time is an input.
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
    /// The downlink estimate to report (kbit/s, nil for no limit), and the one last reported.
    private(set) var downlink: Int?
    private(set) var sentDownlink: Int?

    /// The tiles shown now.
    mutating func want(_ tiles: [TileSize]) { wanted = tiles }

    /// The downlink estimate now (kbit/s, nil for no limit). It goes with the next report once it moved 10 % or
    /// more from the one reported (or a limit appeared or went): a figure that creeps up each second is not news.
    mutating func setDownlink(_ kbps: Int?) { downlink = kbps }

    private var downlinkIsNews: Bool {
        switch (downlink, sentDownlink) {
        case (nil, nil): false
        case (let now?, let sent?): abs(now - sent) * 10 >= sent
        default: true
        }
    }

    /// A new connection to the relay: what it knew is gone, so the tiles go again at once.
    mutating func forgetSent() {
        sent = nil
        sentAt = nil
        sentDownlink = nil
    }

    /// At `now`, with `joined` while in a room and `waiting` while a wake-up from an earlier `.wait` is pending.
    mutating func next(now: Duration, joined: Bool, waiting: Bool) -> Step {
        // A member that draws nothing (a bot) still reports its downlink: with no tiles listed, which to the relay
        // means every sender's full layer, as before any report.
        let tiles = wanted ?? []
        guard joined, !waiting, (wanted != nil && tiles != sent) || downlinkIsNews else { return .nothing }
        if let sentAt, now - sentAt < Self.interval { return .wait(Self.interval - (now - sentAt)) }
        sent = tiles
        sentAt = now
        sentDownlink = downlink
        return .send(tiles)
    }
}
