import Dispatch
import Foundation
import ParleyDevices
import Synchronization

/// What a fake stream saw, shared with the test after the stream was handed to a capture or playout.
final class FakeStreamLog: Sendable {
    let reads = Atomic(0)
    let writes = Atomic(0)
    let closes = Atomic(0)
    let written = Mutex<[[Int16]]>([])
    /// Signalled to release a stream that was told to hang.
    let release = DispatchSemaphore(value: 0)
}

/// How a fake stream behaves, call by call.
struct FakeStreamScript: Sendable {
    /// The call number (1-based) from which every read/write throws `error`.
    var failFrom: Int?
    var error = AudioDeviceError.disconnected(name: "fake")
    /// The call number from which a call blocks until `log.release` is signalled (a device that stops answering; on
    /// the device thread, like `microsPerCall`).
    var hangFrom: Int?
    /// Time each call takes, like a device's clock; 0 is an unpaced device that returns at once. The call blocks, as
    /// Pa_ReadStream does: a device simulation, only ever called on the capture's or playout's own device thread.
    var microsPerCall: UInt32 = 0
}

/// A microphone whose block n holds the value n in every sample.
final class FakeInputStream: AudioInputStream {
    let deviceName: String
    let samplesPerBlock: Int
    let script: FakeStreamScript
    let log: FakeStreamLog

    init(name: String = "fake", samplesPerBlock: Int, script: FakeStreamScript = .init(), log: FakeStreamLog) {
        deviceName = name
        self.samplesPerBlock = samplesPerBlock
        self.script = script
        self.log = log
    }

    func read() throws(AudioDeviceError) -> [Int16] {
        let call = log.reads.add(1, ordering: .relaxed).newValue
        if let hang = script.hangFrom, call >= hang { log.release.wait() }
        if let fail = script.failFrom, call >= fail { throw script.error }
        // Device simulation on the capture's own thread (see `FakeStreamScript.microsPerCall`), not a test's wait.
        if script.microsPerCall > 0 { usleep(script.microsPerCall) }
        return [Int16](repeating: Int16(truncatingIfNeeded: call), count: samplesPerBlock)
    }

    func close() { log.closes.add(1, ordering: .relaxed) }
}

/// A speaker that keeps every block written.
final class FakeOutputStream: AudioOutputStream {
    let deviceName: String
    let script: FakeStreamScript
    let log: FakeStreamLog

    init(name: String = "fake", script: FakeStreamScript = .init(), log: FakeStreamLog) {
        deviceName = name
        self.script = script
        self.log = log
    }

    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        let call = log.writes.add(1, ordering: .relaxed).newValue
        if let hang = script.hangFrom, call >= hang { log.release.wait() }
        if let fail = script.failFrom, call >= fail { throw script.error }
        log.written.withLock { $0.append(samples) }
        // Device simulation on the playout's own thread (see `FakeStreamScript.microsPerCall`), not a test's wait.
        if script.microsPerCall > 0 { usleep(script.microsPerCall) }
    }

    func close() { log.closes.add(1, ordering: .relaxed) }
}

/// A sound system with a fixed device list whose streams are fakes.
struct FakeAudioLayer: AudioDeviceLayer {
    var devices: [AudioDeviceInfo]
    var log = FakeStreamLog()

    func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] { devices.filter { $0.inputChannels > 0 } }
    func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] { devices.filter { $0.outputChannels > 0 } }

    func openInput(named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioInputStream
    {
        let device = try device(named: name, kind: .microphone)
        try AudioStreamFormat.check(
            device: device.name, sampleRate: sampleRate, channels: channels, framesPerBlock: framesPerBlock)
        return FakeInputStream(name: device.name, samplesPerBlock: framesPerBlock * channels, log: log)
    }

    func openOutput(named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioOutputStream
    {
        let device = try device(named: name, kind: .speaker)
        try AudioStreamFormat.check(
            device: device.name, sampleRate: sampleRate, channels: channels, framesPerBlock: framesPerBlock)
        return FakeOutputStream(name: device.name, log: log)
    }
}
