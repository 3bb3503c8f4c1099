import Foundation
import ParleyWire

/// The document in a `--stats-file`: every counter of `CallStatistics` that scripts and benchmarks read, the
/// wall-clock `time` (so a script reading the file twice can turn totals into rates), and `extra` integer fields a
/// front end adds (e.g. `screenDraws`) as top-level keys beside the others. Writers and readers both go through it.
public struct CallStatisticsReport: Codable, Sendable, Equatable {
    /// What arrived from one remote member.
    public struct Peer: Codable, Sendable, Equatable {
        /// The member id.
        public var id: UInt32
        /// The member's display name, exactly as the relay announced it.
        public var name: String
        /// Video frames decoded.
        public var framesDecoded: Int
        /// Video frames that failed to decode.
        public var decodeErrors: Int
        /// Video packets received.
        public var videoPackets: Int
        /// Video bytes received.
        public var videoBytes: Int
        /// Audio packets received.
        public var audioPackets: Int
        /// 20 ms audio frames played.
        public var audioPlayed: Int
        /// Audio frames concealed because their packet was missing.
        public var concealments: Int
        /// Audio frames recovered from in-band FEC.
        public var fecRecoveries: Int
        /// NACKs sent for this member's video.
        public var nacksSent: Int
        /// Keyframe requests (PLI) sent for this member's video.
        public var keyframeRequestsSent: Int
        /// Payloads and chat lines of this member that failed SFrame authentication.
        public var decryptFailures: Int
        /// How long this member's audio waits between arriving and being played (jitter buffer and decoded
        /// samples, about a second's average), in milliseconds.
        public var audioDelayMs: Int?
        /// Stretches of silence played after this member's audio started (dropouts a listener hears, or muting).
        public var audioDropouts: Int?
        /// The longest of those stretches, in milliseconds.
        public var longestAudioGapMs: Int?
        /// How far the play-out is being resampled to follow this member's clock, in parts per million.
        public var audioCorrectionPPM: Int?
        /// Times this member's audio packets arrived more than 40 ms after the one before, and the longest such
        /// wait in milliseconds (held up before reaching this member: by the sender, the relay or the network).
        public var audioArrivalGaps: Int?
        public var longestAudioArrivalGapMs: Int?
        /// Audio packets that came after their turn was played (dropped), those played anyway (the play-out had run
        /// ahead of the arrivals), slots held to let the jitter buffer refill, packets dropped to bring its delay
        /// down, and its target delay in milliseconds.
        public var audioLate: Int?
        public var audioLateKept: Int?
        public var audioHeld: Int?
        public var audioDiscarded: Int?
        public var audioTargetMs: Int?
        /// What the relay holds this peer's video to for this member's downlink ("320x180", "paused"); absent when
        /// it is not held back.
        public var heldByDownlink: String?
        /// Gaps of over 300 ms between this peer's decoded frames, and their whole length in milliseconds; nil in an
        /// older report.
        public var videoFreezes: Int?
        public var videoFrozenMs: Int?

        /// The counters of `peer`, member `id`.
        public init(id: UInt32, _ peer: CallStatistics.Peer) {
            self.id = id
            name = peer.name
            framesDecoded = peer.framesDecoded
            decodeErrors = peer.decodeErrors
            videoPackets = peer.videoPacketsReceived
            videoBytes = peer.videoBytesReceived
            audioPackets = peer.audioPacketsReceived
            audioPlayed = peer.audioFramesPlayed
            concealments = peer.concealments
            fecRecoveries = peer.fecRecoveries
            nacksSent = peer.nacksSent
            keyframeRequestsSent = peer.keyframeRequestsSent
            decryptFailures = peer.decryptFailures
            audioDelayMs = Int((peer.audioDelay / .milliseconds(1)).rounded())
            audioDropouts = peer.audioDropouts
            longestAudioGapMs = Int((peer.longestAudioGap / .milliseconds(1)).rounded())
            audioCorrectionPPM = Int((peer.audioCorrection * 1e6).rounded())
            audioArrivalGaps = peer.audioArrivalGaps
            longestAudioArrivalGapMs = Int((peer.longestAudioArrivalGap / .milliseconds(1)).rounded())
            audioLate = peer.audioLate
            audioLateKept = peer.audioLateKept
            audioHeld = peer.audioHeld
            audioDiscarded = peer.audioDiscarded
            audioTargetMs = Int((peer.audioTarget / .milliseconds(1)).rounded())
            heldByDownlink = peer.heldByDownlink
            videoFreezes = peer.videoFreezes
            videoFrozenMs = Int((peer.videoFrozen / .milliseconds(1)).rounded())
        }
    }

