/// An SRTP protection profile that DTLS-SRTP negotiates (RFC 5764 §4.1.2, RFC 7714 §14.2).
public enum SRTPProfile: CaseIterable, Equatable, Sendable {
    /// AEAD_AES_128_GCM: 16-byte key, 12-byte salt, 16-byte tag (RFC 7714). Preferred.
    case aeadAES128GCM
    /// SRTP_AES128_CM_HMAC_SHA1_80: 16-byte key, 14-byte salt, 80-bit HMAC tag (RFC 3711). Every browser has it.
    case aes128CMHMACSHA1_80

    /// The name OpenSSL's use_srtp list uses.
    public var openSSLName: String {
        switch self {
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aes128CMHMACSHA1_80: "SRTP_AES128_CM_SHA1_80"
        }
    }

    /// The profile with this use_srtp identifier (RFC 5764 §4.1.2), if it is one of ours.
    init?(id: UInt) {
        switch id {
        case 0x0007: self = .aeadAES128GCM
        case 0x0001: self = .aes128CMHMACSHA1_80
        default: return nil
        }
    }

    /// Bytes of the master key.
    public var keyBytes: Int { 16 }
    /// Bytes of the master salt.
    public var saltBytes: Int {
        switch self {
        case .aeadAES128GCM: 12
        case .aes128CMHMACSHA1_80: 14
        }
    }
}

/// One direction's SRTP master key and salt, as libsrtp2 takes them: the key, then the salt.
public struct SRTPMasterKey: Equatable, Sendable {
    /// The master key (16 bytes for both profiles).
    public let key: [UInt8]
    /// The master salt (12 bytes for AES-GCM, 14 for AES-CM).
    public let salt: [UInt8]

    /// Creates a master key from its two parts.
    public init(key: [UInt8], salt: [UInt8]) {
        self.key = key
        self.salt = salt
    }

    /// Key followed by salt: libsrtp2's `srtp_policy_t.key`.
    public var keyAndSalt: [UInt8] { key + salt }
}

/// The SRTP keys a finished DTLS handshake exported: what this side protects with and what the peer protects with.
public struct SRTPKeys: Equatable, Sendable {
    /// The negotiated profile.
    public let profile: SRTPProfile
    /// The key this side protects its outgoing packets with.
    public let local: SRTPMasterKey
    /// The key the peer protects its packets with; this side unprotects with it.
    public let remote: SRTPMasterKey

    /// Creates the keys from their parts.
    public init(profile: SRTPProfile, local: SRTPMasterKey, remote: SRTPMasterKey) {
        self.profile = profile
        self.local = local
        self.remote = remote
    }

    /// The exporter label of RFC 5764 §4.2.
    static let exporterLabel = "EXTRACTOR-dtls_srtp"

    /// Bytes to export for `profile`: two keys and two salts.
    static func exportedBytes(for profile: SRTPProfile) -> Int { 2 * (profile.keyBytes + profile.saltBytes) }

    /// Splits the exported material per RFC 5764 §4.2 (client key, server key, client salt, server salt); the DTLS
    /// client's keys are `local` for the client and `remote` for the server.
    init(profile: SRTPProfile, exported material: [UInt8], isClient: Bool) {
        precondition(material.count == Self.exportedBytes(for: profile), "exported SRTP material has the wrong size")
        let keyBytes = profile.keyBytes
        let saltBytes = profile.saltBytes
        let client = SRTPMasterKey(
            key: Array(material[0..<keyBytes]),
            salt: Array(material[(2 * keyBytes)..<(2 * keyBytes + saltBytes)]))
        let server = SRTPMasterKey(
            key: Array(material[keyBytes..<(2 * keyBytes)]),
            salt: Array(material[(2 * keyBytes + saltBytes)..<(2 * keyBytes + 2 * saltBytes)]))
        self.init(profile: profile, local: isClient ? client : server, remote: isClient ? server : client)
    }
}
