import Foundation
import Testing

@testable import ParleyBench

/// The mouth-to-ear benchmark's own checks: the click finder on synthetic recordings (a click heard late, one missing,
/// one too quiet, the whole train a second late), and the breakdown of Parley's figure from statistics files with and
/// without the device-latency fields.
struct MouthToEarTests {
    static let rate = ClickTrain.sampleRate
    static let seconds = 5
    /// Silence before the train in every synthetic recording (the recorder starts before the player).
    static let lead = 10_007

    /// A channel holding the clicks of `seconds`, each starting `delay(second)` samples after its place in the train
    /// (nil: that click left out), scaled by `gain`, plus a low deterministic noise of `noise` peak.
    static func channel(
        gain: Double = 1, noise: Int = 0, _ delay: (Int) -> Int? = { _ in 0 }
    ) -> [Int16] {
        var samples = [Int](repeating: 0, count: lead + (seconds + 2) * rate)
        for second in 0..<seconds {
            guard let shift = delay(second) else { continue }
            let start = lead + second * rate + ClickTrain.offset + shift
            for (index, value) in ClickTrain.click.enumerated() {
                samples[start + index] += Int((Double(value) * gain).rounded())
            }
        }
        if noise > 0 {
            var state: UInt32 = 12345
            for index in samples.indices {
                state = state &* 1_103_515_245 &+ 12345
                samples[index] += Int(state >> 16) % (2 * noise + 1) - noise
            }
        }
        return samples.map { Int16(clamping: $0) }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var sent: @Sendable () -> [Int16]
        var heard: @Sendable () -> [Int16]
        /// Delay of each second in milliseconds, or the error expected.
        var expected: Result<[Double], ClickSearchError>
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "every click heard 150 ms later", sent: { channel() }, heard: { channel { _ in 7_200 } },
            expected: .success([150, 150, 150, 150, 150])),
        Case(
            name: "one click delayed by 50 ms more than the others", sent: { channel() },
            heard: { channel { $0 == 2 ? 9_600 : 7_200 } }, expected: .success([150, 150, 200, 150, 150])),
        Case(
            name: "heard at a third of the level, polarity inverted, over noise at -50 dBFS", sent: { channel() },
            heard: { channel(gain: -0.3, noise: 100) { _ in 3_361 } },
            expected: .success([70.02, 70.02, 70.02, 70.02, 70.02])),
        Case(
            name: "heard the same instant (no delay)", sent: { channel() }, heard: { channel() },
            expected: .success([0, 0, 0, 0, 0])),
        Case(
            name: "a click missing in the heard channel", sent: { channel() },
            heard: { channel { $0 == 3 ? nil : 7_200 } },
            expected: .failure(.notHeard(seconds: [3], of: 5, maximumDelayMilliseconds: 900))),
        Case(
            name: "nothing heard at all", sent: { channel() }, heard: { channel { _ in nil } },
            expected: .failure(.notHeard(seconds: [0, 1, 2, 3, 4], of: 5, maximumDelayMilliseconds: 900))),
        Case(
            // Each later click then lines up with the one before it (delay 0), but the first has nothing before it:
            // a path a second or more late fails on its first click instead of passing with a wrong figure.
            name: "every click a whole second late: the first is missing", sent: { channel() },
            heard: { channel { _ in rate } },
            expected: .failure(.notHeard(seconds: [0], of: 5, maximumDelayMilliseconds: 900))),
        Case(
            name: "a click heard at -50 dB is too quiet to count", sent: { channel() },
            heard: { channel(gain: 0.003) { _ in 7_200 } },
            expected: .failure(.notHeard(seconds: [0, 1, 2, 3, 4], of: 5, maximumDelayMilliseconds: 900))),
        Case(
            name: "a click missing in the sent channel", sent: { channel { $0 == 1 ? nil : 0 } },
            heard: { channel { _ in 7_200 } },
            expected: .failure(.sentClicksWrong(expected: 5, found: 4, seconds: [1]))),
        Case(
            name: "the first click sent missing: the train is a click short", sent: { channel { $0 == 0 ? nil : 0 } },
            heard: { channel { _ in 7_200 } },
            expected: .failure(.sentClicksWrong(expected: 5, found: 4, seconds: [4]))),
    ]

    /// On a lossy link (the network lab's mouth-to-ear) a lost click is counted as not heard, the others measured;
    /// a train that never reached the microphone still fails.
    @Test("the finder that tolerates loss keeps a missing click as not heard")
    func lossTolerantFinder() throws {
        let finder = ClickFinder(seconds: Self.seconds)
        let matches = try finder.findAll(sent: Self.channel(), heard: Self.channel { $0 == 3 ? nil : 7_200 })
        #expect(matches.map { $0.heardAt == nil } == [false, false, false, true, false])
        #expect(ClickDelays(matches).milliseconds.map { $0.rounded() } == [150, 150, 150, 150])
        #expect(throws: ClickSearchError.sentClicksWrong(expected: 5, found: 4, seconds: [1])) {
            try finder.findAll(sent: Self.channel { $0 == 1 ? nil : 0 }, heard: Self.channel { _ in 7_200 })
        }
    }

    @Test("the click finder on synthetic recordings", arguments: cases)
    func finder(_ row: Case) {
        let finder = ClickFinder(seconds: Self.seconds)
        do {
            let matches = try finder.find(sent: row.sent(), heard: row.heard())
            guard case .success(let expected) = row.expected else {
                Issue.record("found \(matches.compactMap(\.delayMilliseconds)), expected \(row.expected)")
                return
            }
            let delays = matches.compactMap(\.delayMilliseconds)
            #expect(delays.count == expected.count)
            for (delay, want) in zip(delays, expected) { #expect(abs(delay - want) < 0.01, "\(delays)") }
            #expect(matches.map(\.second) == Array(0..<Self.seconds))
            #expect(matches.allSatisfy { $0.correlation > 0.9 }, "\(matches.map(\.correlation))")
        } catch {
            #expect(row.expected == .failure(error), "\(error)")
        }
    }

    @Test func errorsNameTheSeconds() {
        #expect(
            ClickSearchError.notHeard(seconds: [3, 17], of: 60, maximumDelayMilliseconds: 900).description
                == "2 of 60 clicks were not heard within 900 ms: seconds 3, 17")
        #expect(
            ClickSearchError.sentClicksWrong(expected: 60, found: 59, seconds: [0]).description
                == "the sent channel holds 59 clicks where 60 were played, missing at seconds 0 (counted from the "
                + "first found): the click train did not reach the microphone")
    }

    @Test func trainHasOneClickASecond() {
        let train = ClickTrain(seconds: 3).samples
        #expect(train.count == 3 * Self.rate)
        #expect(ClickTrain.click.count == 240)
        #expect(ClickTrain.click.map { abs(Int($0)) }.max()! <= 16_384)
        let loud = train.indices.filter { abs(Int(train[$0])) > 8_000 }
        #expect(Set(loud.map { $0 / Self.rate }) == [0, 1, 2])
        #expect(loud.allSatisfy { ($0 % Self.rate) >= ClickTrain.offset && ($0 % Self.rate) < ClickTrain.offset + 240 })
    }

    @Test func delaysPercentiles() {
        let matches = (0..<10).map { ClickMatch(second: $0, sentAt: 0, heardAt: 48 * (100 + $0), correlation: 1) }
        let delays = ClickDelays(matches)
        #expect(delays.percentile(0.5) == 104)
        #expect(delays.percentile(0.9) == 108)
        #expect(delays.percentile(1) == 109)
    }

    // MARK: - Breakdown

    static let today = """
        {"activeVideoLayers":[true],"audioBytesSent":0,"audioPacketsSent":0,"audioPlannedLossPercent":0,
        "encryption":null,"keyframeRequestsReceived":0,"localID":2,"mediaBound":true,
        "peers":[{"audioPackets":3000,"audioPlayed":2990,"concealments":0,"decodeErrors":0,"decryptFailures":0,
        "fecRecoveries":0,"framesDecoded":900,"id":1,"keyframeRequestsSent":0,"name":"talker","nacksSent":0,
        "videoBytes":1,"videoPackets":1}],
        "speakerDropped":0,"speakerUnderruns":2,"time":1764170000.5,"videoBytesSent":0,"videoFramesCaptured":0,
        "videoFramesSent":0,"videoKeyframesSent":0,"videoPacketsSent":0}
        """

    @Test func breakdownWithTodaysStatisticsPutsTheUnreportedInTheRemainder() throws {
        let listener = try JSONDecoder().decode(LatencyFields.self, from: Data(Self.today.utf8))
        #expect(listener.speakerUnderruns == 2)
        #expect(listener.peer("talker")?.concealments == 0)
        #expect(listener.milliseconds.isEmpty)
        let breakdown = MouthToEarBreakdown(p50: 258, talker: nil, listener: listener, talkerName: "talker")
        #expect(
            breakdown.stages.map(\.name) == [
                "capture buffer (talker's microphone)", "packetisation (one Opus frame)",
                "network and relay (loopback)", "jitter buffer", "play-out buffer (listener's speaker)", "remainder",
            ])
        #expect(breakdown.stages.map(\.milliseconds) == [nil, 20, nil, nil, nil, 238])
        #expect(breakdown.rows[3][1] == "n/a")
        #expect(breakdown.rows[3][2].contains("starts at 40 ms"), "\(breakdown.rows[3][2])")
        #expect(breakdown.otherFields.isEmpty)
    }

    @Test func breakdownReadsDeviceLatenciesWhenTheyArePresent() throws {
        let talkerText = #"{"time":1,"speakerUnderruns":0,"speakerDropped":0,"peers":[],"microphoneLatencyMs":21.5}"#
        let listenerText =
            #"{"time":1,"speakerUnderruns":0,"speakerDropped":0,"speakerLatencyMs":40,"roundTripMs":1.0,"#
            + #""encoderDelayMs":6.5,"peers":[{"name":"talker","concealments":0,"audioPlayed":5,"jitterBufferMs":60,"#
            + #""name2":"x"}]}"#
        let talker = try JSONDecoder().decode(LatencyFields.self, from: Data(talkerText.utf8))
        let listener = try JSONDecoder().decode(LatencyFields.self, from: Data(listenerText.utf8))
        let breakdown = MouthToEarBreakdown(p50: 160, talker: talker, listener: listener, talkerName: "talker")
        #expect(breakdown.stages.map(\.milliseconds) == [21.5, 20, 0.5, 60, 40, 18])
        #expect(breakdown.stages[0].source == "talker's `microphoneLatencyMs`")
        #expect(breakdown.stages[2].source == "half the listener's `roundTripMs`")
        #expect(breakdown.stages[3].source == "listener (for the talker)'s `jitterBufferMs`")
        #expect(breakdown.otherFields == ["listener: encoderDelayMs = 6.5"])
        #expect(breakdown.stages.compactMap(\.milliseconds).reduce(0, +) == 160)
    }

    // MARK: - The reference clients

    @Test func baresipConfigUsesThePulseDevicesGiven() {
        let config = MouthToEarBench.baresipConfig(
            sipPort: 5060, consolePort: 5061, rtpPorts: 30_000...30_009, source: "mouth_mic", player: "void")
        let settings = Dictionary(
            config.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: "\t", omittingEmptySubsequences: true)
                return parts.count == 2 && parts[0] != "module" ? (String(parts[0]), String(parts[1])) : nil
            }
        ) { $1 }
        #expect(settings["audio_source"] == "pulse,mouth_mic")
        #expect(settings["audio_player"] == "pulse,void")
        #expect(settings["rtp_ports"] == "30000-30009")
        #expect(config.contains("module\t\t\tpulse.so"))
        #expect(!config.contains("vp8"), "audio only")
    }

    @Test func chromiumStatsLinesAndErrors() throws {
        let output = """
            [1:1:INFO:CONSOLE:2] "PARLEYBENCH playing", source: file:///tmp/m.html (2)
            [1:1:INFO:CONSOLE:2] "PARLEYBENCH stats packets=249 concealments=1 jitterMs=62.9", source: file:///t (2)
            other line
            [1:1:INFO:CONSOLE:2] "PARLEYBENCH stats packets=300 concealments=1 jitterMs=63.0", source: file:///t (2)
            """
        #expect(
            try MouthToEarBench.ChromiumStats.all(in: output) == [
                .init(packets: 249, concealments: 1, jitterMilliseconds: 62.9),
                .init(packets: 300, concealments: 1, jitterMilliseconds: 63),
            ])
        #expect(throws: CallBenchError.self) {
            try MouthToEarBench.ChromiumStats.all(in: #""PARLEYBENCH error=NotFoundError%3A%20no%20device", source"#)
        }
    }
}

