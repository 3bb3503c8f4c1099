import ParleyMedia

/// Turns camera frames of any supported layout into I420 `VideoFrame`s of one profile size: converted (MJPEG decoded),
/// cropped to the profile's aspect ratio around the centre (a 4:3 camera in a 16:9 call loses a strip at top and
/// bottom instead of being squashed), then scaled. Owns the JPEG decoder; use from one thread.
public final class CameraFrameConverter {
    /// Width of the frames produced.
    public let width: Int
    /// Height of the frames produced.
    public let height: Int
    private var decoder: MJPEGDecoder?

    /// A converter producing `width`x`height` frames.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "target size must be positive")
        self.width = width
        self.height = height
    }

    /// Converts, crops and scales one frame, keeping its timestamp. A frame that cannot be read is `badFrame`.
    public func convert(_ raw: RawCameraFrame) throws(CameraError) -> VideoFrame {
        let picture: VideoFrame
        if raw.format.pixelFormat == .mjpeg {
            if decoder == nil { decoder = try MJPEGDecoder() }
            picture = try decoder!.decode(raw.bytes, timestampMicros: raw.timestampMicros)
        } else {
            picture = try PixelFormatConversion.i420(from: raw)
        }
        return Self.cropToAspect(picture, width: width, height: height).scaled(width: width, height: height)
    }

    /// The centre of `frame` with the aspect ratio of `width`x`height` (within a pixel), cut on even pixel
    /// boundaries so the chroma planes stay aligned; `frame` itself when it already has that shape.
    public static func cropToAspect(_ frame: VideoFrame, width: Int, height: Int) -> VideoFrame {
        // Compare frame.width / frame.height with width / height without division.
        let frameWide = frame.width * height
        let targetWide = width * frame.height
        var cropWidth = frame.width
        var cropHeight = frame.height
        if frameWide > targetWide {
            cropWidth = max(2, (frame.height * width / height) & ~1)
        } else if frameWide < targetWide {
            cropHeight = max(2, (frame.width * height / width) & ~1)
        }
        guard cropWidth < frame.width - 1 || cropHeight < frame.height - 1 else { return frame }
        cropWidth = min(cropWidth, frame.width)
        cropHeight = min(cropHeight, frame.height)
        let left = ((frame.width - cropWidth) / 2) & ~1
        let top = ((frame.height - cropHeight) / 2) & ~1
        func cut(_ plane: [UInt8], _ planeWidth: Int, _ x: Int, _ y: Int, _ w: Int, _ h: Int) -> [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(w * h)
            for row in y..<(y + h) {
                out.append(contentsOf: plane[(row * planeWidth + x)..<(row * planeWidth + x + w)])
            }
            return out
        }
        let chromaWidth = (cropWidth + 1) / 2
        let chromaHeight = (cropHeight + 1) / 2
        return VideoFrame(
            width: cropWidth, height: cropHeight,
            y: cut(frame.y, frame.width, left, top, cropWidth, cropHeight),
            u: cut(frame.u, frame.chromaWidth, left / 2, top / 2, chromaWidth, chromaHeight),
            v: cut(frame.v, frame.chromaWidth, left / 2, top / 2, chromaWidth, chromaHeight),
            timestampMicros: frame.timestampMicros)
    }
}
