import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Counters of one call so far: what was sent, and per peer what arrived and was played.
public struct CallStatistics: Sendable {
    /// Totals for one remote member.
    public struct Peer: Sendable {
        public var name: String
        public var audioPacketsReceived: Int
        public var videoPacketsReceived: Int
        public var videoBytesReceived: Int
        public var framesDecoded: Int
        public var decodeErrors: Int
        public var audioFramesPlayed: Int
        public var fecRecoveries: Int
        public var concealments: Int
        public var nacksSent: Int
        public var keyframeRequestsSent: Int
        /// The stamp read from the latest decoded synthetic-camera picture (participant id, frame counter).
        public var lastStamp: (participant: UInt32, frame: UInt32)?
        /// Size of the latest decoded picture.
        public var lastFrameSize: VideoSize?
        /// Longest stretch of silence played since this peer's audio started (loss the jitter buffer and FEC
        /// could not cover, or the peer muting).
        public var longestAudioGap: Duration = .zero
        /// Stretches of silence played since this peer's audio started: dropouts a listener hears, or the peer muting.
        public var audioDropouts = 0
        /// Payloads and chat lines of this peer that failed SFrame authentication (another secret, or tampering).
        public var decryptFailures = 0
        /// Keyframes of this peer dropped unseen by the decoder: they declared a picture beyond the largest profile.
        public var oversizedKeyframes = 0
        /// How long this peer's audio waits between arriving and being played (about a second's average).
        public var audioDelay: Duration = .zero
        /// The resampling correction following this peer's clock (0.0002: played 200 ppm faster).
        public var audioCorrection = 0.0
        /// Gaps of over 300 ms between this peer's decoded frames, and their whole length (`VideoFreezes`).
        public var videoFreezes = 0
        public var videoFrozen: Duration = .zero
        /// The simulcast layer being received (0 is the full size).
        public var videoLayer = 0
        /// Times the relay moved this receiver to another of the peer's layers.
        public var layerSwitches = 0
        /// What the relay holds this peer's video to for our downlink: a layer's size ("320x180"), "paused", or
        /// nil when it is not held back.
        public var heldByDownlink: String?
        /// Times this peer's audio packets arrived more than two frames (40 ms) after the one before, and the
        /// longest such wait: the sender, the relay or the network held them up (or the peer muted).
        public var audioArrivalGaps = 0
        public var longestAudioArrivalGap: Duration = .zero
        /// This peer's audio packets that came after their turn had been played (each raises the jitter buffer's
        /// target a frame), those of them played anyway (the play-out had only run ahead of the arrivals), slots
        /// held to let the buffer refill (concealed, a delay added), and packets dropped to bring the delay down;
        /// and the target delay now.
        public var audioLate = 0
        public var audioLateKept = 0
        public var audioHeld = 0
        public var audioDiscarded = 0
        public var audioTarget: Duration = .zero
    }

