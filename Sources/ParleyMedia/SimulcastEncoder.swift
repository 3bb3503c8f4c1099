/// Two VP8 encoders fed from one camera: the full picture (high layer) and a box-downscaled copy (low layer), for a
/// relay that forwards whichever each receiver can take. Not thread-safe: one owner calls it.
public final class SimulcastEncoder {
    /// What one camera frame became.
    public struct Output: Sendable, Equatable {
        /// The high layer's frame (empty if rate control dropped it).
        public var high: [EncodedVideoFrame]
        /// The low layer's frame (empty if dropped or the layer is paused).
        public var low: [EncodedVideoFrame]
    }

    /// Current settings of both layers.
    public var layers: SimulcastLayers { SimulcastLayers(high: high.config, low: low.config) }
    /// When false the low layer is skipped (no receiver needs it): no scaling, no encoding.
    public var lowLayerEnabled = true {
        didSet { if lowLayerEnabled, !oldValue { lowNeedsKeyframe = true } }
    }

    private let high: VP8Encoder
    private let low: VP8Encoder
    private var lowNeedsKeyframe = false

    /// Opens both encoders; throws `CodecError` naming the layer setting that is wrong.
    public init(_ layers: SimulcastLayers) throws {
        high = try VP8Encoder(layers.high)
        low = try VP8Encoder(layers.low)
    }

    /// Encodes one camera frame (at the high layer's size) into both layers.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false) throws -> Output {
        let highFrames = try high.encode(frame, forceKeyframe: forceKeyframe)
        guard lowLayerEnabled else { return Output(high: highFrames, low: []) }
        let small = frame.scaled(width: low.config.width, height: low.config.height)
        let lowFrames = try low.encode(small, forceKeyframe: forceKeyframe || lowNeedsKeyframe)
        lowNeedsKeyframe = false
        return Output(high: highFrames, low: lowFrames)
    }

    /// Changes the layers' rates (kbit/s) from the next frame on.
    public func setBitrate(highKbps: Int, lowKbps: Int) throws {
        try high.setBitrate(kbps: highKbps)
        try low.setBitrate(kbps: lowKbps)
    }

    /// Changes the camera size; the low layer keeps its ratio to the high one. Both restart with keyframes.
    public func reconfigure(width: Int, height: Int) throws {
        let divisorX = max(1, high.config.width / max(1, low.config.width))
        let divisorY = max(1, high.config.height / max(1, low.config.height))
        try high.reconfigure(width: width, height: height)
        try low.reconfigure(width: max(2, (width / divisorX) & ~1), height: max(2, (height / divisorY) & ~1))
    }
}

extension SimulcastLayers {
    /// Layers from two explicit configurations.
    public init(high: VP8EncoderConfig, low: VP8EncoderConfig) {
        self.init(width: high.width, height: high.height, highKbps: high.targetBitrateKbps)
        self.high = high
        self.low = low
    }
}
