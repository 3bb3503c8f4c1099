import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// Picks a room's dominant speaker from the RFC 6464 levels its members' audio packets carry.
///
/// The method is the one of Volfin and Cohen's "Dominant speaker identification for multipoint
/// videoconferencing" (2013), which Jitsi's bridge also follows: every speaker's last second of levels is scored on
/// three time scales (the newest 20 ms, 100 ms blocks, the whole second) by how unlikely that much activity is
/// for noise; a challenger takes over only when it beats the dominant speaker on all three at once, by wide margins
/// on the short ones. A cough or a "yeah" wins the immediate scale but not the others, so it never takes the floor;
/// a speaker who keeps talking wins all three within about a second.
///
/// Two differences from the bridge's: a level counts only when the sender's voice activity detector flagged it
/// as speech (a fan or keyboard the sender knows is not speech never scores, however loud), and a speaker who
/// sends nothing (muted, or gone) is counted as silent for the time it sent nothing.
public struct DominantSpeakerDetector: Sendable {
    /// How often `decide(at:)` should run.
    public static let decisionInterval = Duration.milliseconds(300)
    /// Levels kept per speaker: one second of 20 ms packets.
    static let historyLength = 50
    static let frameDuration = Duration.milliseconds(20)
    /// Immediate scale: loudness in 13 steps of 10.
    static let steps = 13
    static let stepSize = 10
    /// Medium scale: blocks of 5 levels; a level is active from step 8 up (about -47 dBov and louder).
    static let blockLength = 5
    static let activeStep = 7
    /// Long scale: a block is active when all 5 of its levels are.
    static let activeBlock = 4
    /// How far a challenger must be ahead, as the log of the score ratio, on each scale.
    static let margins = (immediate: 3.0, medium: 2.0, long: 0.0)
    /// The λ of each scale's exponential prior on activity.
    static let lambdas = (immediate: 0.78, medium: 24.0, long: 47.0)
    static let minimumScore = 1e-10

    private struct Speaker: Sendable {
        /// Loudness 0 (silence) ... 127 (full scale), newest at `head`, a ring of `historyLength`.
        var loudness = [UInt8](repeating: 0, count: DominantSpeakerDetector.historyLength)
        var head = 0
        var lastHeard: Duration
        /// The quietest loudness heard: this speaker's own background, which counts as silence.
        var floor: UInt8 = 0

        /// Level `age` steps back (0 is the newest).
        func level(_ age: Int) -> UInt8 {
            loudness[(head - age + 2 * DominantSpeakerDetector.historyLength) % DominantSpeakerDetector.historyLength]
        }

        mutating func push(_ value: UInt8) {
            head = (head + 1) % DominantSpeakerDetector.historyLength
            loudness[head] = value
            if value > 0, floor == 0 || value < floor { floor = value }
        }
    }

    private var speakers: [UInt32: Speaker] = [:]
    /// The dominant speaker, nil before anybody has spoken.
    public private(set) var dominant: UInt32?

    /// A detector with nobody in it.
    public init() {}

    /// One packet's level from `member`.
    public mutating func record(_ indication: AudioLevelIndication, from member: UInt32, at now: Duration) {
        // Changed in place: a copy out of the map would copy the level ring on every packet.
        let loudness = indication.voiceActivity ? AudioLevelIndication.silence - indication.level : 0
        fillSilence(&speakers[member, default: Speaker(lastHeard: now)], until: now)
        speakers[member]!.push(loudness)
        speakers[member]!.lastHeard = now
    }

    /// The member left: it is no candidate any more (nor dominant).
    public mutating func remove(_ member: UInt32) {
        speakers[member] = nil
        if dominant == member { dominant = nil }
    }

    /// Members with a level history.
    public var memberCount: Int { speakers.count }

    /// Runs one decision; returns the new dominant speaker when it changed.
    public mutating func decide(at now: Duration) -> UInt32? {
        for id in speakers.keys { fillSilence(&speakers[id]!, until: now) }
        let before = dominant
        if dominant == nil {
            // Nobody holds the floor: the first to show any activity on the medium scale takes it.
            dominant =
                speakers.map { (id: $0.key, scores: Self.scores($0.value)) }
                .filter { $0.scores.medium > Self.minimumScore }
                .max { ($0.scores.medium, $1.id) < ($1.scores.medium, $0.id) }?.id
        } else if let current = dominant, let holder = speakers[current] {
            let held = Self.scores(holder)
            var best: (id: UInt32, medium: Double)?
            for (id, speaker) in speakers where id != current {
                let scores = Self.scores(speaker)
                let immediate = log(scores.immediate / held.immediate)
                let medium = log(scores.medium / held.medium)
                let long = log(scores.long / held.long)
                guard immediate > Self.margins.immediate, medium > Self.margins.medium, long > Self.margins.long,
                    medium > (best?.medium ?? -.infinity)
                else { continue }
                best = (id, medium)
            }
            if let best { dominant = best.id }
        }
        return dominant != before ? dominant : nil
    }

    /// Slots with no packet count as silence (muted senders send none), at most the whole history.
    private func fillSilence(_ speaker: inout Speaker, until now: Duration) {
        let missed = (now - speaker.lastHeard) / Self.frameDuration
        guard missed > 1 else { return }
        for _ in 0..<min(Int(missed) - 1, Self.historyLength) { speaker.push(0) }
        speaker.lastHeard = now - Self.frameDuration
    }

    /// The speaker's activity scores on the immediate, medium and long scales.
    private static func scores(_ speaker: Speaker) -> (immediate: Double, medium: Double, long: Double) {
        let floor = Int(speaker.floor) + stepSize
        func step(_ age: Int) -> Int {
            let value = Int(speaker.level(age))
            return value < floor ? 0 : value / stepSize
        }
        var blocks: [Int] = []
        blocks.reserveCapacity(historyLength / blockLength)
        for block in 0..<(historyLength / blockLength) {
            var active = 0
            for offset in 0..<blockLength where step(block * blockLength + offset) > activeStep { active += 1 }
            blocks.append(active)
        }
        let longActive = blocks.filter { $0 > activeBlock }.count
        return (
            score(active: step(0), of: steps, lambda: lambdas.immediate),
            score(active: blocks[0], of: blockLength, lambda: lambdas.medium),
            score(active: longActive, of: historyLength / blockLength, lambda: lambdas.long)
        )
    }

    /// How unlikely `active` of `count` is as noise (a fair coin's binomial against an exponential prior on
    /// speech), floored just above zero so ratios stay finite.
    private static func score(active: Int, of count: Int, lambda: Double) -> Double {
        let value = log(binomial(count, active)) + Double(count) * log(0.5) - log(lambda) + lambda * Double(active)
        return max(minimumScore, value)
    }

    private static func binomial(_ n: Int, _ k: Int) -> Double {
        var result = 1.0
        for index in 0..<min(k, n - k) { result = result * Double(n - index) / Double(index + 1) }
        return result
    }
}
