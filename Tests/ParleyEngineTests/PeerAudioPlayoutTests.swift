import ParleyMedia
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Real Opus packets of a 440 Hz tone, encoded once and reused with new timestamps so long simulations stay fast.
///
/// 440 Hz repeats every five 20 ms packets (44 cycles per 100 ms), so cycling through five steady packets gives a
/// continuous tone, while a dropped or repeated packet shifts the phase by 0.8 cycle: a jump far beyond the tone's
/// own sample-to-sample steps. The "marker" run swaps in 100 ms of a louder tone (in phase), encoded in sequence with
/// its transitions, so its arrival in the output can be timed.
struct TonePackets {
    static let quietAmplitude = 6000.0
    static let loudAmplitude = 15000.0
    /// Largest step between samples of the loud tone (2π·440/48000·15000 ≈ 864) with room for Opus's own error.
    static let maximumStep = 1300

    /// Five packets, repeated in order, of the steady quiet tone.
    let steady: [[UInt8]]
    /// Thirty packets (a multiple of five): quiet, loud from `loudOffset`, then quiet again.
    let marker: [[UInt8]]
    /// Index in `marker` of the first loud packet.
    static let loudOffset = 5

    static let shared: TonePackets = {
        let encoder = try! OpusAudioEncoder(OpusAudioConfig())
        var packets: [[UInt8]] = []
        for index in 0..<125 {
            let loud = (60..<65).contains(index)
            let amplitude = loud ? loudAmplitude : quietAmplitude
            let samples = (0..<960).map { offset -> Int16 in
                let t = Double(index * 960 + offset) / 48_000
                return Int16((amplitude * sin(2 * Double.pi * 440 * t)).rounded())
            }
            packets.append(try! encoder.encode(AudioFrame(samples: samples)))
        }
        return TonePackets(steady: Array(packets[50..<55]), marker: Array(packets[55..<85]))
    }()

    /// Payload for sender packet `index`; marker runs start at the given packet indices (multiples of five).
    func payload(_ index: Int, markers: [Int]) -> [UInt8] {
        for start in markers where (start..<(start + marker.count)).contains(index) { return marker[index - start] }
        return steady[index % 5]
    }
}

/// A sender on its own clock, a network with seeded jitter, and a device pulling 10 ms blocks on the device clock.
struct PlayoutSimulation {
    /// Sender clock rate minus device clock rate, in ppm (+200: the sender's 20 ms pass in 19.996 ms of device time).
    var senderPPM: Double
    /// Total device time simulated.
    var duration: Duration
    /// Sender packet indices whose packet never arrives.
    var lost: Set<Int> = []
    /// Sender packet index ranges during which the sender sends nothing (mute or DTX); timestamps keep running.
    var pauses: [Range<Int>] = []
    /// Sender packet indices where a marker run starts.
    var markers: [Int] = []
    /// Fixed network delay plus uniform jitter up to `jitterMilliseconds`.
    var networkMilliseconds = 5.0
    var jitterMilliseconds = 6.0
    var seed: UInt64 = 0x5EED

    struct Result {
        var counters: PeerAudioPlayout.Counters
        /// Device time of each marker's loud onset in the output minus the time the sender produced it (seconds).
        var markerDelays: [Double]
        /// Reported playout delay at each marker's send time.
        var reportedDelays: [Double]
        /// Largest step between consecutive output samples, outside pauses' edges.
        var maximumStep: Int
        /// 10 ms output blocks holding the tone (peak above 3000): audio actually played.
        var audibleBlocks: Int
        /// The resampling correction averaged over the last ten minutes.
        var settledCorrection: Double
        /// Counters at the end of the warm-up (first 60 s).
        var warmUpCounters: PeerAudioPlayout.Counters?
    }

    func sendTime(_ index: Int) -> Double { Double(index) * 0.02 / (1 + senderPPM * 1e-6) }

