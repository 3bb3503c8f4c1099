#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Settings for one VP8 encoder; the defaults suit a call (realtime, CBR, error resilient, one thread on 2 cores).
public struct VP8EncoderConfig: Sendable, Equatable {
    /// Picture width in pixels.
    public var width: Int
    /// Picture height in pixels.
    public var height: Int
    /// Target bitrate in **kilobits** per second (600 means 600 000 bit/s).
    public var targetBitrateKbps: Int
    /// Nominal frame rate, used by rate control when timestamps are irregular.
    public var framesPerSecond: Int
    /// libvpx `cpu-used` speed: negative values (-16...-1) fix the speed; -6 to -8 suit realtime calls.
    public var cpuUsed: Int

    /// The speed calls encode at: the fastest fixed one. Every receiver shows the picture in character cells, at
    /// most about 200x120 pixels; scaled that far, speed -16 is within 2.5 dB of -6 (47 vs 49.7 dB PSNR at
    /// 640x480, 1000 kbit/s, 4x smaller) and costs half the encoding time (docs/benchmarks.md, "Call").
    public static let callSpeed = -16
    /// Encoder threads; `defaultThreads` gives 1 on small machines.
    public var threads: Int
    /// Error-resilient bitstream (no cross-frame entropy dependency), so a lost frame damages less.
    public var errorResilient: Bool
    /// Longest run of frames without a keyframe; keyframes also come on demand.
    public var maxKeyframeInterval: Int
    /// Temporal layers: 1 (every frame alike) or 2 (odd frames are droppable, layer 1).
    public var temporalLayers: Int
    /// Best quantizer rate control may use (0...63).
    public var minQuantizer: Int
    /// Worst quantizer rate control may use (0...63).
    public var maxQuantizer: Int
    /// Buffer fullness (percent) under which libvpx drops frames to hold the rate; 0 never drops.
    public var frameDropThreshold: Int
    /// Denoiser strength 0 (off) ... 6; helps noisy webcams at low rates.
    public var noiseSensitivity: Int
    /// The VP8 bitstream version the encoder writes (RFC 6386 section 9.1), 0...3: 0 predicts motion with the
    /// six-tap filter and smooths block edges with the normal loop filter; 2 (`lightProfile`) uses the bilinear
    /// filter and no loop filter, cheaper to encode and decode and about 1 dB less sharp. Every decoder reads all four.
    public var bitstreamProfile: Int

    /// VP8's bitstream versions: what `bitstreamProfile` may be.
    public static let bitstreamProfiles = 0...3
    /// The sharpest bitstream version, and Parley's default.
    public static let sharpProfile = 0
    /// The cheap bitstream version baresip sends: a fifth less decoding, a tenth less encoding, ~1.1 dB PSNR
    /// less at every size a terminal shows (docs/benchmarks.md, "Call").
    public static let lightProfile = 2

    /// A configuration with call defaults for the given size and rate.
    public init(
        width: Int, height: Int, targetBitrateKbps: Int, framesPerSecond: Int = 30, cpuUsed: Int = -6,
        threads: Int? = nil, errorResilient: Bool = true, maxKeyframeInterval: Int = 300, temporalLayers: Int = 1,
        bitstreamProfile: Int = VP8EncoderConfig.sharpProfile
    ) {
        self.width = width
        self.height = height
        self.targetBitrateKbps = targetBitrateKbps
        self.framesPerSecond = framesPerSecond
        self.cpuUsed = cpuUsed
        self.threads = threads ?? Self.defaultThreads(width: width, height: height)
        self.errorResilient = errorResilient
        self.maxKeyframeInterval = maxKeyframeInterval
        self.temporalLayers = temporalLayers
        self.minQuantizer = 2
        self.maxQuantizer = 56
        self.frameDropThreshold = 0
        self.noiseSensitivity = 0
        self.bitstreamProfile = bitstreamProfile
    }

    /// Encoder threads for a picture size on this machine: 1 unless the picture is large and cores are spare.
    public static func defaultThreads(width: Int, height: Int, cores: Int = onlineProcessorCount) -> Int {
        // Same shape as WebRTC's choice: threads only pay off on big pictures with cores to spare.
        if width * height >= 1280 * 720, cores > 4 { return 3 }
        if width * height >= 640 * 360, cores > 2 { return 2 }
        return 1
    }

    /// Processors online now.
    public static var onlineProcessorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Throws `CodecError.invalidSetting` naming the first setting out of range.
    public func validate() throws {
        func check(_ name: String, _ value: Int, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw CodecError.invalidSetting(
                    name: name, value: String(value), allowed: "\(range.lowerBound)...\(range.upperBound)")
            }
        }
        try check("width", width, 2...16383)
        try check("height", height, 2...16383)
        try check("target bitrate (kbit/s)", targetBitrateKbps, 10...100_000)
        try check("frame rate", framesPerSecond, 1...240)
        try check("cpu-used", cpuUsed, -16...16)
        try check("threads", threads, 1...64)
        try check("max keyframe interval (frames)", maxKeyframeInterval, 1...100_000)
        try check("temporal layers", temporalLayers, 1...2)
        try check("min quantizer", minQuantizer, 0...63)
        try check("max quantizer", maxQuantizer, minQuantizer...63)
        try check("frame drop threshold (%)", frameDropThreshold, 0...100)
        try check("noise sensitivity", noiseSensitivity, 0...6)
        try check("VP8 bitstream profile", bitstreamProfile, Self.bitstreamProfiles)
    }
}
