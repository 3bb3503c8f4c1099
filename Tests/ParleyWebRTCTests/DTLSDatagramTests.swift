import Testing

@testable import ParleyWebRTC

@Suite struct DTLSDatagramTests {
    struct GarbageRow: CustomTestStringConvertible, Sendable {
        let name: String
        let datagram: [UInt8]
        let error: DTLSError
        var testDescription: String { name }
    }

    /// A DTLS 1.2 handshake record header declaring `length` bytes.
    static func header(type: UInt8 = 22, version: [UInt8] = [0xFE, 0xFD], epoch: UInt8 = 0, length: Int) -> [UInt8] {
        [type] + version + [0, epoch, 0, 0, 0, 0, 0, 1] + [UInt8(length >> 8), UInt8(length & 0xFF)]
    }

    static let garbage: [GarbageRow] = [
        GarbageRow(name: "empty", datagram: [], error: .malformedRecord(offset: 0, reason: "empty datagram")),
        GarbageRow(
            name: "header cut short", datagram: [22, 0xFE, 0xFD, 0, 0],
            error: .malformedRecord(offset: 0, reason: "5 bytes left, a record header needs 13")),
        GarbageRow(
            name: "record cut short", datagram: header(length: 100) + [UInt8](repeating: 1, count: 10),
            error: .malformedRecord(offset: 0, reason: "declares 100 bytes but 10 follow")),
        GarbageRow(
            name: "second record cut short", datagram: header(type: 20, length: 1) + [1] + [23, 0xFE, 0xFD],
            error: .malformedRecord(offset: 14, reason: "3 bytes left, a record header needs 13")),
        GarbageRow(
            name: "unknown content type", datagram: header(type: 99, length: 0),
            error: .malformedRecord(offset: 0, reason: "content type 99 is not 20...23")),
        GarbageRow(
            name: "TLS 1.2 version, not DTLS", datagram: header(version: [3, 3], length: 0),
            error: .malformedRecord(offset: 0, reason: "version 0x303 is not DTLS 1.0 or 1.2")),
        GarbageRow(
            name: "RTP sent to DTLS", datagram: [0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
            error: .malformedRecord(offset: 0, reason: "content type 128 is not 20...23")),
        GarbageRow(
            name: "plaintext change_cipher_spec of two bytes", datagram: header(type: 20, length: 2) + [1, 1],
            error: .malformedRecord(offset: 0, reason: "change_cipher_spec is not the single byte 1")),
        GarbageRow(
            name: "plaintext alert of level 3", datagram: header(type: 21, length: 2) + [3, 40],
            error: .malformedRecord(offset: 0, reason: "alert is not a level (1 or 2) and a description")),
        GarbageRow(
            name: "plaintext application data", datagram: header(type: 23, length: 1) + [0],
            error: .malformedRecord(offset: 0, reason: "application data in epoch 0")),
        GarbageRow(
            name: "handshake fragment longer than its record",
            datagram: header(length: 14) + [1, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 50, 9, 9],
            error: .malformedRecord(offset: 0, reason: "handshake fragment declares 50 bytes but 2 follow")),
        GarbageRow(
            name: "handshake fragment past its message",
            datagram: header(length: 14) + [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 9, 9],
            error: .malformedRecord(offset: 0, reason: "handshake fragment 0+2 overruns its message of 1")),
        GarbageRow(
            name: "encrypted record shorter than nonce and tag", datagram: header(epoch: 1, length: 23) + Array(0..<23),
            error: .malformedRecord(offset: 0, reason: "encrypted record of 23 bytes is shorter than AES-GCM's 24")),
        GarbageRow(
            name: "oversized", datagram: header(length: 2036) + [UInt8](repeating: 0, count: 2036),
            error: .datagramTooLarge(bytes: 2049, limit: 2048)),
    ]

    @Test(arguments: garbage)
    func garbageIsRefusedWithANamedErrorAndTheHandshakeGoesOn(row: GarbageRow) throws {
        let pair = try DTLSTestPair()
        #expect(throws: row.error) { try pair.server.receive(row.datagram, now: .zero) }
        #expect(pair.server.state == .handshaking)
        try pair.run()
        #expect(pair.client.state == .connected && pair.server.state == .connected)
    }

    @Test func aTruncatedClientHelloIsRefusedAndTheWholeOneStillWorks() throws {
        let pair = try DTLSTestPair()
        let hello = try #require(pair.dropClientFlight().first)
        let cut = Array(hello.prefix(hello.count - 7))
        #expect(
            throws: DTLSError.malformedRecord(
                offset: 0, reason: "declares \(hello.count - 13) bytes but \(hello.count - 20) follow")
        ) {
            try pair.server.receive(cut, now: .zero)
        }
        try pair.server.receive(hello, now: .zero)
        try pair.run()
        #expect(pair.client.state == .connected && pair.server.state == .connected)
    }

