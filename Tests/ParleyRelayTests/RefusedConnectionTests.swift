import Foundation
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyEngine

#if canImport(Glibc)
import Glibc
#endif

/// A relay that refuses a connection (full, at its descriptor budget) closes it at once. The client must say so in
/// words, whether the close arrives in order (FIN) or as a reset because the upgrade request was still unread (RST).
@Suite(.lane(.timing)) struct RefusedConnectionTests {
    enum Close: String, CaseIterable, CustomTestStringConvertible {
        case orderly, reset
        var testDescription: String { rawValue }
    }

    @Test(arguments: Close.allCases)
    func aConnectionClosedBeforeTheUpgradeSaysTheRelayMayBeFull(_ close: Close) async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let accepting = Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            if close == .reset {
                // Wait until the upgrade request is in, then close without reading it: Linux answers with RST.
                var ready = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, 2000)
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            Glibc.close(connection)
        }
        accepting.start()

        let server = ServerAddress(host: "127.0.0.1", port: port)
        do {
            _ = try await SignalingConnection.connect(to: server, on: RelayLoopbackTests.group.next()) { _ in }.get()
            Issue.record("connected to something that closed at once")
        } catch {
            #expect(
                "\(error)".contains("closed the connection without answering: the relay may be full"),
                "\(error)")
        }
    }
}
