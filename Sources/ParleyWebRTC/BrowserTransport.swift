/// One browser's transport on the relay's UDP port: its ICE-lite agent, its DTLS connection and, once that is up, its
/// SRTP session, with every datagram from the browser's address given to the one it is for (RFC 7983).
///
/// The rules: only a STUN check that passes (the right USERNAME and MESSAGE-INTEGRITY) makes an address known; DTLS
/// is read only from a known address; SRTP is read from known addresses and sent to the nominated one. Anything else
/// is refused with its reason, which the caller counts; nothing from the network can make it trap.
///
/// Not Sendable: it owns an OpenSSL connection and a libsrtp2 session. One owner (the relay's media loop) makes every
/// call, passing the time on its own clock.
public final class BrowserTransport {
    /// What one datagram or one tick led to.
    public enum Event: Equatable {
        /// Send these bytes to this address (a STUN response, DTLS records).
        case send([UInt8], to: TransportAddress)
        /// The handshake finished: media may flow.
        case connected
        /// An RTP packet from the browser, decrypted.
        case rtp([UInt8])
        /// An RTCP compound packet from the browser, decrypted.
        case rtcp([UInt8])
        /// A datagram refused, and why (counted, never fatal: UDP may carry anything).
        case refused(BrowserTransportError)
        /// The transport cannot go on: the handshake failed or timed out, or consent lapsed.
        case failed(BrowserTransportError)
    }

    /// Where the transport stands.
    public enum State: Equatable, Sendable {
        /// Waiting for checks and the handshake.
        case connecting
        /// Media flows.
        case connected
        /// Failed for good.
        case failed(BrowserTransportError)
    }

    /// Where the transport stands.
    public private(set) var state: State = .connecting
    /// The ICE-lite agent (its selected address is where media goes).
    public private(set) var ice: ICELiteAgent
    private let dtls: DTLSEndpoint
    private var srtp: SRTPSession?

    /// A transport answering checks for `ice`, with the relay's `identity` as the DTLS server of a browser whose
    /// certificate must have `remoteFingerprint` (its offer's a=fingerprint). `now` starts the handshake deadline.
    public init(
        ice: ICELiteAgent, identity: DTLSIdentity, remoteFingerprint: DTLSFingerprint,
        limits: DTLSEndpoint.Limits = DTLSEndpoint.Limits(), now: Duration
    ) throws {
        self.ice = ice
        dtls = try DTLSEndpoint(
            role: .server, identity: identity, expectedPeerFingerprint: remoteFingerprint, limits: limits, now: now)
    }

    /// The address media goes to: the one the browser nominated or, until it has, the one its latest valid check came
    /// from (Chromium may finish DTLS and send its first keyframe before it nominates).
    public var mediaAddress: TransportAddress? { ice.selected ?? ice.checked.max(by: { $0.value < $1.value })?.key }

    /// Takes one datagram from `source` at `now`.
    public func receive(_ datagram: [UInt8], from source: TransportAddress, at now: Duration) -> [Event] {
        if case .failed(let error) = state { return [.refused(error)] }
        switch DatagramKind(datagram) {
        case .stun: return stun(datagram, from: source, at: now)
        case .dtls:
            guard ice.checked[source] != nil else { return [.refused(.uncheckedAddress(source))] }
            return handshake(from: source, at: now) { try self.dtls.receive(datagram, now: now) }
        case .rtp, .rtcp:
            guard let srtp else { return [.refused(.mediaBeforeHandshake)] }
            guard ice.checked[source] != nil else { return [.refused(.uncheckedAddress(source))] }
            do {
                return DatagramKind(datagram) == .rtp
                    ? [.rtp(try srtp.unprotectRTP(datagram))] : [.rtcp(try srtp.unprotectRTCP(datagram))]
            } catch let error as SRTPError {
                return [.refused(.srtp(error))]
            } catch {
                return [.refused(.srtp(.library(operation: "unprotect", status: "\(error)")))]
            }
        case .zrtp, .turnChannel, .unknown: return [.refused(.unknownDatagram(firstByte: datagram.first))]
        }
    }

    /// Runs the timers at `now`: DTLS retransmissions while the handshake runs, its deadline, and consent once
    /// connected.
    public func tick(at now: Duration) -> [Event] {
        switch state {
        case .failed: return []
        case .connected:
            guard ice.hasConsent(at: now) else { return fail(.consentExpired) }
            return []
        case .connecting:
            guard let address = mediaAddress else {
                // No check yet: only the deadline can pass.
                return handshake(from: nil, at: now) { _ = try self.dtls.handleTimeout(now: now) }
            }
            return handshake(from: address, at: now) { _ = try self.dtls.handleTimeout(now: now) }
        }
    }

