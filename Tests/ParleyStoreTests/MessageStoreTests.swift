import Foundation
import ParleyProcesses
import ParleySecurity
import ParleyTestLanes
import Testing

@testable import ParleyStore

/// The store's guarantees, the same for every backend: each test runs on SQLite and on PostgreSQL.
@Suite(.lane(.stores))
struct MessageStoreTests {
    func message(
        _ id: String, from sender: String = "alice", to recipient: String = "bob", at time: Int64 = 1,
        text: String = "x"
    ) -> NewDirectMessage {
        NewDirectMessage(id: id, sender: sender, recipient: recipient, sealed: Array(text.utf8), receivedAt: time)
    }

    @Test(arguments: StoreBackend.allCases) func aNameIsBoundToItsFirstKeysOnly(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            let alice = AccountIdentity.create(name: "alice").keys
            let impostor = AccountIdentity.create(name: "alice").keys
            #expect(try store.keys(of: "alice") == nil)
            #expect(try store.bind(account: "alice", to: alice) == .created)
            #expect(try store.bind(account: "alice", to: alice) == .matches)
            #expect(try store.bind(account: "alice", to: impostor) == .belongsToOtherKeys)
            #expect(try store.keys(of: "alice") == alice)
            #expect(try store.lastSeen("alice") == nil)
            try store.setLastSeen("alice", at: 1_700_000_000_000)
            #expect(try store.lastSeen("alice") == 1_700_000_000_000)
        }
    }

    @Test(arguments: StoreBackend.allCases) func aRetryIsNeverADuplicateAndAReusedIdIsRefused(_ backend: StoreBackend)
        async throws
    {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            let first = try store.store(message("m1"))
            let retry = try store.store(message("m1"))
            #expect(first.isNew && !retry.isNew && retry.stored == first.stored)
            #expect(throws: StoreError.idReused(sender: "alice", id: "m1")) {
                try store.store(message("m1", text: "other"))
            }
            let fromBob = try store.store(message("m1", from: "bob", to: "alice"))
            #expect(fromBob.isNew, "ids are per sender")
            // A group commit: each message as on its own, a refused one not stopping the others.
            let batch = try store.store(batch: [
                message("g1"), message("m1", text: "reused"), message("m1"), message("g2"),
            ])
            #expect(batch.count == 4)
            #expect((try? batch[0].get().isNew) == true && (try? batch[3].get().isNew) == true)
            #expect(throws: StoreError.idReused(sender: "alice", id: "m1")) { try batch[1].get() }
            #expect((try? batch[2].get().stored) == first.stored)
            #expect(try store.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m1", "g1", "g2"])
        }
    }

    @Test(arguments: StoreBackend.allCases) func undeliveredInOrderThenDeliveredAndReadAndPagedBackwards(
        _ backend: StoreBackend
    ) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            var sequences: [Int64] = []
            for index in 0..<10 {
                let sender = index % 2 == 0 ? "alice" : "bob"
                let recipient = index % 2 == 0 ? "bob" : "alice"
                sequences.append(
                    try store.store(message("m\(index)", from: sender, to: recipient, at: Int64(index))).stored.sequence
                )
            }
            _ = try store.store(message("other", from: "carol", to: "bob"))
            #expect(sequences == sequences.sorted(), "sequences rise in commit order")
            let toBob = try store.undelivered(to: "bob", limit: 3)
            #expect(toBob.map(\.message.id) == ["m0", "m2", "m4"], "oldest first, limited")
            #expect(try store.undeliveredCount(to: "bob") == 6)
            try store.markDelivered(toBob.map(\.sequence), to: "bob", at: 50)
            try store.markDelivered(toBob.map(\.sequence), to: "alice", at: 99)  // not alice's: ignored
            #expect(try store.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m6", "m8", "other"])
            try store.markRead(from: "alice", to: "bob", through: sequences[6], at: 60)
            #expect(
                try store.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m8", "other"],
                "read implies delivered")

            let newest = try store.history(between: "bob", and: "alice", before: nil, limit: 4)
            #expect(newest.map(\.message.id) == ["m9", "m8", "m7", "m6"], "newest first, carol's not in it")
            let older = try store.history(between: "alice", and: "bob", before: newest.last?.sequence, limit: 4)
            #expect(older.map(\.message.id) == ["m5", "m4", "m3", "m2"])
            #expect(older.first { $0.message.id == "m4" }?.deliveredAt == 50)
            #expect(older.first { $0.message.id == "m4" }?.readAt == 60)
            #expect(
                older.first { $0.message.id == "m5" }?.readAt == nil, "bob's messages to alice are not bob's to read")
        }
    }

    /// Two relays on one store (two opened stores: two PostgreSQL pools, or two SQLite connections to one file), each
    /// storing the same 50 messages at the same time, as a client retrying on another relay would: each message is
    /// stored once, new for exactly one of them, and both get its one sequence.
    @Test(arguments: StoreBackend.allCases)
    func twoRelaysStoringTheSameMessagesAtOnceKeepEachOnce(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { stores in
            let nodes = [try await stores.open(), try await stores.open()]
            let results = RaceResults()
            // Threads of their own, not the test's: both relays' calls block while they run.
            await withTaskGroup(of: Void.self) { group in
                for node in 0..<2 {
                    group.addTask {
                        await onOwnThread {
                            for index in 0..<50 {
                                let outcome = try? nodes[node].store(message("m\(index)"))
                                results.record(
                                    node: node, index: index, outcome.map { ($0.stored.sequence, $0.isNew) })
                            }
                        }
                    }
                }
            }
            let outcomes = results.outcomes
            for index in 0..<50 {
                let (first, second) = (outcomes[0][index], outcomes[1][index])
                #expect(first != nil && second != nil, "m\(index) failed on a relay")
                #expect(first?.isNew != second?.isNew, "m\(index) is new for exactly one relay")
                #expect(first?.sequence == second?.sequence, "m\(index) has one sequence")
            }
            let stored = try nodes[0].undelivered(to: "bob", limit: 200)
            #expect(stored.count == 50 && Set(stored.map(\.message.id)).count == 50, "each once: \(stored.count)")
        }
    }

    @Test(arguments: StoreBackend.allCases) func aReceiptIsMarkedInItsOwnOrderHoweverLong(_ backend: StoreBackend)
        async throws
    {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open()
            let toBob = try store.store(batch: (0..<1_200).map { message("r\($0)") }).map {
                try $0.get().stored.sequence
            }
            let toCarol = try store.store(message("c", to: "carol")).stored.sequence
            // Backwards, one listed twice, one of carol's: more sequences than one statement binds.
            let marks = try store.markDelivered(toBob.reversed() + [toBob[0], toCarol], to: "bob", at: 7)
            #expect(marks.map(\.sequence) == toBob.reversed(), "each once, in the receipt's order, not carol's")
            #expect(marks.allSatisfy { $0.sender == "alice" })
            #expect(try store.undeliveredCount(to: "bob") == 0)
            #expect(try store.undelivered(to: "carol", limit: 5).map(\.message.id) == ["c"])
        }
    }

    @Test(arguments: StoreBackend.allCases) func whatWasCommittedIsThereAfterReopening(_ backend: StoreBackend)
        async throws
    {
        try await StoreFixture.with(backend) { stores in
            do {
                let store = try await stores.open()
                _ = try store.bind(account: "alice", to: AccountIdentity.create(name: "alice").keys)
                _ = try store.store(message("kept"))
            }
            let again = try await stores.open()
            #expect(try again.undelivered(to: "bob", limit: 10).map(\.message.id) == ["kept"])
            #expect(try again.keys(of: "alice") != nil)
        }
    }

    @Test(arguments: StoreBackend.allCases) func aFullStoreRefusesWithItsReasonAndKeepsWhatItHas(
        _ backend: StoreBackend
    ) async throws {
        try await StoreFixture.with(backend) { stores in
            let store = try await stores.open(maximumBytes: try await stores.smallLimit())
            _ = try store.store(message("kept"))
            var refused: StoreError?
            for index in 0..<600 {
                do {
                    _ = try store.store(
                        NewDirectMessage(
                            id: "big\(index)", sender: "alice", recipient: "bob",
                            // Random bytes, as sealed messages are: PostgreSQL would compress repeated ones.
                            sealed: (0..<4096).map { _ in UInt8.random(in: 0...255) }, receivedAt: 1))
                } catch {
                    refused = error as? StoreError
                    break
                }
            }
            #expect("\(refused.map { "\($0)" } ?? "never full")".contains("the message store is full"))
            #expect(try store.undelivered(to: "bob", limit: 1).first?.message.id == "kept", "nothing stored is harmed")
        }
    }

    @Test(arguments: StoreBackend.allCases) func aReadOnlyStoreRefusesWritesAndStillReads(_ backend: StoreBackend)
        async throws
    {
        try await StoreFixture.with(backend) { stores in
            _ = try await stores.open().store(message("kept"))
            let readOnly = try await stores.openReadOnly()
            #expect(throws: StoreError.self) { try readOnly.store(message("new")) }
            do { _ = try readOnly.store(message("new")) } catch {
                #expect("\(error)".contains("the message store is read-only"), "\(error)")
            }
            #expect(try readOnly.undelivered(to: "bob", limit: 5).map(\.message.id) == ["kept"])
        }
    }

    @Test(arguments: StoreBackend.allCases) func aStoreThatCannotBeOpenedSaysWhere(_ backend: StoreBackend) async {
        let (place, error) = await StoreFixture.unreachable(backend)
        #expect(error is StoreError)
        #expect(
            "\(error.map { "\($0)" } ?? "opened")".contains("could not open \(place)"), "\(String(describing: error))")
    }
}

/// What each relay got back for each message, in `twoRelaysStoringTheSameMessagesAtOnceKeepEachOnce`.
private final class RaceResults: @unchecked Sendable {
    private let lock = NSLock()
    private var values = [[(sequence: Int64, isNew: Bool)?]](repeating: Array(repeating: nil, count: 50), count: 2)

    func record(node: Int, index: Int, _ outcome: (sequence: Int64, isNew: Bool)?) {
        lock.withLock { values[node][index] = outcome }
    }

    var outcomes: [[(sequence: Int64, isNew: Bool)?]] { lock.withLock { values } }
}
