import CSpeexDSP

/// Mono 16-bit resampling at a fractional ratio that may change between calls without a click (speexdsp's
/// resampler): used to absorb clock drift, where input and output are both nominally 48 kHz and the ratio differs
/// from 1 by parts per million. One owner calls it (not thread-safe).
public final class AudioResampler {
    /// Nominal input and output rate (the ratio is applied on top of it).
    public let sampleRate: Int
    /// speexdsp quality 0 (fastest) ... 10 (best).
    public let quality: Int
    /// Input samples consumed per output sample, as set last (1 = no change).
    public private(set) var ratio: Double = 1
    /// Denominator of the ratio given to speexdsp: ratios are exact to one part in this (20 ppm). speexdsp rescales
    /// the filter phase by old × new denominator in 32 bits when the ratio changes and fails past 65535 × 65535,
    /// leaving its state half updated, so the denominator must stay below 65536.
    public static let ratioDenominator: UInt32 = 50_000
    /// Furthest the ratio may be from 1 (10 %): drift compensation needs a few hundred ppm.
    public static let maximumDeviation = 0.1

    private let state: OpaquePointer

    /// A resampler at ratio 1; quality 3 is speexdsp's VoIP setting (about 80 dB stop band, 0.5 ms delay).
    public init(sampleRate: Int = 48_000, quality: Int = 3) throws {
        guard (8_000...192_000).contains(sampleRate) else {
            throw AudioProcessingError.invalidSetting(
                name: "resampler rate", value: String(sampleRate), allowed: "8000...192000 Hz")
        }
        guard (0...10).contains(quality) else {
            throw AudioProcessingError.invalidSetting(
                name: "resampler quality", value: String(quality), allowed: "0...10")
        }
        var error: Int32 = 0
        let rate = UInt32(sampleRate)
        guard let state = speex_resampler_init(1, rate, rate, Int32(quality), &error), error == 0 else {
            throw AudioProcessingError.speex(call: "speex_resampler_init", code: error, message: Self.message(error))
        }
        self.state = state
        self.sampleRate = sampleRate
        self.quality = quality
    }

    deinit { speex_resampler_destroy(state) }

    /// Samples the filter delays its output by (at ratio 1).
    public var latencySamples: Int { Int(speex_resampler_get_input_latency(state)) }

    /// Sets input samples consumed per output sample, e.g. 1.0002 to play a source whose clock runs 200 ppm fast;
    /// rounded to one part in `ratioDenominator`. The filter history is kept, so changing it does not click.
    public func setRatio(_ ratio: Double) throws {
        guard ratio.isFinite, abs(ratio - 1) <= Self.maximumDeviation else {
            throw AudioProcessingError.invalidSetting(
                name: "resampling ratio", value: String(ratio), allowed: "0.9...1.1")
        }
        let numerator = UInt32((ratio * Double(Self.ratioDenominator)).rounded())
        let rate = UInt32(sampleRate)
        let status = speex_resampler_set_rate_frac(state, numerator, Self.ratioDenominator, rate, rate)
        guard status == 0 else {
            throw AudioProcessingError.speex(
                call: "speex_resampler_set_rate_frac", code: status, message: Self.message(status))
        }
        self.ratio = Double(numerator) / Double(Self.ratioDenominator)
    }

    /// Resamples from the front of `input` into `output` starting at `outputOffset`, filling at most `maxOutput`
    /// samples; returns (input consumed, output written). Stops early when the input runs out.
    public func process(
        _ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) -> (consumed: Int, written: Int) {
        guard let outBase = output.baseAddress, !output.isEmpty else { return (0, 0) }
        var inputLength = UInt32(input.count)
        var outputLength = UInt32(output.count)
        // speexdsp reads a null input as zeros; no input here means nothing to do.
        guard let inBase = input.baseAddress, !input.isEmpty else { return (0, 0) }
        speex_resampler_process_int(state, 0, inBase, &inputLength, outBase, &outputLength)
        return (Int(inputLength), Int(outputLength))
    }

    /// Resamples a whole block and returns what came out (convenience for tests and benchmarks).
    public func process(_ input: [Int16]) -> [Int16] {
        var output = [Int16](repeating: 0, count: Int(Double(input.count) / ratio) + 16)
        var written = 0
        input.withUnsafeBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                var consumed = 0
                while consumed < inBuffer.count, written < outBuffer.count {
                    let result = process(
                        UnsafeBufferPointer(rebasing: inBuffer[consumed...]),
                        into: UnsafeMutableBufferPointer(rebasing: outBuffer[written...]))
                    if result.consumed == 0 && result.written == 0 { break }
                    consumed += result.consumed
                    written += result.written
                }
            }
        }
        return Array(output[0..<written])
    }

    /// Forgets the filter history (e.g. between unrelated streams).
    public func reset() {
        speex_resampler_reset_mem(state)
    }

    private static func message(_ code: Int32) -> String {
        String(cString: speex_resampler_strerror(code))
    }
}