    /// Seconds since the Unix epoch when the counters were read.
    public var time: Double
    /// This member's id (0 before joining).
    public var localID: UInt32
    /// Whether the media socket is bound at the relay.
    public var mediaBound: Bool
    /// Video frames sent (all layers).
    public var videoFramesSent: Int
    /// Keyframes sent.
    public var videoKeyframesSent: Int
    /// Frames taken from the camera.
    public var videoFramesCaptured: Int
    /// Camera frames dropped because the one before was still being encoded.
    public var videoFramesDroppedBusy: Int
    /// Which simulcast layers are encoded now, largest first.
    public var activeVideoLayers: [Bool]
    /// Video packets sent.
    public var videoPacketsSent: Int
    /// Video bytes sent.
    public var videoBytesSent: Int
    /// Audio packets sent.
    public var audioPacketsSent: Int
    /// Audio bytes sent.
    public var audioBytesSent: Int
    /// The packet loss (percent) the audio encoder plans in-band FEC for.
    public var audioPlannedLossPercent: Int
    /// The uplink's estimate from the relay's transport-wide feedback (kbit/s) and why it is there; nil before any
    /// feedback (or in a report from before it was sent).
    public var uplinkEstimateKbps: Int?
    public var uplinkEstimateReason: String?
    /// The downlink's estimate from losses in what arrived (kbit/s) and why it is there; nil while none was found.
    public var downlinkEstimateKbps: Int?
    public var downlinkEstimateReason: String?
    /// The full layer's rate the encoder aims at (kbit/s); nil in a report from before it was written.
    public var videoTargetKbps: Int?
    /// Where media goes ("udp", or "tcp" when UDP did not get through); nil in a report from before it was written.
    public var mediaPath: String?
    /// Times the media socket was closed by a send error (a firewall's EPERM) and opened again.
    public var mediaSocketReopens: Int?
    /// Times the signaling connection dropped and the membership was taken again; nil in an older report.
    public var signalingRejoins: Int?
    /// Chat lines sent, not yet echoed by the relay, and received from others; nil in an older report.
    public var chatLinesSent: Int?
    public var chatLinesWaiting: Int?
    public var chatLinesReceived: Int?
    /// Blocks of silence a real speaker played because the mix came late.
    public var speakerUnderruns: Int
    /// Blocks a real speaker dropped because its queue was full.
    public var speakerDropped: Int
    /// Times the speaker device itself ran dry (the sound server's count; 0 where the layer cannot tell).
    public var speakerDeviceUnderruns: Int
    /// The speaker device's play-out buffer in milliseconds; nil where the layer cannot tell or no speaker is open.
    public var speakerLatencyMs: Int?
    /// How often the microphone device hands audio over, in milliseconds; nil where unknown or no microphone.
    public var microphoneLatencyMs: Int?
    /// Times the microphone device dropped audio not read in time (the sound server's count; 0 where unknown).
    public var microphoneOverruns: Int
    /// Times a microphone block reached the media loop more than 40 ms after the one before (it left late), and the
    /// longest such wait in milliseconds; nil in a report from before they were counted.
    public var microphoneBlockGaps: Int?
    public var microphoneLongestBlockGapMs: Int?
    /// How the speaker's and the microphone's threads are scheduled: "realtime", "raised" or "normal" (nil without a
    /// real device).
    public var speakerThread: String?
    public var microphoneThread: String?
    /// How the call's media loop is scheduled: "raised" or "normal" (it mixes each speaker block).
    public var mediaThread: String?
    /// How the process's terminal session is weighted against other sessions (Linux autogroup): "raised" or
    /// "normal".
    public var sessionGroup: String?
    /// Keyframe requests (PLI) that reached this sender.
    public var keyframeRequestsReceived: Int
    /// The end-to-end cipher ("AES-128-GCM"); nil (written as `null`) for an unencrypted call.
    public var encryption: String?
    /// The remote members, by id.
    public var peers: [Peer]
    /// Further integer fields, each a top-level key; a name that is already one of the fields above is not written.
    public var extra: [String: Int]

