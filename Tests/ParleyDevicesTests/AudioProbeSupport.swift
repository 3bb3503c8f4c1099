import Foundation
import ParleyMedia
import ParleyProcesses
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The device probe built next to the tests (or named by PARLEY_DEVICE_PROBE).
func deviceProbePath() -> String? {
    var candidates: [String] = []
    let environment = ProcessInfo.processInfo.environment
    if let path = environment["PARLEY_DEVICE_PROBE"] { candidates.append(path) }
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("parley-device-probe").path)
    }
    let argumentZero = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    candidates.append(argumentZero.appendingPathComponent("parley-device-probe").path)
    if let bin = environment["PARLEY_BIN"] {
        candidates.append(
            URL(fileURLWithPath: bin).deletingLastPathComponent()
                .appendingPathComponent("parley-device-probe").path)
    }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// What the probe prints for `capture` and `play`.
struct ProbeReport: Decodable {
    var device: String
    var frames: Int
    var elapsedSeconds: Double
    var firstBlockSeconds: Double?
    var underruns: Int?
    var dropped: Int?
}

/// What the probe prints for `stall`.
struct ProbeStallReport: Decodable {
    var device: String
    var bufferBefore: Double
    var bufferAfter: Double
    var underruns: Int
}

/// What the probe prints for `list`.
struct ProbeDeviceList: Decodable {
    var microphones: [ParleyDevicesNames]
    var speakers: [ParleyDevicesNames]
}

struct ParleyDevicesNames: Decodable {
    var name: String
    var inputChannels: Int
    var outputChannels: Int
    var hostAPI: String
}

/// The probe's last JSON line, decoded.
func probeJSON<T: Decodable>(_ type: T.Type, in output: String) throws -> T {
    let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "no report in: \(output)")
    return try JSONDecoder().decode(T.self, from: Data(line.utf8))
}

/// Runs the probe to completion with exactly `environment`.
func runProbe(_ arguments: [String], environment: [String: String]) throws -> ChildProcess.Result {
    let probe = try #require(deviceProbePath(), "parley-device-probe was not built next to the tests; run swift build")
    let command = ChildEnvironment.command(environment: environment, program: probe, arguments: arguments)
    return try ChildProcess.run(command.path, command.arguments)
}

/// Starts the probe in the background with exactly `environment`.
func startProbe(_ arguments: [String], environment: [String: String]) throws -> BackgroundProcess {
    let probe = try #require(deviceProbePath(), "parley-device-probe was not built next to the tests; run swift build")
    let command = ChildEnvironment.command(environment: environment, program: probe, arguments: arguments)
    return try BackgroundProcess(command.path, command.arguments)
}

/// A new empty folder, removed by the caller.
func temporaryFolder(_ label: String) throws -> String {
    let path = NSTemporaryDirectory() + "parley-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Reproducible white noise at about -12 dBFS: every stretch of it is unlike every other, so it can be found again.
func noise(seconds: Double, seed: UInt64) -> [Int16] {
    var state = seed
    return (0..<Int(seconds * 48_000)).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int16(truncatingIfNeeded: Int64(state >> 33) % 16_001 - 8_000)
    }
}

func writeWAV(_ samples: [Int16], to path: String) throws {
    try Data(WAVAudio(sampleRate: 48_000, channels: 1, samples: samples).encoded()).write(
        to: URL(fileURLWithPath: path))
}

func readWAV(_ path: String) throws -> [Int16] {
    try WAVAudio.parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))).samples
}

/// Where `signal` starts in `recording` and how well it matches there (normalised cross-correlation, 1 = identical
/// shape). A coarse search on 8x-decimated sums, then sample-exact around the best coarse lag.
func locate(_ signal: [Int16], in recording: [Int16]) -> (lag: Int, correlation: Double) {
    let factor = 8
    func decimated(_ samples: [Int16]) -> [Float] {
        stride(from: 0, to: samples.count - factor + 1, by: factor).map { start in
            (start..<(start + factor)).reduce(Float(0)) { $0 + Float(samples[$1]) }
        }
    }
    let coarseSignal = Array(decimated(signal).prefix(2_000))
    let coarseRecording = decimated(recording)
    guard !coarseSignal.isEmpty, coarseRecording.count >= coarseSignal.count else { return (0, 0) }
    var bestLag = 0
    var best = -Float.infinity
    coarseSignal.withUnsafeBufferPointer { probe in
        coarseRecording.withUnsafeBufferPointer { haystack in
            for lag in 0...(haystack.count - probe.count) {
                var sum: Float = 0
                for index in 0..<probe.count { sum += probe[index] * haystack[lag + index] }
                if sum > best { (best, bestLag) = (sum, lag) }
            }
        }
    }
    var result = (lag: 0, correlation: -1.0)
    for lag in max(0, (bestLag - 2) * factor)...((bestLag + 2) * factor) {
        let value = correlation(signal, recording, at: lag)
        if value > result.correlation { result = (lag, value) }
    }
    return result
}

/// Normalised correlation of `signal` with `recording` starting at `lag`, over the whole signal (missing recording
/// counts as silence, so a recording that stops early scores low).
func correlation(_ signal: [Int16], _ recording: [Int16], at lag: Int) -> Double {
    var product = 0.0
    var signalEnergy = 0.0
    var recordingEnergy = 0.0
    for index in signal.indices {
        let x = Double(signal[index])
        let y = lag + index < recording.count ? Double(recording[lag + index]) : 0
        product += x * y
        signalEnergy += x * x
        recordingEnergy += y * y
    }
    guard signalEnergy > 0, recordingEnergy > 0 else { return 0 }
    return product / (signalEnergy * recordingEnergy).squareRoot()
}
