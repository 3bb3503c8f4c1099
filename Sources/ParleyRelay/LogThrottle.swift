/// Decides which repeated log lines get written: the first per key (a source address) in each window, carrying how
/// many were held back since the last one. Bounded: at most `capacity` keys are remembered; when full, keys whose
/// window ended are forgotten first, and a new key beyond that is counted in `unlogged` instead of being remembered.
public struct LogThrottle<Key: Hashable & Sendable>: Sendable {
    /// How long one key stays quiet after a line.
    public let window: Duration
    /// Most keys remembered.
    public let capacity: Int
    /// Events of keys that could not be remembered (the map was full of keys still in their window).
    public private(set) var unlogged = 0
    private var entries: [Key: (since: Duration, heldBack: Int)] = [:]

    /// A throttle; one line per key per `window`.
    public init(window: Duration = .seconds(60), capacity: Int = 4096) {
        self.window = window
        self.capacity = capacity
    }

    /// Keys remembered now.
    public var count: Int { entries.count }

    /// One event for `key` at `now`: the number of events held back since the key's last line when a line should be
    /// written now, nil when this one is held back.
    public mutating func admit(_ key: Key, at now: Duration) -> Int? {
        if let entry = entries[key] {
            guard now - entry.since >= window else {
                entries[key]?.heldBack += 1
                return nil
            }
            entries[key] = (now, 0)
            return entry.heldBack
        }
        if entries.count >= capacity {
            entries = entries.filter { now - $0.value.since < window }
            guard entries.count < capacity else {
                unlogged += 1
                return nil
            }
        }
        entries[key] = (now, 0)
        return 0
    }

    /// Forgets every key whose window ended at `now` and returns those that held events back since their last
    /// line, with how many: a spray that stops still gets its count written (call it about once a second).
    public mutating func expire(at now: Duration) -> [(key: Key, heldBack: Int)] {
        var due: [(key: Key, heldBack: Int)] = []
        for (key, entry) in entries where now - entry.since >= window {
            if entry.heldBack > 0 { due.append((key, entry.heldBack)) }
            entries[key] = nil
        }
        return due
    }
}
