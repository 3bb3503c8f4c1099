#if os(Linux)
import CPulse
import Foundation
import Synchronization

/// Microphones and speakers through a running PulseAudio server, or PipeWire's pulse server (`pipewire-pulse`):
/// devices listed by the description the desktop's sound settings show (pavucontrol's names), opened with buffers
/// sized from the device, and watched for a new default or a device plugged in or out. `MediaDevices.system` uses it
/// whenever a server answers and PortAudio (ALSA, Core Audio) otherwise.
///
/// One connection (libpulse's threaded main loop and a context) per layer, made on first use and made again when the
/// server went away. Every libpulse call holds the main loop's lock; callbacks only wake the waiting thread.
public final class PulseAudioLayer: AudioDeviceLayer {
    private let connection = Mutex<PulseConnection?>(nil)

    /// The layer when a sound server answers now (within about a second), else nil.
    public static func connectIfRunning() -> PulseAudioLayer? {
        let layer = PulseAudioLayer()
        return (try? layer.connected()) != nil ? layer : nil
    }

    /// A layer that connects on first use.
    public init() {}

    public func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try connected().list().filter { $0.info.serves(.microphone) }.map(\.info)
    }

    public func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try connected().list().filter { $0.info.serves(.speaker) }.map(\.info)
    }

    public func openInput(
        named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) -> any AudioInputStream {
        try open(name, .microphone, sampleRate: sampleRate, channels: channels, block: framesPerBlock)
    }

    public func openOutput(
        named name: String?, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) -> any AudioOutputStream {
        try open(name, .speaker, sampleRate: sampleRate, channels: channels, block: framesPerBlock)
    }

    public func watchDevices(
        _ onChange: @escaping @Sendable (_ microphones: [AudioDeviceInfo], _ speakers: [AudioDeviceInfo]) -> Void
    ) -> (any AudioDeviceWatch)? {
        try? PulseDeviceWatch(onChange)
    }

    private func open(
        _ name: String?, _ kind: AudioDeviceKind, sampleRate: Int, channels: Int, block: Int
    ) throws(AudioDeviceError) -> PulseStream {
        let connection = try connected()
        let listed = try connection.list().filter { $0.info.serves(kind) }
        let device = try AudioDeviceMatch.pick(name, kind: kind, among: listed.map(\.info))
        try AudioStreamFormat.check(
            device: device.name, sampleRate: sampleRate, channels: channels, framesPerBlock: block)
        guard let entry = listed.first(where: { $0.info == device }) else { throw .disconnected(name: device.name) }
        // No name: the server's default, which the server itself moves the stream along with when it changes.
        return try PulseStream(
            connection: connection, kind: kind, device: name == nil ? nil : entry.serverName,
            deviceName: device.name, fixedLatency: entry.fixedLatency, sampleRate: sampleRate, channels: channels,
            framesPerBlock: block)
    }

    private func connected() throws(AudioDeviceError) -> PulseConnection {
        try connection.withLock { current throws(AudioDeviceError) -> PulseConnection in
            if let current, current.isReady { return current }
            let made = try PulseConnection(name: "Parley")
            current = made
            return made
        }
    }
}

// MARK: - The connection

/// A device as the server lists it, with what opening it needs.
struct PulseDevice {
    var info: AudioDeviceInfo
    /// The server's own name for it (`alsa_output.usb-…`), passed when opening.
    var serverName: String
    /// The device's latency when it cannot change it (nil: it adapts to what a stream asks).
    var fixedLatency: Duration?
}

/// libpulse's threaded main loop and a connected context. `@unchecked Sendable`: every use of the two pointers holds
/// the main loop's lock (`locked`), which is what libpulse requires of a threaded main loop's users.
final class PulseConnection: @unchecked Sendable {
    /// How long connecting and each request may take before the server counts as not answering.
    static let answerTimeout: Duration = .seconds(2)

    let mainloop: OpaquePointer
    let context: OpaquePointer

