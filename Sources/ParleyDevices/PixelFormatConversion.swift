import ParleyMedia

/// Direct conversions of raw camera layouts to I420 `VideoFrame`s: no decode, only copying and chroma averaging.
///
/// `bytesPerLine` is the driver's row pitch (V4L2 `bytesperline`) of the first plane; 0 means tightly packed. Every
/// size is checked before reading, and a buffer too short for its picture is `CameraError.badFrame` saying by how much.
public enum PixelFormatConversion {
    /// Largest picture accepted from a camera, in each direction (8K UHD).
    public static let maximumWidth = 7680
    /// Largest picture height accepted from a camera.
    public static let maximumHeight = 4320

    /// Converts one raw (uncompressed) frame; MJPEG frames go through `MJPEGDecoder` instead.
    public static func i420(from frame: RawCameraFrame) throws(CameraError) -> VideoFrame {
        let format = frame.format
        var picture: VideoFrame
        switch format.pixelFormat {
        case .yuyv:
            picture = try fromYUYV(
                frame.bytes, width: format.width, height: format.height, bytesPerLine: frame.bytesPerLine)
        case .nv12:
            picture = try fromNV12(
                frame.bytes, width: format.width, height: format.height, bytesPerLine: frame.bytesPerLine)
        case .i420:
            picture = try fromI420(
                frame.bytes, width: format.width, height: format.height, bytesPerLine: frame.bytesPerLine)
        case .mjpeg:
            throw .badFrame(reason: "an MJPEG frame needs the JPEG decoder, not a direct conversion")
        }
        picture.timestampMicros = frame.timestampMicros
        return picture
    }

