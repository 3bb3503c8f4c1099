import Foundation
import Logging
import ParleyDevices
import ParleyEngine
import ParleyMedia
import ParleyRelay
import ParleyWire
import Synchronization

/// Echo cancellation measured in a call (`parley-bench echo`, the last table): alice talks (the synthetic voice);
/// bob's speaker plays her into a simulated room whose microphone hears it back after a delay at -6 dB, and bob says
/// nothing. What alice receives from bob is then only her own echo: its level with bob's echo cancellation off and
/// on gives the ERLE the far end hears, after Opus both ways, the relay and the jitter buffers, with bob's devices
/// paced by their own clocks as real ones are.
public enum CallEchoBench {
    /// Seconds of call per case, and the seconds at the start left out (the canceller converging).
    public static func run(
        seconds: Int = 16, settle: Int = 8,
        log: (String) -> Void = { _ in }
    ) async throws -> BenchTable {
        var table = BenchTable(
            title: "Echo cancellation in a call: what alice hears of her own voice back from bob (\(seconds) s a case)",
            columns: [
                "Echo delay", "Bob's audio at alice after \(settle) s, his cancellation off / on (dBFS)",
                "ERLE in the call dB", "Process CPU % of one core, off / on",
            ])
        var erles: [Double] = []
        for delay in EchoBench.delays {
            var levels: [Bool: Double] = [:]
            var cpus: [Bool: Double] = [:]
            for cancel in [false, true] {
                log("echo in a call: \(delay) ms, cancellation \(cancel ? "on" : "off")")
                let (level, cpu) = try await measure(
                    delayMilliseconds: delay, cancel: cancel, seconds: seconds,
                    settle: settle)
                levels[cancel] = level
                cpus[cancel] = cpu
            }
            let erle = levels[false]! - levels[true]!
            erles.append(erle)
            table.add([
                "\(delay) ms", "\(formatted(levels[false]!)) / \(formatted(levels[true]!))", formatted(erle),
                "\(formatted(cpus[false]! * 100)) / \(formatted(cpus[true]! * 100))",
            ])
        }
        table.notes = [
            "One process: an in-process relay and two call engines on loopback. Alice sends the synthetic voice and "
                + "records what she receives; her camera and her own processing are off. Bob's devices are a "
                + "simulated room: the speaker plays his playout at real time; the microphone, paced at 20 ms blocks "
                + "by its own clock, returns what the speaker played the echo delay earlier at "
                + "\(Int(EchoBench.echoGainDB)) dB. Bob's camera is off.",
            "ERLE in the call = alice's level of bob's audio with his cancellation off minus on, after the first "
                + "\(settle) s. CPU: the whole process (relay, both engines, the simulated devices) by getrusage; "
                + "off against on is what bob's echo cancellation and noise suppression add to a call.",
            goalNote(
                "ERLE in the call ≥ 20 dB, every delay", met: erles.allSatisfy { $0 >= 20 },
                erles.map { formatted($0) }.joined(separator: " / ") + " dB at "
                    + EchoBench.delays.map(String.init).joined(separator: " / ") + " ms"),
        ]
        return table
    }

    /// One case: alice's level of bob's audio after `settle` s (dBFS) and the process's CPU share.
    static func measure(delayMilliseconds: Int, cancel: Bool, seconds: Int, settle: Int) async throws
        -> (level: Double, cpu: Double)
    {
        var logger = Logger(label: "bench.echo")
        logger.logLevel = .critical
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger))
        let server = ServerAddress(host: "127.0.0.1", port: relay.signalingPort)
        let recording = NSTemporaryDirectory() + "parley-echo-call-\(getpid())-\(delayMilliseconds)-\(cancel).wav"
        defer { try? FileManager.default.removeItem(atPath: recording) }
        let room = SimulatedRoom(delayMilliseconds: delayMilliseconds, gainDB: EchoBench.echoGainDB)
        let alice = try CallEngine(
            CallConfiguration(
                server: server, room: "echo", name: "alice", audioSource: .synthetic, audioSink: .file(recording),
                cameraOff: true, decodesVideo: false, showsSelfView: false, echoCancellation: false, logger: logger))
        let bob = try CallEngine(
            CallConfiguration(
                server: server, room: "echo", name: "bob", audioSource: .microphone(nil), audioSink: .speaker(nil),
                cameraOff: true, decodesVideo: false, showsSelfView: false, echoCancellation: cancel, logger: logger),
            devices: MediaDevices(audio: room, cameras: NoCameras()))
        let drains = [alice, bob].map { engine in Task { for await _ in engine.events {} } }
        let startCPU = ownCPUSeconds()
        let start = ContinuousClock.now
        alice.start()
        bob.start()
        try await Task.sleep(for: .seconds(seconds))
        let cpu = (ownCPUSeconds() - startCPU) / ParleyBench.seconds(ContinuousClock.now - start)
        await alice.leave()
        await bob.leave()
        for drain in drains { drain.cancel() }
        await relay.shutdown()
        let heard = try WAVAudio.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: recording)))).samples
        let from = min(heard.count, 48_000 * settle)
        return (EchoBench.dBFS(heard[from...]), cpu)
    }
}

