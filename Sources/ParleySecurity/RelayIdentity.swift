import Crypto
import Foundation
import SwiftASN1
import X509

/// The SHA-256 of a certificate's DER bytes, written like ssh's: `SHA256:` and unpadded base64.
public struct CertificateFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// The fingerprint of a DER-encoded certificate.
    public init(certificateDER der: [UInt8]) {
        bytes = Array(SHA256.hash(data: der))
    }

    /// Parses `SHA256:` followed by 43 base64 characters.
    public init(parsing text: String) throws(RelayIdentityError) {
        guard text.hasPrefix("SHA256:") else { throw .badFingerprint(text, "it does not start with \"SHA256:\"") }
        var body = String(text.dropFirst(7))
        while body.count % 4 != 0 { body += "=" }
        guard let data = Data(base64Encoded: body), data.count == 32 else {
            throw .badFingerprint(text, "after \"SHA256:\" it needs the base64 of 32 bytes (43 characters)")
        }
        bytes = Array(data)
    }

    public var description: String {
        "SHA256:" + Data(bytes).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// The same digest as a browser's certificate viewer and `openssl x509 -fingerprint -sha256` write it: hex
    /// byte pairs, upper case, colon-separated.
    public var hex: String {
        bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }
}

/// What went wrong reading or making a relay's certificate, or a fingerprint.
public enum RelayIdentityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The certificate file holds no PEM certificate that parses.
    case badCertificate(String, String)
    /// The key file holds no PEM private key that parses.
    case badPrivateKey(String, String)
    /// The key does not belong to the certificate.
    case keyDoesNotMatch(certificate: String, key: String)
    /// A fingerprint that is not `SHA256:` and 43 base64 characters.
    case badFingerprint(String, String)
    /// A file could not be read or written.
    case file(String, String)

    public var description: String {
        switch self {
        case .badCertificate(let path, let why): "TLS certificate \(path) cannot be used: \(why)"
        case .badPrivateKey(let path, let why): "TLS private key \(path) cannot be used: \(why)"
        case .keyDoesNotMatch(let certificate, let key):
            "TLS private key \(key) does not belong to the certificate \(certificate) (its public key differs)"
        case .badFingerprint(let text, let why): "\"\(text)\" is not a certificate fingerprint: \(why)"
        case .file(let path, let why): "\(path): \(why)"
        }
    }
}

/// A relay's TLS certificate chain and private key, PEM, as the TLS layer loads them.
public struct RelayIdentity: Sendable, Equatable {
    /// The certificate chain, leaf first, PEM.
    public let certificateChainPEM: String
    /// The leaf's private key, PEM.
    public let privateKeyPEM: String
    /// The leaf certificate's fingerprint: what clients pin.
    public let fingerprint: CertificateFingerprint

    /// An identity from PEM text; `certificateSource` and `keySource` name where it came from in errors.
    public init(
        certificateChainPEM: String, privateKeyPEM: String, certificateSource: String = "certificate",
        keySource: String = "key"
    ) throws(RelayIdentityError) {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: certificateChainPEM)
        } catch {
            throw .badCertificate(certificateSource, "it is not PEM (\(error))")
        }
        guard let leafDocument = documents.first(where: { $0.discriminator == "CERTIFICATE" }) else {
            throw .badCertificate(certificateSource, "it holds no \"BEGIN CERTIFICATE\" block")
        }
        let leaf: Certificate
        do {
            leaf = try Certificate(pemDocument: leafDocument)
        } catch {
            throw .badCertificate(certificateSource, "its first certificate does not parse (\(error))")
        }
        let key: Certificate.PrivateKey
        do {
            key = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw .badPrivateKey(keySource, "it is not a PEM RSA, P-256/384/521 or Ed25519 key (\(error))")
        }
        guard key.publicKey == leaf.publicKey else {
            throw .keyDoesNotMatch(certificate: certificateSource, key: keySource)
        }
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        fingerprint = CertificateFingerprint(certificateDER: leafDocument.derBytes)
    }

    /// A new self-signed certificate (P-256, ten years) naming `hosts` (names and IP addresses) and localhost.
    public static func selfSigned(hosts: [String], now: Date = Date()) throws -> RelayIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("Parley")
            CommonName("parley relay")
        }
        var alternativeNames: [GeneralName] = []
        for host in Set(hosts + ["localhost", "127.0.0.1", "::1"]).sorted() {
            if let address = ipAddressBytes(host) {
                alternativeNames.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))))
            } else if !host.isEmpty, host != "0.0.0.0", host != "::" {
                alternativeNames.append(.dnsName(host))
            }
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                KeyUsage(digitalSignature: true)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternativeNames)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        let pem = try certificate.serializeAsPEM().pemString
        return try RelayIdentity(certificateChainPEM: pem, privateKeyPEM: key.pemRepresentation)
    }

    /// The identity in `directory` (`relay-cert.pem`, `relay-key.pem`), made and saved there (key readable only by
    /// its owner) when absent. `created` says whether it is new.
    public static func loadOrCreate(in directory: String, hosts: [String]) throws -> (RelayIdentity, created: Bool) {
        let certificatePath = directory + "/relay-cert.pem"
        let keyPath = directory + "/relay-key.pem"
        let files = FileManager.default
        if files.fileExists(atPath: certificatePath) || files.fileExists(atPath: keyPath) {
            return (try load(certificate: certificatePath, key: keyPath), false)
        }
        let identity = try selfSigned(hosts: hosts)
        do {
            try files.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            guard
                files.createFile(
                    atPath: keyPath, contents: Data(identity.privateKeyPEM.utf8),
                    attributes: [.posixPermissions: 0o600])
            else {
                throw RelayIdentityError.file(keyPath, "cannot be created")
            }
            try Data(identity.certificateChainPEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
        } catch let error as RelayIdentityError {
            throw error
        } catch {
            throw RelayIdentityError.file(directory, "cannot save the relay's certificate there: \(error)")
        }
        return (identity, true)
    }

    /// Largest certificate chain or key file read.
    public static let maximumFileBytes = 1 << 20

    /// The identity in a certificate (chain) file and a key file, both PEM.
    public static func load(certificate: String, key: String) throws(RelayIdentityError) -> RelayIdentity {
        func read(_ path: String) throws(RelayIdentityError) -> String {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            guard size <= maximumFileBytes else {
                throw .file(
                    path, "is \(size) bytes; a PEM certificate chain or key may have at most \(maximumFileBytes)")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .file(path, "cannot be read (missing, or no permission)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        return try RelayIdentity(
            certificateChainPEM: try read(certificate), privateKeyPEM: try read(key),
            certificateSource: certificate, keySource: key)
    }
}

/// True when `host` is a literal IPv4 or IPv6 address rather than a name.
public func isIPAddress(_ host: String) -> Bool { ipAddressBytes(host) != nil }

/// The 4 or 16 bytes of a literal IPv4 or IPv6 address, nil for a host name.
func ipAddressBytes(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
    return nil
}
