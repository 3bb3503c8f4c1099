import Foundation
import Testing

@testable import ParleyMedia

@Suite struct Y4MTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A 4x2 file with `frames` frames whose bytes count up.
    static func file(header: String = "YUV4MPEG2 W4 H2 F25:1 Ip A1:1 C420jpeg\n", frames: Int) -> [UInt8] {
        var out = bytes(header)
        for index in 0..<frames {
            out += bytes("FRAME\n") + (0..<12).map { UInt8(index * 12 + $0) }
        }
        return out
    }

    struct BadFile: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var message: String
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadFile(name: "empty", bytes: [], message: "file is empty"),
        BadFile(
            name: "PNG file", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D],
            message: "file does not start with \"YUV4MPEG2 \" (found \"\\x89PNG\\x0D\\x0A\\x1A\\x0A\\x00\\x00\")"),
        BadFile(
            name: "no newline", bytes: bytes("YUV4MPEG2 W4 H2") + [UInt8](repeating: 0x41, count: 1100),
            message: "header line has no newline in its first 1024 bytes"),
        BadFile(name: "no width", bytes: bytes("YUV4MPEG2 H2 F30:1\n"), message: "header has no width (W field)"),
        BadFile(name: "no height", bytes: bytes("YUV4MPEG2 W4 F30:1\n"), message: "header has no height (H field)"),
        BadFile(
            name: "width not a number", bytes: bytes("YUV4MPEG2 Wide H2\n"),
            message: "width \"ide\" is not a positive whole number"),
        BadFile(
            name: "zero height", bytes: bytes("YUV4MPEG2 W4 H0\n"),
            message: "height \"0\" is not a positive whole number"),
        BadFile(
            name: "giant width", bytes: bytes("YUV4MPEG2 W99999 H2\n"),
            message: "width 99999 exceeds the limit of 16384"),
        BadFile(
            name: "frame rate without colon", bytes: bytes("YUV4MPEG2 W4 H2 F30\n"),
            message: "frame rate \"30\" is not of the form N:D (e.g. F30:1)"),
        BadFile(
            name: "frame rate over zero", bytes: bytes("YUV4MPEG2 W4 H2 F30:0\n"),
            message: "frame rate 30:0 must have a positive numerator and denominator"),
        BadFile(
            name: "frame rate with a huge denominator", bytes: bytes("YUV4MPEG2 W4 H2 F30:1000000000000000001\n"),
            message: "frame rate 30:1000000000000000001 has a number above 1000000"),
        BadFile(
            name: "4:4:4 chroma", bytes: bytes("YUV4MPEG2 W4 H2 C444\n"),
            message:
                "colour space C444 is not supported; Parley reads 8-bit 4:2:0 (C420, C420jpeg, C420paldv, C420mpeg2)"),
        BadFile(
            name: "10-bit", bytes: bytes("YUV4MPEG2 W4 H2 C420p10\n"),
            message:
                "colour space C420p10 is not supported; Parley reads 8-bit 4:2:0 (C420, C420jpeg, C420paldv, C420mpeg2)"
        ),
        BadFile(name: "unknown field", bytes: bytes("YUV4MPEG2 W4 H2 Zap\n"), message: "unknown header field \"Zap\""),
        BadFile(
            name: "header only", bytes: bytes("YUV4MPEG2 W4 H2\n"), message: "file holds no frames after the header"),
        BadFile(
            name: "frame marker missing", bytes: bytes("YUV4MPEG2 W4 H2\nFRAMX\n") + [UInt8](repeating: 0, count: 12),
            message: "frame 0 (byte 16) does not start with \"FRAME\" (found \"FRAMX\\x0A\\x00\\x00\")"),
        BadFile(
            name: "truncated first frame", bytes: bytes("YUV4MPEG2 W4 H2\nFRAME\n") + [1, 2, 3],
            message: "frame 0 is truncated: 3 of 12 bytes"),
    ])
    func garbageIsRejectedWithReason(_ row: BadFile) {
        #expect(throws: MediaFileError.y4m(row.message)) { try Y4MFileSource(input: MemoryInput(row.bytes)) }
    }

    @Test func truncatedLaterFrameIsReportedWhenReached() throws {
        let source = try Y4MFileSource(input: MemoryInput(Self.file(frames: 2) + Self.bytes("FRAME\n") + [9, 9]))
        _ = try source.nextFrame()
        _ = try source.nextFrame()
        #expect(throws: MediaFileError.y4m("frame 2 is truncated: 2 of 12 bytes")) { try source.nextFrame() }
    }

    @Test func readsFramesAndLoops() throws {
        let source = try Y4MFileSource(input: MemoryInput(Self.file(frames: 2)))
        #expect(source.width == 4 && source.height == 2 && source.frameIntervalMicros == 40_000)
        let frames = try (0..<3).map { _ in try source.nextFrame() }
        #expect(frames[0] == VideoFrame(width: 4, height: 2, y: Array(0..<8), u: [8, 9], v: [10, 11]))
        #expect(frames[1].y == Array(12..<20))
        #expect(frames[2].y == frames[0].y, "the third read loops to the first frame")
        #expect(frames.map(\.timestampMicros) == [0, 40_000, 80_000])
    }

    @Test func frameParametersAndNTSCRateAreAccepted() throws {
        let header = "YUV4MPEG2 W4 H2 F30000:1001 It A10:11 C420mpeg2 XYSCSS=420MPEG2\n"
        var bytes = Self.bytes(header) + Self.bytes("FRAME Ixyz\n") + [UInt8](repeating: 7, count: 12)
        bytes += Self.bytes("FRAME\n") + [UInt8](repeating: 8, count: 12)
        let source = try Y4MFileSource(input: MemoryInput(bytes))
        #expect(source.header.frameRate == (30000, 1001))
        #expect(try source.nextFrame().y.allSatisfy { $0 == 7 })
        #expect(try source.nextFrame().timestampMicros == 33_366)
    }

    @Test func writerOutputReadsBackExactly() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/camera.y4m"
            let camera = SyntheticCamera(name: "File", participant: 5, width: 160, height: 120)
            let written = (0..<3).map { _ in camera.nextFrame() }
            do {
                let writer = try Y4MFileWriter(path: path)
                for frame in written { try writer.write(frame) }
                #expect(
                    throws: MediaFileError.unsupportedFrame(
                        "Y4M file \(path) is 160x120; cannot append a 320x240 frame (Y4M cannot change size)")
                ) {
                    try writer.write(VideoFrame(width: 320, height: 240, fillY: 0))
                }
            }
            let raw = try FileInput(path: path).read(at: 0, count: 64)
            #expect(raw.starts(with: Self.bytes("YUV4MPEG2 W160 H120 F30:1 Ip A1:1 C420jpeg\nFRAME\n")))
            let source = try Y4MFileSource(path: path)
            for frame in written { #expect(try source.nextFrame() == frame) }
            #expect(SyntheticCamera.readStamp(from: try source.nextFrame())?.frame == 0, "loops to frame 0")
        }
    }

    @Test func missingFileNamesPathAndReason() {
        #expect(
            throws: MediaFileError.io(
                path: "/nonexistent/x.y4m", operation: "open", reason: "No such file or directory")
        ) {
            try Y4MFileSource(path: "/nonexistent/x.y4m")
        }
    }
}

