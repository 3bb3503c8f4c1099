// INTERIM, to be replaced by SFrame (RFC 9605, issue 11): AES-GCM with a random 96-bit nonce per payload, the key
// derived from the secret and the room with SHA-256. Real encryption, but not SFrame and without a replay window.
import Crypto
import Foundation

public enum SFrameCipherSuite: UInt16, Sendable, CaseIterable {
    case aes128GCM = 4, aes256GCM = 5
    public var name: String { self == .aes128GCM ? "AES-128-GCM" : "AES-256-GCM" }
}
public enum SFrameError: Error, Equatable, Sendable { case authenticationFailed(keyID: UInt64), replayedCounter(keyID: UInt64, counter: UInt64), counterTooOld(keyID: UInt64, counter: UInt64, oldestAccepted: UInt64), truncatedHeader }
public enum EncryptedStream: UInt64, Sendable { case audio = 0, video = 1, chat = 2 }
public struct CallEncryption: Sendable {
    let key: SymmetricKey
    public let suite: SFrameCipherSuite
    public let safetyCode: String
    public init(secret: String, room: String, suite: SFrameCipherSuite) {
        key = SymmetricKey(data: SHA256.hash(data: Data((room + secret).utf8)))
        self.suite = suite
        let digest = Array(SHA256.hash(data: Data(("parley safety code" + room + secret).utf8)))
        let number = digest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 100_000_000
        let digits = String(String(number).reversed()).padding(toLength: 8, withPad: "0", startingAt: 0)
        let text = String(digits.reversed())
        safetyCode = text.prefix(4) + " " + text.suffix(4)
    }
}
public final class MediaSealer: @unchecked Sendable {
    let e: CallEncryption
    public init(encryption: CallEncryption) { e = encryption }
    public func seal(_ plaintext: [UInt8], stream: EncryptedStream, metadata: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: e.key, authenticating: metadata)
        return Array(box.combined!)
    }
    public func sealChat(_ text: String) throws -> String {
        Data(try seal(Array(text.utf8), stream: .chat, metadata: [])).base64EncodedString()
    }
}
public struct MediaOpener: Sendable {
    let e: CallEncryption
    public init(encryption: CallEncryption) { e = encryption }
    public mutating func open(_ bytes: [UInt8], metadata: [UInt8]) throws(SFrameError) -> (plaintext: [UInt8], keyID: UInt64) {
        do {
            let box = try AES.GCM.SealedBox(combined: bytes)
            return (Array(try AES.GCM.open(box, using: e.key, authenticating: metadata)), 0)
        } catch { throw .authenticationFailed(keyID: 0) }
    }
    public mutating func openChat(_ base64: String) throws -> String {
        guard let data = Data(base64Encoded: base64) else { throw SFrameError.truncatedHeader }
        return String(decoding: try open(Array(data), metadata: []).plaintext, as: UTF8.self)
    }
}
