import Foundation
import Logging
import Testing

@testable import ParleyRelay

/// The relay's TCP connections before they become WebSockets: counted against `--max-connections` from accept, and
/// closed when their handshake stalls.
struct RelaySocketBudgetTests {
    func startRelay(connections: Int, joinTimeout: Duration) async throws -> Relay {
        var logger = Logger(label: "test.relay")
        logger.logLevel = .critical
        var limits = SignalingLimits()
        limits.connections = connections
        limits.joinTimeout = joinTimeout
        limits.connectionsPerAddress = 1000
        return try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, limits: limits, logger: logger))
    }

    /// A blocking TCP socket connected to the relay, with a receive timeout.
    func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(status == 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Waits for the relay to close `fd`: true when a read sees end of stream (or a reset) within the receive timeout.
    func closedByRelay(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, 0)
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    @Test("a connection that never finishes its HTTP handshake is closed after the join timeout and counted")
    func stalledHandshake() async throws {
        let relay = try await startRelay(connections: 100, joinTimeout: .seconds(1))
        let fd = try connect(relay.signalingPort)
        defer { close(fd) }
        // Half a request line, then nothing: the classic slow client.
        _ = "GET / HT".withCString { send(fd, $0, 8, 0) }
        let started = ContinuousClock.now
        #expect(closedByRelay(fd), "the relay closes it")
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900) && waited < .seconds(4), "closed after \(waited)")
        #expect(try await relay.counters().joinTimeouts == 1)
        await relay.shutdown()
    }

    @Test("past --max-connections a new TCP connection is closed at once and counted; a freed place is taken again")
    func budget() async throws {
        let relay = try await startRelay(connections: 3, joinTimeout: .seconds(30))
        let held = try (0..<3).map { _ in try connect(relay.signalingPort) }
        try await Task.sleep(for: .milliseconds(200))
        let extra = try connect(relay.signalingPort)
        #expect(closedByRelay(extra), "the fourth is refused")
        close(extra)
        let counters = try await relay.counters()
        #expect(counters.refusedFull == 1)
        #expect(counters.limitsReached >= 1)
        close(held[0])
        try await Task.sleep(for: .milliseconds(200))
        let again = try connect(relay.signalingPort)
        var timeout = timeval(tv_sec: 0, tv_usec: 500_000)
        setsockopt(again, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        #expect(recv(again, &byte, 1, 0) < 0 && errno == EAGAIN, "a freed place is kept open")
        for fd in held.dropFirst() + [again] { close(fd) }
        await relay.shutdown()
    }
}
