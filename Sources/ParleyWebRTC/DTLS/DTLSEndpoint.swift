import CDTLSShim

/// Which side of the DTLS handshake an endpoint plays (RFC 5763 §5: a=setup:active is the client).
public enum DTLSRole: Equatable, Sendable {
    /// Sends the ClientHello (a=setup:active).
    case client
    /// Answers it (a=setup:passive), what the relay usually is for a browser's offer of a=setup:actpass.
    case server
}

/// One DTLS 1.2 connection for DTLS-SRTP (RFC 5764), owning one OpenSSL SSL over in-memory datagram queues: give it
/// the datagrams that arrive, send what `outgoing()` returns, call `handleTimeout(now:)` when `retransmitDelay` has
/// passed. Once `state` is `.connected`, `srtpKeys` opens the SRTP session.
///
/// Not Sendable: one owner (the connection's event loop or actor) makes every call.
public final class DTLSEndpoint {
    /// Bounds on what an endpoint accepts and how long its handshake may take.
    public struct Limits: Equatable, Sendable {
        /// The largest incoming datagram; a larger one is refused with `DTLSError.datagramTooLarge`.
        public var datagramBytes = 2048
        /// The largest outgoing datagram (OpenSSL fragments the handshake to fit).
        public var mtu = 1200
        /// How long after `init` the handshake may take before `DTLSError.handshakeTimedOut`.
        public var handshake: Duration = .seconds(10)
        /// The first flight's first retransmission timeout (RFC 6347 §4.2.4.1 says 1 s). OpenSSL 3.0 times it on the
        /// wall clock; zero makes OpenSSL prepare the resend at once, which the next `handleTimeout` sends (tests).
        public var firstRetransmitTimeout: Duration = .seconds(1)

        /// The defaults: 2048-byte datagrams in, 1200 out, 10 s for the handshake, 1 s first retransmission.
        public init() {}
    }

    /// Where the connection stands.
    public enum State: Equatable, Sendable {
        /// The handshake is running.
        case handshaking
        /// The handshake finished, the peer's certificate matched and `srtpKeys` holds the keys.
        case connected
        /// Either side sent close_notify.
        case closed
        /// The handshake or the connection failed; the endpoint stays failed.
        case failed(DTLSError)
    }

    /// Incoming datagrams the C queue holds (each `receive` consumes its own at once).
    static let incomingQueueLimit = 64

    /// The role this endpoint plays.
    public let role: DTLSRole
    /// The fingerprint the peer's certificate must have (from its SDP's a=fingerprint).
    public let expectedPeerFingerprint: DTLSFingerprint
    /// The bounds this endpoint enforces.
    public let limits: Limits
    /// Where the connection stands.
    public private(set) var state: State = .handshaking
    /// The SRTP profile and keys, once `state` is `.connected`.
    public private(set) var srtpKeys: SRTPKeys?

    private let identity: DTLSIdentity  // Keeps the shared SSL_CTX alive (the SSL holds a reference too).
    private let raw: OpaquePointer
    private let ssl: OpaquePointer
    private let startedAt: Duration

    /// A connection in `role` with certificate `identity`, offering `profiles` in order of preference, whose peer
    /// must present `expectedPeerFingerprint`. A client queues its ClientHello at once. `now` starts the handshake
    /// deadline.
    public init(
        role: DTLSRole, identity: DTLSIdentity, expectedPeerFingerprint: DTLSFingerprint,
        profiles: [SRTPProfile] = SRTPProfile.allCases, limits: Limits = Limits(), now: Duration
    ) throws {
        guard !profiles.isEmpty else { throw DTLSError.endpointFailed(reason: "no SRTP profile offered") }
        guard limits.mtu >= 256, limits.mtu <= limits.datagramBytes else {
            throw DTLSError.endpointFailed(reason: "MTU \(limits.mtu) is outside 256...\(limits.datagramBytes)")
        }
        let firstTimeout = limits.firstRetransmitTimeout.microseconds
        guard (0...60_000_000).contains(firstTimeout) else {
            throw DTLSError.endpointFailed(
                reason: "first retransmission timeout \(firstTimeout) µs is outside 0...60 s")
        }
        ERR_clear_error()
        let list = profiles.map(\.openSSLName).joined(separator: ":")
        guard
            let raw = parley_dtls_endpoint_new(
                identity.raw, role == .server ? 1 : 0, list, UInt32(limits.mtu), UInt32(firstTimeout))
        else { throw DTLSError.endpointFailed(reason: OpenSSLErrors.drain()) }
        self.raw = raw
        self.ssl = parley_dtls_endpoint_ssl(raw)
        self.identity = identity
        self.role = role
        self.expectedPeerFingerprint = expectedPeerFingerprint
        self.limits = limits
        self.startedAt = now
        if role == .client { step() }
    }

    deinit { parley_dtls_endpoint_free(raw) }

