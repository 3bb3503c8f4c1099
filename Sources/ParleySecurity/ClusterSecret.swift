import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The secret every node of a cluster holds (`parley serve --cluster-secret-file`): it authenticates the binds and
/// control messages of the trunks between nodes, so a node or a stranger without it is refused.
public struct ClusterSecret: Sendable {
    let key: SymmetricKey

    /// A secret shorter than this many bytes is refused (`openssl rand -hex 32` makes 64).
    public static let minimumBytes = 32
    /// A secret file longer than this is not a secret file.
    public static let maximumFileBytes = 4_096

    /// A secret from its bytes.
    public init(bytes: [UInt8]) throws(ClusterSecretError) {
        guard bytes.count >= Self.minimumBytes else { throw .tooShort(path: nil, bytes: bytes.count) }
        key = SymmetricKey(data: bytes)
    }

    /// The secret in `path`: its first line, without surrounding spaces. Refused when the file cannot be read, is
    /// not a small text file, holds fewer than `minimumBytes` or can be read by others than its owner.
    public static func load(path: String) throws(ClusterSecretError) -> ClusterSecret {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw .unreadable(path: path, reason: "not a file") }
        guard status.st_mode & 0o077 == 0 else {
            throw .readableByOthers(path: path, mode: Int(status.st_mode & 0o777))
        }
        guard status.st_size <= Self.maximumFileBytes else {
            throw .unreadable(
                path: path, reason: "\(status.st_size) bytes, more than a secret's \(Self.maximumFileBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable(path: path, reason: "cannot be read")
        }
        let firstLine = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? Data()
        let trimmed = Array(firstLine).drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop {
            $0 == 0x20 || $0 == 0x09 || $0 == 0x0D
        }.reversed()
        guard trimmed.count >= minimumBytes else { throw .tooShort(path: path, bytes: trimmed.count) }
        return try ClusterSecret(bytes: Array(trimmed))
    }

    /// HMAC-SHA256 of `bytes` under the secret.
    func authenticationCode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(bytes), using: key))
    }

    /// Whether `code` is the HMAC of `bytes`, compared in constant time.
    func verify(_ code: some Collection<UInt8>, of bytes: some Collection<UInt8>) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(Array(code), authenticating: Array(bytes), using: key)
    }
}

/// Why a cluster secret was refused.
public enum ClusterSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case tooShort(path: String?, bytes: Int)
    case readableByOthers(path: String, mode: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "the cluster secret file \(path) cannot be used: \(reason)"
        case .tooShort(let path, let bytes):
            let what = path.map { "the cluster secret in \($0)" } ?? "the cluster secret"
            return "\(what) has \(bytes) bytes, fewer than \(ClusterSecret.minimumBytes) "
                + "(make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)"
        case .readableByOthers(let path, let mode):
            return
                "the cluster secret file \(path) can be read by others (mode \(String(mode, radix: 8))): chmod 600 it"
        }
    }
}