/// The sound server's view of a path's streams: `pactl list` output parsed into buffer latencies.
struct MouthToEarStreamsTests {
    static let sinkInputs = """
        Sink Input #1
        \tDriver: module-remap-sink.c
        \tSink: 0
        \tBuffer Latency: 83 usec
        \tSink Latency: 8535 usec
        \tProperties:
        \t\tmedia.name = "Remapped Stream"

        Sink Input #2
        \tDriver: protocol-native.c
        \tSink: 2
        \tSample Specification: float32le 2ch 44100Hz
        \tBuffer Latency: 37671 usec
        \tSink Latency: 8605 usec
        \tProperties:
        \t\tapplication.name = "ALSA plug-in [parley]"
        \t\tapplication.process.id = "20894"

        Sink Input #3
        \tDriver: module-loopback.c
        \tSink: 2
        \tBuffer Latency: 19928 usec
        """

    @Test func parsesEachStreamsBufferLatency() {
        #expect(
            SoundStream.parse(Self.sinkInputs) == [
                SoundStream(device: 0, driver: "module-remap-sink.c", application: "", bufferMicroseconds: 83),
                SoundStream(
                    device: 2, driver: "protocol-native.c", application: "ALSA plug-in [parley]",
                    bufferMicroseconds: 37_671, format: "float32le 2ch 44100Hz"),
                SoundStream(device: 2, driver: "module-loopback.c", application: "", bufferMicroseconds: 19_928),
            ])
        let recording = "Source Output #0\n\tDriver: protocol-native.c\n\tSource: 3\n\tBuffer Latency: 249 usec\n"
        #expect(
            SoundStream.parse(recording) == [
                SoundStream(device: 3, driver: "protocol-native.c", application: "", bufferMicroseconds: 249)
            ])
        #expect(SoundStream.parse("Sink Input #4\n\tDriver: x\n").isEmpty, "no device, no latency: left out")
    }

    @Test func findsDevicesInTheShortList() {
        let sinks =
            "0\troom\tmodule-null-sink.c\ts16le 2ch 48000Hz\tRUNNING\n2\tear\tmodule-remap-sink.c\ts16le\tIDLE\n"
        #expect(SoundStream.index(of: "ear", inShortList: sinks) == 2)
        #expect(SoundStream.index(of: "room", inShortList: sinks) == 0)
        #expect(SoundStream.index(of: "ea", inShortList: sinks) == nil)
    }

    @Test func breakdownFallsBackToTheSoundServersQueues() {
        let breakdown = MouthToEarBreakdown(
            p50: 250, talker: nil, listener: nil, talkerName: "talker", serverRecordingMs: 2, serverPlayingMs: 38)
        #expect(breakdown.stages.map(\.milliseconds) == [2, 20, nil, nil, 38, 190])
        #expect(breakdown.stages[4].source.hasPrefix("only the sound server's queue for the listener's playing stream"))
        #expect(PathStreams.cell(["b": 1.25, "a (s16le 1ch 48000Hz)": 38]) == "a (s16le 1ch 48000Hz): 38.0, b: 1.3")
        #expect(PathStreams.cell([:]) == "none")
    }
}

