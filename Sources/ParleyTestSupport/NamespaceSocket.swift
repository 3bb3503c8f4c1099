import Foundation
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// Sockets made inside a network namespace by this process: a short-lived thread enters the namespace
/// (`setns`), creates and binds them, and ends; a socket stays in the namespace it was made in whichever thread uses
/// it, so an event loop of the test process serves it. Root only, as the lab is.
public enum NamespaceSocket {
    /// An IPv4 address and port to bind.
    public struct Address: Sendable, Equatable {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// One bound UDP socket per address, made in `namespace` (nil: this process's own), non-blocking.
    public static func boundUDP(_ addresses: [Address], in namespace: String?) async throws -> [CInt] {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[CInt], any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try makeSockets(addresses, in: namespace) })
            }
            thread.start()
        }
    }

    /// One listening TCP socket on `address`, made in `namespace`, non-blocking.
    public static func listeningTCP(_ address: Address, in namespace: String?) async throws -> CInt {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CInt, any Error>) in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        try makeSockets([address], in: namespace, type: CInt(SOCK_STREAM.rawValue))[0]
                    })
            }
            thread.start()
        }
    }

    private static func makeSockets(
        _ addresses: [Address], in namespace: String?, type: CInt = CInt(SOCK_DGRAM.rawValue)
    ) throws -> [CInt] {
        if let namespace { try enter(namespace) }
        var made: [CInt] = []
        do {
            for address in addresses { made.append(try bind(address, type: type)) }
        } catch {
            for socket in made { close(socket) }
            throw error
        }
        return made
    }

    /// Moves the calling thread into `namespace` (as `ip netns exec` does the process).
    private static func enter(_ namespace: String) throws {
        let descriptor = open("/var/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw NetworkLabError(
                description: "namespace \(namespace): open failed: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // Glibc's `setns` is declared only under _GNU_SOURCE, which Swift's Glibc module does not set.
        typealias SetNamespace = @convention(c) (CInt, CInt) -> CInt
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "setns") else {
            throw NetworkLabError(description: "this C library has no setns")
        }
        let setNamespace = unsafeBitCast(symbol, to: SetNamespace.self)
        let newNetworkNamespace: CInt = 0x4000_0000  // CLONE_NEWNET
        guard setNamespace(descriptor, newNetworkNamespace) == 0 else {
            throw NetworkLabError(
                description: "namespace \(namespace): setns failed: \(String(cString: strerror(errno)))")
        }
    }

    private static func bind(_ address: Address, type: CInt) throws -> CInt {
        let socket = Glibc.socket(AF_INET, type | CInt(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else {
            throw NetworkLabError(description: "socket failed: \(String(cString: strerror(errno)))")
        }
        var inet = sockaddr_in()
        inet.sin_family = sa_family_t(AF_INET)
        inet.sin_port = in_port_t(UInt16(address.port).bigEndian)
        guard inet_pton(AF_INET, address.host, &inet.sin_addr) == 1 else {
            close(socket)
            throw NetworkLabError(description: "\(address.host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &inet) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw NetworkLabError(description: "bind \(address.host):\(address.port) failed: \(reason)")
        }
        if type == CInt(SOCK_STREAM.rawValue), listen(socket, 64) != 0 {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw NetworkLabError(description: "listen \(address.host):\(address.port) failed: \(reason)")
        }
        return socket
    }
}
