import ParleyWire
import Testing

struct VP8DescriptorTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let descriptor: VP8PayloadDescriptor
        let dataOffset: Int
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        .init(
            name: "start of frame, no extension", wire: bytes("10 aa"),
            descriptor: .init(startOfPartition: true), dataOffset: 1),
        .init(
            name: "continuation, partition 7", wire: bytes("07 aa"),
            descriptor: .init(startOfPartition: false, partitionIndex: 7), dataOffset: 1),
        .init(
            name: "non-reference", wire: bytes("30 aa"),
            descriptor: .init(nonReference: true, startOfPartition: true), dataOffset: 1),
        .init(
            name: "7-bit PictureID", wire: bytes("90 80 12 aa"),
            descriptor: .init(startOfPartition: true, pictureID: .sevenBit(0x12)), dataOffset: 3),
        .init(
            name: "15-bit PictureID", wire: bytes("90 80 81 23 aa"),
            descriptor: .init(startOfPartition: true, pictureID: .fifteenBit(0x0123)), dataOffset: 4),
        .init(
            name: "15-bit PictureID, TL0PICIDX and TID 1", wire: bytes("90 e0 92 34 05 40 aa"),
            descriptor: .init(
                startOfPartition: true, pictureID: .fifteenBit(0x1234), tl0PictureIndex: 5,
                temporalLayer: 1), dataOffset: 6),
        .init(
            name: "TID 2 with layer sync", wire: bytes("80 20 a0 aa"),
            descriptor: .init(startOfPartition: false, temporalLayer: 2, layerSync: true), dataOffset: 3),
        .init(
            name: "KEYIDX only", wire: bytes("a0 10 1f aa"),
            descriptor: .init(nonReference: true, startOfPartition: false, keyIndex: 31), dataOffset: 3),
        .init(
            name: "TID and KEYIDX", wire: bytes("90 30 c3 aa"),
            descriptor: .init(startOfPartition: true, temporalLayer: 3, keyIndex: 3), dataOffset: 3),
    ]

    @Test(arguments: valid)
    func parsesAndSerializesExactBytes(_ row: Valid) throws {
        let (descriptor, offset) = try VP8PayloadDescriptor.parse(row.wire)
        #expect(descriptor == row.descriptor)
        #expect(offset == row.dataOffset)
        #expect(descriptor.length == row.dataOffset)
        var out: [UInt8] = []
        descriptor.serialize(into: &out)
        #expect(out == Array(row.wire[..<row.dataOffset]))
    }

    static let hostile: [(String, [UInt8], WireError)] = [
        ("empty payload", [], .truncated(.vp8Descriptor, needed: 1, available: 0)),
        ("descriptor without data", bytes("10"), .truncated(.vp8Descriptor, needed: 2, available: 1)),
        ("X without extension byte", bytes("80"), .truncated(.vp8Descriptor, needed: 2, available: 1)),
        ("I without PictureID", bytes("90 80"), .truncated(.vp8Descriptor, needed: 3, available: 2)),
        ("M without second PictureID byte", bytes("90 80 81"), .truncated(.vp8Descriptor, needed: 4, available: 3)),
        ("L and T cut", bytes("90 e0 92 34 05"), .truncated(.vp8Descriptor, needed: 6, available: 5)),
        ("full descriptor, no data", bytes("90 80 12"), .truncated(.vp8Descriptor, needed: 4, available: 3)),
    ]

    @Test(arguments: hostile)
    func rejectsCutDescriptors(_ name: String, _ wire: [UInt8], _ error: WireError) {
        #expect(wireError { () throws(WireError) in try VP8PayloadDescriptor.parse(wire) } == error, "\(name)")
        #expect(!VP8PayloadDescriptor.startsKeyframe(wire), "\(name)")
    }

    @Test func detectsKeyframesFromTheFirstPacket() {
        #expect(VP8PayloadDescriptor.startsKeyframe(bytes("10 00 00 00")))
        #expect(!VP8PayloadDescriptor.startsKeyframe(bytes("10")), "a descriptor with no VP8 data after it")
        #expect(!VP8PayloadDescriptor.startsKeyframe(bytes("90 80 81 23")), "extended descriptor, no data")
        #expect(VP8PayloadDescriptor.startsKeyframe(bytes("90 80 81 23 50 2d 00")))
        #expect(!VP8PayloadDescriptor.startsKeyframe(bytes("10 01 00 00")))  // P = 1: delta frame
        #expect(!VP8PayloadDescriptor.startsKeyframe(bytes("00 00 00 00")))  // S = 0
        #expect(!VP8PayloadDescriptor.startsKeyframe(bytes("11 00 00 00")))  // PID 1
    }

    @Test func readsThePayloadHeader() throws {
        let key = try VP8PayloadHeader(parsing: bytes("50 2d 00 9d 01 2a 80 02 68 01"))
        #expect(key.isKeyframe && key.showFrame && key.version == 0)
        #expect(key.firstPartitionSize == 362)
        #expect(key.size?.width == 640 && key.size?.height == 360)

        let delta = try VP8PayloadHeader(parsing: bytes("31 10 00"))
        #expect(!delta.isKeyframe && delta.showFrame && delta.size == nil)
        #expect(delta.firstPartitionSize == 129)

        #expect(
            wireError { () throws(WireError) in try VP8PayloadHeader(parsing: bytes("50 2d")) }
                == .truncated(.vp8PayloadHeader, needed: 3, available: 2))
        #expect(
            wireError { () throws(WireError) in try VP8PayloadHeader(parsing: bytes("50 2d 00 9d 01")) }
                == .truncated(.vp8PayloadHeader, needed: 10, available: 5))
    }
}