/// The latency the sound server settled on for each stream, read from its `info`-level log.
struct MouthToEarConfiguredLatencyTests {
    static let log = """
        I: [pulseaudio] client.c: Created 0 "Native client (UNIX socket client)"
        I: [pulseaudio] source-output.c: Created output 1 "parec" on mouth_mic with sample spec s16le 2ch 44100Hz and channel map front-left,front-right
        I: [pulseaudio] source-output.c:     application.name = "parec"
        I: [pulseaudio] protocol-native.c: Final latency 60.00 ms = 30.00 ms + 30.00 ms
        I: [pulseaudio] sink-input.c: Created input 2 "ALSA Playback" on ear with sample spec s16le 1ch 48000Hz and channel map mono
        I: [pulseaudio] protocol-native.c: Requested tlength=50.00 ms, minreq=12.49 ms
        I: [pulseaudio] protocol-native.c: Final latency 50.01 ms = 12.52 ms + 2*12.49 ms + 12.51 ms
        I: [pulseaudio] sink-input.c: Created input 3 "Remapped Stream" on room with sample spec s16le 1ch 48000Hz and channel map mono
        I: [pulseaudio] sink-input.c: Created input 4 "paplay" on mouth with sample spec s16le 1ch 48000Hz and channel map mono
        I: [pulseaudio] protocol-native.c: Final latency 2000.00 ms = 1990.00 ms + 2*5.00 ms + 0.00 ms
        """

