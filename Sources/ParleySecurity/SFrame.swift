import Crypto
import Foundation

// SFrame (RFC 9605): one AEAD-sealed payload per media frame or packet, with a short header naming the key (KID) and
// a per-key counter (CTR) from which the nonce is made. The header, and whatever metadata the application adds, is
// authenticated but not encrypted:
//
//    0 1 2 3 4 5 6 7
//   +-+-+-+-+-+-+-+-+------------+------------+--------------------------+---------+
//   |X|  K  |Y|  C  | KID (0-8)  | CTR (0-8)  | ciphertext               | tag     |
//   +-+-+-+-+-+-+-+-+------------+------------+--------------------------+---------+
//
// X=0: K is the KID itself (0-7); X=1: the KID follows in K+1 bytes. Y and C do the same for the counter.

/// The SFrame cipher suites Parley offers (RFC 9605 §4.5): AES-GCM with a 128-bit tag.
public enum SFrameCipherSuite: UInt16, Sendable, CaseIterable {
    /// AES_128_GCM_SHA256_128.
    case aes128GCM = 4
    /// AES_256_GCM_SHA512_128.
    case aes256GCM = 5

    /// The name users see and the relay compares ("AES-128-GCM").
    public var name: String { self == .aes128GCM ? "AES-128-GCM" : "AES-256-GCM" }
    /// AEAD key size (Nk), bytes.
    public var keyBytes: Int { self == .aes128GCM ? 16 : 32 }
    /// AEAD nonce size (Nn), bytes.
    public var nonceBytes: Int { 12 }
    /// Authentication tag size (Nt), bytes.
    public var tagBytes: Int { 16 }
}

/// Why an SFrame payload was not produced or not accepted.
public enum SFrameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the header says it has.
    case truncatedHeader(needed: Int, had: Int)
    /// After the header, fewer bytes than the authentication tag.
    case truncatedCiphertext(keyID: UInt64, bytes: Int, tagBytes: Int)
    /// No key with this id is known.
    case unknownKeyID(UInt64)
    /// This counter was already accepted under this key: a replay (or a duplicate).
    case replayedCounter(keyID: UInt64, counter: UInt64)
    /// The counter is older than the replay window still remembers.
    case counterTooOld(keyID: UInt64, counter: UInt64, oldestAccepted: UInt64)
    /// The tag does not match: another key, or altered ciphertext, header or metadata.
    case authenticationFailed(keyID: UInt64)
    /// The sender used every counter its key allows; it needs a new key id.
    case counterExhausted(keyID: UInt64)
    /// A video frame shorter than the bytes it keeps clear (a VP8 keyframe's 10-byte header) and the tag.
    case frameTooShort(bytes: Int, needed: Int)

    public var description: String {
        switch self {
        case .truncatedHeader(let needed, let had):
            "SFrame header needs \(needed) bytes but the payload has \(had)"
        case .truncatedCiphertext(let keyID, let bytes, let tagBytes):
            "SFrame payload under key \(keyID) has \(bytes) bytes after its header, less than the \(tagBytes)-byte tag"
        case .unknownKeyID(let keyID):
            "SFrame key id \(keyID) is not known here"
        case .replayedCounter(let keyID, let counter):
            "SFrame counter \(counter) under key \(keyID) was already accepted (a replay or duplicate)"
        case .counterTooOld(let keyID, let counter, let oldest):
            "SFrame counter \(counter) under key \(keyID) is older than the replay window (oldest accepted \(oldest))"
        case .authenticationFailed(let keyID):
            "SFrame payload under key \(keyID) failed authentication (another secret, or altered on the way)"
        case .counterExhausted(let keyID):
            "SFrame key \(keyID) has used all its counters; a new key id is needed"
        case .frameTooShort(let bytes, let needed):
            "a sealed video frame of \(bytes) bytes is too short: it needs at least \(needed)"
        }
    }
}

/// An SFrame header: which key, which counter.
public struct SFrameHeader: Equatable, Sendable {
    /// Key id.
    public var keyID: UInt64
    /// Counter: never repeats under one key.
    public var counter: UInt64

    /// A header.
    public init(keyID: UInt64, counter: UInt64) {
        self.keyID = keyID
        self.counter = counter
    }

    /// The shortest encoding (RFC 9605 §4.3).
    public var encoded: [UInt8] {
        func field(_ value: UInt64) -> (bits: UInt8, bytes: [UInt8]) {
            if value < 8 { return (UInt8(value), []) }
            let length = (64 - value.leadingZeroBitCount + 7) / 8
            let bytes = (0..<length).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
            return (0x8 | UInt8(length - 1), bytes)
        }
        let kid = field(keyID)
        let ctr = field(counter)
        return [kid.bits << 4 | ctr.bits] + kid.bytes + ctr.bytes
    }

