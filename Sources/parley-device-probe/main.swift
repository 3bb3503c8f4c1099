// parley-device-probe: drives ParleyDevices from a child process, so the device tests can give it its own
// environment (a private sound server, an ALSA configuration in a temporary HOME) without touching the test process.
//
//   parley-device-probe list
//   parley-device-probe capture [--device NAME] --seconds S --out FILE.wav [--channels N] [--block FRAMES]
//   parley-device-probe play [--device NAME] --in FILE.wav [--prebuffer N] [--block FRAMES]
//   parley-device-probe stall [--device NAME] --stall-ms MS   (the sound server's speaker, Linux)
//
// Results go to standard output as one JSON line; errors as "error: ..." with exit status 2 (bad usage: the argument
// parser's message and its exit status).
import ArgumentParser
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

let sampleRate = 48_000

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

func capture(device: String?, seconds: Double, output: String, channels: Int, block: Int) throws {
    let wanted = Int(seconds * Double(sampleRate))
    let stream = try PortAudioLayer().openInput(
        named: device, sampleRate: sampleRate, channels: channels, framesPerBlock: block)
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
    try printJSON(
        ProbeReport(
            device: device, frames: samples.count / channels, elapsedSeconds: elapsed,
            firstBlockSeconds: firstBlock.withLock { $0 }?.timeIntervalSince(start)))
}

func play(device: String?, input: String, prebuffer: Int, block: Int) throws {
    let audio = try WAVAudio.parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: input))))
    let channels = audio.channels
    // Whole blocks only: the last one is padded with silence.
    let blockSamples = block * channels
    var samples = audio.samples
    samples += [Int16](repeating: 0, count: (blockSamples - samples.count % blockSamples) % blockSamples)
    let blocks = samples.count / blockSamples
    let stream = try PortAudioLayer().openOutput(
        named: device, sampleRate: sampleRate, channels: channels, framesPerBlock: block)
    let device = stream.deviceName
    let nextBlock = Atomic(0)
    let outcome = Mutex<AudioDeviceError?>(nil)
    let underrunsAtEnd = Atomic(-1)
    let done = DispatchSemaphore(value: 0)
    let source = samples
    let playoutBox = Mutex<SpeakerPlayout?>(nil)
    @Sendable func frame(_ index: Int) -> AudioFrame {
        AudioFrame(
            sampleRate: sampleRate, channels: channels,
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
    try printJSON(
        ProbeReport(
            device: device, frames: blocks * block, elapsedSeconds: elapsed,
            underruns: underrunsAtEnd.load(ordering: .relaxed), dropped: playout.dropped))
}

/// What `stall` reports: the speaker buffer the sound server granted before and after a stall, in milliseconds.
struct StallReport: Codable {
    var device: String
    var bufferBefore: Double
    var bufferAfter: Double
    var underruns: Int
}

/// Plays a tone on the sound server's speaker for a second, stops writing for `milliseconds` (the device runs dry,
/// as when the speaker thread is held up), then plays another second: the buffer should have grown.
func stall(device: String?, milliseconds: Int) throws {
    #if os(Linux)
    guard let layer = PulseAudioLayer.connectIfRunning() else {
        throw AudioDeviceError.failed(name: "sound server", call: "connect", message: "no sound server answers")
    }
    let block = 960
    let stream = try layer.openOutput(named: device, sampleRate: sampleRate, channels: 1, framesPerBlock: block)
    defer { stream.close() }
    let tone = (0..<block).map { Int16(8000 * sin(Double($0) * 2 * Double.pi * 440 / Double(sampleRate))) }
    func playSecond() throws {
        for _ in 0..<(sampleRate / block) {
            try stream.waitUntilWritable()
            try stream.write(tone)
        }
    }
    func inMilliseconds(_ duration: Duration?) -> Double {
        guard let duration else { return 0 }
        return Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) * 1e-15
    }
    try playSecond()
    let before = inMilliseconds(stream.latency)
    Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
    try playSecond()
    try printJSON(
        StallReport(
            device: stream.deviceName, bufferBefore: before, bufferAfter: inMilliseconds(stream.latency),
            underruns: stream.deviceProblems))
    #else
    throw AudioDeviceError.failed(name: "sound server", call: "connect", message: "only on Linux")
    #endif
}

/// Runs `body`, printing a device error as "error: ..." with exit status 2.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch {
        print("error: \(error)")
        throw ExitCode(2)
    }
}

/// A count option checked against its range, with a message naming the option.
func checked(_ value: Int, _ name: String, in range: ClosedRange<Int>) throws -> Int {
    guard range.contains(value) else {
        throw ValidationError("--\(name) \(value) is not from \(range.lowerBound) to \(range.upperBound)")
    }
    return value
}

struct DeviceProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-device-probe", abstract: "Drives ParleyDevices from a child process for the device tests.",
        subcommands: [List.self, Capture.self, Play.self, Stall.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the microphones and speakers as JSON.")

        func run() throws {
            try reportingErrors {
                let layer = PortAudioLayer()
                try printJSON(DeviceList(microphones: try layer.inputDevices(), speakers: try layer.outputDevices()))
            }
        }
    }

    struct Capture: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Record from a microphone into a WAV file.")

        @Option(help: "The microphone (default: the system's).") var device: String?
        @Option(help: "Seconds to record, from 0 to 3600.") var seconds: Double
        @Option(help: "The WAV file written.") var out: String
        @Option(help: "Channels, 1 to 8.") var channels = 1
        @Option(help: "Frames per block, 1 to 48000.") var block = 960

        func validate() throws {
            guard seconds.isFinite, seconds >= 0, seconds <= 3600 else {
                throw ValidationError("--seconds \(seconds) is not a number from 0 to 3600")
            }
            _ = try checked(channels, "channels", in: 1...8)
            _ = try checked(block, "block", in: 1...48_000)
        }

        func run() throws {
            try reportingErrors {
                try capture(device: device, seconds: seconds, output: out, channels: channels, block: block)
            }
        }
    }

    struct Play: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Play a WAV file on a speaker.")

        @Option(help: "The speaker (default: the system's).") var device: String?
        @Option(name: .customLong("in"), help: "The WAV file played.") var input: String
        @Option(help: "Blocks queued before playback starts, 0 to 100.") var prebuffer = 3
        @Option(help: "Frames per block, 1 to 48000.") var block = 960

        func validate() throws {
            _ = try checked(prebuffer, "prebuffer", in: 0...100)
            _ = try checked(block, "block", in: 1...48_000)
        }

        func run() throws {
            try reportingErrors { try play(device: device, input: input, prebuffer: prebuffer, block: block) }
        }
    }
}

extension DeviceProbe {
    struct Stall: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Play on the sound server's speaker, stop writing for a while, and report its buffer before and after.")

        @Option(help: "The speaker (default: the server's).") var device: String?
        @Option(name: .customLong("stall-ms"), help: "Milliseconds without writing, 1 to 5000.") var stallMilliseconds:
            Int

        func validate() throws { _ = try checked(stallMilliseconds, "stall-ms", in: 1...5000) }

        func run() throws { try reportingErrors { try stall(device: device, milliseconds: stallMilliseconds) } }
    }
}

DeviceProbe.main()
