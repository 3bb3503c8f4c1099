#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random-access bytes a reader pulls from: a file on disk or an array in memory (tests, generated content).
public protocol ByteInput: AnyObject {
    /// Total size in bytes.
    var size: Int { get }
    /// Up to `count` bytes starting at `offset` (fewer at the end of the input).
    func read(at offset: Int, count: Int) throws -> [UInt8]
}

/// An in-memory `ByteInput`.
public final class MemoryInput: ByteInput {
    /// The bytes served.
    public let bytes: [UInt8]
    /// Serves `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var size: Int { bytes.count }
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset < bytes.count else { return [] }
        return Array(bytes[offset..<min(bytes.count, offset + count)])
    }
}

/// A file opened for reading with positioned reads (`pread`); owns its descriptor.
public final class FileInput: ByteInput {
    /// Path it was opened from.
    public let path: String
    public let size: Int
    private let descriptor: Int32

    /// Opens `path`; throws `MediaFileError.io` naming the path and the system's reason.
    public init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw MediaFileError.io(path: path, operation: "open", reason: errnoText()) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = errnoText()
            close(descriptor)
            throw MediaFileError.io(path: path, operation: "stat", reason: reason)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw MediaFileError.io(path: path, operation: "read", reason: "not a regular file")
        }
        size = Int(info.st_size)
    }

    deinit { close(descriptor) }

    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        let wanted = max(0, min(count, size - offset))
        guard wanted > 0 else { return [] }
        let path = self.path
        let descriptor = self.descriptor
        return try [UInt8](unsafeUninitializedCapacity: wanted) { buffer, filled in
            filled = 0
            while filled < wanted {
                let got = pread(descriptor, buffer.baseAddress! + filled, wanted - filled, off_t(offset + filled))
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw MediaFileError.io(path: path, operation: "read", reason: errnoText()) }
                if got == 0 { break }
                filled += got
            }
        }
    }
}

/// A file opened for writing (created or truncated); owns its descriptor.
final class FileOutput {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw MediaFileError.io(path: path, operation: "create", reason: errnoText()) }
    }

    deinit { close(descriptor) }

    /// Appends bytes at the current end.
    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let wrote = write(descriptor, raw.baseAddress! + done, raw.count - done)
                if wrote < 0, errno == EINTR { continue }
                guard wrote > 0 else { throw MediaFileError.io(path: path, operation: "write", reason: errnoText()) }
                done += wrote
            }
        }
    }

    /// Overwrites bytes at `offset` without moving the append position.
    func overwrite(_ bytes: [UInt8], at offset: Int) throws {
        let wrote = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress!, $0.count, off_t(offset)) }
        guard wrote == bytes.count else {
            throw MediaFileError.io(path: path, operation: "write", reason: errnoText())
        }
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }
