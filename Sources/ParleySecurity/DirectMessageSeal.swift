import Crypto
import Foundation

// A direct message is sealed so the relay stores and forwards only ciphertext, and offline delivery still works
// (the recipient needs nothing from the sender at read time):
//
//   sealed = version (1) | ephemeral X25519 public key (32) | AES-256-GCM nonce (12) | ciphertext | tag (16)
//            | Ed25519 signature (64)
//
// key  = HKDF-SHA256(X25519(ephemeral, recipient.agreement), salt: ephemeral public | recipient.agreement,
//                    info: "parley dm v1" | 0 | sender | 0 | recipient | 0 | message id)
// AAD  = the same info bytes, so a ciphertext moved to another sender, recipient or id fails to open;
// signature = the sender's Ed25519 signature over everything before it and the info, so only the sender (not the
// relay, not anyone who knows the recipient's public key) can have written it.
// A fresh ephemeral key per message: no nonce is ever reused under one key.

/// Seals and opens direct messages between accounts.
public enum DirectMessageSeal {
    static let version: UInt8 = 1
    static let overhead = 1 + 32 + 12 + 16 + 64

    /// Why a sealed message does not open.
    public enum OpenError: Error, Equatable, Sendable, CustomStringConvertible {
        case tooShort(Int)
        case unknownVersion(UInt8)
        case badSignature
        case doesNotDecrypt
        case notText

        public var description: String {
            switch self {
            case .tooShort(let count): "a sealed message has at least \(overhead) bytes, this one \(count)"
            case .unknownVersion(let version): "sealed with version \(version), which this Parley does not know"
            case .badSignature: "the sender's signature does not verify: not written by the account it claims"
            case .doesNotDecrypt: "it does not decrypt with this account's key (sealed to another key, or altered)"
            case .notText: "it decrypts to bytes that are not UTF-8 text"
            }
        }
    }

    static func info(sender: String, recipient: String, id: String) -> [UInt8] {
        Array("parley dm v1".utf8) + [0] + Array(sender.utf8) + [0] + Array(recipient.utf8) + [0] + Array(id.utf8)
    }

    /// `text` from `sender` to the account `recipient` with `keys`, under the sender-chosen message `id`.
    public static func seal(
        _ text: String, from sender: AccountIdentity, to recipient: String, keys: AccountKeys,
        id: String
    ) -> [UInt8] {
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let ephemeralPublic = Array(ephemeral.publicKey.rawRepresentation)
        let info = info(sender: sender.name, recipient: recipient, id: id)
        // The keys were checked when `AccountKeys` was made; agreement and AES-GCM cannot fail on valid inputs.
        let recipientKey = try! Curve25519.KeyAgreement.PublicKey(rawRepresentation: keys.agreement)
        let shared = try! ephemeral.sharedSecretFromKeyAgreement(with: recipientKey)
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeralPublic + keys.agreement, sharedInfo: info, outputByteCount: 32)
        let box = try! AES.GCM.seal(Array(text.utf8), using: key, authenticating: info)
        let body = [version] + ephemeralPublic + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        return body + sender.sign(body + info)
    }

    /// Opens a message `recipient` received from `sender` (whose public keys are `senderKeys`) under `id`.
    public static func open(
        _ sealed: [UInt8], by recipient: AccountIdentity, from sender: String,
        senderKeys: AccountKeys, id: String
    ) throws(OpenError) -> String {
        guard sealed.count >= overhead else { throw .tooShort(sealed.count) }
        guard sealed[0] == version else { throw .unknownVersion(sealed[0]) }
        let info = info(sender: sender, recipient: recipient.name, id: id)
        let body = Array(sealed[..<(sealed.count - 64)])
        let signature = Array(sealed[(sealed.count - 64)...])
        guard senderKeys.verifies(signature, of: body + info) else { throw .badSignature }
        let ephemeralPublic = Array(body[1..<33])
        guard let ephemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralPublic),
            let shared = try? recipient.agreementKey.sharedSecretFromKeyAgreement(with: ephemeral)
        else { throw .doesNotDecrypt }
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeralPublic + recipient.keys.agreement, sharedInfo: info,
            outputByteCount: 32)
        guard let nonce = try? AES.GCM.Nonce(data: body[33..<45]),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: body[45..<(body.count - 16)],
                tag: body[(body.count - 16)...]),
            let plain = try? AES.GCM.open(box, using: key, authenticating: info)
        else { throw .doesNotDecrypt }
        guard let text = String(validating: plain, as: UTF8.self) else { throw .notText }
        return text
    }
}
