import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

@testable import ParleyTUI

@Suite("tmux client watch", .lane(.blocking))
struct TmuxClientWatchTests {
    /// The answers tmux gives, one per question (the last one repeated), and how many questions came.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var queue: [String?]
        private(set) var asked = 0
        init(_ answers: [String?]) { queue = answers }
        func next() -> String? {
            lock.withLock {
                asked += 1
                return queue.count > 1 ? queue.removeFirst() : queue.first ?? nil
            }
        }
    }

    @Test("asked at once after a resize: a change counts once, the same answer and no answer count nothing")
    func changes() async throws {
        let answers = Answers(["256,title", nil, "RGB,title", "RGB,title"])
        // An interval far longer than the test: only askNow asks.
        let watch = TmuxClientWatch(initial: "256,title", interval: 3600) { answers.next() }
        defer { watch.stop() }
        #expect(watch.latest.changes == 0)
        watch.askNow()  // same as at start-up
        try await waitUntil("the first question", timeout: .seconds(5), every: .milliseconds(5)) { answers.asked == 1 }
        #expect(watch.latest.changes == 0)
        watch.askNow()  // tmux did not answer
        try await waitUntil("the second question", timeout: .seconds(5), every: .milliseconds(5)) { answers.asked == 2 }
        #expect(watch.latest.changes == 0 && watch.latest.features == "256,title")
        watch.askNow()  // a client with RGB attached
        try await waitUntil("the change counted", timeout: .seconds(5), every: .milliseconds(5)) {
            watch.latest.changes == 1
        }
        #expect(watch.latest.features == "RGB,title")
        watch.askNow()
        try await waitUntil("the fourth question", timeout: .seconds(5), every: .milliseconds(5)) { answers.asked == 4 }
        #expect(watch.latest.changes == 1)
    }

    @Test("without a resize it asks again every interval")
    func interval() async throws {
        let answers = Answers(["", "RGB"])
        let watch = TmuxClientWatch(initial: "", interval: 0.05) { answers.next() }
        defer { watch.stop() }
        try await waitUntil("the change counted", timeout: .seconds(5), every: .milliseconds(5)) {
            watch.latest.changes == 1
        }
        #expect(watch.latest.features == "RGB")
    }
}
