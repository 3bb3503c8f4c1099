import COpus
import COpusShim

/// A libopus decoder with loss handling: FEC from the following packet when there is one, concealment otherwise.
public final class OpusAudioDecoder {
    /// How a missing packet was filled in.
    public enum Recovery: Sendable, Equatable {
        /// Rebuilt from the in-band FEC data of the next packet (libopus conceals if that packet carried none).
        case forwardErrorCorrection
        /// Extrapolated by packet-loss concealment.
        case concealment
    }

    /// Output sample rate.
    public let sampleRate: Int
    /// Output channels (1 or 2); a packet of either kind decodes to this many.
    public let channels: Int
    /// Packets decoded normally.
    public private(set) var packetsDecoded = 0
    /// Missing packets rebuilt from the next packet's FEC data.
    public private(set) var packetsRecoveredByFEC = 0
    /// Missing packets concealed without FEC.
    public private(set) var packetsConcealed = 0
    /// How the last missing packet was handled.
    public private(set) var lastRecovery: Recovery?

    private let decoder: OpaquePointer
    private var nextTimestamp: Int64 = 0
    // 120 ms is the longest an Opus packet can be.
    private var pcm: [Int16]
    private var lastPacketSamples: Int

    /// Opens a decoder for the given output format.
    public init(sampleRate: Int = 48_000, channels: Int = 1) throws {
        guard OpusAudioConfig.sampleRates.contains(sampleRate) else {
            throw CodecError.invalidSetting(
                name: "Opus sample rate", value: String(sampleRate), allowed: "8000, 12000, 16000, 24000 or 48000")
        }
        guard channels == 1 || channels == 2 else {
            throw CodecError.invalidSetting(name: "Opus channels", value: String(channels), allowed: "1...2")
        }
        var status: Int32 = OPUS_OK
        guard let decoder = opus_decoder_create(opus_int32(sampleRate), Int32(channels), &status), status == OPUS_OK
        else { throw CodecError.opus("opus_decoder_create", status) }
        self.decoder = decoder
        self.sampleRate = sampleRate
        self.channels = channels
        pcm = [Int16](repeating: 0, count: sampleRate / 1000 * 120 * channels)
        lastPacketSamples = sampleRate / 50
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes one packet; throws on empty or malformed packets (then call `decodeMissing` to fill the gap).
    public func decode(_ packet: [UInt8]) throws -> AudioFrame {
        guard !packet.isEmpty else { throw CodecError.emptyInput(codec: "Opus") }
        let samples = try run("opus_decode", packet: packet, maxSamples: maxSamples, fec: false)
        packetsDecoded += 1
        lastPacketSamples = samples
        return frame(samples: samples)
    }

    /// Fills in one lost packet: from `nextPacket`'s FEC data when given, else by concealment. Never fails:
    /// if libopus rejects everything, the gap is silence.
    public func decodeMissing(nextPacket: [UInt8]?) -> AudioFrame {
        // The gap is as long as the previous packet; FEC and PLC both need that length.
        let samples = lastPacketSamples
        if let nextPacket, !nextPacket.isEmpty,
            let decoded = try? run("opus_decode (FEC)", packet: nextPacket, maxSamples: samples, fec: true)
        {
            packetsRecoveredByFEC += 1
            lastRecovery = .forwardErrorCorrection
            return frame(samples: decoded)
        }
        packetsConcealed += 1
        lastRecovery = .concealment
        if let decoded = try? run("opus_decode (PLC)", packet: nil, maxSamples: samples, fec: false) {
            return frame(samples: decoded)
        }
        return frame(samples: samples, silent: true)
    }

    /// Forgets all history (e.g. when the sender restarts); counters are kept.
    public func reset() throws {
        let status = parley_opus_decoder_reset(decoder)
        guard status == OPUS_OK else { throw CodecError.opus("OPUS_RESET_STATE", status) }
    }

    private var maxSamples: Int { pcm.count / channels }

    private func run(_ call: String, packet: [UInt8]?, maxSamples: Int, fec: Bool) throws -> Int {
        let decoder = self.decoder
        let result: Int32 = pcm.withUnsafeMutableBufferPointer { out in
            if let packet {
                return packet.withUnsafeBufferPointer { data in
                    opus_decode(
                        decoder, data.baseAddress, opus_int32(data.count), out.baseAddress!, Int32(maxSamples),
                        fec ? 1 : 0)
                }
            }
            return opus_decode(decoder, nil, 0, out.baseAddress!, Int32(maxSamples), 0)
        }
        guard result >= 0 else { throw CodecError.opus(call, result) }
        return Int(result)
    }

    private func frame(samples: Int, silent: Bool = false) -> AudioFrame {
        let values = silent ? [Int16](repeating: 0, count: samples * channels) : Array(pcm[0..<(samples * channels)])
        let frame = AudioFrame(
            sampleRate: sampleRate, channels: channels, samples: values, timestampMicros: nextTimestamp)
        nextTimestamp += frame.durationMicros
        return frame
    }
}
