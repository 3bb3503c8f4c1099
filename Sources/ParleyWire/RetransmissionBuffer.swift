// Relay-side helpers for loss repair: a per-stream store of recent packets that answers NACKs without bothering
// the sender, and a throttle that keeps keyframe requests from many receivers down to one per sender per interval.

/// Recent packets of each stream, by SSRC and sequence number, kept `retention` long to answer NACKs.
/// Generic over what is stored so the relay can keep its own buffers (no copy) and the engine byte arrays.
public struct RetransmissionBuffer<Packet: Sendable>: Sendable {
    // Inlinable so the relay's module specializes it for its own packet type (generic calls across modules
    // are otherwise not specialized, which costs several times more per packet).
    @usableFromInline
    struct Slot: Sendable {
        @usableFromInline var sequenceNumber: UInt16
        @usableFromInline var storedAt: Duration
        @usableFromInline var packet: Packet?

        @inlinable
        init(sequenceNumber: UInt16, storedAt: Duration, packet: Packet?) {
            self.sequenceNumber = sequenceNumber
            self.storedAt = storedAt
            self.packet = packet
        }
    }

    /// How long a packet can be retransmitted after it was stored.
    public let retention: Duration
    /// Packets kept per stream at most (a power of two); older ones are overwritten.
    public let capacityPerStream: Int

    @usableFromInline
    var streams: [UInt32: [Slot]] = [:]

    @usableFromInline
    var releasedCount = 0

    /// Packets released so far for being older than `retention` (by `dropExpired`), over the buffer's life.
    public var releasedPackets: Int { releasedCount }

    /// A buffer keeping `retention` of packets (default 500 ms), at most `capacityPerStream` per stream
    /// (rounded up to a power of two; 1024 holds 500 ms of 15 Mbit/s video in 1200-byte packets).
    @inlinable
    public init(retention: Duration = .milliseconds(500), capacityPerStream: Int = 1024) {
        self.retention = retention
        var capacity = 1
        while capacity < max(1, capacityPerStream) { capacity <<= 1 }
        self.capacityPerStream = capacity
    }

    /// Streams with packets stored.
    @inlinable
    public var streamCount: Int { streams.count }

    /// Stores a packet as sent at `now`, replacing whatever had the same slot.
    @inlinable
    public mutating func store(_ packet: Packet, ssrc: UInt32, sequenceNumber: UInt16, at now: Duration) {
        let index = Int(sequenceNumber) & (capacityPerStream - 1)
        let empty = Slot(sequenceNumber: 0, storedAt: .zero, packet: nil)
        let slot = Slot(sequenceNumber: sequenceNumber, storedAt: now, packet: packet)
        streams[ssrc, default: Array(repeating: empty, count: capacityPerStream)][index] = slot
    }

    /// The stored packet with this SSRC and sequence number, if still within the retention time.
    @inlinable
    public func packet(ssrc: UInt32, sequenceNumber: UInt16, at now: Duration) -> Packet? {
        guard let slots = streams[ssrc] else { return nil }
        let slot = slots[Int(sequenceNumber) & (capacityPerStream - 1)]
        guard slot.sequenceNumber == sequenceNumber, now - slot.storedAt <= retention else { return nil }
        return slot.packet
    }

    /// The packets a NACK asks for that are still stored, in the NACK's order; the rest are lost for good.
    @inlinable
    public func packets(answering nack: GenericNACK, at now: Duration) -> [Packet] {
        nack.lostSequenceNumbers.compactMap { packet(ssrc: nack.mediaSSRC, sequenceNumber: $0, at: now) }
    }

    /// Releases every packet stored longer than `retention` ago (the slots stay, empty). Without this a stream's
    /// ring keeps its last `capacityPerStream` packets however old: about 34 s of a 30-packet-a-second video
    /// stream, 1.2 MB, where half a second is all a NACK can use. The relay calls it once a second.
    @inlinable
    public mutating func dropExpired(at now: Duration) {
        // Through `values` by index: mutating in place, without copying the dictionary or its rings.
        var released = 0
        defer { releasedCount += released }
        var index = streams.values.startIndex
        while index != streams.values.endIndex {
            defer { index = streams.values.index(after: index) }
            streams.values[index].withUnsafeMutableBufferPointer { slots in
                for index in slots.indices where slots[index].packet != nil && now - slots[index].storedAt > retention {
                    slots[index].packet = nil
                    released += 1
                }
            }
        }
    }

