/// Why a DTLS endpoint refused a datagram or its handshake failed, with what a user (or a relay log) needs to know.
public enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// OpenSSL could not make the relay's key or certificate.
    case identityFailed(reason: String)
    /// OpenSSL could not set up a connection from the identity.
    case endpointFailed(reason: String)
    /// A datagram longer than the limit on incoming records, refused before OpenSSL sees it.
    case datagramTooLarge(bytes: Int, limit: Int)
    /// A datagram that is not a sequence of whole DTLS 1.x records (RFC 6347 §4.1).
    case malformedRecord(offset: Int, reason: String)
    /// More incoming datagrams queued than the endpoint holds.
    case incomingQueueFull(limit: Int)
    /// The handshake had not finished when the deadline passed.
    case handshakeTimedOut(after: Duration)
    /// OpenSSL failed the handshake; `reason` is OpenSSL's error string.
    case handshakeFailed(reason: String)
    /// The connection failed after the handshake; `reason` is OpenSSL's error string.
    case connectionFailed(reason: String)
    /// The peer sent no certificate, so there is nothing to check against the SDP's a=fingerprint.
    case noPeerCertificate
    /// The peer's certificate is not the one the SDP's a=fingerprint names.
    case fingerprintMismatch(expected: DTLSFingerprint, actual: DTLSFingerprint)
    /// The handshake finished without a use_srtp profile both sides support (RFC 5764 §4.1.2).
    case noSRTPProfile
    /// OpenSSL negotiated an SRTP profile this module has no keys layout for.
    case unsupportedSRTPProfile(id: UInt)
    /// SSL_export_keying_material failed for the SRTP keys.
    case keyExportFailed(reason: String)
    /// The connection was closed (by us or by the peer's close_notify); nothing more is read.
    case closed

    public var description: String {
        switch self {
        case .identityFailed(let reason): "DTLS identity could not be made: \(reason)"
        case .endpointFailed(let reason): "DTLS endpoint could not be made: \(reason)"
        case .datagramTooLarge(let bytes, let limit): "DTLS datagram \(bytes) bytes exceeds limit \(limit)"
        case .malformedRecord(let offset, let reason): "DTLS record at byte \(offset) is malformed: \(reason)"
        case .incomingQueueFull(let limit): "DTLS incoming queue is full (limit \(limit) datagrams)"
        case .handshakeTimedOut(let after): "DTLS handshake did not finish within \(after)"
        case .handshakeFailed(let reason): "DTLS handshake failed: \(reason)"
        case .connectionFailed(let reason): "DTLS connection failed: \(reason)"
        case .noPeerCertificate: "DTLS peer sent no certificate"
        case .fingerprintMismatch(let expected, let actual):
            "DTLS peer certificate is \(actual), but the SDP a=fingerprint says \(expected)"
        case .noSRTPProfile: "DTLS handshake negotiated no SRTP profile (use_srtp)"
        case .unsupportedSRTPProfile(let id): "DTLS negotiated SRTP profile 0x\(String(id, radix: 16)), not supported"
        case .keyExportFailed(let reason): "DTLS-SRTP key export failed: \(reason)"
        case .closed: "DTLS connection is closed"
        }
    }
}
