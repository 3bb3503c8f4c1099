// The click train of `parley-bench mouth-to-ear` and the search for each click in a stereo recording: pure functions
// on samples, so the tests can hand them synthetic signals (a click missing, one late, one quiet).
#if canImport(Glibc)
import Glibc
#endif

/// One click a second: a 5 ms chirp (500 Hz to 4 kHz, Hann window) at -6 dBFS. A chirp, not a tone burst, because a
/// tone's correlation has a peak every period (1 ms at 1 kHz) and a codec's small changes could move the match by one;
/// a chirp's has one sharp peak. It stays under 4 kHz, where Opus at 32 kbit/s keeps the waveform.
public struct ClickTrain: Sendable {
    /// Samples per second.
    public static let sampleRate = 48_000
    /// The click's samples.
    public static let click: [Int16] = {
        let count = sampleRate / 200
        return (0..<count).map { index in
            let t = Double(index) / Double(sampleRate)
            let duration = Double(count) / Double(sampleRate)
            let (start, end) = (500.0, 4000.0)
            // Phase of a linear chirp: 2π (f0 t + (f1 - f0) t² / 2T).
            let phase = 2 * Double.pi * (start * t + (end - start) * t * t / (2 * duration))
            let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count - 1))
            return Int16((16_384 * window * sin(phase)).rounded())
        }
    }()
    /// Where in each second the click starts: a quarter second in, so the player's start never clips the first.
    public static let offset = sampleRate / 4

    /// Clicks (one a second).
    public var seconds: Int

    /// A train of `seconds` clicks.
    public init(seconds: Int) { self.seconds = seconds }

    /// The whole train, mono at 48 kHz: `seconds` seconds, each silent but for its click.
    public var samples: [Int16] {
        var samples = [Int16](repeating: 0, count: seconds * Self.sampleRate)
        for second in 0..<seconds {
            let start = second * Self.sampleRate + Self.offset
            samples.replaceSubrange(start..<(start + Self.click.count), with: Self.click)
        }
        return samples
    }
}

/// What the search found for one second of the train.
public struct ClickMatch: Sendable, Equatable {
    /// The second (0 = the first click sent).
    public var second: Int
    /// Sample where the click starts in the sent channel.
    public var sentAt: Int
    /// Sample where it starts in the heard channel, nil when it was not heard.
    public var heardAt: Int?
    /// Normalised correlation of the best match in the heard channel (0…1).
    public var correlation: Double

    /// Mouth-to-ear delay in milliseconds, nil when not heard.
    public var delayMilliseconds: Double? {
        heardAt.map { Double($0 - sentAt) * 1000 / Double(ClickTrain.sampleRate) }
    }
}

/// Why a recording does not hold one click a second, sent and heard; names the seconds.
public enum ClickSearchError: Error, Equatable, CustomStringConvertible {
    /// The sent channel does not hold the train: fewer or more clicks, or not a second apart.
    case sentClicksWrong(expected: Int, found: Int, seconds: [Int])
    /// These seconds' clicks were sent but not heard within the search window.
    case notHeard(seconds: [Int], of: Int, maximumDelayMilliseconds: Int)

    public var description: String {
        switch self {
        case .sentClicksWrong(let expected, let found, let seconds):
            "the sent channel holds \(found) clicks where \(expected) were played"
                + (seconds.isEmpty ? "" : ", missing at seconds \(list(seconds)) (counted from the first found)")
                + ": the click train did not reach the microphone"
        case .notHeard(let seconds, let total, let maximum):
            "\(seconds.count) of \(total) clicks were not heard within \(maximum) ms: seconds \(list(seconds))"
        }
    }

    private func list(_ seconds: [Int]) -> String {
        seconds.count <= 20
            ? seconds.map(String.init).joined(separator: ", ")
            : seconds.prefix(20).map(String.init).joined(separator: ", ") + " and \(seconds.count - 20) more"
    }
}

/// Finds each click of a train in a recording's sent channel, then the same click in its heard channel by normalised
/// cross-correlation with the click, within `maximumDelay` after it was sent. A second whose click is not found
/// there fails the search: a path that drops a click (or delays it a second or more, past the next one) never
/// passes silently.
public struct ClickFinder: Sendable {
    /// The click the train is made of.
    public var click: [Int16]
    /// Clicks expected, one a second.
    public var seconds: Int
    /// Longest delay searched, in samples: below the one-second spacing, so a click is never matched to the
    /// previous one's echo of the path.
    public var maximumDelay: Int
    /// Lowest normalised correlation that counts as heard.
    public var minimumCorrelation: Double
    /// Lowest peak amplitude (of 32767) in the matched stretch that counts as heard: about -40 dBFS.
    public var minimumPeak: Int16

    /// A finder for a train of `seconds` clicks.
    public init(
        click: [Int16] = ClickTrain.click, seconds: Int, maximumDelay: Int = 43_200, minimumCorrelation: Double = 0.5,
        minimumPeak: Int16 = 330
    ) {
        self.click = click
        self.seconds = seconds
        self.maximumDelay = maximumDelay
        self.minimumCorrelation = minimumCorrelation
        self.minimumPeak = minimumPeak
    }

