import Crypto

/// MESSAGE-INTEGRITY's code: HMAC-SHA1 under the short-term password (RFC 8489 §14.5). Its own file so the fuzzer's
/// one-module build, which has no swift-crypto, can put a stand-in beside the parser.
enum STUNIntegrity {
    /// The 20-byte code of `bytes` under `key`.
    static func code(of bytes: [UInt8], key: [UInt8]) -> [UInt8] {
        Array(HMAC<Insecure.SHA1>.authenticationCode(for: bytes, using: SymmetricKey(data: key)))
    }

    /// Whether `code` is that of `bytes` under `key` (compared in constant time).
    static func isValid(_ code: [UInt8], of bytes: [UInt8], key: [UInt8]) -> Bool {
        HMAC<Insecure.SHA1>.isValidAuthenticationCode(code, authenticating: bytes, using: SymmetricKey(data: key))
    }
}
