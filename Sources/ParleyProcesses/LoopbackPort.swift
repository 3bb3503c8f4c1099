import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Ports on 127.0.0.1 for relays the tests start.
public enum LoopbackPort {
    /// A port free now for both TCP and UDP on 127.0.0.1, below the kernel's ephemeral range (32768 and up).
    ///
    /// For a relay a test stops and starts again on the same port. While it is down, a port in the ephemeral range
    /// can become any socket's source port, even that of a reconnecting client's own connect to it (a TCP
    /// self-connect), and the relay started again could not bind it ("port … is already in use"). Below the range
    /// only an explicit bind takes a port.
    public static func belowEphemeralRange() throws -> Int {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let port = Int.random(in: 20_000..<32_000, using: &generator)
            if canBind(port, type: Int32(SOCK_STREAM.rawValue)) && canBind(port, type: Int32(SOCK_DGRAM.rawValue)) {
                return port
            }
        }
        throw LoopbackPortError(
            description: "no port of 20000…31999 was free on 127.0.0.1 for TCP and UDP in 100 tries")
    }

    /// Whether a socket of `type` can bind 127.0.0.1:`port` now (with SO_REUSEADDR, as the relay binds).
    static func canBind(_ port: Int, type: Int32) -> Bool {
        let socket = Glibc.socket(AF_INET, type, 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var one: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// No port could be found.
public struct LoopbackPortError: Error, CustomStringConvertible {
    public var description: String
}
