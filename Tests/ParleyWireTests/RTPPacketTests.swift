import ParleyWire
import Testing

struct RTPPacketTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let packet: RTPPacket
        let headerLength: Int
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        .init(
            name: "minimal VP8 packet",
            wire: bytes("80 60 12 34 00 00 03 e8 de ad be ef  01 02 03"),
            packet: RTPPacket(
                header: RTPHeader(payloadType: 96, sequenceNumber: 0x1234, timestamp: 1000, ssrc: 0xDEAD_BEEF),
                payload: [1, 2, 3]),
            headerLength: 12),
        .init(
            name: "Opus with marker, sequence 65535",
            wire: bytes("80 ef ff ff ff ff ff ff 00 00 00 01  fc"),
            packet: RTPPacket(
                header: RTPHeader(
                    marker: true, payloadType: 111, sequenceNumber: 65535, timestamp: 0xFFFF_FFFF, ssrc: 1),
                payload: [0xFC]),
            headerLength: 12),
        .init(
            name: "two CSRCs",
            wire: bytes("82 60 00 01 00 00 00 02 00 00 00 03  11 11 11 11 22 22 22 22  aa"),
            packet: RTPPacket(
                header: RTPHeader(
                    payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [0x1111_1111, 0x2222_2222]),
                payload: [0xAA]),
            headerLength: 20),
        .init(
            name: "one-byte header extension",
            wire: bytes("90 60 00 01 00 00 00 02 00 00 00 03  be de 00 01 10 aa 00 00  bb"),
            packet: RTPPacket(
                header: RTPHeader(
                    payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                    headerExtension: RTPHeaderExtension(profile: 0xBEDE, data: [0x10, 0xAA, 0, 0])),
                payload: [0xBB]),
            headerLength: 20),
        .init(
            name: "two-byte header extension after a CSRC",
            wire: bytes("91 60 00 01 00 00 00 02 00 00 00 03  00 00 00 09  10 00 00 01 05 02 bb cc  dd"),
            packet: RTPPacket(
                header: RTPHeader(
                    payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [9],
                    headerExtension: RTPHeaderExtension(profile: 0x1000, data: [0x05, 0x02, 0xBB, 0xCC])),
                payload: [0xDD]),
            headerLength: 24),
        .init(
            name: "padding of 3",
            wire: bytes("a0 60 00 01 00 00 00 02 00 00 00 03  01 02  00 00 03"),
            packet: RTPPacket(
                header: RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3), payload: [1, 2],
                paddingLength: 3),
            headerLength: 12),
        .init(
            name: "padding only, empty payload",
            wire: bytes("a0 60 00 01 00 00 00 02 00 00 00 03  00 02"),
            packet: RTPPacket(
                header: RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3), payload: [],
                paddingLength: 2),
            headerLength: 12),
        .init(
            name: "header only",
            wire: bytes("80 60 00 01 00 00 00 02 00 00 00 03"),
            packet: RTPPacket(
                header: RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3), payload: []),
            headerLength: 12),
    ]

    @Test(arguments: valid)
    func parsesAndSerializesExactBytes(_ row: Valid) throws {
        #expect(try RTPPacket(parsing: row.wire) == row.packet)
        #expect(row.packet.serialized() == row.wire)
        #expect(row.packet.serializedLength == row.wire.count)

        let view = try RTPHeaderView(parsing: row.wire)
        #expect(view.headerLength == row.headerLength)
        #expect(view.sequenceNumber == row.packet.header.sequenceNumber)
        #expect(view.timestamp == row.packet.header.timestamp)
        #expect(view.ssrc == row.packet.header.ssrc)
        #expect(view.marker == row.packet.header.marker)
        #expect(view.payloadType == row.packet.header.payloadType)
        #expect(view.csrcCount == row.packet.header.csrcs.count)
        #expect(view.paddingLength == Int(row.packet.paddingLength))
        #expect(Array(row.wire[view.payloadRange]) == row.packet.payload)
        #expect(MediaPacketKind.classify(row.wire) == .rtp)
    }

    @Test func parsesFromASliceWithRangesCountedFromTheSlice() throws {
        let datagram = bytes("ff ff ff  80 60 00 07 00 00 00 02 00 00 00 03  41 42")
        let slice = datagram[3...]
        let view = try RTPHeaderView(parsing: slice)
        #expect(view.sequenceNumber == 7)
        #expect(view.payloadRange == 12..<14)
        #expect(try RTPPacket(parsing: slice).payload == [0x41, 0x42])
    }

    @Test func parsesFromARawBufferWithoutCopying() throws {
        let wire = bytes("80 e0 00 2a 00 00 00 02 00 00 00 03  09 08")
        let view = try wire.withUnsafeBytes { raw in
            Result { () throws(WireError) in try RTPHeaderView(parsing: raw) }
        }.get()
        #expect(view.marker && view.payloadType == 96 && view.sequenceNumber == 42 && view.payloadLength == 2)
    }

    struct Hostile: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let error: WireError
        var testDescription: String { name }
    }

    static let hostile: [Hostile] = [
        .init(name: "zero length", wire: [], error: .truncated(.rtpHeader, needed: 12, available: 0)),
        .init(
            name: "11-byte header", wire: bytes("80 60 00 01 00 00 00 02 00 00 00"),
            error: .truncated(.rtpHeader, needed: 12, available: 11)),
        .init(
            name: "version 1", wire: bytes("40 60 00 01 00 00 00 02 00 00 00 03"),
            error: .unsupportedVersion(.rtpHeader, version: 1)),
        .init(
            name: "version 0 (STUN-like)", wire: bytes("00 01 00 00 21 12 a4 42 00 00 00 00"),
            error: .unsupportedVersion(.rtpHeader, version: 0)),
        .init(
            name: "CSRC count 15 beyond length", wire: bytes("8f 60 00 01 00 00 00 02 00 00 00 03 11 11 11 11"),
            error: .truncated(.csrcList, needed: 72, available: 16)),
        .init(
            name: "extension bit without extension header", wire: bytes("90 60 00 01 00 00 00 02 00 00 00 03 be de"),
            error: .truncated(.headerExtension, needed: 16, available: 14)),
        .init(
            name: "extension length overflow", wire: bytes("90 60 00 01 00 00 00 02 00 00 00 03 be de ff ff 00"),
            error: .truncated(.headerExtension, needed: 262_156, available: 17)),
        .init(
            name: "extension one word short",
            wire: bytes("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 02 10 aa 00 00"),
            error: .truncated(.headerExtension, needed: 24, available: 20)),
        .init(
            name: "padding larger than the packet", wire: bytes("a0 60 00 01 00 00 00 02 00 00 00 03 01 05"),
            error: .invalidPadding(.rtpHeader, count: 5, available: 2)),
        .init(
            name: "padding count zero", wire: bytes("a0 60 00 01 00 00 00 02 00 00 00 03 01 00"),
            error: .invalidPadding(.rtpHeader, count: 0, available: 2)),
        .init(
            name: "padding bit on a bare header", wire: bytes("a0 60 00 01 00 00 00 02 00 00 00 03"),
            error: .invalidPadding(.rtpHeader, count: 0, available: 0)),
        .init(
            name: "padding reaching into the extension",
            wire: bytes("b0 60 00 01 00 00 00 02 00 00 00 03 be de 00 01 10 aa 00 00 01 02 03 04 09"),
            error: .invalidPadding(.rtpHeader, count: 9, available: 5)),
    ]

    @Test(arguments: hostile)
    func rejectsHostileInputWithTheExactError(_ row: Hostile) {
        #expect(wireError { () throws(WireError) in try RTPHeaderView(parsing: row.wire) } == row.error)
        #expect(wireError { () throws(WireError) in try RTPPacket(parsing: row.wire) } == row.error)
    }

    @Test func errorMessagesNameWhatWasWrong() {
        #expect(
            WireError.truncated(.csrcList, needed: 72, available: 16).description
                == "RTP CSRC list needs 72 bytes, only 16 available")
        #expect(
            WireError.invalidPadding(.rtpHeader, count: 5, available: 2).description
                == "RTP header: padding count 5 exceeds 2 bytes after the header")
        #expect(
            WireError.unsupportedVersion(.rtpHeader, version: 1).description == "RTP header has version 1, expected 2")
    }

    @Test func serializationDropsCSRCsBeyond15AndPadsExtensionData() {
        let packet = RTPPacket(
            header: RTPHeader(
                payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: Array(1...16),
                headerExtension: RTPHeaderExtension(profile: 0xBEDE, data: [0x10, 0xAA])),
            payload: [0xEE])
        let wire = packet.serialized()
        #expect(wire.count == packet.serializedLength)
        #expect(wire[0] == 0x9F)  // X set, CC 15
        #expect(Array(wire[72..<80]) == bytes("be de 00 01 10 aa 00 00"))
        #expect(wire.last == 0xEE)
    }

    @Test func classifiesDatagramsOnTheMediaPort() {
        #expect(MediaPacketKind.classify(bytes("80 60")) == .rtp)
        #expect(MediaPacketKind.classify(bytes("80 e0")) == .rtp)  // marker + PT 96
        #expect(MediaPacketKind.classify(bytes("81 c9 00 07")) == .rtcp)
        #expect(MediaPacketKind.classify(bytes("81 cc")) == .rtcp)
        #expect(MediaPacketKind.classify(bytes("8f df")) == .rtcp)
        #expect(MediaPacketKind.classify(bytes("00 01 00 00")) == .unknown)  // STUN
        #expect(MediaPacketKind.classify(bytes("16 fe")) == .unknown)  // DTLS
        #expect(MediaPacketKind.classify(bytes("80")) == .unknown)
        #expect(MediaPacketKind.classify([]) == .unknown)
    }
}

