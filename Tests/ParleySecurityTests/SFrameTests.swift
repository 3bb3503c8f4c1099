import Foundation
import Testing

@testable import ParleySecurity

/// RFC 9605's published vectors (sframe-wg/sframe test-vectors.json), stored in Vectors/sframe.json.
struct SFrameVectors: Decodable {
    struct Header: Decodable {
        let kid: UInt64
        let ctr: UInt64
        let encoded: String
    }

    struct Encryption: Decodable {
        let cipher_suite: UInt16
        let kid: UInt64
        let ctr: UInt64
        let base_key: String
        let sframe_key: String
        let sframe_salt: String
        let metadata: String
        let nonce: String
        let pt: String
        let ct: String
    }

    let header: [Header]
    let sframe: [Encryption]

    static let loaded: SFrameVectors = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Vectors/sframe.json")
        return try! JSONDecoder().decode(SFrameVectors.self, from: Data(contentsOf: url))
    }()
}

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

@Suite struct SFrameVectorTests {
    @Test func everyHeaderVectorEncodesAndParses() throws {
        let vectors = SFrameVectors.loaded.header
        #expect(vectors.count == 289)
        for vector in vectors {
            let header = SFrameHeader(keyID: vector.kid, counter: vector.ctr)
            #expect(header.encoded == hex(vector.encoded), "kid \(vector.kid) ctr \(vector.ctr)")
            let (parsed, length) = try SFrameHeader.parse(hex(vector.encoded) + [0xaa, 0xbb])
            #expect(parsed == header && length == hex(vector.encoded).count)
        }
    }

    @Test(arguments: SFrameVectors.loaded.sframe.map(\.cipher_suite))
    func keyDerivationAndEncryptionMatchTheRFC(suiteNumber: UInt16) throws {
        let vector = try #require(SFrameVectors.loaded.sframe.first { $0.cipher_suite == suiteNumber })
        let suite = try #require(SFrameCipherSuite(rawValue: suiteNumber))
        let key = SFrameKey(baseKey: hex(vector.base_key), keyID: vector.kid, suite: suite)
        #expect(key.key == hex(vector.sframe_key))
        #expect(key.salt == hex(vector.sframe_salt))
        #expect(key.nonce(vector.ctr) == hex(vector.nonce))
        let sealed = try key.seal(hex(vector.pt), counter: vector.ctr, metadata: hex(vector.metadata))
        #expect(sealed == hex(vector.ct))
        var receiver = SFrameReceiver()
        receiver.add(key)
        let opened = try receiver.open(hex(vector.ct), metadata: hex(vector.metadata))
        #expect(
            opened.plaintext == hex(vector.pt) && opened.header == SFrameHeader(keyID: vector.kid, counter: vector.ctr))
    }
}

@Suite struct SFrameReceiverTests {
    static let key = SFrameKey(baseKey: Array(repeating: 7, count: 16), keyID: 291, suite: .aes128GCM)
    static let metadata: [UInt8] = [1, 2, 3]

    func sealed(_ counter: UInt64, _ plaintext: [UInt8] = [9, 9, 9, 9]) throws -> [UInt8] {
        try Self.key.seal(plaintext, counter: counter, metadata: Self.metadata)
    }

    func receiver() -> SFrameReceiver {
        var receiver = SFrameReceiver()
        receiver.add(Self.key)
        return receiver
    }