@Suite struct WAVTests {
    static func wav(
        format: UInt16 = 1, channels: Int = 1, rate: Int = 48_000, bits: Int = 16, blockAlign: Int? = nil,
        fmtSize: Int = 16, extra: [UInt8] = [], data: [UInt8] = [1, 0, 2, 0], dataSize: Int? = nil
    ) -> [UInt8] {
        var fmt = le16(Int(format)) + le16(channels) + le32(rate) + le32(rate * channels * bits / 8)
        fmt += le16(blockAlign ?? channels * bits / 8) + le16(bits)
        fmt += [UInt8](repeating: 0, count: max(0, fmtSize - 16))
        let body =
            Array("WAVE".utf8) + Array("fmt ".utf8) + le32(fmtSize) + fmt + extra
            + Array("data".utf8) + le32(dataSize ?? data.count) + data
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    struct BadFile: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var message: String
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadFile(name: "empty", bytes: [], message: "file is 0 bytes, too short for a RIFF header (12)"),
        BadFile(
            name: "MP3 file", bytes: Array("ID3\u{4}\0\0\0\0\0\0\0\0\0".utf8),
            message: "file does not start with \"RIFF\" (found \"ID3\\x04\")"),
        BadFile(
            name: "AVI file", bytes: Array("RIFF".utf8) + le32(4) + Array("AVI ".utf8),
            message: "RIFF file is of type \"AVI \", not \"WAVE\""),
        BadFile(
            name: "no chunks", bytes: Array("RIFF".utf8) + le32(4) + Array("WAVE".utf8), message: "no \"fmt \" chunk"),
        BadFile(
            name: "data before fmt", bytes: Array("RIFF".utf8) + le32(16) + Array("WAVEdata".utf8) + le32(2) + [0, 0],
            message: "\"data\" chunk comes before any \"fmt \" chunk"),
        BadFile(
            name: "short fmt",
            bytes: Array("RIFF".utf8) + le32(20) + Array("WAVEfmt ".utf8) + le32(8) + [UInt8](repeating: 1, count: 8),
            message: "\"fmt \" chunk is 8 bytes, needs at least 16"),
        BadFile(
            name: "float samples", bytes: wav(format: 3, bits: 32),
            message: "encoding 3 (IEEE float) is not supported; Parley reads 16-bit PCM (1)"),
        BadFile(
            name: "mu-law", bytes: wav(format: 7, bits: 8),
            message: "encoding 7 (G.711) is not supported; Parley reads 16-bit PCM (1)"),
        BadFile(
            name: "24-bit", bytes: wav(bits: 24, data: [0, 0, 0]),
            message: "24-bit samples are not supported; Parley reads 16-bit PCM"),
        BadFile(
            name: "six channels", bytes: wav(channels: 6),
            message: "6 channels are not supported; Parley reads mono or stereo"),
        BadFile(
            name: "44.1 kHz", bytes: wav(rate: 44_100),
            message:
                "sample rate 44100 Hz is not supported; Parley needs 48000 Hz "
                + "(convert with: sox in.wav -r 48000 out.wav)"
        ),
        BadFile(
            name: "bad block align", bytes: wav(blockAlign: 3),
            message: "block align 3 does not match 1 channel(s) of 16 bits"),
        BadFile(
            name: "data size past the end", bytes: wav(dataSize: 1000),
            message: "chunk \"data\" at byte 36 declares 1000 bytes but only 4 remain"),
        BadFile(name: "no samples", bytes: wav(data: []), message: "\"data\" chunk holds no complete sample frame"),
        BadFile(name: "no data chunk", bytes: Array(wav().prefix(36)), message: "no \"data\" chunk"),
    ])
    func garbageIsRejectedWithReason(_ row: BadFile) {
        #expect(throws: MediaFileError.wav(row.message)) { try WAVAudio.parse(row.bytes) }
    }

    @Test func acceptsExtensibleFormatOddChunksAndStreamingSize() throws {
        // WAVE_FORMAT_EXTENSIBLE whose sub-format GUID starts with PCM (1), a padded odd-sized LIST chunk,
        // and the 0xFFFFFFFF data size streaming writers leave behind.
        // Extension: size 22, valid bits 16, channel mask 3, then the GUID 00000001-0000-0010-8000-00AA00389B71.
        let fmt =
            le16(22) + le16(16) + le32(3) + le16(1) + [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
        let bytes = Self.wav(
            format: 0xFFFE, channels: 2, fmtSize: 40, extra: Array("LIST".utf8) + le32(3) + [1, 2, 3, 0],
            data: [1, 0, 2, 0, 3, 0, 4, 0, 5], dataSize: 0xFFFF_FFFF)
        var patched = bytes
        patched.replaceSubrange(36..<60, with: fmt)  // Extension bytes after the 16 basic ones.
        let audio = try WAVAudio.parse(patched)
        #expect(audio == WAVAudio(sampleRate: 48_000, channels: 2, samples: [1, 2, 3, 4]))
    }

    @Test func encodedHeaderIsCanonical() {
        let bytes = WAVAudio(sampleRate: 48_000, channels: 1, samples: [1, -2]).encoded()
        #expect(
            bytes == Array("RIFF".utf8) + [40, 0, 0, 0] + Array("WAVEfmt ".utf8) + [16, 0, 0, 0, 1, 0, 1, 0]
                + [0x80, 0xBB, 0, 0, 0x00, 0x77, 0x01, 0, 2, 0, 16, 0] + Array("data".utf8) + [
                    4, 0, 0, 0, 1, 0, 0xFE, 0xFF,
                ])
    }

    @Test func writerKeepsHeaderCurrentAndReadsBack() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/voice.wav"
            let voice = SyntheticVoice(participant: 2)
            let frames = (0..<5).map { _ in voice.nextFrame(samplesPerChannel: 960) }
            let writer = try WAVFileWriter(path: path)
            for frame in frames { try writer.write(frame) }
            #expect(
                throws: MediaFileError.unsupportedFrame(
                    "WAV file \(path) is 48000 Hz, 1 channel(s); cannot append 48000 Hz, 2 channel(s)")
            ) {
                try writer.write(AudioFrame(channels: 2, samples: [0, 0]))
            }
            // Still open, yet already a complete file.
            let input = try FileInput(path: path)
            let audio = try WAVAudio.parse(input.read(at: 0, count: input.size))
            #expect(audio.samples == frames.flatMap(\.samples))
            #expect(writer.framesWritten == 4800)
        }
    }

    @Test func sourceLoopsAndStampsMediaTime() throws {
        let source = WAVFileSource(audio: WAVAudio(sampleRate: 48_000, channels: 1, samples: [1, 2, 3]))
        let first = source.nextFrame(samplesPerChannel: 5)
        let second = source.nextFrame(samplesPerChannel: 2)
        #expect(first.samples == [1, 2, 3, 1, 2] && second.samples == [3, 1])
        #expect(first.timestampMicros == 0 && second.timestampMicros == 104)
    }

    @Test func fileSourceReportsParseErrors() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/bad.wav"
            let output = try FileOutput(path: path)
            try output.append(Self.wav(rate: 8000))
            #expect(
                throws: MediaFileError.wav(
                    "sample rate 8000 Hz is not supported; Parley needs 48000 Hz "
                        + "(convert with: sox in.wav -r 48000 out.wav)"
                )
            ) {
                try WAVFileSource(path: path)
            }
        }
    }
}
