@testable import ParleyWebRTC

/// A DTLS client and server that shake hands in memory: datagrams are passed from one to the other by hand, so a
/// test can drop, cut or replay any of them.
final class DTLSTestPair {
    let clientIdentity: DTLSIdentity
    let serverIdentity: DTLSIdentity
    let client: DTLSEndpoint
    let server: DTLSEndpoint
    /// Every datagram each side sent, in order, for tests that look at the wire.
    private(set) var clientSent: [[UInt8]] = []
    private(set) var serverSent: [[UInt8]] = []

    init(
        clientProfiles: [SRTPProfile] = SRTPProfile.allCases, serverProfiles: [SRTPProfile] = SRTPProfile.allCases,
        clientLimits: DTLSEndpoint.Limits = .init(), serverLimits: DTLSEndpoint.Limits = .init(),
        clientExpects: DTLSFingerprint? = nil, now: Duration = .zero
    ) throws {
        clientIdentity = try DTLSIdentity()
        serverIdentity = try DTLSIdentity()
        client = try DTLSEndpoint(
            role: .client, identity: clientIdentity,
            expectedPeerFingerprint: clientExpects ?? serverIdentity.fingerprint, profiles: clientProfiles,
            limits: clientLimits, now: now)
        server = try DTLSEndpoint(
            role: .server, identity: serverIdentity, expectedPeerFingerprint: clientIdentity.fingerprint,
            profiles: serverProfiles, limits: serverLimits, now: now)
    }

    /// The client's queued datagrams, taken without delivering them (a lost flight).
    func dropClientFlight() -> [[UInt8]] {
        let flight = client.outgoing()
        clientSent += flight
        return flight
    }

    /// Passes datagrams both ways until neither side has anything to send; returns the exchanges made. Errors
    /// thrown by `receive` end the exchange (the endpoints' `state` tells the rest).
    @discardableResult
    func run(now: Duration = .zero, rounds: Int = 20) throws -> Int {
        for round in 0..<rounds {
            let fromClient = client.outgoing()
            clientSent += fromClient
            for datagram in fromClient { try server.receive(datagram, now: now) }
            let fromServer = server.outgoing()
            serverSent += fromServer
            for datagram in fromServer { try client.receive(datagram, now: now) }
            if fromClient.isEmpty && fromServer.isEmpty { return round }
        }
        return rounds
    }
}

/// SplitMix64: seeded bytes for garbage datagrams, the same on every run.
struct SeededBytes {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}