    /// The report of `stats` read at `time`, with `extra` fields.
    public init(_ stats: CallStatistics, time: Double, extra: [String: Int] = [:]) {
        self.time = time
        localID = stats.localID
        mediaBound = stats.mediaBound
        videoFramesSent = stats.videoFramesSent
        videoKeyframesSent = stats.videoKeyframesSent
        videoFramesCaptured = stats.videoFramesCaptured
        videoFramesDroppedBusy = stats.videoFramesDroppedBusy
        activeVideoLayers = stats.activeVideoLayers
        videoPacketsSent = stats.videoPacketsSent
        videoBytesSent = stats.videoBytesSent
        audioPacketsSent = stats.audioPacketsSent
        audioBytesSent = stats.audioBytesSent
        audioPlannedLossPercent = stats.audioPlannedLossPercent
        uplinkEstimateKbps = stats.uplinkEstimateKbps
        uplinkEstimateReason = stats.uplinkEstimateReason
        downlinkEstimateKbps = stats.downlinkEstimateKbps
        downlinkEstimateReason = stats.downlinkEstimateReason
        videoTargetKbps = stats.videoTargetKbps
        mediaPath = stats.mediaPath
        mediaSocketReopens = stats.mediaSocketReopens
        signalingRejoins = stats.signalingRejoins
        chatLinesSent = stats.chatLinesSent
        chatLinesWaiting = stats.chatLinesWaiting
        chatLinesReceived = stats.chatLinesReceived
        speakerUnderruns = stats.speakerUnderruns
        speakerDropped = stats.speakerDropped
        speakerDeviceUnderruns = stats.speakerDeviceUnderruns
        speakerLatencyMs = stats.speakerLatency.map { Int(($0 / .milliseconds(1)).rounded()) }
        microphoneLatencyMs = stats.microphoneLatency.map { Int(($0 / .milliseconds(1)).rounded()) }
        microphoneOverruns = stats.microphoneOverruns
        microphoneBlockGaps = stats.microphoneBlockGaps
        microphoneLongestBlockGapMs = Int((stats.microphoneLongestBlockGap / .milliseconds(1)).rounded())
        speakerThread = stats.speakerThread?.rawValue
        microphoneThread = stats.microphoneThread?.rawValue
        mediaThread = stats.mediaThread?.rawValue
        sessionGroup = stats.sessionGroup?.rawValue
        keyframeRequestsReceived = stats.keyframeRequestsReceived
        encryption = stats.encryption
        peers = stats.peers.sorted { $0.key < $1.key }.map { Peer(id: $0.key, $0.value) }
        self.extra = extra
    }