    /// `packet` (RTP) protected for the browser, and where to send it; nil before the handshake.
    public func protectRTP(_ packet: [UInt8]) throws(BrowserTransportError) -> ([UInt8], TransportAddress)? {
        try protect(packet) { try $0.protectRTP($1) }
    }

    /// `packet` (an RTCP compound) protected for the browser, and where to send it; nil before the handshake.
    public func protectRTCP(_ packet: [UInt8]) throws(BrowserTransportError) -> ([UInt8], TransportAddress)? {
        try protect(packet) { try $0.protectRTCP($1) }
    }

    /// Sends close_notify (returned for the nominated address) and stops.
    public func close() -> [Event] {
        dtls.close()
        let events = sendAll(to: mediaAddress)
        state = .failed(.closed)
        return events
    }

    private func protect(
        _ packet: [UInt8], _ body: (SRTPSession, [UInt8]) throws -> [UInt8]
    ) throws(BrowserTransportError) -> ([UInt8], TransportAddress)? {
        guard let srtp, let address = mediaAddress, state == .connected else { return nil }
        do {
            return (try body(srtp, packet), address)
        } catch let error as SRTPError {
            throw .srtp(error)
        } catch {
            throw .srtp(.library(operation: "protect", status: "\(error)"))
        }
    }

    private func stun(_ datagram: [UInt8], from source: TransportAddress, at now: Duration) -> [Event] {
        let received: ReceivedSTUN
        do {
            received = try ReceivedSTUN(parsing: datagram)
        } catch {
            return [.refused(.stun(error))]
        }
        switch ice.receive(received, from: source, at: now) {
        case .answer(let response, _): return [.send(response, to: source)]
        case .refused(let error, let response):
            return [.refused(.stun(error))] + (response.map { [.send($0, to: source)] } ?? [])
        }
    }

    /// Runs one step of the handshake, then sends what it wrote and reports how it stands.
    private func handshake(from address: TransportAddress?, at now: Duration, _ step: () throws -> Void) -> [Event] {
        var events: [Event] = []
        do {
            try step()
        } catch let error as DTLSError {
            if case .failed = dtls.state { return sendAll(to: address) + fail(.dtls(error)) }
            if case .handshakeTimedOut = error { return fail(.dtls(error)) }
            events.append(.refused(.dtls(error)))
        } catch {
            return fail(.dtls(.handshakeFailed(reason: "\(error)")))
        }
        events += sendAll(to: address)
        if state == .connecting, dtls.state == .connected, let keys = dtls.srtpKeys {
            do {
                srtp = try SRTPSession(keys: keys)
                state = .connected
                events.append(.connected)
            } catch let error as SRTPError {
                events += fail(.srtp(error))
            } catch {
                events += fail(.srtp(.library(operation: "srtp_create", status: "\(error)")))
            }
        }
        return events
    }

    private func sendAll(to address: TransportAddress?) -> [Event] {
        let datagrams = dtls.outgoing()
        guard let address else { return [] }
        return datagrams.map { .send($0, to: address) }
    }

    private func fail(_ error: BrowserTransportError) -> [Event] {
        state = .failed(error)
        return [.failed(error)]
    }
}

/// Why a browser's datagram was refused or its transport failed.
public enum BrowserTransportError: Error, Equatable, Sendable, CustomStringConvertible {
    case stun(STUNError)
    case dtls(DTLSError)
    case srtp(SRTPError)
    case uncheckedAddress(TransportAddress)
    case unknownBrowser(TransportAddress)
    case mediaBeforeHandshake
    case unknownDatagram(firstByte: UInt8?)
    case consentExpired
    case closed

    public var description: String {
        switch self {
        case .stun(let error): error.description
        case .dtls(let error): error.description
        case .srtp(let error): error.description
        case .uncheckedAddress(let address): "a datagram from \(address), which has passed no ICE check"
        case .unknownBrowser(let address):
            "a datagram from \(address) for no browser this relay knows (no ufrag of its own, no checked address)"
        case .mediaBeforeHandshake: "media before the DTLS handshake finished"
        case .unknownDatagram(let first):
            "a datagram that is neither STUN, DTLS nor SRTP (first byte \(first.map { String($0) } ?? "none"))"
        case .consentExpired:
            "the browser's consent lapsed: no ICE check for \(ICELiteAgent.consentTimeout) (RFC 7675)"
        case .closed: "the transport was closed"
        }
    }
}
