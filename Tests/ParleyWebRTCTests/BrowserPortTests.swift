import ParleyWire
import Testing

@testable import ParleyWebRTC

/// Two browsers on one port, each a browser of real parts (STUN, an OpenSSL DTLS client, libsrtp2): every datagram
/// reaches the transport it is for, and nothing reaches one that is gone.
@Suite struct BrowserPortTests {
    /// One browser: its address, its ICE credentials as the relay gave them, its DTLS client.
    final class Browser {
        let ufrag: String
        let address: TransportAddress
        let dtls: DTLSEndpoint
        let transport: BrowserTransport
        var srtp: SRTPSession?

        init(ufrag: String, port: UInt16, relay: DTLSIdentity) throws {
            self.ufrag = ufrag
            address = TransportAddress(host: [127, 0, 0, 1], port: port)!
            let identity = try DTLSIdentity()
            dtls = try DTLSEndpoint(
                role: .client, identity: identity, expectedPeerFingerprint: relay.fingerprint, now: .zero)
            transport = try BrowserTransport(
                ice: ICELiteAgent(localUfrag: ufrag, localPassword: "pw-\(ufrag)-0123456789abcd", remoteUfrag: "b"),
                identity: relay, remoteFingerprint: identity.fingerprint, now: .zero)
        }

        func check(from password: String? = nil) -> [UInt8] {
            STUNMessage(
                kind: .request, transactionID: Array(1...12),
                attributes: [
                    .username("\(ufrag):b"), STUNAttribute(type: STUNAttribute.Kind.useCandidate.rawValue, value: []),
                ]
            ).encoded(integrityKey: Array((password ?? "pw-\(ufrag)-0123456789abcd").utf8))
        }

        /// Checks and shakes hands through `port`; the ufrags the port said each datagram was for.
        @discardableResult
        func connect(through port: BrowserPort) throws -> Set<String?> {
            var owners: Set<String?> = []
            let (owner, _) = port.receive(check(), from: address, at: .seconds(1))
            owners.insert(owner)
            for _ in 0..<10 {
                for datagram in dtls.outgoing() {
                    let (owner, events) = port.receive(datagram, from: address, at: .seconds(1))
                    owners.insert(owner)
                    for case .send(let bytes, let to) in events where to == address {
                        try dtls.receive(bytes, now: .seconds(1))
                    }
                }
                if dtls.state == .connected { break }
            }
            if let keys = dtls.srtpKeys { srtp = try SRTPSession(keys: keys) }
            return owners
        }
    }

    static let rtp = RTPPacket(
        header: RTPHeader(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 3_000, ssrc: 0xA), payload: [1]
    ).serialized()

    /// A port holding ann's and bob's transports, neither connected yet.
    static func annAndBob() throws -> (BrowserPort, Browser, Browser) {
        let relay = try DTLSIdentity()
        let port = BrowserPort()
        let ann = try Browser(ufrag: "ann1", port: 40_001, relay: relay)
        let bob = try Browser(ufrag: "bob1", port: 40_002, relay: relay)
        try port.add(ann.transport)
        try port.add(bob.transport)
        return (port, ann, bob)
    }

