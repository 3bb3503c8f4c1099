import CSRTP

/// Why libsrtp2 refused a packet or a session, with the packet sizes or libsrtp2's status name.
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A packet longer than the session's limit, refused before libsrtp2 sees it.
    case packetTooLarge(bytes: Int, limit: Int)
    /// A packet shorter than an RTP (12) or RTCP (8) header.
    case packetTooShort(bytes: Int, minimum: Int)
    /// The authentication tag did not verify (srtp_err_status_auth_fail): tampered or the wrong key.
    case authenticationFailed(operation: String)
    /// The packet index was seen before or is too old for the replay window (srtp_err_status_replay_fail/_old).
    case replayed(operation: String)
    /// Any other libsrtp2 status, by its srtp_err_status_ name.
    case library(operation: String, status: String)

    public var description: String {
        switch self {
        case .packetTooLarge(let bytes, let limit): "SRTP packet \(bytes) bytes exceeds limit \(limit)"
        case .packetTooShort(let bytes, let minimum): "SRTP packet \(bytes) bytes is shorter than \(minimum)"
        case .authenticationFailed(let operation): "\(operation): authentication failed (srtp_err_status_auth_fail)"
        case .replayed(let operation): "\(operation): replayed packet (srtp_err_status_replay_fail)"
        case .library(let operation, let status): "\(operation) failed: \(status)"
        }
    }
}

/// One browser's SRTP (RFC 3711, RFC 7714), owning two libsrtp2 sessions: one protecting what this side sends with
/// the local key, one unprotecting what the peer sends with the remote key, for any SSRC.
///
/// Not Sendable: libsrtp2 sessions keep replay windows and rollover counters; one owner makes every call.
public final class SRTPSession {
    /// The largest packet accepted in either direction (before protection adds its tag).
    public static let defaultMaximumPacketBytes = 1500

    /// libsrtp2's process-wide srtp_init, run once by whichever session comes first (Swift's `static let` is
    /// initialised once, thread-safely). Holds the status's raw value.
    private static let initStatus: UInt32 = srtp_init().rawValue

    /// The profile both sessions use.
    public let profile: SRTPProfile
    /// The packet size limit this session enforces.
    public let maximumPacketBytes: Int
    private let outbound: srtp_t
    private let inbound: srtp_t
    private var buffer: [UInt8]

    /// Sessions for `keys` (from `DTLSEndpoint.srtpKeys`), refusing packets over `maximumPacketBytes`.
    public convenience init(keys: SRTPKeys, maximumPacketBytes: Int = defaultMaximumPacketBytes) throws {
        try self.init(
            profile: keys.profile, local: keys.local, remote: keys.remote, maximumPacketBytes: maximumPacketBytes)
    }

    /// Sessions for `profile`: outgoing packets protected with `local`, incoming ones checked with `remote`.
    public init(
        profile: SRTPProfile, local: SRTPMasterKey, remote: SRTPMasterKey,
        maximumPacketBytes: Int = defaultMaximumPacketBytes
    ) throws {
        let status = srtp_err_status_t(rawValue: Self.initStatus)
        guard status == srtp_err_status_ok else {
            throw SRTPError.library(operation: "srtp_init", status: Self.name(status))
        }
        for key in [local, remote] {
            guard key.key.count == profile.keyBytes, key.salt.count == profile.saltBytes else {
                throw SRTPError.library(
                    operation: "srtp_create",
                    status: "key \(key.key.count)+\(key.salt.count) bytes, \(profile) needs "
                        + "\(profile.keyBytes)+\(profile.saltBytes)")
            }
        }
        self.profile = profile
        self.maximumPacketBytes = maximumPacketBytes
        self.outbound = try Self.session(profile: profile, key: local, direction: ssrc_any_outbound)
        do {
            self.inbound = try Self.session(profile: profile, key: remote, direction: ssrc_any_inbound)
        } catch {
            srtp_dealloc(outbound)
            throw error
        }
        // Protection appends a tag (and for SRTCP an index) after the packet: libsrtp2 may write up to
        // SRTP_MAX_TRAILER_LEN (144) bytes past it, so the work buffer has that room.
        self.buffer = [UInt8](repeating: 0, count: maximumPacketBytes + 144)
    }

