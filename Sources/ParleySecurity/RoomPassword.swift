// Room passwords: verifier = SHA-256 of room and password (interim: issue 11 asks for a stretched KDF), proof = HMAC-SHA256.
import Crypto
import Foundation
public enum RoomPassword {
    public static func verifier(password: String, room: String) -> [UInt8] {
        Array(SHA256.hash(data: Data((room + "\u{0}" + password).utf8)))
    }
    public static func proof(verifier: [UInt8], challenge: [UInt8], room: String, name: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: challenge + Array(room.utf8) + [0] + Array(name.utf8), using: SymmetricKey(data: verifier)))
    }
    public static func isValid(proof: [UInt8], verifier: [UInt8], challenge: [UInt8], room: String, name: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(proof, authenticating: challenge + Array(room.utf8) + [0] + Array(name.utf8), using: SymmetricKey(data: verifier))
    }
}