    @Test func eachCreatedStreamWithTheLatencyLoggedAfterIt() {
        let streams = ConfiguredLatency.parse(Self.log)
        #expect(
            streams == [
                ConfiguredLatency(
                    recording: true, name: "parec", device: "mouth_mic", latency: "60.00 ms = 30.00 ms + 30.00 ms"),
                ConfiguredLatency(
                    recording: false, name: "ALSA Playback", device: "ear",
                    latency: "50.01 ms = 12.52 ms + 2*12.49 ms + 12.51 ms"),
                ConfiguredLatency(
                    recording: false, name: "paplay", device: "mouth",
                    latency: "2000.00 ms = 1990.00 ms + 2*5.00 ms + 0.00 ms"),
            ], "a module's stream (no Final latency line) is not given the next client's figure")
        #expect(
            ConfiguredLatency.cell(streams, recording: false, device: "ear")
                == "ALSA Playback: 50.01 ms = 12.52 ms + 2*12.49 ms + 12.51 ms")
        #expect(ConfiguredLatency.cell(streams, recording: true, device: "ear") == "none")
        let twice = streams + [streams[0]]
        #expect(
            ConfiguredLatency.cell(twice, recording: true, device: "mouth_mic")
                == "parec: 60.00 ms = 30.00 ms + 30.00 ms (opened 2 times)")
    }
}
