// The receive side of one Opus stream. The audio device pulls one play-out slot at a time (every 20 ms) and the
// buffer answers with the packet for that slot, or says it is missing and whether the following packet is already
// here (Opus in-band FEC can rebuild the lost one from it), or that there is nothing to play.
//
// Play-out is timed by RTP timestamps, not sequence numbers, so DTX pauses stay pauses. Playing starts when the
// first packet has waited `targetDelay`; after `idleAfter` of nothing the buffer goes quiet and the next talkspurt
// starts afresh, which also absorbs clock drift between sender and receiver. Packets that piled up before playing
// began (more than two frames beyond the target) are skipped down to the newest that has waited the target. While playing, the buffered span is
// kept near the target: a slot is held when the buffer runs two frames short, a packet is dropped when it runs
// three frames long. In adaptive mode, each late packet raises the target by one frame (up to the maximum) and a
// quiet `adaptationWindow` lowers it by one (down to the minimum), unless the packets of that window arrived spread
// by more than the lowered target: they would have come late with it.
//
// A slot asked for while nothing is buffered is concealed and the play head moves on, so a packet lost for good costs
// one slot. But when the packet was only not here yet (the device asked for a slot ahead of the arrivals: a sound
// server refilling its buffer after an underrun asks for two blocks at once) it arrives behind the play head, and so
// does every packet after it: each would be refused as late until the buffer went idle and started afresh, 100 ms of
// concealment and a target five frames higher (the sound call test's failures, one in three runs). So a packet newer
// than everything played that arrives while nothing is buffered moves the play head back to itself: the slots
// concealed meanwhile were an insertion, and it plays next.

/// One Opus packet ready for the decoder.
public struct AudioPacket: Sendable, Equatable {
    /// RTP timestamp (48 kHz).
    public var timestamp: UInt32
    /// RTP sequence number.
    public var sequenceNumber: UInt16
    /// The Opus packet.
    public var payload: [UInt8]
    /// Marker bit: first packet of a talkspurt.
    public var marker: Bool

    /// A packet record.
    public init(timestamp: UInt32, sequenceNumber: UInt16, payload: [UInt8], marker: Bool = false) {
        self.timestamp = timestamp
        self.sequenceNumber = sequenceNumber
        self.payload = payload
        self.marker = marker
    }
}

/// What to play in one slot.
public enum AudioPlayout: Sendable, Equatable {
    /// Decode this packet.
    case packet(AudioPacket)
    /// This slot's packet is lost but the next one is here: decode `next` with FEC to rebuild this slot
    /// (`next` is still played normally in the next slot).
    case missingNextAvailable(next: AudioPacket)
    /// This slot's packet is lost: run packet-loss concealment.
    case missing
    /// Nothing to play (buffering or idle): output silence without decoding.
    case silence
}

/// Orders one Opus stream's packets by timestamp and hands them out one play-out slot at a time.
public struct AudioJitterBuffer: Sendable {
    /// Delays and limits.
    public struct Settings: Sendable, Equatable {
        /// Length of one play-out slot and of Parley's Opus packets.
        public var frameDuration: Duration
        /// Delay between a talkspurt's first packet arriving and it being played (initial value when adaptive).
        public var targetDelay: Duration
        /// Adapt the target to late packets between `minimumDelay` and `maximumDelay`.
        public var adaptive: Bool
        /// Lowest adaptive target.
        public var minimumDelay: Duration
        /// Highest adaptive target.
        public var maximumDelay: Duration
        /// Time without a late packet after which the adaptive target drops by one frame (if the arrivals of that
        /// time spread less than the lowered target).
        public var adaptationWindow: Duration
        /// The quiet time before the first lowering (nil: `adaptationWindow`): a call whose first seconds went
        /// cleanly can settle at its low target soon after it starts.
        public var firstAdaptationWindow: Duration?
        /// Time with nothing to play after which the buffer goes quiet and waits for the next talkspurt.
        public var idleAfter: Duration
        /// Packets held at most; beyond it the oldest are dropped.
        public var maxBufferedPackets: Int
        /// Frames above the target at which a packet is dropped to bring the delay down (3: a burst of a few
        /// frames already costs a 20 ms skip). A receiver that corrects drift by resampling sets more, so bursts
        /// pass untouched and only a lasting excess is cut.
        public var dropAboveFrames: Int

