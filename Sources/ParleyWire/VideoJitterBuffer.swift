// The receive side of one VP8 stream: packets in (any order, with duplicates and losses), decodable frames out.
//
// Frames leave strictly in order, each only when all its packets are here. A VP8 delta frame needs the frame
// before it, so when a frame cannot be completed (its missing packets were NACKed and never came) before
// `frameDeadline`, the chain is broken: the buffer asks for a keyframe (PLI) and emits nothing until a complete
// keyframe arrives. It starts in that state too, since a receiver joining mid-stream needs a keyframe first.
//
// The caller gives "now" on every call (any monotonic origin) and acts on what `poll` returns; there are no clocks,
// locks or callbacks inside.

/// Reorders one VP8 stream's packets into complete frames, asks for retransmissions and keyframes.
public struct VideoJitterBuffer: Sendable {
    /// Timing and size limits.
    public struct Settings: Sendable, Equatable {
        /// How long a gap may stay open (reordering) before its first NACK.
        public var nackDelay: Duration
        /// Wait before the second NACK of a packet; doubles for each further one.
        public var nackRetryInterval: Duration
        /// NACKs sent per missing packet at most.
        public var maxNackAttempts: Int
        /// How long the next frame may stay incomplete before the buffer gives up on it and asks for a keyframe.
        public var frameDeadline: Duration
        /// How often to repeat the keyframe request while waiting for a keyframe.
        public var keyframeRequestInterval: Duration
        /// Packets held at most; beyond it the oldest are dropped.
        public var maxBufferedPackets: Int
        /// A sequence jump larger than this restarts the stream (sender restarted or hostile input).
        public var maxSequenceJump: Int

        /// Settings; the defaults suit a call over the internet (RTTs up to ~150 ms).
        public init(
            nackDelay: Duration = .milliseconds(10), nackRetryInterval: Duration = .milliseconds(50),
            maxNackAttempts: Int = 3, frameDeadline: Duration = .milliseconds(350),
            keyframeRequestInterval: Duration = .milliseconds(1000), maxBufferedPackets: Int = 1000,
            maxSequenceJump: Int = 3000
        ) {
            self.nackDelay = nackDelay
            self.nackRetryInterval = nackRetryInterval
            self.maxNackAttempts = maxNackAttempts
            self.frameDeadline = frameDeadline
            self.keyframeRequestInterval = keyframeRequestInterval
            self.maxBufferedPackets = maxBufferedPackets
            self.maxSequenceJump = maxSequenceJump
        }
    }

    /// What the caller should do after a poll.
    public struct Output: Sendable, Equatable {
        /// Complete frames to decode, in order.
        public var frames: [VP8Frame]
        /// Sequence numbers to NACK now, oldest first (send as one `GenericNACK`).
        public var nacks: [UInt16]
        /// Send a PLI for this stream now.
        public var needsKeyframe: Bool

        /// An output.
        public init(frames: [VP8Frame] = [], nacks: [UInt16] = [], needsKeyframe: Bool = false) {
            self.frames = frames
            self.nacks = nacks
            self.needsKeyframe = needsKeyframe
        }
    }

    struct Stored: Sendable {
        var packet: RTPPacket
        var startsFrame: Bool
        var startsKeyframe: Bool
    }

    struct MissingPacket: Sendable {
        var attempts: Int
        var nextAttempt: Duration
        /// When its first NACK went out.
        var firstNack: Duration?
    }

    /// The settings in force.
    public let settings: Settings
    /// Counters and jitter for the stream (RTP clock 90 kHz).
    public private(set) var statistics = ReceptionStatistics(clockRate: MediaClockRate.video)
    /// True until a keyframe restores the decoding chain; no frames are emitted meanwhile.
    public private(set) var isWaitingForKeyframe = true

    var unwrapper = RTPSequenceUnwrapper()
    var packets: [Int64: Stored] = [:]
    var keyframeStarts: Set<Int64> = []
    var missing: [Int64: MissingPacket] = [:]
    /// Everything below is finished (delivered or given up). In order, the next frame starts exactly here.
    var floor: Int64?
    var highest: Int64?
    /// Sequence numbers seen at or above `floor - historyLength`, to tell duplicates from late packets.
    var history: Set<Int64> = []
    var stalledSince: Duration?
    var lastKeyframeRequest: Duration?
    var keyframeRequestDue = false
    var waitingSince: Duration?
    var probation: RTPPacket?
    /// How long a repair takes: from a packet's one NACK to its arrival (the round trip to whoever resends it, over
    /// the sender's link too when the packet was lost before the relay). Nil until one was seen.
    public private(set) var repairTime: Duration?

