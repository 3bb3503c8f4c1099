/// Checks that a datagram is a sequence of whole DTLS 1.0/1.2 records before OpenSSL sees it, and that plaintext
/// (epoch 0) records are well formed. OpenSSL 3.0 drops a bad record of a later epoch silently, leaving nothing to
/// log, but fails the whole handshake on a malformed epoch-0 record ("bad change cipher spec", "invalid alert",
/// "bad length", "unexpected record"), which anyone able to inject a datagram could send. Epoch 0 carries no
/// authentication, so a well-formed forged record (a fatal alert) still ends a handshake, as the protocol says.
/// Encrypted records (later epochs) only need to be long enough for their nonce and tag.
///
///     0                   1                   2                   3
///     | type (1) | version (2) | epoch (2) | sequence number (6) | length (2) | fragment (length) ...
enum DTLSRecords {
    static let headerBytes = 13
    /// RFC 6347 §4.1: a record's fragment is at most 2^14 bytes plus 2048 of compression and cipher expansion.
    static let maximumFragmentBytes = 16384 + 2048
    /// An AES-GCM record (the only ciphers `DTLSIdentity` allows) holds an 8-byte explicit nonce and a 16-byte tag.
    /// OpenSSL 3.0 fails the whole connection on a shorter encrypted record (SSL_ERROR_SYSCALL, nothing queued).
    static let minimumEncryptedBytes = 24

    /// Throws `DTLSError.malformedRecord` naming the first record that is cut short, has an unknown content type
    /// (change_cipher_spec 20, alert 21, handshake 22, application_data 23) or a version other than DTLS 1.0/1.2.
    static func validate(_ datagram: [UInt8]) throws {
        guard !datagram.isEmpty else { throw DTLSError.malformedRecord(offset: 0, reason: "empty datagram") }
        var offset = 0
        while offset < datagram.count {
            let remaining = datagram.count - offset
            guard remaining >= headerBytes else {
                throw DTLSError.malformedRecord(
                    offset: offset, reason: "\(remaining) bytes left, a record header needs \(headerBytes)")
            }
            let type = datagram[offset]
            guard (20...23).contains(type) else {
                throw DTLSError.malformedRecord(offset: offset, reason: "content type \(type) is not 20...23")
            }
            let version = UInt16(datagram[offset + 1]) << 8 | UInt16(datagram[offset + 2])
            guard version == 0xFEFF || version == 0xFEFD else {
                throw DTLSError.malformedRecord(
                    offset: offset, reason: "version 0x\(String(version, radix: 16)) is not DTLS 1.0 or 1.2")
            }
            let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
            guard length <= maximumFragmentBytes else {
                throw DTLSError.malformedRecord(
                    offset: offset, reason: "length \(length) exceeds limit \(maximumFragmentBytes)")
            }
            guard length <= remaining - headerBytes else {
                throw DTLSError.malformedRecord(
                    offset: offset, reason: "declares \(length) bytes but \(remaining - headerBytes) follow")
            }
            let epoch = UInt16(datagram[offset + 3]) << 8 | UInt16(datagram[offset + 4])
            if epoch == 0 {
                let fragment = datagram[(offset + headerBytes)..<(offset + headerBytes + length)]
                if let reason = plaintextProblem(type: type, fragment: fragment) {
                    throw DTLSError.malformedRecord(offset: offset, reason: reason)
                }
            } else if length < minimumEncryptedBytes {
                throw DTLSError.malformedRecord(
                    offset: offset,
                    reason: "encrypted record of \(length) bytes is shorter than AES-GCM's \(minimumEncryptedBytes)")
            }
            offset += headerBytes + length
        }
    }

    /// What is wrong with an epoch-0 record's content, or nil: change_cipher_spec is the one byte 1, an alert is a
    /// level (1 or 2) and a description, application data never comes unencrypted, and handshake fragments have
    /// 12-byte headers whose lengths fit (RFC 6347 §4.2.2).
    private static func plaintextProblem(type: UInt8, fragment: ArraySlice<UInt8>) -> String? {
        switch type {
        case 20:
            return fragment.elementsEqual([1]) ? nil : "change_cipher_spec is not the single byte 1"
        case 21:
            guard fragment.count == 2, let level = fragment.first, level == 1 || level == 2 else {
                return "alert is not a level (1 or 2) and a description"
            }
            return nil
        case 23:
            return "application data in epoch 0"
        default:
            var start = fragment.startIndex
            while start < fragment.endIndex {
                guard fragment.endIndex - start >= 12 else { return "handshake fragment header cut short" }
                func uint24(_ at: Int) -> Int {
                    Int(fragment[at]) << 16 | Int(fragment[at + 1]) << 8 | Int(fragment[at + 2])
                }
                let messageLength = uint24(start + 1)
                let fragmentOffset = uint24(start + 6)
                let fragmentLength = uint24(start + 9)
                let follow = fragment.endIndex - start - 12
                guard fragmentLength <= follow else {
                    return "handshake fragment declares \(fragmentLength) bytes but \(follow) follow"
                }
                guard fragmentOffset + fragmentLength <= messageLength else {
                    let fragmentRange = "\(fragmentOffset)+\(fragmentLength)"
                    return "handshake fragment \(fragmentRange) overruns its message of \(messageLength)"
                }
                start += 12 + fragmentLength
            }
            return nil
        }
    }
}