    static let rows: [(String, @Sendable () throws -> [UInt8], [UInt8], SFrameError)] = [
        ("empty payload", { [] }, metadata, .truncatedHeader(needed: 1, had: 0)),
        ("extended key id cut short", { [0x90, 0x01] }, metadata, .truncatedHeader(needed: 3, had: 2)),
        ("extended counter cut short", { [0x99, 0x01, 0x23, 0x45] }, metadata, .truncatedHeader(needed: 5, had: 4)),
        ("8-byte key id, nothing after the config byte", { [0xf0] }, metadata, .truncatedHeader(needed: 9, had: 1)),
        (
            "ciphertext shorter than the tag", { Array(try key.seal([], counter: 1, metadata: metadata).dropLast(1)) },
            metadata, .truncatedCiphertext(keyID: 291, bytes: 15, tagBytes: 16)
        ),
        (
            "unknown key id",
            { try SFrameKey(baseKey: [1], keyID: 5, suite: .aes128GCM).seal([1], counter: 0, metadata: []) },
            metadata, .unknownKeyID(5)
        ),
        (
            "flipped ciphertext bit",
            {
                var b = try key.seal([1, 2, 3, 4], counter: 3, metadata: metadata)
                b[6] ^= 1
                return b
            },
            metadata, .authenticationFailed(keyID: 291)
        ),
        (
            "flipped tag bit",
            {
                var b = try key.seal([1, 2, 3, 4], counter: 3, metadata: metadata)
                b[b.count - 1] ^= 0x80
                return b
            },
            metadata, .authenticationFailed(keyID: 291)
        ),
        (
            "header relabelled to another counter",
            {
                var b = try key.seal([1], counter: 3, metadata: metadata)
                b[4] = 4
                return b
            },
            metadata, .authenticationFailed(keyID: 291)
        ),
        (
            "metadata altered", { try key.seal([1, 2, 3, 4], counter: 3, metadata: metadata) }, [1, 2, 4],
            .authenticationFailed(keyID: 291)
        ),
        (
            "same key id, another base key",
            {
                try SFrameKey(baseKey: Array(repeating: 8, count: 16), keyID: 291, suite: .aes128GCM).seal(
                    [1], counter: 0, metadata: metadata)
            }, metadata, .authenticationFailed(keyID: 291)
        ),
    ]

    @Test(arguments: rows.indices)
    func badPayloadsAreRefusedEachWithItsOwnError(row: Int) throws {
        let (name, payload, metadata, expected) = Self.rows[row]
        var receiver = receiver()
        #expect(throws: expected, "\(name)") { _ = try receiver.open(try payload(), metadata: metadata) }
    }

