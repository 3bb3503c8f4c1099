/// The format and sample data of a 16-bit PCM WAV file.
public struct WAVAudio: Sendable, Equatable {
    /// Samples per second per channel.
    public var sampleRate: Int
    /// 1 or 2.
    public var channels: Int
    /// Interleaved samples.
    public var samples: [Int16]

    /// Audio to write or as read.
    public init(sampleRate: Int, channels: Int, samples: [Int16]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    /// Format tags read from the `fmt ` chunk.
    static let pcmFormat: UInt16 = 1
    static let extensibleFormat: UInt16 = 0xFFFE

    /// Parses a whole WAV file; throws `MediaFileError.wav` naming what is wrong (layout, encoding, rate, size).
    /// Accepts 16-bit PCM (plain or WAVE_FORMAT_EXTENSIBLE), mono or stereo, at 48 kHz; skips unknown chunks.
    public static func parse(_ bytes: [UInt8]) throws -> WAVAudio {
        guard bytes.count >= 12 else {
            throw MediaFileError.wav("file is \(bytes.count) bytes, too short for a RIFF header (12)")
        }
        guard bytes[0..<4].elementsEqual("RIFF".utf8) else {
            throw MediaFileError.wav("file does not start with \"RIFF\" (found \(quoted(bytes[0..<4])))")
        }
        guard bytes[8..<12].elementsEqual("WAVE".utf8) else {
            throw MediaFileError.wav("RIFF file is of type \(quoted(bytes[8..<12])), not \"WAVE\"")
        }
        var format: (tag: UInt16, channels: Int, rate: Int, blockAlign: Int, bits: Int)?
        var position = 12
        while position + 8 <= bytes.count {
            let id = bytes[position..<(position + 4)]
            let declared = Int(littleEndian32(bytes, position + 4))
            let body = position + 8
            let isData = id.elementsEqual("data".utf8)
            var length = declared
            if body + declared > bytes.count {
                // Streaming writers leave 0xFFFFFFFF in the data size; anything else past the end is damage.
                guard isData, declared == 0xFFFF_FFFF else {
                    throw MediaFileError.wav(
                        "chunk \(quoted(id)) at byte \(position) declares \(declared) bytes but only "
                            + "\(bytes.count - body) remain")
                }
                length = bytes.count - body
            }
            if id.elementsEqual("fmt ".utf8) {
                guard length >= 16 else {
                    throw MediaFileError.wav("\"fmt \" chunk is \(length) bytes, needs at least 16")
                }
                var tag = littleEndian16(bytes, body)
                if tag == extensibleFormat {
                    guard length >= 40 else {
                        throw MediaFileError.wav("extensible \"fmt \" chunk is \(length) bytes, needs 40")
                    }
                    tag = littleEndian16(bytes, body + 24)  // First two bytes of the sub-format GUID.
                }
                format = (
                    tag, Int(littleEndian16(bytes, body + 2)), Int(littleEndian32(bytes, body + 4)),
                    Int(littleEndian16(bytes, body + 12)), Int(littleEndian16(bytes, body + 14))
                )
            } else if isData {
                guard let format else { throw MediaFileError.wav("\"data\" chunk comes before any \"fmt \" chunk") }
                try validate(format)
                let usable = length - length % format.blockAlign
                guard usable > 0 else { throw MediaFileError.wav("\"data\" chunk holds no complete sample frame") }
                let samples = (0..<(usable / 2)).map { Int16(bitPattern: littleEndian16(bytes, body + $0 * 2)) }
                return WAVAudio(sampleRate: format.rate, channels: format.channels, samples: samples)
            }
            position = body + length + (length & 1)  // Chunks are padded to even sizes.
        }
        throw MediaFileError.wav(format == nil ? "no \"fmt \" chunk" : "no \"data\" chunk")
    }

    private static func validate(_ format: (tag: UInt16, channels: Int, rate: Int, blockAlign: Int, bits: Int)) throws {
        guard format.tag == pcmFormat else {
            let name = format.tag == 3 ? " (IEEE float)" : format.tag == 6 || format.tag == 7 ? " (G.711)" : ""
            throw MediaFileError.wav("encoding \(format.tag)\(name) is not supported; Parley reads 16-bit PCM (1)")
        }
        guard format.bits == 16 else {
            throw MediaFileError.wav("\(format.bits)-bit samples are not supported; Parley reads 16-bit PCM")
        }
        guard format.channels == 1 || format.channels == 2 else {
            throw MediaFileError.wav("\(format.channels) channels are not supported; Parley reads mono or stereo")
        }
        guard format.rate == 48_000 else {
            throw MediaFileError.wav(
                "sample rate \(format.rate) Hz is not supported; Parley needs 48000 Hz "
                    + "(convert with: sox in.wav -r 48000 out.wav)")
        }
        guard format.blockAlign == format.channels * 2 else {
            throw MediaFileError.wav(
                "block align \(format.blockAlign) does not match \(format.channels) channel(s) of 16 bits")
        }
    }

    /// The 44-byte canonical header for `dataBytes` of 16-bit PCM.
    static func header(sampleRate: Int, channels: Int, dataBytes: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes += Array("RIFF".utf8) + le32(36 + dataBytes) + Array("WAVE".utf8)
        bytes += Array("fmt ".utf8) + le32(16) + le16(1) + le16(channels) + le32(sampleRate)
        bytes += le32(sampleRate * channels * 2) + le16(channels * 2) + le16(16)
        bytes += Array("data".utf8) + le32(dataBytes)
        return bytes
    }

    /// The whole file as bytes.
    public func encoded() -> [UInt8] {
        var bytes = Self.header(sampleRate: sampleRate, channels: channels, dataBytes: samples.count * 2)
        bytes.reserveCapacity(bytes.count + samples.count * 2)
        for sample in samples { bytes += le16(Int(UInt16(bitPattern: sample))) }
        return bytes
    }
}

private func littleEndian16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
    UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
}

