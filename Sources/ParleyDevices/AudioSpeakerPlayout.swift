import Dispatch
import ParleyMedia
import Synchronization

/// The playout FIFO as a plain value: blocks of exactly one device block, bounded, primed before playing.
struct PlayoutQueue: Sendable, Equatable {
    let samplesPerBlock: Int
    let channels: Int
    let prebufferBlocks: Int
    let maxQueuedBlocks: Int
    private(set) var blocks: [[Int16]] = []
    /// Samples of a frame that did not fill a whole block yet.
    private(set) var partial: [Int16] = []
    /// True until `prebufferBlocks` are queued, at the start and again after running dry.
    private(set) var priming = true
    private(set) var underruns = 0
    private(set) var hasPlayed = false
    private(set) var dropped = 0
    /// Whether blocks are asked for one write ahead (after a late one) rather than just in time.
    private(set) var asksAhead = false
    /// When a block last came late, and when the last one was asked for (nil once it came).
    private var lastLate: Duration?
    private var askedAt: Duration?

    /// How long blocks stay asked for one write ahead after one came late: the jitter buffer's hold for a lowered
    /// target, so a machine that was busy once keeps the headroom through the rest of its busy spell.
    static let aheadHold: Duration = .seconds(10)

    init(framesPerBlock: Int, channels: Int, prebufferBlocks: Int, maxQueuedBlocks: Int) {
        samplesPerBlock = framesPerBlock * channels
        self.channels = channels
        self.maxQueuedBlocks = max(1, maxQueuedBlocks)
        self.prebufferBlocks = min(max(0, prebufferBlocks), self.maxQueuedBlocks)
    }

    /// Adds a frame of any length, converting mono/stereo to the device's channels; beyond the bound the oldest
    /// blocks are dropped (and counted).
    mutating func enqueue(_ frame: AudioFrame) {
        askedAt = nil
        partial += Self.convert(frame.samples, from: frame.channels, to: channels)
        var start = 0
        while partial.count - start >= samplesPerBlock {
            blocks.append(Array(partial[start..<(start + samplesPerBlock)]))
            start += samplesPerBlock
        }
        partial.removeFirst(start)
        if blocks.count > maxQueuedBlocks {
            dropped += blocks.count - maxQueuedBlocks
            blocks.removeFirst(blocks.count - maxQueuedBlocks)
        }
    }

    /// The next block to write: queued audio, or silence while priming or when the queue ran dry (each silent block
    /// after playing began counts as an underrun).
    mutating func next() -> [Int16] {
        if priming && blocks.count >= max(1, prebufferBlocks) { priming = false }
        guard !priming, !blocks.isEmpty else {
            if hasPlayed { underruns += 1 }
            if blocks.isEmpty { priming = true }
            return silence
        }
        hasPlayed = true
        return blocks.removeFirst()
    }

    /// The device has room (just-in-time playout) at `now`: whether to ask for a block, which is when none is queued
    /// and none was asked for within the last `block` (a request older than that is taken as lost, and a second
    /// block that comes after all only stays queued until the next write).
    mutating func asksJustInTime(at now: Duration, block: Duration) -> Bool {
        guard blocks.isEmpty, askedAt.map({ now - $0 >= block }) ?? true else { return false }
        askedAt = now
        return true
    }

    /// A block was written at `now`, `late` when it was silence in place of one the owner did not mix in time:
    /// whether to ask for the next block right away. After a late block the next ones are asked for a write ahead,
    /// a block (20 ms) more delay in exchange for a whole block of time to mix, until `aheadHold` passes without
    /// another late one; the extra block then plays away with no gap (the next request waits for room again).
    mutating func wrote(at now: Duration, late: Bool) -> Bool {
        if late {
            asksAhead = true
            lastLate = now
        } else if asksAhead, let lastLate, now - lastLate >= Self.aheadHold {
            asksAhead = false
        }
        guard asksAhead, blocks.isEmpty, askedAt == nil else { return false }
        askedAt = now
        return true
    }

    private var silence: [Int16] { [Int16](repeating: 0, count: samplesPerBlock) }

    static func convert(_ samples: [Int16], from: Int, to: Int) -> [Int16] {
        if from == to { return samples }
        if from == 1 { return samples.flatMap { [$0, $0] } }
        return stride(from: 0, to: samples.count - 1, by: 2).map {
            Int16((Int32(samples[$0]) + Int32(samples[$0 + 1])) / 2)
        }
    }
}

/// Writes blocks to a speaker on its own thread from a bounded FIFO: drops the oldest beyond `maxQueuedBlocks`
/// (counted), writes silence when the queue runs dry (counted) and waits for `prebufferBlocks` again, and calls
/// `onDemand` so the owner can produce the next block: playout is paced by the device's clock. The wall-clock guard
/// and the failure rules are the microphone's. Call `stop()` when done.
///
/// With `justInTime` (a device that says when a block fits, such as PulseAudio's) the block is asked for only once
/// the device has room for it, and waited for up to `justInTime`: audio is mixed as late as possible, so the queue
/// adds no delay of its own, while the device's buffer still covers the wait. A block that does not come in time is
/// a block of silence (counted), and the next ones are asked for a write ahead until ten seconds pass without
/// another (`PlayoutQueue.wrote`): the headroom a busy machine needs, given back when it is idle again. Otherwise the next block is asked for
/// right after each write and waits in the queue (PortAudio's blocking writes give no earlier signal).
public final class SpeakerPlayout: Sendable {
    private let pending: Mutex<(any AudioOutputStream)?>
    private let queue: Mutex<PlayoutQueue>
    private let sampleRate: Int
    private let framesPerBlock: Int
    private let onDemand: @Sendable () -> Void
    private let onFailure: @Sendable (AudioDeviceError) -> Void
    private let thread = AudioDeviceThread(name: "parley-speaker")
    private let written = Atomic(0)
    private let arrivals = DispatchSemaphore(value: 0)
    private let justInTime: Duration?
    /// The device's buffer and its underruns, read once the stream is open.
    private let device: (latency: @Sendable () -> Duration?, problems: @Sendable () -> Int)

