import Testing

@testable import ParleyWebRTC

@Suite struct DTLSHandshakeTests {
    @Test func clientAndServerConnectAndDeriveTheSameKeysCrosswise() throws {
        let pair = try DTLSTestPair()
        try pair.run()
        #expect(pair.client.state == .connected)
        #expect(pair.server.state == .connected)
        let client = try #require(pair.client.srtpKeys)
        let server = try #require(pair.server.srtpKeys)
        #expect(client.profile == .aeadAES128GCM)  // First in both lists.
        #expect(client.local == server.remote)
        #expect(client.remote == server.local)
        #expect(client.local != client.remote)
        #expect(client.local.key.count == 16 && client.local.salt.count == 12)
    }

    @Test(arguments: SRTPProfile.allCases)
    func eachProfileNegotiates(profile: SRTPProfile) throws {
        let pair = try DTLSTestPair(clientProfiles: [profile])
        try pair.run()
        let client = try #require(pair.client.srtpKeys)
        let server = try #require(pair.server.srtpKeys)
        #expect(client.profile == profile && server.profile == profile)
        #expect(client.local.salt.count == profile.saltBytes)
        #expect(client.local == server.remote && client.remote == server.local)
    }

    @Test func profilesWithNothingInCommonFail() throws {
        let pair = try DTLSTestPair(clientProfiles: [.aeadAES128GCM], serverProfiles: [.aes128CMHMACSHA1_80])
        // OpenSSL finishes the handshake without use_srtp; the server, first to finish, names the missing profile.
        #expect(throws: DTLSError.noSRTPProfile) { try pair.run() }
        #expect(pair.server.state == .failed(.noSRTPProfile))
        #expect(pair.server.srtpKeys == nil)
    }

    @Test func everyDatagramIsWholeRecordsWithinTheMTU() throws {
        var limits = DTLSEndpoint.Limits()
        limits.mtu = 300  // Small enough that the server's certificate flight needs several datagrams.
        let pair = try DTLSTestPair(clientLimits: limits, serverLimits: limits)
        try pair.run()
        #expect(pair.client.state == .connected && pair.server.state == .connected)
        #expect(pair.serverSent.count > 3)
        for datagram in pair.clientSent + pair.serverSent {
            #expect(datagram.count <= 300)
            try DTLSRecords.validate(datagram)
        }
    }

    @Test func aLostFirstFlightIsSentAgainByHandleTimeout() throws {
        // OpenSSL 3.0 times retransmission on the wall clock only; a zero first timeout makes it prepare the resend
        // at once (inside the client's first step), and handleTimeout is what sends it. No waiting.
        var limits = DTLSEndpoint.Limits()
        limits.firstRetransmitTimeout = .zero
        let pair = try DTLSTestPair(clientLimits: limits)
        let lost = pair.dropClientFlight()
        #expect(lost.count == 1)
        #expect(pair.client.outgoing().isEmpty)  // The prepared resend is held until handleTimeout.

        #expect(try pair.client.handleTimeout(now: .milliseconds(1)))
        let resent = pair.client.outgoing()
        #expect(resent.count == 1)
        // The same ClientHello under a new record sequence number (bytes 5-10 of the record header).
        #expect(Array(resent[0][13...]) == Array(lost[0][13...]))
        #expect(Array(resent[0][5..<11]) != Array(lost[0][5..<11]))
        // Sent once: a second call has nothing more until OpenSSL's next (1 s) timer expires.
        #expect(try pair.client.handleTimeout(now: .milliseconds(2)) == false)

        for datagram in resent { try pair.server.receive(datagram, now: .milliseconds(3)) }
        try pair.run(now: .milliseconds(4))
        #expect(pair.client.state == .connected && pair.server.state == .connected)
        #expect(pair.client.srtpKeys?.local == pair.server.srtpKeys?.remote)
    }