    func run() throws -> Result {
        let tones = TonePackets.shared
        let playout = try PeerAudioPlayout(settings: PeerAudioPlayout.callSettings)  // as in a call
        var random = seed
        func uniform() -> Double {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(random >> 11) / Double(1 << 53)
        }
        let pullFrames = 480
        let pulls = Int(duration / .milliseconds(10))
        var nextPacket = 0
        var pending: [(arrival: Double, index: Int)] = []
        var previous: Int16 = 0
        var maximumStep = 0
        var audibleBlocks = 0
        var correctionSum = 0.0
        var correctionCount = 0
        var markerDelays = [Double?](repeating: nil, count: markers.count)
        var reported = [Double?](repeating: nil, count: markers.count)
        var warmUp: PeerAudioPlayout.Counters?
        let warmUpPulls = 6000
        for pull in 0..<pulls {
            let now = Double(pull) * 0.01
            // Packets sent up to now (plus the longest network delay) join the in-flight list with their arrival.
            while sendTime(nextPacket) <= now {
                let index = nextPacket
                nextPacket += 1
                if lost.contains(index) || pauses.contains(where: { $0.contains(index) }) { continue }
                let arrival = sendTime(index) + (networkMilliseconds + jitterMilliseconds * uniform()) / 1000
                pending.append((arrival, index))
                for (slot, start) in markers.enumerated() where start + TonePackets.loudOffset == index {
                    reported[slot] = playout.playoutDelay / .seconds(1)
                }
            }
            pending.sort { $0.arrival < $1.arrival }
            while let first = pending.first, first.arrival <= now {
                pending.removeFirst()
                let resumed = pauses.contains { $0.upperBound == first.index }
                let header = RTPHeader(
                    marker: first.index == 0 || resumed, payloadType: MediaPayloadType.opus,
                    sequenceNumber: UInt16(truncatingIfNeeded: 1000 + first.index),
                    timestamp: UInt32(truncatingIfNeeded: 12_345 + 960 * first.index), ssrc: 0xA0D1)
                let packet = RTPPacket(header: header, payload: tones.payload(first.index, markers: markers))
                playout.insert(packet, at: .seconds(first.arrival))
            }
            let block = playout.pull(frames: pullFrames, at: .seconds(now))
            precondition(block.count == pullFrames)
            // A plain index loop: iterators and tuples cost metadata lookups per sample in a debug build.
            var peak = 0
            var loudAt = -1
            block.withUnsafeBufferPointer { samples in
                var last = Int(previous)
                var offset = 0
                while offset < pullFrames {
                    let sample = Int(samples[offset])
                    let step = sample &- last
                    if step > maximumStep || -step > maximumStep { maximumStep = step > 0 ? step : -step }
                    last = sample
                    if sample > peak {
                        peak = sample
                        if sample > 10_500 && loudAt < 0 { loudAt = offset }
                    }
                    offset += 1
                }
                previous = samples[pullFrames - 1]
            }
            if loudAt >= 0 {
                let time = now + Double(loudAt) / 48_000
                for slot in markers.indices where markerDelays[slot] == nil {
                    let sent = sendTime(markers[slot] + TonePackets.loudOffset)
                    if time > sent { markerDelays[slot] = time - sent }
                }
            }
            if peak > 3000 { audibleBlocks += 1 }
            if pull >= pulls - 60_000 {
                correctionSum += playout.correction
                correctionCount += 1
            }
            if pull == warmUpPulls { warmUp = playout.counters }
        }
        return Result(
            counters: playout.counters, markerDelays: markerDelays.map { $0 ?? .nan },
            reportedDelays: reported.map { $0 ?? .nan }, maximumStep: maximumStep, audibleBlocks: audibleBlocks,
            settledCorrection: correctionSum / Double(max(1, correctionCount)), warmUpCounters: warmUp)
    }
}