    init(name: String) throws(AudioDeviceError) {
        guard let mainloop = pa_threaded_mainloop_new() else {
            throw .failed(name: "sound server", call: "pa_threaded_mainloop_new", message: "out of memory")
        }
        guard let context = pa_context_new(pa_threaded_mainloop_get_api(mainloop), name) else {
            pa_threaded_mainloop_free(mainloop)
            throw .failed(name: "sound server", call: "pa_context_new", message: "out of memory")
        }
        self.mainloop = mainloop
        self.context = context
        pa_context_set_state_callback(
            context, { _, loop in PulseConnection.wake(loop) }, UnsafeMutableRawPointer(mainloop))
        guard pa_context_connect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            let message = Self.text(pa_context_errno(context))
            // Freed here, so `deinit` (which runs for a class whose initialiser throws after setting every
            // property) must not touch them again.
            closed.store(true, ordering: .releasing)
            pa_context_unref(context)
            pa_threaded_mainloop_free(mainloop)
            throw .failed(name: "sound server", call: "pa_context_connect", message: message)
        }
        pa_threaded_mainloop_start(mainloop)
        // The main loop's thread wakes the device threads (a block fits, a block arrived): it is raised like them, or
        // a busy machine holds them up through it.
        locked {
            pa_mainloop_api_once(
                pa_threaded_mainloop_get_api(mainloop), { _, _ in AudioThreadPriority.raiseCurrentThread() }, nil)
        }
        let state = locked { () -> pa_context_state_t in
            waitUntil {
                let state = pa_context_get_state(context)
                return state == PA_CONTEXT_READY || PA_CONTEXT_IS_GOOD(state) == 0
            }
            return pa_context_get_state(context)
        }
        guard state == PA_CONTEXT_READY else {
            let message = state == PA_CONTEXT_READY ? "" : Self.text(pa_context_errno(context))
            shutDown()
            throw .failed(name: "sound server", call: "pa_context_connect", message: message)
        }
    }

    deinit { shutDown() }

    private let closed = Atomic(false)

    private func shutDown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        locked { pa_context_disconnect(context) }
        pa_threaded_mainloop_stop(mainloop)
        pa_context_unref(context)
        pa_threaded_mainloop_free(mainloop)
    }

    /// Whether the context still talks to the server.
    var isReady: Bool { locked { pa_context_get_state(context) == PA_CONTEXT_READY } }

    /// Runs `body` with the main loop locked.
    func locked<T>(_ body: () throws(AudioDeviceError) -> T) throws(AudioDeviceError) -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    func locked<T>(_ body: () -> T) -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return body()
    }

    /// With the lock held: waits until `done` or `answerTimeout`; returns whether `done` came true. A timer on the
    /// main loop wakes the wait, so a server that stops answering cannot hang the caller.
    @discardableResult
    func waitUntil(_ done: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + Self.answerTimeout
        let api = pa_threaded_mainloop_get_api(mainloop)
        var start = timeval()
        pa_timeval_add(pa_gettimeofday(&start), UInt64(100_000))
        let timer = api?.pointee.time_new(
            api, &start,
            { api, event, _, loop in
                // Re-armed every 100 ms while someone waits.
                var next = timeval()
                pa_timeval_add(pa_gettimeofday(&next), UInt64(100_000))
                api?.pointee.time_restart(event, &next)
                PulseConnection.wake(loop)
            }, UnsafeMutableRawPointer(mainloop))
        defer { if let timer { api?.pointee.time_free(timer) } }
        while !done() {
            if ContinuousClock.now >= deadline { return false }
            pa_threaded_mainloop_wait(mainloop)
        }
        return true
    }

    /// With the lock held: waits for an operation to finish (or the timeout) and releases it.
    func finish(_ operation: OpaquePointer?) throws(AudioDeviceError) {
        guard let operation else {
            throw .failed(name: "sound server", call: "request", message: Self.text(pa_context_errno(context)))
        }
        defer { pa_operation_unref(operation) }
        let done = waitUntil { pa_operation_get_state(operation) != PA_OPERATION_RUNNING }
        guard done, pa_operation_get_state(operation) == PA_OPERATION_DONE else {
            pa_operation_cancel(operation)
            throw .failed(
                name: "sound server", call: "request",
                message: done ? Self.text(pa_context_errno(context)) : "no answer within 2 s")
        }
    }

    /// Every sink (speaker) and source (microphone) the server has, by description, the defaults marked. A sink's
    /// monitor is not a microphone and is left out unless the server made it the default source.
    func list() throws(AudioDeviceError) -> [PulseDevice] {
        let box = ListBox(mainloop: mainloop)
        let raw = Unmanaged.passUnretained(box).toOpaque()
        try locked { () throws(AudioDeviceError) in
            try finish(
                pa_context_get_server_info(
                    context,
                    { _, info, data in
                        let box = Unmanaged<ListBox>.fromOpaque(data!).takeUnretainedValue()
                        box.defaultSink = info?.pointee.default_sink_name.map { String(cString: $0) }
                        box.defaultSource = info?.pointee.default_source_name.map { String(cString: $0) }
                        PulseConnection.wake(UnsafeMutableRawPointer(box.mainloop))
                    }, raw))
            try finish(
                pa_context_get_sink_info_list(
                    context,
                    { _, info, last, data in
                        let box = Unmanaged<ListBox>.fromOpaque(data!).takeUnretainedValue()
                        if last == 0, let sink = info?.pointee,
                            let entry = ListBox.Entry(
                                name: sink.name, description: sink.description, spec: sink.sample_spec,
                                adaptsLatency: sink.flags.rawValue & PA_SINK_DYNAMIC_LATENCY.rawValue != 0,
                                latency: sink.latency, isMonitor: false)
                        {
                            box.sinks.append(entry)
                        }
                        PulseConnection.wake(UnsafeMutableRawPointer(box.mainloop))
                    }, raw))
            try finish(
                pa_context_get_source_info_list(
                    context,
                    { _, info, last, data in
                        let box = Unmanaged<ListBox>.fromOpaque(data!).takeUnretainedValue()
                        if last == 0, let source = info?.pointee,
                            let entry = ListBox.Entry(
                                name: source.name, description: source.description, spec: source.sample_spec,
                                adaptsLatency: source.flags.rawValue & PA_SOURCE_DYNAMIC_LATENCY.rawValue != 0,
                                latency: source.latency, isMonitor: source.monitor_of_sink != UInt32.max)
                        {
                            box.sources.append(entry)
                        }
                        PulseConnection.wake(UnsafeMutableRawPointer(box.mainloop))
                    }, raw))
        }
        return withExtendedLifetime(box) { box.devices() }
    }

    /// Wakes whoever waits on the main loop (a callback's only job).
    static func wake(_ loop: UnsafeMutableRawPointer?) {
        guard let loop else { return }
        pa_threaded_mainloop_signal(OpaquePointer(loop), 0)
    }

    static func text(_ code: Int32) -> String {
        pa_strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}

