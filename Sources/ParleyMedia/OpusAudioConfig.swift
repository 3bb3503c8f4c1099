import COpus

/// Settings for an Opus encoder; the defaults suit a call: 48 kHz mono, 20 ms, VOIP, 32 kbit/s, FEC for 10 % loss.
public struct OpusAudioConfig: Sendable, Equatable {
    /// What the encoder optimises for.
    public enum Application: Sendable, Equatable, CaseIterable {
        /// Speech intelligibility (SILK-leaning, allows FEC at modest rates).
        case voip
        /// Faithful general audio (music, mixed content).
        case audio
        /// Lowest delay, CELT only (no FEC).
        case lowDelay

        var opusValue: Int32 {
            switch self {
            case .voip: return OPUS_APPLICATION_VOIP
            case .audio: return OPUS_APPLICATION_AUDIO
            case .lowDelay: return OPUS_APPLICATION_RESTRICTED_LOWDELAY
            }
        }
    }

    /// Packet durations Parley sends.
    public enum FrameDuration: Int, Sendable, Equatable, CaseIterable {
        case ms10 = 10
        case ms20 = 20
        case ms40 = 40
        case ms60 = 60

        /// Samples per channel in one frame at `sampleRate`.
        public func samples(at sampleRate: Int) -> Int { sampleRate / 1000 * rawValue }
    }

    /// Samples per second: 8000, 12000, 16000, 24000 or 48000 (Parley uses 48000).
    public var sampleRate: Int
    /// 1 (mono) or 2 (stereo).
    public var channels: Int
    /// Audio per packet.
    public var frameDuration: FrameDuration
    /// Speech, general audio or lowest delay.
    public var application: Application
    /// Target bitrate in **kilobits** per second (6...510).
    public var bitrateKbps: Int
    /// Encoder effort 0 (fastest) ... 10 (best).
    public var complexity: Int
    /// In-band forward error correction: each packet carries a low-rate copy of the previous one.
    public var inbandFEC: Bool
    /// Loss the encoder plans for (0...100 %); FEC only kicks in above 0.
    public var expectedLossPercent: Int
    /// Discontinuous transmission: during silence the encoder emits tiny packets (1–2 bytes) that need not be sent.
    public var dtx: Bool

    /// Call defaults; override what you need.
    public init(
        sampleRate: Int = 48_000, channels: Int = 1, frameDuration: FrameDuration = .ms20,
        application: Application = .voip, bitrateKbps: Int = 32, complexity: Int = 10, inbandFEC: Bool = true,
        expectedLossPercent: Int = 10, dtx: Bool = false
    ) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.frameDuration = frameDuration
        self.application = application
        self.bitrateKbps = bitrateKbps
        self.complexity = complexity
        self.inbandFEC = inbandFEC
        self.expectedLossPercent = expectedLossPercent
        self.dtx = dtx
    }

    /// Samples per channel in one packet.
    public var samplesPerChannel: Int { frameDuration.samples(at: sampleRate) }

    /// Throws `CodecError.invalidSetting` naming the first setting out of range.
    public func validate() throws {
        guard Self.sampleRates.contains(sampleRate) else {
            throw CodecError.invalidSetting(
                name: "Opus sample rate", value: String(sampleRate), allowed: "8000, 12000, 16000, 24000 or 48000")
        }
        func check(_ name: String, _ value: Int, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw CodecError.invalidSetting(
                    name: name, value: String(value), allowed: "\(range.lowerBound)...\(range.upperBound)")
            }
        }
        try check("Opus channels", channels, 1...2)
        try check("Opus bitrate (kbit/s)", bitrateKbps, 6...510)
        try check("Opus complexity", complexity, 0...10)
        try check("Opus expected loss (%)", expectedLossPercent, 0...100)
    }

    /// Sample rates libopus accepts.
    public static let sampleRates = [8_000, 12_000, 16_000, 24_000, 48_000]
}
