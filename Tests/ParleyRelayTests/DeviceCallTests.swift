import Foundation
import Logging
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Sound devices made of memory for calls on loopback: microphones play a tone in real time (20 ms blocks) until
/// they are told to fail; speakers record what they are given. Only the engine's handling of devices is under test
/// here; PortAudio itself is tested against a real sound server in ParleyDevicesTests.
final class FakeSoundDevices: AudioDeviceLayer {
    struct Device: Sendable {
        var name: String
        /// Blocks a stream delivers or takes before it fails as unplugged; nil: never.
        var failAfterBlocks: Int?
        /// Deliver digital silence instead of a tone.
        var silent = false
        /// Opening fails (busy).
        var busy = false
        /// Opening fails: the device cannot work at the rate and channel count asked for.
        var refusesFormat = false
    }

    let microphones: [Device]
    let speakers: [Device]
    /// Samples every speaker was given, by device name.
    let played = Mutex<[String: [Int16]]>([:])
    let opened = Mutex<[String]>([])

    init(microphones: [Device], speakers: [Device]) {
        self.microphones = microphones
        self.speakers = speakers
    }

    private func info(_ device: Device, input: Bool, isDefault: Bool) -> AudioDeviceInfo {
        AudioDeviceInfo(
            name: device.name, inputChannels: input ? 1 : 0, outputChannels: input ? 0 : 1, defaultSampleRate: 48_000,
            isDefaultInput: input && isDefault, isDefaultOutput: !input && isDefault, hostAPI: "fake")
    }

    func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        microphones.enumerated().map { info($1, input: true, isDefault: $0 == microphones.count - 1) }
    }

    func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        speakers.enumerated().map { info($1, input: false, isDefault: $0 == speakers.count - 1) }
    }

    /// The last device of each list is the default.
    private func pick(
        _ name: String?, in devices: [Device], kind: AudioDeviceKind, sampleRate: Int, channels: Int
    ) throws(AudioDeviceError) -> Device {
        guard let device = name.map({ name in devices.first { $0.name == name } }) ?? devices.last else {
            if let name { throw .unknownDevice(kind, name: name, available: devices.map(\.name)) }
            throw .noDevice(kind)
        }
        if device.busy { throw .busy(name: device.name) }
        if device.refusesFormat {
            throw .unsupportedFormat(name: device.name, sampleRate: sampleRate, channels: channels)
        }
        opened.withLock { $0.append(device.name) }
        return device
    }

    func openInput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioInputStream
    {
        FakeInput(
            device: try pick(named, in: microphones, kind: .microphone, sampleRate: sampleRate, channels: channels),
            framesPerBlock: framesPerBlock)
    }

    func openOutput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioOutputStream
    {
        FakeOutput(
            device: try pick(named, in: speakers, kind: .speaker, sampleRate: sampleRate, channels: channels),
            owner: self)
    }

    final class FakeInput: AudioInputStream {
        let device: Device
        let framesPerBlock: Int
        var blocks = 0
        var phase = 0.0
        let start = ContinuousClock.now

        init(device: Device, framesPerBlock: Int) {
            self.device = device
            self.framesPerBlock = framesPerBlock
        }

        var deviceName: String { device.name }

        func read() throws(AudioDeviceError) -> [Int16] {
            if let limit = device.failAfterBlocks, blocks >= limit { throw .disconnected(name: device.name) }
            blocks += 1
            // Paced like a real device: block n is ready 20 ms × n after the start. A device simulation, blocking as
            // Pa_ReadStream does, on the engine's own microphone thread (never a test's).
            let due = start + .milliseconds(20 * blocks)
            let wait = due - ContinuousClock.now
            if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18) }
            if device.silent { return [Int16](repeating: 0, count: framesPerBlock) }
            return (0..<framesPerBlock).map { _ in
                phase += 2 * .pi * 440 / 48_000
                return Int16(8000 * sin(phase))
            }
        }

        func close() {}
    }

    final class FakeOutput: AudioOutputStream {
        let device: Device
        let owner: FakeSoundDevices
        var blocks = 0
        let start = ContinuousClock.now

        init(device: Device, owner: FakeSoundDevices) {
            self.device = device
            self.owner = owner
        }

        var deviceName: String { device.name }

        func write(_ samples: [Int16]) throws(AudioDeviceError) {
            if let limit = device.failAfterBlocks, blocks >= limit { throw .disconnected(name: device.name) }
            blocks += 1
            owner.played.withLock { $0[device.name, default: []] += samples }
            // Paced like a real device (a simulation on the engine's own speaker thread, blocking as Pa_WriteStream does).
            let due = start + .milliseconds(20 * blocks)
            let wait = due - ContinuousClock.now
            if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18) }
        }

        func close() {}
    }
}