    deinit {
        srtp_dealloc(outbound)
        srtp_dealloc(inbound)
    }

    /// An RTP packet made SRTP (the payload encrypted, the tag appended).
    public func protectRTP(_ packet: [UInt8]) throws -> [UInt8] {
        try run(packet, minimum: 12, operation: "srtp_protect") { srtp_protect(outbound, $0, $1) }
    }

    /// An RTCP packet made SRTCP (encrypted, E flag and index, tag).
    public func protectRTCP(_ packet: [UInt8]) throws -> [UInt8] {
        try run(packet, minimum: 8, operation: "srtp_protect_rtcp") { srtp_protect_rtcp(outbound, $0, $1) }
    }

    /// The RTP packet inside an SRTP one, after its tag and replay window checks.
    public func unprotectRTP(_ packet: [UInt8]) throws -> [UInt8] {
        try run(packet, minimum: 12, operation: "srtp_unprotect") { srtp_unprotect(inbound, $0, $1) }
    }

    /// The RTCP packet inside an SRTCP one, after its tag and replay window checks.
    public func unprotectRTCP(_ packet: [UInt8]) throws -> [UInt8] {
        try run(packet, minimum: 8, operation: "srtp_unprotect_rtcp") { srtp_unprotect_rtcp(inbound, $0, $1) }
    }

    private func run(
        _ packet: [UInt8], minimum: Int, operation: String,
        _ call: (UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t
    ) throws -> [UInt8] {
        guard packet.count <= maximumPacketBytes else {
            throw SRTPError.packetTooLarge(bytes: packet.count, limit: maximumPacketBytes)
        }
        guard packet.count >= minimum else { throw SRTPError.packetTooShort(bytes: packet.count, minimum: minimum) }
        var length = Int32(packet.count)
        let status = buffer.withUnsafeMutableBytes { bytes in
            packet.withUnsafeBytes { bytes.copyMemory(from: $0) }
            return call(bytes.baseAddress!, &length)
        }
        switch status {
        case srtp_err_status_ok: return Array(buffer[0..<Int(length)])
        case srtp_err_status_auth_fail: throw SRTPError.authenticationFailed(operation: operation)
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: throw SRTPError.replayed(operation: operation)
        default: throw SRTPError.library(operation: operation, status: Self.name(status))
        }
    }

    private static func session(profile: SRTPProfile, key: SRTPMasterKey, direction: srtp_ssrc_type_t) throws
        -> srtp_t
    {
        var policy = srtp_policy_t()
        switch profile {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aes128CMHMACSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        }
        policy.ssrc.type = direction
        policy.window_size = 1024  // Video bursts reorder more than libsrtp2's default of 128 allows.
        policy.allow_repeat_tx = 0
        var keyAndSalt = key.keyAndSalt
        var session: srtp_t?
        // srtp_create copies the key; the buffer only has to live through the call.
        let status = keyAndSalt.withUnsafeMutableBufferPointer { bytes in
            policy.key = bytes.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok, let session else {
            throw SRTPError.library(operation: "srtp_create", status: name(status))
        }
        return session
    }

    /// libsrtp2's name for a status, "srtp_err_status_auth_fail" and so on.
    static func name(_ status: srtp_err_status_t) -> String {
        let names = [
            "ok", "fail", "bad_param", "alloc_fail", "dealloc_fail", "init_fail", "terminus", "auth_fail",
            "cipher_fail", "replay_fail", "replay_old", "algo_fail", "no_such_op", "no_ctx", "cant_check",
            "key_expired", "socket_err", "signal_err", "nonce_bad", "read_fail", "write_fail", "parse_err",
            "encode_err", "semaphore_err", "pfkey_err", "bad_mki", "pkt_idx_old", "pkt_idx_adv",
        ]
        let raw = Int(status.rawValue)
        return raw < names.count ? "srtp_err_status_" + names[raw] : "srtp_err_status \(raw)"
    }
}
