/// A block of 16-bit PCM audio, interleaved when there is more than one channel.
public struct AudioFrame: Sendable, Equatable {
    /// Samples per second per channel (Parley runs at 48 000).
    public let sampleRate: Int
    /// 1 (mono) or 2 (stereo).
    public let channels: Int
    /// Interleaved samples; `samples.count` is a multiple of `channels`.
    public var samples: [Int16]
    /// Presentation time in microseconds since the source started.
    public var timestampMicros: Int64

    /// Samples per channel in this block.
    public var frameCount: Int { samples.count / channels }
    /// Length of this block in microseconds.
    public var durationMicros: Int64 { Int64(frameCount) * 1_000_000 / Int64(sampleRate) }

    /// A block from interleaved samples.
    public init(sampleRate: Int = 48_000, channels: Int = 1, samples: [Int16], timestampMicros: Int64 = 0) {
        precondition(channels == 1 || channels == 2, "channels must be 1 or 2")
        precondition(samples.count % channels == 0, "sample count must be a multiple of the channel count")
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
        self.timestampMicros = timestampMicros
    }
}
