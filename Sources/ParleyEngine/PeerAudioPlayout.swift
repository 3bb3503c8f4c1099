import ParleyMedia
import ParleyWire

// One peer's receive audio, paced by the output device: the device asks for N samples whenever it needs them
// (`pull`), and the sender's packets arrive on the sender's clock. The two clocks differ by up to a few hundred ppm;
// left alone, the queue between them grows or shrinks by ~12 ms a minute and the jitter buffer corrects it by
// dropping or holding a whole 20 ms packet every few minutes (an audible click each time).
//
// Here the decoded audio goes through a resampler whose ratio (input samples per output sample) is steered by a PI
// controller on the queued audio: jitter-buffer span plus decoded samples not yet played, smoothed over about a
// second, against the jitter buffer's target plus half a frame (the middle of the band in which the jitter buffer
// neither drops nor holds). The ratio stays within ±1000 ppm, which is inaudible (a 1.7-cent pitch change) and
// catches up 20 ms of error in 20 s. The jitter buffer is asked for one slot each time the resampler has used up the
// previous one, so on average at the sender's rate, and its own drop/hold corrections never trigger.
//
// Loop design (continuous time): the queue error e changes as de/dt = drift − u, with u = Kp·e + Ki·∫e. Kp = 0.05/s
// (1000 ppm at 20 ms) and Ki = Kp²/4 make it critically damped with a 40 s time constant; a 200 ppm drift then
// costs at most ~3 ms of transient error and none in steady state. The smoothing (1 s) is much faster than the loop.
// An excess of more than 10 ms (silence written while the receiver was held up, a burst after a sender's stall) is
// outside that loop: it is played away at up to 0.25 % (`catchUpCorrection`), without touching the integral, so a
// hiccup at the start of a call costs seconds of extra delay rather than a minute.

/// One peer's receive audio path: jitter buffer → Opus decoder (FEC, concealment) → drift-compensating resampler,
/// delivering exactly the samples the output device asks for. Used on one thread.
public final class PeerAudioPlayout {
    /// Counters for statistics and tests.
    public struct Counters: Sendable, Equatable {
        /// Packets decoded normally.
        public var decoded = 0
        /// Lost packets rebuilt from the next packet's FEC data.
        public var fecRecovered = 0
        /// Slots filled by packet-loss concealment (losses without FEC, holds, a talkspurt's tail).
        public var concealed = 0
        /// Slots played as silence (buffering, idle between talkspurts).
        public var silentSlots = 0
        /// Packets the jitter buffer dropped to bring its delay down (or because it was full).
        public var discarded = 0
        /// Slots the jitter buffer held to let itself refill.
        public var held = 0
        /// Packets that arrived after their slot was played.
        public var late = 0
        /// Packets that arrived after the play head passed them with nothing buffered, and played after the slots
        /// concealed meanwhile.
        public var lateKept = 0
        /// Packets libopus rejected (concealed instead).
        public var decodeErrors = 0
    }

    /// Output sample rate (mono).
    public static let sampleRate = 48_000
    /// Furthest the resampling ratio moves from 1 to absorb clock drift.
    public static let maximumCorrection = 1000e-6
    /// speexdsp resampler quality used unless told otherwise. Quality 1 keeps a resampled tone 76 dB above its error
    /// (far below what Opus at 32 kbit/s leaves) at a third to a half of quality 3's CPU: 0.1 % of a core per peer (`parley-bench
    /// echo`).
    public static let defaultResamplerQuality = 1
    /// The jitter buffer settings of a call. Drift is corrected by resampling; a burst of packets (a sender's thread
    /// held up for a moment) must not cost a 20 ms skip, so only an excess of 160 ms over the target is cut. The
    /// target starts at 40 ms and may fall to 20 ms on a clean path (one packet in hand: the speaker asks for audio
    /// every 20 ms at its own phase) two seconds into a clean call, and to 20 ms only while arrivals spread by less
    /// than that; each late packet raises it by a frame, up to 200 ms.
    public static let callSettings: AudioJitterBuffer.Settings = {
        var settings = AudioJitterBuffer.Settings(
            targetDelay: .milliseconds(40), minimumDelay: .milliseconds(20), dropAboveFrames: 8)
        settings.firstAdaptationWindow = .seconds(2)
        return settings
    }()
    /// Largest pull served in one call: one second.
    public static let maximumPullFrames = sampleRate
    /// Proportional gain: ratio correction per second of queue error.
    static let proportionalGain = 0.05
    /// Integral gain (critical damping for the proportional gain).
    static let integralGain = proportionalGain * proportionalGain / 4
    /// Queue excess (seconds over the setpoint) above which the play-out catches up fast.
    static let catchUpThreshold = 0.010
    /// Fastest catch-up: 0.25 % (a pitch change of 4 cents while it lasts; 20 ms of excess gone in about 8 s).
    static let catchUpCorrection = 0.0025
    /// Catch-up ratio correction per second of excess.
    static let catchUpGain = 0.25
    /// Time constant of the queue smoothing, in seconds.
    static let smoothingSeconds = 1.0
    /// How often the ratio is recomputed (each change rebuilds speexdsp's filter table), in output samples.
    static let controlInterval = sampleRate / 4

