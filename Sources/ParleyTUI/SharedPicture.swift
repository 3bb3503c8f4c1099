#if canImport(Glibc)
import Glibc
#endif

/// Pictures handed to a local kitty through POSIX shared memory (`t=s`): each picture goes into a new object that
/// the terminal reads and unlinks. Objects the terminal has not taken are unlinked here once more than `limit`
/// are outstanding, and all of them when the screen closes, so a terminal that stops reading leaks nothing.
struct SharedPictures: Sendable {
    private var outstanding: [String] = []
    private var counter = 0
    private let prefix: String
    /// Objects written and not known to be taken, at most.
    static let limit = 64

    init(prefix: String = "/parley-\(getpid())-") {
        self.prefix = prefix
    }

    /// Why a picture could not be put in shared memory.
    struct Failed: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "shared memory: \(call) failed: \(String(cString: strerror(code)))" }
    }

    /// Writes `bytes` into a new shared memory object and returns its name.
    mutating func store(_ bytes: [UInt8]) throws(Failed) -> String {
        counter &+= 1
        let name = prefix + String(counter)
        try Self.write(bytes, to: name)
        outstanding.append(name)
        if outstanding.count > Self.limit { shm_unlink(outstanding.removeFirst()) }
        return name
    }

    /// Unlinks every object the terminal may not have taken.
    mutating func removeAll() {
        for name in outstanding { shm_unlink(name) }
        outstanding.removeAll()
    }

    /// Creates `name` holding `bytes` (exclusive: an object of that name already there is an error).
    static func write(_ bytes: [UInt8], to name: String) throws(Failed) {
        let descriptor = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0o600)
        guard descriptor >= 0 else { throw Failed(call: "shm_open", code: errno) }
        defer { close(descriptor) }
        guard ftruncate(descriptor, off_t(bytes.count)) == 0 else {
            let code = errno
            shm_unlink(name)
            throw Failed(call: "ftruncate", code: code)
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                pwrite(
                    descriptor, $0.baseAddress! + offset, $0.count - offset,
                    off_t(offset))
            }
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                shm_unlink(name)
                throw Failed(call: "write", code: code)
            }
            offset += written
        }
    }
}
