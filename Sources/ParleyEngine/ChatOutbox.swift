import ParleyWire

/// Chat lines sent and not yet echoed back by the relay. A line written into a connection that died without a word
/// (an address that changed, a relay that froze) never reached anyone; it goes again on the next connection, in
/// order, under the same reference, which the relay recognises if the line did get through after all. Bounded:
/// past `limit` lines waiting, the oldest is given up and counted.
struct ChatOutbox {
    /// Lines waiting at most: sent again after the join and the tile report, they stay within the relay's burst of
    /// 40 signaling messages (past it, a line would be dropped at the relay's rate limit).
    static let limit = 32

    /// The lines sent and not yet echoed, oldest first, each with its reference.
    private(set) var pending: [ChatSend] = []
    /// Lines given up because more than `limit` were waiting.
    private(set) var dropped = 0
    /// Lines sent in all (each has its reference: c1, c2, …).
    private(set) var lastReference = 0

    /// Gives `line` the next reference and keeps it until the relay echoes it; returns it as it is to be sent.
    mutating func add(_ line: ChatSend) -> ChatSend {
        var line = line
        lastReference += 1
        line.ref = "c\(lastReference)"
        if pending.count >= Self.limit {
            pending.removeFirst()
            dropped += 1
        }
        pending.append(line)
        return line
    }

    /// The relay echoed the line with reference `ref`: it and every line before it are settled (the relay takes a
    /// connection's lines in order; one it refused is never echoed, and is not sent again after a later one was).
    mutating func delivered(ref: String?) {
        guard let ref, let index = pending.firstIndex(where: { $0.ref == ref }) else { return }
        pending.removeFirst(index + 1)
    }
}
