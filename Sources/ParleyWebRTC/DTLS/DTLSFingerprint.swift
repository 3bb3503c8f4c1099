/// A certificate's SHA-256 fingerprint as SDP carries it in a=fingerprint (RFC 8122 §5): "sha-256 AB:CD:...".
public struct DTLSFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of SHA-256 over the certificate's DER encoding.
    public let sha256: [UInt8]

    /// A fingerprint from its 32 digest bytes; nil for any other length.
    public init?(sha256: [UInt8]) {
        guard sha256.count == 32 else { return nil }
        self.sha256 = sha256
    }

    /// Parses an a=fingerprint value ("sha-256 AB:CD:..."); the hash name is case-insensitive (RFC 8122 §5), other
    /// hash functions and malformed hex give nil.
    public init?(sdp value: String) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "sha-256" else { return nil }
        let pairs = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard pairs.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for pair in pairs {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.sha256 = bytes
    }

    /// The a=fingerprint value: "sha-256 " and the digest as uppercase hex pairs joined by colons.
    public var sdpValue: String {
        let hex = sha256.map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + text : text
        }
        return "sha-256 " + hex.joined(separator: ":")
    }

    public var description: String { sdpValue }
}

extension DTLSFingerprint {
    /// The fingerprint an SDP a=fingerprint names; nil unless it is a sha-256 one.
    public init?(_ attribute: Fingerprint) {
        guard attribute.hashFunction == "sha-256" else { return nil }
        self.init(sha256: attribute.bytes)
    }

    /// As an SDP a=fingerprint value.
    public var attribute: Fingerprint { Fingerprint(hashFunction: "sha-256", bytes: sha256) }
}
