import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The GNU-only batch socket calls and CPU affinity, which Swift's Glibc module does not import (they need
/// _GNU_SOURCE): looked up in the C library at run time, with `mmsghdr` declared below with the same layout.
enum BatchIO {
    typealias Receive =
        @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<timespec>?)
        -> Int32
    typealias Send = @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32
    typealias Affinity = @convention(c) (Int32, Int, UnsafeRawPointer?) -> Int32

    /// MSG_WAITFORONE: block for the first datagram only.
    static let waitForOne: Int32 = 0x10000

    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(address, to: type)
    }

    private static let receiveFunction = symbol("recvmmsg", as: Receive.self)
    private static let sendFunction = symbol("sendmmsg", as: Send.self)
    private static let affinityFunction = symbol("sched_setaffinity", as: Affinity.self)
    private static let threadIDFunction = symbol("gettid", as: (@convention(c) () -> Int32).self)

    /// The calling thread's kernel id (for /proc/self/task/ID).
    static func threadID() -> Int32 { threadIDFunction() }

    static func recvmmsg(
        _ descriptor: Int32, _ headers: UnsafeMutablePointer<MultiMessageHeader>, _ count: UInt32,
        _ flags: Int32, _ timeout: UnsafeMutablePointer<timespec>?
    ) -> Int32 {
        receiveFunction(descriptor, UnsafeMutableRawPointer(headers), count, flags, timeout)
    }

    static func sendmmsg(
        _ descriptor: Int32, _ headers: UnsafeMutablePointer<MultiMessageHeader>, _ count: UInt32,
        _ flags: Int32
    ) -> Int32 {
        sendFunction(descriptor, UnsafeMutableRawPointer(headers), count, flags)
    }

    static func setAffinity(_ thread: Int32, _ size: Int, _ mask: [UInt8]) -> Int32 {
        mask.withUnsafeBytes { affinityFunction(thread, size, $0.baseAddress) }
    }
}

/// `struct mmsghdr` of <sys/socket.h>: a msghdr and the byte count the call filled in (64 bytes on 64-bit Linux).
struct MultiMessageHeader {
    var msg_hdr: msghdr
    var msg_len: UInt32
}

/// Which CPUs the forwarder and the load generator run on.
struct CPUPinning {
    var forwarder: Int
    var generator: Int
}
