#if os(Linux)
import CV4L2Shim
import Glibc

/// An errno value returned by a `V4L2System` call.
struct V4L2Errno: Error, Equatable {
    /// The errno number (`EBUSY`, `ENODEV`, ...).
    var code: Int32
}

/// The handful of system calls the V4L2 camera code makes, behind a protocol so that enumeration, every error path
/// and capture can be tested with a fake driver on a machine without cameras. Production uses `LinuxV4L2System`.
protocol V4L2System: Sendable {
    /// Paths of the `/dev/video*` nodes, in number order.
    func deviceNodes() -> [String]
    /// Opens a device node for non-blocking reading and writing; returns the descriptor.
    func open(_ path: String) -> Result<Int32, V4L2Errno>
    /// Closes a descriptor from `open`.
    func close(_ fd: Int32)
    /// One `VIDIOC_*` ioctl on the structure at `argument`; 0 on success, else the errno value.
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32
    /// Waits up to `timeoutMillis` until `fd` is readable (or in error); false on timeout.
    func poll(_ fd: Int32, timeoutMillis: Int32) -> Result<Bool, V4L2Errno>
    /// Maps `length` bytes of a driver buffer at `offset` (from `VIDIOC_QUERYBUF`).
    func map(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, V4L2Errno>
    /// Unmaps a buffer from `map`.
    func unmap(_ pointer: UnsafeMutableRawPointer, length: Int)
}

extension V4L2System {
    /// `ioctl` on a typed structure.
    func call<Argument>(_ fd: Int32, _ request: UInt, _ argument: inout Argument) -> Int32 {
        withUnsafeMutablePointer(to: &argument) { ioctl(fd, request, UnsafeMutableRawPointer($0)) }
    }
}

/// The real system calls.
struct LinuxV4L2System: V4L2System {
    /// At most this many `/dev/video*` nodes are looked at.
    static let maximumNodes = 64

    func deviceNodes() -> [String] {
        guard let directory = opendir("/dev") else { return [] }
        defer { closedir(directory) }
        var numbers: [Int] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasPrefix("video"), let number = Int(name.dropFirst(5)), number >= 0 else { continue }
            numbers.append(number)
        }
        return numbers.sorted().prefix(Self.maximumNodes).map { "/dev/video\($0)" }
    }

    func open(_ path: String) -> Result<Int32, V4L2Errno> {
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        return fd >= 0 ? .success(fd) : .failure(V4L2Errno(code: errno))
    }

    func close(_ fd: Int32) { _ = Glibc.close(fd) }

    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        parley_v4l2_ioctl(fd, request, argument) == 0 ? 0 : errno
    }

    func poll(_ fd: Int32, timeoutMillis: Int32) -> Result<Bool, V4L2Errno> {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let result = Glibc.poll(&descriptor, 1, timeoutMillis)
        if result < 0 { return errno == EINTR ? .success(false) : .failure(V4L2Errno(code: errno)) }
        return .success(result > 0)
    }

    func map(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, V4L2Errno> {
        let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        guard let pointer, pointer != UnsafeMutableRawPointer(bitPattern: -1) else {
            return .failure(V4L2Errno(code: errno))
        }
        return .success(pointer)
    }

    func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) { _ = munmap(pointer, length) }
}
#endif
