import ParleyMedia
import ParleyTestLanes
import Testing

@testable import ParleyDevices

@Suite("MJPEG decoding with libturbojpeg", .lane(.blocking))
struct MJPEGTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var file: String
        var lumaFloor: Double
        var overallFloor: Double
        var testDescription: String { name }
    }

    /// Floors a few dB under what libjpeg-turbo 2.1.5 gives at quality 92 on this smooth picture (measured: luma
    /// 58.9 dB, overall 56.3 / 56.7 / 58.0 dB for 4:2:0 / 4:2:2 / 4:4:4), so a swapped plane, a chroma shift or a
    /// broken resample fails them by far.
    @Test(
        "committed JPEGs decode close to the picture they were made from",
        arguments: [
            Row(
                name: "4:2:0, decoded straight to planes", file: "camera-64x48-420.jpg", lumaFloor: 55, overallFloor: 53
            ),
            Row(
                name: "4:2:2, chroma averaged vertically", file: "camera-64x48-422.jpg", lumaFloor: 55, overallFloor: 53
            ),
            Row(name: "4:4:4, chroma averaged 2x2", file: "camera-64x48-444.jpg", lumaFloor: 55, overallFloor: 53),
        ])
    func decodes(_ row: Row) throws {
        let frame = try MJPEGDecoder().decode(CameraFixtures.bytes(row.file), timestampMicros: 77)
        #expect(frame.width == 64 && frame.height == 48 && frame.timestampMicros == 77)
        let psnr = try #require(frame.psnr(against: CameraFixtures.reference))
        #expect(psnr.y >= row.lumaFloor)
        #expect(psnr.overall >= row.overallFloor)
    }

    @Test("a greyscale JPEG gets neutral chroma")
    func greyscale() throws {
        let frame = try MJPEGDecoder().decode(CameraFixtures.bytes("camera-64x48-gray.jpg"))
        var lumaOnly = CameraFixtures.reference
        lumaOnly.u = [UInt8](repeating: 128, count: lumaOnly.u.count)
        lumaOnly.v = lumaOnly.u
        #expect(frame.u == lumaOnly.u && frame.v == lumaOnly.v)
        #expect(try #require(frame.psnr(against: lumaOnly)).y >= 55)
    }

    /// UVC webcams leave the Huffman tables out of their MJPEG frames; the decoder must supply the standard ones.
    @Test("a frame without Huffman tables, as webcams send it, decodes to the same picture")
    func withoutHuffmanTables() throws {
        let jpeg = CameraFixtures.bytes("camera-64x48-420.jpg")
        let stripped = Self.removingSegments(0xC4, from: jpeg)
        #expect(stripped.count < jpeg.count)
        let decoder = try MJPEGDecoder()
        #expect(try decoder.decode(stripped) == decoder.decode(jpeg))
    }

    struct BadRow: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var error: CameraError
        var testDescription: String { name }
    }

    static let jpeg = CameraFixtures.bytes("camera-64x48-420.jpg")

    @Test(
        "garbage, truncated and oversized JPEGs are rejected by name",
        arguments: [
            BadRow(
                name: "empty", bytes: [],
                error: .badFrame(reason: "MJPEG frame of 0 bytes is too short to be a JPEG")),
            BadRow(
                name: "a PNG", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
                error: .badFrame(reason: "MJPEG frame does not start with a JPEG start-of-image marker (starts 89 50)")),
            BadRow(
                name: "start marker then noise", bytes: [0xFF, 0xD8] + [UInt8](repeating: 0x5A, count: 200),
                error: .badFrame(reason: "JPEG has no start-of-frame header (no picture in 202 bytes)")),
            BadRow(
                name: "cut off inside the Huffman tables", bytes: Array(jpeg.prefix(jpeg.count / 2)),
                error: .badFrame(reason: "JPEG header: Bogus Huffman table definition")),
            BadRow(
                name: "cut off in the picture data", bytes: Array(jpeg.prefix(jpeg.count - 100)),
                error: .badFrame(reason: "JPEG decode: Premature end of JPEG file")),
            BadRow(
                name: "header claims 9000x9000", bytes: MJPEGTests.resized(jpeg, width: 9000, height: 9000),
                error: .badFrame(reason: "JPEG is 9000x9000, outside the 1x1 to 7680x4320 limit")),
        ])
    func rejected(_ row: BadRow) throws {
        let decoder = try MJPEGDecoder()
        #expect(throws: row.error) { try decoder.decode(row.bytes) }
        // The decoder stays usable after a bad frame.
        #expect(try decoder.decode(Self.jpeg).width == 64)
    }

    @Test("MJPEG frames go through the converter, cropped and scaled to the profile")
    func throughConverter() throws {
        let converter = CameraFrameConverter(width: 32, height: 24)
        let raw = RawCameraFrame(
            format: CameraFormat(pixelFormat: .mjpeg, width: 64, height: 48, fps: 30), bytes: Self.jpeg,
            timestampMicros: 5)
        let frame = try converter.convert(raw)
        let direct = try MJPEGDecoder().decode(Self.jpeg, timestampMicros: 5).scaled(width: 32, height: 24)
        #expect(frame == direct)
    }

    /// The JPEG with every marker segment of `marker` (0xFF `marker` length...) removed.
    static func removingSegments(_ marker: UInt8, from jpeg: [UInt8]) -> [UInt8] {
        var out = Array(jpeg.prefix(2))
        var index = 2
        while index + 4 <= jpeg.count, jpeg[index] == 0xFF, jpeg[index + 1] != 0xDA {
            let length = Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3])
            if jpeg[index + 1] != marker { out += jpeg[index..<(index + 2 + length)] }
            index += 2 + length
        }
        return out + jpeg[index...]
    }

    /// The JPEG with its start-of-frame header claiming another size.
    static func resized(_ jpeg: [UInt8], width: Int, height: Int) -> [UInt8] {
        var out = jpeg
        var index = 2
        while index + 9 <= out.count, out[index] == 0xFF {
            let length = Int(out[index + 2]) << 8 | Int(out[index + 3])
            if out[index + 1] == 0xC0 {
                out[index + 5] = UInt8(height >> 8)
                out[index + 6] = UInt8(height & 0xFF)
                out[index + 7] = UInt8(width >> 8)
                out[index + 8] = UInt8(width & 0xFF)
                return out
            }
            index += 2 + length
        }
        return out
    }
}