    /// The jitter buffer (for reception statistics and RTCP reports).
    public private(set) var jitterBuffer: AudioJitterBuffer
    /// Counters since creation.
    public var counters: Counters {
        var counters = slotCounters
        counters.fecRecovered = decoder.packetsRecoveredByFEC
        counters.concealed = decoder.packetsConcealed
        counters.discarded = jitterBuffer.packetsDiscarded
        counters.held = jitterBuffer.slotsHeld
        counters.late = jitterBuffer.statistics.late
        counters.lateKept = jitterBuffer.lateKept
        return counters
    }
    /// True when the last pull contained decoded or concealed audio (not only silence).
    public private(set) var lastPullHadAudio = false
    /// The correction applied now: input consumed per output sample minus 1 (e.g. 0.0002 for a sender 200 ppm fast).
    public var correction: Double { resampler.ratio - 1 }

    private let decoder: OpusAudioDecoder
    private let resampler: AudioResampler
    private var slotCounters = Counters()
    private var pending: [Int16] = []
    private var pendingStart = 0
    private var pendingAudio = 0
    private var smoothedQueue: Double?
    private var integral = 0.0
    private var samplesSinceControl = 0

    /// An empty play-out path; throws if libopus or speexdsp cannot be set up.
    public init(
        settings: AudioJitterBuffer.Settings = AudioJitterBuffer.Settings(),
        resamplerQuality: Int = defaultResamplerQuality
    ) throws {
        jitterBuffer = AudioJitterBuffer(settings: settings)
        decoder = try OpusAudioDecoder(sampleRate: Self.sampleRate, channels: 1)
        resampler = try AudioResampler(sampleRate: Self.sampleRate, quality: resamplerQuality)
    }

    /// Takes one received Opus packet of this peer; `now` is its arrival time.
    @discardableResult
    public func insert(_ packet: RTPPacket, at now: Duration) -> PacketArrival {
        jitterBuffer.insert(packet, at: now)
    }

    /// Audio queued ahead of the play-out point: the jitter buffer's span plus decoded samples not yet played,
    /// at the moment of asking (it rises by a packet at each arrival and falls as the device plays).
    public var queuedAudio: Duration {
        let pendingSeconds = Double(pending.count - pendingStart) / Double(Self.sampleRate)
        return jitterBuffer.bufferedDuration + .seconds(pendingSeconds)
    }

    /// How long audio arriving now waits before it is heard: `queuedAudio` averaged over about a second, plus the
    /// resampler's filter delay. With packets on time this is the time from a packet's arrival to the end of its
    /// playout; it is what the drift controller holds steady (zero while nothing is playing).
    public var playoutDelay: Duration {
        guard let smoothedQueue else { return .zero }
        return .seconds(smoothedQueue + Double(resampler.latencySamples) / Double(Self.sampleRate))
    }

    /// Exactly `frames` mono samples at 48 kHz for the device (at most `maximumPullFrames`; larger requests are
    /// capped); `now` is the device's time for this block.
    public func pull(frames: Int, at now: Duration) -> [Int16] {
        let count = min(max(0, frames), Self.maximumPullFrames)
        var output = [Int16](repeating: 0, count: count)
        var written = 0
        var hadAudio = false
        var stalls = 0
        while written < count {
            if pendingStart == pending.count {
                hadAudio = fetchSlot(at: now) || hadAudio
            }
            let result = pending.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { out in
                    resampler.process(
                        UnsafeBufferPointer(rebasing: input[pendingStart...]),
                        into: UnsafeMutableBufferPointer(rebasing: out[written...]))
                }
            }
            pendingStart += result.consumed
            // Audio decoded by an earlier pull and played now counts too: with the resampler slightly slow, a pull
            // now and then needs no new slot at all, and was wrongly reported as silence (a phantom dropout).
            if pendingAudio > 0 && result.consumed > 0 { hadAudio = true }
            pendingAudio = max(0, pendingAudio - result.consumed)
            written += result.written
            if result.consumed == 0 && result.written == 0 {
                // speexdsp made no progress with input in hand; never spin (cannot happen with valid state).
                stalls += 1
                if stalls > 2 { break }
                hadAudio = fetchSlot(at: now) || hadAudio
            }
        }
        if pendingStart > 4 * 960 {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        lastPullHadAudio = hadAudio || pendingAudio > 0
        steer(afterPlaying: count)
        return output
    }

