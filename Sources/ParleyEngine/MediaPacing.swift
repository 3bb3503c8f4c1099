import ParleyWire

/// When this member's packets leave: every RTP packet goes through a `Pacer`, sound at once and ahead of any video
/// waiting, video at 2.5 times the uplink's estimate, so a keyframe never leaves as one burst that overflows a
/// narrow link's queue. The engine stamps each packet's transport-wide sequence number as it leaves, so the numbers
/// follow the order on the wire, the order the estimate reads delays in.
struct MediaPacing {
    /// The pacing rate never goes under this (bits a second): a low estimate must not hold a keyframe for seconds.
    static let leastRate = 250_000.0
    /// Bytes a packet takes beyond its payload on the wire: the RTP header with its extensions, and room for an
    /// end-to-end encryption's header and tag.
    static let overhead = 40

    private var pacer = Pacer<RTPPacket>(rate: leastRate * Pacer<RTPPacket>.factor)

    /// Video packets waiting.
    var waiting: Int { pacer.waiting }
    /// Video packets dropped because too many waited (a caller that stopped releasing).
    var dropped: Int { pacer.dropped }

    /// Queues `packets`; those of `audioSSRC` leave at the next release whatever video waits.
    mutating func enqueue(_ packets: [RTPPacket], audioSSRC: UInt32?) {
        for packet in packets {
            pacer.enqueue(
                packet, size: packet.payload.count + Self.overhead, isAudio: packet.header.ssrc == audioSSRC)
        }
    }

    /// The packets that leave at `now` (ms) for an uplink estimated at `estimate` bits a second, in order.
    mutating func release(at now: Double, estimate: Double) -> [RTPPacket] {
        pacer.rate = max(Self.leastRate, estimate) * Pacer<RTPPacket>.factor
        return pacer.release(at: now)
    }

    /// When the next video packet may leave (ms), nil when none waits.
    func nextRelease(after now: Double) -> Double? { pacer.nextRelease(after: now) }
}