    /// Seeded random datagrams, raw and framed as records of every type in epoch 0 and in random epochs, at a server
    /// mid-handshake and then at a connected client: each is refused with a DTLSError or dropped by OpenSSL, nothing
    /// crashes, and the handshake still completes.
    @Test func randomDatagramsNeverCrashAndOnlyThrowDTLSErrors() throws {
        var random = SeededBytes(seed: 53)
        let pair = try DTLSTestPair()
        try pair.server.receive(try #require(pair.dropClientFlight().first), now: .zero)
        var refused = 0
        for index in 0..<600 {
            let length = Int(random.next() % 2200)
            var datagram = random.bytes(length)
            if index % 3 != 0 && length > 13 {  // A well-framed record with random content.
                datagram.replaceSubrange(0..<13, with: Self.header(type: UInt8(20 + index % 4), length: length - 13))
                if index % 3 == 1 {  // Epoch 0, plaintext; otherwise a random epoch.
                    datagram[3] = 0
                    datagram[4] = 0
                }
            }
            do {
                try pair.server.receive(datagram, now: .zero)
            } catch is DTLSError {
                refused += 1
            }
        }
        #expect(refused > 300)
        #expect(pair.server.state == .handshaking)
        try pair.run()
        #expect(pair.client.state == .connected && pair.server.state == .connected)
        for _ in 0..<200 {
            let length = 13 + Int(random.next() % 1000)
            var datagram = random.bytes(length)
            datagram.replaceSubrange(0..<13, with: Self.header(type: 23, length: length - 13))
            datagram[3] = 0
            datagram[4] = 1  // The connection's epoch: OpenSSL drops what does not authenticate.
            try? pair.client.receive(datagram, now: .zero)
        }
        #expect(pair.client.state == .connected)
    }

    struct KindRow: CustomTestStringConvertible, Sendable {
        let name: String
        let datagram: [UInt8]
        let kind: DatagramKind
        var testDescription: String { name }
    }

    static let kinds: [KindRow] = [
        KindRow(name: "empty", datagram: [], kind: .unknown),
        KindRow(name: "STUN binding request", datagram: [0x00, 0x01, 0x00, 0x00], kind: .stun),
        KindRow(name: "STUN upper bound", datagram: [3, 0], kind: .stun),
        KindRow(name: "gap after STUN", datagram: [4, 0], kind: .unknown),
        KindRow(name: "ZRTP", datagram: [16, 0], kind: .zrtp),
        KindRow(name: "DTLS change_cipher_spec", datagram: [20, 0xFE, 0xFD], kind: .dtls),
        KindRow(name: "DTLS handshake", datagram: [22, 0xFE, 0xFD], kind: .dtls),
        KindRow(name: "DTLS upper bound", datagram: [63], kind: .dtls),
        KindRow(name: "TURN channel", datagram: [64, 0], kind: .turnChannel),
        KindRow(name: "gap after TURN", datagram: [80, 0], kind: .unknown),
        KindRow(name: "RTP Opus (PT 111)", datagram: [0x80, 111], kind: .rtp),
        KindRow(name: "RTP VP8 with marker (PT 96)", datagram: [0x80, 0x80 | 96], kind: .rtp),
        KindRow(name: "RTCP sender report (200)", datagram: [0x80, 200], kind: .rtcp),
        KindRow(name: "RTCP receiver report (201)", datagram: [0x81, 201], kind: .rtcp),
        KindRow(name: "RTCP feedback (206)", datagram: [0x81, 206], kind: .rtcp),
        KindRow(name: "RTCP range lower bound (192)", datagram: [0x80, 192], kind: .rtcp),
        KindRow(name: "RTP just past RTCP range (224)", datagram: [0x80, 224], kind: .rtp),
        KindRow(name: "RTP first byte only", datagram: [0x80], kind: .unknown),
        KindRow(name: "RTP upper bound", datagram: [191, 0], kind: .rtp),
        KindRow(name: "above RTP", datagram: [192, 0], kind: .unknown),
    ]

    @Test(arguments: kinds)
    func datagramKindFollowsRFC7983(row: KindRow) {
        #expect(DatagramKind(row.datagram) == row.kind)
    }

    struct FingerprintRow: CustomTestStringConvertible, Sendable {
        let name: String
        let sdp: String
        let bytes: [UInt8]?
        var testDescription: String { name }
    }

    static let allAB = Array(repeating: "AB", count: 32).joined(separator: ":")
    static let fingerprints: [FingerprintRow] = [
        FingerprintRow(name: "uppercase", sdp: "sha-256 " + allAB, bytes: Array(repeating: 0xAB, count: 32)),
        FingerprintRow(
            name: "hash name and hex in lowercase", sdp: "SHA-256 " + allAB.lowercased(),
            bytes: Array(repeating: 0xAB, count: 32)),
        FingerprintRow(name: "sha-1", sdp: "sha-1 " + allAB, bytes: nil),
        FingerprintRow(name: "31 bytes", sdp: "sha-256 " + allAB.dropLast(3), bytes: nil),
        FingerprintRow(name: "single digit pair", sdp: "sha-256 A" + allAB.dropFirst(2), bytes: nil),
        FingerprintRow(name: "not hex", sdp: "sha-256 ZZ" + allAB.dropFirst(2), bytes: nil),
        FingerprintRow(name: "no hash name", sdp: allAB, bytes: nil),
    ]

    @Test(arguments: fingerprints)
    func fingerprintsParseFromSDP(row: FingerprintRow) {
        #expect(DTLSFingerprint(sdp: row.sdp)?.sha256 == row.bytes)
    }

    @Test func fingerprintsPrintAsSDPWants() throws {
        let fingerprint = try #require(DTLSFingerprint(sha256: Array(0..<32)))
        let hex = "00:01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F"
        #expect(fingerprint.sdpValue == "sha-256 " + hex)
        #expect(DTLSFingerprint(sha256: [1, 2, 3]) == nil)
    }
}