    /// A playout into an open stream of `channels` channels; nothing is written before `start()`.
    public init(
        stream: sending any AudioOutputStream, sampleRate: Int, channels: Int = 1, framesPerBlock: Int,
        prebufferBlocks: Int = 3, maxQueuedBlocks: Int = 25, justInTime: Duration? = nil,
        onDemand: @escaping @Sendable () -> Void = {},
        onFailure: @escaping @Sendable (AudioDeviceError) -> Void
    ) {
        let counters = UncheckedDevice(stream)
        device = ({ counters.stream.latency }, { counters.stream.deviceProblems })
        pending = Mutex(stream)
        self.justInTime = justInTime
        queue = Mutex(
            PlayoutQueue(
                framesPerBlock: framesPerBlock, channels: channels, prebufferBlocks: prebufferBlocks,
                maxQueuedBlocks: maxQueuedBlocks))
        self.sampleRate = sampleRate
        self.framesPerBlock = framesPerBlock
        self.onDemand = onDemand
        self.onFailure = onFailure
    }

    /// Queues audio to play (any length; cut into device blocks).
    public func enqueue(_ frame: AudioFrame) {
        queue.withLock { $0.enqueue(frame) }
        arrivals.signal()
    }

    /// The device's whole play-out buffer, when its layer can tell.
    public var deviceLatency: Duration? { device.latency() }
    /// How the speaker's thread is scheduled (`AudioThreadPriority`), once it started.
    public var threadScheduling: AudioThreadScheduling? { thread.scheduling.withLock { $0 } }
    /// Times the device itself ran dry (the sound server's underruns) after the first audio played, when its layer
    /// can tell: before that there is nothing to interrupt.
    public var deviceUnderruns: Int {
        guard let baseline = underrunsBeforeAudio.withLock({ $0 }) else { return 0 }
        return device.problems() - baseline
    }
    private let underrunsBeforeAudio = Mutex<Int?>(nil)

    /// Blocks of silence written because the queue ran dry after playing began.
    public var underruns: Int { queue.withLock { $0.underruns } }
    /// Blocks dropped because the queue was full.
    public var dropped: Int { queue.withLock { $0.dropped } }
    /// Whole blocks waiting to be played.
    public var queuedBlocks: Int { queue.withLock { $0.blocks.count } }
    /// Blocks written to the device so far (audio and silence).
    public var blocksWritten: Int { written.load(ordering: .relaxed) }

    /// Starts writing; a second call does nothing.
    public func start() {
        thread.start { [self] in run() }
    }

    /// Stops, lets the device play what it holds, and closes it; returns when closed (bounded like the capture's).
    public func stop() {
        thread.stop { pending.withLock { $0.take() }?.close() }
    }

    private func run() {
        guard let stream = pending.withLock({ $0.take() }) else { return }
        defer { stream.close() }
        var pacer = AudioPacer(framesPerBlock: framesPerBlock, sampleRate: sampleRate)
        let blockDuration = Duration.nanoseconds(Int64(framesPerBlock) * 1_000_000_000 / Int64(sampleRate))
        func now() -> Duration { .nanoseconds(Int64(clamping: AudioPacer.now())) }
        while !thread.isStopping {
            let late: Bool
            do {
                if let justInTime {
                    try stream.waitUntilWritable()
                    while arrivals.wait(timeout: .now()) == .success {}
                    if queue.withLock({ $0.asksJustInTime(at: now(), block: blockDuration) }) { onDemand() }
                    if queue.withLock({ $0.blocks.isEmpty }) {
                        let nanoseconds =
                            Int(justInTime.components.attoseconds / 1_000_000_000)
                            + Int(justInTime.components.seconds) * 1_000_000_000
                        _ = arrivals.wait(timeout: .now() + .nanoseconds(nanoseconds))
                    }
                }
                let (block, playing, underran) = queue.withLock { queue in
                    let before = queue.underruns
                    return (queue.next(), queue.hasPlayed, queue.underruns > before)
                }
                late = underran
                if playing, underrunsBeforeAudio.withLock({ $0 }) == nil {
                    let before = stream.deviceProblems
                    underrunsBeforeAudio.withLock { $0 = before }
                }
                try stream.write(block)
            } catch {
                if !thread.isStopping { onFailure(error) }
                return
            }
            written.add(1, ordering: .relaxed)
            if justInTime == nil {
                onDemand()
            } else if queue.withLock({ $0.wrote(at: now(), late: late) }) {
                onDemand()
            }
            audioSleep(nanoseconds: pacer.delayAfterBlock())
        }
    }
}
