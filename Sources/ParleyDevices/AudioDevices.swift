import ParleyMedia

/// Which way a sound device works: a microphone records, a speaker plays.
public enum AudioDeviceKind: String, Sendable, Hashable, Codable {
    case microphone
    case speaker
}

/// One sound device as the system lists it.
public struct AudioDeviceInfo: Sendable, Hashable, Codable {
    /// The exact string `--mic` / `--speaker` accept.
    public var name: String
    /// Most channels it records (0: not a microphone).
    public var inputChannels: Int
    /// Most channels it plays (0: not a speaker).
    public var outputChannels: Int
    /// The rate it prefers, in Hz (Parley opens every device at 48 000 and lets the system convert).
    public var defaultSampleRate: Int
    /// Whether the system picks it when no microphone is named.
    public var isDefaultInput: Bool
    /// Whether the system picks it when no speaker is named.
    public var isDefaultOutput: Bool
    /// The system layer it sits on ("ALSA", "Core Audio", "PulseAudio", ...).
    public var hostAPI: String
    /// The sound server's own name for it (`alsa_output.usb-…`), which `--mic`/`--speaker` accept too; nil without
    /// a sound server.
    public var serverName: String?

    /// A device description.
    public init(
        name: String, inputChannels: Int, outputChannels: Int, defaultSampleRate: Int,
        isDefaultInput: Bool = false, isDefaultOutput: Bool = false, hostAPI: String, serverName: String? = nil
    ) {
        self.name = name
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.defaultSampleRate = defaultSampleRate
        self.isDefaultInput = isDefaultInput
        self.isDefaultOutput = isDefaultOutput
        self.hostAPI = hostAPI
        self.serverName = serverName
    }

    /// Whether it works as `kind`.
    public func serves(_ kind: AudioDeviceKind) -> Bool {
        kind == .microphone ? inputChannels > 0 : outputChannels > 0
    }

    /// Whether the system picks it for `kind` when none is named.
    public func isDefault(for kind: AudioDeviceKind) -> Bool {
        kind == .microphone ? isDefaultInput : isDefaultOutput
    }
}

/// Why a sound device cannot be used; every message names the device and says what went wrong in plain words.
public enum AudioDeviceError: Error, Equatable, Hashable, CustomStringConvertible {
    /// The system lists no device of this kind.
    case noDevice(AudioDeviceKind)
    /// Nothing is called `name` (nor starts with it); `available` lists what exists.
    case unknownDevice(AudioDeviceKind, name: String, available: [String])
    /// `name` is the start of several device names; `matches` lists them.
    case ambiguousDevice(AudioDeviceKind, name: String, matches: [String])
    /// Another program holds the device.
    case busy(name: String)
    /// The device refuses this rate or channel count.
    case unsupportedFormat(name: String, sampleRate: Int, channels: Int)
    /// A block size outside 1 frame ... 1 second was asked for.
    case unsupportedBlockSize(name: String, framesPerBlock: Int, sampleRate: Int)
    /// The device was unplugged or stopped answering while in use.
    case disconnected(name: String)
    /// A system call failed unexpectedly (`call` is the library function, `message` its reason).
    case failed(name: String, call: String, message: String)

    public var description: String {
        switch self {
        case .noDevice(let kind):
            return "no \(kind.rawValue) found"
        case .unknownDevice(let kind, let name, let available):
            let list = available.isEmpty ? "none" : available.map(Self.shown).joined(separator: ", ")
            return "no \(kind.rawValue) named \(Self.shown(name)); available: \(list)"
        case .ambiguousDevice(let kind, let name, let matches):
            return "\(Self.shown(name)) could be any of these \(kind.rawValue)s: "
                + matches.map(Self.shown).joined(separator: ", ") + "; give more of the name"
        case .busy(let name):
            return "\(Self.shown(name)) is busy: another program is using it"
        case .unsupportedFormat(let name, let sampleRate, let channels):
            return "\(Self.shown(name)) cannot work at \(sampleRate) Hz with \(channels) channel"
                + (channels == 1 ? "" : "s")
        case .unsupportedBlockSize(let name, let framesPerBlock, let sampleRate):
            return "\(Self.shown(name)) cannot use blocks of \(framesPerBlock) frames: at \(sampleRate) Hz a block "
                + "is 1 to \(min(AudioStreamFormat.maximumFramesPerBlock, max(1, sampleRate))) frames (one second)"
        case .disconnected(let name):
            return "\(Self.shown(name)) stopped working (unplugged or taken away)"
        case .failed(let name, let call, let message):
            return "\(Self.shown(name)): \(call) failed: \(message)"
        }
    }