struct VP8PayloaderTests {
    @Test func splitsEvenlyWithPictureIDsThatWrap() throws {
        var payloader = try VP8Payloader(maxPayloadSize: 10, initialPictureID: 0x7FFE)
        let frame = Array(UInt8(0)..<13)
        let first = try payloader.payloads(for: frame)
        #expect(
            first == [
                bytes("90 80 ff fe 00 01 02 03 04"),
                bytes("80 80 ff fe 05 06 07 08"),
                bytes("80 80 ff fe 09 0a 0b 0c"),
            ])
        #expect(try payloader.payloads(for: [0xAA]) == [bytes("90 80 ff ff aa")])
        #expect(try payloader.payloads(for: [0xBB]) == [bytes("90 80 80 00 bb")])
        #expect(payloader.nextPictureID == 1)
    }

    @Test func withoutPictureIDsTheDescriptorIsOneByte() throws {
        var payloader = try VP8Payloader(maxPayloadSize: 7, includesPictureID: false)
        #expect(
            try payloader.payloads(for: Array(1...8)) == [
                bytes("10 01 02 03 04"), bytes("00 05 06 07 08"),
            ])
        #expect(try payloader.payloads(for: Array(1...6)) == [bytes("10 01 02 03 04 05 06")])
    }

    @Test func temporalLayersCarryTL0PICIDXAndTID() throws {
        var payloader = try VP8Payloader(maxPayloadSize: 100, initialPictureID: 5)
        #expect(try payloader.payloads(for: [0xAA], temporalLayer: 0) == [bytes("90 e0 80 05 01 00 aa")])
        #expect(try payloader.payloads(for: [0xBB], temporalLayer: 1) == [bytes("90 e0 80 06 01 40 bb")])
        #expect(try payloader.payloads(for: [0xCC], temporalLayer: 0) == [bytes("90 e0 80 07 02 00 cc")])
    }

    @Test func keepsEveryPayloadWithinTheDefaultLimit() throws {
        var payloader = try VP8Payloader()
        let frame = (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let payloads = try payloader.payloads(for: frame)
        #expect(payloads.count == 5)  // 5000 / 1196 → 5 packets of 1000 bytes
        #expect(payloads.allSatisfy { $0.count == 1004 })
        #expect(payloads.flatMap { $0.dropFirst(4) } == frame)
        #expect(try payloader.payloads(for: Array(repeating: 1, count: 1196)).count == 1)
        #expect(try payloader.payloads(for: Array(repeating: 1, count: 1197)).count == 2)
    }

    @Test func rejectsBadSettingsAndEmptyFrames() throws {
        #expect(
            wireError { () throws(WireError) in try VP8Payloader(maxPayloadSize: 6) }
                == .maxPayloadTooSmall(6, minimum: 7))
        var payloader = try VP8Payloader()
        #expect(wireError { () throws(WireError) in try payloader.payloads(for: []) } == .emptyFrame)
    }
}