        /// Settings: 20 ms frames, 60 ms target adapting between 40 and 200 ms.
        public init(
            frameDuration: Duration = .milliseconds(20), targetDelay: Duration = .milliseconds(60),
            adaptive: Bool = true, minimumDelay: Duration = .milliseconds(40),
            maximumDelay: Duration = .milliseconds(200), adaptationWindow: Duration = .seconds(10),
            idleAfter: Duration = .milliseconds(100), maxBufferedPackets: Int = 100, dropAboveFrames: Int = 3
        ) {
            self.frameDuration = frameDuration
            self.targetDelay = targetDelay
            self.adaptive = adaptive
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.adaptationWindow = adaptationWindow
            self.idleAfter = idleAfter
            self.maxBufferedPackets = maxBufferedPackets
            self.dropAboveFrames = max(1, dropAboveFrames)
        }
    }

    struct Stored: Sendable {
        var packet: AudioPacket
        var arrival: Duration
        var duration: Int64
    }

    /// The settings in force.
    public let settings: Settings
    /// Counters and jitter for the stream (RTP clock 48 kHz).
    public private(set) var statistics = ReceptionStatistics(clockRate: MediaClockRate.opus)
    /// The current target delay.
    public private(set) var targetDelay: Duration
    /// Slots held to let the buffer refill (stretching play-out by one frame each).
    public private(set) var slotsHeld = 0
    /// Packets dropped to bring the delay back down (or because the buffer was full).
    public private(set) var packetsDiscarded = 0
    /// Packets that came after the play head had passed them with nothing buffered, and were played: the slots
    /// concealed before them were an insertion (each also raises the adaptive target a frame, as a late one does).
    public private(set) var lateKept = 0

    var sequenceUnwrapper = RTPSequenceUnwrapper()
    var timestampUnwrapper = RTPTimestampUnwrapper()
    var seen: Set<Int64> = []
    var packets: [Int64: Stored] = [:]
    /// Extended timestamp of the next slot while playing; nil while buffering or idle.
    var playHead: Int64?
    var emptySince: Duration?
    var lastLate: Duration?
    var lastAdaptation: Duration?
    /// Whether the target was lowered once (after which every lowering waits `adaptationWindow`).
    var adaptedDown = false
    var lastArrival: Duration?
    var consecutiveHolds = 0
    /// Extended timestamp just past the last packet played (nil before the first).
    var playedThrough: Int64?
    /// Each recent packet's arrival and its delay relative to its media time (arrival minus timestamp), oldest
    /// first, for `adaptationWindow` and at most `maxDelaySamples`: how far apart arrivals spread decides whether the
    /// target may come down.
    var recentDelays: [(arrival: Duration, delay: Duration)] = []
    var recentDelaysStart = 0

    /// Packets whose relative delay is kept (ten seconds of 20 ms packets, with room for shorter ones).
    static let maxDelaySamples = 1024

    /// A sequence number this far from the stream's means the sender restarted.
    static let restartDistance: Int64 = 3000
    /// A timestamp this far (1 s) behind the play head means the sender restarted.
    static let restartTicks: Int64 = 48_000

    var frameTicks: Int64 { RTPClock.ticks(settings.frameDuration, clockRate: MediaClockRate.opus) }

    /// An empty buffer.
    public init(settings: Settings = Settings()) {
        self.settings = settings
        targetDelay = settings.targetDelay
    }

    /// True while slots are being played (not buffering or idle).
    public var isPlaying: Bool { playHead != nil }

    /// Packets currently held.
    public var bufferedPacketCount: Int { packets.count }

    /// The span of audio held ahead of the play head (gaps included), as a duration.
    public var bufferedDuration: Duration {
        guard let first = playHead ?? packets.keys.min(), let last = packets.keys.max(),
            let duration = packets[last]?.duration
        else { return .zero }
        return RTPClock.duration(ticks: max(0, last + duration - first), clockRate: MediaClockRate.opus)
    }

