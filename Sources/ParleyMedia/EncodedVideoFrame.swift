/// One compressed VP8 frame as it leaves the encoder (or arrives for the decoder).
public struct EncodedVideoFrame: Sendable, Equatable {
    /// The VP8 bitstream of exactly one frame.
    public var bytes: [UInt8]
    /// True when the frame decodes without any earlier frame.
    public var isKeyframe: Bool
    /// Presentation time in microseconds, copied from the source frame.
    public var timestampMicros: Int64
    /// Picture width in pixels.
    public var width: Int
    /// Picture height in pixels.
    public var height: Int
    /// Temporal layer (0 base, 1 droppable enhancement); always 0 with one layer.
    public var temporalLayer: Int

    /// A frame record; `temporalLayer` defaults to the base layer.
    public init(
        bytes: [UInt8], isKeyframe: Bool, timestampMicros: Int64, width: Int, height: Int,
        temporalLayer: Int = 0
    ) {
        self.bytes = bytes
        self.isKeyframe = isKeyframe
        self.timestampMicros = timestampMicros
        self.width = width
        self.height = height
        self.temporalLayer = temporalLayer
    }
}

/// What the first bytes of a VP8 frame say (RFC 6386 section 9.1), read without decoding.
public struct VP8FrameHeader: Sendable, Equatable {
    /// True for a keyframe.
    public var isKeyframe: Bool
    /// Width and height, present only in keyframes.
    public var size: (width: Int, height: Int)?

    /// Parses the frame tag (and the keyframe start code and size); nil when the bytes cannot be a VP8 frame.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 3 else { return nil }
        isKeyframe = bytes[0] & 1 == 0
        guard isKeyframe else {
            size = nil
            return
        }
        // Keyframes carry a 3-byte start code then 14-bit width and height (top 2 bits are scaling).
        guard bytes.count >= 10, bytes[3] == 0x9D, bytes[4] == 0x01, bytes[5] == 0x2A else { return nil }
        let width = Int(bytes[6]) | (Int(bytes[7] & 0x3F) << 8)
        let height = Int(bytes[8]) | (Int(bytes[9] & 0x3F) << 8)
        size = (width, height)
    }

    public static func == (lhs: VP8FrameHeader, rhs: VP8FrameHeader) -> Bool {
        lhs.isKeyframe == rhs.isKeyframe && lhs.size?.width == rhs.size?.width && lhs.size?.height == rhs.size?.height
    }
}
