#if canImport(Glibc)
import Glibc
#endif

/// A file the benchmark keeps in memory while it measures programs that read it.
///
/// The call benchmark's camera file is 633 MB, and this machine drops cold page cache on its own (about 1 MB a second
/// with nothing running), so without this the first client to read a frame in a call sometimes pays a disk read in
/// its `read` and sometimes not, depending on what ran just before. Locking the file's pages (`mlock` on a shared
/// read-only mapping keeps them in the page cache) makes every client's reads the same memory copies in every run.
///
/// Sendable: every property is set once in `init`, and the mapping is only read by the kernel (locked) and unmapped
/// in `deinit`.
final class ResidentFile: @unchecked Sendable {
    /// How the file is kept, for the table's notes.
    let how: String
    /// Whether the pages are locked in memory now.
    var isHeld: Bool { address != nil }
    private let address: UnsafeMutableRawPointer?
    private let length: Int

    /// Maps and locks `path`; where locking is refused (no CAP_IPC_LOCK and a small RLIMIT_MEMLOCK), reads it
    /// through once instead, and where it cannot be mapped leaves it on disk; `how` says which.
    init(path: String) {
        var mapped: UnsafeMutableRawPointer?
        var length = 0
        let how: String
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            how = "read from disk (cannot open it to hold it in memory: \(String(cString: strerror(errno))))"
        } else {
            var info = stat()
            if fstat(descriptor, &info) == 0, info.st_size > 0 {
                length = Int(info.st_size)
                let address = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, 0)
                if let address, address != MAP_FAILED {
                    if mlock(address, length) == 0 {
                        mapped = address
                        how = "held in memory for the whole benchmark (mlock), so no client's read waits on the disk"
                    } else {
                        let reason = String(cString: strerror(errno))
                        Self.touch(address, length)
                        munmap(address, length)
                        how = "read into the page cache before the calls (mlock refused: \(reason))"
                    }
                } else {
                    how = "read from disk (cannot map it: \(String(cString: strerror(errno))))"
                }
            } else {
                how = "read from disk (empty or unreadable)"
            }
            close(descriptor)
        }
        self.address = mapped
        self.length = length
        self.how = how
    }

    deinit {
        if let address {
            munlock(address, length)
            munmap(address, length)
        }
    }

    /// Reads one byte of every page so the kernel brings them all in.
    private static func touch(_ address: UnsafeMutableRawPointer, _ length: Int) {
        let bytes = address.assumingMemoryBound(to: UInt8.self)
        var sum: UInt8 = 0
        for offset in stride(from: 0, to: length, by: 4096) { sum &+= bytes[offset] }
        withExtendedLifetime(sum) {}
    }
}
