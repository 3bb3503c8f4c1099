import Dispatch
import Foundation
import Synchronization

/// Keeps a device loop from running ahead of the wall clock. A paced device (a sound card, PulseAudio) blocks in
/// read/write and never waits here; an unpaced one (ALSA's `file` plugin returns at once) is held to real time after a
/// short burst. A token bucket: block n may go no earlier than the previous allowance plus a block length shortened by
/// `tolerance`, and never more than `burst` before now, so a stall followed by a flood releases at most one burst.
struct AudioPacer {
    /// Faster-than-real-time a device may run without being held back: 0.5 %, far above real clock drift (~200 ppm).
    static let tolerance = 0.005
    /// How far ahead of the wall clock a device may get at once.
    static let burstNanos: UInt64 = 100_000_000

    private let blockNanos: Int64
    /// Signed, so the start (`now - burst`) cannot wrap on a clock that starts near zero.
    private var allowed: Int64

    init(framesPerBlock: Int, sampleRate: Int, now: UInt64 = AudioPacer.now()) {
        blockNanos = Int64(Double(framesPerBlock) / Double(sampleRate) * (1 - Self.tolerance) * 1e9)
        allowed = Int64(clamping: now) - Int64(Self.burstNanos)
    }

    /// Monotonic nanoseconds.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Called after each block: how long to wait before the next one (0 when the device itself is slow enough).
    mutating func delayAfterBlock(now: UInt64 = AudioPacer.now()) -> UInt64 {
        let now = Int64(clamping: now)
        allowed = max(allowed + blockNanos, now - Int64(Self.burstNanos))
        return allowed > now ? UInt64(allowed - now) : 0
    }
}

/// The thread a microphone or speaker loop runs on, with the stop/failure rules both share: `stop()` waits (bounded)
/// for the loop to finish and the device to close, never deadlocks when called from the loop's own callbacks, and a
/// failure is reported at most once and never after `stop()`.
final class AudioDeviceThread: Sendable {
    /// How long `stop()` waits for a loop stuck in a device call before giving up on it.
    static let stopTimeout: DispatchTimeInterval = .seconds(2)

    private enum Phase { case idle, running, stopped }
    private let phase = Mutex(Phase.idle)
    private let stopRequested = Atomic(false)
    private let finished = DispatchSemaphore(value: 0)
    private let loopThread = Mutex<ObjectIdentifier?>(nil)
    private let name: String
    /// How the loop's thread got scheduled (`AudioThreadPriority`), once it started.
    let scheduling = Mutex<AudioThreadScheduling?>(nil)

    init(name: String) { self.name = name }

    /// Whether `stop()` was called; the loop checks it between blocks.
    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Runs `body` on a new thread unless already started or stopped; `body` returns when its loop ends.
    func start(_ body: @escaping @Sendable () -> Void) {
        let starting = phase.withLock { phase -> Bool in
            guard phase == .idle else { return false }
            phase = .running
            return true
        }
        guard starting else { return }
        let thread = Thread { [self] in
            loopThread.withLock { $0 = ObjectIdentifier(Thread.current) }
            scheduling.withLock { $0 = AudioThreadPriority.raiseCurrentThread() }
            body()
            finished.signal()
        }
        thread.name = name
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Ends the loop; returns once it finished (or after `stopTimeout` if the device hangs). `wasIdle` runs when the
    /// loop never started, to release the device that it would have closed.
    func stop(wasIdle: () -> Void) {
        stopRequested.store(true, ordering: .releasing)
        let previous = phase.withLock { phase -> Phase in
            defer { phase = .stopped }
            return phase
        }
        switch previous {
        case .idle:
            wasIdle()
        case .running:
            let onLoop = loopThread.withLock { $0 == ObjectIdentifier(Thread.current) }
            if !onLoop, finished.wait(timeout: .now() + Self.stopTimeout) == .success { finished.signal() }
        case .stopped:
            break
        }
    }
}

/// Sleeps for `nanoseconds`.
func audioSleep(nanoseconds: UInt64) {
    guard nanoseconds > 0 else { return }
    var time = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&time, &remaining) != 0 && errno == EINTR { time = remaining }
}

/// An open stream whose counters another thread reads (a call's statistics): the layers keep those counters in
/// atomics or read them under their own lock, so reading them beside the device thread is safe.
struct UncheckedDevice<Stream>: @unchecked Sendable {
    let stream: Stream
    init(_ stream: Stream) { self.stream = stream }
}
