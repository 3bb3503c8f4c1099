import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyRelay
import ParleyRoom
import ParleyWire
import Synchronization

/// Capture-to-decoded latency of a real call through the relay on loopback: a sending CallEngine's self view marks
/// when each camera picture was captured (before encoding), a receiving CallEngine's video sink reads the stamp off
/// each decoded picture. The reference row is the codec alone on the same pictures: encode then decode, no network.
public enum LatencyBench {
    /// What to measure.
    public struct Settings: Sendable {
        /// The sender's camera and encoder profile.
        public var profile: VideoProfile
        /// Measured window (after the call settles).
        public var window: Duration
        /// Frames encoded and decoded directly for the reference row.
        public var referenceFrames: Int

        /// Defaults: 640x360 at 30 fps, 600 kbit/s; 15 s; 150 reference frames.
        public init(profile: VideoProfile = .standard, window: Duration = .seconds(15), referenceFrames: Int = 150) {
            self.profile = profile
            self.window = window
            self.referenceFrames = referenceFrames
        }
    }

    /// Runs the call and the reference and returns the table.
    public static func run(settings: Settings = Settings(), log: @Sendable (String) -> Void) async throws
        -> BenchTable
    {
        let profile = settings.profile
        var table = BenchTable(
            title: "Capture-to-decoded video latency, \(profile.name) at \(profile.fps) fps, "
                + "\(profile.bitrateKbps) kbit/s",
            columns: ["path", "frames", "p50 ms", "p90 ms", "p99 ms", "max ms", "frames lost"])
        log("latency bench: call through the relay for \(seconds(settings.window)) s")
        let call = try await measureCall(settings: settings)
        table.add(row("two CallEngines through the relay (loopback)", call.latencies, lost: call.lost))
        log("latency bench: reference, encode + decode only")
        let reference = try measureCodecOnly(settings: settings)
        table.add(
            row(
                "reference: VP8 encode + decode only (speed \(VP8EncoderConfig.callSpeed), as calls), same camera",
                reference, lost: 0))

        let interval = 1000.0 / Double(profile.fps)
        let goal = interval + 10
        let p50 = Sample.percentile(call.latencies, 0.5) ?? .infinity
        table.notes = [
            "Captured = the sender's camera picture handed to its self-view sink, right before VP8 encoding; decoded = "
                + "the receiver's video sink gets the picture. Both sinks share one process and clock; the frame is "
                + "matched by the stamp the synthetic camera draws into it (participant id + frame counter).",
            "The call includes the sender's encode and RTP send, the relay, the receiver's jitter buffer (a frame is "
                + "decoded as its last packet arrives) and decode. Relay, sender and receiver each run on their own event loop thread; "
                + "frames lost = captured in the window (after the bind) but never decoded.",
            "Goal: p50 within one frame interval + 10 ms = \(formatted(goal, decimals: 1)) ms: "
                + (p50 <= goal ? "met" : "NOT met") + " (p50 \(formatted(p50, decimals: 1)) ms). "
                + "Receiver: \(call.framesDecoded) frames decoded, \(call.decodeErrors) decode errors, "
                + "\(call.nacks) NACKs, \(call.keyframeRequests) keyframe requests.",
        ]
        return table
    }

    static func row(_ name: String, _ latencies: [Double], lost: Int) -> [String] {
        func cell(_ p: Double) -> String { Sample.percentile(latencies, p).map { formatted($0, decimals: 1) } ?? "n/a" }
        return [name, "\(latencies.count)", cell(0.5), cell(0.9), cell(0.99), cell(1.0), "\(lost)"]
    }

    struct CallResult {
        var latencies: [Double]
        var lost: Int
        var framesDecoded: Int
        var decodeErrors: Int
        var nacks: Int
        var keyframeRequests: Int
        /// Over the window: the sender's media packets and bytes (audio and every video layer), and what `counted`
        /// counted (a relay's trunk packets, say).
        var senderPackets = 0
        var senderBytes = 0
        var counted = 0
    }