    /// The longest the next frame waits for its repairs, however slow they are: past it, a keyframe costs less.
    public static let longestFrameDeadline = Duration.milliseconds(1_000)

    static let historyLength: Int64 = 1024
    /// Numbers of one forward jump tracked as missing (the newest ones); more than the relay keeps of any stream.
    static let largestGap: Int64 = 256
    /// Missing numbers tracked at most; the oldest go first.
    static let largestMissing = 1024
    /// Numbers in one poll's NACK at most (the newest due ones), so one NACK stays a bounded RTCP packet.
    static let largestNack = 256
    /// Before the first keyframe, packets this far below the first one are still accepted (startup reordering).
    static let startupReorderWindow: Int64 = 64

    /// An empty buffer waiting for the stream's first keyframe.
    public init(settings: Settings = Settings()) { self.settings = settings }

    /// Packets currently held.
    public var bufferedPacketCount: Int { packets.count }

    /// Takes one received packet of this stream; `now` is its arrival time.
    public mutating func insert(_ packet: RTPPacket, at now: Duration) -> PacketArrival {
        let startsFrame: Bool
        let startsKeyframe: Bool
        do {
            let (descriptor, offset) = try VP8PayloadDescriptor.parse(packet.payload)
            startsFrame = descriptor.startsFrame
            startsKeyframe = startsFrame && packet.payload[offset] & 0x01 == 0
        } catch {
            statistics.recordMalformed()
            return .malformed(error)
        }
        let sequence = unwrapper.peek(packet.header.sequenceNumber)
        if let highest, abs(sequence - highest) > Int64(settings.maxSequenceJump) {
            // RFC 3550 §A.1 probation: one far-off packet is ignored, two consecutive ones mean a restart.
            guard let previous = probation, previous.header.sequenceNumber &+ 1 == packet.header.sequenceNumber else {
                probation = packet
                return .outOfRange
            }
            restart()
            _ = insert(previous, at: now)
            return insert(packet, at: now)
        }
        probation = nil
        _ = unwrapper.unwrap(packet.header.sequenceNumber)
        if floor == nil {
            floor = sequence - Self.startupReorderWindow
            waitingSince = now
        }
        guard let floor, sequence >= floor else {
            if history.contains(sequence) {
                statistics.recordDuplicate()
                return .duplicate
            }
            statistics.recordLate()
            return .late
        }
        guard !history.contains(sequence) else {
            statistics.recordDuplicate()
            return .duplicate
        }
        history.insert(sequence)
        var arrival = PacketArrival.accepted
        if let repaired = missing.removeValue(forKey: sequence) {
            statistics.recordRecovered()
            arrival = .recovered
            // Only a packet asked for once says how long one request takes to be answered.
            if repaired.attempts == 1, let asked = repaired.firstNack { learnRepairTime(now - asked) }
        }
        if let highest {
            if sequence > highest {
                // Every number skipped is missing until it arrives; the first NACK waits out reordering. Only the
                // last `largestGap` of a jump are tracked: a sender can jump by up to 32,767 (found by `make fuzz`),
                // and nothing that old is still held for retransmission anyway.
                for gap in max(highest + 1, sequence - Self.largestGap)..<sequence {
                    missing[gap] = MissingPacket(attempts: 0, nextAttempt: now + settings.nackDelay)
                }
                if missing.count > Self.largestMissing {
                    for old in missing.keys.sorted().prefix(missing.count - Self.largestMissing) {
                        missing.removeValue(forKey: old)
                    }
                }
                self.highest = sequence
            }
        } else {
            highest = sequence
        }
        statistics.record(
            ssrc: packet.header.ssrc, extendedSequenceNumber: sequence, timestamp: packet.header.timestamp,
            arrival: now)
        packets[sequence] = Stored(packet: packet, startsFrame: startsFrame, startsKeyframe: startsKeyframe)
        if startsKeyframe { keyframeStarts.insert(sequence) }
        if packets.count > settings.maxBufferedPackets { dropOldestPackets() }
        return arrival
    }

    /// What to do now: frames ready to decode, NACKs due and whether to request a keyframe.
    public mutating func poll(at now: Duration) -> Output {
        var output = Output()
        guard floor != nil else { return output }
        deliverFrames(into: &output, now: now)
        output.nacks = dueNacks(now: now)
        if isWaitingForKeyframe {
            pruneWhileWaiting()
            let since = waitingSince ?? now
            waitingSince = since
            let due: Bool
            if keyframeRequestDue {
                due = true
            } else if let last = lastKeyframeRequest {
                due = now - last >= settings.keyframeRequestInterval
            } else {
                // First request: at once, unless a keyframe is already arriving; then only if it stalls.
                due = keyframeStarts.isEmpty || now - since >= frameDeadline
            }
            if due {
                output.needsKeyframe = true
                lastKeyframeRequest = now
                keyframeRequestDue = false
            }
        }
        pruneHistory()
        return output
    }

