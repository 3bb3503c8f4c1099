// Room passwords: the relay keeps a stretched verifier; a member proves knowledge of it with an HMAC of a one-use
// challenge, so neither the password nor anything replayable crosses the network.
import Crypto
import Foundation
import _CryptoExtras

public enum RoomPassword {
    /// PBKDF2 rounds for the verifier (as for the room key: about 0.1 s, once per join).
    public static let rounds = 210_000

    /// What the relay keeps instead of the password: PBKDF2-HMAC-SHA256 of it, salted with the room, so a leaked
    /// rooms file or relay memory costs a guesser 210,000 HMACs per guess per room.
    public static func verifier(password: String, room: String) -> [UInt8] {
        let salt = Array("parley room password v1".utf8) + [0] + Array(room.utf8)
        // A fixed, valid round count and output size: the checked derivation cannot fail.
        let key = try! KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds)
        return key.withUnsafeBytes { Array($0) }
    }
    public static func proof(verifier: [UInt8], challenge: [UInt8], room: String, name: String) -> [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(
                for: challenge + Array(room.utf8) + [0] + Array(name.utf8), using: SymmetricKey(data: verifier)))
    }
    public static func isValid(proof: [UInt8], verifier: [UInt8], challenge: [UInt8], room: String, name: String)
        -> Bool
    {
        HMAC<SHA256>.isValidAuthenticationCode(
            proof, authenticating: challenge + Array(room.utf8) + [0] + Array(name.utf8),
            using: SymmetricKey(data: verifier))
    }
}
