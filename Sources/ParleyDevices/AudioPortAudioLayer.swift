import CAudioShim
import CPortAudio
import Synchronization

/// The real sound system: PortAudio's blocking read/write API with 16-bit samples. On Linux PortAudio talks to ALSA,
/// which reaches PipeWire and PulseAudio desktops through its `default` → pulse plugin; on macOS, Core Audio.
///
/// PortAudio is initialised once per process and never terminated, so the device list is the one seen at the first
/// use (a device plugged in later appears after a restart). Listing, opening and closing are serialised: PortAudio
/// keeps process-wide lists that are not thread-safe. Reading and writing open streams runs in parallel.
public final class PortAudioLayer: AudioDeviceLayer {
    /// The layer; PortAudio itself starts on first use.
    public init() {}

    /// `Pa_Initialize`'s outcome for the whole process.
    private static let initialisation: Result<Void, AudioDeviceError> = {
        parley_audio_quiet_alsa()
        parley_audio_quiet_jack()
        let code = Pa_Initialize()
        guard code == paNoError.rawValue else {
            return .failure(.failed(name: "sound system", call: "Pa_Initialize", message: portAudioText(code)))
        }
        return .success(())
    }()

    /// Held around every PortAudio call that touches its process-wide state.
    static let lock = Mutex<Void>(())

    public func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try Self.lock.withLock { _ throws(AudioDeviceError) in
            try Self.listed().map(\.info).filter { $0.serves(.microphone) }
        }
    }

    public func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try Self.lock.withLock { _ throws(AudioDeviceError) in
            try Self.listed().map(\.info).filter { $0.serves(.speaker) }
        }
    }

    public func openInput(
        named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) -> any AudioInputStream {
        let stream = try open(name, .microphone, sampleRate: sampleRate, channels: channels, block: framesPerBlock)
        return PortAudioInputStream(stream)
    }

    public func openOutput(
        named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) -> any AudioOutputStream {
        let stream = try open(name, .speaker, sampleRate: sampleRate, channels: channels, block: framesPerBlock)
        return PortAudioOutputStream(stream)
    }

    private func open(
        _ name: String?, _ kind: AudioDeviceKind, sampleRate: Int, channels: Int, block: Int
    ) throws(AudioDeviceError) -> PortAudioStream {
        try Self.lock.withLock { _ throws(AudioDeviceError) -> PortAudioStream in
            let listed = try Self.listed()
            let device = try AudioDeviceMatch.pick(name, kind: kind, among: listed.map(\.info))
            try AudioStreamFormat.check(
                device: device.name, sampleRate: sampleRate, channels: channels, framesPerBlock: block)
            let available = kind == .microphone ? device.inputChannels : device.outputChannels
            guard channels <= available else {
                throw .unsupportedFormat(name: device.name, sampleRate: sampleRate, channels: channels)
            }
            let index = listed.first { $0.info == device }?.index ?? paNoDevice
            return try PortAudioStream(
                device: device.name, index: index, kind: kind, sampleRate: sampleRate, channels: channels,
                framesPerBlock: block)
        }
    }

    /// Every device PortAudio knows, with its index. Call with `lock` held.
    private static func listed() throws(AudioDeviceError) -> [(index: PaDeviceIndex, info: AudioDeviceInfo)] {
        try initialisation.get()
        let count = Pa_GetDeviceCount()
        guard count >= 0 else {
            throw .failed(name: "sound system", call: "Pa_GetDeviceCount", message: portAudioText(count))
        }
        let defaultInput = Pa_GetDefaultInputDevice()
        let defaultOutput = Pa_GetDefaultOutputDevice()
        var devices: [(index: PaDeviceIndex, info: AudioDeviceInfo)] = []
        for index in 0..<count {
            guard let raw = Pa_GetDeviceInfo(index)?.pointee, let rawName = raw.name else { continue }
            let hostAPI = Pa_GetHostApiInfo(raw.hostApi)?.pointee.name.map { String(cString: $0) } ?? "unknown"
            let rate = raw.defaultSampleRate.isFinite ? Int(max(0, min(raw.defaultSampleRate, 1e7))) : 0
            devices.append(
                (
                    index,
                    AudioDeviceInfo(
                        name: String(cString: rawName), inputChannels: Int(max(0, raw.maxInputChannels)),
                        outputChannels: Int(max(0, raw.maxOutputChannels)), defaultSampleRate: rate,
                        isDefaultInput: index == defaultInput, isDefaultOutput: index == defaultOutput, hostAPI: hostAPI
                    )
                ))
        }
        return devices
    }
}