    /// Takes one datagram that arrived from the peer (a DTLS one, see `DatagramKind`). Throws `DTLSError` for a
    /// datagram refused before OpenSSL (too large, malformed: the state is unchanged, as UDP may carry garbage), when
    /// the handshake deadline has passed, and when this datagram made the connection fail (`state` says so too).
    public func receive(_ datagram: [UInt8], now: Duration) throws {
        try checkUsable(now: now)
        guard datagram.count <= limits.datagramBytes else {
            throw DTLSError.datagramTooLarge(bytes: datagram.count, limit: limits.datagramBytes)
        }
        try DTLSRecords.validate(datagram)
        guard parley_dtls_endpoint_push(raw, datagram, datagram.count) == 1 else {
            throw DTLSError.incomingQueueFull(limit: Self.incomingQueueLimit)
        }
        step()
        if case .failed(let error) = state { throw error }
    }

    /// The datagrams to send to the peer, oldest first; each holds whole records and fits `limits.mtu`.
    public func outgoing() -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        while true {
            let length = parley_dtls_endpoint_next_length(raw)
            if length == 0 { break }
            var datagram = [UInt8](repeating: 0, count: length)
            guard parley_dtls_endpoint_pop(raw, &datagram, length) == length else { break }
            datagrams.append(datagram)
        }
        return datagrams
    }

    /// How long until OpenSSL's retransmission timer expires (zero if it has), or nil when none runs. OpenSSL 3.0
    /// measures this on the wall clock; it has no clock to inject.
    public var retransmitDelay: Duration? {
        let microseconds = parley_dtls_endpoint_timeout_us(raw)
        return microseconds < 0 ? nil : .microseconds(microseconds)
    }

    /// Resends the last flight if its retransmission timer expired (or OpenSSL already prepared the resend) and
    /// returns whether it did; `outgoing()` then holds it. Throws `DTLSError.handshakeTimedOut` once the deadline
    /// judged from `now` has passed, and `handshakeFailed` when OpenSSL gives up after too many resends.
    @discardableResult
    public func handleTimeout(now: Duration) throws -> Bool {
        try checkUsable(now: now)
        ERR_clear_error()
        let result = parley_dtls_endpoint_handle_timeout(raw)
        if result < 0 {
            let error = DTLSError.handshakeFailed(reason: OpenSSLErrors.drain())
            state = .failed(error)
            throw error
        }
        return result == 1
    }

    /// Sends close_notify (through `outgoing()`) and closes the connection; a failed or closed one stays as it is.
    public func close() {
        guard state == .handshaking || state == .connected else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        state = .closed
    }

    // MARK: - Driving OpenSSL

    private func checkUsable(now: Duration) throws {
        switch state {
        case .failed(let error): throw error
        case .closed: throw DTLSError.closed
        case .handshaking:
            if now - startedAt > limits.handshake {
                let error = DTLSError.handshakeTimedOut(after: limits.handshake)
                state = .failed(error)
                throw error
            }
        case .connected: break
        }
    }

    /// Lets OpenSSL consume what is queued: the handshake while it runs, then records (retransmitted Finished,
    /// alerts, close_notify) with SSL_read. No application data is expected: Parley carries no data channel.
    private func step() {
        ERR_clear_error()
        switch state {
        case .handshaking:
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                finishHandshake()
            } else {
                settle(SSL_get_error(ssl, result), failure: DTLSError.handshakeFailed)
            }
        case .connected:
            var buffer = [UInt8](repeating: 0, count: limits.datagramBytes)
            while state == .connected {
                let result = SSL_read(ssl, &buffer, Int32(buffer.count))
                if result <= 0 {
                    settle(SSL_get_error(ssl, result), failure: DTLSError.connectionFailed)
                    break
                }
            }
        case .closed, .failed: break
        }
    }

    private func settle(_ code: Int32, failure: (String) -> DTLSError) {
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: break
        case SSL_ERROR_ZERO_RETURN: state = .closed
        default: state = .failed(failure("SSL_get_error \(code): " + OpenSSLErrors.drain()))
        }
    }

    private func finishHandshake() {
        do throws(DTLSError) {
            var digest = [UInt8](repeating: 0, count: 32)
            guard parley_dtls_peer_fingerprint(ssl, &digest) == 1, let actual = DTLSFingerprint(sha256: digest) else {
                throw DTLSError.noPeerCertificate
            }
            guard actual == expectedPeerFingerprint else {
                throw DTLSError.fingerprintMismatch(expected: expectedPeerFingerprint, actual: actual)
            }
            guard let selected = SSL_get_selected_srtp_profile(ssl) else { throw DTLSError.noSRTPProfile }
            guard let profile = SRTPProfile(id: selected.pointee.id) else {
                throw DTLSError.unsupportedSRTPProfile(id: selected.pointee.id)
            }
            var material = [UInt8](repeating: 0, count: SRTPKeys.exportedBytes(for: profile))
            let label = Array(SRTPKeys.exporterLabel.utf8).map { CChar(bitPattern: $0) }
            guard SSL_export_keying_material(ssl, &material, material.count, label, label.count, nil, 0, 0) == 1 else {
                throw DTLSError.keyExportFailed(reason: OpenSSLErrors.drain())
            }
            srtpKeys = SRTPKeys(profile: profile, exported: material, isClient: role == .client)
            state = .connected
        } catch {
            state = .failed(error)
        }
    }
}

extension Duration {
    /// Whole microseconds, saturating.
    fileprivate var microseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds < Int64.max / 1_000_000, seconds > Int64.min / 1_000_000 else {
            return seconds < 0 ? Int64.min : Int64.max
        }
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
