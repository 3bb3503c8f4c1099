/// One picture in planar I420 (YUV 4:2:0): a full-resolution luma plane and two half-resolution chroma planes.
///
/// Planes are tightly packed (stride equals plane width). Odd sizes round the chroma planes up.
public struct VideoFrame: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Luma plane, `width * height` bytes.
    public var y: [UInt8]
    /// Blue-difference chroma plane, `chromaWidth * chromaHeight` bytes.
    public var u: [UInt8]
    /// Red-difference chroma plane, `chromaWidth * chromaHeight` bytes.
    public var v: [UInt8]
    /// Presentation time in microseconds since the source started.
    public var timestampMicros: Int64

    /// Width of each chroma plane.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Height of each chroma plane.
    public var chromaHeight: Int { (height + 1) / 2 }

    /// A frame from existing planes; the plane sizes must match the dimensions.
    public init(width: Int, height: Int, y: [UInt8], u: [UInt8], v: [UInt8], timestampMicros: Int64 = 0) {
        precondition(width > 0 && height > 0, "frame size must be positive")
        precondition(y.count == width * height, "luma plane holds \(y.count) bytes, expected \(width * height)")
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        precondition(u.count == chroma && v.count == chroma, "chroma planes must hold \(chroma) bytes each")
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
        self.timestampMicros = timestampMicros
    }

    /// A frame filled with one colour given as Y, U and V values.
    public init(
        width: Int, height: Int, fillY: UInt8, fillU: UInt8 = 128, fillV: UInt8 = 128, timestampMicros: Int64 = 0
    ) {
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        self.init(
            width: width, height: height,
            y: [UInt8](repeating: fillY, count: width * height),
            u: [UInt8](repeating: fillU, count: chroma),
            v: [UInt8](repeating: fillV, count: chroma),
            timestampMicros: timestampMicros
        )
    }
}
