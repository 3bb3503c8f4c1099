import Foundation
import Testing

@testable import ParleySecurity

struct AccountIdentityTests {
    @Test func anIdentitySurvivesItsFileAndSignsItsLogin() throws {
        let alice = AccountIdentity.create(name: "alice")
        let text = alice.encoded()
        let again = try AccountIdentity(parsing: text)
        #expect(again.name == "alice" && again.keys == alice.keys)
        let challenge = [UInt8](repeating: 7, count: 32)
        let message = AccountIdentity.loginMessage(name: "alice", challenge: challenge)
        #expect(alice.keys.verifies(again.sign(message), of: message))
        #expect(
            !alice.keys.verifies(
                again.sign(message), of: AccountIdentity.loginMessage(name: "mallory", challenge: challenge)))
        #expect(
            !AccountIdentity.create(name: "alice").keys.verifies(alice.sign(message), of: message),
            "another key pair of the same name proves nothing")
        #expect(alice.keys.fingerprint.count == 24 && alice.keys.fingerprint.split(separator: " ").count == 5)
    }

    @Test(arguments: [
        ("", 1, "the first line must be \"parley-identity 1\""),
        ("parley-identity 1\nname alice\nsigning AAAA\n", 3, "the signing key must be 32 bytes in base64"),
        ("parley-identity 1\nname alice\n", 3, "the signing line is missing"),
        ("parley-identity 1\nname alice\nname bob\n", 3, "name appears twice"),
        ("parley-identity 1\ncolour red\n", 2, "unknown field \"colour\""),
        ("parley-identity 1\nnamealice\n", 2, "expected \"KEY VALUE\""),
    ])
    func aBrokenIdentityFileSaysWhichLineAndWhy(text: String, line: Int, reason: String) {
        #expect(throws: AccountError.self) { try AccountIdentity(parsing: text) }
        do { _ = try AccountIdentity(parsing: text) } catch {
            guard case .badIdentityFile(let badLine, let why) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(badLine == line && why.contains(reason), "\(error)")
        }
    }

    @Test func publicKeysAreCheckedWhenMade() {
        #expect(throws: AccountError.self) {
            try AccountKeys(signing: [1, 2, 3], agreement: [UInt8](repeating: 9, count: 32))
        }
        #expect(throws: AccountError.self) {
            try AccountKeys(signing: AccountIdentity.create(name: "a").keys.signing, agreement: [])
        }
    }
}

struct DirectMessageSealTests {
    let alice = AccountIdentity.create(name: "alice")
    let bob = AccountIdentity.create(name: "bob")

    @Test func onlyTheRecipientOpensAndOnlyTheSenderCanHaveSealed() throws {
        let sealed = DirectMessageSeal.seal("lunch at one? ☕", from: alice, to: "bob", keys: bob.keys, id: "m1")
        #expect(sealed.count == DirectMessageSeal.overhead + "lunch at one? ☕".utf8.count)
        #expect(
            try DirectMessageSeal.open(sealed, by: bob, from: "alice", senderKeys: alice.keys, id: "m1")
                == "lunch at one? ☕")
        #expect(!Data(sealed).contains(Data("lunch".utf8)), "the relay sees ciphertext only")
        let again = DirectMessageSeal.seal("lunch at one? ☕", from: alice, to: "bob", keys: bob.keys, id: "m1")
        #expect(again != sealed, "a fresh ephemeral key each time")

        let carol = AccountIdentity.create(name: "bob")  // the same name with other keys
        let cases: [(String, () throws(DirectMessageSeal.OpenError) -> String, DirectMessageSeal.OpenError)] = [
            (
                "another recipient key",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open(sealed, by: carol, from: "alice", senderKeys: alice.keys, id: "m1")
                },
                .doesNotDecrypt
            ),
            (
                "another message id",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open(sealed, by: bob, from: "alice", senderKeys: alice.keys, id: "m2")
                },
                .badSignature
            ),
            (
                "another claimed sender",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open(sealed, by: bob, from: "eve", senderKeys: alice.keys, id: "m1")
                },
                .badSignature
            ),
            (
                "a sender key that did not sign it",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open(sealed, by: bob, from: "alice", senderKeys: bob.keys, id: "m1")
                },
                .badSignature
            ),
            (
                "one bit flipped",
                { () throws(DirectMessageSeal.OpenError) in
                    var flipped = sealed
                    flipped[50] ^= 1
                    return try DirectMessageSeal.open(flipped, by: bob, from: "alice", senderKeys: alice.keys, id: "m1")
                },
                .badSignature
            ),
            (
                "too short",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open([1, 2], by: bob, from: "alice", senderKeys: alice.keys, id: "m1")
                },
                .tooShort(2)
            ),
            (
                "unknown version",
                { () throws(DirectMessageSeal.OpenError) in
                    try DirectMessageSeal.open(
                        [9] + sealed.dropFirst(), by: bob, from: "alice", senderKeys: alice.keys,
                        id: "m1")
                },
                .unknownVersion(9)
            ),
        ]
        for (name, open, expected) in cases {
            do {
                _ = try open()
                Issue.record("\(name): opened")
            } catch {
                #expect(error == expected, "\(name): \(error)")
            }
        }
    }
}