    @Test func handleTimeoutBeforeTheTimerExpiresSendsNothing() throws {
        let pair = try DTLSTestPair()
        _ = pair.dropClientFlight()
        let delay = try #require(pair.client.retransmitDelay)
        #expect(delay > .zero && delay <= .seconds(1))
        #expect(try pair.client.handleTimeout(now: .milliseconds(1)) == false)
        #expect(pair.client.outgoing().isEmpty)
    }

    @Test func aFingerprintOtherThanTheSDPsFailsTheHandshake() throws {
        let stranger = try DTLSIdentity()
        let pair = try DTLSTestPair(clientExpects: stranger.fingerprint)
        #expect(
            throws: DTLSError.fingerprintMismatch(
                expected: stranger.fingerprint, actual: pair.serverIdentity.fingerprint)
        ) {
            try pair.run()
        }
        #expect(
            pair.client.state
                == .failed(
                    .fingerprintMismatch(expected: stranger.fingerprint, actual: pair.serverIdentity.fingerprint)))
        #expect(pair.client.srtpKeys == nil)
    }

    @Test func aStalledHandshakeTimesOutByTheInjectedClock() throws {
        let server = try DTLSEndpoint(
            role: .server, identity: DTLSIdentity(), expectedPeerFingerprint: DTLSIdentity().fingerprint,
            now: .seconds(100))
        let client = try DTLSEndpoint(
            role: .client, identity: DTLSIdentity(), expectedPeerFingerprint: DTLSIdentity().fingerprint,
            now: .seconds(100))
        let hello = client.outgoing()
        try server.handleTimeout(now: .seconds(110))  // Exactly at the deadline: still allowed.
        #expect(server.state == .handshaking)
        #expect(throws: DTLSError.handshakeTimedOut(after: .seconds(10))) {
            try server.handleTimeout(now: .seconds(110) + .milliseconds(1))
        }
        #expect(server.state == .failed(.handshakeTimedOut(after: .seconds(10))))
        #expect(throws: DTLSError.handshakeTimedOut(after: .seconds(10))) {
            try server.receive(hello[0], now: .seconds(111))
        }
    }

    @Test func closeSendsCloseNotifyAndThePeerSeesTheConnectionClosed() throws {
        let pair = try DTLSTestPair()
        try pair.run()
        pair.client.close()
        #expect(pair.client.state == .closed)
        let notify = pair.client.outgoing()
        #expect(notify.count == 1)
        #expect(notify.first?.first == 21)  // An alert record.
        try pair.server.receive(notify[0], now: .zero)
        #expect(pair.server.state == .closed)
        #expect(throws: DTLSError.closed) { try pair.server.receive(notify[0], now: .zero) }
    }

    @Test func limitsOutsideTheirBoundsAreRefusedByName() throws {
        let identity = try DTLSIdentity()
        var limits = DTLSEndpoint.Limits()
        limits.datagramBytes = 100
        #expect(throws: DTLSError.endpointFailed(reason: "MTU 1200 is outside 256...100")) {
            try DTLSEndpoint(
                role: .server, identity: identity, expectedPeerFingerprint: identity.fingerprint, limits: limits,
                now: .zero)
        }
        #expect(throws: DTLSError.endpointFailed(reason: "no SRTP profile offered")) {
            try DTLSEndpoint(
                role: .server, identity: identity, expectedPeerFingerprint: identity.fingerprint, profiles: [],
                now: .zero)
        }
    }

    @Test func theIdentitysFingerprintIsWhatSDPCarries() throws {
        let identity = try DTLSIdentity()
        let value = identity.fingerprint.sdpValue
        #expect(value.hasPrefix("sha-256 "))
        #expect(value.count == "sha-256 ".count + 32 * 3 - 1)
        #expect(DTLSFingerprint(sdp: value) == identity.fingerprint)
        #expect(try DTLSIdentity().fingerprint != identity.fingerprint)
        #expect(throws: DTLSError.identityFailed(reason: "validity 0 days is outside 1...3650")) {
            try DTLSIdentity(validityDays: 0)
        }
    }
}
