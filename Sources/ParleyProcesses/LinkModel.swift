import Foundation

/// One direction of an emulated link, in user space, with the parameters of Google's network emulation (one-way
/// delay, its standard deviation, loss per cent, mean burst loss length, reordering): the part of a network the
/// kernel here cannot shape (it has no netem). Pure, seeded, and time is an input (milliseconds), so the rules are
/// tested with a manual clock; `EmulatedLink` puts one per direction on a member's media path.
public struct LinkModel: Sendable {
    /// What the link does to each packet.
    public struct Settings: Sendable, Equatable {
        /// The one-way delay every packet waits at least as long as, on average.
        public var delay: Duration
        /// The standard deviation of the delay (normally distributed, never below zero).
        public var delayDeviation: Duration
        /// The share of packets lost, 0 to 100.
        public var lossPercent: Double
        /// The mean length of a run of lost packets (1: each loss on its own).
        public var meanBurstLength: Double
        /// Whether a packet may overtake one sent before it (false: a later packet waits for the earlier one).
        public var reorders: Bool

        public init(
            delay: Duration = .zero, delayDeviation: Duration = .zero, lossPercent: Double = 0,
            meanBurstLength: Double = 1, reorders: Bool = false
        ) {
            self.delay = delay
            self.delayDeviation = delayDeviation
            self.lossPercent = lossPercent
            self.meanBurstLength = meanBurstLength
            self.reorders = reorders
        }

        /// Nothing done to any packet.
        public static let clean = Settings()

        /// Why these settings cannot be emulated, or nil.
        public var problem: String? {
            if !(0...100).contains(lossPercent) {
                return "a link loses 0 to 100 % of its packets, not \(lossPercent) %"
            }
            if meanBurstLength < 1 { return "a burst of losses is at least 1 packet long, not \(meanBurstLength)" }
            if delay < .zero || delayDeviation < .zero { return "a delay and its deviation are not negative" }
            return nil
        }
    }

    public let settings: Settings
    private var state: UInt64
    /// Losing: in a burst (Gilbert's two-state model).
    private var losing = false
    private var lastArrival = -Double.infinity
    /// Packets lost and passed so far.
    public private(set) var lost = 0
    public private(set) var passed = 0

    /// A link doing what `settings` say, its draws seeded by `seed`; throws on settings it cannot emulate.
    public init(_ settings: Settings, seed: UInt64) throws(NetworkLabError) {
        if let problem = settings.problem { throw NetworkLabError(description: problem) }
        self.settings = settings
        state = seed
    }

    /// When a packet sent at `now` (ms) arrives (ms), or nil when the link loses it.
    public mutating func arrival(sentAt now: Double) -> Double? {
        // Gilbert: from passing, a burst starts with p; in a burst, it ends with r = 1 / mean length. The
        // long-run loss is p / (p + r), so p = r × loss / (1 − loss).
        let loss = settings.lossPercent / 100
        if loss >= 1 {
            lost += 1
            return nil
        }
        let r = 1 / settings.meanBurstLength
        let p = r * loss / (1 - loss)
        losing = losing ? uniform() >= r : uniform() < p
        if losing {
            lost += 1
            return nil
        }
        passed += 1
        let mean = settings.delay / .milliseconds(1)
        let deviation = settings.delayDeviation / .milliseconds(1)
        var arrival = now + max(0, mean + deviation * gaussian())
        if !settings.reorders { arrival = max(arrival, lastArrival) }
        lastArrival = max(lastArrival, arrival)
        return arrival
    }

    /// Uniform in [0, 1) (SplitMix64).
    private mutating func uniform() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }

    /// Standard normal (Box-Muller).
    private mutating func gaussian() -> Double {
        let u = max(uniform(), .leastNonzeroMagnitude)
        return (-2 * Foundation.log(u)).squareRoot() * Foundation.cos(2 * .pi * uniform())
    }
}
