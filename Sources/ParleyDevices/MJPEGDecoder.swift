import CTurboJPEG
import ParleyMedia

/// Decodes Motion-JPEG camera frames to I420 with libturbojpeg. Owns one decompressor (freed in `deinit`); use it
/// from one thread at a time.
///
/// A 4:2:0 JPEG (what webcams send) is decoded straight into the frame's planes, without colour conversion or
/// upsampling. Other subsamplings (4:2:2, 4:4:4, 4:4:0, 4:1:1, greyscale) are decoded to their own planes and the
/// chroma averaged (or, for greyscale, set neutral) to 4:2:0. The YCbCr values are kept as the JPEG holds them.
public final class MJPEGDecoder {
    /// Largest picture accepted, in each direction; bigger headers are rejected before anything is allocated.
    public static let maximumWidth = PixelFormatConversion.maximumWidth
    /// Largest picture height accepted.
    public static let maximumHeight = PixelFormatConversion.maximumHeight

    private var handle: tjhandle

    /// A decoder; fails only when libturbojpeg cannot allocate one.
    public init() throws(CameraError) {
        guard let handle = tjInitDecompress() else {
            throw .failed(name: "MJPEG decoder", call: "tjInitDecompress", reason: String(cString: tjGetErrorStr2(nil)))
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// Decodes one JPEG picture. Empty, non-JPEG, truncated, oversized and CMYK input is `CameraError.badFrame`
    /// saying which.
    public func decode(_ jpeg: [UInt8], timestampMicros: Int64 = 0) throws(CameraError) -> VideoFrame {
        guard jpeg.count >= 4 else {
            throw .badFrame(reason: "MJPEG frame of \(jpeg.count) bytes is too short to be a JPEG")
        }
        guard jpeg[0] == 0xFF, jpeg[1] == 0xD8 else {
            let start = jpeg.prefix(2).map { String($0, radix: 16, uppercase: true) }.joined(separator: " ")
            throw .badFrame(reason: "MJPEG frame does not start with a JPEG start-of-image marker (starts \(start))")
        }
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colourspace: Int32 = 0
        let header = jpeg.withUnsafeBufferPointer { buffer in
            tjDecompressHeader3(
                handle, buffer.baseAddress, UInt(buffer.count), &width, &height, &subsampling, &colourspace)
        }
        guard header == 0 else { throw failure("JPEG header") }
        let w = Int(width)
        let h = Int(height)
        guard w > 0, h > 0 else {
            throw .badFrame(reason: "JPEG has no start-of-frame header (no picture in \(jpeg.count) bytes)")
        }
        guard w <= Self.maximumWidth, h <= Self.maximumHeight else {
            throw .badFrame(
                reason: "JPEG is \(w)x\(h), outside the 1x1 to \(Self.maximumWidth)x\(Self.maximumHeight) limit")
        }
        guard colourspace != Int32(TJCS_CMYK.rawValue), colourspace != Int32(TJCS_YCCK.rawValue) else {
            throw .badFrame(reason: "CMYK JPEG pictures are not camera frames")
        }
        var frame: VideoFrame
        if subsampling == Int32(TJSAMP_420.rawValue) {
            frame = try decode420(jpeg, width: w, height: h)
        } else {
            frame = try decodeOther(jpeg, width: w, height: h, subsampling: subsampling)
        }
        frame.timestampMicros = timestampMicros
        return frame
    }

    /// Decodes into planes of the JPEG's own subsampling (luma, then both chroma planes unless greyscale), so 4:2:0
    /// lands directly in the frame's layout.
    private func decodePlanes(
        _ jpeg: [UInt8], width: Int, height: Int, subsampling: Int32
    ) throws(CameraError) -> (y: [UInt8], u: [UInt8], v: [UInt8]) {
        let grey = subsampling == Int32(TJSAMP_GRAY.rawValue)
        func planeSize(_ component: Int32) -> Int {
            Int(tjPlaneWidth(component, Int32(width), subsampling))
                * Int(tjPlaneHeight(component, Int32(height), subsampling))
        }
        var y = [UInt8](repeating: 0, count: planeSize(0))
        var u = [UInt8](repeating: 0, count: grey ? 0 : planeSize(1))
        var v = [UInt8](repeating: 0, count: grey ? 0 : planeSize(2))
        let result = jpeg.withUnsafeBufferPointer { source in
            y.withUnsafeMutableBufferPointer { y in
                u.withUnsafeMutableBufferPointer { u in
                    v.withUnsafeMutableBufferPointer { v in
                        var pointers: [UnsafeMutablePointer<UInt8>?] = [
                            y.baseAddress, grey ? nil : u.baseAddress, grey ? nil : v.baseAddress,
                        ]
                        return pointers.withUnsafeMutableBufferPointer { pointers in
                            tjDecompressToYUVPlanes(
                                handle, source.baseAddress, UInt(source.count), pointers.baseAddress, Int32(width), nil,
                                Int32(height), TJFLAG_LIMITSCANS)
                        }
                    }
                }
            }
        }
        guard result == 0 else { throw failure("JPEG decode") }
        return (y, u, v)
    }

    private func decode420(_ jpeg: [UInt8], width: Int, height: Int) throws(CameraError) -> VideoFrame {
        let planes = try decodePlanes(jpeg, width: width, height: height, subsampling: Int32(TJSAMP_420.rawValue))
        return VideoFrame(width: width, height: height, y: planes.y, u: planes.u, v: planes.v)
    }

    /// Other subsamplings: chroma planes averaged over the area each 4:2:0 sample covers.
    private func decodeOther(
        _ jpeg: [UInt8], width: Int, height: Int, subsampling: Int32
    ) throws(CameraError) -> VideoFrame {
        let planes = try decodePlanes(jpeg, width: width, height: height, subsampling: subsampling)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        if subsampling == Int32(TJSAMP_GRAY.rawValue) {
            return VideoFrame(
                width: width, height: height, y: planes.y,
                u: [UInt8](repeating: 128, count: chromaWidth * chromaHeight),
                v: [UInt8](repeating: 128, count: chromaWidth * chromaHeight))
        }
        let sourceWidth = Int(tjPlaneWidth(1, Int32(width), subsampling))
        let sourceHeight = Int(tjPlaneHeight(1, Int32(height), subsampling))
        // Luma pixels per chroma sample in the JPEG: 1 (4:4:4), 2 (4:2:2, 4:4:0 vertically) or 4 (4:1:1).
        let stepX = max(1, (width + sourceWidth - 1) / sourceWidth)
        let stepY = max(1, (height + sourceHeight - 1) / sourceHeight)
        func resample(_ plane: [UInt8]) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
            for row in 0..<chromaHeight {
                let top = min(2 * row / stepY, sourceHeight - 1)
                let bottom = min((2 * row + 1) / stepY, sourceHeight - 1)
                for column in 0..<chromaWidth {
                    let left = min(2 * column / stepX, sourceWidth - 1)
                    let right = min((2 * column + 1) / stepX, sourceWidth - 1)
                    let sum =
                        Int(plane[top * sourceWidth + left]) + Int(plane[top * sourceWidth + right])
                        + Int(plane[bottom * sourceWidth + left]) + Int(plane[bottom * sourceWidth + right])
                    out[row * chromaWidth + column] = UInt8((sum + 2) / 4)
                }
            }
            return out
        }
        return VideoFrame(width: width, height: height, y: planes.y, u: resample(planes.u), v: resample(planes.v))
    }

    /// The error for a failed libturbojpeg call, with its message. libjpeg-turbo 2.1 can leave a decompressor that
    /// failed mid-header unable to read the next good picture, so the handle is replaced (only bad frames pay).
    private func failure(_ stage: String) -> CameraError {
        let error = CameraError.badFrame(reason: "\(stage): " + String(cString: tjGetErrorStr2(handle)))
        if let fresh = tjInitDecompress() {
            tjDestroy(handle)
            handle = fresh
        }
        return error
    }
}
