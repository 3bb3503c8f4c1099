import Foundation
import Logging
import ParleyTestLanes
import Testing

@testable import ParleyRelay

/// The relay's TCP connections before they become WebSockets: counted against `--max-connections` from accept, and
/// closed when their handshake stalls.
@Suite(.lane(.timing))
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

    @Test("a connection that never finishes its HTTP handshake is closed after the join timeout and counted")
    func stalledHandshake() async throws {
        let relay = try await startRelay(connections: 100, joinTimeout: .seconds(1))
        // The relay's timer starts at accept, so the wait is measured from before the connect (on a loaded machine
        // the connect and the write alone took 150 ms).
        let started = ContinuousClock.now
        let connection = try await TestTCPConnection.connect(port: relay.signalingPort)
        // Half a request line, then nothing: the classic slow client.
        await connection.write(Array("GET / HT".utf8))
        // Not before the timeout, and by it (the counter names the cause; no other timer of the relay applies to a
        // connection that was never upgraded). How long after it is not asked: beside the main group's 800 tests and
        // a build on two cores the close was once seen 4 s after the connect, the test's own task waiting its turn.
        #expect(await connection.isClosed(within: .seconds(20)), "the relay closes it")
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900), "closed after \(waited), before the join timeout")
        #expect(try await relay.counters().joinTimeouts == 1)
        await relay.shutdown()
    }

    @Test("past --max-connections a new TCP connection is closed at once and counted; a freed place is taken again")
    func budget() async throws {
        let relay = try await startRelay(connections: 3, joinTimeout: .seconds(30))
        var held: [TestTCPConnection] = []
        for _ in 0..<3 { held.append(try await TestTCPConnection.connect(port: relay.signalingPort)) }
        let counted = await eventually { (try? await relay.counters().openConnections) == 3 }
        #expect(counted, "the relay holds the three")
        let extra = try await TestTCPConnection.connect(port: relay.signalingPort)
        #expect(await extra.isClosed(within: .seconds(5)), "the fourth is refused")
        let counters = try await relay.counters()
        #expect(counters.refusedFull == 1)
        #expect(counters.limitsReached >= 1)
        await held[0].close()
        let freed = await eventually { (try? await relay.counters().openConnections) == 2 }
        #expect(freed, "the place is given back")
        let again = try await TestTCPConnection.connect(port: relay.signalingPort)
        #expect(await again.isClosed(within: .milliseconds(500)) == false, "a freed place is kept open")
        for connection in held.dropFirst() + [again] { await connection.close() }
        await relay.shutdown()
    }
}
