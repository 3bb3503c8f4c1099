import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import ParleySecurity

@Suite struct KnownRelaysTests {
    static let fingerprint = CertificateFingerprint(certificateDER: [1, 2, 3])

    @Test func aFileRoundTripsWithCommentsAndBlankLinesIgnored() throws {
        var known = KnownRelays()
        known.pin(Self.fingerprint, for: "Relay.Example:7878")
        let text = "# pinned\n\n" + known.text + "   \n"
        let parsed = try KnownRelays(parsing: text)
        #expect(parsed == known)
        #expect(parsed.pin(for: "relay.example:7878") == Self.fingerprint)
        #expect(parsed.pin(for: "relay.example:7879") == nil)
    }

    @Test(arguments: [
        ("relay:7878", "line 1: expected \"HOST:PORT SHA256:…\", found 1 fields"),
        ("relay:7878 SHA256:abc extra", "line 1: expected \"HOST:PORT SHA256:…\", found 3 fields"),
        ("relay SHA256:AQID", "line 1: \"relay\" is not HOST:PORT"),
        ("relay:99999 SHA256:AQID", "line 1: \"relay:99999\" is not HOST:PORT"),
        ("# ok\nrelay:7878 MD5:abc", "line 2: \"MD5:abc\" is not a certificate fingerprint: it does not start with"),
        (
            "relay:7878 SHA256:AQID",
            "line 1: \"SHA256:AQID\" is not a certificate fingerprint: after \"SHA256:\" it needs"
        ),
    ])
    func badLinesAreRefusedWithTheirNumber(text: String, expected: String) {
        #expect {
            _ = try KnownRelays(parsing: text, source: "kr")
        } throws: { error in
            "\(error)".hasPrefix("kr " + expected) && "\(error)".hasSuffix("fix or delete that line")
        }
    }

    @Test func fingerprintsReadBackAndLookLikeSSHs() throws {
        let text = Self.fingerprint.description
        #expect(text.hasPrefix("SHA256:") && text.count == 7 + 43 && !text.contains("="))
        #expect(try CertificateFingerprint(parsing: text) == Self.fingerprint)
        // As a browser's certificate viewer and openssl write it (`printf '\1\2\3' | sha256sum`).
        #expect(
            Self.fingerprint.hex
                == "03:90:58:C6:F2:C0:CB:49:2C:53:3B:0A:4D:14:EF:77:CC:0F:78:AB:CC:CE:D5:28:7D:84:A1:A2:01:1C:FB:81")
    }
}

@Suite struct RelayIdentityTests {
    @Test func aSelfSignedIdentityLoadsBackFromItsFilesWithTheSameFingerprint() throws {
        let directory = NSTemporaryDirectory() + "parley-identity-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (made, created) = try RelayIdentity.loadOrCreate(in: directory, hosts: ["relay.example", "10.0.0.7"])
        #expect(created)
        let (again, createdAgain) = try RelayIdentity.loadOrCreate(in: directory, hosts: [])
        #expect(!createdAgain && again == made)
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory + "/relay-key.pem")[.posixPermissions]
        #expect(keyMode as? Int == 0o600)
        // The certificate names the hosts it was made for, and is its own issuer.
        let certificate = try Certificate(pemEncoded: made.certificateChainPEM)
        #expect(certificate.issuer == certificate.subject)
        let names = try #require(try certificate.extensions.subjectAlternativeNames)
        #expect(names.contains(.dnsName("relay.example")) && names.contains(.dnsName("localhost")))
        #expect(names.contains(.ipAddress(ASN1OctetString(contentBytes: [10, 0, 0, 7]))))
    }

    @Test func aKeyOfAnotherCertificateIsRefused() throws {
        let one = try RelayIdentity.selfSigned(hosts: [])
        let other = try RelayIdentity.selfSigned(hosts: [])
        #expect(throws: RelayIdentityError.keyDoesNotMatch(certificate: "cert.pem", key: "key.pem")) {
            _ = try RelayIdentity(
                certificateChainPEM: one.certificateChainPEM, privateKeyPEM: other.privateKeyPEM,
                certificateSource: "cert.pem", keySource: "key.pem")
        }
    }

    @Test(arguments: [
        ("not pem at all", "it holds no \"BEGIN CERTIFICATE\" block"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "its first certificate does not parse"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "it holds no \"BEGIN CERTIFICATE\" block"),
    ])
    func garbageCertificatesAreRefused(text: String, expected: String) throws {
        let key = try RelayIdentity.selfSigned(hosts: []).privateKeyPEM
        #expect {
            _ = try RelayIdentity(certificateChainPEM: text, privateKeyPEM: key, certificateSource: "c.pem")
        } throws: { error in
            "\(error)".hasPrefix("TLS certificate c.pem cannot be used: \(expected)")
        }
    }

    @Test func missingFilesSayWhichOne() {
        #expect(throws: RelayIdentityError.file("/nonexistent/cert.pem", "cannot be read (missing, or no permission)"))
        {
            _ = try RelayIdentity.load(certificate: "/nonexistent/cert.pem", key: "/nonexistent/key.pem")
        }
    }
}

