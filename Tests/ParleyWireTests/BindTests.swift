import ParleyWire
import Testing

struct BindTests {
    static let token = BindToken(bytes: Array(0...15))!

    @Test func requestHasTheDocumentedBytes() throws {
        let request = BindRequest(ssrc: 12345, memberID: 42, token: Self.token)
        let wire = request.serialized()
        let header = bytes("81 cc 00 07  00 00 30 39  50 52 4c 59")  // APP, subtype 1, length 7, SSRC, "PRLY"
        let body = bytes("00 00 00 2a  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f")  // member 42, token
        #expect(wire == header + body)
        #expect(try BindRequest(parsing: wire) == request)
        #expect(Bind.isBindPacket(wire))
        #expect(MediaPacketKind.classify(wire) == .rtcp)
        // A capture dissects it as an ordinary RTCP APP packet.
        #expect(
            try RTCPPacket.parseCompound(wire) == [
                .application(
                    ApplicationPacket(subtype: 1, ssrc: 12345, name: "PRLY", data: bytes("00 00 00 2a") + Array(0...15))
                )
            ])
    }

    @Test func probeDiffersFromARequestOnlyInItsSubtype() throws {
        let probe = BindRequest(ssrc: 12345, memberID: 42, token: Self.token, isProbe: true)
        let wire = probe.serialized()
        #expect(wire == [0x83] + BindRequest(ssrc: 12345, memberID: 42, token: Self.token).serialized().dropFirst())
        #expect(try BindRequest(parsing: wire) == probe)
        #expect(try BindRequest(parsing: wire).isProbe)
        #expect(Bind.isBindPacket(wire))
    }

    @Test(arguments: BindStatus.allCases)
    func acknowledgementHasTheDocumentedBytes(_ status: BindStatus) throws {
        let ack = BindAcknowledgement(ssrc: 12345, memberID: 42, status: status)
        let wire = ack.serialized()
        #expect(wire == bytes("82 cc 00 04  00 00 30 39  50 52 4c 59  00 00 00 2a") + [status.rawValue, 0, 0, 0])
        #expect(try BindAcknowledgement(parsing: wire) == ack)
        #expect(Bind.isBindPacket(wire))
    }

    struct Hostile: CustomTestStringConvertible, Sendable {
        let name: String
        let wire: [UInt8]
        let error: WireError
        var testDescription: String { name }
    }

    static let badRequests: [Hostile] = [
        .init(name: "empty datagram", wire: [], error: .emptyCompound),
        .init(
            name: "other APP name", wire: bytes("81 cc 00 07 00 00 30 39 54 45 53 54") + Array(repeating: 0, count: 20),
            error: .notBindPacket(name: 0x5445_5354, subtype: 1)),
        .init(
            name: "acknowledgement where a request is expected",
            wire: bytes("82 cc 00 04 00 00 30 39 50 52 4c 59 00 00 00 2a 00 00 00 00"),
            error: .notBindPacket(name: 0x5052_4C59, subtype: 2)),
        .init(
            name: "token cut to 12 bytes",
            wire: bytes("81 cc 00 06 00 00 30 39 50 52 4c 59 00 00 00 2a") + Array(repeating: 0, count: 12),
            error: .bindLength(expected: 20, found: 16)),
        .init(
            name: "a PLI", wire: bytes("81 ce 00 02 00 00 00 01 00 00 00 02"),
            error: .unexpectedRTCPType(found: 206, expected: 204)),
        .init(
            name: "length field lies", wire: bytes("81 cc 00 07 00 00 30 39 50 52 4c 59"),
            error: .rtcpLengthExceedsData(lengthField: 7, remaining: 12)),
    ]

    @Test(arguments: badRequests)
    func rejectsBadRequests(_ row: Hostile) {
        #expect(wireError { () throws(WireError) in try BindRequest(parsing: row.wire) } == row.error)
    }

    static let badAcknowledgements: [Hostile] = [
        .init(
            name: "unknown status", wire: bytes("82 cc 00 04 00 00 30 39 50 52 4c 59 00 00 00 2a 07 00 00 00"),
            error: .unknownBindStatus(7)),
        .init(
            name: "no status word", wire: bytes("82 cc 00 03 00 00 30 39 50 52 4c 59 00 00 00 2a"),
            error: .bindLength(expected: 8, found: 4)),
        .init(
            name: "a request", wire: BindRequest(ssrc: 1, memberID: 2, token: token).serialized(),
            error: .notBindPacket(name: 0x5052_4C59, subtype: 1)),
    ]

    @Test(arguments: badAcknowledgements)
    func rejectsBadAcknowledgements(_ row: Hostile) {
        #expect(wireError { () throws(WireError) in try BindAcknowledgement(parsing: row.wire) } == row.error)
    }

    @Test func cheapCheckLooksOnlyAtTypeAndName() {
        #expect(!Bind.isBindPacket(bytes("81 cc 00 02 00 00 30 39 54 45 53 54")))
        #expect(!Bind.isBindPacket(bytes("81 cd 00 02 00 00 30 39 50 52 4c 59")))
        #expect(!Bind.isBindPacket(bytes("81 cc 00 02 00 00 30 39 50 52 4c")))
        #expect(!Bind.isBindPacket(bytes("80 60 00 02 00 00 30 39 50 52 4c 59")))
    }

    @Test func tokensTravelAsHex() {
        let token = BindToken(hex: "000102030405060708090a0b0c0d0e0f")
        #expect(token == Self.token)
        #expect(BindToken(hex: "000102030405060708090A0B0C0D0E0F") == Self.token)
        #expect(Self.token.hex == "000102030405060708090a0b0c0d0e0f")
        #expect(BindToken(hex: "000102030405060708090a0b0c0d0e0") == nil)
        #expect(BindToken(hex: "000102030405060708090a0b0c0d0e0f00") == nil)
        #expect(BindToken(hex: "g00102030405060708090a0b0c0d0e0f") == nil)
        #expect(BindToken(hex: "") == nil)
        #expect(BindToken(bytes: [1, 2, 3]) == nil)
        #expect(String(describing: Self.token) == "BindToken(0001…)")
    }

    @Test func tokensCompareByValue() {
        let other = BindToken(bytes: Array(0...14) + [99])!
        #expect(Self.token.matches(BindToken(bytes: Array(0...15))!))
        #expect(!Self.token.matches(other))
    }
}
