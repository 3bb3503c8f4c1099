import NIOCore
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// The engine core's parts: each holds one idea's state, changed on the engine's loop only.

/// The signaling connection to the relay and the decisions about it.
struct SignalingLink {
    /// Joining, resuming and reconnecting, decided.
    var state: CallSignalingState
    var connection: SignalingConnection?
    /// The relay signaling goes to now: the configured one, the next of `fallbackServers` when it could not be
    /// reached, or where a redirect sent the join.
    var server: ServerAddress
    /// Bumped for each connection opened: events of a connection left behind (after a redirect) are ignored.
    var generation = 0
    /// The certificate a redirect's target must show: the one pinned for the relay that redirected.
    var redirectFingerprint: CertificateFingerprint?
    /// Chat lines sent and not yet echoed: sent again on the next connection.
    var chatOutbox = ChatOutbox()
    var reconnectTask: Scheduled<Void>?
    var keepAliveTask: RepeatedTask?
    var lostTask: Scheduled<Void>?

    init(configuration: CallConfiguration) {
        state = CallSignalingState(configuration: configuration)
        server = configuration.server
    }
}

/// Where media goes: the UDP socket, or the signaling connection when UDP did not get through (docs/network.md).
enum MediaPath: String, Equatable, Sendable {
    case udp
    case tcp
}

/// The media socket: where datagrams go, whether the relay bound us, and what it dropped.
struct MediaLink {
    var udp: (any Channel)?
    /// The relay's media address: the only one allowed to speak to the socket.
    var relay: SocketAddress?
    var isBound = false
    var bindAttempts = 0
    /// Binds sent on the current path since the relay last answered one (20 of them: the user is told).
    var bindsUnanswered = 0
    /// Since when binds on the current path go unanswered (2 s of it on UDP, `--media auto`: media moves to TCP).
    var unansweredSince: Duration?
    var bindTask: Scheduled<Void>?
    /// Where media goes now.
    var path = MediaPath.udp
    /// While media goes over TCP: a UDP probe was answered and a real bind went over UDP; its answer moves back.
    var udpAnswered = false
    /// When the last datagram came from the relay over UDP (2 s of silence while bound: bind again).
    var lastHeardOverUDP: Duration?
    /// The socket is being closed on purpose (leaving): not reopened.
    var closingSocket = false
    /// Times the socket was closed by an error (a firewall's EPERM on send) and opened again.
    var socketReopens = 0
    /// Media not queued on the TCP connection because it was backed up.
    var backedUp = 0
    /// What leaves when: sound at once, video spread over time.
    var pacing = MediaPacing()
    /// The next release of paced video, while some waits.
    var pacingTask: Scheduled<Void>?
    /// The audio, video and report ticks while media flows.
    var ticks: [PacedTimer] = []
    /// Seals what this member sends (nil without end-to-end encryption).
    let sealer: MediaSealer?
    var datagramsFromStrangers = 0
    /// RTP bytes sent (every stream).
    var bytesSent = 0
    var forgedFeedbackDropped = 0
    /// The uplink's estimate: every RTP packet sent carries a transport-wide sequence number, and the relay's
    /// feedback about their arrival feeds the estimate (docs/network.md).
    var uplink: BandwidthEstimator
    /// Transport-wide feedback packets taken in.
    var feedbackReceived = 0
    /// The RTP sequence number of the last probe padding packet (its own count, on the audio SSRC).
    var probeSequence: UInt16 = 0

    /// A socket yet to open; the estimate starts at `startEstimate` (bits a second).
    init(sealer: MediaSealer?, startEstimate: Double) {
        self.sealer = sealer
        uplink = BandwidthEstimator(
            limits: BandwidthEstimator.Limits(
                start: startEstimate, maximum: max(BandwidthEstimator.Limits().maximum, startEstimate)))
    }

    /// The socket is open and knows where the relay is.
    var canSend: Bool { udp != nil && relay != nil }

    /// Queues `bytes` for the relay (sent at the next flush).
    func write(_ bytes: [UInt8]) {
        guard let udp, let relay else { return }
        var buffer = udp.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        udp.write(AddressedEnvelope(remoteAddress: relay, data: buffer), promise: nil)
    }
}

/// What this member says it does.
struct OwnControls {
    var microphoneMuted: Bool
    var cameraOff: Bool
    var speakerOn = true
    var filterOn = false
    var role: Role