/// What a listing gathers inside libpulse's callbacks (on its thread, with the lock held by the waiting caller).
private final class ListBox {
    struct Entry {
        var name: String
        var description: String
        var channels: Int
        var rate: Int
        var fixedLatency: Duration?
        var isMonitor: Bool

        /// A sink's or source's fields as libpulse hands them over; nil without a name.
        init?(
            name: UnsafePointer<CChar>?, description: UnsafePointer<CChar>?, spec: pa_sample_spec,
            adaptsLatency: Bool, latency: pa_usec_t, isMonitor: Bool
        ) {
            guard let name else { return nil }
            self.name = String(cString: name)
            self.description = description.map { String(cString: $0) } ?? ""
            channels = Int(spec.channels)
            rate = Int(spec.rate)
            fixedLatency = adaptsLatency ? nil : .microseconds(Int64(latency))
            self.isMonitor = isMonitor
        }
    }

    let mainloop: OpaquePointer
    var defaultSink: String?
    var defaultSource: String?
    var sinks: [Entry] = []
    var sources: [Entry] = []

    init(mainloop: OpaquePointer) { self.mainloop = mainloop }

    func devices() -> [PulseDevice] {
        let microphones = sources.filter { !$0.isMonitor || $0.name == defaultSource }
        // The description is the name a person knows; two devices sharing one get the server's name added.
        func shown(_ entries: [Entry]) -> [String] {
            let counts = Dictionary(entries.map { ($0.description, 1) }, uniquingKeysWith: +)
            return entries.map { entry in
                let description = entry.description.isEmpty ? entry.name : entry.description
                return counts[entry.description, default: 0] > 1 ? "\(description) (\(entry.name))" : description
            }
        }
        let microphoneNames = shown(microphones)
        let speakerNames = shown(sinks)
        return zip(microphones, microphoneNames).map { entry, name in
            PulseDevice(
                info: AudioDeviceInfo(
                    name: name, inputChannels: entry.channels, outputChannels: 0, defaultSampleRate: entry.rate,
                    isDefaultInput: entry.name == defaultSource, hostAPI: "PulseAudio", serverName: entry.name),
                serverName: entry.name, fixedLatency: entry.fixedLatency)
        }
            + zip(sinks, speakerNames).map { entry, name in
                PulseDevice(
                    info: AudioDeviceInfo(
                        name: name, inputChannels: 0, outputChannels: entry.channels, defaultSampleRate: entry.rate,
                        isDefaultOutput: entry.name == defaultSink, hostAPI: "PulseAudio", serverName: entry.name),
                    serverName: entry.name, fixedLatency: entry.fixedLatency)
            }
    }
}