/// No cameras at all.
struct NoCameras: CameraDeviceLayer {
    func cameras() throws(CameraError) -> [CameraInfo] { [] }
    func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
        throw .noCamera
    }
}

/// One speaker and one microphone in the same simulated room: the microphone hears what the speaker played
/// `delayMilliseconds` earlier at `gainDB`, and nothing else. Both are paced at real time by their own clocks.
final class SimulatedRoom: AudioDeviceLayer {
    let delaySamples: Int
    let gain: Double
    /// Everything the speaker played, from its first block.
    let played = Mutex<[Int16]>([])

    init(delayMilliseconds: Int, gainDB: Double) {
        delaySamples = 48 * delayMilliseconds
        gain = pow(10, gainDB / 20)
    }

    func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        [
            AudioDeviceInfo(
                name: "room microphone", inputChannels: 1, outputChannels: 0, defaultSampleRate: 48_000,
                isDefaultInput: true, hostAPI: "simulated")
        ]
    }

    func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        [
            AudioDeviceInfo(
                name: "room speaker", inputChannels: 0, outputChannels: 1, defaultSampleRate: 48_000,
                isDefaultOutput: true, hostAPI: "simulated")
        ]
    }

    func openInput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioInputStream
    {
        Microphone(room: self, framesPerBlock: framesPerBlock)
    }

    func openOutput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioOutputStream
    {
        Speaker(room: self, framesPerBlock: framesPerBlock)
    }

    /// Sleeps until `blocks` blocks of `frames` have been due since `start`.
    static func pace(start: ContinuousClock.Instant, blocks: Int, frames: Int) {
        let due = start + .microseconds(Int64(blocks) * Int64(frames) * 1_000_000 / 48_000)
        let wait = due - ContinuousClock.now
        if wait > .zero { Thread.sleep(forTimeInterval: ParleyBench.seconds(wait)) }
    }

    final class Microphone: AudioInputStream {
        let room: SimulatedRoom
        let framesPerBlock: Int
        var blocks = 0
        let start = ContinuousClock.now

        init(room: SimulatedRoom, framesPerBlock: Int) {
            self.room = room
            self.framesPerBlock = framesPerBlock
        }

        var deviceName: String { "room microphone" }

        func read() throws(AudioDeviceError) -> [Int16] {
            let first = blocks * framesPerBlock - room.delaySamples
            blocks += 1
            SimulatedRoom.pace(start: start, blocks: blocks, frames: framesPerBlock)
            let gain = room.gain
            return room.played.withLock { played in
                (first..<(first + framesPerBlock)).map { index in
                    index >= 0 && index < played.count
                        ? Int16(clamping: Int((Double(played[index]) * gain).rounded())) : 0
                }
            }
        }

        func close() {}
    }

    final class Speaker: AudioOutputStream {
        let room: SimulatedRoom
        let framesPerBlock: Int
        var blocks = 0
        let start = ContinuousClock.now

        init(room: SimulatedRoom, framesPerBlock: Int) {
            self.room = room
            self.framesPerBlock = framesPerBlock
        }

        var deviceName: String { "room speaker" }

        func write(_ samples: [Int16]) throws(AudioDeviceError) {
            room.played.withLock { $0 += samples }
            blocks += 1
            SimulatedRoom.pace(start: start, blocks: blocks, frames: framesPerBlock)
        }

        func close() {}
    }
}
