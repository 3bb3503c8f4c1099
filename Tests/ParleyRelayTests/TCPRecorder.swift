import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback that forwards every connection to `target` and keeps every byte that crossed it, both
/// ways: what an eavesdropper on the signaling path would see. Plain blocking sockets, a thread per direction.
final class TCPRecorder: Sendable {
    /// The port clients connect to instead of the target's.
    let port: Int
    private let listener: Int32
    private let recorded = Mutex<[UInt8]>([])
    private let sockets = Mutex<[Int32]>([])
    /// Most bytes kept (4 MB): plenty for a few seconds of signaling.
    private let limit = 4 << 20

    private init(port: Int, listener: Int32) {
        self.port = port
        self.listener = listener
    }

    /// Everything recorded so far, both directions in arrival order.
    var bytes: [UInt8] { recorded.withLock { $0 } }

    /// Starts recording connections to 127.0.0.1:`targetPort`.
    static func start(targetPort: Int) async throws -> TCPRecorder {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let recorder = TCPRecorder(port: Int(UInt16(bigEndian: address.sin_port)), listener: listener)
        Thread { recorder.acceptLoop(targetPort: targetPort) }.start()
        return recorder
    }

    func stop() async {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    private func acceptLoop(targetPort: Int) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(client)
                close(upstream)
                continue
            }
            sockets.withLock { $0 += [client, upstream] }
            Thread { self.pump(from: client, to: upstream) }.start()
            Thread { self.pump(from: upstream, to: client) }.start()
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            recorded.withLock { if $0.count < limit { $0 += buffer[0..<count] } }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes {
                    send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                }
                guard written > 0 else { break }
                sent += written
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