    /// Takes one received packet of this stream; `now` is its arrival time.
    public mutating func insert(_ packet: RTPPacket, at now: Duration) -> PacketArrival {
        let info: OpusPacketInfo
        do {
            info = try OpusPacketInfo(parsing: packet.payload)
        } catch {
            statistics.recordMalformed()
            return .malformed(error)
        }
        let farSequence = sequenceUnwrapper.highest.map {
            abs(sequenceUnwrapper.peek(packet.header.sequenceNumber) - $0) > Self.restartDistance
        }
        let farBehind = playHead.map { $0 - timestampUnwrapper.peek(packet.header.timestamp) > Self.restartTicks }
        if farSequence == true || farBehind == true {
            restart()  // the sender restarted its stream with new random counters
        }
        let sequence = sequenceUnwrapper.unwrap(packet.header.sequenceNumber)
        guard !seen.contains(sequence) else {
            statistics.recordDuplicate()
            return .duplicate
        }
        seen.insert(sequence)
        if seen.count > 4 * settings.maxBufferedPackets, let highest = sequenceUnwrapper.highest {
            seen = seen.filter { $0 > highest - Int64(2 * settings.maxBufferedPackets) }
        }
        let wasMissing = statistics.highestSequenceNumber.map { sequence < $0 } ?? false
        statistics.record(
            ssrc: packet.header.ssrc, extendedSequenceNumber: sequence, timestamp: packet.header.timestamp,
            arrival: now)
        lastArrival = now
        let timestamp = timestampUnwrapper.unwrap(packet.header.timestamp)
        noteDelay(arrival: now, timestamp: timestamp)
        if let head = playHead, timestamp < head {
            lateArrived(at: now)
            guard packets.isEmpty, timestamp >= playedThrough ?? timestamp,
                head - timestamp <= RTPClock.ticks(settings.idleAfter, clockRate: MediaClockRate.opus)
            else {
                statistics.recordLate()
                return .late
            }
            // Nothing buffered and nothing newer played: the play head only ran ahead of the arrivals.
            playHead = timestamp
            emptySince = nil
            lateKept += 1
        }
        let audio = AudioPacket(
            timestamp: packet.header.timestamp, sequenceNumber: packet.header.sequenceNumber,
            payload: packet.payload, marker: packet.header.marker)
        packets[timestamp] = Stored(packet: audio, arrival: now, duration: Int64(info.duration))
        if packets.count > settings.maxBufferedPackets, let oldest = packets.keys.min() {
            packets.removeValue(forKey: oldest)
            packetsDiscarded += 1
        }
        if wasMissing {
            statistics.recordRecovered()
            return .recovered
        }
        return .accepted
    }

    /// The next play-out slot at `now`; call once per `frameDuration` from the audio clock.
    public mutating func nextSlot(at now: Duration) -> AudioPlayout {
        adaptTarget(now: now)
        if let head = playHead, let first = packets.keys.min(),
            first - head > RTPClock.ticks(settings.idleAfter, clockRate: MediaClockRate.opus)
        {
            playHead = nil  // the next packet is far ahead (a pause or a timestamp jump): start afresh
        }
        if playHead == nil {
            guard let first = packets.keys.min(), let stored = packets[first],
                now - stored.arrival >= targetDelay
            else { return .silence }
            playHead = first
            // Packets that piled up while nobody asked (the receiver was held up before playing) would stay a
            // standing excess for the whole talkspurt: beyond two frames of slack, start from the newest packet that
            // has waited the target and drop the older ones.
            if now - stored.arrival > targetDelay + settings.frameDuration * 2,
                let newest = packets.filter({ now - $0.value.arrival >= targetDelay }).keys.max(), newest > first
            {
                for key in packets.keys where key < newest {
                    packets.removeValue(forKey: key)
                    packetsDiscarded += 1
                }
                playHead = newest
            }
            emptySince = nil
            consecutiveHolds = 0
        }
        guard var head = playHead else { return .silence }
        if let first = packets.keys.min(), first < head {
            for key in packets.keys where key < head { packets.removeValue(forKey: key) }
        }

        // Keep the buffered span near the target: drop when `dropAboveFrames` long, hold when two frames short while
        // packets are still flowing (at a talkspurt's end the span shrinks to nothing, and that is fine).
        let target = RTPClock.ticks(targetDelay, clockRate: MediaClockRate.opus)
        if let last = packets.keys.max(), let lastDuration = packets[last]?.duration {
            let span = last + lastDuration - head
            let flowing = lastArrival.map { now - $0 < settings.frameDuration * 2 } ?? false
            if span >= target + Int64(settings.dropAboveFrames) * frameTicks,
                let stored = packets.removeValue(forKey: head)
            {
                packetsDiscarded += 1
                head += stored.duration
            } else if span <= target - 2 * frameTicks, packets[head] != nil, flowing, consecutiveHolds < 2 {
                consecutiveHolds += 1
                slotsHeld += 1
                return .missing
            }
        }
        consecutiveHolds = 0

        if let stored = packets.removeValue(forKey: head) {
            playHead = head + stored.duration
            playedThrough = head + stored.duration
            emptySince = nil
            return .packet(stored.packet)
        }
        playHead = head + frameTicks
        if packets.isEmpty {
            let since = emptySince ?? now
            emptySince = since
            if now - since >= settings.idleAfter {
                playHead = nil
                emptySince = nil
                return .silence
            }
            return .missing
        }
        emptySince = nil
        if let next = packets[head + frameTicks] { return .missingNextAvailable(next: next.packet) }
        return .missing
    }