    /// The report as one line of JSON, keys sorted.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case time, localID, mediaBound, videoFramesSent, videoKeyframesSent, videoFramesCaptured, videoFramesDroppedBusy
        case activeVideoLayers, videoPacketsSent, videoBytesSent, audioPacketsSent, audioBytesSent,
            audioPlannedLossPercent, uplinkEstimateKbps, uplinkEstimateReason, videoTargetKbps, mediaPath,
            downlinkEstimateKbps, downlinkEstimateReason,
            mediaSocketReopens, signalingRejoins, chatLinesSent, chatLinesWaiting, chatLinesReceived
        case speakerUnderruns, speakerDropped, speakerDeviceUnderruns, speakerLatencyMs, microphoneLatencyMs
        case microphoneOverruns, microphoneBlockGaps, microphoneLongestBlockGapMs, speakerThread, microphoneThread
        case mediaThread, sessionGroup
        case keyframeRequestsReceived, encryption, peers
    }

    /// The key of an `extra` field: any name.
    private struct ExtraKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let fieldNames = Set(CodingKeys.allCases.map(\.stringValue))

    /// Reads a report; keys it does not know that hold an integer become `extra`, others are ignored (a newer
    /// writer's fields).
    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        time = try fields.decode(Double.self, forKey: .time)
        localID = try fields.decode(UInt32.self, forKey: .localID)
        mediaBound = try fields.decode(Bool.self, forKey: .mediaBound)
        videoFramesSent = try fields.decode(Int.self, forKey: .videoFramesSent)
        videoKeyframesSent = try fields.decode(Int.self, forKey: .videoKeyframesSent)
        videoFramesCaptured = try fields.decode(Int.self, forKey: .videoFramesCaptured)
        videoFramesDroppedBusy = try fields.decodeIfPresent(Int.self, forKey: .videoFramesDroppedBusy) ?? 0
        activeVideoLayers = try fields.decode([Bool].self, forKey: .activeVideoLayers)
        videoPacketsSent = try fields.decode(Int.self, forKey: .videoPacketsSent)
        videoBytesSent = try fields.decode(Int.self, forKey: .videoBytesSent)
        audioPacketsSent = try fields.decode(Int.self, forKey: .audioPacketsSent)
        audioBytesSent = try fields.decode(Int.self, forKey: .audioBytesSent)
        audioPlannedLossPercent = try fields.decode(Int.self, forKey: .audioPlannedLossPercent)
        uplinkEstimateKbps = try fields.decodeIfPresent(Int.self, forKey: .uplinkEstimateKbps)
        uplinkEstimateReason = try fields.decodeIfPresent(String.self, forKey: .uplinkEstimateReason)
        downlinkEstimateKbps = try fields.decodeIfPresent(Int.self, forKey: .downlinkEstimateKbps)
        downlinkEstimateReason = try fields.decodeIfPresent(String.self, forKey: .downlinkEstimateReason)
        videoTargetKbps = try fields.decodeIfPresent(Int.self, forKey: .videoTargetKbps)
        mediaPath = try fields.decodeIfPresent(String.self, forKey: .mediaPath)
        mediaSocketReopens = try fields.decodeIfPresent(Int.self, forKey: .mediaSocketReopens)
        signalingRejoins = try fields.decodeIfPresent(Int.self, forKey: .signalingRejoins)
        chatLinesSent = try fields.decodeIfPresent(Int.self, forKey: .chatLinesSent)
        chatLinesWaiting = try fields.decodeIfPresent(Int.self, forKey: .chatLinesWaiting)
        chatLinesReceived = try fields.decodeIfPresent(Int.self, forKey: .chatLinesReceived)
        speakerUnderruns = try fields.decode(Int.self, forKey: .speakerUnderruns)
        speakerDropped = try fields.decode(Int.self, forKey: .speakerDropped)
        speakerDeviceUnderruns = try fields.decodeIfPresent(Int.self, forKey: .speakerDeviceUnderruns) ?? 0
        speakerLatencyMs = try fields.decodeIfPresent(Int.self, forKey: .speakerLatencyMs)
        microphoneLatencyMs = try fields.decodeIfPresent(Int.self, forKey: .microphoneLatencyMs)
        microphoneOverruns = try fields.decodeIfPresent(Int.self, forKey: .microphoneOverruns) ?? 0
        microphoneBlockGaps = try fields.decodeIfPresent(Int.self, forKey: .microphoneBlockGaps)
        microphoneLongestBlockGapMs = try fields.decodeIfPresent(Int.self, forKey: .microphoneLongestBlockGapMs)
        speakerThread = try fields.decodeIfPresent(String.self, forKey: .speakerThread)
        microphoneThread = try fields.decodeIfPresent(String.self, forKey: .microphoneThread)
        mediaThread = try fields.decodeIfPresent(String.self, forKey: .mediaThread)
        sessionGroup = try fields.decodeIfPresent(String.self, forKey: .sessionGroup)
        keyframeRequestsReceived = try fields.decode(Int.self, forKey: .keyframeRequestsReceived)
        encryption = try fields.decodeIfPresent(String.self, forKey: .encryption)
        peers = try fields.decode([Peer].self, forKey: .peers)
        let others = try decoder.container(keyedBy: ExtraKey.self)
        var extra: [String: Int] = [:]
        for key in others.allKeys where !Self.fieldNames.contains(key.stringValue) {
            if let value = try? others.decode(Int.self, forKey: key) { extra[key.stringValue] = value }
        }
        self.extra = extra
    }

    /// Writes every field; `encryption` as `null` when nil, so the key is always there.
    public func encode(to encoder: any Encoder) throws {
        var fields = encoder.container(keyedBy: CodingKeys.self)
        try fields.encode(time, forKey: .time)
        try fields.encode(localID, forKey: .localID)
        try fields.encode(mediaBound, forKey: .mediaBound)
        try fields.encode(videoFramesSent, forKey: .videoFramesSent)
        try fields.encode(videoKeyframesSent, forKey: .videoKeyframesSent)
        try fields.encode(videoFramesCaptured, forKey: .videoFramesCaptured)
        try fields.encode(videoFramesDroppedBusy, forKey: .videoFramesDroppedBusy)
        try fields.encode(activeVideoLayers, forKey: .activeVideoLayers)
        try fields.encode(videoPacketsSent, forKey: .videoPacketsSent)
        try fields.encode(videoBytesSent, forKey: .videoBytesSent)
        try fields.encode(audioPacketsSent, forKey: .audioPacketsSent)
        try fields.encode(audioBytesSent, forKey: .audioBytesSent)
        try fields.encode(audioPlannedLossPercent, forKey: .audioPlannedLossPercent)
        try fields.encodeIfPresent(uplinkEstimateKbps, forKey: .uplinkEstimateKbps)
        try fields.encodeIfPresent(uplinkEstimateReason, forKey: .uplinkEstimateReason)
        try fields.encodeIfPresent(downlinkEstimateKbps, forKey: .downlinkEstimateKbps)
        try fields.encodeIfPresent(downlinkEstimateReason, forKey: .downlinkEstimateReason)
        try fields.encodeIfPresent(videoTargetKbps, forKey: .videoTargetKbps)
        try fields.encodeIfPresent(mediaPath, forKey: .mediaPath)
        try fields.encodeIfPresent(mediaSocketReopens, forKey: .mediaSocketReopens)
        try fields.encodeIfPresent(signalingRejoins, forKey: .signalingRejoins)
        try fields.encodeIfPresent(chatLinesSent, forKey: .chatLinesSent)
        try fields.encodeIfPresent(chatLinesWaiting, forKey: .chatLinesWaiting)
        try fields.encodeIfPresent(chatLinesReceived, forKey: .chatLinesReceived)
        try fields.encode(speakerUnderruns, forKey: .speakerUnderruns)
        try fields.encode(speakerDropped, forKey: .speakerDropped)
        try fields.encode(speakerDeviceUnderruns, forKey: .speakerDeviceUnderruns)
        try fields.encodeIfPresent(speakerLatencyMs, forKey: .speakerLatencyMs)
        try fields.encodeIfPresent(microphoneLatencyMs, forKey: .microphoneLatencyMs)
        try fields.encode(microphoneOverruns, forKey: .microphoneOverruns)
        try fields.encodeIfPresent(microphoneBlockGaps, forKey: .microphoneBlockGaps)
        try fields.encodeIfPresent(microphoneLongestBlockGapMs, forKey: .microphoneLongestBlockGapMs)
        try fields.encodeIfPresent(speakerThread, forKey: .speakerThread)
        try fields.encodeIfPresent(microphoneThread, forKey: .microphoneThread)
        try fields.encodeIfPresent(mediaThread, forKey: .mediaThread)
        try fields.encodeIfPresent(sessionGroup, forKey: .sessionGroup)
        try fields.encode(keyframeRequestsReceived, forKey: .keyframeRequestsReceived)
        if let encryption {
            try fields.encode(encryption, forKey: .encryption)
        } else {
            try fields.encodeNil(forKey: .encryption)
        }
        try fields.encode(peers, forKey: .peers)
        var others = encoder.container(keyedBy: ExtraKey.self)
        for (name, value) in extra where !Self.fieldNames.contains(name) {
            try others.encode(value, forKey: ExtraKey(stringValue: name))
        }
    }
}