    /// Packed 4:2:2 (`Y0 U Y1 V`) to I420: luma copied, each chroma sample the rounded mean of the two rows it covers.
    public static func fromYUYV(
        _ bytes: [UInt8], width: Int, height: Int, bytesPerLine: Int = 0
    ) throws(CameraError) -> VideoFrame {
        try checkSize("YUYV", width, height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        let rowBytes = chromaWidth * 4
        let stride = bytesPerLine == 0 ? rowBytes : bytesPerLine
        try checkStride("YUYV", stride, minimum: rowBytes, width: width)
        try checkLength("YUYV", bytes.count, needed: stride * (height - 1) + rowBytes, width, height)
        var y = [UInt8](repeating: 0, count: width * height)
        var u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var v = u
        bytes.withUnsafeBufferPointer { source in
            y.withUnsafeMutableBufferPointer { y in
                for row in 0..<height {
                    let line = row * stride
                    for column in 0..<width { y[row * width + column] = source[line + 2 * column] }
                }
            }
            u.withUnsafeMutableBufferPointer { u in
                v.withUnsafeMutableBufferPointer { v in
                    for chromaRow in 0..<chromaHeight {
                        let top = 2 * chromaRow * stride
                        let bottom = min(2 * chromaRow + 1, height - 1) * stride
                        for column in 0..<chromaWidth {
                            let index = chromaRow * chromaWidth + column
                            u[index] = mean(source[top + 4 * column + 1], source[bottom + 4 * column + 1])
                            v[index] = mean(source[top + 4 * column + 3], source[bottom + 4 * column + 3])
                        }
                    }
                }
            }
        }
        return VideoFrame(width: width, height: height, y: y, u: u, v: v)
    }

    /// NV12 (a luma plane, then interleaved `U V` rows) to I420: copies only. Both planes use `bytesPerLine`; packed
    /// means `width` for luma and the even-rounded width for the chroma rows.
    public static func fromNV12(
        _ bytes: [UInt8], width: Int, height: Int, bytesPerLine: Int = 0
    ) throws(CameraError) -> VideoFrame {
        try checkSize("NV12", width, height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        let lumaStride = bytesPerLine == 0 ? width : bytesPerLine
        let chromaStride = bytesPerLine == 0 ? 2 * chromaWidth : bytesPerLine
        try checkStride("NV12", bytesPerLine == 0 ? chromaStride : lumaStride, minimum: 2 * chromaWidth, width: width)
        let chromaStart = lumaStride * height
        try checkLength(
            "NV12", bytes.count, needed: chromaStart + chromaStride * (chromaHeight - 1) + 2 * chromaWidth, width,
            height)
        var y = [UInt8](repeating: 0, count: width * height)
        var u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var v = u
        bytes.withUnsafeBufferPointer { source in
            copyPlane(source, from: 0, stride: lumaStride, into: &y, width: width, height: height)
            u.withUnsafeMutableBufferPointer { u in
                v.withUnsafeMutableBufferPointer { v in
                    for row in 0..<chromaHeight {
                        let line = chromaStart + row * chromaStride
                        for column in 0..<chromaWidth {
                            u[row * chromaWidth + column] = source[line + 2 * column]
                            v[row * chromaWidth + column] = source[line + 2 * column + 1]
                        }
                    }
                }
            }
        }
        return VideoFrame(width: width, height: height, y: y, u: u, v: v)
    }

    /// I420 (V4L2 `YU12`: Y, U, V planes) to a packed `VideoFrame`. The chroma planes' pitch is half the luma pitch
    /// rounded up, as V4L2 defines it.
    public static func fromI420(
        _ bytes: [UInt8], width: Int, height: Int, bytesPerLine: Int = 0
    ) throws(CameraError) -> VideoFrame {
        try checkSize("I420", width, height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        let lumaStride = bytesPerLine == 0 ? width : bytesPerLine
        let chromaStride = bytesPerLine == 0 ? chromaWidth : (bytesPerLine + 1) / 2
        try checkStride("I420", lumaStride, minimum: width, width: width)
        let uStart = lumaStride * height
        let vStart = uStart + chromaStride * chromaHeight
        try checkLength(
            "I420", bytes.count, needed: vStart + chromaStride * (chromaHeight - 1) + chromaWidth, width, height)
        var y = [UInt8](repeating: 0, count: width * height)
        var u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var v = u
        bytes.withUnsafeBufferPointer { source in
            copyPlane(source, from: 0, stride: lumaStride, into: &y, width: width, height: height)
            copyPlane(source, from: uStart, stride: chromaStride, into: &u, width: chromaWidth, height: chromaHeight)
            copyPlane(source, from: vStart, stride: chromaStride, into: &v, width: chromaWidth, height: chromaHeight)
        }
        return VideoFrame(width: width, height: height, y: y, u: u, v: v)
    }

    // MARK: - Checks and helpers

    static func checkSize(_ layout: String, _ width: Int, _ height: Int) throws(CameraError) {
        guard width > 0, height > 0 else {
            throw .badFrame(reason: "\(layout) frame size \(width)x\(height) is empty")
        }
        guard width <= maximumWidth, height <= maximumHeight else {
            throw .badFrame(
                reason: "\(layout) frame \(width)x\(height) is larger than the \(maximumWidth)x\(maximumHeight) limit")
        }
    }

    private static func checkStride(_ layout: String, _ stride: Int, minimum: Int, width: Int) throws(CameraError) {
        guard stride >= minimum else {
            throw .badFrame(
                reason: "\(layout) row pitch \(stride) bytes is less than the \(minimum) a \(width)-pixel row needs")
        }
    }

    private static func checkLength(
        _ layout: String, _ count: Int, needed: Int, _ width: Int, _ height: Int
    ) throws(CameraError) {
        guard count >= needed else {
            throw .badFrame(reason: "\(layout) buffer holds \(count) bytes, \(width)x\(height) needs \(needed)")
        }
    }

    private static func copyPlane(
        _ source: UnsafeBufferPointer<UInt8>, from start: Int, stride: Int, into plane: inout [UInt8], width: Int,
        height: Int
    ) {
        plane.withUnsafeMutableBufferPointer { target in
            for row in 0..<height {
                let from = source.baseAddress! + start + row * stride
                (target.baseAddress! + row * width).update(from: from, count: width)
            }
        }
    }

    @inline(__always)
    private static func mean(_ a: UInt8, _ b: UInt8) -> UInt8 {
        UInt8((UInt16(a) + UInt16(b) + 1) >> 1)
    }
}
