import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Where local video comes from. `switch camera` cycles through the configured list.
public enum VideoSourceChoice: Sendable, Hashable, CustomStringConvertible {
    /// The moving test pattern with the participant's name and a frame stamp.
    case synthetic
    /// A looping Y4M file.
    case file(String)
    /// A real camera by the name `parley devices` shows (or its /dev/video path).
    case camera(String)
    /// Every camera found when the call starts (none: the call starts with the camera off and says why).
    case allCameras

    /// Parses `synthetic` or a path ending in `.y4m`, with a message saying what to type otherwise.
    public init(parsing text: String) throws(CallSetupError) {
        if text == "synthetic" {
            self = .synthetic
        } else if text.lowercased().hasSuffix(".y4m") {
            self = .file(text)
        } else {
            throw CallSetupError(
                "video source \"\(text)\" is neither \"synthetic\" nor a .y4m file (a camera goes in --camera)")
        }
    }

    public var description: String {
        switch self {
        case .synthetic: "synthetic"
        case .file(let path): path
        case .camera(let name): name
        case .allCameras: "every camera"
        }
    }
}

/// Where local audio comes from.
public enum AudioSourceChoice: Sendable, Hashable {
    /// A speech-like synthetic voice with the participant's own pitch.
    case synthetic
    /// A looping WAV file (48 kHz mono or stereo, 16-bit).
    case file(String)
    /// Digital silence (a muted microphone that still sends nothing).
    case silence
    /// A real microphone by the name `parley devices` shows; nil is the system's default microphone.
    case microphone(String?)

    /// Parses `synthetic`, `silence` or a path ending in `.wav`.
    public init(parsing text: String) throws(CallSetupError) {
        switch text {
        case "synthetic": self = .synthetic
        case "silence", "none": self = .silence
        default:
            guard text.lowercased().hasSuffix(".wav") else {
                throw CallSetupError("audio source \"\(text)\" is neither \"synthetic\", \"silence\" nor a .wav file")
            }
            self = .file(text)
        }
    }
}

/// Where received, mixed audio goes.
public enum AudioSinkChoice: Sendable, Hashable {
    /// Nowhere (headless bots, tests that only count packets).
    case none
    /// A WAV file, written as the call goes.
    case file(String)
    /// A real speaker by the name `parley devices` shows; nil is the system's default output.
    case speaker(String?)
}

/// A setting that cannot be used; the message says what to do instead.
public struct CallSetupError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public var message: String

    /// An error with its message.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Everything needed to join a call.
public struct CallConfiguration: Sendable {
    /// The relay.
    public var server: ServerAddress
    /// Other relays of the same cluster, tried in turn when the one before cannot be reached (`--server a,b`).
    public var fallbackServers: [ServerAddress] = []
    /// How signaling is protected: `wss://` with the relay's certificate checked, or plain `ws://`. The CLI asks
    /// for TLS unless `--insecure` is given; the library default is plain, for tests on loopback.
    public var signalingSecurity: SignalingSecurity = .insecure
    /// Room to join (created on first join).
    public var room: String
    /// The room's password: proven to the relay with an HMAC of its challenge, never sent. A room created with
    /// it keeps it until its last member leaves.
    public var password: String? = nil
    /// End-to-end encryption of media and chat with the room secret, nil for none.
    public var encryption: CallEncryption? = nil
    /// The account to join as (its signature over the relay's challenge shows it verified to the others); nil
    /// joins as a guest.
    public var account: AccountIdentity? = nil
    /// Keep the room out of the account's presence (others see "in a call" without which).
    public var hideRoom = false
    /// Send the camera in simulcast layers (full, half, quarter size) so each receiver gets the one its tile needs;
    /// false sends the full size alone (`--no-simulcast`).
    public var simulcast = true
    /// The VP8 bitstream version the camera is encoded in (`--vp8-profile`): 0, the sharpest, by default; 2 costs a
    /// fifth less decoding on every receiver and is about 1 dB less sharp (`VP8EncoderConfig.bitstreamProfile`).
    public var vp8Profile = VP8EncoderConfig.sharpProfile
    /// Display name.
    public var name: String
    /// Broadcaster sends media; audience only receives.
    public var role: Role
    /// Resolution, frame rate and bitrate of the local video.
    public var profile: VideoProfile
    /// Video sources, first used first; `switch camera` moves to the next.
    public var videoSources: [VideoSourceChoice]
    /// Local audio.
    public var audioSource: AudioSourceChoice
    /// Received audio.
    public var audioSink: AudioSinkChoice
    /// Start with the microphone muted.
    public var microphoneMuted: Bool
    /// Start with the camera off.
    public var cameraOff: Bool
    /// Decode received video (a headless bot may skip it to save CPU).
    public var decodesVideo: Bool
    /// Decode and mix received audio.
    public var decodesAudio: Bool
    /// Deliver the local camera picture to the video sink as a self view.
    public var showsSelfView: Bool
    /// How long a reconnect may take before the call counts as lost (it keeps trying after that).
    public var lostAfter: Duration
    /// Pause between reconnect attempts.
    public var reconnectInterval: Duration
    /// How long one connection to the relay may take, TCP, TLS and the WebSocket upgrade together, before the
    /// attempt counts as failed ("no WebSocket upgrade within …").
    public var signalingTimeout: Duration = .seconds(5)
    /// Longest interval between signaling keep-alives; shortened to a third of the liveness timeout the relay
    /// announces in `joined` (10 s by default), since the relay drops members silent for that long.
    public var keepAliveInterval: Duration
    /// Send media here instead of the relay's host and the UDP port it announces in `joined`: for a relay reached
    /// through a port forward or a UDP proxy (tests put a lossy proxy in front of one client). Nil: as announced.
    public var mediaAddressOverride: ServerAddress?
    /// Echo cancellation and noise suppression on a real microphone.
    public var echoCancellation: Bool
    /// How media reaches the relay: UDP, falling back to the TLS connection when UDP does not bind in 2 s (`auto`),
    /// or the TLS connection from the start (`--media tcp`).
    public var mediaTransport: MediaTransport = .auto
    /// Recording the call (`--record`, `R`).
    public var recording = RecordingSettings()
    /// A shared terminal sent in place of a camera, joining as a member of kind `terminal` (`parley share`); nil
    /// for a person's call.
    public var share: TerminalShareFeed? = nil
    /// Where the engine logs.
    public var logger: Logger