// MARK: - Streams

/// One playback or record stream of 16-bit samples, read or written a block at a time with the caller waiting, like
/// PortAudio's blocking API.
///
/// Buffers: a speaker's buffer is two and a half blocks, or one block plus the device's own latency when that is fixed
/// and longer (one and a half blocks underran every few seconds on an idle machine: a block is only asked for once a
/// whole one fits, which leaves the device half a block while it is mixed; two blocks, granted as 30 ms, left 10 ms
/// for waking, mixing and writing, and the sound server ran dry 0–4 times in 30 s of the sound call test) (and it grows after underruns, `growAfterUnderrun`); a microphone hands
/// over audio every half block (or at the device's fixed latency if longer). `PA_STREAM_ADJUST_LATENCY` makes the
/// server size the device to the stream, so these are the whole delay the sound server adds.
final class PulseStream: AudioInputStream, AudioOutputStream, @unchecked Sendable {
    let deviceName: String
    /// Largest play-out buffer a speaker grows to after underruns.
    static let maximumSpeakerBuffer: Duration = .milliseconds(120)
    private let connection: PulseConnection
    private let blockBytes: UInt32
    private let maximumBufferBytes: UInt32
    private let sampleRate: Int
    private let channels: Int
    /// Underruns already answered by growing the buffer.
    private var underrunsSeen = 0
    /// The speaker buffer asked for (the server grants less by its sink's latency).
    private var requestedBufferBytes: UInt32 = 0
    /// Whether a block was read yet (audio queued before the first read is the call starting, not an overrun).
    private var hasRead = false
    private let kind: AudioDeviceKind
    private let bytesPerBlock: Int
    private var stream: OpaquePointer?
    /// Recorded bytes beyond the last whole block.
    private var carried: [UInt8] = []
    private let problems = PulseStreamProblems()