    private static func measureCall(settings: Settings) async throws -> CallResult {
        var quiet = Logger(label: "parley.bench")
        quiet.logLevel = .critical
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quiet))
        let server = ServerAddress(host: "127.0.0.1", port: relay.signalingPort)
        do {
            let result = try await measureCall(settings: settings, sender: server, receiver: server, room: "latency")
            await relay.shutdown()
            return result
        } catch {
            await relay.shutdown()
            throw error
        }
    }

    /// A call of two engines, the sender joining through `sender` and the receiver through `receiver` (one relay,
    /// or two nodes of a cluster); `count` is read as the window opens and closes.
    static func measureCall(
        settings: Settings, sender senderServer: ServerAddress, receiver receiverServer: ServerAddress, room: String,
        count: @Sendable () async -> Int = { 0 }
    ) async throws -> CallResult {
        var quiet = Logger(label: "parley.bench")
        quiet.logLevel = .critical
        let recorder = LatencyRecorder()
        let sender = try CallEngine(
            CallConfiguration(
                server: senderServer, room: room, name: "sender", profile: settings.profile,
                decodesVideo: false, decodesAudio: false, showsSelfView: true, logger: quiet),
            videoSink: CaptureSink(recorder: recorder))
        let receiver = try CallEngine(
            CallConfiguration(
                server: receiverServer, room: room, name: "receiver", profile: settings.profile,
                microphoneMuted: true, cameraOff: true, showsSelfView: false, logger: quiet),
            videoSink: DecodeSink(recorder: recorder))
        let drains = [sender, receiver].map { engine in Task { for await _ in engine.events {} } }
        sender.start()
        receiver.start()
        // Settle: the bind, the first keyframe, a second of steady frames.
        let settleDeadline = ContinuousClock.now + .seconds(10)
        while recorder.sampleCount < 30 && ContinuousClock.now < settleDeadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        guard recorder.sampleCount > 0 else {
            await sender.leave()
            await receiver.leave()
            for drain in drains { drain.cancel() }
            throw LatencyBenchError.noFrames
        }
        let sentBefore = await sender.statistics()
        let countedBefore = await count()
        recorder.startWindow()
        try await Task.sleep(for: settings.window)
        recorder.endWindow()
        let sentAfter = await sender.statistics()
        let countedAfter = await count()
        // Frames captured at the end of the window are still on their way.
        try await Task.sleep(for: .milliseconds(300))
        let (latencies, lost) = recorder.results()
        let stats = await receiver.statistics()
        await sender.leave()
        await receiver.leave()
        for drain in drains { drain.cancel() }
        let peer = stats.peers.values.first
        func packets(_ stats: CallStatistics) -> Int { stats.audioPacketsSent + stats.videoPacketsSent }
        func bytes(_ stats: CallStatistics) -> Int { stats.audioBytesSent + stats.videoBytesSent }
        return CallResult(
            latencies: latencies, lost: lost, framesDecoded: peer?.framesDecoded ?? 0,
            decodeErrors: peer?.decodeErrors ?? 0, nacks: peer?.nacksSent ?? 0,
            keyframeRequests: peer?.keyframeRequestsSent ?? 0,
            senderPackets: packets(sentAfter) - packets(sentBefore), senderBytes: bytes(sentAfter) - bytes(sentBefore),
            counted: countedAfter - countedBefore)
    }

    private static func measureCodecOnly(settings: Settings) throws -> [Double] {
        let profile = settings.profile
        let camera = SyntheticCamera(
            name: "sender", participant: 1, width: profile.width, height: profile.height,
            framesPerSecond: profile.fps)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(
                width: profile.width, height: profile.height, targetBitrateKbps: profile.bitrateKbps,
                framesPerSecond: profile.fps, cpuUsed: VP8EncoderConfig.callSpeed))
        let decoder = try VP8Decoder()
        let clock = ContinuousClock()
        var latencies: [Double] = []
        for index in 0..<settings.referenceFrames {
            let frame = camera.nextFrame()
            let captured = clock.now
            for encoded in try encoder.encode(frame, forceKeyframe: index == 0) {
                guard let picture = try decoder.decode(encoded.bytes),
                    SyntheticCamera.readStamp(from: picture)?.frame == UInt32(index)
                else { continue }
                latencies.append(milliseconds(clock.now - captured))
            }
        }
        return latencies
    }
}

/// Errors of the latency benchmark.
public enum LatencyBenchError: Error, CustomStringConvertible {
    /// The receiver decoded no stamped picture within 10 s of starting the call.
    case noFrames

    public var description: String {
        switch self {
        case .noFrames: "the receiving engine decoded no stamped picture within 10 s of joining"
        }
    }
}

func milliseconds(_ duration: Duration) -> Double { seconds(duration) * 1000 }

/// Capture instants by frame counter and the latencies measured against them; shared by both engines' sinks.
final class LatencyRecorder: Sendable {
    private struct State {
        var captures: [UInt32: ContinuousClock.Instant] = [:]
        var latencies: [Double] = []
        var windowStart: ContinuousClock.Instant?
        var windowEnd: ContinuousClock.Instant?
        var sampleCount = 0
    }

    private let state = Mutex(State())

    var sampleCount: Int { state.withLock { $0.sampleCount } }

    func captured(frame: UInt32, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            if state.windowEnd == nil { state.captures[frame] = instant }
        }
    }

    func decoded(frame: UInt32, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            guard let captured = state.captures[frame] else { return }
            state.sampleCount += 1
            if let start = state.windowStart, captured >= start, state.windowEnd.map({ captured < $0 }) ?? true {
                state.latencies.append(milliseconds(instant - captured))
            }
        }
    }

    /// From now on, frames captured count.
    func startWindow() {
        state.withLock { state in
            state.windowStart = .now
            state.captures.removeAll()
        }
    }

    /// Frames captured from now on no longer count; those captured before still count when they arrive.
    func endWindow() {
        state.withLock { $0.windowEnd = .now }
    }

    /// Latencies measured in the window and the number of frames captured in it that were never decoded.
    func results() -> ([Double], Int) {
        state.withLock { state in (state.latencies, max(0, state.captures.count - state.latencies.count)) }
    }
}

/// The sender's self view: records when each picture left the camera.
struct CaptureSink: VideoFrameSink {
    let recorder: LatencyRecorder

    func deliver(_ frame: VideoFrame, from participant: ParticipantID) {
        let now = ContinuousClock.now
        guard let stamp = SyntheticCamera.readStamp(from: frame), stamp.participant == participant.rawValue else {
            return
        }
        recorder.captured(frame: stamp.frame, at: now)
    }
}

/// The receiver's video sink: matches each decoded picture to its capture. The call has one sender, and the stamp
/// carries the id the sender's node gave it, which is not the one the receiver knows it by when they joined through
/// different nodes: only the frame counter is matched.
struct DecodeSink: VideoFrameSink {
    let recorder: LatencyRecorder

    func deliver(_ frame: VideoFrame, from participant: ParticipantID) {
        let now = ContinuousClock.now
        guard let stamp = SyntheticCamera.readStamp(from: frame) else { return }
        recorder.decoded(frame: stamp.frame, at: now)
    }
}
