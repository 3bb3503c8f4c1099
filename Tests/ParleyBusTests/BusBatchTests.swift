import Foundation
import ParleyBus
import ParleyStore
import Testing

/// The bus's batches carry the protocol's version; a node refuses a newer one by name.
@Suite struct BusBatchTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var label: String
        var payload: String
        var expected: Result<BusBatch, BusBatchError>
        var testDescription: String { label }
    }

    static let current = BusBatch.currentVersion

    static let rows: [Row] = [
        Row(
            label: "a batch of this version",
            payload: #"{"version":\#(current),"node":"a","sent":5,"events":[{"nodeGone":{"_0":"b"}}]}"#,
            expected: .success(BusBatch(node: "a", sent: 5, events: [.nodeGone("b")]))),
        Row(
            label: "a batch from before versions is version 1",
            payload: #"{"node":"a","sent":5,"events":[]}"#,
            expected: .success(BusBatch(version: 1, node: "a", sent: 5, events: []))),
        Row(
            label: "a newer version is refused by name, whatever its events",
            payload: #"{"version":\#(current + 1),"node":"node-7","sent":5,"events":[{"somethingNew":{}}]}"#,
            expected: .failure(.newerVersion(current + 1, node: "node-7"))),
        Row(
            label: "an event this version does not know is not a batch",
            payload: #"{"version":\#(current),"node":"a","sent":5,"events":[{"somethingNew":{}}]}"#,
            expected: .failure(.undecodable)),
        Row(label: "not JSON", payload: "garbage", expected: .failure(.undecodable)),
        Row(
            label: "a version that is not a number", payload: #"{"version":"2","node":"a"}"#,
            expected: .failure(.undecodable)),
    ]

    @Test(arguments: rows)
    func decodes(_ row: Row) {
        let result = Result { () throws(BusBatchError) -> BusBatch in try BusBatch.decode(row.payload) }
        #expect(result == row.expected)
    }

    @Test("what a node publishes carries its version and reads back the same")
    func publishedBatchesCarryTheVersion() throws {
        let payloads = try BusBatch.payloads(
            for: [.roomSettingsChanged, .drainNode("n2")], node: "n1", sent: 7, limit: 7_900)
        #expect(payloads.count == 1)
        #expect(payloads[0].contains(#""version":\#(Self.current)"#))
        let batch = try BusBatch.decode(payloads[0])
        #expect(batch.node == "n1" && batch.sent == 7 && batch.events == [.roomSettingsChanged, .drainNode("n2")])
    }

    @Test("a list too long for one payload is halved until each half fits, in order; one event too large is refused")
    func longListsAreSplitInOrder() throws {
        let references = (0..<200).map { MessageReference(sender: "alice", recipient: "bob", sequence: Int64($0)) }
        let payloads = try BusBatch.payloads(
            for: [.nodeGone("x"), .messages(references)], node: "n1", sent: 7, limit: 2_000)
        #expect(payloads.count > 1 && payloads.allSatisfy { $0.utf8.count <= 2_000 })
        let events = try payloads.flatMap { try BusBatch.decode($0).events }
        #expect(events.first == .nodeGone("x"))
        let sequences = events.dropFirst().flatMap { event -> [Int64] in
            if case .messages(let list) = event { list.map(\.sequence) } else { [] }
        }
        #expect(sequences == (0..<200).map { Int64($0) }, "every reference once, in order")

        // An event that is no list cannot be split: a limit smaller than the event itself.
        let size = try BusBatch(node: "", sent: 0, events: [.roomSettingsChanged]).encoded().utf8.count
        #expect(throws: BusBatchError.eventTooLarge(size, limit: 100)) {
            try BusBatch.payloads(for: [.roomSettingsChanged], node: "n1", sent: 7, limit: 100)
        }
        #expect("\(BusBatchError.eventTooLarge(size, limit: 100))".contains("does not fit a notification (100 bytes)"))
    }

    @Test("the refusal says which node, which version, and what to do")
    func theRefusalNamesTheNode() {
        let message = "\(BusBatchError.newerVersion(Self.current + 1, node: "node-7"))"
        #expect(message.contains("node-7") && message.contains("version \(Self.current + 1)"))
        #expect(message.contains("upgraded"))
    }
}