    init(
        connection: PulseConnection, kind: AudioDeviceKind, device: String?, deviceName: String,
        fixedLatency: Duration?, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) {
        self.connection = connection
        self.kind = kind
        self.deviceName = deviceName
        let perBlock = framesPerBlock * channels * 2
        bytesPerBlock = perBlock
        let block = Duration.seconds(Double(framesPerBlock) / Double(sampleRate))
        let target =
            kind == .speaker
            ? max(block * 5 / 2, block + (fixedLatency ?? .zero))
            : max(block / 2, fixedLatency ?? .zero)
        func bytes(_ duration: Duration) -> UInt32 {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
            let frames = Int((seconds * Double(sampleRate)).rounded())
            return UInt32(clamping: frames * channels * 2)
        }
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        let context = connection.context
        let problems = problems
        var requested: UInt32 = 0
        let opened: OpaquePointer = try connection.locked { () throws(AudioDeviceError) -> OpaquePointer in
            guard
                let stream = pa_stream_new(context, kind == .speaker ? "Parley call" : "Parley microphone", &spec, nil)
            else {
                throw .failed(
                    name: deviceName, call: "pa_stream_new", message: PulseConnection.text(pa_context_errno(context)))
            }
            let loop = UnsafeMutableRawPointer(connection.mainloop)
            pa_stream_set_state_callback(stream, { _, loop in PulseConnection.wake(loop) }, loop)
            let counters = Unmanaged.passUnretained(problems).toOpaque()
            var attributes = pa_buffer_attr(
                maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
                fragsize: UInt32.max)
            let flags = pa_stream_flags_t(
                rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_INTERPOLATE_TIMING.rawValue
                    | PA_STREAM_AUTO_TIMING_UPDATE.rawValue)
            let code: Int32
            if kind == .speaker {
                pa_stream_set_write_callback(stream, { _, _, loop in PulseConnection.wake(loop) }, loop)
                pa_stream_set_underflow_callback(
                    stream,
                    { _, data in Unmanaged<PulseStreamProblems>.fromOpaque(data!).takeUnretainedValue().count() },
                    counters)
                attributes.tlength = bytes(target)
                requested = attributes.tlength
                attributes.minreq = UInt32(perBlock / 2)
                attributes.prebuf = UInt32(perBlock)
                code = pa_stream_connect_playback(stream, device, &attributes, flags, nil, nil)
            } else {
                pa_stream_set_read_callback(stream, { _, _, loop in PulseConnection.wake(loop) }, loop)
                pa_stream_set_overflow_callback(
                    stream,
                    { _, data in Unmanaged<PulseStreamProblems>.fromOpaque(data!).takeUnretainedValue().count() },
                    counters)
                attributes.fragsize = bytes(target)
                code = pa_stream_connect_record(stream, device, &attributes, flags)
            }
            guard code >= 0 else {
                let message = PulseConnection.text(pa_context_errno(context))
                pa_stream_unref(stream)
                throw .failed(name: deviceName, call: "pa_stream_connect", message: message)
            }
            let answered = connection.waitUntil {
                let state = pa_stream_get_state(stream)
                return state == PA_STREAM_READY || PA_STREAM_IS_GOOD(state) == 0
            }
            guard answered, pa_stream_get_state(stream) == PA_STREAM_READY else {
                let message = answered ? PulseConnection.text(pa_context_errno(context)) : "no answer within 2 s"
                pa_stream_disconnect(stream)
                pa_stream_unref(stream)
                throw .failed(name: deviceName, call: "pa_stream_connect", message: message)
            }
            return stream
        }
        stream = opened
        blockBytes = UInt32(perBlock)
        maximumBufferBytes = bytes(Self.maximumSpeakerBuffer)
        requestedBufferBytes = requested
        self.sampleRate = sampleRate
        self.channels = channels
    }

    deinit { close() }

    /// Underruns (speaker) or overruns (microphone) the server reported.
    var deviceProblems: Int { problems.value }

    /// What the server grants now: the speaker's whole buffer, or how often the microphone hands audio over.
    var latency: Duration? {
        connection.locked { () -> Duration? in
            guard let stream, let granted = pa_stream_get_buffer_attr(stream)?.pointee else { return nil }
            let size = kind == .speaker ? granted.tlength : granted.fragsize
            return .microseconds(Int64(size) * 1_000_000 / Int64(sampleRate * channels * 2))
        }
    }

