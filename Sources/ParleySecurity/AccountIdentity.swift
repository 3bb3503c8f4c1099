import Crypto
import Foundation
import ParleyBytes

// An account is a name bound to two public keys on first use (like ssh's trust on first use, but held by the relay):
// an Ed25519 key that proves the account (it signs the relay's login challenge and every direct message) and an
// X25519 key that others seal direct messages to. The private halves never leave the identity file
// (~/.config/parley/identity, mode 600) except through an explicit export. No password is stored anywhere.

/// The public half of an account: what the relay binds a name to and what senders seal direct messages to.
public struct AccountKeys: Sendable, Equatable, Hashable, Codable {
    /// Ed25519 public key (32 bytes) that verifies the account's signatures.
    public var signing: [UInt8]
    /// X25519 public key (32 bytes) that direct messages are sealed to.
    public var agreement: [UInt8]

    /// Keys from raw bytes; throws when either is not a valid 32-byte public key.
    public init(signing: [UInt8], agreement: [UInt8]) throws(AccountError) {
        guard (try? Curve25519.Signing.PublicKey(rawRepresentation: signing)) != nil else {
            throw .badKey("the signing key must be 32 bytes of an Ed25519 public key, got \(signing.count) bytes")
        }
        guard (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: agreement)) != nil else {
            throw .badKey("the agreement key must be 32 bytes of an X25519 public key, got \(agreement.count) bytes")
        }
        self.signing = signing
        self.agreement = agreement
    }

    /// Whether `signature` is this account's signature of `message`.
    public func verifies(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: signing) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    /// An Ed25519 signature from its base64 text, nil unless it is base64 of exactly 64 bytes.
    public static func signature(base64 text: String) -> [UInt8]? {
        guard text.utf8.count <= 128, let data = Data(base64Encoded: text), data.count == 64 else { return nil }
        return Array(data)
    }

    /// A short fingerprint to compare by voice: SHA-256 of both keys, first 10 bytes as 5 groups of 4 hex digits.
    public var fingerprint: String {
        let hex = Hex.encode(Array(SHA256.hash(data: signing + agreement)).prefix(10))
        return stride(from: 0, to: hex.count, by: 4).map { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return String(hex[start..<hex.index(start, offsetBy: 4)])
        }.joined(separator: " ")
    }
}

/// What can go wrong with an account's keys or its identity file, in words that say what to do.
public enum AccountError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A public key that is not one.
    case badKey(String)
    /// An identity file (or export) that does not parse: line and reason.
    case badIdentityFile(line: Int, reason: String)
    /// A signature that does not verify.
    case badSignature(String)

    public var description: String {
        switch self {
        case .badKey(let reason): reason
        case .badIdentityFile(let line, let reason): "identity line \(line): \(reason)"
        case .badSignature(let reason): reason
        }
    }
}

/// The private identity of one account on this computer.
public struct AccountIdentity: Sendable {
    /// The account name (checked by the caller with the display-name rules).
    public let name: String
    let signingKey: Curve25519.Signing.PrivateKey
    let agreementKey: Curve25519.KeyAgreement.PrivateKey

    /// A new identity with fresh keys.
    public static func create(name: String) -> AccountIdentity {
        AccountIdentity(name: name, signingKey: .init(), agreementKey: .init())
    }

    init(name: String, signingKey: Curve25519.Signing.PrivateKey, agreementKey: Curve25519.KeyAgreement.PrivateKey) {
        self.name = name
        self.signingKey = signingKey
        self.agreementKey = agreementKey
    }

    /// The public half.
    public var keys: AccountKeys {
        // Both come from real private keys, so they are valid public keys.
        try! AccountKeys(
            signing: Array(signingKey.publicKey.rawRepresentation),
            agreement: Array(agreementKey.publicKey.rawRepresentation))
    }

    /// Signs `message` (a login challenge, a sealed direct message).
    public func sign(_ message: [UInt8]) -> [UInt8] {
        // Ed25519 signing only fails on a broken key, which a parsed or created identity cannot be.
        Array(try! signingKey.signature(for: message))
    }

    /// `sign`, as base64 (how signatures travel in JSON).
    public func signatureText(_ message: [UInt8]) -> String {
        Data(sign(message)).base64EncodedString()
    }

    /// What the account proves at login: its signature over the relay's challenge bound to the name, so a signature
    /// for one relay's challenge or one name is useless for another.
    public static func loginMessage(name: String, challenge: [UInt8]) -> [UInt8] {
        Array("parley login v1\n\(name)\n".utf8) + challenge
    }

    /// What an account proves when it joins a call as itself: its signature over the call connection's challenge,
    /// bound to the room and display name as sent, so it is worth nothing on another connection, room or name.
    public static func joinMessage(account: String, room: String, name: String, challenge: [UInt8]) -> [UInt8] {
        Array("parley join v1\n\(account)\n\(room)\n\(name)\n".utf8) + challenge
    }

    /// The identity file's text (also what `parley account export` writes): the name and both private keys.
    public func encoded() -> String {
        """
        parley-identity 1
        name \(name)
        signing \(Data(signingKey.rawRepresentation).base64EncodedString())
        agreement \(Data(agreementKey.rawRepresentation).base64EncodedString())

        """
    }

    /// Parses an identity file or an export; throws naming the line and what is wrong.
    public init(parsing text: String) throws(AccountError) {
        var fields: [String: (value: String, line: Int)] = [:]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first?.trimmingCharacters(in: .whitespaces) == "parley-identity 1" else {
            throw .badIdentityFile(line: 1, reason: "the first line must be \"parley-identity 1\"")
        }
        for (index, raw) in lines.enumerated().dropFirst() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty else { continue }
            guard let space = line.firstIndex(of: " ") else {
                throw .badIdentityFile(line: index + 1, reason: "expected \"KEY VALUE\", got \"\(line.prefix(40))\"")
            }
            let key = String(line[..<space])
            let value = String(line[line.index(after: space)...])
            guard ["name", "signing", "agreement"].contains(key) else {
                throw .badIdentityFile(line: index + 1, reason: "unknown field \"\(key.prefix(40))\"")
            }
            guard fields[key] == nil else { throw .badIdentityFile(line: index + 1, reason: "\(key) appears twice") }
            fields[key] = (value, index + 1)
        }
        func require(_ key: String) throws(AccountError) -> (value: String, line: Int) {
            guard let field = fields[key] else {
                throw .badIdentityFile(line: lines.count, reason: "the \(key) line is missing")
            }
            return field
        }
        let name = try require("name")
        guard !name.value.isEmpty else { throw .badIdentityFile(line: name.line, reason: "the name is empty") }
        func key(_ field: String) throws(AccountError) -> Data {
            let entry = try require(field)
            guard let data = Data(base64Encoded: entry.value), data.count == 32 else {
                throw .badIdentityFile(line: entry.line, reason: "the \(field) key must be 32 bytes in base64")
            }
            return data
        }
        let signing = try key("signing")
        let agreement = try key("agreement")
        guard let signingKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: signing),
            let agreementKey = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: agreement)
        else { throw .badIdentityFile(line: 1, reason: "the keys are not Curve25519 private keys") }
        self.init(name: name.value, signingKey: signingKey, agreementKey: agreementKey)
    }
}
