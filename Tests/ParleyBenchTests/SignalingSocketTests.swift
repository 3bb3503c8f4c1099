import Foundation
import Logging
import ParleyRelay
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyBench

#if canImport(Glibc)
import Glibc
#endif

/// The benches' join client: its bounded inbox, and joins through the product's WebSocket client to a real relay.
@Suite(.serialized, .lane(.timing))
struct SignalingSocketTests {
    @Test(
        "a full inbox drops its oldest and counts them",
        arguments: [
            (capacity: 3, added: [1, 2], kept: [1, 2], discarded: 0),
            (capacity: 3, added: [1, 2, 3], kept: [1, 2, 3], discarded: 0),
            (capacity: 3, added: [1, 2, 3, 4, 5], kept: [3, 4, 5], discarded: 2),
            (capacity: 1, added: Array(1...10), kept: [10], discarded: 9),
        ])
    func boundedInbox(capacity: Int, added: [Int], kept: [Int], discarded: Int) {
        var inbox = BoundedInbox<Int>(capacity: capacity)
        for element in added { inbox.add(element) }
        #expect(inbox.elements == kept)
        #expect(inbox.discarded == discarded)
    }

    @Test func readingTakesTheOldestAndDiscardingCounts() {
        var inbox = BoundedInbox<Int>(capacity: 4)
        for element in 1...6 { inbox.add(element) }
        #expect(inbox.next() == 3)
        inbox.discardAll()
        #expect(inbox.next() == nil)
        #expect(inbox.discarded == 2 + 3)
    }

    @Test func twoMembersJoinOneRoomAndTheLoopStopsAfterTheLast() async throws {
        var logger = Logger(label: "test.relay")
        logger.logLevel = .critical
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger))
        let port = relay.signalingPort
        let (first, second, running) = try await onThread {
            let alice = try SignalingSocket(port: port)
            let bob = try SignalingSocket(port: port)
            let first = try alice.join(room: "bench", name: "alice")
            let second = try bob.join(room: "bench", name: "bob", role: .audience)
            alice.keepAlive()
            alice.discardIncoming()
            alice.leave()
            bob.leave()
            return (first, second, SignalingLoop.shared.isRunning)
        }
        await relay.shutdown()
        #expect(first.room == "bench" && first.members.isEmpty)
        #expect(second.members.map(\.name) == ["alice"])
        #expect(second.you.role == .audience)
        #expect(running, "the members shared a running loop")
        #expect(!SignalingLoop.shared.isRunning, "the last member out shut the loop down")
    }

    @Test func aListenerThatNeverUpgradesFailsTheJoinInTime() async throws {
        // A listening socket nobody accepts on: the kernel completes TCP, nothing answers the upgrade.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let started = ContinuousClock.now
        let failure = try await onThread { () -> String in
            do {
                _ = try SignalingSocket(port: port)
                return "connected"
            } catch {
                return "\(error)"
            }
        }
        #expect(failure.hasPrefix("join failed: connecting to 127.0.0.1:\(port): "))
        #expect(failure.contains("no WebSocket upgrade within"))
        #expect(ContinuousClock.now - started < SignalingSocket.timeout + .seconds(2))
        #expect(!SignalingLoop.shared.isRunning)
    }

    /// Runs blocking bench code on a thread of its own, off the tests' cooperative threads.
    private func onThread<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
