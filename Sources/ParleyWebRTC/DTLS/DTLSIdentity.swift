import CDTLSShim

/// The relay's DTLS certificate: an EC P-256 key and a self-signed certificate (CN "parley"), with the OpenSSL
/// context every `DTLSEndpoint` made from it shares. Browsers pin it through the SDP's a=fingerprint.
///
/// Sendable: the C context is only read after `init` (OpenSSL allows SSL_new on one SSL_CTX from many threads).
public final class DTLSIdentity: @unchecked Sendable {
    /// Longest validity accepted, in days.
    public static let maximumValidityDays = 3650

    let raw: OpaquePointer
    /// The certificate's SHA-256 fingerprint; `fingerprint.sdpValue` is the relay's a=fingerprint.
    public let fingerprint: DTLSFingerprint

    /// Makes a fresh key and certificate valid for `validityDays` days (from a day ago, for peers' clock skew).
    public init(validityDays: Int = 30) throws {
        guard (1...Self.maximumValidityDays).contains(validityDays) else {
            throw DTLSError.identityFailed(
                reason: "validity \(validityDays) days is outside 1...\(Self.maximumValidityDays)")
        }
        ERR_clear_error()
        guard let raw = parley_dtls_identity_new(Int32(validityDays)) else {
            throw DTLSError.identityFailed(reason: OpenSSLErrors.drain())
        }
        var digest = [UInt8](repeating: 0, count: 32)
        guard parley_dtls_identity_fingerprint(raw, &digest) == 1, let fingerprint = DTLSFingerprint(sha256: digest)
        else {
            parley_dtls_identity_free(raw)
            throw DTLSError.identityFailed(reason: "no SHA-256 digest of the certificate: \(OpenSSLErrors.drain())")
        }
        self.raw = raw
        self.fingerprint = fingerprint
    }

    deinit { parley_dtls_identity_free(raw) }
}

/// OpenSSL's thread-local error queue as text.
enum OpenSSLErrors {
    /// Every queued error as OpenSSL's "error:0A000410:SSL routines::..." strings joined by "; " (the queue is then
    /// empty), or "no OpenSSL error queued".
    static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "no OpenSSL error queued" : messages.joined(separator: "; ")
    }
}