    @Test func twoBrowsersOnOnePortEachReachTheirOwnTransport() throws {
        let (port, ann, bob) = try Self.annAndBob()
        #expect(try ann.connect(through: port) == ["ann1"])
        #expect(try bob.connect(through: port) == ["bob1"])
        #expect(ann.transport.state == .connected && bob.transport.state == .connected)
        let fromAnn = port.receive(try #require(ann.srtp).protectRTP(Self.rtp), from: ann.address, at: .seconds(2))
        #expect(fromAnn.ufrag == "ann1" && fromAnn.events == [.rtp(Self.rtp)])
        let fromBob = port.receive(try #require(bob.srtp).protectRTP(Self.rtp), from: bob.address, at: .seconds(2))
        #expect(fromBob.ufrag == "bob1" && fromBob.events == [.rtp(Self.rtp)])
        #expect(port.owners == [ann.address: "ann1", bob.address: "bob1"])
    }

    @Test func aCheckForAnotherBrowserWithoutItsPasswordTakesNoAddress() throws {
        let (port, ann, bob) = try Self.annAndBob()
        try ann.connect(through: port)
        // Bob's address sends a check naming ann's ufrag, signed with bob's password: refused, nothing moves.
        let forged = STUNMessage(
            kind: .request, transactionID: Array(1...12), attributes: [.username("ann1:b")]
        ).encoded(integrityKey: Array("pw-bob1-0123456789abcd".utf8))
        let (owner, events) = port.receive(forged, from: bob.address, at: .seconds(2))
        #expect(owner == "ann1")
        #expect(events.contains(.refused(.stun(.badIntegrity))))
        #expect(port.owners[bob.address] == nil)
    }

    struct Unknown: Sendable, CustomTestStringConvertible {
        let name: String
        let datagram: [UInt8]
        var testDescription: String { name }
    }

    static let unknowns: [Unknown] = [
        Unknown(
            name: "a check for a ufrag nobody has",
            datagram: STUNMessage(
                kind: .request, transactionID: Array(1...12), attributes: [.username("nobody:b")]
            ).encoded(integrityKey: [1])),
        Unknown(
            name: "a check without USERNAME",
            datagram: STUNMessage(kind: .request, transactionID: Array(1...12)).encoded()),
        Unknown(name: "STUN garbage", datagram: [0, 1, 0, 4, 9]),
        Unknown(name: "DTLS from an unknown address", datagram: [22, 0xFE, 0xFD, 0, 0]),
        Unknown(name: "SRTP from an unknown address", datagram: rtp),
        Unknown(name: "empty", datagram: []),
    ]

    @Test(arguments: unknowns)
    func aDatagramForNoBrowserIsRefusedByName(row: Unknown) throws {
        let port = BrowserPort()
        try port.add(try Browser(ufrag: "ann1", port: 40_001, relay: try DTLSIdentity()).transport)
        let source = TransportAddress(host: [198, 18, 0, 9], port: 9)!
        let (owner, events) = port.receive(row.datagram, from: source, at: .zero)
        #expect(owner == nil)
        #expect(events == [.refused(.unknownBrowser(source))])
    }

    @Test func aRemovedBrowserIsForgottenWithItsAddresses() throws {
        let port = BrowserPort()
        let ann = try Browser(ufrag: "ann1", port: 40_001, relay: try DTLSIdentity())
        try port.add(ann.transport)
        try ann.connect(through: port)
        #expect(port.remove("ann1") === ann.transport)
        #expect(port.owners.isEmpty && port.transports.isEmpty)
        let (owner, _) = port.receive(try #require(ann.srtp).protectRTP(Self.rtp), from: ann.address, at: .seconds(2))
        #expect(owner == nil)
    }

    @Test func thePortIsBoundedAndAUfragIsOneBrowsers() throws {
        let relay = try DTLSIdentity()
        let port = BrowserPort(limit: 2)
        try port.add(try Browser(ufrag: "a", port: 1, relay: relay).transport)
        #expect(throws: BrowserPortError.ufragTaken("a")) {
            try port.add(try Browser(ufrag: "a", port: 2, relay: relay).transport)
        }
        try port.add(try Browser(ufrag: "b", port: 2, relay: relay).transport)
        #expect(throws: BrowserPortError.full(limit: 2)) {
            try port.add(try Browser(ufrag: "c", port: 3, relay: relay).transport)
        }
        #expect(BrowserPortError.full(limit: 2).description.contains("2 browsers"))
    }

    @Test func tickReportsOnlyBrowsersWithSomethingToSay() throws {
        let port = BrowserPort()
        let ann = try Browser(ufrag: "ann1", port: 40_001, relay: try DTLSIdentity())
        let bob = try Browser(ufrag: "bob1", port: 40_002, relay: try DTLSIdentity())
        try port.add(ann.transport)
        try port.add(bob.transport)
        try ann.connect(through: port)
        #expect(port.tick(at: .seconds(5)).isEmpty)
        // Bob never shook hands: his deadline passes; ann's consent holds until 31 s.
        let events = port.tick(at: .seconds(11))
        #expect(events.map(\.ufrag) == ["bob1"])
        #expect(events.first?.events == [.failed(.dtls(.handshakeTimedOut(after: .seconds(10))))])
    }
}
