#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension AudioFrame {
    /// Loudness as RMS in dB relative to full scale: 0 for a full-scale square wave, -120 for digital silence.
    public var rmsDBFS: Double {
        guard !samples.isEmpty else { return AudioLevel.silenceDBFS }
        var sum: Double = 0
        for sample in samples {
            let value = Double(sample)
            sum += value * value
        }
        let rms = (sum / Double(samples.count)).squareRoot() / 32768
        guard rms > 0 else { return AudioLevel.silenceDBFS }
        return max(AudioLevel.silenceDBFS, 20 * log10(rms))
    }

    /// Speaking level 0...1 for meters and voice activity: -60 dBFS and below is 0, -10 dBFS and above is 1.
    public var speakingLevel: Double { AudioLevel.normalised(dBFS: rmsDBFS) }
}

/// Voice activity with hangover: speaking starts when a frame is loud enough and stops only after a run of quiet
/// frames, so the "speaking" highlight does not flicker between words.
public struct AudioLevel: Sendable, Equatable {
    /// The floor reported for digital silence.
    public static let silenceDBFS = -120.0

    /// Level above which a frame counts as speech.
    public var thresholdDBFS: Double
    /// How long speech is held after the last loud frame, in microseconds.
    public var hangoverMicros: Int64
    /// Whether the participant is speaking now.
    public private(set) var isSpeaking = false
    /// Smoothed level 0...1: rises at once, falls gradually (like a VU meter).
    public private(set) var level: Double = 0
    /// The last frame's loudness in dBFS.
    public private(set) var lastDBFS = AudioLevel.silenceDBFS
    private var quietMicros: Int64 = 0

    /// A detector; -45 dBFS and 400 ms suit a headset microphone.
    public init(thresholdDBFS: Double = -45, hangoverMicros: Int64 = 400_000) {
        self.thresholdDBFS = thresholdDBFS
        self.hangoverMicros = hangoverMicros
    }

    /// Feeds one frame; returns whether the participant counts as speaking after it.
    @discardableResult
    public mutating func update(with frame: AudioFrame) -> Bool {
        let dBFS = frame.rmsDBFS
        lastDBFS = dBFS
        level = max(Self.normalised(dBFS: dBFS), level * 0.85)
        if dBFS >= thresholdDBFS {
            isSpeaking = true
            quietMicros = 0
        } else {
            quietMicros += frame.durationMicros
            if quietMicros >= hangoverMicros { isSpeaking = false }
        }
        return isSpeaking
    }

    /// Maps dBFS to 0...1 linearly between -60 and -10 dBFS.
    public static func normalised(dBFS: Double) -> Double {
        min(1, max(0, (dBFS + 60) / 50))
    }
}