    /// A configuration with call defaults: broadcaster, standard profile, synthetic camera and voice.
    public init(
        server: ServerAddress, room: String, name: String, role: Role = .broadcaster,
        profile: VideoProfile = .standard, videoSources: [VideoSourceChoice] = [.synthetic],
        audioSource: AudioSourceChoice = .synthetic, audioSink: AudioSinkChoice = .none,
        microphoneMuted: Bool = false, cameraOff: Bool = false, decodesVideo: Bool = true,
        decodesAudio: Bool = true, showsSelfView: Bool = true, lostAfter: Duration = .seconds(10),
        reconnectInterval: Duration = .seconds(1), keepAliveInterval: Duration = .seconds(2),
        mediaAddressOverride: ServerAddress? = nil, echoCancellation: Bool = true,
        logger: Logger = Logger(label: "parley.engine")
    ) {
        self.server = server
        self.room = room
        self.name = name
        self.role = role
        self.profile = profile
        self.videoSources = videoSources.isEmpty ? [.synthetic] : videoSources
        self.audioSource = audioSource
        self.audioSink = audioSink
        self.microphoneMuted = microphoneMuted
        self.cameraOff = cameraOff
        self.decodesVideo = decodesVideo
        self.decodesAudio = decodesAudio
        self.showsSelfView = showsSelfView
        self.lostAfter = lostAfter
        self.reconnectInterval = reconnectInterval
        self.keepAliveInterval = keepAliveInterval
        self.mediaAddressOverride = mediaAddressOverride
        self.echoCancellation = echoCancellation
        self.logger = logger
    }
}

/// How media reaches the relay (`--media`).
public enum MediaTransport: String, Sendable, Equatable, CaseIterable {
    /// UDP; over the signaling connection when UDP has not bound within 2 s, back to UDP when it answers again.
    case auto
    /// Over the signaling connection from the start (a network known to block UDP).
    case tcp
    /// UDP only: no fallback.
    case udp
}

/// How this member records the call.
public struct RecordingSettings: Sendable, Equatable {
    /// The file (`--record FILE.webm`); when it exists, FILE-2.webm, FILE-3.webm…. Nil: `R` writes
    /// parley-ROOM-DATE.webm in the current folder.
    public var path: String?
    /// Start recording as soon as the call is joined (`--record`); otherwise `R` starts it.
    public var startsAtJoin: Bool
    /// One Opus track per member (`--record-tracks`) instead of the mix this client plays.
    public var audioPerMember: Bool

    /// Recording settings.
    public init(path: String? = nil, startsAtJoin: Bool = false, audioPerMember: Bool = false) {
        self.path = path
        self.startsAtJoin = startsAtJoin
        self.audioPerMember = audioPerMember
    }
}

/// Receives decoded pictures, one participant at a time; called from the engine's thread, so it must be cheap
/// (store the frame, mark the tile dirty) and thread-safe.
public protocol VideoFrameSink: Sendable {
    /// The newest picture of a participant (the local id for the self view).
    func deliver(_ frame: VideoFrame, from participant: ParticipantID)
    /// The newest screen of a member's shared terminal.
    func deliver(_ screen: TerminalScreen, from participant: ParticipantID)
}

extension VideoFrameSink {
    /// A sink that shows no shared terminals.
    public func deliver(_ screen: TerminalScreen, from participant: ParticipantID) {}
}

extension CallConfiguration {
    /// The call plays to a real speaker or records a real microphone: its media loop has the devices' deadlines.
    var usesSoundDevice: Bool {
        if case .speaker = audioSink { return true }
        if case .microphone = audioSource { return true }
        return false
    }
}