    /// Reads a header from the front of `bytes`; also returns its length.
    public static func parse(_ bytes: some Collection<UInt8>) throws(SFrameError) -> (header: SFrameHeader, length: Int)
    {
        guard let config = bytes.first else { throw .truncatedHeader(needed: 1, had: 0) }
        let kidBytes = config & 0x80 != 0 ? Int((config >> 4) & 0x7) + 1 : 0
        let ctrBytes = config & 0x08 != 0 ? Int(config & 0x7) + 1 : 0
        let length = 1 + kidBytes + ctrBytes
        guard bytes.count >= length else { throw .truncatedHeader(needed: length, had: bytes.count) }
        let rest = Array(bytes.dropFirst().prefix(kidBytes + ctrBytes))
        func number(_ slice: ArraySlice<UInt8>) -> UInt64 { slice.reduce(0) { $0 << 8 | UInt64($1) } }
        let keyID = kidBytes == 0 ? UInt64((config >> 4) & 0x7) : number(rest[0..<kidBytes])
        let counter = ctrBytes == 0 ? UInt64(config & 0x7) : number(rest[kidBytes...])
        return (SFrameHeader(keyID: keyID, counter: counter), length)
    }
}

/// The AEAD key and salt of one key id, derived from its base key (RFC 9605 §4.4.2).
public struct SFrameKey: Sendable {
    /// Key id.
    public let keyID: UInt64
    /// Cipher suite.
    public let suite: SFrameCipherSuite
    /// sframe_key.
    public let key: [UInt8]
    /// sframe_salt.
    public let salt: [UInt8]

    /// Derives key and salt: HKDF-Extract with an empty salt, then HKDF-Expand with the RFC's labels followed by
    /// the KID (8 bytes) and the cipher suite (2 bytes), big-endian.
    public init(baseKey: [UInt8], keyID: UInt64, suite: SFrameCipherSuite) {
        let context =
            withUnsafeBytes(of: keyID.bigEndian, Array.init) + withUnsafeBytes(of: suite.rawValue.bigEndian, Array.init)
        let keyLabel = Array("SFrame 1.0 Secret key ".utf8) + context
        let saltLabel = Array("SFrame 1.0 Secret salt ".utf8) + context
        let input = SymmetricKey(data: baseKey)
        switch suite {
        case .aes128GCM:
            let secret = HKDF<SHA256>.extract(inputKeyMaterial: input, salt: [UInt8]())
            key = HKDF<SHA256>.expand(pseudoRandomKey: secret, info: keyLabel, outputByteCount: suite.keyBytes).bytes
            salt =
                HKDF<SHA256>.expand(pseudoRandomKey: secret, info: saltLabel, outputByteCount: suite.nonceBytes).bytes
        case .aes256GCM:
            let secret = HKDF<SHA512>.extract(inputKeyMaterial: input, salt: [UInt8]())
            key = HKDF<SHA512>.expand(pseudoRandomKey: secret, info: keyLabel, outputByteCount: suite.keyBytes).bytes
            salt =
                HKDF<SHA512>.expand(pseudoRandomKey: secret, info: saltLabel, outputByteCount: suite.nonceBytes).bytes
        }
        self.keyID = keyID
        self.suite = suite
    }

    /// The nonce for a counter: the salt XOR the counter, right-aligned (§4.4.3).
    func nonce(_ counter: UInt64) -> [UInt8] {
        var nonce = salt
        for index in 0..<8 {
            nonce[nonce.count - 1 - index] ^= UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index)))
        }
        return nonce
    }

    /// Header || ciphertext || tag; the additional data is header || metadata.
    func seal(_ plaintext: [UInt8], counter: UInt64, metadata: [UInt8]) throws(SFrameError) -> [UInt8] {
        let header = SFrameHeader(keyID: keyID, counter: counter).encoded
        do {
            let box = try AES.GCM.seal(
                plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce(counter)),
                authenticating: header + metadata)
            return header + box.ciphertext + box.tag
        } catch {
            throw .authenticationFailed(keyID: keyID)  // unreachable with a well-formed key and nonce
        }
    }

    /// The plaintext of ciphertext || tag that came after `header`.
    func open(_ body: ArraySlice<UInt8>, header: [UInt8], counter: UInt64, metadata: [UInt8]) throws(SFrameError)
        -> [UInt8]
    {
        guard body.count >= suite.tagBytes else {
            throw .truncatedCiphertext(keyID: keyID, bytes: body.count, tagBytes: suite.tagBytes)
        }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce(counter)),
                ciphertext: body.dropLast(suite.tagBytes), tag: body.suffix(suite.tagBytes))
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: header + metadata))
        } catch {
            throw .authenticationFailed(keyID: keyID)
        }
    }
}

/// One sender's key id and its counter, which never repeats.
public struct SFrameSender: Sendable {
    /// The key this sender seals with.
    public let key: SFrameKey
    /// The next counter.
    public private(set) var counter: UInt64 = 0