    /// Names come from the system or the command line: quoted, control characters escaped, long ones cut.
    static func shown(_ name: String) -> String {
        var text = ""
        for scalar in name.unicodeScalars.prefix(AudioDeviceMatch.maximumNameLength) {
            text += scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
        }
        if name.unicodeScalars.count > AudioDeviceMatch.maximumNameLength { text += "…" }
        return "\"" + text + "\""
    }
}

/// Picks a device by the name a person typed: pure, so every rule is table-tested.
public enum AudioDeviceMatch {
    /// Longer names are never device names; they are refused without comparing.
    public static let maximumNameLength = 200

    /// The device for `name` among `devices`: nil picks the system default (or the first device of the kind); else
    /// the exact name, else the one device whose name starts with it ignoring case.
    public static func pick(
        _ name: String?, kind: AudioDeviceKind, among devices: [AudioDeviceInfo]
    ) throws(AudioDeviceError) -> AudioDeviceInfo {
        let candidates = devices.filter { $0.serves(kind) }
        guard let first = candidates.first else { throw .noDevice(kind) }
        guard let name else { return candidates.first { $0.isDefault(for: kind) } ?? first }
        let names = candidates.map(\.name)
        guard !name.isEmpty, name.unicodeScalars.count <= maximumNameLength else {
            throw .unknownDevice(kind, name: name, available: names)
        }
        if let exact = candidates.first(where: { $0.name == name })
            ?? candidates.first(where: { $0.serverName == name })
        {
            return exact
        }
        let lowered = name.lowercased()
        let matches = candidates.filter { $0.name.lowercased().hasPrefix(lowered) }
        switch matches.count {
        case 1: return matches[0]
        case 0: throw .unknownDevice(kind, name: name, available: names)
        default: throw .ambiguousDevice(kind, name: name, matches: matches.map(\.name))
        }
    }
}

/// What is needed from a sound system; `PortAudioLayer` is the real one, tests inject fakes.
public protocol AudioDeviceLayer: Sendable {
    /// Devices that record.
    func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo]
    /// Devices that play.
    func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo]
    /// Opens a microphone (nil: the default) for 16-bit blocks of `framesPerBlock` frames.
    func openInput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioInputStream
    /// Opens a speaker (nil: the default) for 16-bit blocks of `framesPerBlock` frames.
    func openOutput(named: String?, sampleRate: Int, channels: Int, framesPerBlock: Int)
        throws(AudioDeviceError) -> any AudioOutputStream
    /// Calls `onChange` with the new lists whenever a device is added or removed or the default changes; nil when
    /// the layer cannot tell.
    func watchDevices(
        _ onChange: @escaping @Sendable (_ microphones: [AudioDeviceInfo], _ speakers: [AudioDeviceInfo]) -> Void
    ) -> (any AudioDeviceWatch)?
}

/// An open microphone. Used from one thread at a time; closed by `close()` or when released.
public protocol AudioInputStream: AnyObject {
    /// The device's name as listed.
    var deviceName: String { get }
    /// Waits for the next block: exactly framesPerBlock × channels interleaved samples.
    func read() throws(AudioDeviceError) -> [Int16]
    /// Stops and releases the device; later reads fail.
    func close()
    /// How often the device hands audio over (the capture buffer's delay), when the layer can tell.
    var latency: Duration? { get }
    /// Times the device dropped audio nobody read in time (overruns), when the layer can tell.
    var deviceProblems: Int { get }
}

