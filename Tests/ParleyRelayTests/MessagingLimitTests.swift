import Foundation
import ParleyRelay
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

/// The messaging service's limits, each driven until it is hit on a real relay (set low so a test can reach them):
/// the error names the limit, and what was allowed before still works.
@Suite(.lane(.timing)) struct MessagingLimitTests {
    let folder = NSTemporaryDirectory() + "parley-messaging-limits-\(UUID().uuidString)"

    func startRelay(_ adjust: (inout MessagingLimits) -> Void) async throws -> Relay {
        try await startMessagingRelay(in: folder) { adjust(&$0.messaging) }
    }

    func loggedIn(_ identity: AccountIdentity, _ relay: Relay) async throws -> TestMessenger {
        try await TestMessenger.loggedIn(identity, port: relay.signalingPort)
    }

    /// Joins `channel` and returns the answer: the member list, or the error.
    func join(_ channel: String, _ messenger: TestMessenger) async throws -> MessagingEvent {
        let before = messenger.events.count
        messenger.send(.joinChannel(ChannelRef(channel: channel)))
        return try await messenger.wait(for: "the answer to joining \(channel)") { _ in
            messenger.events.dropFirst(before).first { event in
                switch event {
                case .members(let members): members.channel == channel
                case .error: true
                default: false
                }
            }
        }
    }

    @Test func aThirdConnectionOfOneAccountIsRefusedByName() async throws {
        let relay = try await startRelay { $0.connectionsPerAccount = 2 }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = AccountIdentity.create(name: "alice")
        let first = try await loggedIn(alice, relay)
        let second = try await loggedIn(alice, relay)
        let third = try await TestMessenger.connect(alice, port: relay.signalingPort)
        let answer = try await third.login()
        #expect(answer.errorCode == .limitReached && "\(answer)".contains("alice holds 2 connections"), "\(answer)")
        #expect(!first.isClosed && !second.isClosed)
        await relay.shutdown()
    }

    @Test func channelsPerAccountAndMembersPerChannelAreRefusedByName() async throws {
        let relay = try await startRelay {
            $0.channelsPerAccount = 2
            $0.membersPerChannel = 2
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await loggedIn(.create(name: "alice"), relay)
        for channel in ["design", "ops"] {
            let joined = try await join(channel, alice)
            #expect(joined.errorCode == nil, "\(joined)")
        }
        let third = try await join("random", alice)
        #expect(third.errorCode == .limitReached && "\(third)".contains("alice is in 2 channels"), "\(third)")
        let again = try await join("design", alice)
        #expect(again.errorCode == nil, "joining a channel one is in is no new channel: \(again)")

        let bob = try await loggedIn(.create(name: "bob"), relay)
        #expect(try await join("design", bob).errorCode == nil)
        let carol = try await loggedIn(.create(name: "carol"), relay)
        let full = try await join("design", carol)
        #expect(full.errorCode == .limitReached && "\(full)".contains("channel design has 2 members"), "\(full)")
        await relay.shutdown()
    }

    @Test func aFloodOfRequestsIsRefusedAsRateLimitedAndServedAgainAfterAPause() async throws {
        let relay = try await startRelay {
            $0.requestsPerSecond = 5
            $0.burst = 10
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await loggedIn(.create(name: "alice"), relay)
        for token in 0..<40 { alice.send(.ping(KeepAlive(token: UInt64(token)))) }
        let limited = try await alice.wait(for: "rate-limited") { $0.errorCode == .rateLimited ? $0 : nil }
        #expect("\(limited)".contains("more than 5 requests a second"), "\(limited)")
        let answered = alice.events.filter { if case .pong = $0 { true } else { false } }.count
        #expect(answered < 40, "\(answered) of 40 pings answered")
        try await Task.sleep(for: .seconds(1))
        alice.send(.ping(KeepAlive(token: 999)))
        _ = try await alice.wait(for: "a pong after the pause") { $0 == .pong(KeepAlive(token: 999)) ? true : nil }
        await relay.shutdown()
    }

    @Test func aMessageIDOverItsLimitIsABadField() async throws {
        let relay = try await startRelay { _ in }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await loggedIn(.create(name: "alice"), relay)
        let id = String(repeating: "i", count: maxMessageIDCharacters + 1)
        alice.send(.send(DirectMessageSend(id: id, to: "alice", sealed: Data([1, 2, 3]).base64EncodedString())))
        let refused = try await alice.wait(for: "bad field") { $0.errorCode == .badField ? $0 : nil }
        #expect(
            "\(refused)".contains("has \(maxMessageIDCharacters + 1) characters; it must have 1 to 64"),
            "\(refused)")
        await relay.shutdown()
    }
}
