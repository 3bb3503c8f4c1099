import ParleyBytes
import Testing

@testable import ParleyWebRTC

/// RFC 5769's test vectors (the same bytes every STUN stack checks itself against), then the parser's refusals.
@Suite struct STUNTests {
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
    static let transaction = Hex.decode("b7e7a701bc34d686fa87dfae")!

    /// RFC 5769 §2.1: a request with SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME "evtj:h6vY" (padded with spaces),
    /// MESSAGE-INTEGRITY and FINGERPRINT.
    static let sampleRequest = Hex.decode(
        "000100582112a442b7e7a701bc34d686fa87dfae80220010" + "5354554e207465737420636c69656e74"
            + "002400046e0001ff80290008932ff9b151263b36000600096576746a3a68367659202020"
            + "000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf")!
    /// RFC 5769 §2.2: a success response mapping 192.0.2.1:32853, SOFTWARE "test vector".
    static let sampleIPv4Response = Hex.decode(
        "0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220"
            + "002000080001a147e112a64300080014" + "2b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96")!
    /// RFC 5769 §2.3: the same from [2001:db8:1234:5678:11:2233:4455:6677]:32853.
    static let sampleIPv6Response = Hex.decode(
        "010100482112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220"
            + "002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d900080014"
            + "a382954e4be67bf11784c97c8292c275bfe3ed4180280004c8fb0b4c")!

    @Test func crc32OfTheCheckString() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func theSampleRequestParsesAndChecks() throws {
        let received = try ReceivedSTUN(parsing: Self.sampleRequest)
        #expect(received.message.kind == .request)
        #expect(received.message.method == STUNMessage.binding)
        #expect(received.message.transactionID == Self.transaction)
        #expect(received.message.attribute(.username)?.username == "evtj:h6vY")
        #expect(received.message.attribute(.priority)?.priority == 0x6e00_01ff)
        #expect(received.message.attribute(.iceControlled)?.value == Hex.decode("932ff9b151263b36"))
        #expect(received.message.attributes.count == 4)
        #expect(received.fingerprintIsValid)
        #expect(received.integrityIsValid(key: Self.password))
        #expect(!received.integrityIsValid(key: Array("VOkJxbRl1RmTxUk/WvJxBu".utf8)))
    }

    @Test(arguments: [
        (sampleIPv4Response, "192.0.2.1:32853"),
        (sampleIPv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853"),
    ])
    func theSampleResponsesParseAndCheck(bytes: [UInt8], mapped: String) throws {
        let received = try ReceivedSTUN(parsing: bytes)
        #expect(received.message.kind == .success)
        #expect(received.fingerprintIsValid)
        #expect(received.integrityIsValid(key: Self.password))
        let address = received.message.attribute(.xorMappedAddress)?.xorMappedAddress(transactionID: Self.transaction)
        #expect(address?.description == mapped)
    }

    /// The writer's XOR-MAPPED-ADDRESS gives the RFC's exact bytes for both families, and a parsed sample written
    /// back (its integrity and fingerprint recomputed) reads back the same and checks.
    @Test(arguments: [(sampleIPv4Response, 40..<48), (sampleIPv6Response, 40..<60)])
    func writingTheSamplesAddressGivesTheRFCsBytes(bytes: [UInt8], value: Range<Int>) throws {
        let parsed = try ReceivedSTUN(parsing: bytes).message
        let mapped = try #require(
            parsed.attribute(.xorMappedAddress)?.xorMappedAddress(transactionID: Self.transaction))
        #expect(STUNAttribute.xorMappedAddress(mapped, transactionID: Self.transaction).value == Array(bytes[value]))
        let reread = try ReceivedSTUN(parsing: parsed.encoded(integrityKey: Self.password))
        #expect(reread.message == parsed)
        #expect(reread.fingerprintIsValid && reread.integrityIsValid(key: Self.password))
    }

    @Test func anAddressIsMaskedBothWays() throws {
        let address = try #require(TransportAddress(host: [198, 18, 0, 7], port: 50_000))
        let attribute = STUNAttribute.xorMappedAddress(address, transactionID: Self.transaction)
        #expect(attribute.value[4...] != [198, 18, 0, 7][...])
        #expect(attribute.xorMappedAddress(transactionID: Self.transaction) == address)
    }

    struct BadRow: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let error: STUNError
        var testDescription: String { name }
    }

    static let header = Hex.decode("000100002112a442b7e7a701bc34d686fa87dfae")!

    static func with(length: Int, body: [UInt8], type: [UInt8] = [0, 1]) -> [UInt8] {
        type + [UInt8(length >> 8), UInt8(length & 0xFF)] + Array(header[4...]) + body
    }

    static let badRows: [BadRow] = [
        BadRow(name: "empty", bytes: [], error: .truncated(bytes: 0)),
        BadRow(name: "19 bytes", bytes: Array(header.prefix(19)), error: .truncated(bytes: 19)),
        BadRow(
            name: "an RTP packet", bytes: [0x80] + Array(header.dropFirst()),
            error: .notSTUN("the first two bits are not zero")),
        BadRow(
            name: "no cookie", bytes: Array(header.prefix(4)) + [0, 0, 0, 0] + Array(header[8...]),
            error: .notSTUN("no magic cookie")),
        BadRow(
            name: "length not words", bytes: with(length: 3, body: [0, 0, 0]),
            error: .badLength(3, reason: "not a multiple of 4")),
        BadRow(
            name: "length past the datagram", bytes: with(length: 8, body: [0, 0, 0, 0]),
            error: .badLength(8, reason: "the datagram holds 4 bytes after the header")),
        BadRow(
            name: "attribute past the end", bytes: with(length: 8, body: [0, 6, 0, 9, 65, 65, 65, 65]),
            error: .badAttribute(type: 6, reason: "9 bytes run past the message")),
        BadRow(
            name: "short integrity", bytes: with(length: 8, body: [0, 8, 0, 4, 1, 2, 3, 4]),
            error: .badAttribute(type: 8, reason: "4 bytes, not 20")),
        BadRow(
            name: "long fingerprint", bytes: with(length: 12, body: [0x80, 0x28, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]),
            error: .badAttribute(type: 0x8028, reason: "8 bytes, not 4")),
        BadRow(
            name: "attribute after fingerprint",
            bytes: with(length: 12, body: [0x80, 0x28, 0, 4, 1, 2, 3, 4, 0, 0x25, 0, 0]),
            error: .misplaced("an attribute after FINGERPRINT")),
        BadRow(
            name: "attribute after integrity",
            bytes: with(length: 28, body: [0, 8, 0, 20] + [UInt8](repeating: 0, count: 20) + [0, 0x25, 0, 0]),
            error: .misplaced("an attribute after MESSAGE-INTEGRITY")),
        BadRow(
            name: "25 attributes", bytes: with(length: 100, body: [UInt8]((0..<25).flatMap { _ in [0, 0x25, 0, 0] })),
            error: .tooManyAttributes(limit: 24)),
        BadRow(
            name: "1,281 bytes", bytes: with(length: 1_260, body: [UInt8](repeating: 0, count: 1_261)),
            error: .tooLarge(bytes: 1_281, limit: 1_280)),
    ]

    @Test(arguments: badRows)
    func garbageIsRefusedWithItsReason(row: BadRow) {
        #expect(throws: row.error) { try ReceivedSTUN(parsing: row.bytes) }
    }

    @Test func everyRefusalSaysWhatWasWrong() {
        for row in Self.badRows { #expect(!row.error.description.isEmpty) }
        #expect(STUNError.tooLarge(bytes: 1_281, limit: 1_280).description.contains("1280"))
    }
}