    @Test func aReplayIsRefusedAndAnOutOfOrderPacketInsideTheWindowAcceptedOnce() throws {
        var receiver = receiver()
        _ = try receiver.open(try sealed(10), metadata: Self.metadata)
        #expect(throws: SFrameError.replayedCounter(keyID: 291, counter: 10)) {
            _ = try receiver.open(try sealed(10), metadata: Self.metadata)
        }
        _ = try receiver.open(try sealed(5), metadata: Self.metadata)  // late but new
        #expect(throws: SFrameError.replayedCounter(keyID: 291, counter: 5)) {
            _ = try receiver.open(try sealed(5), metadata: Self.metadata)
        }
        _ = try receiver.open(try sealed(2000), metadata: Self.metadata)
        #expect(throws: SFrameError.counterTooOld(keyID: 291, counter: 976, oldestAccepted: 977)) {
            _ = try receiver.open(try sealed(976), metadata: Self.metadata)
        }
        _ = try receiver.open(try sealed(977), metadata: Self.metadata)  // the oldest the window still tells apart
        _ = try receiver.open(try sealed(1999), metadata: Self.metadata)
    }

    @Test func aForgeryWithAHugeCounterDoesNotMoveTheWindow() throws {
        var receiver = receiver()
        _ = try receiver.open(try sealed(1), metadata: Self.metadata)
        var forged = try SFrameKey(baseKey: [6], keyID: 291, suite: .aes128GCM).seal(
            [1], counter: 1_000_000, metadata: Self.metadata)
        #expect(throws: SFrameError.authenticationFailed(keyID: 291)) {
            _ = try receiver.open(forged, metadata: Self.metadata)
        }
        // Were the window moved to 1,000,000, counter 2 would now be "too old".
        _ = try receiver.open(try sealed(2), metadata: Self.metadata)
        forged = try sealed(3)
        forged[forged.count - 1] ^= 1
        #expect(throws: SFrameError.authenticationFailed(keyID: 291)) {
            _ = try receiver.open(forged, metadata: Self.metadata)
        }
        _ = try receiver.open(try sealed(3), metadata: Self.metadata)  // the genuine 3 was not marked seen by the forgery
    }

    @Test func theWindowSurvivesLongRunsAndBigJumps() throws {
        var window = ReplayWindow()
        for counter in UInt64(0)..<5000 where counter % 3 != 0 { window.accept(counter) }
        for counter in UInt64(4000)..<5000 {
            if counter % 3 == 0 {
                try window.check(counter, keyID: 1)
            } else {
                #expect(throws: SFrameError.replayedCounter(keyID: 1, counter: counter)) {
                    try window.check(counter, keyID: 1)
                }
            }
        }
        window.accept(1_000_000)
        try window.check(999_999, keyID: 1)
        #expect(throws: SFrameError.counterTooOld(keyID: 1, counter: 4999, oldestAccepted: 1_000_000 - 1023)) {
            try window.check(4999, keyID: 1)
        }
    }

    @Test func theKeyStoreIsBoundedAndDropsTheLeastRecentlyUsed() throws {
        var receiver = SFrameReceiver(limit: 2)
        let keys = (UInt64(1)...3).map { SFrameKey(baseKey: [UInt8($0)], keyID: $0, suite: .aes256GCM) }
        receiver.add(keys[0])
        receiver.add(keys[1])
        _ = try receiver.open(try keys[0].seal([1], counter: 0, metadata: []), metadata: [])
        receiver.add(keys[2])  // evicts key 2, used less recently than key 1
        #expect(receiver.knows(1) && !receiver.knows(2) && receiver.knows(3))
    }

    @Test func aSenderCountsUpAndEncodesShortHeadersForSmallValues() throws {
        var sender = SFrameSender(key: SFrameKey(baseKey: [1], keyID: 3, suite: .aes128GCM))
        let first = try sender.seal([0xab], metadata: [])
        let second = try sender.seal([0xab], metadata: [])
        #expect(first[0] == 0x30 && second[0] == 0x31)  // KID 3 and CTR 0/1 fit in the config byte
        #expect(first.count == 1 + 1 + 16 && first != second)
    }

    @Test func errorsSaySomethingUseful() {
        #expect(
            "\(SFrameError.truncatedHeader(needed: 5, had: 4))" == "SFrame header needs 5 bytes but the payload has 4")
        #expect("\(SFrameError.authenticationFailed(keyID: 9))".contains("another secret"))
        #expect("\(SFrameError.counterTooOld(keyID: 1, counter: 2, oldestAccepted: 3))".contains("oldest accepted 3"))
    }
}