@Suite struct RelayTrustStoreTests {
    func der(_ identity: RelayIdentity) throws -> [UInt8] {
        try PEMDocument(pemString: identity.certificateChainPEM).derBytes
    }

    @Test func firstUsePinsAndSavesThenTheSameCertificateIsTrustedAndAnotherRefused() async throws {
        let directory = NSTemporaryDirectory() + "parley-known-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/parley/known_relays"
        let relay = try RelayIdentity.selfSigned(hosts: [])
        let store = try RelayTrustStore(path: path)
        let first = await store.decide(relay: "127.0.0.1:7878", host: "127.0.0.1", chainDER: [try der(relay)])
        #expect(first == .pinnedOnFirstUse(relay.fingerprint))
        // Saved: a new store (the next run of parley) knows it.
        let reopened = try RelayTrustStore(path: path)
        #expect(reopened.known.pin(for: "127.0.0.1:7878") == relay.fingerprint)
        let second = await reopened.decide(relay: "127.0.0.1:7878", host: "127.0.0.1", chainDER: [try der(relay)])
        #expect(second == .pinned(relay.fingerprint))
        // Another certificate on the same relay: refused, and the pin stays.
        let impostor = try RelayIdentity.selfSigned(hosts: [])
        let third = await reopened.decide(relay: "127.0.0.1:7878", host: "127.0.0.1", chainDER: [try der(impostor)])
        #expect(
            third
                == .changed(
                    RelayCertificateChanged(
                        relay: "127.0.0.1:7878", pinned: relay.fingerprint,
                        presented: impostor.fingerprint, file: path)))
        #expect(!third.isTrusted)
        #expect(try RelayTrustStore(path: path).known.pin(for: "127.0.0.1:7878") == relay.fingerprint)
        // The same certificate on another port is another relay: pinned on its own.
        let other = await reopened.decide(relay: "127.0.0.1:7879", host: "127.0.0.1", chainDER: [try der(impostor)])
        #expect(other == .pinnedOnFirstUse(impostor.fingerprint))
        // Forgetting lets the new certificate in.
        #expect(try reopened.forget("127.0.0.1:7878"))
        let afterForget = await reopened.decide(
            relay: "127.0.0.1:7878", host: "127.0.0.1", chainDER: [try der(impostor)])
        #expect(afterForget == .pinnedOnFirstUse(impostor.fingerprint))
    }

    @Test func theRefusalSaysWhatHappenedAndWhatToDo() {
        let changed = RelayCertificateChanged(
            relay: "relay:7878", pinned: CertificateFingerprint(certificateDER: [1]),
            presented: CertificateFingerprint(certificateDER: [2]), file: "/home/u/.config/parley/known_relays")
        let text = changed.description
        #expect(text.contains("different TLS certificate") && text.contains("intercepting"))
        #expect(
            text.contains("parley relays forget relay:7878") && text.contains("/home/u/.config/parley/known_relays"))
        #expect(text.contains(CertificateFingerprint(certificateDER: [2]).description))
    }

    @Test func aCertificateAnAuthorityVouchesForIsTrustedWithoutPinning() async throws {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Test Authority") }
        let now = Date()
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86400, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86400, issuer: caName,
            subject: try DistinguishedName { CommonName("relay.example") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                SubjectAlternativeNames([.dnsName("relay.example")])
            },
            issuerPrivateKey: .init(caKey))
        var serializer = DER.Serializer()
        try serializer.serialize(leaf)
        let store = try RelayTrustStore(path: nil, extraRoots: [ca])
        let vouched = await store.decide(
            relay: "relay.example:7878", host: "relay.example",
            chainDER: [serializer.serializedBytes])
        #expect(vouched == .authority)
        #expect(store.known.pins.isEmpty)
        // The same certificate for another host name is not vouched for: it falls back to pinning.
        let wrongHost = await store.decide(
            relay: "other.example:7878", host: "other.example",
            chainDER: [serializer.serializedBytes])
        #expect(wrongHost == .pinnedOnFirstUse(CertificateFingerprint(certificateDER: serializer.serializedBytes)))
    }
}

@Suite struct TrustFileSizeTests {
    @Test func oversizedFilesAreRefusedNamingTheLimit() throws {
        let path = NSTemporaryDirectory() + "parley-big-\(UUID().uuidString)"
        defer { unlink(path) }
        try Data(repeating: 0x23, count: (1 << 20) + 1).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try RelayTrustStore(path: path)
        } throws: { "\($0)".contains("a known_relays file may have at most 1048576") }
        #expect {
            _ = try RelayIdentity.load(certificate: path, key: path)
        } throws: { "\($0)".contains("a PEM certificate chain or key may have at most 1048576") }
    }
}
