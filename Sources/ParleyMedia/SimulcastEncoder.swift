/// The layers one camera is sent in: the full picture, then halves, largest first (simulcast).
public struct SimulcastPlan: Sendable, Equatable {
    /// Each layer's encoder settings, largest first.
    public var layers: [VP8EncoderConfig]

    /// The smallest layer worth sending: below it a tile is better served by scaling a larger one down.
    public static let smallestLayer = (width: 160, height: 90)
    /// At most this many layers.
    public static let maxLayers = 3

    /// Explicit layers.
    public init(layers: [VP8EncoderConfig]) {
        precondition(!layers.isEmpty, "a simulcast plan has at least one layer")
        self.layers = layers
    }

    /// Layers for a camera: the full size at `kbps`, then half (a third of the rate) and a quarter of the size
    /// (a tenth of the rate) while they are at least 160x90: 640x360 becomes 640x360, 320x180 and 160x90; 160x120
    /// stays one layer. Every layer is written in `bitstreamProfile` (VP8's version, 0...3).
    public init(
        width: Int, height: Int, kbps: Int, framesPerSecond: Int, cpuUsed: Int = VP8EncoderConfig.callSpeed,
        bitstreamProfile: Int = VP8EncoderConfig.sharpProfile
    ) {
        var layers: [VP8EncoderConfig] = []
        for index in 0..<Self.maxLayers {
            let divisor = 1 << index
            let layerWidth = index == 0 ? width : (width / divisor) & ~1
            let layerHeight = index == 0 ? height : (height / divisor) & ~1
            if index > 0, layerWidth < Self.smallestLayer.width || layerHeight < Self.smallestLayer.height { break }
            let rate = Self.layerKbps(kbps, layer: index)
            layers.append(
                VP8EncoderConfig(
                    width: layerWidth, height: layerHeight, targetBitrateKbps: rate, framesPerSecond: framesPerSecond,
                    cpuUsed: cpuUsed, bitstreamProfile: bitstreamProfile))
        }
        self.init(layers: layers)
    }

    /// Layer `layer`'s rate when the full size gets `kbps`: all of it, a third, a tenth (with floors). A smaller
    /// picture costs more bits per pixel for the same look (libwebrtc's simulcast table gives its half-size layers
    /// about a third too); at a quarter, the half layer a 1:1 tile gets drew 2.15 dB under the full layer in
    /// 24-bit colour, at a third 1.47 (`parley-bench simulcast`).
    public static func layerKbps(_ kbps: Int, layer: Int) -> Int {
        [kbps, max(50, kbps / 3), max(30, kbps / 10)][min(max(layer, 0), maxLayers - 1)]
    }

    /// The least the full layer is set to however little room there is (the smaller layers keep their floors).
    public static let leastFullLayerKbps = 50

    /// The full layer's rate (at most `kbps`, the profile's) that makes the `active` layers' rates together fit
    /// `budgetKbps`: the largest such, or `leastFullLayerKbps` when not even that fits.
    public static func fullLayerKbps(fitting budgetKbps: Int, upTo kbps: Int, active: [Bool]) -> Int {
        func total(_ full: Int) -> Int {
            active.indices.reduce(0) { sum, layer in sum + (active[layer] ? layerKbps(full, layer: layer) : 0) }
        }
        let least = min(leastFullLayerKbps, kbps)
        guard total(kbps) > budgetKbps else { return kbps }
        guard total(least) <= budgetKbps else { return least }
        // total(low) fits, total(high) does not; the total never falls as the full layer's rate rises.
        var (low, high) = (least, kbps)
        while high - low > 1 {
            let middle = (low + high) / 2
            if total(middle) <= budgetKbps { low = middle } else { high = middle }
        }
        return low
    }

    /// The plan a call's camera is sent with: every layer, or (`simulcast` false) the full size alone.
    public static func forCall(
        width: Int, height: Int, kbps: Int, framesPerSecond: Int, simulcast: Bool,
        bitstreamProfile: Int = VP8EncoderConfig.sharpProfile
    ) -> SimulcastPlan {
        let full = SimulcastPlan(
            width: width, height: height, kbps: kbps, framesPerSecond: framesPerSecond,
            bitstreamProfile: bitstreamProfile)
        return simulcast ? full : SimulcastPlan(layers: [full.layers[0]])
    }
}

/// One VP8 encoder per simulcast layer, fed from one camera: each frame is scaled down layer by layer (box filter)
/// and encoded in every active layer. A paused layer costs nothing; it restarts with a keyframe, so a receiver can
/// start there. Not thread-safe: one owner calls it.
public final class SimulcastEncoder {
    /// The layers' settings, largest first.
    public var plan: SimulcastPlan { SimulcastPlan(layers: encoders.map(\.config)) }
    /// Which layers are encoded; a layer switched back on starts with a keyframe.
    public private(set) var active: [Bool]

    private var encoders: [VP8Encoder]
    private var keyframeWanted: [Bool]

    /// Opens every layer's encoder (only the largest active); throws `CodecError` naming a wrong setting.
    public init(_ plan: SimulcastPlan) throws {
        encoders = try plan.layers.map { try VP8Encoder($0) }
        active = plan.layers.indices.map { $0 == 0 }
        keyframeWanted = plan.layers.map { _ in true }
    }

    /// How many layers there are.
    public var layerCount: Int { encoders.count }

    /// Sets which layers are encoded (missing flags are off); resumed layers start with a keyframe.
    public func setActive(_ flags: [Bool]) {
        for index in encoders.indices {
            let on = index < flags.count && flags[index]
            if on, !active[index] { keyframeWanted[index] = true }
            active[index] = on
        }
    }

    /// The next frame of `layer` (all layers when nil) is a keyframe.
    public func requestKeyframe(layer: Int? = nil) {
        for index in encoders.indices where layer == nil || layer == index { keyframeWanted[index] = true }
    }

    /// Encodes one camera frame (at the largest layer's size) into every active layer: element `i` holds layer
    /// `i`'s frames (empty when paused or dropped by rate control).
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false) throws -> [[EncodedVideoFrame]] {
        var output = [[EncodedVideoFrame]](repeating: [], count: encoders.count)
        guard let last = active.lastIndex(of: true) else { return output }
        var picture = frame
        for index in 0...last {
            let config = encoders[index].config
            // A full layer shrunk below the next one's size (`resizeFullLayer`): that one scales from the camera.
            if picture.width < config.width || picture.height < config.height { picture = frame }
            if picture.width != config.width || picture.height != config.height {
                picture = picture.scaled(width: config.width, height: config.height)
            }
            guard active[index] else { continue }
            output[index] = try encoders[index].encode(picture, forceKeyframe: forceKeyframe || keyframeWanted[index])
            keyframeWanted[index] = false
        }
        return output
    }

    /// Encodes the full layer at `width`x`height`, at most its planned size (a keyframe follows a change): what a
    /// link too narrow for the planned picture at any quality gets instead of a stalled one.
    public func resizeFullLayer(width: Int, height: Int) throws {
        try encoders[0].reconfigure(width: width, height: height)
    }

    /// Changes every layer's rate: layer `largestLayer`'s to `kbps` (the full layer's, unless the layers above it
    /// are out) and the ones under it in the plan's proportions.
    public func setBitrate(kbps: Int, largestLayer: Int = 0) throws {
        for (index, encoder) in encoders.enumerated() {
            try encoder.setBitrate(kbps: SimulcastPlan.layerKbps(kbps, layer: max(0, index - largestLayer)))
        }
    }
}