/// The `--stats-file` of `parley join` and `parley bot`: a file holding the latest `CallStatisticsReport` as one line
/// of JSON, replaced atomically (Foundation writes a sibling, then renames) so a reader never sees half a file.
public struct CallStatisticsFile: Sendable {
    /// Where the statistics go.
    public let path: String

    /// A statistics file at `path` (nothing is written until `write`).
    public init(path: String) {
        self.path = path
    }

    /// Replaces the file with `stats` read now (and `extra` fields); throws `CallSetupError` naming the path.
    public func write(_ stats: CallStatistics, extra: [String: Int] = [:]) throws(CallSetupError) {
        try write(CallStatisticsReport(stats, time: WallClock.seconds, extra: extra))
    }

    /// Replaces the file with `report`; throws `CallSetupError` naming the path on failure.
    public func write(_ report: CallStatisticsReport) throws(CallSetupError) {
        do {
            try (report.encoded() + Data("\n".utf8)).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CallSetupError("cannot write the statistics file \(path): \(Self.reason(error))")
        }
    }

    /// The report the file holds now; throws `CallSetupError` naming the path when it is missing or not a report.
    public func read() throws(CallSetupError) -> CallStatisticsReport {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CallSetupError("cannot read the statistics file \(path): \(Self.reason(error))")
        }
        do {
            return try JSONDecoder().decode(CallStatisticsReport.self, from: data)
        } catch {
            throw CallSetupError("the statistics file \(path) is not a statistics report: \(error)")
        }
    }

    /// The operating system's words for a failed file operation ("No such file or directory"), else Foundation's.
    private static func reason(_ error: any Error) -> String {
        if let underlying = (error as? CocoaError)?.underlying.map({ $0 as NSError }),
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return error.localizedDescription
    }
}
