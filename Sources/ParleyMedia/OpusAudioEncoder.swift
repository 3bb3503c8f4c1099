import COpus
import COpusShim

/// A libopus encoder: one `AudioFrame` of the configured duration in, one packet out. One owner calls it.
public final class OpusAudioEncoder {
    /// The settings in force.
    public private(set) var config: OpusAudioConfig
    /// Samples per channel the encoder looks ahead: output lags input by this much (312 at 48 kHz for VOIP).
    public let lookaheadSamples: Int

    private let encoder: OpaquePointer
    // Largest packet libopus recommends room for (RFC 6716 allows 1275 bytes per frame, 3 frames per 60 ms).
    private static let maxPacketBytes = 4000
    private var packetBuffer = [UInt8](repeating: 0, count: maxPacketBytes)

    /// Creates and configures the encoder; throws `CodecError` naming the setting or libopus call that failed.
    public init(_ config: OpusAudioConfig = OpusAudioConfig()) throws {
        try config.validate()
        self.config = config
        var status: Int32 = OPUS_OK
        guard
            let encoder = opus_encoder_create(
                opus_int32(config.sampleRate), Int32(config.channels), config.application.opusValue, &status),
            status == OPUS_OK
        else { throw CodecError.opus("opus_encoder_create", status) }
        self.encoder = encoder
        do {
            try Self.set(encoder, OPUS_SET_BITRATE_REQUEST, "OPUS_SET_BITRATE", config.bitrateKbps * 1000)
            try Self.set(encoder, OPUS_SET_COMPLEXITY_REQUEST, "OPUS_SET_COMPLEXITY", config.complexity)
            try Self.set(encoder, OPUS_SET_INBAND_FEC_REQUEST, "OPUS_SET_INBAND_FEC", config.inbandFEC ? 1 : 0)
            try Self.set(
                encoder, OPUS_SET_PACKET_LOSS_PERC_REQUEST, "OPUS_SET_PACKET_LOSS_PERC", config.expectedLossPercent)
            try Self.set(encoder, OPUS_SET_DTX_REQUEST, "OPUS_SET_DTX", config.dtx ? 1 : 0)
            var lookahead: opus_int32 = 0
            let got = parley_opus_encoder_get_int(encoder, OPUS_GET_LOOKAHEAD_REQUEST, &lookahead)
            guard got == OPUS_OK else { throw CodecError.opus("OPUS_GET_LOOKAHEAD", got) }
            lookaheadSamples = Int(lookahead)
        } catch {
            opus_encoder_destroy(encoder)
            throw error
        }
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes exactly one frame of `config.frameDuration`; a packet of 1–2 bytes is DTX silence (need not be sent).
    public func encode(_ frame: AudioFrame) throws -> [UInt8] {
        guard frame.sampleRate == config.sampleRate, frame.channels == config.channels,
            frame.frameCount == config.samplesPerChannel
        else {
            throw CodecError.frameMismatch(
                "Opus encoder expects \(config.samplesPerChannel) samples per channel "
                    + "(\(config.frameDuration.rawValue) ms) at \(config.sampleRate) Hz, "
                    + "\(config.channels) channel(s); "
                    + "got \(frame.frameCount) at \(frame.sampleRate) Hz, \(frame.channels) channel(s)")
        }
        let encoder = self.encoder
        let count = frame.samples.withUnsafeBufferPointer { pcm in
            packetBuffer.withUnsafeMutableBufferPointer { out in
                opus_encode(encoder, pcm.baseAddress!, Int32(frame.frameCount), out.baseAddress!, Int32(out.count))
            }
        }
        guard count >= 0 else { throw CodecError.opus("opus_encode", count) }
        return Array(packetBuffer[0..<Int(count)])
    }

    /// Changes the target bitrate (kbit/s) from the next packet on.
    public func setBitrate(kbps: Int) throws {
        var next = config
        next.bitrateKbps = kbps
        try next.validate()
        try Self.set(encoder, OPUS_SET_BITRATE_REQUEST, "OPUS_SET_BITRATE", kbps * 1000)
        config = next
    }

    /// Changes the loss the encoder plans FEC for (0...100 %), e.g. from receiver reports.
    public func setExpectedLoss(percent: Int) throws {
        var next = config
        next.expectedLossPercent = percent
        try next.validate()
        try Self.set(encoder, OPUS_SET_PACKET_LOSS_PERC_REQUEST, "OPUS_SET_PACKET_LOSS_PERC", percent)
        config = next
    }

    private static func set(_ encoder: OpaquePointer, _ request: Int32, _ name: String, _ value: Int) throws {
        let status = parley_opus_encoder_set_int(encoder, request, opus_int32(value))
        guard status == OPUS_OK else { throw CodecError.opus(name, status) }
    }
}
