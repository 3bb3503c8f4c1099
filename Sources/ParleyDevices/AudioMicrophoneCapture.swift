import ParleyMedia
import Synchronization

/// Reads blocks from a microphone on its own thread and hands each to `onBlock` (on that thread). Paced by the device,
/// but never faster than real time plus a small burst against the wall clock (`AudioPacer`), so an unpaced device
/// such as ALSA's `file` plugin cannot flood the call. A read error stops the thread, closes the device and calls
/// `onFailure` once (not after `stop()`). Call `stop()` when done: the running thread keeps the capture alive.
public final class MicrophoneCapture: Sendable {
    private let pending: Mutex<(any AudioInputStream)?>
    private let sampleRate: Int
    private let framesPerBlock: Int
    private let onBlock: @Sendable (AudioFrame) -> Void
    private let onFailure: @Sendable (AudioDeviceError) -> Void
    private let thread = AudioDeviceThread(name: "parley-microphone")
    private let blocks = Atomic(0)
    private let overruns: @Sendable () -> Int

    /// A capture from an open stream; nothing is read before `start()`.
    public init(
        stream: sending any AudioInputStream, sampleRate: Int, framesPerBlock: Int,
        onBlock: @escaping @Sendable (AudioFrame) -> Void,
        onFailure: @escaping @Sendable (AudioDeviceError) -> Void
    ) {
        let counters = UncheckedDevice(stream)
        overruns = { counters.stream.deviceProblems }
        pending = Mutex(stream)
        self.sampleRate = sampleRate
        self.framesPerBlock = framesPerBlock
        self.onBlock = onBlock
        self.onFailure = onFailure
    }

    /// Times the device dropped audio because it was not read in time (the sound server's overruns), when its layer
    /// can tell.
    public var deviceOverruns: Int { overruns() }
    /// How the microphone's thread is scheduled (`AudioThreadPriority`), once it started.
    public var threadScheduling: AudioThreadScheduling? { thread.scheduling.withLock { $0 } }

    /// Blocks delivered so far.
    public var blocksDelivered: Int { blocks.load(ordering: .relaxed) }

    /// Starts reading; a second call does nothing.
    public func start() {
        thread.start { [self] in run() }
    }

    /// Stops reading and closes the device; returns when it is closed (at most about two seconds for a hung device).
    public func stop() {
        thread.stop { pending.withLock { $0.take() }?.close() }
    }

    private func run() {
        guard let stream = pending.withLock({ $0.take() }) else { return }
        defer { stream.close() }
        var pacer = AudioPacer(framesPerBlock: framesPerBlock, sampleRate: sampleRate)
        var framesRead: Int64 = 0
        while !thread.isStopping {
            let samples: [Int16]
            do throws(AudioDeviceError) {
                samples = try stream.read()
                guard samples.count > 0, samples.count % framesPerBlock == 0,
                    (1...2).contains(samples.count / framesPerBlock)
                else {
                    throw .failed(
                        name: stream.deviceName, call: "read",
                        message: "block of \(samples.count) samples is not \(framesPerBlock) frames of 1 or 2 channels")
                }
            } catch {
                if !thread.isStopping { onFailure(error) }
                return
            }
            let channels = samples.count / framesPerBlock
            let timestamp = framesRead * 1_000_000 / Int64(sampleRate)
            framesRead += Int64(framesPerBlock)
            onBlock(
                AudioFrame(sampleRate: sampleRate, channels: channels, samples: samples, timestampMicros: timestamp))
            blocks.add(1, ordering: .relaxed)
            audioSleep(nanoseconds: pacer.delayAfterBlock())
        }
    }
}
