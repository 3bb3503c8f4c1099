/// How the relay shares one receiver's downlink among the senders it draws, once it knows what the downlink carries:
/// audio always; then video in the order dominant speaker, then the other tiles largest first: first each tile's
/// smallest layer while it fits, then each tile, in the same order, up to the highest of its layers that fits what is
/// left, never above the layer its tile asks for. The dominant speaker keeps at least its smallest layer even when
/// nothing fits (a call where you cannot see who talks is broken); any other tile whose smallest layer does not fit
/// is paused, and the receiver is told why. A step up (a larger layer than the one a sender gets now, or any
/// layer for one paused) must fit with `upgradeMargin` to spare, and the layer a sender gets now stays while it is
/// within `stayTolerance` of fitting, so an estimate creeping up and down around a layer's cost, or a layer's rate
/// measured a little higher one second (a keyframe in it), does not switch it (each switch costs a keyframe, and a
/// `congested-downlink` tile switched every second, frozen for a part of most).
public enum DownlinkAllocation {
    /// One sender's video as this receiver draws it.
    public struct Stream: Sendable, Equatable {
        public var sender: UInt32
        /// The room's dominant speaker.
        public var dominant: Bool
        /// Pixels the receiver draws this sender at (the order after the dominant speaker).
        public var tileArea: Int
        /// The layer the tile asks for (0 the largest), nil when the sender is not drawn.
        public var wanted: Int?
        /// What each layer costs, bits a second, largest first.
        public var layerRates: [Double]

        public init(sender: UInt32, dominant: Bool = false, tileArea: Int, wanted: Int?, layerRates: [Double]) {
            self.sender = sender
            self.dominant = dominant
            self.tileArea = tileArea
            self.wanted = wanted
            self.layerRates = layerRates
        }
    }

    /// What one sender's video gets, and why.
    public struct Choice: Sendable, Equatable {
        /// The layer to forward, nil for none.
        public var layer: Int?
        public var reason: Reason

        public init(layer: Int?, reason: Reason) {
            self.layer = layer
            self.reason = reason
        }
    }

    public enum Reason: Sendable, Equatable {
        /// The layer the tile asks for fits.
        case asked
        /// A smaller layer than the tile asks for: the downlink holds no more (its estimate, bits a second).
        case downlink(Double)
        /// Not drawn by this receiver.
        case notDrawn
    }

    /// What a step up must leave to spare, as a fraction of its layer's cost.
    public static let upgradeMargin = 0.15
    /// How far over what is left the layer a sender gets now may cost and still stay, as a fraction of its cost.
    public static let stayTolerance = 0.1

    /// The layers for one receiver whose downlink carries `budget` bits a second, `audio` of it taken by sound;
    /// `current` is what each sender's video gets now (nil: paused; a sender not listed is new, with no margin).
    public static func allocate(
        budget: Double, audio: Double, streams: [Stream], current: [UInt32: Int?] = [:]
    ) -> [UInt32: Choice] {
        var left = budget - audio
        var choices: [UInt32: Choice] = [:]
        let ordered = streams.sorted { first, second in
            if first.dominant != second.dominant { return first.dominant }
            if first.tileArea != second.tileArea { return first.tileArea > second.tileArea }
            return first.sender < second.sender
        }
        // First every drawn tile's smallest layer, in that order, while it fits (the speaker's always); then, in the
        // same order, each tile up to the largest layer that fits what is left. Greedy in one pass, the speaker and
        // the largest tile took large layers and the last tile was paused: a tile standing still for as long as the
        // downlink is short, where three smaller pictures all move.
        var smallestFirst: [UInt32: Int] = [:]
        for stream in ordered {
            guard stream.wanted != nil, !stream.layerRates.isEmpty else {
                choices[stream.sender] = Choice(layer: nil, reason: .notDrawn)
                continue
            }
            let smallest = stream.layerRates.count - 1
            if cost(stream, smallest, current) <= left || stream.dominant {
                left -= stream.layerRates[smallest]
                smallestFirst[stream.sender] = smallest
            } else {
                choices[stream.sender] = Choice(layer: nil, reason: .downlink(budget))
            }
        }
        for stream in ordered {
            guard let wanted = stream.wanted, let smallest = smallestFirst[stream.sender] else { continue }
            let first = min(max(wanted, 0), smallest)
            let base = stream.layerRates[smallest]
            let layer =
                (first..<smallest).first { cost(stream, $0, current) - base <= left } ?? smallest
            left -= stream.layerRates[layer] - base
            choices[stream.sender] = Choice(layer: layer, reason: layer == first ? .asked : .downlink(budget))
        }
        return choices
    }

    /// What `layer` of `stream` costs for the choice: a step up (from a smaller layer, or from paused) with
    /// `upgradeMargin` to spare, staying less `stayTolerance`, a new sender (not in `current`) its rate.
    private static func cost(_ stream: Stream, _ layer: Int, _ current: [UInt32: Int?]) -> Double {
        guard let now = current[stream.sender] else { return stream.layerRates[layer] }  // new: no margin
        let isStepUp = now.map { layer < $0 } ?? true
        let factor = isStepUp ? 1 + upgradeMargin : now == layer ? 1 - stayTolerance : 1
        return stream.layerRates[layer] * factor
    }
}

