import ParleyWire
import Testing

struct RTCPTests {
    static let block = ReportBlock(
        ssrc: 0xAABB_CCDD, fractionLost: 0x40, cumulativeLost: 5, extendedHighestSequenceNumber: 0x0001_0010,
        jitter: 0x20, lastSenderReport: 0x0102_0304, delaySinceLastSenderReport: 0x8000)
    static let blockBytes = "aa bb cc dd 40 00 00 05 00 01 00 10 00 00 00 20 01 02 03 04 00 00 80 00"

    struct Valid: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let packets: [RTCPPacket]
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        .init(
            name: "SR without reports",
            wire: bytes("80 c8 00 06 11 22 33 44 01 02 03 04 05 06 07 08 00 00 03 e8 00 00 00 0a 00 00 04 00"),
            packets: [
                .senderReport(
                    SenderReport(
                        ssrc: 0x1122_3344, ntpTimestamp: 0x0102_0304_0506_0708, rtpTimestamp: 1000, packetCount: 10,
                        octetCount: 1024))
            ]),
        .init(
            name: "SR with one report block",
            wire: bytes(
                "81 c8 00 0c 11 22 33 44 01 02 03 04 05 06 07 08 00 00 03 e8 00 00 00 0a 00 00 04 00 " + blockBytes),
            packets: [
                .senderReport(
                    SenderReport(
                        ssrc: 0x1122_3344, ntpTimestamp: 0x0102_0304_0506_0708, rtpTimestamp: 1000, packetCount: 10,
                        octetCount: 1024, reports: [block]))
            ]),
        .init(
            name: "RR with one report block", wire: bytes("81 c9 00 07 11 22 33 44 " + blockBytes),
            packets: [.receiverReport(ReceiverReport(ssrc: 0x1122_3344, reports: [block]))]),
        .init(
            name: "RR with negative cumulative loss (duplicates)",
            wire: bytes(
                "81 c9 00 07 00 00 00 01 00 00 00 02 00 ff ff fe 00 00 00 09 00 00 00 00 00 00 00 00 00 00 00 00"),
            packets: [
                .receiverReport(
                    ReceiverReport(
                        ssrc: 1,
                        reports: [
                            ReportBlock(
                                ssrc: 2, fractionLost: 0, cumulativeLost: -2, extendedHighestSequenceNumber: 9,
                                jitter: 0)
                        ]))
            ]),
        .init(
            name: "empty RR", wire: bytes("80 c9 00 01 00 00 00 07"),
            packets: [.receiverReport(ReceiverReport(ssrc: 7, reports: []))]),
        .init(
            name: "SDES CNAME", wire: bytes("81 ca 00 03 11 22 33 44 01 03 62 6f 62 00 00 00"),
            packets: [.sourceDescription(SourceDescription(ssrc: 0x1122_3344, cname: "bob"))]),
        .init(
            name: "SDES two chunks, second with CNAME and NAME",
            wire: bytes("82 ca 00 06 00 00 00 01 01 02 61 62 00 00 00 00 00 00 00 02 01 01 63 02 01 64 00 00"),
            packets: [
                .sourceDescription(
                    SourceDescription(chunks: [
                        .init(ssrc: 1, items: [.init(type: 1, text: "ab")]),
                        .init(ssrc: 2, items: [.init(type: 1, text: "c"), .init(type: 2, text: "d")]),
                    ]))
            ]),
        .init(
            name: "BYE", wire: bytes("81 cb 00 01 11 22 33 44"),
            packets: [.goodbye(Goodbye(ssrcs: [0x1122_3344]))]),
        .init(
            name: "BYE with reason", wire: bytes("81 cb 00 02 11 22 33 44 03 62 79 65"),
            packets: [.goodbye(Goodbye(ssrcs: [0x1122_3344], reason: "bye"))]),
        .init(
            name: "BYE with padded reason", wire: bytes("82 cb 00 03 00 00 00 01 00 00 00 02 01 78 00 00"),
            packets: [.goodbye(Goodbye(ssrcs: [1, 2], reason: "x"))]),
        .init(
            name: "APP PRLY subtype 1", wire: bytes("81 cc 00 03 11 22 33 44 50 52 4c 59 de ad be ef"),
            packets: [
                .application(
                    ApplicationPacket(subtype: 1, ssrc: 0x1122_3344, name: "PRLY", data: [0xDE, 0xAD, 0xBE, 0xEF]))
            ]),
        .init(
            name: "generic NACK", wire: bytes("81 cd 00 03 11 22 33 44 55 66 77 88 00 64 00 05"),
            packets: [
                .nack(
                    GenericNACK(
                        senderSSRC: 0x1122_3344, mediaSSRC: 0x5566_7788,
                        items: [.init(packetID: 100, lostBitmask: 5)]))
            ]),
        .init(
            name: "PLI", wire: bytes("81 ce 00 02 11 22 33 44 55 66 77 88"),
            packets: [.pictureLossIndication(PictureLossIndication(senderSSRC: 0x1122_3344, mediaSSRC: 0x5566_7788))]),
        .init(
            name: "REMB (PSFB FMT 15) kept raw",
            wire: bytes("8f ce 00 05 00 00 00 01 00 00 00 00 52 45 4d 42 01 0a 00 00 00 00 00 02"),
            packets: [
                .other(
                    RTCPRawPacket(
                        packetType: 206, count: 15,
                        body: bytes("00 00 00 01 00 00 00 00 52 45 4d 42 01 0a 00 00 00 00 00 02")))
            ]),
        .init(
            name: "FIR (PSFB FMT 4) kept raw",
            wire: bytes("84 ce 00 04 00 00 00 01 00 00 00 00 00 00 00 09 03 00 00 00"),
            packets: [
                .other(
                    RTCPRawPacket(
                        packetType: 206, count: 4, body: bytes("00 00 00 01 00 00 00 00 00 00 00 09 03 00 00 00")))
            ]),
        .init(
            name: "XR kept raw", wire: bytes("80 cf 00 01 11 22 33 44"),
            packets: [.other(RTCPRawPacket(packetType: 207, count: 0, body: bytes("11 22 33 44")))]),
        .init(
            name: "compound RR + SDES + PLI",
            wire: bytes("80 c9 00 01 00 00 00 07")
                + bytes("81 ca 00 03 00 00 00 07 01 03 62 6f 62 00 00 00")
                + bytes("81 ce 00 02 00 00 00 07 00 00 00 09"),
            packets: [
                .receiverReport(ReceiverReport(ssrc: 7, reports: [])),
                .sourceDescription(SourceDescription(ssrc: 7, cname: "bob")),
                .pictureLossIndication(PictureLossIndication(senderSSRC: 7, mediaSSRC: 9)),
            ]),
    ]

    @Test(arguments: valid)
    func parsesAndSerializesExactBytes(_ row: Valid) throws {
        #expect(try RTCPPacket.parseCompound(row.wire) == row.packets)
        #expect(RTCPPacket.serializeCompound(row.packets) == row.wire)
        #expect(MediaPacketKind.classify(row.wire) == .rtcp)
    }

    @Test func acceptsPaddingOnThePacket() throws {
        // RR with 4 bytes of padding (P set, length counts them).
        let wire = bytes("a0 c9 00 02 00 00 00 07 00 00 00 04")
        #expect(try RTCPPacket.parseCompound(wire) == [.receiverReport(ReceiverReport(ssrc: 7, reports: []))])
    }

    struct Hostile: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let error: WireError
        var testDescription: String { name }
    }

    static let hostile: [Hostile] = [
        .init(name: "zero length", wire: [], error: .emptyCompound),
        .init(name: "3-byte header", wire: bytes("80 c9 00"), error: .truncated(.rtcpHeader, needed: 4, available: 3)),
        .init(
            name: "version 0", wire: bytes("00 c9 00 01 00 00 00 07"),
            error: .unsupportedVersion(.rtcpHeader, version: 0)),
        .init(
            name: "length field lies",
            wire: bytes("81 c9 00 07 11 22 33 44 aa bb cc dd 40 00 00 05 00 01 00 10"),
            error: .rtcpLengthExceedsData(lengthField: 7, remaining: 20)),
        .init(
            name: "length 65535 on a tiny packet", wire: bytes("80 c9 ff ff 00 00 00 07"),
            error: .rtcpLengthExceedsData(lengthField: 65535, remaining: 8)),
        .init(
            name: "report count beyond length", wire: bytes("82 c9 00 07 11 22 33 44 " + blockBytes),
            error: .truncated(.reportBlock, needed: 48, available: 24)),
        .init(
            name: "SR without sender info", wire: bytes("80 c8 00 01 11 22 33 44"),
            error: .truncated(.senderReport, needed: 24, available: 4)),
        .init(
            name: "RR without SSRC", wire: bytes("80 c9 00 00"),
            error: .truncated(.receiverReport, needed: 4, available: 0)),
        .init(
            name: "padding larger than the body", wire: bytes("a0 c9 00 01 11 22 33 09"),
            error: .invalidPadding(.rtcpHeader, count: 9, available: 4)),
        .init(
            name: "padding count zero", wire: bytes("a0 c9 00 01 11 22 33 00"),
            error: .invalidPadding(.rtcpHeader, count: 0, available: 4)),
        .init(
            name: "padding bit on a bare header", wire: bytes("a0 c9 00 00"),
            error: .invalidPadding(.rtcpHeader, count: 0, available: 0)),
        .init(
            name: "SDES item longer than the packet", wire: bytes("81 ca 00 02 11 22 33 44 01 09 62 6f"),
            error: .truncated(.sdesItem, needed: 11, available: 4)),
        .init(
            name: "SDES item list without end", wire: bytes("81 ca 00 02 11 22 33 44 01 02 62 6f"),
            error: .truncated(.sdesItem, needed: 1, available: 0)),
        .init(
            name: "SDES item type without length", wire: bytes("81 ca 00 02 11 22 33 44 01 01 61 02"),
            error: .truncated(.sdesItem, needed: 2, available: 1)),
        .init(
            name: "SDES chunk of only an SSRC", wire: bytes("81 ca 00 01 11 22 33 44"),
            error: .truncated(.sdesItem, needed: 1, available: 0)),
        .init(
            name: "SDES chunk count beyond length", wire: bytes("82 ca 00 03 11 22 33 44 01 03 62 6f 62 00 00 00"),
            error: .truncated(.sourceDescription, needed: 4, available: 0)),
        .init(
            name: "BYE source count beyond length", wire: bytes("82 cb 00 01 11 22 33 44"),
            error: .truncated(.goodbye, needed: 8, available: 4)),
        .init(
            name: "BYE reason longer than the packet", wire: bytes("81 cb 00 02 11 22 33 44 09 62 79 65"),
            error: .truncated(.byeReason, needed: 10, available: 4)),
        .init(
            name: "APP without name", wire: bytes("81 cc 00 01 11 22 33 44"),
            error: .truncated(.application, needed: 8, available: 4)),
        .init(
            name: "NACK without media SSRC", wire: bytes("81 cd 00 01 11 22 33 44"),
            error: .truncated(.feedback, needed: 8, available: 4)),
        .init(
            name: "PLI without media SSRC", wire: bytes("81 ce 00 01 11 22 33 44"),
            error: .truncated(.feedback, needed: 8, available: 4)),
        .init(
            name: "NACK FCI cut by padding", wire: bytes("a1 cd 00 03 11 22 33 44 55 66 77 88 00 64 00 02"),
            error: .truncated(.genericNACK, needed: 4, available: 2)),
        .init(
            name: "good PLI then a lying packet",
            wire: bytes("81 ce 00 02 11 22 33 44 55 66 77 88  80 c9 00 05 00 00 00 07"),
            error: .rtcpLengthExceedsData(lengthField: 5, remaining: 8)),
        .init(
            name: "good PLI then 2 stray bytes", wire: bytes("81 ce 00 02 11 22 33 44 55 66 77 88  80 c9"),
            error: .truncated(.rtcpHeader, needed: 4, available: 2)),
    ]

    @Test(arguments: hostile)
    func rejectsHostileInputWithTheExactError(_ row: Hostile) {
        #expect(wireError { () throws(WireError) in try RTCPPacket.parseCompound(row.wire) } == row.error)
    }

    @Test func lengthErrorSaysWordsAndRemainingBytes() {
        #expect(
            WireError.rtcpLengthExceedsData(lengthField: 7, remaining: 20).description
                == "RTCP length 7 words (32 bytes with header) exceeds 20 remaining bytes")
    }

    @Test func moreThan31ReportBlocksContinueInAnotherRR() throws {
        let blocks = (0..<33).map {
            ReportBlock(
                ssrc: UInt32($0), fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0, jitter: 0)
        }
        let wire = RTCPPacket.receiverReport(ReceiverReport(ssrc: 1, reports: blocks)).serialized()
        #expect(wire.count == (8 + 31 * 24) + (8 + 2 * 24))
        #expect(Array(wire[0..<4]) == bytes("9f c9 00 bb"))  // count 31, length (8 + 744) / 4 - 1 = 187
        #expect(
            try RTCPPacket.parseCompound(wire) == [
                .receiverReport(ReceiverReport(ssrc: 1, reports: Array(blocks[0..<31]))),
                .receiverReport(ReceiverReport(ssrc: 1, reports: Array(blocks[31...]))),
            ])

        let sr = SenderReport(ssrc: 1, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: 0, octetCount: 0, reports: blocks)
        let srPackets = try RTCPPacket.parseCompound(RTCPPacket.senderReport(sr).serialized())
        #expect(srPackets.count == 2)
        #expect(srPackets.last == .receiverReport(ReceiverReport(ssrc: 1, reports: Array(blocks[31...]))))
    }

    @Test func clampsCumulativeLossTo24Bits() throws {
        var block = Self.block
        block.cumulativeLost = 10_000_000
        let wire = RTCPPacket.receiverReport(ReceiverReport(ssrc: 1, reports: [block])).serialized()
        #expect(Array(wire[13..<16]) == bytes("7f ff ff"))
        block.cumulativeLost = -10_000_000
        let negative = RTCPPacket.receiverReport(ReceiverReport(ssrc: 1, reports: [block])).serialized()
        #expect(Array(negative[13..<16]) == bytes("80 00 00"))
        guard case .receiverReport(let parsed) = try RTCPPacket.parseCompound(negative).first else {
            Issue.record("not an RR")
            return
        }
        #expect(parsed.reports.first?.cumulativeLost == -8_388_608)
    }

    @Test func padsAppDataAndCutsLongText() throws {
        let app = RTCPPacket.application(ApplicationPacket(subtype: 3, ssrc: 1, name: "TEST", data: [1, 2, 3]))
        #expect(app.serialized() == bytes("83 cc 00 03 00 00 00 01 54 45 53 54 01 02 03 00"))

        let long = String(repeating: "é", count: 200)  // 400 UTF-8 bytes
        let wire = RTCPPacket.sourceDescription(SourceDescription(ssrc: 1, cname: long)).serialized()
        #expect(wire[9] == 255)
        #expect(wire.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(wire).count == 1)
    }

    @Test func appNamesAreFourASCIICharacters() {
        #expect(RTCPAppName(ascii: "PRLY")?.rawValue == 0x5052_4C59)
        #expect(RTCPAppName(ascii: "PRL") == nil)
        #expect(RTCPAppName(ascii: "PRLYX") == nil)
        #expect(RTCPAppName(ascii: "PRLÉ") == nil)
        #expect(RTCPAppName(rawValue: 0x5052_0A59).description == "PR?Y")
    }

    @Test func namesSenderAndMediaSourceForRouting() throws {
        let packets = try RTCPPacket.parseCompound(Self.valid.flatMap(\.wire))
        #expect(
            packets.map(\.senderSSRC) == [
                0x1122_3344, 0x1122_3344, 0x1122_3344, 1, 7, 0x1122_3344, 1, 0x1122_3344, 0x1122_3344, 1, 0x1122_3344,
                0x1122_3344, 0x1122_3344, 1, 1, 0x1122_3344, 7, 7, 7,
            ])
        #expect(
            packets.compactMap(\.feedbackMediaSSRC) == [0x5566_7788, 0x5566_7788, 0, 0, 9])
        #expect(RTCPPacket.other(RTCPRawPacket(packetType: 207, count: 0, body: [1, 2])).senderSSRC == nil)
    }

    @Test func rawFeedbackNamesItsMediaSource() {
        #expect(
            RTCPRawPacket(packetType: 206, count: 15, body: bytes("00 00 00 01 00 00 00 09")).feedbackMediaSSRC == 9)
        #expect(
            RTCPRawPacket(packetType: 207, count: 0, body: bytes("00 00 00 01 00 00 00 09")).feedbackMediaSSRC == nil)
        #expect(RTCPRawPacket(packetType: 205, count: 15, body: bytes("00 00 00 01")).feedbackMediaSSRC == nil)
    }
}