    /// The report block about this stream at `now` for the next receiver report; starts a new loss interval.
    public mutating func makeReportBlock(now: Duration) -> ReportBlock {
        statistics.makeReportBlock(now: now)
    }

    /// Notes a sender report about this stream, for the LSR and DLSR fields of the next report block.
    public mutating func recordSenderReport(ntpTimestamp: UInt64, arrival: Duration) {
        statistics.recordSenderReport(ntpTimestamp: ntpTimestamp, arrival: arrival)
    }

    /// Starts over after the sender restarted its counters; statistics restart too (RFC 3550 §A.1).
    mutating func restart() {
        sequenceUnwrapper = RTPSequenceUnwrapper()
        timestampUnwrapper = RTPTimestampUnwrapper()
        seen = []
        packets = [:]
        recentDelays = []
        recentDelaysStart = 0
        playHead = nil
        playedThrough = nil
        emptySince = nil
        statistics = ReceptionStatistics(clockRate: MediaClockRate.opus)
    }

    mutating func lateArrived(at now: Duration) {
        lastLate = now
        guard settings.adaptive else { return }
        targetDelay = min(settings.maximumDelay, targetDelay + settings.frameDuration)
        lastAdaptation = now
    }

    mutating func adaptTarget(now: Duration) {
        guard settings.adaptive else { return }
        let since = lastAdaptation ?? now
        lastAdaptation = since
        let window =
            adaptedDown ? settings.adaptationWindow : settings.firstAdaptationWindow ?? settings.adaptationWindow
        if now - since >= window {
            adaptedDown = true
            let lowered = max(settings.minimumDelay, targetDelay - settings.frameDuration)
            // A quiet window is not enough: packets that arrived spread by more than the lowered target (less a
            // quarter frame of margin) would have been late with it. On a busy machine arrivals spread by 20-30 ms
            // without any one coming late at 40 ms, and each lowering to 20 ms cost a concealed frame some seconds
            // later (the sound test beside a build: 4 concealed in 30 s). NetEq sizes its target from the spread of
            // relative arrival delays the same way.
            if arrivalSpread(now: now) + settings.frameDuration / 4 <= lowered { targetDelay = lowered }
            lastAdaptation = now
        }
    }

    /// Keeps `arrival` minus the media time of `timestamp`, dropping what is older than `adaptationWindow`.
    mutating func noteDelay(arrival: Duration, timestamp: Int64) {
        recentDelays.append((arrival, arrival - RTPClock.duration(ticks: timestamp, clockRate: MediaClockRate.opus)))
        while recentDelaysStart < recentDelays.count,
            arrival - recentDelays[recentDelaysStart].arrival > settings.adaptationWindow
                || recentDelays.count - recentDelaysStart > Self.maxDelaySamples
        {
            recentDelaysStart += 1
        }
        if recentDelaysStart >= Self.maxDelaySamples {
            recentDelays.removeFirst(recentDelaysStart)
            recentDelaysStart = 0
        }
    }

    /// How far the relative delays of the packets of the last `adaptationWindow` spread (latest minus earliest).
    func arrivalSpread(now: Duration) -> Duration {
        var earliest: Duration?
        var latest: Duration?
        for sample in recentDelays[recentDelaysStart...] where now - sample.arrival <= settings.adaptationWindow {
            earliest = min(earliest ?? sample.delay, sample.delay)
            latest = max(latest ?? sample.delay, sample.delay)
        }
        guard let earliest, let latest else { return .zero }
        return latest - earliest
    }
}
