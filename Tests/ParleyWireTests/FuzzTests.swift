import ParleyWire
import Testing

/// Seeded random and mutated inputs for every parser, and simulated lossy networks for both jitter buffers.
/// The seeds are fixed, so a failure replays exactly.
struct FuzzTests {
    static let samples: [[UInt8]] = [
        bytes("80 60 12 34 00 00 03 e8 de ad be ef 01 02 03"),
        bytes("91 60 00 01 00 00 00 02 00 00 00 03 00 00 00 09 10 00 00 01 05 02 bb cc dd"),
        bytes("b0 60 00 01 00 00 00 02 00 00 00 03 be de 00 01 10 aa 00 00 01 02 03"),
        bytes("81 c8 00 0c 11 22 33 44 01 02 03 04 05 06 07 08 00 00 03 e8 00 00 00 0a 00 00 04 00")
            + bytes("aa bb cc dd 40 00 00 05 00 01 00 10 00 00 00 20 01 02 03 04 00 00 80 00"),
        bytes("80 c9 00 01 00 00 00 07 81 ca 00 03 00 00 00 07 01 03 62 6f 62 00 00 00"),
        bytes("81 cd 00 03 11 22 33 44 55 66 77 88 00 64 00 05 81 ce 00 02 11 22 33 44 55 66 77 88"),
        bytes("82 cb 00 03 00 00 00 01 00 00 00 02 01 78 00 00"),
        BindRequest(ssrc: 1, memberID: 2, token: BindToken(bytes: Array(0...15))!).serialized(),
        BindAcknowledgement(ssrc: 1, memberID: 2, status: .bound).serialized(),
        bytes("90 e0 92 34 05 40 50 2d 00 9d 01 2a 80 02 68 01"),
        bytes("03 03 aa"),
    ]