    /// A sender starting at counter 0.
    public init(key: SFrameKey) {
        self.key = key
    }

    /// Header || ciphertext || tag for `plaintext`, with `metadata` authenticated alongside.
    public mutating func seal(_ plaintext: [UInt8], metadata: [UInt8]) throws(SFrameError) -> [UInt8] {
        guard counter < UInt64.max else { throw .counterExhausted(keyID: key.keyID) }
        let sealed = try key.seal(plaintext, counter: counter, metadata: metadata)
        counter += 1
        return sealed
    }
}

/// Which counters of one key were already accepted: the highest, and a bitmap of the `size` before it.
public struct ReplayWindow: Sendable, Equatable {
    /// Counters remembered behind the highest one.
    public static let size: UInt64 = 1024
    private var highest: UInt64?
    private var seen = [UInt64](repeating: 0, count: Int(size / 64))

    /// An empty window.
    public init() {}

    /// Throws when `counter` was accepted before or is too old to tell.
    public func check(_ counter: UInt64, keyID: UInt64) throws(SFrameError) {
        guard let highest else { return }
        if counter > highest { return }
        let age = highest - counter
        guard age < Self.size else {
            throw .counterTooOld(keyID: keyID, counter: counter, oldestAccepted: highest - (Self.size - 1))
        }
        if bit(counter) { throw .replayedCounter(keyID: keyID, counter: counter) }
    }

    /// Records `counter` as accepted (after its tag verified).
    public mutating func accept(_ counter: UInt64) {
        if let highest, counter <= highest {
            setBit(counter)
            return
        }
        let shift = highest.map { counter - $0 } ?? Self.size
        if shift >= Self.size {
            seen = [UInt64](repeating: 0, count: seen.count)
        } else {
            for step in 1...shift { clearBit((highest ?? 0) &+ step) }
        }
        highest = counter
        setBit(counter)
    }

    private func bit(_ counter: UInt64) -> Bool {
        let slot = counter % Self.size
        return seen[Int(slot / 64)] & (1 << (slot % 64)) != 0
    }

    private mutating func setBit(_ counter: UInt64) {
        let slot = counter % Self.size
        seen[Int(slot / 64)] |= 1 << (slot % 64)
    }

    private mutating func clearBit(_ counter: UInt64) {
        let slot = counter % Self.size
        seen[Int(slot / 64)] &= ~(1 << (slot % 64))
    }
}

/// The keys a receiver knows, each with its replay window; at most `limit`, the least recently used dropped first.
public struct SFrameReceiver: Sendable {
    /// Most keys kept.
    public let limit: Int
    private var keys: [UInt64: (key: SFrameKey, window: ReplayWindow, used: UInt64)] = [:]
    private var uses: UInt64 = 0

    /// A receiver with no keys.
    public init(limit: Int = 256) {
        self.limit = limit
    }

    /// Whether a key id is known.
    public func knows(_ keyID: UInt64) -> Bool { keys[keyID] != nil }

    /// Adds (or replaces) a key, with a fresh replay window.
    public mutating func add(_ key: SFrameKey) {
        if keys[key.keyID] == nil, keys.count >= limit,
            let oldest = keys.min(by: { $0.value.used < $1.value.used })?.key
        {
            keys.removeValue(forKey: oldest)
        }
        uses += 1
        keys[key.keyID] = (key, ReplayWindow(), uses)
    }

    /// The plaintext of an SFrame payload, checked against its key's replay window. For a key id not known yet,
    /// `keyForUnknownID` may supply its key: it is kept only if the payload authenticates under it, so payloads with
    /// made-up key ids can never push real keys (and their replay windows) out of the store.
    public mutating func open(
        _ bytes: [UInt8], metadata: [UInt8],
        keyForUnknownID: ((UInt64) -> SFrameKey)? = nil
    ) throws(SFrameError)
        -> (plaintext: [UInt8], header: SFrameHeader)
    {
        let (header, length) = try SFrameHeader.parse(bytes)
        if keys[header.keyID] == nil, let keyForUnknownID {
            let key = keyForUnknownID(header.keyID)
            let plaintext = try key.open(
                bytes[length...], header: Array(bytes[..<length]), counter: header.counter,
                metadata: metadata)
            add(key)
            keys[header.keyID]?.window.accept(header.counter)
            return (plaintext, header)
        }
        guard let entry = keys[header.keyID] else { throw .unknownKeyID(header.keyID) }
        try entry.window.check(header.counter, keyID: header.keyID)
        let plaintext = try entry.key.open(
            bytes[length...], header: Array(bytes[..<length]), counter: header.counter,
            metadata: metadata)
        // Only an authentic payload moves the window: a forgery with a huge counter must not lock out the sender.
        uses += 1
        keys[header.keyID]?.window.accept(header.counter)
        keys[header.keyID]?.used = uses
        return (plaintext, header)
    }
}

extension SymmetricKey {
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}