@Suite(.lane(.simulations)) struct PeerAudioPlayoutTests {
    // 31 minutes of device time with the sender's clock 200 ppm fast or slow: 372 ms of drift in total, which
    // without compensation the jitter buffer would absorb by dropping or holding a packet about every 100 s.
    // Markers at sender minute 1 and minute 30 time the real delay from the sender's timeline to the speaker.
    @Test(arguments: [200.0, -200.0])
    func driftIsAbsorbedWithoutDelayCreepOrClicks(senderPPM: Double) throws {
        let simulation = PlayoutSimulation(
            senderPPM: senderPPM, duration: .seconds(31 * 60), markers: [60 * 50, 30 * 60 * 50])
        let result = try simulation.run()
        let warmUp = try #require(result.warmUpCounters)
        #expect(result.counters.discarded == warmUp.discarded, "packets dropped after warm-up")
        #expect(result.counters.held == warmUp.held, "slots held after warm-up")
        #expect(result.counters.concealed == 0)
        #expect(result.counters.late == 0)
        #expect(result.counters.fecRecovered == 0)
        let minute1 = result.markerDelays[0]
        let minute30 = result.markerDelays[1]
        #expect(abs(minute30 - minute1) < 0.020, "delay \(minute1) s at minute 1, \(minute30) s at minute 30")
        #expect((0.02...0.15).contains(minute1), "delay at minute 1: \(minute1) s")
        let reported1 = result.reportedDelays[0]
        let reported30 = result.reportedDelays[1]
        #expect(abs(reported30 - reported1) < 0.020, "reported \(reported1) s then \(reported30) s")
        // The controller found the offset: the correction settles on the sender's rate.
        #expect(abs(result.settledCorrection - senderPPM * 1e-6) < 5e-6, "correction \(result.settledCorrection)")
        #expect(result.maximumStep < TonePackets.maximumStep, "largest step \(result.maximumStep)")
        print(
            "drift \(senderPPM) ppm: delay \(minute1) → \(minute30) s, reported \(reported1) → \(reported30) s, "
                + "correction \(result.settledCorrection), largest step \(result.maximumStep), \(result.counters)")
    }

    // Single losses after the warm-up are rebuilt from the next packet's FEC data, without concealment or clicks.
    @Test func singleLossesAreRecoveredByFEC() throws {
        let lost = Set(stride(from: 1000, to: 2400, by: 97))
        let simulation = PlayoutSimulation(senderPPM: 200, duration: .seconds(50), lost: lost)
        let result = try simulation.run()
        #expect(result.counters.fecRecovered == lost.count)
        #expect(result.counters.concealed == 0)
        #expect(result.counters.discarded == 0)
        #expect(result.counters.held == 0)
        #expect(result.maximumStep < TonePackets.maximumStep, "largest step \(result.maximumStep)")
    }

    // A 2 s pause (mute or DTX: nothing sent, timestamps keep running), then the talker resumes: play-out stops,
    // restarts with the new talkspurt at the same delay, and nothing is dropped or held.
    @Test func talkspurtGapThenResume() throws {
        let simulation = PlayoutSimulation(
            senderPPM: -200, duration: .seconds(14), pauses: [250..<350], markers: [150, 500])
        let result = try simulation.run()
        #expect(result.counters.discarded == 0)
        #expect(result.counters.held == 0)
        #expect(result.counters.late == 0)
        // The talkspurt's tail is concealed until the buffer goes idle (100 ms: 5 slots, 6 when the 10 ms pulls
        // straddle the limit), then silence.
        #expect(result.counters.concealed <= 6)
        #expect(result.counters.silentSlots >= 90)
        let before = result.markerDelays[0]
        let after = result.markerDelays[1]
        #expect(abs(after - before) < 0.020, "delay \(before) s before the pause, \(after) s after")
        // Audio comes back: about 12 s of tone was sent, and nearly all of it is heard.
        let sentSeconds = 14.0 - 2.0
        #expect(Double(result.audibleBlocks) / 100 > sentSeconds - 0.5, "\(result.audibleBlocks) blocks heard")
    }
}
