import Crypto
import Foundation
import _CryptoExtras

// How Parley keys SFrame from a room secret:
//
//   master     = PBKDF2-HMAC-SHA256(secret, salt = "parley room key v1" 0x00 room, 210,000 rounds, 32 bytes)
//   base_key   = HKDF-Expand-SHA256(master, "parley sender key v1" || KID (8 bytes), 32 bytes)   one per key id
//   KID        = sender id (46 random bits, new for every sealer) << 2 | stream (audio 0, video 1, chat 2)
//   safety     = HKDF-Expand-SHA256(master, "parley safety code v1" || suite, 4 bytes) mod 10^8, as "1234 5678"
//
// Key ids are picked at random by each sender rather than assigned by the relay on purpose: a relay-assigned id
// comes back after a member leaves and rejoins, and its counters would start again from 0 under the same key,
// reusing nonces. A fresh random id per sealer (per call) never does; two members picking the same 46-bit id in one
// room is a 2^-46-per-pair event. The relay never sees a key: only the secret's holders can derive one.

/// What is wrong with a room secret.
public enum CallEncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Shorter than `minimumSecretCharacters`.
    case secretTooShort(characters: Int, minimum: Int)

    public var description: String {
        switch self {
        case .secretTooShort(0, let minimum):
            "the room secret is empty; give one of at least \(minimum) characters that every member knows"
        case .secretTooShort(let characters, let minimum):
            "the room secret has \(characters) characters; it needs at least \(minimum) (a phrase is easiest to share by voice)"
        }
    }
}

/// Which of a sender's streams a payload belongs to: part of its key id, so each has its own counter.
public enum EncryptedStream: UInt64, Sendable, CaseIterable {
    case audio = 0
    case video = 1
    case chat = 2
}

/// The room's encryption: the master key derived from the secret and the room, and the suite.
public struct CallEncryption: Sendable {
    /// Fewest characters a secret may have.
    public static let minimumSecretCharacters = 8
    /// PBKDF2 rounds for the master key (the least swift-crypto's checked API accepts; about 0.1 s here).
    public static let rounds = 210_000

    /// The cipher suite.
    public let suite: SFrameCipherSuite
    /// Eight digits ("1234 5678") that are equal for members with the same secret, room and suite: compared by
    /// voice, they show nobody joined with a different key.
    public let safetyCode: String
    let master: SymmetricKey

    /// Derives the room's master key (takes about a tenth of a second: the secret is stretched).
    public init(secret: String, room: String, suite: SFrameCipherSuite) throws(CallEncryptionError) {
        try Self.checkSecret(secret)
        let salt = Array("parley room key v1".utf8) + [0] + Array(room.utf8)
        // A fixed, valid round count and output size: the checked derivation cannot fail.
        master = try! KDF.Insecure.PBKDF2.deriveKey(
            from: Array(secret.utf8), salt: salt, using: .sha256, outputByteCount: 32, rounds: Self.rounds)
        self.suite = suite
        let code =
            HKDF<SHA256>.expand(
                pseudoRandomKey: master,
                info: Array("parley safety code v1".utf8) + withUnsafeBytes(of: suite.rawValue.bigEndian, Array.init),
                outputByteCount: 4
            ).bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 100_000_000
        let digits = String(repeating: "0", count: 8 - String(code).count) + String(code)
        safetyCode = digits.prefix(4) + " " + digits.suffix(4)
    }

    /// Throws when `secret` is too short to be a room secret (checked before the slow derivation, so a form or a
    /// prompt can ask again at once).
    public static func checkSecret(_ secret: String) throws(CallEncryptionError) {
        guard secret.count >= minimumSecretCharacters else {
            throw .secretTooShort(characters: secret.count, minimum: minimumSecretCharacters)
        }
    }

    /// The SFrame key of a key id.
    func key(_ keyID: UInt64) -> SFrameKey {
        let base = HKDF<SHA256>.expand(
            pseudoRandomKey: master,
            info: Array("parley sender key v1".utf8) + withUnsafeBytes(of: keyID.bigEndian, Array.init),
            outputByteCount: 32)
        return SFrameKey(baseKey: base.bytes, keyID: keyID, suite: suite)
    }
}

/// Seals this member's media and chat: one SFrame sender per stream under a random sender id. Thread-safe (audio
/// and video are sealed on different threads).
public final class MediaSealer: Sendable {
    /// The random id in this member's key ids.
    public let senderID: UInt64
    private let senders: LockedBox<[EncryptedStream: SFrameSender]>
    static let chatMetadata = Array("parley chat v1".utf8)

    /// A sealer with a fresh random sender id.
    public init(encryption: CallEncryption, senderID: UInt64 = UInt64.random(in: 0..<(1 << 46))) {
        self.senderID = senderID
        var senders: [EncryptedStream: SFrameSender] = [:]
        for stream in EncryptedStream.allCases {
            senders[stream] = SFrameSender(key: encryption.key(senderID << 2 | stream.rawValue))
        }
        self.senders = LockedBox(senders)
    }

    /// Header || ciphertext || tag for one payload of `stream`; `metadata` (the clear RTP header and descriptor) is
    /// authenticated with it.
    public func seal(_ plaintext: [UInt8], stream: EncryptedStream, metadata: [UInt8]) throws(SFrameError) -> [UInt8] {
        let result: Result<[UInt8], SFrameError> = senders.withLock { senders in
            Result { () throws(SFrameError) in try senders[stream]!.seal(plaintext, metadata: metadata) }
        }
        return try result.get()
    }

    /// A chat line sealed and in base64, as signaling carries it.
    public func sealChat(_ text: String) throws(SFrameError) -> String {
        Data(try seal(Array(text.utf8), stream: .chat, metadata: Self.chatMetadata)).base64EncodedString()
    }
}

/// Opens the room's media and chat, deriving each sender's key the first time its key id appears.
public struct MediaOpener: Sendable {
    private let encryption: CallEncryption
    private var receiver = SFrameReceiver(limit: 256)

    /// An opener for the room's key.
    public init(encryption: CallEncryption) {
        self.encryption = encryption
    }

    /// The plaintext of one SFrame payload and its key id.
    public mutating func open(_ bytes: [UInt8], metadata: [UInt8]) throws(SFrameError) -> (
        plaintext: [UInt8], keyID: UInt64
    ) {
        let encryption = self.encryption
        let opened = try receiver.open(bytes, metadata: metadata, keyForUnknownID: { encryption.key($0) })
        return (opened.plaintext, opened.header.keyID)
    }

    /// The text of a sealed chat line (base64 SFrame).
    public mutating func openChat(_ base64: String) throws -> String {
        guard let data = Data(base64Encoded: base64) else { throw ChatSealError.notBase64 }
        let plaintext = try open(Array(data), metadata: MediaSealer.chatMetadata).plaintext
        guard let text = String(validating: plaintext, as: UTF8.self) else { throw ChatSealError.notText }
        return text
    }
}

/// A sealed chat line that is not even well-formed.
public enum ChatSealError: Error, Equatable, Sendable, CustomStringConvertible {
    case notBase64, notText

    public var description: String {
        switch self {
        case .notBase64: "the sealed chat line is not base64"
        case .notText: "the chat line decrypted to bytes that are not UTF-8 text"
        }
    }
}
