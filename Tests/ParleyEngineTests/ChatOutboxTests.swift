import ParleyWire
import Testing

@testable import ParleyEngine

@Suite("Chat lines kept until the relay echoes them")
struct ChatOutboxTests {
    @Test("each line gets the next reference and waits until it or a later one is echoed")
    func linesWaitForTheirEcho() {
        var outbox = ChatOutbox()
        #expect(outbox.add(ChatSend(text: "one")).ref == "c1")
        #expect(outbox.add(ChatSend(text: "two")).ref == "c2")
        #expect(outbox.add(ChatSend(text: "three")).ref == "c3")
        outbox.delivered(ref: "c1")
        #expect(outbox.pending.map(\.text) == ["two", "three"])
        outbox.delivered(ref: "nobody's")  // not ours: nothing settles
        outbox.delivered(ref: nil)
        #expect(outbox.pending.count == 2)
        // A line the relay refused is never echoed; the echo of a later one settles it too.
        outbox.delivered(ref: "c3")
        #expect(outbox.pending.isEmpty)
        #expect(outbox.lastReference == 3)
    }

    @Test("past its limit the oldest line is given up and counted")
    func bounded() {
        var outbox = ChatOutbox()
        for line in 1...(ChatOutbox.limit + 2) { _ = outbox.add(ChatSend(text: "\(line)")) }
        #expect(outbox.pending.count == ChatOutbox.limit)
        #expect(outbox.dropped == 2)
        #expect(outbox.pending.first?.text == "3")
    }
}