/// A camera list that is empty or fails: the engine's fallbacks without V4L2.
struct MissingCameras: CameraDeviceLayer {
    var error: CameraError?

    func cameras() throws(CameraError) -> [CameraInfo] {
        if let error { throw error }
        return []
    }

    func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
        throw .noCamera
    }
}

/// Calls whose microphone and speaker are real engine paths over injected devices that fail on cue.
@Suite(.serialized, .lane(.timing))
struct DeviceCallTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func configuration(_ name: String, port: Int, audio: AudioSourceChoice, sink: AudioSinkChoice) -> CallConfiguration
    {
        CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "devices", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150), audioSource: audio,
            audioSink: sink, showsSelfView: false, logger: quietLogger())
    }

    func alerts(_ log: EventLog) -> [String] {
        log.all.compactMap { if case .alert(.message(let text)) = $0 { text } else { nil } }
    }

    @Test("a microphone unplugged mid-call: a notice, the default microphone takes over, the others keep hearing")
    func microphoneUnplugged() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let aliceDevices = FakeSoundDevices(
            microphones: [.init(name: "USB Mic", failAfterBlocks: 75), .init(name: "Built-in")], speakers: [])
        let bobDevices = FakeSoundDevices(microphones: [], speakers: [.init(name: "Headphones")])
        let alice = try CallEngine(
            configuration("alice", port: relay.signalingPort, audio: .microphone("USB Mic"), sink: .none),
            devices: MediaDevices(audio: aliceDevices, cameras: MissingCameras()))
        let bob = try CallEngine(
            configuration("bob", port: relay.signalingPort, audio: .silence, sink: .speaker(nil)),
            devices: MediaDevices(audio: bobDevices, cameras: MissingCameras()))
        let aliceLog = EventLog()
        let bobLog = EventLog()
        let tasks = [aliceLog.consume(alice), bobLog.consume(bob)]
        alice.start()
        bob.start()

        let switched = await eventually(within: .seconds(8)) {
            self.alerts(aliceLog).contains {
                $0.hasPrefix("Microphone USB Mic stopped (") && $0.hasSuffix("): switched to the default microphone")
            }
        }
        #expect(switched, "alerts: \(alerts(aliceLog))")
        #expect(aliceDevices.opened.withLock { $0 } == ["USB Mic", "Built-in"])
        // The default microphone sends 50 packets a second: 35 more take 0.7 s, and 3 s leaves room.
        func audioReceived() async -> Int { await bob.statistics().peers.values.first?.audioPacketsReceived ?? 0 }
        let before = await audioReceived()
        let flowing = await eventually(within: .seconds(3)) { await audioReceived() - before >= 35 }
        let received = await audioReceived() - before
        #expect(flowing, "bob keeps receiving alice's audio from the default microphone (\(received))")
        #expect(
            aliceLog.all.contains { if case .microphoneLevel(let level?) = $0 { level > 0.3 } else { false } },
            "the meter shows the tone")

        // Bob's speaker is paced by the device (48 000 samples a second) and plays alice's tone: more than a second
        // of it within 3 s of the above.
        let secondPlayed = await eventually(within: .seconds(3)) {
            bobDevices.played.withLock { $0["Headphones"] ?? [] }.count > 48_000
        }
        let played = bobDevices.played.withLock { $0["Headphones"] ?? [] }
        #expect(secondPlayed, "more than a second played (\(played.count) samples)")
        let loud = played.map { abs(Int($0)) }.max() ?? 0
        #expect(loud > 4000, "the tone (peak 8000) reached bob's speaker (peak \(loud))")

        await alice.leave()
        await bob.leave()
        for task in tasks { task.cancel() }
        await relay.shutdown()
    }

    @Test("no microphone left: the call goes on sending silence and says so; a speaker that fails twice stops playing")
    func everythingFails() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let devices = FakeSoundDevices(
            microphones: [.init(name: "Busy Mic", busy: true), .init(name: "Flaky", failAfterBlocks: 10)],
            speakers: [.init(name: "Broken", failAfterBlocks: 5)])
        let engine = try CallEngine(
            configuration("carol", port: relay.signalingPort, audio: .microphone("Busy Mic"), sink: .speaker(nil)),
            devices: MediaDevices(audio: devices, cameras: MissingCameras()))
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        let told = await eventually(within: .seconds(6)) {
            let alerts = self.alerts(log)
            return alerts.contains {
                $0.hasPrefix("Microphone Busy Mic: ") && $0.hasSuffix("; using the default microphone")
            }
                && alerts.contains { $0.hasPrefix("Microphone Flaky stopped (") && $0.contains("sending silence") }
                && alerts.contains {
                    $0.hasPrefix("Speaker Broken stopped (") && $0.hasSuffix("call audio is not played")
                }
        }
        #expect(told, "alerts: \(alerts(log))")
        #expect(log.all.contains { $0 == .microphoneLevel(nil) }, "the meter goes away with the microphone")
        // Silence goes out at 50 packets a second, paced by the engine's timer: 20 take 0.4 s, and 3 s leaves room.
        let sent = await engine.statistics().audioPacketsSent
        let going = await eventually(within: .seconds(3)) { await engine.statistics().audioPacketsSent - sent >= 20 }
        let more = await engine.statistics().audioPacketsSent - sent
        #expect(going, "silence keeps the audio stream going (\(more) packets)")
        await engine.leave()
        task.cancel()
        await relay.shutdown()
    }

    @Test(
        "a microphone and a speaker that refuse 48 kHz mono: a notice each, the defaults take over, the call is heard")
    func unsupportedFormat() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let devices = FakeSoundDevices(
            microphones: [.init(name: "Odd Mic", refusesFormat: true), .init(name: "Desk Mic")],
            speakers: [.init(name: "Odd Speaker", refusesFormat: true), .init(name: "Desk Speaker")])
        let bobDevices = FakeSoundDevices(microphones: [], speakers: [.init(name: "Bob Speaker")])
        let alice = try CallEngine(
            configuration(
                "alice", port: relay.signalingPort, audio: .microphone("Odd Mic"), sink: .speaker("Odd Speaker")),
            devices: MediaDevices(audio: devices, cameras: MissingCameras()))
        let bob = try CallEngine(
            configuration("bob", port: relay.signalingPort, audio: .synthetic, sink: .speaker(nil)),
            devices: MediaDevices(audio: bobDevices, cameras: MissingCameras()))
        let log = EventLog()
        let tasks = [log.consume(alice), EventLog().consume(bob)]
        alice.start()
        bob.start()
        let told = await eventually(within: .seconds(6)) {
            let alerts = self.alerts(log)
            return alerts.contains(
                "Microphone Odd Mic: \"Odd Mic\" cannot work at 48000 Hz with 1 channel; using the default microphone")
                && alerts.contains(
                    "Speaker Odd Speaker: \"Odd Speaker\" cannot work at 48000 Hz with 1 channel; using the default speaker"
                )
        }
        #expect(told, "alerts: \(alerts(log))")
        #expect(
            devices.opened.withLock { $0 } == ["Desk Mic", "Desk Speaker"]
                || devices.opened.withLock { $0 } == ["Desk Speaker", "Desk Mic"])
        // Alice's default microphone reaches bob's speaker, and bob's voice reaches alice's default speaker.
        let heard = await eventually(within: .seconds(8)) {
            let bobHears = bobDevices.played.withLock { $0["Bob Speaker"] ?? [] }
            let aliceHears = devices.played.withLock { $0["Desk Speaker"] ?? [] }
            return bobHears.contains { abs(Int($0)) > 2000 } && aliceHears.contains { abs(Int($0)) > 500 }
        }
        #expect(heard, "the call is heard both ways after the fallbacks")
        await alice.leave()
        await bob.leave()
        for task in tasks { task.cancel() }
        await relay.shutdown()
    }

    @Test("an unmuted microphone that delivers digital silence gets a notice in a real call, once")
    func silentMicrophone() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let devices = FakeSoundDevices(microphones: [.init(name: "Dead", silent: true)], speakers: [])
        let engine = try CallEngine(
            configuration("dave", port: relay.signalingPort, audio: .microphone(nil), sink: .none),
            devices: MediaDevices(audio: devices, cameras: MissingCameras()))
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        let notice = "Your microphone is silent: pick another with --mic or in settings"
        // When it is said (5 s into the silence, not before) and that it is said once a call, however long the
        // silence lasts, are MicrophoneSilenceWatchTests' job on a manual clock. Here the engine says it in a real
        // call: the fake microphone is silent from its first block, so joining and 5 s of silence fit in 10 s.
        let told = await eventually(within: .seconds(10)) { self.alerts(log).contains(notice) }
        #expect(told, "\(alerts(log))")
        #expect(alerts(log).filter { $0 == notice }.count == 1)
        await engine.leave()
        task.cancel()
        await relay.shutdown()
    }

    @Test("devices that are missing before the call: synthetic voice, no playback, camera off, said in one line")
    func resolution() {
        let config = configuration("erin", port: 1, audio: .microphone(nil), sink: .speaker(nil))
        var wanted = config
        wanted.videoSources = [.allCameras]
        let none = MediaDevices(
            audio: FakeSoundDevices(microphones: [], speakers: []), cameras: MissingCameras(error: .noCamera))
        let (resolved, notices) = wanted.resolvingDevices(none)
        #expect(resolved.audioSource == .synthetic)
        #expect(resolved.audioSink == .none)
        #expect(resolved.cameraOff)
        #expect(resolved.videoSources == [.synthetic])
        #expect(
            notices == [
                "No microphone, speaker or camera found: the others hear a synthetic voice; call audio is not played; "
                    + "your camera is off (\(CameraError.noCamera)); turning it on sends a synthetic picture "
                    + "(see `parley devices`)"
            ])
        var speakerOnly = config
        speakerOnly.audioSource = .synthetic
        let quietMachine = MediaDevices(
            audio: FakeSoundDevices(microphones: [], speakers: []), cameras: MissingCameras(error: .noCamera))
        #expect(
            speakerOnly.resolvingDevices(quietMachine).notices == [
                "No speaker found: call audio is not played (see `parley devices`)"
            ])

        let some = MediaDevices(
            audio: FakeSoundDevices(microphones: [.init(name: "Mic")], speakers: [.init(name: "Spk")]),
            cameras: MissingCameras())
        let (kept, quiet) = config.resolvingDevices(some)
        #expect(kept.audioSource == .microphone(nil) && kept.audioSink == .speaker(nil))
        #expect(kept.videoSources == [.synthetic] && !kept.cameraOff, "no camera asked for: nothing changes")
        #expect(quiet.isEmpty)
    }
}

