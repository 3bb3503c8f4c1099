import Testing

@testable import ParleyMedia

@Suite struct OpusTests {
    /// Seconds of a synthetic talker as one interleaved array.
    static func speech(participant: UInt32, seconds: Double, channels: Int = 1) -> [Int16] {
        let voice = SyntheticVoice(participant: participant, channels: channels)
        return voice.nextFrame(samplesPerChannel: Int(48_000 * seconds)).samples
    }

    /// Encodes and decodes `input` in packets of the configured size; returns packets and output.
    static func roundTrip(_ input: [Int16], _ config: OpusAudioConfig) throws -> (packets: [[UInt8]], output: [Int16]) {
        let encoder = try OpusAudioEncoder(config)
        let decoder = try OpusAudioDecoder(sampleRate: config.sampleRate, channels: config.channels)
        let step = config.samplesPerChannel * config.channels
        var packets: [[UInt8]] = []
        var output: [Int16] = []
        for start in stride(from: 0, through: input.count - step, by: step) {
            let frame = AudioFrame(channels: config.channels, samples: Array(input[start..<(start + step)]))
            let packet = try encoder.encode(frame)
            packets.append(packet)
            let decoded = try decoder.decode(packet)
            #expect(decoded.frameCount == config.samplesPerChannel)
            output += decoded.samples
        }
        return (packets, output)
    }

    struct RoundTripRow: CustomTestStringConvertible, Sendable {
        var name: String
        var config: OpusAudioConfig
        var testDescription: String { name }
    }

    // Measured here on 3 s of the synthetic voice: correlation 0.95-0.99 within 4 samples of the 312-sample delay.
    // 0.9 fails for silence, a wrong channel layout or a misaligned delay (which drop it below 0.5).
    @Test(arguments: [
        RoundTripRow(name: "mono 10 ms VOIP", config: OpusAudioConfig(frameDuration: .ms10)),
        RoundTripRow(name: "mono 20 ms VOIP (call default)", config: OpusAudioConfig()),
        RoundTripRow(name: "mono 40 ms VOIP", config: OpusAudioConfig(frameDuration: .ms40)),
        RoundTripRow(name: "mono 60 ms VOIP", config: OpusAudioConfig(frameDuration: .ms60)),
        RoundTripRow(
            name: "mono 20 ms audio, complexity 5", config: OpusAudioConfig(application: .audio, complexity: 5)),
        RoundTripRow(
            name: "stereo 20 ms audio 64 kbit/s",
            config: OpusAudioConfig(channels: 2, application: .audio, bitrateKbps: 64)),
    ])
    func speechSurvivesRoundTrip(_ row: RoundTripRow) throws {
        let channels = row.config.channels
        var input: [Int16]
        if channels == 2 {
            // Two different talkers, one per side, so swapped or mixed channels would show.
            let left = Self.speech(participant: 1, seconds: 3)
            let right = Self.speech(participant: 2, seconds: 3)
            input = []
            for (l, r) in zip(left, right) { input += [l, r] }
        } else {
            input = Self.speech(participant: 1, seconds: 3)
        }
        let (packets, output) = try Self.roundTrip(input, row.config)
        let lookahead = try OpusAudioEncoder(row.config).lookaheadSamples
        #expect(lookahead == 312)
        let kbps = Double(packets.reduce(0) { $0 + $1.count }) * 8 / 3 / 1000
        #expect(kbps <= Double(row.config.bitrateKbps) * 1.2)
        for channel in 0..<channels {
            let inputChannel = stride(from: channel, to: input.count, by: channels).map { input[$0] }
            let outputChannel = stride(from: channel, to: output.count, by: channels).map { output[$0] }
            let length = outputChannel.count - lookahead - 16
            let aligned = bestAlignment(
                input: inputChannel, output: outputChannel, delays: (lookahead - 8)...(lookahead + 8), length: length)
            print(
                "Opus \(row.name) channel \(channel): correlation \(aligned.value) at delay \(aligned.delay), "
                    + "\(kbps) kbit/s"
            )
            #expect(aligned.value >= 0.9)
        }
    }