    static func input(_ round: Int, _ random: inout SplitMix64) -> [UInt8] {
        if round % 3 == 0 {
            return (0..<Int.random(in: 0..<64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        var bytes = samples[Int.random(in: 0..<samples.count, using: &random)]
        for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        }
        if Bool.random(using: &random) { bytes.removeLast(Int.random(in: 0...bytes.count, using: &random)) }
        return bytes
    }

    @Test func everyParserSurvivesRandomAndMutatedBytes() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        var parsed = 0
        for round in 0..<4000 {
            let bytes = Self.input(round, &random)
            if let view = try? RTPHeaderView(parsing: bytes) {
                #expect(view.payloadRange.lowerBound <= view.payloadRange.upperBound)
                #expect(view.payloadRange.upperBound <= bytes.count)
            }
            if let packet = try? RTPPacket(parsing: bytes) {
                parsed += 1
                #expect(try RTPPacket(parsing: packet.serialized()) == packet)
                _ = try? packet.header.headerExtension?.elements()
            }
            if let packets = try? RTCPPacket.parseCompound(bytes) {
                parsed += 1
                #expect(throws: Never.self) { try RTCPPacket.parseCompound(RTCPPacket.serializeCompound(packets)) }
            }
            _ = try? BindRequest(parsing: bytes)
            _ = try? BindAcknowledgement(parsing: bytes)
            if let (descriptor, offset) = try? VP8PayloadDescriptor.parse(bytes) {
                #expect(offset < bytes.count)
                var out: [UInt8] = []
                descriptor.serialize(into: &out)
                #expect(try VP8PayloadDescriptor.parse(out + [0]).0 == descriptor)
            }
            _ = try? VP8PayloadHeader(parsing: bytes)
            _ = try? OpusPacketInfo(parsing: bytes)
            _ = try? RTPHeaderExtension(profile: 0xBEDE, data: bytes).elements()
            _ = try? RTPHeaderExtension(profile: 0x1000, data: bytes).elements()
        }
        #expect(parsed > 500)  // the mutations must reach past the first checks
    }

    @Test func jitterBuffersSurviveHostileStreams() {
        var random = SplitMix64(seed: 0x5EED_0002)
        var video = VideoJitterBuffer(settings: .init(maxBufferedPackets: 200))
        var audio = AudioJitterBuffer()
        for step in 0..<5000 {
            let header = RTPHeader(
                marker: Bool.random(using: &random), payloadType: 96,
                sequenceNumber: step % 7 == 0 ? UInt16.random(in: 0...65535, using: &random) : UInt16(step % 65536),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &random), ssrc: 1)
            let payload = (0..<Int.random(in: 0..<6, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            let packet = RTPPacket(header: header, payload: payload)
            _ = video.insert(packet, at: ms(step))
            _ = audio.insert(packet, at: ms(step))
            _ = video.poll(at: ms(step))
            _ = audio.nextSlot(at: ms(step))
            #expect(video.bufferedPacketCount <= 200)
            #expect(audio.bufferedPacketCount <= 100)
        }
    }

    /// A sender, a lossy reordering network with duplicates and a relay that answers NACKs, around a
    /// VideoJitterBuffer. Every frame it emits must be intact, in order, and decodable: a keyframe or the
    /// successor of the frame emitted just before it.
    struct Network: CustomTestStringConvertible, Sendable {
        let name: String
        let seed: UInt64
        let loss: Double
        let minimumEmitted: Int
        let keyframeRequests: ClosedRange<Int>
        var testDescription: String { name }
    }

    static let networks: [Network] = [
        .init(name: "5 % loss", seed: 0x5EED_0003, loss: 0.05, minimumEmitted: 295, keyframeRequests: 0...2),
        .init(name: "35 % loss", seed: 0x5EED_0005, loss: 0.35, minimumEmitted: 100, keyframeRequests: 3...60),
    ]

    @Test(arguments: networks)
    func videoBufferOnlyEmitsDecodableFramesOverALossyNetwork(_ network: Network) throws {
        var random = SplitMix64(seed: network.seed)
        var script = VP8StreamScript(firstSequenceNumber: 65000)  // wraps during the run
        var buffer = VideoJitterBuffer()
        var inFlight: [Int: [RTPPacket]] = [:]
        var sent: [UInt16: RTPPacket] = [:]
        var originals: [UInt32: VP8Frame] = [:]
        var keyframeRequested = true
        var emitted: [VP8Frame] = []
        var keyframesRequested = 0

        func send(_ packet: RTPPacket, at time: Int, random: inout SplitMix64) {
            guard Double.random(in: 0..<1, using: &random) >= network.loss else { return }
            inFlight[time + Int.random(in: 1...25, using: &random), default: []].append(packet)
            if Double.random(in: 0..<1, using: &random) < 0.03 {  // 3 % duplicated
                inFlight[time + Int.random(in: 1...60, using: &random), default: []].append(packet)
            }
        }

        for time in 0..<10_000 {
            if time % 33 == 0 {
                let keyframe = keyframeRequested || script.frameIndex % 90 == 0
                keyframeRequested = false
                let packets = script.frame(packets: Int.random(in: 1...4, using: &random), keyframe: keyframe)
                originals[packets[0].header.timestamp] = try VP8Depacketizer.assemble(packets)
                for packet in packets {
                    sent[packet.header.sequenceNumber] = packet
                    send(packet, at: time, random: &random)
                }
            }
            for packet in inFlight.removeValue(forKey: time) ?? [] { _ = buffer.insert(packet, at: ms(time)) }
            guard time % 5 == 0 else { continue }
            let output = buffer.poll(at: ms(time))
            for sequence in output.nacks {
                if let packet = sent[sequence] { send(packet, at: time + 20, random: &random) }
            }
            if output.needsKeyframe {
                keyframeRequested = true
                keyframesRequested += 1
            }
            emitted += output.frames
        }

        #expect(emitted.first?.isKeyframe == true)
        for (previous, frame) in zip(emitted, emitted.dropFirst()) {
            #expect(frame.timestamp > previous.timestamp)
            #expect(frame.isKeyframe || frame.timestamp == previous.timestamp + 3000, "frame \(frame.timestamp / 3000)")
        }
        for frame in emitted { #expect(frame == originals[frame.timestamp]) }
        #expect(emitted.count >= network.minimumEmitted && emitted.count <= originals.count)  // of 304 frames sent
        #expect(network.keyframeRequests.contains(keyframesRequested))
    }

    /// Audio over a jittery lossy network: packets play in timestamp order, each at most once, and a packet offered
    /// for FEC is the one the next slot plays.
    @Test func audioBufferPlaysInOrderOverAJitteryNetwork() {
        var random = SplitMix64(seed: 0x5EED_0004)
        var buffer = AudioJitterBuffer()
        var inFlight: [Int: [RTPPacket]] = [:]
        for index in 0..<500 where Double.random(in: 0..<1, using: &random) >= 0.05 {
            inFlight[20 * index + Int.random(in: 0...50, using: &random), default: []].append(opus(index))
        }
        var played: [Int] = []
        var offered: Int?
        var counts: [String: Int] = [:]
        for time in 0..<10_200 {
            for packet in inFlight.removeValue(forKey: time) ?? [] { _ = buffer.insert(packet, at: ms(time)) }
            guard time % 20 == 0 else { continue }
            let slot = buffer.nextSlot(at: ms(time))
            switch slot {
            case .packet(let packet):
                let index = Int(packet.sequenceNumber) - 1000
                if let offered { #expect(index == offered) }
                played.append(index)
                offered = nil
                counts["packet", default: 0] += 1
            case .missingNextAvailable(let next):
                offered = Int(next.sequenceNumber) - 1000
                counts["fec", default: 0] += 1
            case .missing:
                offered = nil
                counts["missing", default: 0] += 1
            case .silence:
                offered = nil
                counts["silence", default: 0] += 1
            }
        }
        #expect(played == played.sorted() && Set(played).count == played.count)
        #expect(played.count > 430)  // of ~475 delivered packets
        #expect((counts["fec"] ?? 0) > 0)
    }
}

struct WireErrorTests {
    static let messages: [(WireError, String)] = [
        (.truncated(.rtpHeader, needed: 12, available: 5), "RTP header needs 12 bytes, only 5 available"),
        (.truncated(.opusPacket, needed: 1, available: 0), "Opus packet needs 1 byte, only 0 available"),
        (.unsupportedVersion(.rtcpHeader, version: 0), "RTCP header has version 0, expected 2"),
        (.invalidPadding(.rtcpHeader, count: 0, available: 4), "RTCP header: padding bit set but padding count is 0"),
        (
            .rtcpLengthExceedsData(lengthField: 7, remaining: 20),
            "RTCP length 7 words (32 bytes with header) exceeds 20 remaining bytes"
        ),
        (.unexpectedRTCPType(found: 206, expected: 204), "RTCP packet type 206, expected 204"),
        (
            .extensionElementOverflow(id: 3, length: 9, available: 2),
            "RTP header extension element id 3 has length 9, only 2 bytes left"
        ),
        (.emptyCompound, "RTCP datagram is empty"),
        (.notBindPacket(name: 0x5445_5354, subtype: 1), "RTCP APP name TEST subtype 1 is not a Parley bind packet"),
        (.bindLength(expected: 20, found: 16), "Parley bind packet data is 16 bytes, expected 20"),
        (.unknownBindStatus(7), "Parley bind acknowledgement has unknown status 7"),
        (.maxPayloadTooSmall(6, minimum: 7), "largest payload 6 bytes is below the minimum of 7"),
        (.emptyFrame, "frame has no bytes"),
        (.frameMissingStart(sequenceNumber: 9), "packet 9 does not start a VP8 frame (needs S=1, PID=0)"),
        (.frameSequenceGap(expected: 65535, found: 0), "frame is missing packet 65535 (next was 0)"),
        (.frameTimestampMismatch(expected: 1, found: 2, sequenceNumber: 3), "packet 3 has timestamp 2, frame has 1"),
        (.frameMissingMarker(lastSequenceNumber: 4), "frame ends at packet 4 without the marker bit"),
        (.invalidOpusFrameCount(0), "Opus packet declares 0 frames"),
    ]

    @Test(arguments: messages)
    func messagesSayWhatWasWrong(_ error: WireError, _ message: String) {
        #expect(error.description == message)
    }
}