    /// This member's id (0 before joining).
    public var localID: UInt32 = 0
    /// The end-to-end cipher ("AES-128-GCM"), nil for an unencrypted call.
    public var encryption: String?
    /// Whether the media socket is bound at the relay.
    public var mediaBound = false
    /// Where media goes: "udp", or "tcp" over the relay's TLS connection when UDP did not get through.
    public var mediaPath = "udp"
    /// Media datagrams not queued on the TCP connection because it was backed up.
    public var mediaOverTCPBackedUp = 0
    /// Times the media socket was closed by an error (a firewall's EPERM) and opened again.
    public var mediaSocketReopens = 0
    /// Times the signaling connection dropped and the membership was taken again (resumed or joined afresh).
    public var signalingRejoins = 0
    /// Chat lines this member sent, those the relay has not echoed yet (sent again on the next connection), and
    /// those of others it received.
    public var chatLinesSent = 0
    public var chatLinesWaiting = 0
    public var chatLinesReceived = 0
    /// The local UDP port media arrives on (0 before the socket opened).
    public var localMediaPort = 0
    public var audioPacketsSent = 0
    public var audioBytesSent = 0
    /// The packet loss (percent) the audio encoder plans in-band FEC for now, from the receivers' reports.
    public var audioPlannedLossPercent = 0
    /// What the uplink carries by the estimate from the relay's transport-wide feedback (kbit/s); nil before any.
    public var uplinkEstimateKbps: Int?
    /// Why the estimate is where it is ("climbing", "holding", "delay", "loss 12 %", "ceiling").
    public var uplinkEstimateReason: String?
    /// What the downlink carries by this member's estimate from losses in what arrived (kbit/s), sent to the relay
    /// with the tiles; nil while losses showed no limit.
    public var downlinkEstimateKbps: Int?
    /// Why the downlink estimate is where it is ("loss 14 %", "climbing", "holding"); nil with no estimate.
    public var downlinkEstimateReason: String?
    /// The rate the largest layer sent aims at (kbit/s): the full layer's, the profile's or less when the uplink's
    /// estimate has no room for it (the smaller layers get their share of it); a smaller layer's share of it when
    /// the uplink carries only smaller layers (`activeVideoLayers` says which).
    public var videoTargetKbps = 0
    /// Transport-wide feedback packets received from the relay.
    public var transportFeedbackReceived = 0
    /// Blocks of silence the speaker played because the mix did not come in time (a real speaker only).
    public var speakerUnderruns = 0
    /// Blocks the speaker dropped because its queue was full (a real speaker only).
    public var speakerDropped = 0
    /// Times the speaker device itself ran dry (the sound server's count; 0 where the layer cannot tell).
    public var speakerDeviceUnderruns = 0
    /// The speaker device's play-out buffer, when its layer can tell.
    public var speakerLatency: Duration?
    /// How often the microphone device hands audio over, when its layer can tell.
    public var microphoneLatency: Duration?
    /// Times the microphone device dropped audio not read in time (the sound server's count; 0 where unknown).
    public var microphoneOverruns = 0
    /// Times a microphone block reached the media loop more than two blocks (40 ms) after the one before, and the
    /// longest such wait: the microphone's thread or the media loop was held up, so the block left late.
    public var microphoneBlockGaps = 0
    public var microphoneLongestBlockGap: Duration = .zero
    /// How the speaker's and the microphone's threads are scheduled (nil without a real device).
    public var speakerThread: AudioThreadScheduling?
    public var microphoneThread: AudioThreadScheduling?
    /// How the call's media loop (mixing, codecs, sockets) is scheduled: never real-time, raised where allowed.
    public var mediaThread: AudioThreadScheduling?
    /// How the process's terminal session weighs against the others (`AudioThreadPriority.raiseSessionGroup`).
    public var sessionGroup: AudioThreadScheduling?
    public var videoFramesSent = 0
    /// Frames taken from the camera (also those no layer encoded, because nobody watches).
    public var videoFramesCaptured = 0
    /// Camera frames dropped because the one before was still being encoded (a machine too busy for the profile).
    public var videoFramesDroppedBusy = 0
    public var videoKeyframesSent = 0
    public var videoPacketsSent = 0
    public var videoBytesSent = 0
    /// A shared terminal's updates sent, full screens among them, and their frames' bytes (`parley share`).
    public var shareUpdatesSent = 0
    public var shareFullScreensSent = 0
    public var shareBytesSent = 0
    /// RTP bytes this member sent (every stream, headers included; not IP and UDP's 28 a packet).
    public var mediaBytesSent = 0
    /// Keyframe requests (PLI) that reached this sender.
    public var keyframeRequestsReceived = 0
    /// Video packets sent again because a NACK said the relay never got them.
    public var videoPacketsResent = 0
    /// Datagrams dropped because they came from an address other than the relay's media port.
    public var datagramsFromStrangers = 0
    /// RTCP packets from the relay dropped because they named an SSRC of nobody in the room, or feedback about a
    /// stream this member does not send.
    public var forgedFeedbackDropped = 0
    /// Peers by member id.
    public var peers: [UInt32: Peer] = [:]
    /// The layers this member sends in, largest first, and which of them are encoded now (the relay's demand).
    public var videoLayers: [VideoLayerSize] = []
    public var activeVideoLayers: [Bool] = []
    /// Frames sent per layer.
    public var videoFramesSentPerLayer: [Int] = []
    /// The room's dominant speaker as the relay last said, nil for nobody yet.
    public var dominantSpeaker: UInt32?
}