    @Test func fecRecoversLostPacketsBetterThanConcealment() throws {
        let input = Self.speech(participant: 3, seconds: 4)
        let config = OpusAudioConfig()  // Call default: FEC on, 10 % expected loss.
        let (packets, _) = try Self.roundTrip(input, config)
        // Lose every 7th packet where the talker is speaking (FEC carries speech; silence needs none).
        let lost = Set(
            stride(from: 10, to: packets.count - 1, by: 7).filter { index in
                AudioFrame(samples: Array(input[(index * 960)..<((index + 1) * 960)])).rmsDBFS > -40
            })
        #expect(lost.count >= 12)

        let reference = try OpusAudioDecoder()
        let withFEC = try OpusAudioDecoder()
        let withPLC = try OpusAudioDecoder()
        var fecScores: [Double] = []
        var plcScores: [Double] = []
        for (index, packet) in packets.enumerated() {
            let clean = try reference.decode(packet).samples
            if lost.contains(index) {
                let recovered = withFEC.decodeMissing(nextPacket: packets[index + 1])
                let concealed = withPLC.decodeMissing(nextPacket: nil)
                #expect(recovered.frameCount == 960 && concealed.frameCount == 960)
                #expect(recovered.timestampMicros == Int64(index) * 20_000)
                fecScores.append(correlation(clean[...], recovered.samples[...]))
                plcScores.append(correlation(clean[...], concealed.samples[...]))
            } else {
                _ = try withFEC.decode(packet)
                _ = try withPLC.decode(packet)
            }
        }
        let fec = fecScores.reduce(0, +) / Double(fecScores.count)
        let plc = plcScores.reduce(0, +) / Double(plcScores.count)
        print("Opus loss of \(lost.count) packets: FEC correlation \(fec), PLC correlation \(plc)")
        #expect(withFEC.packetsRecoveredByFEC == lost.count && withFEC.lastRecovery == .forwardErrorCorrection)
        #expect(withPLC.packetsConcealed == lost.count && withPLC.lastRecovery == .concealment)
        #expect(fec >= 0.7)
        #expect(fec > plc + 0.2)
    }

    @Test func missingPacketBeforeAnyAudioIsConcealedAsSilence() throws {
        let decoder = try OpusAudioDecoder()
        let frame = decoder.decodeMissing(nextPacket: nil)
        #expect(frame.frameCount == 960)
        #expect(frame.samples.allSatisfy { $0 == 0 })
    }

    @Test func dtxSendsTinyPacketsInSilence() throws {
        let encoder = try OpusAudioEncoder(OpusAudioConfig(dtx: true))
        let silence = AudioFrame(samples: [Int16](repeating: 0, count: 960))
        let packets = try (0..<50).map { _ in try encoder.encode(silence) }
        let sizes = packets.map(\.count)
        // Measured: ten normal packets, then 1-byte packets with a comfort-noise refresh every 400 ms.
        #expect(sizes.prefix(5).allSatisfy { $0 > 2 })
        #expect(sizes.suffix(40).filter { $0 <= 2 }.count >= 36)
        // A receiver handed the 1-byte packets still gets 20 ms of (comfort-noise) audio from each.
        let decoder = try OpusAudioDecoder()
        #expect(try packets.allSatisfy { try decoder.decode($0).frameCount == 960 })
        let talking = Self.speech(participant: 5, seconds: 1)
        #expect(try encoder.encode(AudioFrame(samples: Array(talking[24_000..<24_960]))).count > 2)
    }