/// Spreads a sender's packets over time at a pacing rate, so a keyframe's burst never leaves at once and fills the
/// path's queue: sound leaves at once, ahead of any video waiting; video leaves while the byte budget, refilled at the
/// pacing rate, is above zero. Time is an input (ms). Bounded: past `videoLimit` waiting video packets, or
/// `audioLimit` sound packets (a caller that stops releasing), the oldest are dropped and counted (a frame or a
/// 20 ms block that old is useless anyway).
public struct Pacer<Packet: Sendable>: Sendable {
    /// Pacing runs this much faster than the target, as libwebrtc's does: the queue drains between frames.
    public static var factor: Double { 2.5 }
    /// Video packets waiting at most.
    public let videoLimit: Int
    /// Sound packets waiting at most (sound leaves at every release, so only a stalled caller reaches it).
    public let audioLimit: Int

    /// Bits a second the pacer lets out.
    public var rate: Double
    private var audio: [Packet] = []
    private var video: [(packet: Packet, size: Int)] = []
    private var videoHead = 0
    private var budget = 0.0
    private var last: Double?
    /// Video packets dropped for the limit.
    public private(set) var dropped = 0
    /// Sound packets dropped for the limit.
    public private(set) var droppedAudio = 0

    /// A pacer letting out `rate` bits a second.
    public init(rate: Double, videoLimit: Int = 2_048, audioLimit: Int = 50) {
        self.rate = rate
        self.videoLimit = videoLimit
        self.audioLimit = max(1, audioLimit)
    }

    /// Video packets waiting.
    public var waiting: Int { video.count - videoHead }
    /// Bytes of the video packets waiting.
    public private(set) var waitingBytes = 0

    /// Drops the oldest waiting video until at most `bytes` wait; returns how many went (counted in `dropped`).
    public mutating func trim(toBytes bytes: Int) -> Int {
        var count = 0
        while waitingBytes > bytes, videoHead < video.count {
            waitingBytes -= video[videoHead].size
            videoHead += 1
            count += 1
        }
        dropped += count
        return count
    }

    /// Queues a packet of `size` bytes.
    public mutating func enqueue(_ packet: Packet, size: Int, isAudio: Bool) {
        if isAudio {
            if audio.count >= audioLimit {
                audio.removeFirst()
                droppedAudio += 1
            }
            audio.append(packet)
            return
        }
        video.append((packet, size))
        waitingBytes += size
        if waiting > videoLimit {
            waitingBytes -= video[videoHead].size
            videoHead += 1
            dropped += 1
        }
    }

    /// The packets that may leave at `now`, in order: all sound first, then video while the budget lasts.
    public mutating func release(at now: Double) -> [Packet] {
        let elapsed = last.map { max(0, now - $0) } ?? 0
        last = now
        // At most 5 ms of budget saved up: a pause does not turn into a burst.
        let cap = max(rate * 5 / 8_000, 1_500)
        budget = min(budget + rate * elapsed / 8_000, cap)
        var out = audio
        audio.removeAll(keepingCapacity: true)
        while videoHead < video.count, budget > 0 {
            out.append(video[videoHead].packet)
            budget -= Double(video[videoHead].size)
            waitingBytes -= video[videoHead].size
            videoHead += 1
        }
        if videoHead > 256, videoHead * 2 > video.count {
            video.removeFirst(videoHead)
            videoHead = 0
        }
        return out
    }

    /// Everything waiting, sound first, at once (the pacing ends).
    public mutating func drain() -> [Packet] {
        let out = audio + video[videoHead...].map(\.packet)
        audio.removeAll()
        video.removeAll()
        videoHead = 0
        waitingBytes = 0
        return out
    }

    /// When the next video packet may leave (ms), nil when none waits.
    public func nextRelease(after now: Double) -> Double? {
        guard waiting > 0 else { return nil }
        guard budget <= 0, rate > 0 else { return now }
        return now + (-budget + 1) * 8_000 / rate
    }
}

/// Which of a sender's simulcast layers fit its uplink's estimate: the largest go first when the sum does not fit,
/// and a layer comes back only when the estimate holds it with `headroom` to spare, so a target that wobbles around
/// a layer's cost does not switch it on and off every second. The smallest layer always stays.
public struct SendLayers: Sendable, Equatable {
    /// Spare an estimate must have over a layer's cost before it comes back.
    public static let headroom = 1.2

    /// Per layer, largest first, whether it is sent.
    public private(set) var active: [Bool]

    /// All `count` layers on.
    public init(count: Int) {
        active = Array(repeating: true, count: max(1, count))
    }

    /// Updates the layers for `target` bits a second, given each layer's cost (largest first), a layer coming back
    /// with `headroom` to spare; returns whether anything changed.
    @discardableResult
    public mutating func update(target: Double, layerRates: [Double], headroom: Double = headroom) -> Bool {
        guard layerRates.count == active.count else {
            active = Array(repeating: true, count: max(1, layerRates.count))
            return true
        }
        let before = active
        var next = active
        // From the smallest up: each layer stays on while the sum fits, comes back only with headroom.
        var sum = 0.0
        for index in layerRates.indices.reversed() {
            let with = sum + layerRates[index]
            let isSmallest = index == layerRates.count - 1
            if isSmallest {
                next[index] = true
            } else if active[index] {
                next[index] = with <= target
            } else {
                next[index] = with * headroom <= target
            }
            if next[index] {
                sum = with
            } else {
                // A larger layer never runs without the smaller ones under it.
                for larger in 0..<index { next[larger] = false }
                break
            }
        }
        active = next
        return active != before
    }
}