@Suite struct CallEncryptionTests {
    @Test func membersWithTheSameSecretReadEachOtherAndOthersDoNot() throws {
        let alice = try CallEncryption(secret: "correct horse", room: "standup", suite: .aes128GCM)
        let bob = try CallEncryption(secret: "correct horse", room: "standup", suite: .aes128GCM)
        #expect(alice.safetyCode == bob.safetyCode)
        #expect(alice.safetyCode.wholeMatch(of: /\d{4} \d{4}/) != nil)
        let sealer = MediaSealer(encryption: alice)
        var opener = MediaOpener(encryption: bob)
        let payload = try sealer.seal([1, 2, 3], stream: .video, metadata: [9])
        let opened = try opener.open(payload, metadata: [9])
        #expect(opened.plaintext == [1, 2, 3] && opened.keyID == sealer.senderID << 2 | 1)
        #expect(try opener.openChat(try sealer.sealChat("hello, bob")) == "hello, bob")
        // The chat stream has its own counters; a replayed line is refused.
        let line = try sealer.sealChat("once")
        #expect(try opener.openChat(line) == "once")
        #expect(throws: SFrameError.self) { _ = try opener.openChat(line) }

        for (name, other) in [
            ("another secret", try CallEncryption(secret: "correct horses", room: "standup", suite: .aes128GCM)),
            ("another room", try CallEncryption(secret: "correct horse", room: "standup2", suite: .aes128GCM)),
            ("another suite", try CallEncryption(secret: "correct horse", room: "standup", suite: .aes256GCM)),
        ] {
            #expect(other.safetyCode != alice.safetyCode, "\(name)")
            var stranger = MediaOpener(encryption: other)
            #expect(throws: SFrameError.authenticationFailed(keyID: sealer.senderID << 2 | 1), "\(name)") {
                _ = try stranger.open(try sealer.seal([1, 2, 3], stream: .video, metadata: [9]), metadata: [9])
            }
        }
    }

    @Test func everySealerHasItsOwnKeyIDsSoCountersNeverRepeatUnderOneKey() throws {
        let room = try CallEncryption(secret: "correct horse", room: "standup", suite: .aes128GCM)
        let ids = Set((0..<64).map { _ in MediaSealer(encryption: room).senderID })
        #expect(ids.count == 64 && ids.allSatisfy { $0 < 1 << 46 })
        // A rejoining member (a new sealer) starts at counter 0 again, but under another key id.
        let before = try MediaSealer(encryption: room).seal([1], stream: .audio, metadata: [])
        let after = try MediaSealer(encryption: room).seal([1], stream: .audio, metadata: [])
        #expect(try SFrameHeader.parse(before).header.keyID != SFrameHeader.parse(after).header.keyID)
    }

    @Test(arguments: [
        ("", "the room secret is empty"), ("seven77", "the room secret has 7 characters; it needs at least 8"),
    ])
    func shortSecretsAreRefused(secret: String, message: String) {
        #expect {
            _ = try CallEncryption(secret: secret, room: "r", suite: .aes128GCM)
        } throws: { error in
            "\(error)".hasPrefix(message)
        }
    }

    @Test func garbledChatLinesAreClearErrors() throws {
        var opener = MediaOpener(encryption: try CallEncryption(secret: "correct horse", room: "r", suite: .aes128GCM))
        #expect(throws: ChatSealError.notBase64) { _ = try opener.openChat("***") }
        #expect(throws: SFrameError.truncatedHeader(needed: 1, had: 0)) { _ = try opener.openChat("") }
    }

    @Test func passwordVerifiersAreStretchedAndSaltedWithTheRoom() {
        let one = RoomPassword.verifier(password: "open sesame", room: "standup")
        #expect(one.count == 32)
        #expect(one == RoomPassword.verifier(password: "open sesame", room: "standup"))
        #expect(one != RoomPassword.verifier(password: "open sesame", room: "standup2"))
        let proof = RoomPassword.proof(verifier: one, challenge: [1, 2, 3], room: "standup", name: "bob")
        #expect(RoomPassword.isValid(proof: proof, verifier: one, challenge: [1, 2, 3], room: "standup", name: "bob"))
        #expect(!RoomPassword.isValid(proof: proof, verifier: one, challenge: [1, 2, 4], room: "standup", name: "bob"))
        #expect(!RoomPassword.isValid(proof: proof, verifier: one, challenge: [1, 2, 3], room: "standup", name: "eve"))
    }
}

@Suite struct SFrameKeyStoreAttackTests {
    @Test func madeUpKeyIDsNeverEvictRealKeysOrResetTheirReplayWindows() throws {
        let room = try CallEncryption(secret: "correct horse", room: "standup", suite: .aes128GCM)
        let sealer = MediaSealer(encryption: room)
        var opener = MediaOpener(encryption: room)
        let first = try sealer.seal([1], stream: .audio, metadata: [])
        _ = try opener.open(first, metadata: [])
        // 1,000 payloads under made-up key ids (no secret, so they cannot authenticate).
        let stranger = try CallEncryption(secret: "not the secret", room: "standup", suite: .aes128GCM)
        for _ in 0..<1000 {
            let forged = try MediaSealer(encryption: stranger).seal([2], stream: .video, metadata: [])
            #expect(throws: SFrameError.self) { _ = try opener.open(forged, metadata: []) }
        }
        // The real key is still there with its window: a replay of the first payload is still refused.
        #expect(throws: SFrameError.replayedCounter(keyID: sealer.senderID << 2, counter: 0)) {
            _ = try opener.open(first, metadata: [])
        }
    }
}