/// Cameras made of memory: each delivers grey I420 pictures at 15 frames/s until it fails after `failAfterFrames`.
struct FakeCameras: CameraDeviceLayer {
    var attached: [(name: String, failAfterFrames: Int?)]

    func cameras() throws(CameraError) -> [CameraInfo] {
        attached.enumerated().map { index, camera in
            CameraInfo(
                name: camera.name, path: "/dev/video\(index)",
                formats: [CameraFormat(pixelFormat: .i420, width: 160, height: 120, fps: 15)])
        }
    }

    func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
        let limit = attached.first { $0.name == camera.name }?.failAfterFrames
        return Stream(name: camera.name, format: format, failAfterFrames: limit)
    }

    final class Stream: CameraStream {
        let name: String
        let format: CameraFormat
        let failAfterFrames: Int?
        var frames = 0

        init(name: String, format: CameraFormat, failAfterFrames: Int?) {
            self.name = name
            self.format = format
            self.failAfterFrames = failAfterFrames
        }

        func nextFrame(timeout: Duration) throws(CameraError) -> RawCameraFrame? {
            if let failAfterFrames, frames >= failAfterFrames { throw .disconnected(name: name) }
            frames += 1
            // A 15 fps camera (a device simulation on the camera source's own capture thread, never a test's).
            Thread.sleep(forTimeInterval: 1.0 / 15)
            let size = format.width * format.height
            return RawCameraFrame(format: format, bytes: [UInt8](repeating: 128, count: size + size / 2))
        }

        func close() {}
    }
}

