import Foundation
import ParleyMedia

/// Reads the committed camera fixtures (Fixtures/ is excluded from the build and found through #filePath).
enum CameraFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures")

    static func bytes(_ name: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
            fatalError("missing fixture \(name): regenerate with Fixtures/make-camera-fixtures.c")
        }
        return [UInt8](data)
    }

    /// The 64x48 I420 reference picture the JPEG fixtures were made from.
    static let reference: VideoFrame = {
        let raw = bytes("camera-reference-64x48.i420")
        return VideoFrame(
            width: 64, height: 48, y: Array(raw[0..<3072]), u: Array(raw[3072..<3840]), v: Array(raw[3840..<4608]))
    }()

    /// `frame` packed as YUYV rows of `bytesPerLine` bytes (padding 0xEE), chroma repeated on both rows it covers.
    static func yuyv(_ frame: VideoFrame, bytesPerLine: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: bytesPerLine * frame.height)
        for row in 0..<frame.height {
            for column in 0..<frame.width {
                let pair = column / 2
                let chroma = (row / 2) * frame.chromaWidth + pair
                out[row * bytesPerLine + 2 * column] = frame.y[row * frame.width + column]
                out[row * bytesPerLine + 4 * pair + 1] = frame.u[chroma]
                out[row * bytesPerLine + 4 * pair + 3] = frame.v[chroma]
            }
        }
        return out
    }

    /// `frame` packed as NV12 with both planes' rows `bytesPerLine` bytes long (padding 0xEE).
    static func nv12(_ frame: VideoFrame, bytesPerLine: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: bytesPerLine * (frame.height + frame.chromaHeight))
        for row in 0..<frame.height {
            for column in 0..<frame.width { out[row * bytesPerLine + column] = frame.y[row * frame.width + column] }
        }
        for row in 0..<frame.chromaHeight {
            for column in 0..<frame.chromaWidth {
                let base = (frame.height + row) * bytesPerLine + 2 * column
                out[base] = frame.u[row * frame.chromaWidth + column]
                out[base + 1] = frame.v[row * frame.chromaWidth + column]
            }
        }
        return out
    }

    /// `frame` as V4L2 YU12 with luma rows of `bytesPerLine` and chroma rows of half that (padding 0xEE).
    static func i420(_ frame: VideoFrame, bytesPerLine: Int) -> [UInt8] {
        let chromaStride = (bytesPerLine + 1) / 2
        var out = [UInt8](repeating: 0xEE, count: bytesPerLine * frame.height + 2 * chromaStride * frame.chromaHeight)
        for row in 0..<frame.height {
            for column in 0..<frame.width { out[row * bytesPerLine + column] = frame.y[row * frame.width + column] }
        }
        let uStart = bytesPerLine * frame.height
        let vStart = uStart + chromaStride * frame.chromaHeight
        for row in 0..<frame.chromaHeight {
            for column in 0..<frame.chromaWidth {
                out[uStart + row * chromaStride + column] = frame.u[row * frame.chromaWidth + column]
                out[vStart + row * chromaStride + column] = frame.v[row * frame.chromaWidth + column]
            }
        }
        return out
    }
}

enum VideoFrameHelper {
    /// A frame with `v` equal to `u`.
    static func make(width: Int, height: Int, y: [UInt8], u: [UInt8]) -> VideoFrame {
        VideoFrame(width: width, height: height, y: y, u: u, v: u)
    }
}
