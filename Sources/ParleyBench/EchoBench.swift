import Foundation
import ParleyEngine
import ParleyMedia

/// Echo cancellation and drift-compensation cost (`parley-bench echo`, part of `make bench`).
///
/// ERLE: the synthetic far-end voice is played into a simulated room whose microphone hears it back after a delay
/// at -6 dB; the microphone signal runs through `EchoCanceller` in 20 ms blocks, as the call's capture path would.
/// ERLE is the microphone level minus the output level over everything after the convergence time. CPU: thread
/// CPU time of the processing per second of 48 kHz audio, as a share of one core.
public enum EchoBench {
    /// Delays measured, in milliseconds.
    public static let delays = [50, 100, 200]
    /// Echo level relative to the far end.
    public static let echoGainDB = -6.0

    /// Runs every measurement; `seconds` of far-end voice per ERLE case, `convergenceSeconds` excluded from ERLE.
    public static func run(
        seconds: Int = 16, convergenceSeconds: Int = 3, log: (String) -> Void = { _ in }
    ) throws -> [BenchTable] {
        [
            try erleTable(seconds: seconds, convergenceSeconds: convergenceSeconds, log: log),
            try costTable(log: log),
        ]
    }

    /// The microphone signal for a far end heard back after `delayMilliseconds` at `echoGainDB`, plus `near`.
    public static func microphone(far: [Int16], near: [Int16]? = nil, delayMilliseconds: Int) -> [Int16] {
        let delay = 48 * delayMilliseconds
        let gain = pow(10, echoGainDB / 20)
        return far.indices.map { index in
            let echo = index >= delay ? Double(far[index - delay]) * gain : 0
            return Int16(clamping: Int((echo + Double(near?[index] ?? 0)).rounded()))
        }
    }

    /// Runs `far` and `mic` through `canceller` block by block; returns the output.
    public static func process(_ canceller: EchoCanceller, far: [Int16], mic: [Int16]) throws -> [Int16] {
        let block = canceller.frameSamples
        var output: [Int16] = []
        output.reserveCapacity(mic.count)
        for start in stride(from: 0, through: mic.count - block, by: block) {
            canceller.playback(Array(far[start..<(start + block)]))
            output += try canceller.capture(Array(mic[start..<(start + block)]))
        }
        return output
    }

    /// RMS level of samples in dBFS.
    static func dBFS(_ samples: ArraySlice<Int16>) -> Double {
        var sum = 0.0
        for sample in samples { sum += Double(sample) * Double(sample) }
        let rms = (sum / Double(max(1, samples.count))).squareRoot() / 32768
        return rms > 0 ? 20 * log10(rms) : -120
    }

    /// Seconds after which the 250 ms filter has converged at every delay tested (the 200 ms echo is the slowest).
    static let settledSeconds = 8

    /// The processing cases of the ERLE table, as `EchoCanceller` switches them.
    static let processings = [
        (name: "noise suppression only", cancel: false, suppress: true),
        (name: "echo cancellation only", cancel: true, suppress: false),
        (name: "echo cancellation + noise suppression", cancel: true, suppress: true),
    ]

    /// ERLE of one processing case at one delay: over everything after the first seconds, over those first
    /// seconds, and after the canceller has converged.
    struct ERLE {
        var overall: Double
        var early: Double
        var converged: Double
    }

    static func erleTable(seconds: Int, convergenceSeconds: Int, log: (String) -> Void) throws -> BenchTable {
        let far = SyntheticVoice(participant: 7).nextFrame(samplesPerChannel: 48_000 * seconds).samples
        let judged = 48_000 * convergenceSeconds
        let settled = 48_000 * settledSeconds
        var rows: [(delay: Int, microphone: Double, erle: [ERLE])] = []
        for delay in delays {
            log("echo: \(delay) ms")
            let mic = microphone(far: far, delayMilliseconds: delay)
            var erle: [ERLE] = []
            var micLevel = 0.0
            for processing in processings {
                let canceller = try EchoCanceller(
                    noiseSuppression: processing.suppress, echoCancellation: processing.cancel)
                let output = try process(canceller, far: far, mic: mic)
                micLevel = dBFS(mic[judged..<output.count])
                erle.append(
                    ERLE(
                        overall: micLevel - dBFS(output[judged...]),
                        early: dBFS(mic[0..<judged]) - dBFS(output[0..<judged]),
                        converged: dBFS(mic[settled..<output.count]) - dBFS(output[settled...])))
            }
            rows.append((delay, micLevel, erle))
        }
        var table = BenchTable(
            title: "Echo cancellation: ERLE dB after \(convergenceSeconds) s / in the first \(convergenceSeconds) s / "
                + "after \(settledSeconds) s, the synthetic voice fed back at -6 dB (48 kHz, 20 ms blocks, 250 ms tail)",
            columns: ["Echo delay", "Microphone dBFS"] + processings.map(\.name))
        for row in rows {
            table.add(
                ["\(row.delay) ms", formatted(row.microphone)]
                    + row.erle.map {
                        "\(formatted($0.overall)) / \(formatted($0.early)) / \(formatted($0.converged))"
                    })
        }
        let converged = rows.map { $0.erle.last?.converged ?? .nan }
        table.notes = [
            "\(seconds) s of the synthetic far-end voice (talk spurts and pauses); the microphone hears only its echo "
                + "(a pure delay at -6 dB). ERLE = microphone level minus output level (0 dB without processing, "
                + "the output then being the microphone). speexdsp \(speexVersion): MDF echo canceller, then the "
                + "preprocessor (noise suppression with the canceller's residual-echo estimate).",
            goalNote(
                "ERLE ≥ 20 dB after convergence (\(settledSeconds) s), echo cancellation + noise suppression, every "
                    + "delay", met: converged.allSatisfy { $0 >= 20 },
                converged.map { formatted($0) }.joined(separator: " / ") + " dB at "
                    + delays.map(String.init).joined(separator: " / ") + " ms"),
        ]
        return table
    }

