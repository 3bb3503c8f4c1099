import ParleyWire
import Testing

@testable import ParleyWebRTC

/// One browser's transport on the relay, against a browser made of the same real parts (a STUN check, an OpenSSL
/// DTLS client, a libsrtp2 session), datagrams passed by hand on a manual clock.
@Suite struct BrowserTransportTests {
    static let browser = TransportAddress(host: [127, 0, 0, 1], port: 50_000)!
    static let stranger = TransportAddress(host: [198, 18, 0, 66], port: 50_001)!

    /// The browser's side: its certificate, its DTLS client and, once connected, its SRTP session.
    final class Browser {
        let identity: DTLSIdentity
        let dtls: DTLSEndpoint
        var srtp: SRTPSession?

        init(relay: DTLSIdentity) throws {
            identity = try DTLSIdentity()
            dtls = try DTLSEndpoint(
                role: .client, identity: identity, expectedPeerFingerprint: relay.fingerprint, now: .zero)
        }
    }

    let relayIdentity: DTLSIdentity
    let browser: Browser
    let transport: BrowserTransport

    init(browserFingerprint: DTLSFingerprint? = nil) throws {
        relayIdentity = try DTLSIdentity()
        browser = try Browser(relay: relayIdentity)
        transport = try BrowserTransport(
            ice: ICELiteAgent(localUfrag: "relayU", localPassword: "relay-password-22chars", remoteUfrag: "brwsr"),
            identity: relayIdentity, remoteFingerprint: browserFingerprint ?? browser.identity.fingerprint, now: .zero)
    }

    static func check(nominate: Bool) -> [UInt8] {
        var attributes: [STUNAttribute] = [
            .username("relayU:brwsr"),
            STUNAttribute(type: STUNAttribute.Kind.iceControlling.rawValue, value: [1, 2, 3, 4, 5, 6, 7, 8]),
        ]
        if nominate { attributes.append(STUNAttribute(type: STUNAttribute.Kind.useCandidate.rawValue, value: [])) }
        return STUNMessage(kind: .request, transactionID: Array(1...12), attributes: attributes)
            .encoded(integrityKey: Array("relay-password-22chars".utf8))
    }

    /// Checks, then passes DTLS both ways until both sides are connected; the events the relay's side gave.
    @discardableResult
    func connect(at now: Duration = .seconds(1)) throws -> [BrowserTransport.Event] {
        var events = transport.receive(Self.check(nominate: true), from: Self.browser, at: now)
        for _ in 0..<10 {
            for datagram in browser.dtls.outgoing() {
                let answer = transport.receive(datagram, from: Self.browser, at: now)
                events += answer
                for case .send(let bytes, let address) in answer where address == Self.browser {
                    try browser.dtls.receive(bytes, now: now)
                }
            }
            if browser.dtls.state == .connected, transport.state == .connected { break }
        }
        if let keys = browser.dtls.srtpKeys { browser.srtp = try SRTPSession(keys: keys) }
        return events
    }

