import Testing

@testable import ParleyMedia

@Suite struct VP8Tests {
    struct RoundTrip: CustomTestStringConvertible, Sendable {
        var width: Int
        var height: Int
        var kbps: Int
        /// Lowest acceptable mean Y-PSNR in dB.
        var minimumPSNR: Double
        var testDescription: String { "\(width)x\(height) at \(kbps) kbit/s" }
    }

    // Encoded at the speed calls use (cpu-used -16, `VP8EncoderConfig.callSpeed`). Measured here (libvpx 1.12, one
    // thread, so the encode is deterministic; frames 10...59 of the textured, noisy camera): Y-PSNR 33.9 dB at
    // 320x180/300, 34.0 at 640x360/600, 33.9 at 1280x720/1500 (overall about 1.3 dB higher). The same content
    // pinned at the worst quantizer (a starved rate) gives 29.3 / 30.8 / 31.7 dB, and a picture shifted by one pixel
    // (a stride slip) about 25 dB. Thresholds sit half a dB under the measurement, well above a starved encoder.
    @Test(arguments: [
        RoundTrip(width: 320, height: 180, kbps: 300, minimumPSNR: 33.4),
        RoundTrip(width: 640, height: 360, kbps: 600, minimumPSNR: 33.5),
        RoundTrip(width: 1280, height: 720, kbps: 1500, minimumPSNR: 33.3),
    ])
    func movingPatternSurvivesRoundTrip(_ row: RoundTrip) throws {
        let camera = SyntheticCamera(name: "Alice", participant: 1, width: row.width, height: row.height)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(
                width: row.width, height: row.height, targetBitrateKbps: row.kbps, cpuUsed: VP8EncoderConfig.callSpeed))
        let decoder = try VP8Decoder()
        var lumaPSNR: [Double] = []
        var overallPSNR: [Double] = []
        for index in 0..<60 {
            let input = camera.nextFrame()
            let encoded = try encoder.encode(input)
            #expect(encoded.count == 1)
            for frame in encoded {
                let output = try #require(try decoder.decode(frame.bytes, timestampMicros: frame.timestampMicros))
                #expect(output.width == row.width && output.height == row.height)
                #expect(output.timestampMicros == input.timestampMicros)
                let psnr = try #require(output.psnr(against: input))
                if index >= 10 {
                    lumaPSNR.append(psnr.y)
                    overallPSNR.append(psnr.overall)
                }
            }
        }
        let meanY = lumaPSNR.reduce(0, +) / Double(lumaPSNR.count)
        let meanOverall = overallPSNR.reduce(0, +) / Double(overallPSNR.count)
        print("VP8 \(row.testDescription): Y-PSNR \(meanY) dB, overall \(meanOverall) dB")
        #expect(meanY >= row.minimumPSNR)
        #expect(meanOverall >= row.minimumPSNR + 1)
    }

    struct RateCase: CustomTestStringConvertible, Sendable {
        var width: Int
        var height: Int
        var kbps: Int
        var framesPerSecond = 30
        var testDescription: String { "\(width)x\(height) \(framesPerSecond) fps at \(kbps) kbit/s" }
    }

    /// 10 s of media time (300 frames at 30/s), encoded as fast as possible; several targets so a unit slip shows.
    @Test(arguments: [
        RateCase(width: 320, height: 180, kbps: 150),
        RateCase(width: 320, height: 180, kbps: 500),
        RateCase(width: 640, height: 360, kbps: 800),
        RateCase(width: 160, height: 120, kbps: 65, framesPerSecond: 15),
    ])
    func achievedBitrateMatchesTarget(_ row: RateCase) throws {
        let camera = SyntheticCamera(
            name: "Rate", participant: 9, width: row.width, height: row.height, framesPerSecond: row.framesPerSecond)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(
                width: row.width, height: row.height, targetBitrateKbps: row.kbps,
                framesPerSecond: row.framesPerSecond))
        let frames = try encodeCamera(camera, encoder, count: 10 * row.framesPerSecond)
        let bits = frames.reduce(0) { $0 + $1.bytes.count * 8 }
        let achievedKbps = Double(bits) / 10 / 1000
        print("VP8 \(row.testDescription): achieved \(achievedKbps) kbit/s over 10 s")
        #expect(abs(achievedKbps - Double(row.kbps)) <= Double(row.kbps) * 0.2)
    }

    @Test func bitrateChangeMidStreamTakesEffect() throws {
        let camera = SyntheticCamera(name: "Rate", participant: 4, width: 320, height: 180)
        let encoder = try VP8Encoder(VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 120))
        let low = try encodeCamera(camera, encoder, count: 150)
        try encoder.setBitrate(kbps: 480)
        #expect(encoder.config.targetBitrateKbps == 480)
        _ = try encodeCamera(camera, encoder, count: 30)  // Let the buffer model settle.
        let high = try encodeCamera(camera, encoder, count: 120)
        let lowKbps = Double(low.reduce(0) { $0 + $1.bytes.count }) * 8 / 5 / 1000
        let highKbps = Double(high.reduce(0) { $0 + $1.bytes.count }) * 8 / 4 / 1000
        #expect(abs(lowKbps - 120) <= 120 * 0.2)
        #expect(abs(highKbps - 480) <= 480 * 0.2)
    }

    @Test func keyframeOnDemand() throws {
        let camera = SyntheticCamera(name: "Key", participant: 5, width: 320, height: 180)
        let encoder = try VP8Encoder(VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300))
        var keyframes: [Bool] = []
        for index in 0..<12 {
            for frame in try encoder.encode(camera.nextFrame(), forceKeyframe: index == 7) {
                keyframes.append(frame.isKeyframe)
                #expect(VP8FrameHeader(frame.bytes)?.isKeyframe == frame.isKeyframe)
            }
        }
        #expect(keyframes == (0..<12).map { $0 == 0 || $0 == 7 })
    }

    @Test func keyframesRecurWithinMaximumInterval() throws {
        let camera = SyntheticCamera(name: "Key", participant: 5, width: 160, height: 120)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(width: 160, height: 120, targetBitrateKbps: 100, maxKeyframeInterval: 10))
        let frames = try encodeCamera(camera, encoder, count: 35)
        let keyframeIndices = frames.indices.filter { frames[$0].isKeyframe }
        #expect(keyframeIndices.first == 0)
        #expect(keyframeIndices.count >= 4)
        #expect(zip(keyframeIndices, keyframeIndices.dropFirst()).allSatisfy { $1 - $0 <= 10 })
    }

    @Test func resolutionChangesMidStreamBothWays() throws {
        let encoder = try VP8Encoder(VP8EncoderConfig(width: 640, height: 360, targetBitrateKbps: 600))
        let decoder = try VP8Decoder()
        for (width, height) in [(640, 360), (320, 180), (480, 270), (1280, 720), (640, 360)] {
            try encoder.reconfigure(width: width, height: height)
            let camera = SyntheticCamera(name: "Size", participant: 6, width: width, height: height)
            let frames = try encodeCamera(camera, encoder, count: 3)
            #expect(frames.first?.isKeyframe == true, "first frame at \(width)x\(height) must be a keyframe")
            #expect(VP8FrameHeader(frames[0].bytes)?.size?.width == width)
            for frame in frames {
                let picture = try #require(try decoder.decode(frame.bytes))
                #expect(picture.width == width && picture.height == height)
                #expect(SyntheticCamera.readStamp(from: picture)?.participant == 6)
            }
        }
    }

    @Test func frameOfWrongSizeIsRejectedWithAdvice() throws {
        let encoder = try VP8Encoder(VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300))
        #expect(
            throws: CodecError.frameMismatch(
                "VP8 encoder is set up for 320x180 but the frame is 640x360; call reconfigure(width:height:) first")
        ) {
            try encoder.encode(VideoFrame(width: 640, height: 360, fillY: 0))
        }
    }

    struct BadSetting: CustomTestStringConvertible, Sendable {
        var name: String
        var change: @Sendable (inout VP8EncoderConfig) -> Void
        var error: CodecError
        var testDescription: String { name }
    }

    @Test(arguments: [
        BadSetting(
            name: "zero width", change: { $0.width = 0 },
            error: .invalidSetting(name: "width", value: "0", allowed: "2...16383")),
        BadSetting(
            name: "bit/s passed as kbit/s", change: { $0.targetBitrateKbps = 600_000 },
            error: .invalidSetting(name: "target bitrate (kbit/s)", value: "600000", allowed: "10...100000")),
        BadSetting(
            name: "cpu-used too fast", change: { $0.cpuUsed = -17 },
            error: .invalidSetting(name: "cpu-used", value: "-17", allowed: "-16...16")),
        BadSetting(
            name: "no threads", change: { $0.threads = 0 },
            error: .invalidSetting(name: "threads", value: "0", allowed: "1...64")),
        BadSetting(
            name: "three temporal layers", change: { $0.temporalLayers = 3 },
            error: .invalidSetting(name: "temporal layers", value: "3", allowed: "1...2")),
        BadSetting(
            name: "max quantizer below min",
            change: {
                $0.minQuantizer = 40
                $0.maxQuantizer = 30
            },
            error: .invalidSetting(name: "max quantizer", value: "30", allowed: "40...63")),
        BadSetting(
            name: "bitstream version past VP8's four", change: { $0.bitstreamProfile = 4 },
            error: .invalidSetting(name: "VP8 bitstream profile", value: "4", allowed: "0...3")),
    ])
    func invalidSettingsAreNamed(_ row: BadSetting) {
        var config = VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300)
        row.change(&config)
        #expect(throws: row.error) { try VP8Encoder(config) }
    }

    /// Each of VP8's four bitstream versions is written into every frame's header (RFC 6386 section 9.1, the VER
    /// bits) and decodes with the same decoder; version 0, the sharpest, is the default for every layer.
    @Test(arguments: 0...3)
    func bitstreamVersionIsWrittenAndDecoded(_ version: Int) throws {
        #expect(VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300).bitstreamProfile == 0)
        #expect(
            SimulcastPlan.forCall(width: 640, height: 360, kbps: 600, framesPerSecond: 30, simulcast: true)
                .layers.map(\.bitstreamProfile) == [0, 0, 0])
        #expect(
            SimulcastPlan.forCall(
                width: 640, height: 360, kbps: 600, framesPerSecond: 30, simulcast: true, bitstreamProfile: version
            ).layers.map(\.bitstreamProfile) == [version, version, version])
        let camera = SyntheticCamera(name: "Version", participant: 12, width: 320, height: 180)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300, bitstreamProfile: version))
        let decoder = try VP8Decoder()
        for (index, frame) in try encodeCamera(camera, encoder, count: 10).enumerated() {
            // The frame tag's first byte: |Size0 (3)|H|VER (3)|P|, P = 0 on a keyframe.
            #expect(Int(frame.bytes[0] >> 1 & 0x07) == version && (frame.bytes[0] & 0x01 == 0) == (index == 0))
            let picture = try #require(try decoder.decode(frame.bytes))
            #expect(SyntheticCamera.readStamp(from: picture)?.frame == UInt32(index))
        }
    }

    @Test func libvpxFailureNamesTheCall() {
        let error = CodecError.vpx(call: "vpx_codec_encode", code: 8, message: "Invalid parameter")
        #expect(error.description == "vpx_codec_encode failed (vpx error 8): Invalid parameter")
    }

    @Test func twoTemporalLayersLetTheReceiverDropLayerOne() throws {
        let camera = SyntheticCamera(name: "Layers", participant: 8, width: 320, height: 180)
        var config = VP8EncoderConfig(width: 320, height: 180, targetBitrateKbps: 300)
        config.temporalLayers = 2
        let encoder = try VP8Encoder(config)
        let frames = try encodeCamera(camera, encoder, count: 40)
        #expect(frames.map(\.temporalLayer) == (0..<40).map { $0 % 2 })
        // A receiver that only gets layer 0 (every other frame) still decodes each one cleanly.
        let decoder = try VP8Decoder()
        var stamps: [UInt32] = []
        for frame in frames where frame.temporalLayer == 0 {
            let picture = try #require(try decoder.decode(frame.bytes))
            stamps.append(try #require(SyntheticCamera.readStamp(from: picture)).frame)
        }
        #expect(stamps == Array(stride(from: 0, to: 40, by: 2)))
    }

    @Test func simulcastLayersFromOneCamera() throws {
        let plan = SimulcastPlan(width: 640, height: 360, kbps: 600, framesPerSecond: 30)
        #expect(
            plan.layers.map { "\($0.width)x\($0.height)@\($0.targetBitrateKbps)" }
                == ["640x360@600", "320x180@200", "160x90@60"])
        #expect(SimulcastPlan(width: 160, height: 120, kbps: 65, framesPerSecond: 15).layers.count == 1)
        #expect(
            SimulcastPlan(width: 640, height: 480, kbps: 750, framesPerSecond: 30).layers.map(\.width) == [
                640, 320, 160,
            ])
        let encoder = try SimulcastEncoder(plan)
        #expect(encoder.active == [true, false, false], "only the full layer until the relay asks for more")
        encoder.setActive([true, true, true])
        let decoders = try (0..<3).map { _ in try VP8Decoder() }
        let camera = SyntheticCamera(name: "Sim", participant: 11, width: 640, height: 360)
        var bytes = [0, 0, 0]
        for index in 0..<30 {
            let output = try encoder.encode(camera.nextFrame())
            for layer in 0..<3 {
                for frame in output[layer] {
                    bytes[layer] += frame.bytes.count
                    let decoded = try #require(try decoders[layer].decode(frame.bytes))
                    #expect(decoded.width == 640 >> layer && decoded.height == 360 >> layer)
                    if layer < 2 { #expect(SyntheticCamera.readStamp(from: decoded)?.frame == UInt32(index)) }
                }
            }
        }
        #expect(bytes[1] * 2 < bytes[0] && bytes[2] < bytes[1], "smaller layers cost less: \(bytes)")
    }

    @Test func pausedLayerResumesWithAKeyframe() throws {
        let encoder = try SimulcastEncoder(SimulcastPlan(width: 320, height: 180, kbps: 300, framesPerSecond: 15))
        #expect(encoder.layerCount == 2)
        let camera = SyntheticCamera(name: "Sim", participant: 12, width: 320, height: 180)
        var lowKeyframes: [Bool] = []
        for index in 0..<8 {
            encoder.setActive([true, !(3...5).contains(index)])
            let output = try encoder.encode(camera.nextFrame())
            #expect(output[0].count == 1)
            lowKeyframes += output[1].map(\.isKeyframe)
        }
        // Frames 0-2 and 6-7 encoded; the first after the pause is a keyframe, so a receiver can join there.
        #expect(lowKeyframes == [true, false, false, true, false])
        encoder.setActive([false, true])
        let output = try encoder.encode(camera.nextFrame())
        #expect(output[0].isEmpty && output[1].count == 1, "a paused full layer is not encoded; the small one is")
        encoder.setActive([false, false])
        #expect(try encoder.encode(camera.nextFrame()).allSatisfy(\.isEmpty), "nobody watching: nothing encoded")
    }
}