    /// Packets stored and not yet released, over all streams.
    public var storedPackets: Int {
        streams.values.reduce(0) { total, slots in total + slots.reduce(0) { $0 + ($1.packet == nil ? 0 : 1) } }
    }

    /// Forgets a stream (its member left).
    @inlinable
    public mutating func removeStream(ssrc: UInt32) {
        streams.removeValue(forKey: ssrc)
    }
}

/// Lets at most one keyframe request (PLI) per sender through per `minimumInterval`; a request that arrives too
/// soon is remembered and becomes due when the interval ends, so a receiver that joined late still gets its keyframe.
/// A receiver whose media has just started (`shouldForwardFirst`) is not held to the interval: a keyframe that went
/// out before it could receive is no use to it, so it waits only when one is already on its way.
public struct KeyframeRequestThrottle: Sendable, Equatable {
    /// Shortest time between two requests forwarded to the same sender.
    public let minimumInterval: Duration
    /// Requests suppressed so far (forwarded later or merged into another).
    public private(set) var suppressedCount = 0

    var lastForwarded: [UInt32: Duration] = [:]
    var deferred: Set<UInt32> = []
    /// Streams asked for a keyframe that has not gone by yet.
    var awaiting: Set<UInt32> = []

    /// A throttle with the given interval (default 500 ms).
    public init(minimumInterval: Duration = .milliseconds(500)) { self.minimumInterval = minimumInterval }

    /// True when a keyframe request for `mediaSSRC` received at `now` should be forwarded to its sender now.
    public mutating func shouldForward(mediaSSRC: UInt32, at now: Duration) -> Bool {
        if let last = lastForwarded[mediaSSRC], now - last < minimumInterval {
            suppressedCount += 1
            deferred.insert(mediaSSRC)
            return false
        }
        forwarded(mediaSSRC, at: now)
        return true
    }

    /// True when a receiver that can receive from `now` on (its media just started) should have a keyframe of
    /// `mediaSSRC` asked for now: always, unless a request forwarded less than `minimumInterval` ago is still
    /// unanswered (that keyframe reaches the new receiver too). One per joining receiver at most, so bounded by how
    /// fast members can join.
    public mutating func shouldForwardFirst(mediaSSRC: UInt32, at now: Duration) -> Bool {
        if awaiting.contains(mediaSSRC), let last = lastForwarded[mediaSSRC], now - last < minimumInterval {
            suppressedCount += 1
            return false
        }
        forwarded(mediaSSRC, at: now)
        return true
    }

    /// A request for `ssrc` went to its sender at `now`: the interval starts and a keyframe is awaited.
    private mutating func forwarded(_ ssrc: UInt32, at now: Duration) {
        lastForwarded[ssrc] = now
        deferred.remove(ssrc)
        awaiting.insert(ssrc)
    }

    /// Streams whose deferred request may now be forwarded (marked as forwarded at `now`), in SSRC order.
    public mutating func dueRequests(at now: Duration) -> [UInt32] {
        var due: [UInt32] = []
        for ssrc in deferred.sorted() {
            if let last = lastForwarded[ssrc], now - last < minimumInterval { continue }
            due.append(ssrc)
            forwarded(ssrc, at: now)
        }
        return due
    }

    /// A keyframe from this sender went out: drops any deferred request for it.
    public mutating func keyframeSent(mediaSSRC: UInt32) {
        deferred.remove(mediaSSRC)
        awaiting.remove(mediaSSRC)
    }

    /// Forgets a stream (its member left).
    public mutating func removeStream(ssrc: UInt32) {
        lastForwarded.removeValue(forKey: ssrc)
        deferred.remove(ssrc)
        awaiting.remove(ssrc)
    }
}
