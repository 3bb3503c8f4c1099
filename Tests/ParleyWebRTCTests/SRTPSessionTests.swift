import Testing

@testable import ParleyWebRTC

@Suite struct SRTPSessionTests {
    /// An RTP packet: V=2, payload type 96, then the payload.
    static func rtp(sequence: UInt16, ssrc: UInt32 = 0x1234_5678, payload: [UInt8] = Array(0..<100)) -> [UInt8] {
        [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x0B, 0xB8]
            + [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)] + payload
    }

    /// An RTCP sender report (PT 200, length 6 words) with no report blocks.
    static func senderReport(ssrc: UInt32 = 0x1234_5678, packets: UInt8 = 7) -> [UInt8] {
        [0x80, 200, 0, 6]
            + [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
            + [UInt8](repeating: 0x11, count: 12) + [0, 0, 0, packets] + [0, 0, 0x10, 0]
    }

    /// Client and server sessions from the keys of a real handshake negotiating `profile`.
    static func sessions(_ profile: SRTPProfile) throws -> (client: SRTPSession, server: SRTPSession) {
        let pair = try DTLSTestPair(clientProfiles: [profile])
        try pair.run()
        let clientKeys = try #require(pair.client.srtpKeys)
        let serverKeys = try #require(pair.server.srtpKeys)
        return (try SRTPSession(keys: clientKeys), try SRTPSession(keys: serverKeys))
    }

    @Test(arguments: SRTPProfile.allCases)
    func rtpAndRTCPRoundTripBothWays(profile: SRTPProfile) throws {
        let (client, server) = try Self.sessions(profile)
        for (sender, receiver) in [(client, server), (server, client)] {
            for sequence in UInt16(1)...5 {
                let packet = Self.rtp(sequence: sequence)
                let protected = try sender.protectRTP(packet)
                #expect(protected.count == packet.count + 10 || protected.count == packet.count + 16)
                #expect(Array(protected[0..<12]) == Array(packet[0..<12]))  // The header stays in the clear.
                #expect(Array(protected[12..<packet.count]) != Array(packet[12...]))
                #expect(try receiver.unprotectRTP(protected) == packet)
            }
            let report = Self.senderReport()
            let protected = try sender.protectRTCP(report)
            #expect(protected.count > report.count)
            #expect(try receiver.unprotectRTCP(protected) == report)
        }
    }

    @Test(arguments: SRTPProfile.allCases)
    func tamperedPacketsFailAuthentication(profile: SRTPProfile) throws {
        let (client, server) = try Self.sessions(profile)
        var packet = try client.protectRTP(Self.rtp(sequence: 9))
        packet[20] ^= 0x01
        #expect(throws: SRTPError.authenticationFailed(operation: "srtp_unprotect")) {
            try server.unprotectRTP(packet)
        }
        var report = try client.protectRTCP(Self.senderReport())
        report[10] ^= 0x80
        #expect(throws: SRTPError.authenticationFailed(operation: "srtp_unprotect_rtcp")) {
            try server.unprotectRTCP(report)
        }
        // A packet protected with the wrong direction's key fails the same way.
        let own = try client.protectRTP(Self.rtp(sequence: 10))
        #expect(throws: SRTPError.authenticationFailed(operation: "srtp_unprotect")) { try client.unprotectRTP(own) }
    }

    @Test(arguments: SRTPProfile.allCases)
    func replayedPacketsAreRefused(profile: SRTPProfile) throws {
        let (client, server) = try Self.sessions(profile)
        let packet = try client.protectRTP(Self.rtp(sequence: 42))
        _ = try server.unprotectRTP(packet)
        #expect(throws: SRTPError.replayed(operation: "srtp_unprotect")) { try server.unprotectRTP(packet) }
        let report = try client.protectRTCP(Self.senderReport())
        _ = try server.unprotectRTCP(report)
        #expect(throws: SRTPError.replayed(operation: "srtp_unprotect_rtcp")) { try server.unprotectRTCP(report) }
    }

    @Test func packetSizesAreBounded() throws {
        let key = SRTPMasterKey(key: Array(repeating: 1, count: 16), salt: Array(repeating: 2, count: 14))
        let session = try SRTPSession(profile: .aes128CMHMACSHA1_80, local: key, remote: key, maximumPacketBytes: 200)
        #expect(throws: SRTPError.packetTooLarge(bytes: 201, limit: 200)) {
            try session.protectRTP(Self.rtp(sequence: 1, payload: Array(repeating: 0, count: 189)))
        }
        #expect(throws: SRTPError.packetTooShort(bytes: 11, minimum: 12)) {
            try session.unprotectRTP(Array(repeating: 0x80, count: 11))
        }
        #expect(throws: SRTPError.packetTooShort(bytes: 4, minimum: 8)) { try session.protectRTCP([0x80, 200, 0, 0]) }
        // The limit applies to what is given: a 200-byte packet protects (libsrtp2 writes its tag past it, into
        // room the session keeps), but the 210-byte result is over the limit for unprotect.
        let largest = try session.protectRTP(Self.rtp(sequence: 2, payload: Array(repeating: 7, count: 188)))
        #expect(largest.count == 210)
        #expect(throws: SRTPError.packetTooLarge(bytes: 210, limit: 200)) { try session.unprotectRTP(largest) }
        let fits = Self.rtp(sequence: 3, payload: Array(repeating: 7, count: 178))
        #expect(try session.unprotectRTP(session.protectRTP(fits)) == fits)
    }

    @Test func keysOfTheWrongSizeAreRefused() {
        let short = SRTPMasterKey(key: Array(repeating: 1, count: 16), salt: Array(repeating: 2, count: 12))
        #expect(
            throws: SRTPError.library(
                operation: "srtp_create", status: "key 16+12 bytes, aes128CMHMACSHA1_80 needs 16+14")
        ) {
            try SRTPSession(profile: .aes128CMHMACSHA1_80, local: short, remote: short)
        }
    }

    /// Many sessions at once on separate tasks (Swift Testing also runs these tests in parallel): srtp_init runs
    /// once and each session's state is its own.
    @Test func sessionsOnParallelTasksStayIndependent() async throws {
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    let profile = SRTPProfile.allCases[task % 2]
                    let a = SRTPMasterKey(
                        key: Array(repeating: UInt8(task), count: 16),
                        salt: Array(repeating: 3, count: profile.saltBytes))
                    let b = SRTPMasterKey(
                        key: Array(repeating: UInt8(task + 100), count: 16),
                        salt: Array(repeating: 4, count: profile.saltBytes))
                    let sender = try SRTPSession(profile: profile, local: a, remote: b)
                    let receiver = try SRTPSession(profile: profile, local: b, remote: a)
                    var delivered = 0
                    for sequence in UInt16(0)..<500 {
                        let packet = Self.rtp(sequence: sequence, ssrc: UInt32(task))
                        if try receiver.unprotectRTP(sender.protectRTP(packet)) == packet { delivered += 1 }
                    }
                    return delivered
                }
            }
            var all: [Int] = []
            for try await delivered in group { all.append(delivered) }
            return all
        }
        #expect(results == Array(repeating: 500, count: 8))
    }
}
