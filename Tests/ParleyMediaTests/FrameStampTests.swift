import Testing

@testable import ParleyMedia

@Suite struct FrameStampTests {
    struct CodecRow: CustomTestStringConvertible, Sendable {
        var cameraWidth: Int
        var cameraHeight: Int
        var width: Int
        var height: Int
        var kbps: Int
        var testDescription: String {
            let scaled = cameraWidth == width ? "" : " scaled from \(cameraWidth)x\(cameraHeight)"
            return "\(width)x\(height)\(scaled) at \(kbps) kbit/s"
        }
    }

    /// Every frame, from the first keyframe on, must give back exactly its participant and counter.
    @Test(arguments: [
        CodecRow(cameraWidth: 160, cameraHeight: 120, width: 160, height: 120, kbps: 60),
        CodecRow(cameraWidth: 320, cameraHeight: 240, width: 320, height: 240, kbps: 150),
        CodecRow(cameraWidth: 640, cameraHeight: 360, width: 640, height: 360, kbps: 300),
        CodecRow(cameraWidth: 1280, cameraHeight: 720, width: 1280, height: 720, kbps: 800),
        CodecRow(cameraWidth: 1280, cameraHeight: 720, width: 320, height: 180, kbps: 100),
        CodecRow(cameraWidth: 640, cameraHeight: 360, width: 160, height: 90, kbps: 50),
    ])
    func stampSurvivesVP8(_ row: CodecRow) throws {
        let participant: UInt32 = 0xBEEF
        let camera = SyntheticCamera(
            name: "Stamp", participant: participant, width: row.cameraWidth,
            height: row.cameraHeight)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(width: row.width, height: row.height, targetBitrateKbps: row.kbps))
        let decoder = try VP8Decoder()
        let count = row.width >= 1280 ? 15 : 45
        var recovered: [UInt32] = []
        for _ in 0..<count {
            let picture = camera.nextFrame().scaled(width: row.width, height: row.height)
            for frame in try encoder.encode(picture) {
                let decoded = try #require(try decoder.decode(frame.bytes))
                let stamp = try #require(SyntheticCamera.readStamp(from: decoded))
                #expect(stamp.participant == participant)
                recovered.append(stamp.frame)
            }
        }
        #expect(recovered == (0..<UInt32(count)).map { $0 })
    }

    @Test(arguments: [(0, 0), (0xFFFF, 0xFF_FFFF), (1, 123_456), (0xBEEF, 0xAB_CDEF), (42, 1)] as [(UInt32, UInt32)])
    func bitsRoundTripExactly(participant: UInt32, frame: UInt32) throws {
        let bits = FrameStamp.encode(participant: participant, frame: frame)
        #expect(bits.count == 48)
        let decoded = try #require(FrameStamp.decode(bits))
        #expect(decoded.participant == participant && decoded.frame == frame)
    }

    @Test func counterWrapsAt24Bits() {
        let camera = SyntheticCamera(name: "Wrap", participant: 3, width: 160, height: 120)
        let stamp = SyntheticCamera.readStamp(from: camera.render(frameNumber: 0x0100_0005))
        #expect(stamp?.participant == 3 && stamp?.frame == 5)
    }

    struct NoStampRow: CustomTestStringConvertible, Sendable {
        var name: String
        var picture: VideoFrame
        var testDescription: String { name }
    }

    static func damaged(_ change: (inout VideoFrame) -> Void) -> VideoFrame {
        var picture = SyntheticCamera(name: "X", participant: 77, width: 320, height: 240).render(frameNumber: 1000)
        change(&picture)
        return picture
    }

    @Test(arguments: [
        NoStampRow(name: "flat grey", picture: VideoFrame(width: 320, height: 240, fillY: 128)),
        NoStampRow(name: "all black", picture: VideoFrame(width: 320, height: 240, fillY: 16)),
        NoStampRow(
            name: "noise",
            picture: VideoFrame(
                width: 320, height: 240,
                y: (0..<(320 * 240)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) },
                u: [UInt8](repeating: 128, count: 160 * 120), v: [UInt8](repeating: 128, count: 160 * 120))),
        NoStampRow(
            name: "one cell inverted (checksum)",
            picture: damaged { picture in
                for row in 2..<13 { for x in 42..<58 { picture.y[row * 320 + x] = 251 - picture.y[row * 320 + x] } }
            }),
        NoStampRow(
            name: "one cell grey",
            picture: damaged { picture in
                for row in 2..<13 { for x in 42..<58 { picture.y[row * 320 + x] = 128 } }
            }),
        NoStampRow(name: "picture too small", picture: VideoFrame(width: 24, height: 24, fillY: 16)),
    ])
    func picturesWithoutAValidStampReadAsNil(_ row: NoStampRow) {
        #expect(SyntheticCamera.readStamp(from: row.picture) == nil)
    }

    @Test func undamagedControlReads() {
        let stamp = SyntheticCamera.readStamp(from: Self.damaged { _ in })
        #expect(stamp?.participant == 77 && stamp?.frame == 1000)
    }
}