/// The PortAudio sentinel for "no device" (a cast macro in portaudio.h, which Swift does not import).
let paNoDevice: PaDeviceIndex = -1
/// `paInt16` (a cast macro).
private let paInt16Format: PaSampleFormat = 0x0000_0008
/// `paClipOff` (a cast macro): samples are already 16-bit, there is nothing to clip.
private let paClipOffFlag: PaStreamFlags = 0x0000_0001

/// PortAudio's text for an error code, with the host's own message for host errors.
func portAudioText(_ code: PaError) -> String {
    var text = Pa_GetErrorText(code).map { String(cString: $0) } ?? "error \(code)"
    if code == paUnanticipatedHostError.rawValue, let host = Pa_GetLastHostErrorInfo()?.pointee {
        let hostText = host.errorText.map { String(cString: $0) } ?? ""
        text += " (\(hostText.isEmpty ? "code" : hostText) \(host.errorCode))"
    }
    return text
}

/// The one owner of a `PaStream`: opened and started in `init`, stopped and closed by `close()` or `deinit`.
final class PortAudioStream {
    let deviceName: String
    let channels: Int
    let framesPerBlock: Int
    private let kind: AudioDeviceKind
    private let sampleRate: Int
    private var stream: UnsafeMutableRawPointer?
    /// A speaker's buffer in frames, as free right after starting (0 if PortAudio could not say).
    private var bufferFrames = 0

    init(
        device: String, index: PaDeviceIndex, kind: AudioDeviceKind, sampleRate: Int, channels: Int,
        framesPerBlock: Int
    ) throws(AudioDeviceError) {
        deviceName = device
        self.channels = channels
        self.framesPerBlock = framesPerBlock
        self.kind = kind
        self.sampleRate = sampleRate
        guard index != paNoDevice, let info = Pa_GetDeviceInfo(index)?.pointee else {
            throw .disconnected(name: device)
        }
        // The system's low latency, but never under three blocks: blocking writes need room to absorb scheduling.
        let blockSeconds = Double(framesPerBlock) / Double(sampleRate)
        let latency = max(
            kind == .microphone ? info.defaultLowInputLatency : info.defaultLowOutputLatency,
            3 * blockSeconds)
        var parameters = PaStreamParameters(
            device: index, channelCount: Int32(channels), sampleFormat: paInt16Format, suggestedLatency: latency,
            hostApiSpecificStreamInfo: nil)
        var opened: UnsafeMutableRawPointer?
        let code = withUnsafePointer(to: &parameters) { pointer in
            Pa_OpenStream(
                &opened, kind == .microphone ? pointer : nil, kind == .speaker ? pointer : nil, Double(sampleRate),
                UInt(framesPerBlock), paClipOffFlag, nil, nil)
        }
        guard code == paNoError.rawValue, let opened else {
            throw Self.openError(code, device: device, sampleRate: sampleRate, channels: channels)
        }
        let started = Pa_StartStream(opened)
        guard started == paNoError.rawValue else {
            let error = Self.startError(started, device: device)
            Pa_CloseStream(opened)
            throw error
        }
        stream = opened
        if kind == .speaker { bufferFrames = max(0, Pa_GetStreamWriteAvailable(opened)) }
    }

    deinit { close() }

    /// Reads one block; an overflow (samples the system dropped before this read) still returns the block.
    func read() throws(AudioDeviceError) -> [Int16] {
        guard let stream else { throw .disconnected(name: deviceName) }
        let count = framesPerBlock * channels
        var code: PaError = paNoError.rawValue
        let samples = [Int16](unsafeUninitializedCapacity: count) { buffer, initialised in
            code = Pa_ReadStream(stream, buffer.baseAddress, UInt(framesPerBlock))
            if code != paNoError.rawValue && code != paInputOverflowed.rawValue {
                buffer.initialize(repeating: 0)
            }
            initialised = count
        }
        guard code == paNoError.rawValue || code == paInputOverflowed.rawValue else {
            throw Self.transferError(code, device: deviceName, call: "Pa_ReadStream")
        }
        return samples
    }