extension DeviceCallTests {
    func videoConfiguration(_ name: String, port: Int, sources: [VideoSourceChoice]) -> CallConfiguration {
        var configuration = configuration(name, port: port, audio: .silence, sink: .none)
        configuration.videoSources = sources
        return configuration
    }

    func notices(_ log: EventLog) -> [String] {
        log.all.compactMap { if case .notice(let text) = $0 { text } else { nil } }
    }

    @Test("c names the camera now live; with one source it says so")
    func switchingCameras() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let devices = MediaDevices(
            audio: FakeSoundDevices(microphones: [], speakers: []),
            cameras: FakeCameras(attached: [("Webcam", nil), ("USB Camera", nil)]))
        let (resolved, resolutionNotices) = videoConfiguration(
            "frank", port: relay.signalingPort, sources: [.allCameras]
        ).resolvingDevices(devices)
        #expect(resolutionNotices.isEmpty)
        #expect(resolved.videoSources == [.camera("Webcam"), .camera("USB Camera"), .synthetic])
        let engine = try CallEngine(resolved, devices: devices)
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        // Alone in the room nothing is encoded (nobody watches), but the camera is read.
        #expect(await eventually { await engine.statistics().videoFramesCaptured >= 5 })
        for _ in 0..<3 { engine.perform(.switchCamera) }
        let named = await eventually {
            self.notices(log) == ["Camera: USB Camera", "Camera: synthetic test picture", "Camera: Webcam"]
        }
        #expect(named, "notices: \(notices(log))")
        await engine.leave()