    /// With the lock held: after an underrun the speaker's buffer grows by half a block (up to
    /// `maximumSpeakerBuffer`), so a machine that cannot keep a short buffer full gets a longer one rather than
    /// another gap, the way a jitter buffer grows after late packets.
    private func growAfterUnderrun(_ stream: OpaquePointer) {
        let underruns = problems.value
        guard underruns > underrunsSeen else { return }
        underrunsSeen = underruns
        // Grown from what was asked, not from what was granted: with PA_STREAM_ADJUST_LATENCY the server grants the
        // request minus the sink's own latency, and asking for the granted size plus a step gives the same grant.
        guard var attributes = pa_stream_get_buffer_attr(stream)?.pointee, requestedBufferBytes < maximumBufferBytes
        else { return }
        requestedBufferBytes = min(maximumBufferBytes, requestedBufferBytes + blockBytes / 2)
        attributes.tlength = requestedBufferBytes
        if let operation = pa_stream_set_buffer_attr(stream, &attributes, nil, nil) { pa_operation_unref(operation) }
    }

    func read() throws(AudioDeviceError) -> [Int16] {
        let bytes: [UInt8] = try connection.locked { () throws(AudioDeviceError) -> [UInt8] in
            guard let stream else { throw .disconnected(name: deviceName) }
            skipBacklog(stream)
            while carried.count < bytesPerBlock {
                guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw .disconnected(name: deviceName) }
                if pa_stream_readable_size(stream) == 0 {
                    connection.waitUntil {
                        pa_stream_readable_size(stream) != 0 || pa_stream_get_state(stream) != PA_STREAM_READY
                    }
                    continue
                }
                var data: UnsafeRawPointer?
                var length = 0
                guard pa_stream_peek(stream, &data, &length) >= 0 else { throw .disconnected(name: deviceName) }
                if let data, length > 0 {
                    carried.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
                } else if length > 0 {
                    carried.append(contentsOf: [UInt8](repeating: 0, count: length))  // a hole: silence
                }
                if length > 0 || data != nil { pa_stream_drop(stream) }
            }
            let block = Array(carried[0..<bytesPerBlock])
            carried.removeFirst(bytesPerBlock)
            return block
        }
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// With the lock held: a microphone whose reader fell behind (the call was still being set up when it opened,
    /// or the thread was held up) skips to the newest audio. libpulse keeps what was recorded in the client's own
    /// queue, unseen by the server's latency figures, and reading it in order would delay everything after it for
    /// the rest of the call (a backlog of 140 ms measured here before this). Skipping later than the first read
    /// counts as an overrun.
    private func skipBacklog(_ stream: OpaquePointer) {
        defer { hasRead = true }
        guard pa_stream_readable_size(stream) + carried.count > 2 * bytesPerBlock else { return }
        carried.removeAll()
        var skipped = false
        while pa_stream_readable_size(stream) > bytesPerBlock {
            var data: UnsafeRawPointer?
            var length = 0
            guard pa_stream_peek(stream, &data, &length) >= 0, length > 0 || data != nil else { break }
            pa_stream_drop(stream)
            skipped = true
        }
        if skipped && hasRead { problems.count() }
    }

    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        guard samples.count * 2 == bytesPerBlock else {
            throw .failed(
                name: deviceName, call: "write",
                message: "block of \(samples.count) samples, expected \(bytesPerBlock / 2)")
        }
        try connection.locked { () throws(AudioDeviceError) in
            guard let stream else { throw .disconnected(name: deviceName) }
            growAfterUnderrun(stream)
            var offset = 0
            while offset < bytesPerBlock {
                guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw .disconnected(name: deviceName) }
                // (size_t)-1, an error, reads as -1 here.
                let room = pa_stream_writable_size(stream)
                if room <= 0 {
                    connection.waitUntil {
                        pa_stream_writable_size(stream) > 0 || pa_stream_get_state(stream) != PA_STREAM_READY
                    }
                    continue
                }
                let count = min(room, bytesPerBlock - offset)
                let code = samples.withUnsafeBytes { raw in
                    pa_stream_write(stream, raw.baseAddress! + offset, count, nil, 0, PA_SEEK_RELATIVE)
                }
                guard code >= 0 else { throw .disconnected(name: deviceName) }
                offset += count
            }
        }
    }

    /// Waits until a whole block fits in the speaker's buffer, so the block written next is made as late as possible.
    var tellsWhenWritable: Bool { kind == .speaker }

    func waitUntilWritable() throws(AudioDeviceError) {
        try connection.locked { () throws(AudioDeviceError) in
            guard let stream else { throw .disconnected(name: deviceName) }
            connection.waitUntil {
                let room = pa_stream_writable_size(stream)
                return room >= bytesPerBlock || pa_stream_get_state(stream) != PA_STREAM_READY
            }
            guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw .disconnected(name: deviceName) }
        }
    }

    /// A speaker plays what it holds first (at most a second); a microphone stops at once.
    func close() {
        let taken: OpaquePointer? = connection.locked {
            defer { stream = nil }
            return stream
        }
        guard let taken else { return }
        connection.locked {
            if kind == .speaker, pa_stream_get_state(taken) == PA_STREAM_READY,
                let drained = pa_stream_drain(
                    taken, { _, _, loop in PulseConnection.wake(loop) }, UnsafeMutableRawPointer(connection.mainloop))
            {
                connection.waitUntil { pa_operation_get_state(drained) != PA_OPERATION_RUNNING }
                pa_operation_unref(drained)
            }
            pa_stream_disconnect(taken)
            pa_stream_unref(taken)
        }
    }
}