    /// The report block about this stream at `now` for the next receiver report.
    public func makeReportBlock(now: Duration) -> ReportBlock {
        jitterBuffer.makeReportBlock(now: now)
    }

    /// Notes a sender report about this stream (for LSR and DLSR in the next report block).
    public func recordSenderReport(ntpTimestamp: UInt64, arrival: Duration) {
        jitterBuffer.recordSenderReport(ntpTimestamp: ntpTimestamp, arrival: arrival)
    }

    /// Decodes the jitter buffer's next slot into `pending`; true when it was audio rather than silence.
    private func fetchSlot(at now: Duration) -> Bool {
        let wasPlaying = jitterBuffer.isPlaying
        let slot = jitterBuffer.nextSlot(at: now)
        var samples: [Int16]
        switch slot {
        case .packet(let packet):
            do {
                samples = try decoder.decode(packet.payload).samples
                slotCounters.decoded += 1
            } catch {
                slotCounters.decodeErrors += 1
                samples = decoder.decodeMissing(nextPacket: nil).samples
            }
        case .missingNextAvailable(let next):
            samples = decoder.decodeMissing(nextPacket: next.payload).samples
        case .missing:
            samples = decoder.decodeMissing(nextPacket: nil).samples
        case .silence:
            slotCounters.silentSlots += 1
            let slotSamples = Int(
                (jitterBuffer.settings.frameDuration / .seconds(1) * Double(Self.sampleRate)).rounded())
            samples = [Int16](repeating: 0, count: max(1, slotSamples))
        }
        if !wasPlaying && jitterBuffer.isPlaying {
            smoothedQueue = nil  // a new talkspurt: the old average says nothing about the new queue
        }
        pending.append(contentsOf: samples)
        if slot != .silence {
            pendingAudio = pending.count - pendingStart
            return true
        }
        return false
    }

    /// Updates the smoothed queue and, every `controlInterval`, the resampling ratio.
    private func steer(afterPlaying samples: Int) {
        guard jitterBuffer.isPlaying else {
            smoothedQueue = nil  // idle or buffering: nothing to steer; the integral (the clock offset) is kept
            return
        }
        let queue = queuedAudio / .seconds(1)
        let seconds = Double(samples) / Double(Self.sampleRate)
        if let previous = smoothedQueue {
            smoothedQueue = previous + (queue - previous) * min(1, seconds / Self.smoothingSeconds)
        } else {
            smoothedQueue = queue
        }
        samplesSinceControl += samples
        guard samplesSinceControl >= Self.controlInterval, let smoothedQueue else { return }
        let interval = Double(samplesSinceControl) / Double(Self.sampleRate)
        samplesSinceControl = 0
        let setpoint = (jitterBuffer.targetDelay + jitterBuffer.settings.frameDuration / 2) / .seconds(1)
        let error = smoothedQueue - setpoint
        if error > Self.catchUpThreshold {
            // A lasting excess (the receiver was held up while audio kept arriving) is played away quickly, the
            // way NetEq accelerates: up to 0.25 % fast for a few seconds, then the slow loop takes over again.
            let correction = min(Self.catchUpCorrection, Self.catchUpGain * error)
            try? resampler.setRatio(1 + correction)
            return
        }
        let limit = Self.maximumCorrection
        let proportional = Self.proportionalGain * error
        let unclamped = proportional + Self.integralGain * (integral + error * interval)
        // Integrate only while the output is not pinned at a limit (no wind-up during a long catch-up).
        if abs(unclamped) < limit || (unclamped > 0) != (error > 0) {
            integral += error * interval
        }
        let correction = min(limit, max(-limit, proportional + Self.integralGain * integral))
        try? resampler.setRatio(1 + correction)  // always within AudioResampler's ±10 %
    }
}
