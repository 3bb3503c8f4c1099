import Foundation
import ParleyMedia

/// Runs `body` with a fresh private directory (tests run in parallel) and removes the directory afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    var template = Array((NSTemporaryDirectory() + "parley-media-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
    let directory = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

/// Normalised cross-correlation of two equally long signals (1 = identical shape).
func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
    precondition(a.count == b.count, "signals must be equally long")
    var sxy = 0.0
    var sxx = 0.0
    var syy = 0.0
    for (x, y) in zip(a, b) {
        sxy += Double(x) * Double(y)
        sxx += Double(x) * Double(x)
        syy += Double(y) * Double(y)
    }
    guard sxx > 0, syy > 0 else { return 0 }
    return sxy / (sxx * syy).squareRoot()
}

/// Best correlation of `output` against `input` for a delay within `delays`, and that delay.
func bestAlignment(
    input: [Int16], output: [Int16], delays: ClosedRange<Int>, length: Int
) -> (delay: Int, value: Double) {
    var best = (delay: delays.lowerBound, value: -1.0)
    for delay in delays {
        let value = correlation(input[0..<length], output[delay..<(delay + length)])
        if value > best.value { best = (delay, value) }
    }
    return best
}

/// Pitch of a voiced stretch by autocorrelation over 70–400 Hz: the shortest lag whose correlation comes within
/// 15 % of the best one (the best alone may sit at twice the period).
func estimatedPitch(_ samples: ArraySlice<Int16>, sampleRate: Int = 48_000) -> Double {
    let base = samples.startIndex
    let lags = Array((sampleRate / 400)...(sampleRate / 70))
    let window = samples.count - lags.last!
    let sums = lags.map { lag in
        var sum = 0.0
        for i in 0..<window { sum += Double(samples[base + i]) * Double(samples[base + i + lag]) }
        return sum
    }
    let best = sums.max()!
    var index = sums.firstIndex { $0 >= 0.85 * best }!
    while index + 1 < sums.count, sums[index + 1] > sums[index] { index += 1 }
    return Double(sampleRate) / Double(lags[index])
}

/// Encodes `count` frames of a camera and returns the compressed frames.
func encodeCamera(_ camera: SyntheticCamera, _ encoder: VP8Encoder, count: Int) throws -> [EncodedVideoFrame] {
    var output: [EncodedVideoFrame] = []
    for _ in 0..<count { output += try encoder.encode(camera.nextFrame()) }
    return output
}
