// parley-device-probe: drives ParleyDevices from a child process, so the device tests can give it its own
// environment (a private sound server, an ALSA configuration in a temporary HOME) without touching the test process.
//
//   parley-device-probe list
//   parley-device-probe capture [--device NAME] --seconds S --out FILE.wav [--channels N] [--block FRAMES]
//   parley-device-probe play [--device NAME] --in FILE.wav [--prebuffer N] [--block FRAMES]
//
// Results go to standard output as one JSON line; errors as "error: ..." with exit status 2 (1 for bad usage).
import Dispatch
import Foundation
import ParleyDevices
import ParleyMedia
import Synchronization

/// What `capture` and `play` report.
struct ProbeReport: Codable {
    var device: String
    var frames: Int
    var elapsedSeconds: Double
    /// Capture: when the first block arrived (a sound server may take a moment to start delivering).
    var firstBlockSeconds: Double?
    var underruns: Int?
    var dropped: Int?
}

/// What `list` reports.
struct DeviceList: Codable {
    var microphones: [AudioDeviceInfo]
    var speakers: [AudioDeviceInfo]
}

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

let sampleRate = 48_000

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// `--name value` pairs after the command.
func options(_ arguments: ArraySlice<String>) throws -> [String: String] {
    var result: [String: String] = [:]
    var rest = arguments[...]
    while let name = rest.popFirst() {
        guard name.hasPrefix("--"), let value = rest.popFirst() else {
            throw UsageError(description: "expected --option value, got \(name)")
        }
        result[String(name.dropFirst(2))] = value
    }
    return result
}

func number(_ options: [String: String], _ name: String, default fallback: Double? = nil) throws -> Double {
    guard let text = options[name] else {
        guard let fallback else { throw UsageError(description: "--\(name) is required") }
        return fallback
    }
    guard let value = Double(text), value.isFinite, value >= 0, value <= 3600 else {
        throw UsageError(description: "--\(name) \(text) is not a number from 0 to 3600")
    }
    return value
}

func capture(_ options: [String: String]) throws {
    let seconds = try number(options, "seconds")
    let channels = Int(try number(options, "channels", default: 1))
    let block = Int(try number(options, "block", default: 960))
    guard let output = options["out"] else { throw UsageError(description: "--out FILE.wav is required") }
    let wanted = Int(seconds * Double(sampleRate))
    let stream = try PortAudioLayer().openInput(
        named: options["device"], sampleRate: sampleRate, channels: channels, framesPerBlock: block)
    let device = stream.deviceName
    let collected = Mutex<[Int16]>([])
    let outcome = Mutex<AudioDeviceError?>(nil)
    let done = DispatchSemaphore(value: 0)
    let firstBlock = Mutex<Date?>(nil)
    let capture = MicrophoneCapture(
        stream: stream, sampleRate: sampleRate, framesPerBlock: block,
        onBlock: { frame in
            firstBlock.withLock { $0 = $0 ?? Date() }
            let full = collected.withLock { samples -> Bool in
                guard samples.count < wanted * channels else { return false }
                samples += frame.samples
                return samples.count >= wanted * channels
            }
            if full { done.signal() }
        },
        onFailure: { error in
            outcome.withLock { $0 = error }
            done.signal()
        })
    let start = Date()
    capture.start()
    _ = done.wait(timeout: .now() + seconds + 10)
    let elapsed = Date().timeIntervalSince(start)
    capture.stop()
    if let error = outcome.withLock({ $0 }) { throw error }
    let samples = collected.withLock { Array($0.prefix(wanted * channels)) }
    try Data(WAVAudio(sampleRate: sampleRate, channels: channels, samples: samples).encoded())
        .write(to: URL(fileURLWithPath: output))
    try printJSON(ProbeReport(
        device: device, frames: samples.count / channels, elapsedSeconds: elapsed,
        firstBlockSeconds: firstBlock.withLock { $0 }?.timeIntervalSince(start)))
}

func play(_ options: [String: String]) throws {
    guard let input = options["in"] else { throw UsageError(description: "--in FILE.wav is required") }
    let block = Int(try number(options, "block", default: 960))
    let prebuffer = Int(try number(options, "prebuffer", default: 3))
    let audio = try WAVAudio.parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: input))))
    let channels = audio.channels
    // Whole blocks only: the last one is padded with silence.
    let blockSamples = block * channels
    var samples = audio.samples
    samples += [Int16](repeating: 0, count: (blockSamples - samples.count % blockSamples) % blockSamples)
    let blocks = samples.count / blockSamples
    let stream = try PortAudioLayer().openOutput(
        named: options["device"], sampleRate: sampleRate, channels: channels, framesPerBlock: block)
    let device = stream.deviceName
    let nextBlock = Atomic(0)
    let outcome = Mutex<AudioDeviceError?>(nil)
    let underrunsAtEnd = Atomic(-1)
    let done = DispatchSemaphore(value: 0)
    let source = samples
    let playoutBox = Mutex<SpeakerPlayout?>(nil)
    @Sendable func frame(_ index: Int) -> AudioFrame {
        AudioFrame(sampleRate: sampleRate, channels: channels,
                   samples: Array(source[(index * blockSamples)..<((index + 1) * blockSamples)]))
    }
    let playout = SpeakerPlayout(
        stream: stream, sampleRate: sampleRate, channels: channels, framesPerBlock: block,
        prebufferBlocks: prebuffer, maxQueuedBlocks: max(prebuffer, 1) + 2,
        onDemand: {
            guard let playout = playoutBox.withLock({ $0 }) else { return }
            let index = nextBlock.add(1, ordering: .relaxed).oldValue
            if index < blocks {
                playout.enqueue(frame(index))
            } else if playout.queuedBlocks == 0, underrunsAtEnd.load(ordering: .relaxed) < 0 {
                underrunsAtEnd.store(playout.underruns, ordering: .relaxed)
                done.signal()
            }
        },
        onFailure: { error in
            outcome.withLock { $0 = error }
            done.signal()
        })
    playoutBox.withLock { $0 = playout }
    // Primed before starting, so playback begins with the file rather than with silence.
    while nextBlock.load(ordering: .relaxed) < min(prebuffer, blocks) {
        playout.enqueue(frame(nextBlock.add(1, ordering: .relaxed).oldValue))
    }
    let start = Date()
    playout.start()
    _ = done.wait(timeout: .now() + Double(blocks * block) / Double(sampleRate) + 10)
    let elapsed = Date().timeIntervalSince(start)
    playout.stop()
    playoutBox.withLock { $0 = nil }
    if let error = outcome.withLock({ $0 }) { throw error }
    try printJSON(ProbeReport(
        device: device, frames: blocks * block, elapsedSeconds: elapsed,
        underruns: underrunsAtEnd.load(ordering: .relaxed), dropped: playout.dropped))
}

let arguments = CommandLine.arguments.dropFirst()
do {
    switch arguments.first {
    case "list":
        let layer = PortAudioLayer()
        try printJSON(DeviceList(microphones: try layer.inputDevices(), speakers: try layer.outputDevices()))
    case "capture":
        try capture(try options(arguments.dropFirst()))
    case "play":
        try play(try options(arguments.dropFirst()))
    default:
        throw UsageError(description: "usage: parley-device-probe list | capture ... | play ...")
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
} catch {
    print("error: \(error)")
    exit(2)
}