struct RTPHeaderExtensionTests {
    struct Elements: CustomTestStringConvertible, Sendable {
        let name: String
        let ext: RTPHeaderExtension
        let elements: [RTPHeaderExtensionElement]
        var testDescription: String { name }
    }

    static let valid: [Elements] = [
        .init(
            name: "one-byte, one element and padding", ext: .init(profile: 0xBEDE, data: bytes("10 aa 00 00")),
            elements: [.init(id: 1, data: [0xAA])]),
        .init(
            name: "one-byte, padding between elements",
            ext: .init(profile: 0xBEDE, data: bytes("10 aa 00 21 bb cc 00 00")),
            elements: [.init(id: 1, data: [0xAA]), .init(id: 2, data: [0xBB, 0xCC])]),
        .init(
            name: "one-byte, 16-byte element",
            ext: .init(profile: 0xBEDE, data: [0xEF] + Array(repeating: 7, count: 16) + [0, 0, 0]),
            elements: [.init(id: 14, data: Array(repeating: 7, count: 16))]),
        .init(
            name: "one-byte, id 15 stops parsing", ext: .init(profile: 0xBEDE, data: bytes("10 aa f0 ff")),
            elements: [.init(id: 1, data: [0xAA])]),
        .init(
            name: "two-byte, empty element and padding", ext: .init(profile: 0x1000, data: bytes("07 00 00 00")),
            elements: [.init(id: 7, data: [])]),
        .init(
            name: "two-byte with app bits, id 200", ext: .init(profile: 0x100F, data: bytes("c8 03 01 02 03 00 00 00")),
            elements: [.init(id: 200, data: [1, 2, 3])]),
        .init(
            name: "other profile has no elements", ext: .init(profile: 0x0001, data: bytes("10 aa 00 00")), elements: []
        ),
    ]