    init(configuration: CallConfiguration) {
        microphoneMuted = configuration.microphoneMuted
        cameraOff = configuration.cameraOff
        role = configuration.role
    }
}

/// This member's audio on its way out, and the levels last told to the room.
struct OwnAudio {
    var sender: AudioSender?
    /// The loss the audio encoder plans FEC for, from receivers' reports about our audio.
    var lossPlan = AudioLossPlan()
    var meterReported: Double?
    var levelReported = -1.0
}

/// This member's video on its way out: the camera's capture and encode run on the video thread.
struct OwnVideo {
    /// The video thread's loop.
    let loop: any EventLoop
    var thread: VideoSenderThread?
    /// What the sender last reported back.
    var sent = VideoSenderSnapshot()
    var generation = 0
    /// Frames handed to the video thread and not back yet; a tick finding one there drops its frame (counted).
    var framesInFlight = 0
    var framesDroppedBusy = 0
    var sentFirstFrame = false
    var keyframeRequestsReceived = 0
    /// Video packets kept to resend what a NACK says never reached the relay, and how many were resent.
    var resends = VideoResends()
    /// The relay's last word on which of our layers anybody receives (kept across a media restart).
    var layerDemand: [Bool]?
    /// The encoder's rate within the uplink's estimate (kept across a media restart).
    var rate: VideoRateSteering
    /// The layers the uplink's estimate carries (kept across a media restart).
    var uplinkLayers: UplinkLayers

    init(loop: any EventLoop, profile: VideoProfile, plan: SimulcastPlan) {
        self.loop = loop
        rate = VideoRateSteering(profile: profile)
        uplinkLayers = UplinkLayers(plan: plan)
    }

    /// What the encoder was last told to run.
    var toldLayers: [Bool]?

    /// What the encoder runs at `now`: the relay's demand within what the uplink carries, and the layers leaving.
    func encodedLayers(at now: Duration) -> [Bool] { uplinkLayers.encoded(for: layerDemand, at: now) }

    /// The largest layer the uplink carries (0: the full layer).
    var largestSent: Int { uplinkLayers.sending.firstIndex(of: true) ?? 0 }
}

/// The other members as this one receives them.
struct RemoteMembers {
    var peers: [UInt32: PeerReceiver] = [:]
    /// Each member's block of four SSRCs (the low two bits cleared), to its member id.
    var ownerOfBlock: [UInt32: UInt32] = [:]
    /// Opens what the others send (nil without end-to-end encryption).
    var opener: MediaOpener?
    var dominantSpeaker: UInt32?
    /// The senders the relay holds back for our downlink, as it last said (nil before it said anything).
    var held: VideoHeld?
    /// Where their mixed sound goes when no speaker plays it (a file, or nothing).
    var audioSink: (any AudioSink)?

    init(opener: MediaOpener?) {
        self.opener = opener
    }

    /// The member whose stream `ssrc` is.
    func peer(sending ssrc: UInt32) -> PeerReceiver? {
        ownerOfBlock[ssrc & ~3].flatMap { peers[$0] }
    }
}

/// What the engine reports, and when: statistics and levels to the room, tile sizes to the relay.
struct Reporting {
    var lastStats: Duration = .zero
    var count = 0
    /// What was sent since the last statistics tick.
    var sentWindow = (videoFrames: 0, videoBytes: 0, audioBytes: 0)
    /// The tile sizes reported to the relay, and the wake-up of a report held back by its rate.
    var tiles = TileReporting()
    /// What this member's downlink carries, from what arrived against what the relay says it sent.
    var downlink = DownlinkEstimator()
    /// Chat lines of others received.
    var chatLinesReceived = 0
    /// RTP packets and bytes that arrived from the relay.
    var arrived = (packets: 0, bytes: 0)
    /// Bytes of every datagram that arrived from the relay (RTP, RTCP, a probe's padding).
    var arrivedFromRelay = 0
    /// The probe of our downlink asked of the relay, and when the next may be.
    var downlinkProbe = DownlinkProbe()
    /// The relay's last count and what had arrived when it came; nil until one came on the current binding.
    var lastCount: (relay: ForwardedCount, arrived: (packets: Int, bytes: Int))?
    var tilesTask: Scheduled<Void>?
    /// The statistics and level ticks.
    var tasks: [RepeatedTask] = []
}