struct VP8DepacketizerTests {
    /// A keyframe-looking frame split into 3 packets starting at sequence 65534, timestamp 9000.
    static func packets(frame: [UInt8] = [0x50] + Array(1...20)) -> [RTPPacket] {
        var payloader = try! VP8Payloader(maxPayloadSize: 12, initialPictureID: 77)
        var packetizer = RTPPacketizer(
            ssrc: 5, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 65534, initialTimestamp: 9000)
        return packetizer.packetize(try! payloader.payloads(for: frame), at: .zero, markLast: true)
    }

    @Test func reassemblesAcrossTheSequenceWrap() throws {
        let packets = Self.packets()
        #expect(packets.map(\.header.sequenceNumber) == [65534, 65535, 0])
        let frame = try VP8Depacketizer.assemble(packets)
        #expect(
            frame
                == VP8Frame(
                    timestamp: 9000, data: [0x50] + Array(1...20), isKeyframe: true, pictureID: 77,
                    firstSequenceNumber: 65534, packetCount: 3))
        let delta = try VP8Depacketizer.assemble(Self.packets(frame: [0x51, 2, 3]))
        #expect(!delta.isKeyframe)
    }

    static func broken() -> [(String, [RTPPacket], WireError)] {
        let packets = Self.packets()
        var wrongTimestamp = packets
        wrongTimestamp[2].header.timestamp = 9001
        var garbage = packets
        garbage[1].payload = [0x80]
        return [
            ("no packets", [], .emptyFrame),
            ("first packet missing", Array(packets[1...]), .frameMissingStart(sequenceNumber: 65535)),
            ("middle packet missing", [packets[0], packets[2]], .frameSequenceGap(expected: 65535, found: 0)),
            ("last packet missing", Array(packets[..<2]), .frameMissingMarker(lastSequenceNumber: 65535)),
            ("out of order", [packets[0], packets[2], packets[1]], .frameSequenceGap(expected: 65535, found: 0)),
            (
                "timestamp changes", wrongTimestamp,
                .frameTimestampMismatch(expected: 9000, found: 9001, sequenceNumber: 0)
            ),
            ("garbage descriptor", garbage, .truncated(.vp8Descriptor, needed: 2, available: 1)),
        ]
    }

    @Test func namesWhatIsWrongWithAnIncompleteFrame() {
        for (name, packets, error) in Self.broken() {
            #expect(wireError { () throws(WireError) in try VP8Depacketizer.assemble(packets) } == error, "\(name)")
        }
    }
}

struct OpusTests {
    static let packets: [(String, [UInt8], OpusPacketInfo)] = [
        (
            "CELT FB 20 ms stereo", bytes("fc ff"),
            .init(configuration: 31, isStereo: true, frameCount: 1, samplesPerFrame: 960)
        ),
        (
            "SILK NB 20 ms", bytes("08 ff"),
            .init(configuration: 1, isStereo: false, frameCount: 1, samplesPerFrame: 960)
        ),
        (
            "hybrid FB 10 ms", bytes("70"),
            .init(configuration: 14, isStereo: false, frameCount: 1, samplesPerFrame: 480)
        ),
        (
            "SILK 60 ms, two frames", bytes("19 00"),
            .init(configuration: 3, isStereo: false, frameCount: 2, samplesPerFrame: 2880)
        ),
        (
            "SILK 10 ms, code 3 with 3 frames", bytes("03 03"),
            .init(configuration: 0, isStereo: false, frameCount: 3, samplesPerFrame: 480)
        ),
        (
            "CELT 2.5 ms, 48 frames", bytes("e3 30"),
            .init(configuration: 28, isStereo: false, frameCount: 48, samplesPerFrame: 120)
        ),
    ]

    @Test(arguments: packets)
    func readsTheTOCByte(_ name: String, _ packet: [UInt8], _ info: OpusPacketInfo) throws {
        #expect(try OpusPacketInfo(parsing: packet) == info, "\(name)")
    }