    /// Writes one block; an underflow (the device ran dry before this write) is not an error.
    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        guard let stream else { throw .disconnected(name: deviceName) }
        guard samples.count == framesPerBlock * channels else {
            throw .failed(
                name: deviceName, call: "write",
                message: "block of \(samples.count) samples, expected \(framesPerBlock * channels)")
        }
        let code = samples.withUnsafeBufferPointer { Pa_WriteStream(stream, $0.baseAddress, UInt(framesPerBlock)) }
        guard code == paNoError.rawValue || code == paOutputUnderflowed.rawValue else {
            throw Self.transferError(code, device: deviceName, call: "Pa_WriteStream")
        }
    }

    /// A speaker plays what it holds first; a microphone stops at once. PortAudio 19.6's ALSA `Pa_StopStream` drops
    /// what the device still holds (it avoids `snd_pcm_drain`, which "tends to lock up"), so the speaker waits for
    /// its buffer to play out itself, at most one second.
    func close() {
        guard let stream else { return }
        self.stream = nil
        if kind == .speaker, bufferFrames > 0 {
            let pending = bufferFrames - max(0, Pa_GetStreamWriteAvailable(stream))
            let nanoseconds = min(1_000_000_000, max(0, pending + framesPerBlock) * 1_000_000_000 / sampleRate)
            audioSleep(nanoseconds: UInt64(nanoseconds))
        }
        PortAudioLayer.lock.withLock { _ in
            if kind == .speaker { Pa_StopStream(stream) } else { Pa_AbortStream(stream) }
            Pa_CloseStream(stream)
        }
    }

    static func openError(_ code: PaError, device: String, sampleRate: Int, channels: Int) -> AudioDeviceError {
        switch code {
        case paDeviceUnavailable.rawValue:
            return .busy(name: device)
        case paInvalidSampleRate.rawValue, paInvalidChannelCount.rawValue, paSampleFormatNotSupported.rawValue:
            return .unsupportedFormat(name: device, sampleRate: sampleRate, channels: channels)
        default:
            return .failed(name: device, call: "Pa_OpenStream", message: portAudioText(code))
        }
    }

    /// The stream opened a moment ago: a host error on starting it means the device went away in between (a sound
    /// server stopping answers ALSA's prepare with an I/O error), which is what the person should read.
    static func startError(_ code: PaError, device: String) -> AudioDeviceError {
        switch code {
        case paDeviceUnavailable.rawValue:
            return .busy(name: device)
        case paUnanticipatedHostError.rawValue:
            return .disconnected(name: device)
        default:
            return .failed(name: device, call: "Pa_StartStream", message: portAudioText(code))
        }
    }

    /// After a stream worked, a failing read or write means the device went away, unless PortAudio says we misused it.
    static func transferError(_ code: PaError, device: String, call: String) -> AudioDeviceError {
        switch code {
        case paNotInitialized.rawValue, paBadStreamPtr.rawValue, paStreamIsStopped.rawValue,
            paCanNotReadFromAnOutputOnlyStream.rawValue, paCanNotWriteToAnInputOnlyStream.rawValue:
            return .failed(name: device, call: call, message: portAudioText(code))
        default:
            return .disconnected(name: device)
        }
    }
}

/// A microphone opened through PortAudio.
final class PortAudioInputStream: AudioInputStream {
    private let stream: PortAudioStream
    init(_ stream: PortAudioStream) { self.stream = stream }
    var deviceName: String { stream.deviceName }
    func read() throws(AudioDeviceError) -> [Int16] { try stream.read() }
    func close() { stream.close() }
}

/// A speaker opened through PortAudio.
final class PortAudioOutputStream: AudioOutputStream {
    private let stream: PortAudioStream
    init(_ stream: PortAudioStream) { self.stream = stream }
    var deviceName: String { stream.deviceName }
    func write(_ samples: [Int16]) throws(AudioDeviceError) { try stream.write(samples) }
    func close() { stream.close() }
}
