import ParleyMedia
import ParleyRoom

/// The camera's rate and picture within the uplink's estimate (docs/network.md): what is left of the estimate once
/// the voice has its share goes to the video layers being sent, the full layer at most at the profile's rate and the
/// others in the plan's proportions. A change of less than 5 % is not passed on (the encoder's rate control would
/// only churn), except back up to the profile's rate. A full layer whose rate is too low for its picture at any
/// quality (VP8 at 640x360 cannot go under about 330 kbit/s: docs/network.md) is sent at half or a quarter of the
/// size instead, so it keeps its frame rate; but only while the link loses packets: delay alone also rises on a busy
/// machine with an idle link (a call's three engines and relay in one test process), and a smaller picture is the
/// costlier mistake.
struct VideoRateSteering: Sendable, Equatable {
    /// What the encoder is told.
    struct Setting: Sendable, Equatable {
        /// The full layer's rate (kbit/s); the others get their share of it.
        var fullLayerKbps: Int
        /// The full layer's picture is the profile's size divided by this: 1, 2 or 4.
        var divisor: Int
        /// The largest layer the uplink carries (`UplinkLayers`): it gets the rate above, as the full layer would,
        /// and the layers under it their shares of it; 0 when the full layer is sent.
        var largestLayer = 0
    }

    /// What the voice takes of the estimate before video: Opus at 32 kbit/s and 50 packets' headers a second.
    static let audioReserveKbps = 50.0
    /// The share of the rest the encoders aim at: headers of the video packets, and the rate control's overshoot.
    static let videoShare = 0.85
    /// The least a picture is sent at, in bits per pixel per frame (640x360 at 30 fps: 415 kbit/s). Measured with
    /// the synthetic camera's noisy picture at VP8's highest quantizer here: 640x360 did not go under 330 kbit/s,
    /// 320x180 under 112, 160x90 under 50, whatever rate it was asked for.
    static let leastBitsPerPixel = 0.06
    /// A larger picture comes back only when its least rate is met with this much to spare (each change costs a
    /// keyframe).
    static let growthMargin = 1.25
    /// The loss (a fraction of the packets of the estimate's last interval) from which a picture may shrink.
    static let shrinkingLoss = 0.02

    /// The profile the camera is sent at when the link allows.
    let profile: VideoProfile
    /// What the encoder was last told.
    private(set) var setting: Setting

    init(profile: VideoProfile) {
        self.profile = profile
        setting = Setting(fullLayerKbps: profile.bitrateKbps, divisor: 1)
    }

    /// The full layer's rate the encoder was last given (the largest sent layer's, when the full layer is out).
    var fullLayerKbps: Int { setting.fullLayerKbps }

    /// The largest layer the encoder was last told the uplink carries.
    var largestLayer: Int { setting.largestLayer }

    /// The full layer's picture size now.
    var fullLayerSize: VideoSize {
        guard setting.divisor > 1 else { return VideoSize(width: profile.width, height: profile.height) }
        return VideoSize(width: (profile.width / setting.divisor) & ~1, height: (profile.height / setting.divisor) & ~1)
    }

    /// Where an estimate starts for a sender of `plan`: what the plan sends at the profile's rates, so a call on a
    /// clean link starts as it would without an estimate and only a link that cannot carry it moves it down.
    static func startEstimate(for plan: SimulcastPlan) -> Double {
        let videoKbps = plan.layers.reduce(0) { $0 + $1.targetBitrateKbps }
        return (Double(videoKbps) / videoShare + audioReserveKbps) * 1_000
    }

    /// The divisor of the profile's picture for a full layer at `kbps`: the largest picture (at least 160x90) whose
    /// least rate it meets, with `growthMargin` to spare for one larger than the picture now; the smallest when none.
    /// Without `loss` of at least `shrinkingLoss`, never a smaller picture than now.
    func divisor(for kbps: Int, loss: Double) -> Int {
        let candidates = [1, 2, 4].filter {
            $0 == 1
                || (profile.width / $0 >= SimulcastPlan.smallestLayer.width
                    && profile.height / $0 >= SimulcastPlan.smallestLayer.height)
        }
        for divisor in candidates {
            let pixels = Double((profile.width / divisor) * (profile.height / divisor) * profile.fps)
            let least = pixels * Self.leastBitsPerPixel / 1_000 * (divisor < setting.divisor ? Self.growthMargin : 1)
            if Double(kbps) >= least { return loss >= Self.shrinkingLoss ? divisor : min(divisor, setting.divisor) }
        }
        return loss >= Self.shrinkingLoss ? candidates[candidates.count - 1] : setting.divisor
    }

    /// Takes a new estimate (bits a second) and the loss it last saw (a fraction) with the layers being sent now and
    /// the largest the uplink carries (its layers above are out: it takes the full layer's place and rate, so what
    /// it sends can grow with the estimate and show the room for the full layer's return); returns what the encoder
    /// should be told when it changes, nil when it stays.
    mutating func update(estimate: Double, loss: Double, active: [Bool], largestLayer: Int = 0) -> Setting? {
        let budget = Int(((estimate / 1_000 - Self.audioReserveKbps) * Self.videoShare).rounded(.down))
        let largest = min(max(largestLayer, 0), max(active.count - 1, 0))
        let shifted = Array(active.dropFirst(largest)) + [Bool](repeating: false, count: largest)
        var kbps = SimulcastPlan.fullLayerKbps(fitting: budget, upTo: profile.bitrateKbps, active: shifted)
        if kbps != profile.bitrateKbps, abs(kbps - setting.fullLayerKbps) * 20 <= setting.fullLayerKbps,
            largest == setting.largestLayer
        {
            kbps = setting.fullLayerKbps
        }
        // The full layer's picture is judged while it is sent; out, it keeps its size for its return.
        let divisor = largest == 0 ? divisor(for: kbps, loss: loss) : setting.divisor
        let next = Setting(fullLayerKbps: kbps, divisor: divisor, largestLayer: largest)
        guard next != setting else { return nil }
        setting = next
        return next
    }
}