/// An open speaker. Used from one thread at a time; closed by `close()` or when released.
public protocol AudioOutputStream: AnyObject {
    /// The device's name as listed.
    var deviceName: String { get }
    /// Plays one block (framesPerBlock × channels interleaved samples), waiting while the device is full.
    func write(_ samples: [Int16]) throws(AudioDeviceError)
    /// Plays what is queued, stops and releases the device; later writes fail.
    func close()
    /// The device's whole play-out buffer (its delay), when the layer can tell.
    var latency: Duration? { get }
    /// Times the device ran dry (underruns), when the layer can tell.
    var deviceProblems: Int { get }
    /// Whether `waitUntilWritable` really waits for room (so a block can be made just in time).
    var tellsWhenWritable: Bool { get }
    /// Waits until a whole block fits, so the next block can be made just in time (layers that cannot tell return
    /// at once and `write` waits instead).
    func waitUntilWritable() throws(AudioDeviceError)
}

extension AudioInputStream {
    public var latency: Duration? { nil }
    public var deviceProblems: Int { 0 }
}

extension AudioOutputStream {
    public var latency: Duration? { nil }
    public var deviceProblems: Int { 0 }
    public var tellsWhenWritable: Bool { false }
    public func waitUntilWritable() throws(AudioDeviceError) {}
}

/// The limits every layer checks before opening a device, so a bad request fails the same way everywhere.
public enum AudioStreamFormat {
    /// Rates a device is asked for.
    public static let sampleRates = 8_000...192_000
    /// Channel counts Parley uses.
    public static let channelCounts = 1...2
    /// A block is at least one frame and at most one second.
    public static let maximumFramesPerBlock = 192_000

    /// Throws `unsupportedFormat` naming `device` unless rate, channels and block size are within the limits.
    public static func check(
        device: String, sampleRate: Int, channels: Int, framesPerBlock: Int
    ) throws(AudioDeviceError) {
        guard sampleRates.contains(sampleRate), channelCounts.contains(channels) else {
            throw .unsupportedFormat(name: device, sampleRate: sampleRate, channels: channels)
        }
        guard (1...min(maximumFramesPerBlock, sampleRate)).contains(framesPerBlock) else {
            throw .unsupportedBlockSize(name: device, framesPerBlock: framesPerBlock, sampleRate: sampleRate)
        }
    }
}

extension AudioDeviceLayer {
    /// The device `--mic` / `--speaker` would open for `name` (nil: the default), without opening it.
    public func device(named name: String?, kind: AudioDeviceKind) throws(AudioDeviceError) -> AudioDeviceInfo {
        try AudioDeviceMatch.pick(name, kind: kind, among: kind == .microphone ? inputDevices() : outputDevices())
    }
}

/// Stops watching a sound server's devices when released or stopped.
public protocol AudioDeviceWatch: AnyObject, Sendable {
    /// Stops the callbacks; returns when none runs any more.
    func stop()
}

extension AudioDeviceLayer {
    /// PortAudio and the test layers list devices once: no watching.
    public func watchDevices(
        _ onChange: @escaping @Sendable (_ microphones: [AudioDeviceInfo], _ speakers: [AudioDeviceInfo]) -> Void
    ) -> (any AudioDeviceWatch)? { nil }
}

/// What changed between two device lists, in the words the chat pane shows: pure, so it is table-tested.
public enum AudioDeviceChanges {
    /// One line per device plugged in or out and per new default, microphones first.
    public static func notices(
        from old: (microphones: [AudioDeviceInfo], speakers: [AudioDeviceInfo]),
        to new: (microphones: [AudioDeviceInfo], speakers: [AudioDeviceInfo])
    ) -> [String] {
        func lines(_ before: [AudioDeviceInfo], _ after: [AudioDeviceInfo], _ kind: AudioDeviceKind) -> [String] {
            let word = kind == .microphone ? "Microphone" : "Speaker"
            let oldNames = Set(before.map(\.name))
            let newNames = Set(after.map(\.name))
            var lines = after.filter { !oldNames.contains($0.name) }.map { "\(word) plugged in: \($0.name)" }
            lines += before.filter { !newNames.contains($0.name) }.map { "\(word) unplugged: \($0.name)" }
            let oldDefault = before.first { $0.isDefault(for: kind) }?.name
            if let newDefault = after.first(where: { $0.isDefault(for: kind) })?.name, newDefault != oldDefault {
                lines.append("Default \(word.lowercased()) is now \(newDefault)")
            }
            return lines
        }
        return lines(old.microphones, new.microphones, .microphone) + lines(old.speakers, new.speakers, .speaker)
    }
}