/// Underruns or overruns a stream's callback counts (on libpulse's thread).
final class PulseStreamProblems: Sendable {
    private let counter = Atomic(0)
    func count() { counter.add(1, ordering: .relaxed) }
    var value: Int { counter.load(ordering: .relaxed) }
}

// MARK: - Watching

/// Subscribes to the server's sink, source and server events and hands the new device lists to `onChange` (at most
/// once per burst of events, on a thread of its own).
final class PulseDeviceWatch: AudioDeviceWatch, @unchecked Sendable {
    private let connection: PulseConnection
    private let changed = Atomic(false)
    private let stopped = Atomic(false)
    private let onChange: @Sendable ([AudioDeviceInfo], [AudioDeviceInfo]) -> Void
    private let wakeups = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ onChange: @escaping @Sendable ([AudioDeviceInfo], [AudioDeviceInfo]) -> Void) throws(AudioDeviceError) {
        connection = try PulseConnection(name: "Parley device watch")
        self.onChange = onChange
        let raw = Unmanaged.passUnretained(self).toOpaque()
        try connection.locked { () throws(AudioDeviceError) in
            pa_context_set_subscribe_callback(
                connection.context,
                { _, _, _, data in
                    let watch = Unmanaged<PulseDeviceWatch>.fromOpaque(data!).takeUnretainedValue()
                    watch.changed.store(true, ordering: .releasing)
                    watch.wakeups.signal()
                }, raw)
            let mask = pa_subscription_mask_t(
                rawValue: PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_SOURCE.rawValue
                    | PA_SUBSCRIPTION_MASK_SERVER.rawValue)
            try connection.finish(pa_context_subscribe(connection.context, mask, nil, nil))
        }
        let thread = Thread { [self] in run() }
        thread.name = "parley-device-watch"
        thread.start()
    }

    private func run() {
        defer { finished.signal() }
        while !stopped.load(ordering: .acquiring) {
            wakeups.wait()
            // Events come in bursts (a device and its monitor, then the new default): list once they settle.
            while wakeups.wait(timeout: .now() + .milliseconds(200)) == .success {}
            guard !stopped.load(ordering: .acquiring), changed.exchange(false, ordering: .acquiringAndReleasing),
                let devices = try? connection.list()
            else { continue }
            onChange(
                devices.map(\.info).filter { $0.serves(.microphone) },
                devices.map(\.info).filter { $0.serves(.speaker) })
        }
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.locked { pa_context_set_subscribe_callback(connection.context, nil, nil) }
        wakeups.signal()
        _ = finished.wait(timeout: .now() + .seconds(2))
    }

    deinit { stop() }
}
#endif
