import ParleyWire
import Testing

@testable import ParleyEngine

/// What a messaging client keeps of the events it was sent is bounded: at the limit the oldest half goes.
@Suite struct MessagingClientInboxTests {
    @Test(arguments: [1, 2, 7, 10, 10_000])
    func theInboxDropsItsOldestHalfAtTheLimitAndKeepsTheNewest(limit: Int) {
        var events: [MessagingEvent] = []
        let total = 3 * limit + 1
        for token in 0..<total {
            MessagingClient.keep(.pong(KeepAlive(token: UInt64(token))), in: &events, limit: limit)
            #expect(events.count <= limit, "\(events.count) kept past the limit of \(limit)")
        }
        #expect(events.last == .pong(KeepAlive(token: UInt64(total - 1))), "the newest is kept")
        let tokens = events.map { if case .pong(let p) = $0 { Int(p.token) } else { -1 } }
        #expect(tokens == Array((total - tokens.count)..<total), "what is kept is the newest run, in order")
        #expect(tokens.count >= (limit + 1) / 2, "at least half the limit stays: \(tokens.count) of \(limit)")
    }

    @Test func theDefaultLimitIsTheDocumentedTenThousand() {
        var events: [MessagingEvent] = []
        for token in 0..<10_000 { MessagingClient.keep(.pong(KeepAlive(token: UInt64(token))), in: &events) }
        #expect(events.count == 10_000)
        MessagingClient.keep(.pong(KeepAlive(token: 10_000)), in: &events)
        #expect(events.count == 5_001 && events.first == .pong(KeepAlive(token: 5_000)))
    }
}