struct GenericNACKTests {
    static let cases: [(String, [UInt16], [GenericNACK.Item])] = [
        ("single", [100], [.init(packetID: 100, lostBitmask: 0)]),
        ("mask bits 0 and 2", [100, 101, 103], [.init(packetID: 100, lostBitmask: 0x0005)]),
        (
            "17 apart starts a new entry", [100, 116, 117],
            [.init(packetID: 100, lostBitmask: 0x8000), .init(packetID: 117, lostBitmask: 0)]
        ),
        ("across the wrap", [65535, 0, 1], [.init(packetID: 65535, lostBitmask: 0x0003)]),
        ("duplicates ignored", [7, 7, 8], [.init(packetID: 7, lostBitmask: 0x0001)]),
        (
            "far apart", [1, 200, 40000],
            [
                .init(packetID: 1, lostBitmask: 0), .init(packetID: 200, lostBitmask: 0),
                .init(packetID: 40000, lostBitmask: 0),
            ]
        ),
        ("none", [], []),
    ]

    @Test(arguments: cases)
    func packsLostSequenceNumbers(_ name: String, _ lost: [UInt16], _ items: [GenericNACK.Item]) {
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: lost)
        #expect(nack.items == items, "\(name)")
        var unique: [UInt16] = []
        for number in lost where !unique.contains(number) { unique.append(number) }
        #expect(nack.lostSequenceNumbers == unique, "\(name)")
    }
}
