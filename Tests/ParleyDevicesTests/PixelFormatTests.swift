import ParleyMedia
import ParleyTestLanes
import Testing

@testable import ParleyDevices

@Suite("Camera pixel formats to I420", .lane(.blocking))
struct PixelFormatTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var layout: CameraPixelFormat
        var width: Int
        var height: Int
        var bytesPerLine: Int
        var bytes: [UInt8]
        var y: [UInt8]
        var u: [UInt8]
        var v: [UInt8]
        var testDescription: String { name }
    }

    static let pad: UInt8 = 0xEE

    static let rows: [Row] = [
        Row(
            name: "YUYV 4x2 packed: chroma is the rounded mean of both rows", layout: .yuyv, width: 4, height: 2,
            bytesPerLine: 0,
            bytes: [10, 100, 20, 200, 30, 102, 40, 202, 50, 110, 60, 210, 70, 113, 80, 213],
            y: [10, 20, 30, 40, 50, 60, 70, 80], u: [105, 108], v: [205, 208]),
        Row(
            name: "YUYV 3x3 odd size, 10-byte pitch: last chroma row from the last row alone", layout: .yuyv,
            width: 3, height: 3, bytesPerLine: 10,
            bytes: [
                1, 100, 2, 200, 3, 101, pad, 201, pad, pad,
                4, 110, 5, 210, 6, 111, pad, 211, pad, pad,
                7, 120, 8, 220, 9, 121, pad, 221,
            ],
            y: [1, 2, 3, 4, 5, 6, 7, 8, 9], u: [105, 106, 120, 121], v: [205, 206, 220, 221]),
        Row(
            name: "NV12 3x3 packed: chroma rows are the even-rounded width", layout: .nv12, width: 3, height: 3,
            bytesPerLine: 0,
            bytes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 50, 60, 51, 61, 52, 62, 53, 63],
            y: [1, 2, 3, 4, 5, 6, 7, 8, 9], u: [50, 51, 52, 53], v: [60, 61, 62, 63]),
        Row(
            name: "NV12 3x3 with a 6-byte pitch on both planes", layout: .nv12, width: 3, height: 3, bytesPerLine: 6,
            bytes: [
                1, 2, 3, pad, pad, pad, 4, 5, 6, pad, pad, pad, 7, 8, 9, pad, pad, pad,
                50, 60, 51, 61, pad, pad, 52, 62, 53, 63,
            ],
            y: [1, 2, 3, 4, 5, 6, 7, 8, 9], u: [50, 51, 52, 53], v: [60, 61, 62, 63]),
        Row(
            name: "I420 5x3 packed", layout: .i420, width: 5, height: 3, bytesPerLine: 0,
            bytes: Array(1...15) + [50, 51, 52, 53, 54, 55] + [60, 61, 62, 63, 64, 65],
            y: Array(1...15), u: [50, 51, 52, 53, 54, 55], v: [60, 61, 62, 63, 64, 65]),
        Row(
            name: "I420 5x3 with an 8-byte pitch (chroma pitch 4)", layout: .i420, width: 5, height: 3,
            bytesPerLine: 8,
            bytes: [1, 2, 3, 4, 5, pad, pad, pad, 6, 7, 8, 9, 10, pad, pad, pad, 11, 12, 13, 14, 15, pad, pad, pad]
                + [50, 51, 52, pad, 53, 54, 55, pad] + [60, 61, 62, pad, 63, 64, 65],
            y: Array(1...15), u: [50, 51, 52, 53, 54, 55], v: [60, 61, 62, 63, 64, 65]),
    ]

    @Test("exact planes", arguments: rows)
    func exactPlanes(_ row: Row) throws {
        let raw = RawCameraFrame(
            format: CameraFormat(pixelFormat: row.layout, width: row.width, height: row.height, fps: 30),
            bytesPerLine: row.bytesPerLine, bytes: row.bytes, timestampMicros: 1234)
        let frame = try PixelFormatConversion.i420(from: raw)
        #expect(
            frame
                == VideoFrame(width: row.width, height: row.height, y: row.y, u: row.u, v: row.v, timestampMicros: 1234)
        )
    }

    struct ReferenceRow: CustomTestStringConvertible, Sendable {
        var name: String
        var layout: CameraPixelFormat
        var bytesPerLine: Int
        var testDescription: String { name }
    }

    @Test(
        "the 64x48 reference picture survives each layout exactly",
        arguments: [
            ReferenceRow(name: "YUYV packed", layout: .yuyv, bytesPerLine: 128),
            ReferenceRow(name: "YUYV with 16 bytes of padding per row", layout: .yuyv, bytesPerLine: 144),
            ReferenceRow(name: "NV12 packed", layout: .nv12, bytesPerLine: 64),
            ReferenceRow(name: "NV12 with a 96-byte pitch", layout: .nv12, bytesPerLine: 96),
            ReferenceRow(name: "I420 packed", layout: .i420, bytesPerLine: 64),
            ReferenceRow(name: "I420 with an 80-byte pitch", layout: .i420, bytesPerLine: 80),
        ])
    func referencePicture(_ row: ReferenceRow) throws {
        let reference = CameraFixtures.reference
        let bytes: [UInt8]
        switch row.layout {
        case .yuyv: bytes = CameraFixtures.yuyv(reference, bytesPerLine: row.bytesPerLine)
        case .nv12: bytes = CameraFixtures.nv12(reference, bytesPerLine: row.bytesPerLine)
        case .i420: bytes = CameraFixtures.i420(reference, bytesPerLine: row.bytesPerLine)
        case .mjpeg: return
        }
        let raw = RawCameraFrame(
            format: CameraFormat(pixelFormat: row.layout, width: 64, height: 48, fps: 30),
            bytesPerLine: row.bytesPerLine, bytes: bytes)
        #expect(try PixelFormatConversion.i420(from: raw) == reference)
    }

    struct BadRow: CustomTestStringConvertible, Sendable {
        var name: String
        var layout: CameraPixelFormat
        var width: Int
        var height: Int
        var bytesPerLine: Int
        var count: Int
        var error: CameraError
        var testDescription: String { name }
    }

    @Test(
        "short buffers, narrow pitches and impossible sizes are rejected by name",
        arguments: [
            BadRow(
                name: "YUYV one byte short", layout: .yuyv, width: 4, height: 2, bytesPerLine: 0, count: 15,
                error: .badFrame(reason: "YUYV buffer holds 15 bytes, 4x2 needs 16")),
            BadRow(
                name: "YUYV pitch narrower than a row", layout: .yuyv, width: 4, height: 2, bytesPerLine: 6, count: 64,
                error: .badFrame(reason: "YUYV row pitch 6 bytes is less than the 8 a 4-pixel row needs")),
            BadRow(
                name: "YUYV empty buffer", layout: .yuyv, width: 640, height: 480, bytesPerLine: 1280, count: 0,
                error: .badFrame(reason: "YUYV buffer holds 0 bytes, 640x480 needs 614400")),
            BadRow(
                name: "NV12 missing its chroma plane", layout: .nv12, width: 4, height: 4, bytesPerLine: 0, count: 16,
                error: .badFrame(reason: "NV12 buffer holds 16 bytes, 4x4 needs 24")),
            BadRow(
                name: "NV12 pitch narrower than a chroma row", layout: .nv12, width: 3, height: 2, bytesPerLine: 3,
                count: 64, error: .badFrame(reason: "NV12 row pitch 3 bytes is less than the 4 a 3-pixel row needs")),
            BadRow(
                name: "I420 missing the last V sample", layout: .i420, width: 4, height: 4, bytesPerLine: 0, count: 23,
                error: .badFrame(reason: "I420 buffer holds 23 bytes, 4x4 needs 24")),
            BadRow(
                name: "I420 pitch narrower than a row", layout: .i420, width: 8, height: 2, bytesPerLine: 6, count: 64,
                error: .badFrame(reason: "I420 row pitch 6 bytes is less than the 8 a 8-pixel row needs")),
            BadRow(
                name: "zero width", layout: .i420, width: 0, height: 2, bytesPerLine: 0, count: 64,
                error: .badFrame(reason: "I420 frame size 0x2 is empty")),
            BadRow(
                name: "wider than 8K", layout: .yuyv, width: 8000, height: 2, bytesPerLine: 0, count: 64,
                error: .badFrame(reason: "YUYV frame 8000x2 is larger than the 7680x4320 limit")),
            BadRow(
                name: "MJPEG handed to the raw converter", layout: .mjpeg, width: 4, height: 4, bytesPerLine: 0,
                count: 64,
                error: .badFrame(reason: "an MJPEG frame needs the JPEG decoder, not a direct conversion")),
        ])
    func rejected(_ row: BadRow) {
        let raw = RawCameraFrame(
            format: CameraFormat(pixelFormat: row.layout, width: row.width, height: row.height, fps: 30),
            bytesPerLine: row.bytesPerLine, bytes: [UInt8](repeating: 7, count: row.count))
        #expect(throws: row.error) { try PixelFormatConversion.i420(from: raw) }
    }

    @Test(
        "fourcc codes map both ways",
        arguments: [
            ("YUYV", CameraPixelFormat.yuyv), ("NV12", .nv12), ("YU12", .i420), ("MJPG", .mjpeg),
        ])
    func fourcc(_ text: String, _ format: CameraPixelFormat) {
        #expect(fourCharacterText(format.fourcc) == text)
        #expect(CameraPixelFormat(fourcc: format.fourcc) == format)
    }

    @Test("JPEG is MJPEG, H264 is not usable")
    func otherCodes() {
        #expect(CameraPixelFormat(fourcc: fourCharacterCode("JPEG")) == .mjpeg)
        #expect(CameraPixelFormat(fourcc: fourCharacterCode("H264")) == nil)
        #expect(fourCharacterText(0x0000_4142) == "BA??")
    }
}
