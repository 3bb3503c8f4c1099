import ParleyWire

/// The relay's pacing of what it sends a receiver whose downlink is limited (its tile report gave an estimate).
///
/// The layers the relay gives such a receiver fit its estimate on average, but the senders' packets arrive in
/// bursts (each sender paces its keyframes at 2.5 times its own rate, and several keyframes come at once after a
/// loss): forwarded as they come, a burst overflowed a small bottleneck queue, the loss asked for keyframes, and the
/// keyframes overflowed it again (in the lab's `congested-downlink` case a member on 1 Mbit/s with an estimate of
/// 450 kbit/s lost 20-30 % every few seconds). So video for a limited receiver waits here and leaves at 1.5 times its
/// estimate or what it is sent, whichever is more (`Pacer`: sound and resends never wait, they are written at once); at most `longestWait` of the pacing rate waits, past
/// that the oldest video is dropped and counted (the receiver asks for it again or for a keyframe). Time is an
/// input (ms). Bounded by the receivers with a limit.
struct ReceiverPacing<Packet: Sendable> {
    /// The pacing rate against the receiver's estimate.
    static var factor: Double { 1.5 }
    /// The most video that waits, in time at the pacing rate (ms).
    static var longestWait: Double { 400 }

    private var pacers: [UInt32: Pacer<Packet>] = [:]
    /// Each paced receiver's estimate (bits a second) and the video bytes queued for it since the last `refresh`.
    private var estimates: [UInt32: Double] = [:]
    private var queued: [UInt32: Int] = [:]
    /// Video packets dropped for `longestWait`.
    private(set) var dropped = 0

    /// Whether any receiver is paced.
    var isEmpty: Bool { pacers.isEmpty }

    /// Whether `receiver` is paced.
    func paces(_ receiver: UInt32) -> Bool { pacers[receiver] != nil }

    /// The receiver's downlink estimate changed (kbit/s; nil: no limit). Without a limit its waiting packets are
    /// returned to be written at once.
    mutating func setDownlink(_ kbps: Int?, of receiver: UInt32) -> [Packet] {
        guard let kbps, kbps > 0 else {
            estimates[receiver] = nil
            queued[receiver] = nil
            guard var pacer = pacers.removeValue(forKey: receiver) else { return [] }
            return pacer.drain()
        }
        let estimate = Double(kbps) * 1_000
        estimates[receiver] = estimate
        if let current = pacers[receiver]?.rate {
            pacers[receiver]?.rate = max(current, Self.factor * estimate)
        } else {
            pacers[receiver] = Pacer(rate: Self.factor * estimate)
        }
        return []
    }

    /// Queues a video packet of `size` bytes for `receiver` (which must be paced).
    mutating func enqueue(_ packet: Packet, size: Int, for receiver: UInt32) {
        guard var pacer = pacers[receiver] else { return }
        queued[receiver, default: 0] += size
        pacer.enqueue(packet, size: size, isAudio: false)
        dropped += pacer.trim(toBytes: Int(pacer.rate * Self.longestWait / 8_000))
        pacers[receiver] = pacer
    }

    /// The packets that may leave at `now`, by receiver.
    mutating func release(at now: Double) -> [(receiver: UInt32, packets: [Packet])] {
        var out: [(receiver: UInt32, packets: [Packet])] = []
        for receiver in pacers.keys.sorted() {
            guard var pacer = pacers[receiver] else { continue }
            let packets = pacer.release(at: now)
            pacers[receiver] = pacer
            if !packets.isEmpty { out.append((receiver, packets)) }
        }
        return out
    }

    /// Sets each pacer's rate for the next interval: 1.5 times the larger of the receiver's estimate and the video
    /// queued for it over the last `seconds`. The layers given fit the estimate only on average, and the dominant
    /// speaker keeps its smallest layer even when it does not fit: paced at the estimate alone, the queue grew past
    /// its bound and lost frames (in the lab a member just moved, cut to the floor by the loss of the move, saw its
    /// peer at 15 fps). Pacing spreads bursts; what is sent is the allocation's to limit.
    mutating func refresh(after seconds: Double) {
        guard seconds > 0 else { return }
        for (receiver, estimate) in estimates {
            let demand = Double(queued[receiver] ?? 0) * 8 / seconds
            pacers[receiver]?.rate = Self.factor * max(estimate, demand)
        }
        queued = [:]
    }

    /// A receiver gone: its pacer and what waited in it forgotten.
    mutating func forget(_ receiver: UInt32) {
        pacers[receiver] = nil
        estimates[receiver] = nil
        queued[receiver] = nil
    }
}
