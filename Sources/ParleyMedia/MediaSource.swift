/// Something that produces pictures: a camera, a file, a test pattern. Owned by one actor; calls never block.
public protocol VideoSource: AnyObject {
    /// Width of the frames produced.
    var width: Int { get }
    /// Height of the frames produced.
    var height: Int { get }
    /// Media time between frames in microseconds (33 333 at 30 frames/s).
    var frameIntervalMicros: Int64 { get }
    /// The next frame, stamped with its media time (frame index times the interval). Sources loop; they do not end.
    func nextFrame() throws -> VideoFrame
}

/// Something that consumes pictures: a file writer, a renderer.
public protocol VideoSink: AnyObject {
    /// Takes one frame; throws when the frame cannot be written (the message says why).
    func write(_ frame: VideoFrame) throws
}

/// Something that produces sound: a microphone, a file, a synthetic voice. Owned by one actor; calls never block.
public protocol AudioSource: AnyObject {
    /// Samples per second per channel.
    var sampleRate: Int { get }
    /// 1 or 2.
    var channels: Int { get }
    /// The next block of `samplesPerChannel` samples, stamped with its media time. Sources loop; they do not end.
    func nextFrame(samplesPerChannel: Int) throws -> AudioFrame
}

/// Something that consumes sound: a file writer, a speaker.
public protocol AudioSink: AnyObject {
    /// Takes one block; throws when it cannot be written (the message says why).
    func write(_ frame: AudioFrame) throws
}

/// Paces a media loop against an injected clock: something stamped with media time t is due t after the pacer
/// started. Production passes `ContinuousClock()`, tests a `ManualClock` so they run instantly.
///
/// A value type holding only sendable closures, so an actor can keep one and await it without data races.
public struct MediaPacer: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Starts the media timeline now on `clock`.
    public init<C: Clock>(clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleepUntil = { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
    }

    /// Media time elapsed since the pacer started, in microseconds.
    public var elapsedMicros: Int64 { Self.micros(elapsed()) }

    /// Suspends until media time `timestampMicros` is due (returns at once if it already is). Returns how late the
    /// caller is afterwards, in microseconds; a loop more than a frame late may skip frames to catch up.
    @discardableResult
    public func waitUntilDue(_ timestampMicros: Int64) async throws -> Int64 {
        let due = Duration.microseconds(timestampMicros)
        if elapsed() < due { try await sleepUntil(due) }
        return max(0, elapsedMicros - timestampMicros)
    }

    private static func micros(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }
}