    @Test func frameOfWrongLengthIsRejected() throws {
        let encoder = try OpusAudioEncoder()
        #expect(
            throws: CodecError.frameMismatch(
                "Opus encoder expects 960 samples per channel (20 ms) at 48000 Hz, 1 channel(s); "
                    + "got 480 at 48000 Hz, 1 channel(s)")
        ) {
            try encoder.encode(AudioFrame(samples: [Int16](repeating: 0, count: 480)))
        }
    }

    struct BadSetting: CustomTestStringConvertible, Sendable {
        var name: String
        var config: OpusAudioConfig
        var error: CodecError
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadSetting(
            name: "44.1 kHz", config: OpusAudioConfig(sampleRate: 44_100),
            error: .invalidSetting(
                name: "Opus sample rate", value: "44100", allowed: "8000, 12000, 16000, 24000 or 48000")),
        BadSetting(
            name: "three channels", config: OpusAudioConfig(channels: 3),
            error: .invalidSetting(name: "Opus channels", value: "3", allowed: "1...2")),
        BadSetting(
            name: "bit/s passed as kbit/s", config: OpusAudioConfig(bitrateKbps: 32_000),
            error: .invalidSetting(name: "Opus bitrate (kbit/s)", value: "32000", allowed: "6...510")),
        BadSetting(
            name: "complexity 11", config: OpusAudioConfig(complexity: 11),
            error: .invalidSetting(name: "Opus complexity", value: "11", allowed: "0...10")),
        BadSetting(
            name: "loss 101 %", config: OpusAudioConfig(expectedLossPercent: 101),
            error: .invalidSetting(name: "Opus expected loss (%)", value: "101", allowed: "0...100")),
    ])
    func invalidSettingsAreNamed(_ row: BadSetting) {
        #expect(throws: row.error) { try OpusAudioEncoder(row.config) }
    }

    @Test func settingsChangeMidStream() throws {
        let encoder = try OpusAudioEncoder()
        try encoder.setBitrate(kbps: 16)
        try encoder.setExpectedLoss(percent: 25)
        #expect(encoder.config.bitrateKbps == 16 && encoder.config.expectedLossPercent == 25)
        #expect(throws: CodecError.invalidSetting(name: "Opus bitrate (kbit/s)", value: "2", allowed: "6...510")) {
            try encoder.setBitrate(kbps: 2)
        }
        let speech = Self.speech(participant: 6, seconds: 2)
        var bytes = 0
        for start in stride(from: 0, to: speech.count, by: 960) {
            bytes += try encoder.encode(AudioFrame(samples: Array(speech[start..<(start + 960)]))).count
        }
        #expect(Double(bytes) * 8 / 2 / 1000 <= 16 * 1.2)
    }

    enum Outcome: Sendable {
        case error(CodecError)
        case survives
    }

    struct BadPacket: CustomTestStringConvertible, Sendable {
        var name: String
        var packet: [UInt8]
        var outcome: Outcome
        var testDescription: String { name }
    }

    static let goodPacket: [UInt8] = {
        let encoder = try! OpusAudioEncoder()
        let talk = OpusTests.speech(participant: 7, seconds: 1)
        var packet: [UInt8] = []
        for start in stride(from: 0, to: 24_960, by: 960) {
            packet = try! encoder.encode(AudioFrame(samples: Array(talk[start..<(start + 960)])))
        }
        return packet
    }()

    static let corrupted = CodecError.opus(call: "opus_decode", code: -4, message: "corrupted stream")

    @Test(arguments: [
        BadPacket(name: "empty", packet: [], outcome: .error(.emptyInput(codec: "Opus"))),
        BadPacket(name: "code 3 with zero frames", packet: [0x03, 0x00], outcome: .error(corrupted)),
        BadPacket(
            name: "code 3 with 49 frames of 20 ms", packet: [0x1B, 49] + [UInt8](repeating: 0, count: 49),
            outcome: .error(corrupted)),
        BadPacket(name: "code 1 with odd payload", packet: [0x01, 0xAA], outcome: .error(corrupted)),
        BadPacket(
            name: "code 2 first frame longer than packet", packet: [0x02, 0xFB, 0x01, 0x02],
            outcome: .error(corrupted)),
        BadPacket(
            name: "packet cut in half", packet: Array(goodPacket.prefix(goodPacket.count / 2)),
            outcome: .survives),
        BadPacket(
            name: "packet with flipped bits", packet: goodPacket.enumerated().map { $0 % 5 == 1 ? $1 ^ 0xA5 : $1 },
            outcome: .survives),
        BadPacket(
            name: "1500 bytes of garbage", packet: (0..<1500).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) },
            outcome: .survives),
    ])
    func brokenPacketsGiveErrorNotCrash(_ row: BadPacket) throws {
        let decoder = try OpusAudioDecoder()
        let result = Result { try decoder.decode(row.packet) }
        if case .error(let expected) = row.outcome {
            #expect(throws: expected) { try result.get() }
        }
        // The decoder keeps working afterwards.
        #expect(try decoder.decode(Self.goodPacket).frameCount == 960)
    }

    @Test func libopusFailureNamesTheCall() {
        #expect(Self.corrupted.description == "opus_decode failed (opus error -4): corrupted stream")
    }
}