    /// The decoder failed on a frame: drop the chain, emit nothing until a keyframe, and ask for one at the next poll.
    public mutating func decoderNeedsKeyframe() {
        giveUp()
    }

    /// The report block about this stream at `now` for the next receiver report; starts a new loss interval.
    public mutating func makeReportBlock(now: Duration) -> ReportBlock {
        statistics.makeReportBlock(now: now)
    }

    /// Notes a sender report about this stream, for the LSR and DLSR fields of the next report block.
    public mutating func recordSenderReport(ntpTimestamp: UInt64, arrival: Duration) {
        statistics.recordSenderReport(ntpTimestamp: ntpTimestamp, arrival: arrival)
    }

    // MARK: Frames

    enum FrameStatus {
        case complete(last: Int64)
        case incomplete
        case broken
    }

    /// Whether the frame starting at `start` is all here: consecutive packets of one timestamp up to the marker.
    func frameStatus(startingAt start: Int64) -> FrameStatus {
        guard let first = packets[start] else { return .incomplete }
        guard first.startsFrame else { return .broken }
        var sequence = start
        while let stored = packets[sequence] {
            if stored.packet.header.timestamp != first.packet.header.timestamp {
                // A new frame began without a marker on the previous packet: take that packet as the frame's end.
                return sequence > start && stored.startsFrame ? .complete(last: sequence - 1) : .broken
            }
            if stored.packet.header.marker { return .complete(last: sequence) }
            sequence += 1
        }
        return .incomplete
    }

    mutating func deliverFrames(into output: inout Output, now: Duration) {
        while let floor {
            if !isWaitingForKeyframe {
                switch frameStatus(startingAt: floor) {
                case .complete(let last):
                    if let frame = takeFrame(from: floor, through: last) {
                        output.frames.append(frame)
                        continue
                    }
                    giveUp()
                case .broken:
                    giveUp()
                case .incomplete:
                    if let keyframe = firstCompleteKeyframe() {
                        skip(to: keyframe)
                        continue
                    }
                    let pending = (highest ?? floor - 1) >= floor
                    guard pending else {
                        stalledSince = nil
                        return
                    }
                    let since = stalledSince ?? now
                    stalledSince = since
                    guard now - since >= frameDeadline else { return }
                    giveUp()
                }
            }
            guard let keyframe = firstCompleteKeyframe() else { return }
            skip(to: keyframe)
        }
    }

    /// Removes the frame's packets, assembles it and moves the floor past it; nil when the payloads disagree.
    mutating func takeFrame(from start: Int64, through last: Int64) -> VP8Frame? {
        var framePackets: [RTPPacket] = []
        framePackets.reserveCapacity(Int(last - start + 1))
        for sequence in start...last {
            if let stored = packets.removeValue(forKey: sequence) { framePackets.append(stored.packet) }
            keyframeStarts.remove(sequence)
        }
        floor = last + 1
        stalledSince = nil
        // The last packet may lack the marker (frame ended by the next timestamp); the assembler requires it.
        if let lastIndex = framePackets.indices.last { framePackets[lastIndex].header.marker = true }
        return try? VP8Depacketizer.assemble(framePackets)
    }

    func firstCompleteKeyframe() -> Int64? {
        for start in keyframeStarts.sorted() {
            if case .complete = frameStatus(startingAt: start) { return start }
        }
        return nil
    }

    /// Drops everything before `keyframe` and continues in order from it.
    mutating func skip(to keyframe: Int64) {
        for sequence in packets.keys where sequence < keyframe { packets.removeValue(forKey: sequence) }
        keyframeStarts = keyframeStarts.filter { $0 >= keyframe }
        missing = missing.filter { $0.key >= keyframe }
        floor = keyframe
        stalledSince = nil
        isWaitingForKeyframe = false
        keyframeRequestDue = false
        waitingSince = nil
        lastKeyframeRequest = nil
    }

    /// The decoding chain is broken: wait for a keyframe and ask for one now.
    mutating func giveUp() {
        isWaitingForKeyframe = true
        stalledSince = nil
        keyframeRequestDue = true
    }

    // MARK: NACKs