private func littleEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
    UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
}

func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
func le32(_ value: Int) -> [UInt8] {
    [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24 & 0xFF)]
}

/// Plays a WAV file as an audio source, looping at the end. The file is read into memory once.
public final class WAVFileSource: AudioSource {
    /// The decoded file.
    public let audio: WAVAudio
    private var position = 0
    private var framesProduced: Int64 = 0

    /// Reads and checks a file; throws `MediaFileError` naming what is wrong.
    public convenience init(path: String) throws {
        let input = try FileInput(path: path)
        guard input.size <= 512 << 20 else {
            throw MediaFileError.wav("\(path) is \(input.size >> 20) MB; looping sources hold at most 512 MB")
        }
        try self.init(audio: WAVAudio.parse(input.read(at: 0, count: input.size)))
    }

    /// Plays audio already in memory.
    public init(audio: WAVAudio) {
        precondition(!audio.samples.isEmpty, "a looping source needs at least one sample")
        self.audio = audio
    }

    public var sampleRate: Int { audio.sampleRate }
    public var channels: Int { audio.channels }

    public func nextFrame(samplesPerChannel: Int) -> AudioFrame {
        let wanted = samplesPerChannel * channels
        var samples: [Int16] = []
        samples.reserveCapacity(wanted)
        while samples.count < wanted {
            let take = min(wanted - samples.count, audio.samples.count - position)
            samples += audio.samples[position..<(position + take)]
            position = (position + take) % audio.samples.count
        }
        let frame = AudioFrame(
            sampleRate: sampleRate, channels: channels, samples: samples,
            timestampMicros: framesProduced * 1_000_000 / Int64(sampleRate))
        framesProduced += Int64(samplesPerChannel)
        return frame
    }
}

/// Writes 16-bit PCM WAV; the header's sizes are kept current after every block, so the file is valid even if the
/// process stops without closing it.
public final class WAVFileWriter: AudioSink {
    /// Where the audio goes.
    public let path: String
    /// Sample frames (per channel) written so far.
    public private(set) var framesWritten = 0
    private let output: FileOutput
    private var format: (sampleRate: Int, channels: Int)?

    /// Creates (or truncates) the file; the format is fixed by the first block.
    public init(path: String) throws {
        self.path = path
        output = try FileOutput(path: path)
    }

    public func write(_ frame: AudioFrame) throws {
        if let format {
            guard format.sampleRate == frame.sampleRate, format.channels == frame.channels else {
                throw MediaFileError.unsupportedFrame(
                    "WAV file \(path) is \(format.sampleRate) Hz, \(format.channels) channel(s); cannot append "
                        + "\(frame.sampleRate) Hz, \(frame.channels) channel(s)")
            }
        } else {
            format = (frame.sampleRate, frame.channels)
            try output.append(WAVAudio.header(sampleRate: frame.sampleRate, channels: frame.channels, dataBytes: 0))
        }
        var bytes = [UInt8](repeating: 0, count: frame.samples.count * 2)
        for (index, sample) in frame.samples.enumerated() {
            let value = UInt16(bitPattern: sample)
            bytes[index * 2] = UInt8(value & 0xFF)
            bytes[index * 2 + 1] = UInt8(value >> 8)
        }
        try output.append(bytes)
        framesWritten += frame.frameCount
        let dataBytes = framesWritten * frame.channels * 2
        try output.overwrite(le32(36 + dataBytes), at: 4)
        try output.overwrite(le32(dataBytes), at: 40)
    }
}
