import Testing

@testable import ParleyMedia

/// Broken input to the VP8 decoder: every row must end in an error or a picture, never a crash or hang, and the
/// decoder must recover on the next keyframe.
@Suite struct VP8DecoderTests {
    /// Keyframe, then inter frames, of the synthetic camera at 320x180.
    static let stream: [EncodedVideoFrame] = {
        let camera = SyntheticCamera(name: "Bob", participant: 2, width: 320, height: 180)
        let encoder = try! VP8Encoder(VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300))
        return try! encodeCamera(camera, encoder, count: 4)
    }()
    static var keyframe: [UInt8] { stream[0].bytes }
    static var interframe: [UInt8] { stream[1].bytes }

    enum Outcome: Sendable {
        /// Exactly this error.
        case error(CodecError)
        /// libvpx refuses the data (`vpx_codec_decode` error) or flags the result as corrupt.
        case rejected
        /// Either a picture (possibly damaged) or any error: what matters is surviving it.
        case survives
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var before: [[UInt8]]
        var input: [UInt8]
        var outcome: Outcome
        var testDescription: String { name }
    }

    static func flipping(_ bytes: [UInt8], every step: Int, from start: Int, mask: UInt8) -> [UInt8] {
        var copy = bytes
        for index in stride(from: start, to: copy.count, by: step) { copy[index] ^= mask }
        return copy
    }

    static let rows: [Row] = [
        Row(name: "empty packet", before: [], input: [], outcome: .error(.emptyInput(codec: "VP8"))),
        Row(
            name: "two bytes", before: [], input: [0x00, 0x01],
            outcome: .error(
                .malformedFrame("VP8 frame of 2 bytes is shorter than the 3-byte frame tag"))),
        Row(
            name: "inter frame at stream start", before: [], input: interframe,
            outcome: .error(.keyframeRequired(reason: "stream start"))),
        Row(
            name: "keyframe cut to 3 bytes", before: [], input: Array(keyframe.prefix(3)),
            outcome: .error(
                .malformedFrame("VP8 keyframe lacks the 9D 01 2A start code and size (3 bytes)"))),
        Row(name: "keyframe cut to 20 bytes", before: [], input: Array(keyframe.prefix(20)), outcome: .rejected),
        Row(
            name: "keyframe cut in half", before: [], input: Array(keyframe.prefix(keyframe.count / 2)),
            outcome: .rejected),
        Row(
            name: "keyframe with broken start code", before: [],
            input: Array(keyframe.prefix(3)) + [0x00] + Array(keyframe.dropFirst(4)),
            outcome: .error(
                .malformedFrame("VP8 keyframe lacks the 9D 01 2A start code and size (\(keyframe.count) bytes)"))),
        Row(
            name: "keyframe claiming a first partition longer than the frame", before: [],
            input: [keyframe[0] | 0xE0, 0xFF, 0xFF] + Array(keyframe.dropFirst(3)), outcome: .rejected),
        Row(
            name: "keyframe claiming 16383x16383", before: [],
            input: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0xFF, 0x3F, 0xFF, 0x3F] + [UInt8](repeating: 0, count: 100),
            outcome: .rejected),
        Row(
            name: "keyframe with every 97th byte flipped", before: [],
            input: flipping(keyframe, every: 97, from: 20, mask: 0x5A), outcome: .survives),
        Row(
            name: "inter frame cut in half", before: [keyframe], input: Array(interframe.prefix(interframe.count / 2)),
            outcome: .rejected),
        Row(
            name: "inter frame with every 31st byte flipped", before: [keyframe],
            input: flipping(interframe, every: 31, from: 5, mask: 0xFF), outcome: .survives),
        Row(
            name: "garbage after a keyframe", before: [keyframe],
            input: (0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }, outcome: .survives),
        Row(
            name: "inter frame after a broken one", before: [keyframe, Array(interframe.prefix(10))],
            input: interframe, outcome: .error(.keyframeRequired(reason: "after a broken frame"))),
    ]

    @Test(arguments: rows)
    func brokenInputGivesErrorNotCrash(_ row: Row) throws {
        let decoder = try VP8Decoder()
        for bytes in row.before { _ = try? decoder.decode(bytes) }
        let result = Result { try decoder.decode(row.input) }
        switch row.outcome {
        case .error(let expected):
            #expect(throws: expected) { try result.get() }
        case .rejected:
            #expect(decoder.needsKeyframe)
            do {
                _ = try result.get()
                Issue.record("expected libvpx to reject \(row.name)")
            } catch let error as CodecError {
                switch error {
                case .vpx(let call, _, _): #expect(call == "vpx_codec_decode")
                case .corruptFrame: break
                default: Issue.record("unexpected error \(error)")
                }
            }
        case .survives:
            break
        }
        // Whatever happened, the next keyframe brings the picture back.
        let picture = try #require(try decoder.decode(Self.keyframe))
        #expect(SyntheticCamera.readStamp(from: picture)?.participant == 2)
        #expect(!decoder.needsKeyframe)
    }

    @Test func counterReportsRejectedFrames() throws {
        let decoder = try VP8Decoder()
        _ = try? decoder.decode(Self.interframe)
        _ = try decoder.decode(Self.keyframe)
        _ = try decoder.decode(Self.interframe)
        #expect(decoder.framesRejected == 1)
        #expect(decoder.framesDecoded == 2)
    }

    struct HeaderRow: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var header: VP8FrameHeader?
        var testDescription: String { name }
    }

    static func header(key: Bool, _ size: (Int, Int)?) -> VP8FrameHeader? {
        var bytes: [UInt8] = [key ? 0x10 : 0x11, 0, 0]
        if let size {
            bytes += [
                0x9D, 0x01, 0x2A, UInt8(size.0 & 0xFF), UInt8(size.0 >> 8), UInt8(size.1 & 0xFF), UInt8(size.1 >> 8),
            ]
        }
        return VP8FrameHeader(bytes)
    }

    @Test(arguments: [
        HeaderRow(
            name: "keyframe 640x360", bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01],
            header: header(key: true, (640, 360))),
        HeaderRow(
            name: "keyframe with scaling bits", bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x40, 0xC1, 0xF0, 0x40],
            header: header(key: true, (320, 240))),
        HeaderRow(name: "inter frame", bytes: [0x31, 0x02, 0x00], header: header(key: false, nil)),
        HeaderRow(name: "too short", bytes: [0x10, 0x02], header: nil),
        HeaderRow(
            name: "keyframe without start code", bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2B, 0, 0, 0, 0],
            header: nil),
    ])
    func frameHeaderParsing(_ row: HeaderRow) {
        #expect(VP8FrameHeader(row.bytes) == row.header)
    }
}