    @Test(arguments: valid)
    func readsElements(_ row: Elements) throws {
        #expect(try row.ext.elements() == row.elements)
    }

    static let hostile: [(String, RTPHeaderExtension, WireError)] = [
        (
            "one-byte element longer than data", .init(profile: 0xBEDE, data: bytes("13 aa 00 00")),
            .extensionElementOverflow(id: 1, length: 4, available: 3)
        ),
        (
            "one-byte element at the very end", .init(profile: 0xBEDE, data: bytes("00 00 00 20")),
            .extensionElementOverflow(id: 2, length: 1, available: 0)
        ),
        (
            "two-byte element longer than data", .init(profile: 0x1000, data: bytes("05 09 aa 00")),
            .extensionElementOverflow(id: 5, length: 9, available: 2)
        ),
        (
            "two-byte element header cut", .init(profile: 0x1000, data: bytes("00 00 00 05")),
            .truncated(.headerExtensionElement, needed: 2, available: 1)
        ),
    ]

    @Test(arguments: hostile)
    func rejectsOverrunningElements(_ name: String, _ ext: RTPHeaderExtension, _ error: WireError) {
        #expect(wireError { () throws(WireError) in try ext.elements() } == error, "\(name)")
    }

    @Test func buildsTheSmallestForm() throws {
        #expect(
            try RTPHeaderExtension(elements: [.init(id: 1, data: [0xAA])])
                == .init(profile: 0xBEDE, data: bytes("10 aa 00 00")))
        #expect(
            try RTPHeaderExtension(elements: [.init(id: 3, data: [1, 2]), .init(id: 4, data: [9])])
                == .init(profile: 0xBEDE, data: bytes("31 01 02 40 09 00 00 00")))
        #expect(
            try RTPHeaderExtension(elements: [.init(id: 20, data: [0xFF])])
                == .init(profile: 0x1000, data: bytes("14 01 ff 00")))
        #expect(
            try RTPHeaderExtension(elements: [.init(id: 1, data: [])])
                == .init(profile: 0x1000, data: bytes("01 00 00 00")))
        #expect(
            wireError { () throws(WireError) in try RTPHeaderExtension(elements: [.init(id: 0, data: [1])]) }
                == .extensionElementOverflow(id: 0, length: 1, available: 255))
        #expect(
            wireError { () throws(WireError) in
                try RTPHeaderExtension(elements: [.init(id: 9, data: Array(repeating: 0, count: 256))])
            } == .extensionElementOverflow(id: 9, length: 256, available: 255))
    }
}
