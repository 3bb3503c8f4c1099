import ParleyMedia
import ParleyWire

/// Which of the camera's simulcast layers the uplink's estimate carries (docs/network.md): a layer somebody receives
/// costs at least its picture's least rate (`VideoRateSteering.leastBitsPerPixel`), and when the video's share of
/// the estimate cannot hold every such layer the largest go first (`SendLayers`: back only with 20 % to spare). A
/// layer left out is not encoded; whoever received it gets the next smaller layer instead, which the sender starts
/// at once and the relay switches them to (told with `video-sending`).
///
/// A layer goes out only while two or more layers are asked for (one alone shrinks its picture instead:
/// `VideoRateSteering`) and while the estimate's last interval lost `VideoRateSteering.shrinkingLoss` or more, as a
/// picture shrinks: delay alone also rises on a busy machine with an idle link, and a smaller picture is the costlier
/// mistake; on a link that really is too narrow the encoder's overshoot brings the loss. A layer comes back on the
/// estimate alone: with 20 % to spare, or with none once the link has lost nothing for `calmTime`. What a smaller
/// layer sends cannot show much more room than it uses (the estimate climbs at most to 1.5 times what is
/// acknowledged, and a probe waits for 2 s of calm), so waiting for the margin alone left a returned capacity unused
/// for seconds.
///
/// A layer the uplink does not carry is costed as wanted while it is out: the relay's demand no longer names it
/// (its receivers moved down), and judging its return without it would bring it straight back.
struct UplinkLayers: Sendable {
    /// Each layer's least rate (kbit/s), largest first.
    let leastKbps: [Double]
    /// Which layers fit the estimate.
    private(set) var fit: SendLayers
    /// Layers the uplink stopped carrying, and when: encoded on beside the smaller layers that replace them while the
    /// relay still asks for them (its receivers switch at the replacement's keyframe once the relay hears of the
    /// change), at most `leavingTime`, so a picture does not wait out a keyframe request's round trip.
    private(set) var leaving: (layers: [Bool], since: Duration)?

    /// How long a layer the uplink left goes on beside its replacement at most.
    static let leavingTime = Duration.seconds(1)
    /// Since when the estimate's intervals lost under `VideoRateSteering.shrinkingLoss`; nil while they lose more.
    private(set) var calmSince: Duration?
    /// How long without loss lets a layer come back with no margin.
    static let calmTime = Duration.seconds(3)

    init(plan: SimulcastPlan) {
        leastKbps = plan.layers.map { layer in
            Double(layer.width * layer.height * layer.framesPerSecond) * VideoRateSteering.leastBitsPerPixel / 1_000
        }
        fit = SendLayers(count: plan.layers.count)
    }

    /// Which layers the uplink carries now, largest first.
    var sending: [Bool] { fit.active }

    /// Takes a new estimate (bits a second) and the loss it last saw (a fraction) at `now` with the relay's last
    /// demand (nil: the full layer); returns the layers the uplink carries when that changed.
    mutating func update(estimate: Double, loss: Double, demand: [Bool]?, at now: Duration = .zero) -> [Bool]? {
        let budget = (estimate / 1_000 - VideoRateSteering.audioReserveKbps) * VideoRateSteering.videoShare
        let costs = leastKbps.indices.map { layer in
            let wanted = demand.map { layer < $0.count && $0[layer] } ?? (layer == 0)
            return wanted || !fit.active[layer] ? leastKbps[layer] : 0
        }
        if loss >= VideoRateSteering.shrinkingLoss {
            calmSince = nil
        } else if calmSince == nil {
            calmSince = now
        }
        let calm = calmSince.map { now - $0 >= Self.calmTime } ?? false
        var next = fit
        guard next.update(target: budget, layerRates: costs, headroom: calm ? 1 : SendLayers.headroom) else {
            return nil
        }
        let drops = zip(fit.active, next.active).contains { was, now in was && !now }
        guard !drops || loss >= VideoRateSteering.shrinkingLoss else { return nil }
        // One layer asked for: a smaller layer in its place is only a smaller picture, which the full layer's own
        // size rule (`VideoRateSteering`) gives without a switch at the relay, its rate still following the estimate.
        let asked = demand.map { $0.filter { $0 }.count } ?? 1
        guard !drops || asked > 1 else { return nil }
        if drops { leaving = (zip(fit.active, next.active).map { was, now in was && !now }, now) }
        fit = next
        return fit.active
    }

    /// What to encode for `demand` at `now`: `encoded(for:)`, and the layers leaving while the demand still names
    /// them.
    func encoded(for demand: [Bool]?, at now: Duration) -> [Bool] {
        var encoded = encoded(for: demand)
        guard let leaving, now - leaving.since < Self.leavingTime, let demand else { return encoded }
        for (layer, out) in leaving.layers.enumerated() where out && layer < demand.count && layer < encoded.count {
            if demand[layer] { encoded[layer] = true }
        }
        return encoded
    }

    /// What to encode for `demand` (nil: the full layer): each demanded layer the uplink carries, and for one it
    /// does not, the next smaller one that it does.
    func encoded(for demand: [Bool]?) -> [Bool] {
        let sending = fit.active
        var encoded = [Bool](repeating: false, count: sending.count)
        for layer in sending.indices where demand.map({ layer < $0.count && $0[layer] }) ?? (layer == 0) {
            let sent = (layer..<sending.count).first { sending[$0] } ?? sending.count - 1
            encoded[sent] = true
        }
        return encoded
    }
}
