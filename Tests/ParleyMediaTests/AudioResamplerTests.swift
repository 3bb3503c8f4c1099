import Testing

@testable import ParleyMedia

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct AudioResamplerTests {
    static func tone(_ hz: Double, samples: Int, amplitude: Double = 10_000) -> [Int16] {
        (0..<samples).map { Int16((amplitude * sin(2 * Double.pi * hz * Double($0) / 48_000)).rounded()) }
    }

    struct RatioRow: CustomTestStringConvertible, Sendable {
        var name: String
        var ratio: Double
        var testDescription: String { name }
    }

    // Ten seconds in, 10 s / ratio out (within the filter delay): a ratio that was ignored or inverted misses by
    // 96 samples at 200 ppm and by 480 at 1000 ppm.
    @Test(arguments: [
        RatioRow(name: "unity", ratio: 1),
        RatioRow(name: "source 200 ppm fast", ratio: 1.0002),
        RatioRow(name: "source 200 ppm slow", ratio: 0.9998),
        RatioRow(name: "source 1000 ppm fast", ratio: 1.001),
    ])
    func outputLengthFollowsTheRatio(_ row: RatioRow) throws {
        let resampler = try AudioResampler()
        try resampler.setRatio(row.ratio)
        let input = Self.tone(440, samples: 480_000)
        var output: [Int16] = []
        for start in stride(from: 0, to: input.count, by: 960) {
            output += resampler.process(Array(input[start..<(start + 960)]))
        }
        let expected = Double(input.count) / row.ratio
        #expect(abs(Double(output.count) - expected) <= Double(resampler.latencySamples) + 2)
    }

    // The ratio swings between -1000 and +1000 ppm every 10 ms block: the tone must stay free of clicks (a step
    // larger than the tone's own steepest step, 2π·440/48000·10000 ≈ 576, plus filter ripple).
    @Test func changingTheRatioDoesNotClick() throws {
        let resampler = try AudioResampler()
        let input = Self.tone(440, samples: 96_000)
        var output: [Int16] = []
        for (block, start) in stride(from: 0, to: input.count, by: 480).enumerated() {
            try resampler.setRatio(block % 2 == 0 ? 1.001 : 0.999)
            output += resampler.process(Array(input[start..<(start + 480)]))
        }
        let settled = output[200...]
        let steps = zip(settled, settled.dropFirst()).map { abs(Int($1) - Int($0)) }
        #expect(steps.max()! < 620)
        let peak = settled.map { abs(Int($0)) }.max()!
        #expect((9_800...10_200).contains(peak))
    }

    struct BadSettingRow: CustomTestStringConvertible, Sendable {
        var name: String
        var quality = 3
        var ratio = 1.0
        var message: String
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadSettingRow(name: "quality 11", quality: 11, message: "invalid resampler quality 11: allowed 0...10"),
        BadSettingRow(name: "ratio 1.5", ratio: 1.5, message: "invalid resampling ratio 1.5: allowed 0.9...1.1"),
        BadSettingRow(name: "ratio 0", ratio: 0, message: "invalid resampling ratio 0.0: allowed 0.9...1.1"),
        BadSettingRow(name: "ratio NaN", ratio: .nan, message: "invalid resampling ratio nan: allowed 0.9...1.1"),
    ])
    func badSettingsAreRejected(_ row: BadSettingRow) {
        #expect {
            let resampler = try AudioResampler(quality: row.quality)
            try resampler.setRatio(row.ratio)
        } throws: { error in
            "\(error)" == row.message
        }
    }
}
