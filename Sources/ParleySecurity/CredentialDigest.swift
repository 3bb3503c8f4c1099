import Crypto
import ParleyBytes

/// SHA-256 of a credential, as hex: what the relay keeps of a host's media credential across a restart, so the
/// credential itself (which binds media) is never written down.
public enum CredentialDigest {
    /// The digest of `credential`'s text, case folded (hex credentials arrive in either case).
    public static func hex(of credential: String) -> String {
        Hex.encode(Array(SHA256.hash(data: Array(credential.lowercased().utf8))))
    }
}
