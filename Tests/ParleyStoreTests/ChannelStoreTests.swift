import Foundation
import ParleyTestLanes
import Testing

@testable import ParleyStore

/// Channels and the conversation list, the same on every backend.
@Suite(.lane(.stores))
struct ChannelStoreTests {
    func post(_ id: String, by sender: String, in channel: String = "team", text: String = "hi", at time: Int64 = 10)
        -> NewChannelPost
    {
        NewChannelPost(id: id, channel: channel, sender: sender, text: text, postedAt: time)
    }

    @Test(arguments: StoreBackend.allCases) func joiningAndLeavingAreActivityLinesWithTheMemberCount(
        _ backend: StoreBackend
    ) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            let aliceJoined = try #require(try store.join(channel: "team", account: "alice", at: 1))
            #expect(aliceJoined.post.kind == .joined && aliceJoined.members == 1)
            #expect(try store.join(channel: "team", account: "alice", at: 2) == nil)  // a member already
            #expect(try store.join(channel: "team", account: "bob", at: 3)?.members == 2)
            let members = try store.members(of: "team", limit: 10)
            #expect(members.count == 2 && members.names == ["alice", "bob"])
            #expect(try store.members(of: "team", limit: 1).names == ["alice"])
            #expect(try store.channels(of: "bob") == ["team"])
            let left = try #require(try store.leave(channel: "team", account: "alice", at: 4))
            #expect(left.post.kind == .left && left.members == 1)
            #expect(try store.leave(channel: "team", account: "alice", at: 5) == nil)
            #expect(try store.channels(of: "alice").isEmpty)
            let history = try store.channelHistory("team", before: nil, limit: 10)
            #expect(history.map(\.post.kind) == [.left, .joined, .joined])
            #expect(history.map(\.post.sender) == ["alice", "bob", "alice"])
        }
    }

    @Test(arguments: StoreBackend.allCases) func aChannelRetryIsNeverADuplicateAndHistoryPagesBackwards(
        _ backend: StoreBackend
    ) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            _ = try store.join(channel: "team", account: "alice", at: 1)
            let first = try store.post(post("p1", by: "alice"))
            let retry = try store.post(post("p1", by: "alice"))
            #expect(first.isNew && !retry.isNew && first.stored == retry.stored)
            #expect(throws: StoreError.idReused(sender: "alice", id: "p1")) {
                try store.post(post("p1", by: "alice", text: "something else"))
            }
            // The same id in another channel is another message.
            #expect(try store.post(post("p1", by: "alice", in: "other")).isNew)
            for index in 2...6 { _ = try store.post(post("p\(index)", by: "alice", text: "line \(index)")) }
            let newest = try store.channelHistory("team", before: nil, limit: 3)
            #expect(newest.map(\.post.text) == ["line 6", "line 5", "line 4"])
            let older = try store.channelHistory("team", before: newest.last?.sequence, limit: 10)
            #expect(older.map(\.post.text) == ["line 3", "line 2", "hi", ""])
        }
    }

    @Test(arguments: StoreBackend.allCases) func theConversationListIsNewestFirstWithUnreadCounts(
        _ backend: StoreBackend
    ) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            func dm(_ id: String, _ from: String, _ to: String, _ at: Int64) throws -> StoredDirectMessage {
                try store.store(NewDirectMessage(id: id, sender: from, recipient: to, sealed: [1], receivedAt: at))
                    .stored
            }
            let fromBob1 = try dm("b1", "bob", "alice", 100)
            _ = try dm("b2", "bob", "alice", 110)
            _ = try dm("a1", "alice", "carol", 120)
            _ = try store.join(channel: "team", account: "alice", at: 90)
            _ = try store.join(channel: "team", account: "dave", at: 95)
            _ = try store.post(post("d1", by: "dave", text: "standup?", at: 130))
            _ = try store.post(post("x1", by: "alice", text: "mine", at: 135))
            let list = try store.conversations(of: "alice", limit: 10)
            #expect(list.map(\.lastAt) == [135, 120, 110])
            guard case .channel(let channel, let lastPost) = list[0].kind, case .direct(let carol, _) = list[1].kind,
                case .direct(let bob, let lastFromBob) = list[2].kind
            else {
                Issue.record("kinds: \(list.map(\.kind))")
                return
            }
            #expect(channel == "team" && lastPost?.post.text == "mine")
            #expect(carol == "carol" && list[1].unread == 0)  // alice wrote it
            #expect(bob == "bob" && lastFromBob.message.id == "b2" && list[2].unread == 2)
            // Dave's line is unread; alice's own and the activity lines never are.
            #expect(list[0].unread == 1)

            let marks = try store.markRead(from: "bob", to: "alice", through: fromBob1.sequence, at: 200)
            #expect(marks == [MessageMark(sequence: fromBob1.sequence, sender: "bob")])
            try store.markChannelRead("team", by: "alice", through: lastPost?.sequence ?? 0)
            try store.markChannelRead("team", by: "alice", through: 0)  // never backwards
            let after = try store.conversations(of: "alice", limit: 10)
            #expect(after.map(\.unread) == [0, 0, 1])
            #expect(try store.conversations(of: "alice", limit: 1).count == 1)
            #expect(try store.conversations(of: "nobody", limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.allCases) func aLateJoinerHasReadWhatCameBefore(_ backend: StoreBackend) async throws
    {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            _ = try store.join(channel: "team", account: "alice", at: 1)
            _ = try store.post(post("p1", by: "alice", at: 2))
            _ = try store.join(channel: "team", account: "bob", at: 3)
            #expect(try store.conversations(of: "bob", limit: 10).map(\.unread) == [0])
            _ = try store.post(post("p2", by: "alice", at: 4))
            #expect(try store.conversations(of: "bob", limit: 10).map(\.unread) == [1])
        }
    }

    @Test(arguments: StoreBackend.allCases) func deliveredMarksNameTheirSendersOnce(_ backend: StoreBackend)
        async throws
    {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            let one = try store.store(
                NewDirectMessage(id: "1", sender: "alice", recipient: "bob", sealed: [1], receivedAt: 1))
            let two = try store.store(
                NewDirectMessage(id: "1", sender: "carol", recipient: "bob", sealed: [1], receivedAt: 1))
            let marks = try store.markDelivered([one.stored.sequence, two.stored.sequence], to: "bob", at: 5)
            #expect(
                marks == [
                    MessageMark(sequence: one.stored.sequence, sender: "alice"),
                    MessageMark(sequence: two.stored.sequence, sender: "carol"),
                ])
            #expect(try store.markDelivered([one.stored.sequence], to: "bob", at: 6).isEmpty)  // already delivered
        }
    }
}