    /// Missing packets due for a NACK. While waiting for a keyframe only packets after the newest keyframe start
    /// are worth asking for; delta frames before it cannot be decoded anyway.
    mutating func dueNacks(now: Duration) -> [UInt16] {
        guard let floor else { return [] }
        let lowest: Int64
        if isWaitingForKeyframe {
            guard let newestKeyframe = keyframeStarts.max() else { return [] }
            lowest = newestKeyframe
        } else {
            lowest = floor
        }
        var due: [Int64] = []
        for (sequence, state) in missing where sequence >= lowest {
            if state.attempts < settings.maxNackAttempts && now >= state.nextAttempt { due.append(sequence) }
        }
        due.sort()
        if due.count > Self.largestNack { due.removeFirst(due.count - Self.largestNack) }
        for sequence in due {
            guard var state = missing[sequence] else { continue }
            state.attempts += 1
            if state.firstNack == nil { state.firstNack = now }
            state.nextAttempt = now + nackRetryInterval * (1 << (state.attempts - 1))
            missing[sequence] = state
        }
        return due.map { UInt16(truncatingIfNeeded: $0) }
    }

    // MARK: Repair time

    /// The wait before a packet's next NACK: the settings' interval, or longer when repairs take longer, so a
    /// request is not repeated before its answer could have come.
    public var nackRetryInterval: Duration {
        guard let repairTime else { return settings.nackRetryInterval }
        return max(settings.nackRetryInterval, repairTime * 5 / 4)
    }

    /// How long the next frame may stay incomplete: the settings' deadline, or, when repairs take longer, time for
    /// a NACK and one more (2.5 repair times and the reordering wait), at most `longestFrameDeadline`. On a link with
    /// a 200 ms round trip a frame missing a packet is otherwise given up before its repair can arrive, and the
    /// keyframe asked for instead costs a freeze and a burst (the `mobile` scenario: docs/network.md).
    public var frameDeadline: Duration {
        guard let repairTime else { return settings.frameDeadline }
        let needed = repairTime * 5 / 2 + settings.nackDelay
        return max(settings.frameDeadline, min(needed, Self.longestFrameDeadline))
    }

    /// Takes one repair's time: a longer one at once (a path that slowed is believed now), a shorter one a tenth at
    /// a time (one lucky repair does not shorten the waits).
    mutating func learnRepairTime(_ sample: Duration) {
        let sample = min(max(sample, .zero), Self.longestFrameDeadline)
        guard let current = repairTime, sample < current else {
            repairTime = sample
            return
        }
        repairTime = current * 0.9 + sample * 0.1
    }

    // MARK: Housekeeping

    mutating func dropOldestPackets() {
        let excess = packets.count - settings.maxBufferedPackets
        guard excess > 0 else { return }
        for sequence in packets.keys.sorted().prefix(excess) {
            packets.removeValue(forKey: sequence)
            keyframeStarts.remove(sequence)
        }
        // The oldest packets belonged to the next frame or the one after it: that chain is gone.
        giveUp()
        pruneWhileWaiting()
    }

    /// While waiting for a keyframe, keeps only what could still belong to one: packets from the newest keyframe
    /// start on, or, with none seen yet, the last few packets (a keyframe's first packet may come reordered).
    mutating func pruneWhileWaiting() {
        guard let current = floor, let highest else { return }
        let newFloor = max(current, keyframeStarts.max() ?? (highest - Self.startupReorderWindow))
        guard newFloor > current else { return }
        for sequence in packets.keys where sequence < newFloor { packets.removeValue(forKey: sequence) }
        keyframeStarts = keyframeStarts.filter { $0 >= newFloor }
        missing = missing.filter { $0.key >= newFloor }
        floor = newFloor
    }

    mutating func pruneHistory() {
        guard let floor else { return }
        let cutoff = floor - Self.historyLength
        if history.count > 2 * Int(Self.historyLength) { history = history.filter { $0 >= cutoff } }
        if missing.count > settings.maxSequenceJump {
            missing = missing.filter { $0.key >= floor }
        }
    }

    /// Forgets the stream's position after a sequence jump: waits for a keyframe as at the start.
    mutating func restart() {
        unwrapper = RTPSequenceUnwrapper()
        packets = [:]
        keyframeStarts = []
        missing = [:]
        floor = nil
        highest = nil
        history = []
        stalledSince = nil
        isWaitingForKeyframe = true
        keyframeRequestDue = true
        waitingSince = nil
        probation = nil
        statistics = ReceptionStatistics(clockRate: MediaClockRate.video)
    }
}