    static let rtp = RTPPacket(
        header: RTPHeader(marker: true, payloadType: 111, sequenceNumber: 7, timestamp: 960, ssrc: 0xB0B),
        payload: [0x78, 1, 2, 3]
    ).serialized()
    static let rtcp = RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: 0xB0B, mediaSSRC: 9))
        .serialized()

    @Test func aBrowserConnectsAndMediaFlowsBothWays() throws {
        let events = try connect()
        #expect(events.contains(.connected))
        #expect(transport.state == .connected && browser.dtls.state == .connected)
        #expect(transport.mediaAddress == Self.browser)
        let srtp = try #require(browser.srtp)
        #expect(
            transport.receive(try srtp.protectRTP(Self.rtp), from: Self.browser, at: .seconds(2)) == [.rtp(Self.rtp)])
        #expect(
            transport.receive(try srtp.protectRTCP(Self.rtcp), from: Self.browser, at: .seconds(2)) == [
                .rtcp(Self.rtcp)
            ])
        let (toBrowser, address) = try #require(try transport.protectRTP(Self.rtp))
        #expect(address == Self.browser)
        #expect(try srtp.unprotectRTP(toBrowser) == Self.rtp)
        let (rtcpToBrowser, _) = try #require(try transport.protectRTCP(Self.rtcp))
        #expect(try srtp.unprotectRTCP(rtcpToBrowser) == Self.rtcp)
    }

    @Test func nothingIsSentBeforeTheHandshake() throws {
        #expect(try transport.protectRTP(Self.rtp) == nil)
        _ = transport.receive(Self.check(nominate: true), from: Self.browser, at: .zero)
        #expect(try transport.protectRTP(Self.rtp) == nil)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let name: String
        let datagram: [UInt8]
        let source: TransportAddress
        let error: BrowserTransportError
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(name: "empty", datagram: [], source: browser, error: .unknownDatagram(firstByte: nil)),
        Refusal(name: "ZRTP", datagram: [16, 0, 0, 0], source: browser, error: .unknownDatagram(firstByte: 16)),
        Refusal(
            name: "TURN channel data", datagram: [64, 1, 0, 0], source: browser, error: .unknownDatagram(firstByte: 64)),
        Refusal(name: "first byte 255", datagram: [255], source: browser, error: .unknownDatagram(firstByte: 255)),
        Refusal(
            name: "DTLS from an address no check came from",
            datagram: [22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 10),
            source: stranger, error: .uncheckedAddress(stranger)),
        Refusal(name: "SRTP before the handshake", datagram: rtp, source: browser, error: .mediaBeforeHandshake),
        Refusal(name: "SRTCP before the handshake", datagram: rtcp, source: browser, error: .mediaBeforeHandshake),
        Refusal(
            name: "a STUN header cut short", datagram: [0, 1, 0, 0, 0x21, 0x12], source: browser,
            error: .stun(.truncated(bytes: 6))),
    ]

    @Test(arguments: refusals)
    func garbageIsRefusedByNameAndAnsweredWithNothing(row: Refusal) throws {
        let transport = try BrowserTransportTests().transport
        #expect(transport.receive(row.datagram, from: row.source, at: .zero) == [.refused(row.error)])
        #expect(transport.state == .connecting)
        #expect(!row.error.description.isEmpty)
    }

    @Test func mediaFromAnUncheckedAddressIsRefusedAfterTheHandshake() throws {
        try connect()
        let srtp = try #require(browser.srtp)
        #expect(
            transport.receive(try srtp.protectRTP(Self.rtp), from: Self.stranger, at: .seconds(2))
                == [.refused(.uncheckedAddress(Self.stranger))])
    }

    @Test func aTamperedPacketIsRefusedAndTheNextOneStillReads() throws {
        try connect()
        let srtp = try #require(browser.srtp)
        var tampered = try srtp.protectRTP(Self.rtp)
        tampered[tampered.count - 1] ^= 1
        #expect(
            transport.receive(tampered, from: Self.browser, at: .seconds(2))
                == [.refused(.srtp(.authenticationFailed(operation: "srtp_unprotect")))])
        var next = try RTPPacket(parsing: Self.rtp)
        next.header.sequenceNumber += 1
        #expect(
            transport.receive(try srtp.protectRTP(next.serialized()), from: Self.browser, at: .seconds(2))
                == [.rtp(next.serialized())])
    }

    @Test func aBrowserWithAnotherCertificateThanItsOfferNamesFails() throws {
        let other = try DTLSIdentity()
        let test = try BrowserTransportTests(browserFingerprint: other.fingerprint)
        let events = try test.connect()
        #expect(events.contains { if case .failed(.dtls(.fingerprintMismatch)) = $0 { true } else { false } })
        #expect(test.transport.receive(Self.check(nominate: true), from: Self.browser, at: .seconds(2)).count == 1)
        guard case .failed = test.transport.state else {
            Issue.record("the transport went on with the wrong certificate")
            return
        }
    }

    @Test func consentLapsesThirtySecondsAfterTheLastCheck() throws {
        try connect(at: .seconds(1))
        #expect(transport.tick(at: .seconds(30)).isEmpty)
        _ = transport.receive(Self.check(nominate: false), from: Self.browser, at: .seconds(25))
        #expect(transport.tick(at: .milliseconds(54_999)).isEmpty)
        #expect(transport.tick(at: .seconds(55)) == [.failed(.consentExpired)])
        #expect(transport.state == .failed(.consentExpired))
        #expect(try transport.protectRTP(Self.rtp) == nil)
    }

    @Test func aHandshakeThatNeverFinishesTimesOut() throws {
        _ = transport.receive(Self.check(nominate: true), from: Self.browser, at: .zero)
        #expect(transport.tick(at: .seconds(10)).allSatisfy { if case .failed = $0 { false } else { true } })
        #expect(transport.tick(at: .milliseconds(10_001)) == [.failed(.dtls(.handshakeTimedOut(after: .seconds(10))))])
    }

    @Test func closeSendsCloseNotifyToTheBrowser() throws {
        try connect()
        let events = transport.close()
        #expect(events.count == 1)
        for case .send(let bytes, _) in events { try? browser.dtls.receive(bytes, now: .seconds(2)) }
        #expect(browser.dtls.state == .closed)
        #expect(transport.state == .failed(.closed))
    }
}