    /// Every second's match; throws `ClickSearchError` naming the seconds when a click is missing in either channel.
    public func find(sent: [Int16], heard: [Int16]) throws(ClickSearchError) -> [ClickMatch] {
        let matches = try findAll(sent: sent, heard: heard)
        let notHeard = matches.filter { $0.heardAt == nil }.map(\.second)
        guard notHeard.isEmpty else {
            throw .notHeard(
                seconds: notHeard, of: seconds, maximumDelayMilliseconds: maximumDelay * 1000 / ClickTrain.sampleRate)
        }
        return matches
    }

    /// Every second's match, a click not heard as one without `heardAt` (a lossy link may lose one); throws when
    /// the sent channel does not hold the train.
    public func findAll(sent: [Int16], heard: [Int16]) throws(ClickSearchError) -> [ClickMatch] {
        let starts = sentClicks(sent)
        let rate = ClickTrain.sampleRate
        // Each click belongs to the second its distance from the first says; all must be there, once each.
        var bySecond: [Int: Int] = [:]
        var strays = 0
        if let first = starts.first {
            for start in starts {
                let offset = Double(start - first) / Double(rate)
                let second = Int(offset.rounded())
                if abs(offset - Double(second)) > 0.01 || bySecond[second] != nil || second >= seconds {
                    strays += 1
                } else {
                    bySecond[second] = start
                }
            }
        }
        let missingSent = (0..<seconds).filter { bySecond[$0] == nil }
        guard missingSent.isEmpty, strays == 0 else {
            throw .sentClicksWrong(expected: seconds, found: starts.count, seconds: missingSent)
        }
        return (0..<seconds).map { second in
            let sentAt = bySecond[second]!
            let best = bestMatch(in: heard, from: sentAt, to: min(heard.count - click.count, sentAt + maximumDelay))
            var heardAt: Int?
            if let best, best.correlation >= minimumCorrelation, best.peak >= minimumPeak { heardAt = best.start }
            return ClickMatch(
                second: second, sentAt: sentAt, heardAt: heardAt, correlation: best?.correlation ?? 0)
        }
    }

    /// Where each click starts in the sent channel: the best correlation with the click around each place the
    /// signal first rises above half the click's peak (at least half a second after the previous click).
    func sentClicks(_ sent: [Int16]) -> [Int] {
        let peak = click.map { abs(Int($0)) }.max() ?? 0
        let threshold = max(1, peak / 2)
        let firstLoud = click.firstIndex { abs(Int($0)) >= threshold } ?? 0
        var starts: [Int] = []
        var index = 0
        while index < sent.count {
            if abs(Int(sent[index])) >= threshold {
                let guess = index - firstLoud
                let from = max(0, guess - click.count)
                let to = min(sent.count - click.count, guess + click.count)
                if let best = bestMatch(in: sent, from: from, to: to), best.correlation >= minimumCorrelation {
                    starts.append(best.start)
                }
                index += ClickTrain.sampleRate / 2
            } else {
                index += 1
            }
        }
        return starts
    }

    /// The start in `signal[from...to]` where the stretch of click length correlates best with the click (by
    /// absolute normalised correlation), with the stretch's peak; nil for an empty range.
    func bestMatch(in signal: [Int16], from: Int, to: Int) -> (start: Int, correlation: Double, peak: Int16)? {
        let length = click.count
        guard length > 0, from >= 0, to >= from, to + length <= signal.count else { return nil }
        let template = click.map(Double.init)
        let templateNorm = template.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard templateNorm > 0 else { return nil }
        return signal.withUnsafeBufferPointer { samples in
            template.withUnsafeBufferPointer { shape in
                var bestStart = from
                var best = -1.0
                // Energy of the stretch, kept running as it slides.
                var energy = 0.0
                for offset in 0..<length {
                    let value = Double(samples[from + offset])
                    energy += value * value
                }
                for start in from...to {
                    if start > from {
                        let leaving = Double(samples[start - 1])
                        let entering = Double(samples[start + length - 1])
                        energy += entering * entering - leaving * leaving
                    }
                    // Below about -80 dBFS over the click's length: silence, nothing to match.
                    guard energy > 1_000 else { continue }
                    var dot = 0.0
                    for offset in 0..<length { dot += shape[offset] * Double(samples[start + offset]) }
                    let correlation = abs(dot) / (templateNorm * energy.squareRoot())
                    if correlation > best {
                        best = correlation
                        bestStart = start
                    }
                }
                let peak = samples[bestStart..<(bestStart + length)].map { $0 == .min ? Int16.max : abs($0) }.max() ?? 0
                return (bestStart, max(0, best), peak)
            }
        }
    }
}

/// Delays of a path's clicks: p50, p90 and max by nearest rank, in milliseconds.
public struct ClickDelays: Sendable, Equatable {
    /// Each heard click's delay, in the order sent.
    public var milliseconds: [Double]

    /// The delays of `matches` that were heard.
    public init(_ matches: [ClickMatch]) { milliseconds = matches.compactMap(\.delayMilliseconds) }

    /// Nearest-rank percentile (`p` in 0…1), nil when there are no delays.
    public func percentile(_ p: Double) -> Double? { Sample.percentile(milliseconds, p) }
}