        let single = try CallEngine(videoConfiguration("gina", port: relay.signalingPort, sources: [.synthetic]))
        let singleLog = EventLog()
        let singleTask = singleLog.consume(single)
        single.start()
        #expect(await eventually { await single.statistics().localID != 0 })
        single.perform(.switchCamera)
        #expect(await eventually { self.notices(singleLog) == ["Only one camera: synthetic test picture"] })
        await single.leave()
        task.cancel()
        singleTask.cancel()
        await relay.shutdown()
    }

    @Test("a camera unplugged mid-call: the next camera takes over; the last one gone turns the camera off")
    func cameraUnplugged() async throws {
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let devices = MediaDevices(
            audio: FakeSoundDevices(microphones: [], speakers: []),
            cameras: FakeCameras(attached: [("Webcam", 20), ("USB Camera", 40)]))
        let (resolved, _) = videoConfiguration("hank", port: relay.signalingPort, sources: [.allCameras])
            .resolvingDevices(devices)
        let engine = try CallEngine(resolved, devices: devices)
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        let switched = await eventually(within: .seconds(6)) {
            self.alerts(log).contains {
                $0.hasPrefix("Camera Webcam stopped (") && $0.hasSuffix("): switched to USB Camera")
            }
        }
        #expect(switched, "alerts: \(alerts(log))")
        let off = await eventually(within: .seconds(8)) {
            log.all.contains {
                if case .cameraStopped(let text) = $0 {
                    text.hasPrefix("Camera USB Camera stopped (") && text.hasSuffix("): your camera is off")
                } else {
                    false
                }
            }
        }
        #expect(off, "events: \(log.all.suffix(5))")
        let captured = await engine.statistics().videoFramesCaptured
        try await Task.sleep(for: .milliseconds(500))
        #expect(await engine.statistics().videoFramesCaptured == captured, "nothing is read with the camera off")
        await engine.leave()
        task.cancel()
        await relay.shutdown()
    }
}
