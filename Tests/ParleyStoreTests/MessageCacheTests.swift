import Foundation
import Testing

@testable import ParleyStore

struct MessageCacheTests {
    let folder = NSTemporaryDirectory() + "parley-cache-\(UUID().uuidString)"

    @Test func theOutboxKeepsWhatWasNotAcknowledgedAndTheCacheKeepsTheConversation() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/accounts/alice.messages.sqlite"
        let cache = try MessageCache(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try cache.queue(OutgoingMessage(id: "1", to: "bob", text: "first", writtenAt: 1))
        try cache.queue(OutgoingMessage(id: "2", to: "bob", text: "second", writtenAt: 2))
        try cache.queue(OutgoingMessage(id: "1", to: "bob", text: "first", writtenAt: 1))  // queued twice: once
        #expect(try cache.outbox().map(\.id) == ["1", "2"])
        try cache.acknowledged("1", sequence: 10, from: "alice", sentAt: 5)
        try cache.remember(
            [
                CachedMessage(sequence: 11, id: "b", from: "bob", to: "alice", text: "hi", sentAt: 6),
                CachedMessage(sequence: 10, id: "1", from: "alice", to: "bob", text: "first", sentAt: 5),
            ],
            of: "alice")
        #expect(try cache.outbox().map(\.id) == ["2"])
        // Reopened (another command): the same.
        let again = try MessageCache(path: path)
        #expect(try again.history(with: "bob", limit: 10).map(\.text) == ["hi", "first"])
        #expect(try again.outbox().map(\.text) == ["second"])
        try again.forget("2")
        #expect(try again.outbox().isEmpty)
    }

    @Test func eachConversationAndTheOutboxAreBounded() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cache = try MessageCache(path: folder + "/c.sqlite", perConversationLimit: 3)
        try cache.remember(
            (1...5).map {
                CachedMessage(
                    sequence: Int64($0), id: "\($0)", from: "bob", to: "alice",
                    text: "m\($0)", sentAt: Int64($0))
            }, of: "alice")
        try cache.remember(
            [CachedMessage(sequence: 9, id: "x", from: "carol", to: "alice", text: "c", sentAt: 9)],
            of: "alice")
        #expect(try cache.history(with: "bob", limit: 10).map(\.text) == ["m5", "m4", "m3"], "the oldest go first")
        #expect(try cache.history(with: "carol", limit: 10).count == 1)
        for index in 0..<MessageCache.outboxLimit {
            try cache.queue(OutgoingMessage(id: "o\(index)", to: "bob", text: "t", writtenAt: Int64(index)))
        }
        #expect(throws: StoreError.self) {
            try cache.queue(OutgoingMessage(id: "over", to: "bob", text: "t", writtenAt: 0))
        }
        do {
            try cache.queue(OutgoingMessage(id: "over", to: "bob", text: "t", writtenAt: 0))
        } catch {
            #expect("\(error)".contains("the outbox holds 1000 unsent messages"), "\(error)")
        }
    }
}