    static var speexVersion: String { "1.2.1 (Debian libspeexdsp)" }

    static func costTable(log: (String) -> Void) throws -> BenchTable {
        var table = BenchTable(
            title: "Audio processing cost: CPU per second of 48 kHz mono audio (one core = 100 %)",
            columns: ["Processing", "Block", "CPU ms per audio s", "% of one core"])
        let seconds = 20
        let far = SyntheticVoice(participant: 7).nextFrame(samplesPerChannel: 48_000 * seconds).samples
        let mic = microphone(far: far, delayMilliseconds: 100)
        for (name, cancel, suppress, block) in [
            ("echo cancellation + noise suppression", true, true, 960),
            ("echo cancellation + noise suppression", true, true, 480),
            ("echo cancellation only", true, false, 960),
            ("noise suppression only", false, true, 960),
        ] {
            log("echo cost: \(name), \(block)")
            let blocks = (0..<(mic.count / block)).map { Array(mic[($0 * block)..<(($0 + 1) * block)]) }
            let farBlocks = (0..<(far.count / block)).map { Array(far[($0 * block)..<(($0 + 1) * block)]) }
            var best = Double.infinity
            for _ in 0..<3 {
                let canceller = try EchoCanceller(
                    frameSamples: block, noiseSuppression: suppress, echoCancellation: cancel)
                let started = threadCPUSeconds()
                for index in blocks.indices {
                    canceller.playback(farBlocks[index])
                    _ = try canceller.capture(blocks[index])
                }
                best = min(best, threadCPUSeconds() - started)
            }
            let perSecond = best / Double(seconds)
            table.add([
                name, "\(block / 48) ms", formatted(perSecond * 1000, decimals: 2),
                formatted(perSecond * 100, decimals: 2),
            ])
        }
        for quality in [1, 2, 3, 5] {
            log("resampler cost: quality \(quality)")
            var best = Double.infinity
            var snr = 0.0
            for _ in 0..<3 {
                let resampler = try AudioResampler(quality: quality)
                try resampler.setRatio(1.0002)
                let input = tone(hz: 1000, samples: 48_000 * seconds)
                var output = [Int16](repeating: 0, count: input.count)
                var written = 0
                let started = threadCPUSeconds()
                input.withUnsafeBufferPointer { inBuffer in
                    output.withUnsafeMutableBufferPointer { outBuffer in
                        var consumed = 0
                        while consumed + 960 <= inBuffer.count, written < outBuffer.count {
                            let result = resampler.process(
                                UnsafeBufferPointer(rebasing: inBuffer[consumed..<(consumed + 960)]),
                                into: UnsafeMutableBufferPointer(rebasing: outBuffer[written...]))
                            consumed += result.consumed
                            written += result.written
                        }
                    }
                }
                best = min(best, threadCPUSeconds() - started)
                snr = toneSNR(Array(output[0..<written]), hz: 1000, ratio: 1.0002, latency: resampler.latencySamples)
            }
            let perSecond = best / Double(seconds)
            table.add([
                "drift resampler, quality \(quality) (tone SNR \(formatted(snr)) dB)", "20 ms",
                formatted(perSecond * 1000, decimals: 2), formatted(perSecond * 100, decimals: 2),
            ])
        }
        table.notes = [
            "Thread CPU time (CLOCK_THREAD_CPUTIME_ID) of \(seconds) s of audio through each stage, fastest of 3 "
                + "rounds. Echo stages: the far end fed to `playback` and the microphone (100 ms echo) to `capture`.",
            "Resampler: a 1 kHz tone at ratio 1.0002 (a sender 200 ppm fast) through `AudioResampler`; SNR against "
                + "the ideal resampled tone. PeerAudioPlayout uses quality \(PeerAudioPlayout.defaultResamplerQuality).",
        ]
        return table
    }

    /// A full-scale-ish sine.
    static func tone(hz: Double, samples: Int) -> [Int16] {
        (0..<samples).map { Int16((12_000 * sin(2 * Double.pi * hz * Double($0) / 48_000)).rounded()) }
    }

    /// SNR of a resampled tone against the ideal one (phase and amplitude fitted by least squares).
    static func toneSNR(_ output: [Int16], hz: Double, ratio: Double, latency: Int) -> Double {
        let start = 4800
        guard output.count > start + 48_000 else { return .nan }
        var ss = 0.0
        var cc = 0.0
        var sc = 0.0
        var ys = 0.0
        var yc = 0.0
        let range = start..<(output.count - 100)
        for index in range {
            let phase = 2 * Double.pi * hz * (Double(index) * ratio) / 48_000
            let s = sin(phase)
            let c = cos(phase)
            let y = Double(output[index])
            ss += s * s
            cc += c * c
            sc += s * c
            ys += y * s
            yc += y * c
        }
        let determinant = ss * cc - sc * sc
        let a = (ys * cc - yc * sc) / determinant
        let b = (yc * ss - ys * sc) / determinant
        var signal = 0.0
        var noise = 0.0
        for index in range {
            let phase = 2 * Double.pi * hz * (Double(index) * ratio) / 48_000
            let fit = a * sin(phase) + b * cos(phase)
            let error = Double(output[index]) - fit
            signal += fit * fit
            noise += error * error
        }
        return 10 * log10(signal / max(noise, 1e-9))
    }

    static func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