    @Test func durationIsTheTimestampStep() throws {
        #expect(try OpusPacketInfo(parsing: bytes("fc")).duration == 960)
        #expect(try OpusPacketInfo(parsing: bytes("19 00")).duration == 5760)
        #expect(OpusPayloader.ticks(for: .milliseconds(20)) == 960)
        #expect(OpusPayloader.ticks(for: .microseconds(2500)) == 120)
    }

    static let hostile: [(String, [UInt8], WireError)] = [
        ("empty", [], .truncated(.opusPacket, needed: 1, available: 0)),
        ("code 3 without count byte", bytes("03"), .truncated(.opusPacket, needed: 2, available: 1)),
        ("code 3 with zero frames", bytes("03 00"), .invalidOpusFrameCount(0)),
        ("code 3 over 120 ms", bytes("1b 03"), .invalidOpusFrameCount(3)),
    ]

    @Test(arguments: hostile)
    func rejectsBadPackets(_ name: String, _ packet: [UInt8], _ error: WireError) {
        #expect(wireError { () throws(WireError) in try OpusPacketInfo(parsing: packet) } == error, "\(name)")
    }

    @Test func payloadIsThePacketItself() throws {
        #expect(try OpusPayloader.payload(for: bytes("fc 01 02")) == bytes("fc 01 02"))
        #expect(wireError { () throws(WireError) in try OpusPayloader.payload(for: []) } == .emptyFrame)
    }
}

struct RTPPacketizerTests {
    @Test func numbersPacketsAcrossWrapsAndMarksFrameEnds() {
        var packetizer = RTPPacketizer(
            ssrc: 0x0102_0304, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 65534,
            initialTimestamp: 4_294_967_000)
        let first = packetizer.packetize([[1], [2, 3], [4]], at: .zero, markLast: true)
        #expect(first.map(\.header.sequenceNumber) == [65534, 65535, 0])
        #expect(first.map(\.header.marker) == [false, false, true])
        #expect(first.allSatisfy { $0.header.timestamp == 4_294_967_000 && $0.header.ssrc == 0x0102_0304 })
        #expect(first[0].serialized() == bytes("80 60 ff fe ff ff fe d8 01 02 03 04 01"))
        #expect(first[2].serialized() == bytes("80 e0 00 00 ff ff fe d8 01 02 03 04 04"))

        let second = packetizer.packetize([[5]], at: .milliseconds(40), markLast: true)
        #expect(second[0].header.timestamp == 3304)  // 4294967000 + 3600, wrapped
        #expect(second[0].header.sequenceNumber == 1)
        #expect(packetizer.nextSequenceNumber == 2)
        #expect(packetizer.packetCount == 4 && packetizer.octetCount == 5)

        let report = packetizer.senderReport(ntpTimestamp: 0x0102_0304_0506_0708, mediaTime: .milliseconds(40))
        #expect(
            report
                == SenderReport(
                    ssrc: 0x0102_0304, ntpTimestamp: 0x0102_0304_0506_0708, rtpTimestamp: 3304, packetCount: 4,
                    octetCount: 5))
    }

    @Test func opusTimestampsAdvance960Per20Milliseconds() {
        var packetizer = RTPPacketizer(
            ssrc: 9, payloadType: 111, clockRate: 48_000, initialSequenceNumber: 0, initialTimestamp: 100)
        let packets = (0..<3).flatMap {
            packetizer.packetize([[0xFC]], at: .milliseconds(20 * $0), markLast: $0 == 0)
        }
        #expect(packets.map(\.header.timestamp) == [100, 1060, 2020])
        #expect(packets.map(\.header.marker) == [true, false, false])
        #expect(packets.map(\.header.payloadType) == [111, 111, 111])
    }

    @Test func convertsDurationsToTicks() {
        #expect(RTPClock.ticks(.milliseconds(20), clockRate: 48_000) == 960)
        #expect(RTPClock.ticks(.seconds(1), clockRate: 90_000) == 90_000)
        #expect(RTPClock.ticks(.nanoseconds(33_333_333), clockRate: 90_000) == 2999)
        #expect(RTPClock.ticks(.seconds(86_400 * 365), clockRate: 90_000) == 2_838_240_000_000)
        #expect(RTPClock.duration(ticks: 960, clockRate: 48_000) == .milliseconds(20))
        #expect(RTPClock.duration(ticks: 135_000, clockRate: 90_000) == .milliseconds(1500))
    }
}
