import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's marks and probe pacing for each member's downlink, with a manual clock.
@Suite struct DownlinkMarksTests {
    @Test("a member is marked when it was sent media since its last mark, and only if it asked")
    func marksDue() {
        var marks = DownlinkMarks()
        var sentTo: [UInt32: (packets: UInt32, bytes: UInt32)] = [1: (5, 500), 2: (3, 300), 3: (9, 900)]
        let asked: (UInt32) -> Bool = { $0 != 3 }
        var due = [marks.due(sentTo: sentTo, asked: asked), marks.due(sentTo: sentTo, asked: asked)]
        sentTo[2] = (4, 400)
        due.append(marks.due(sentTo: sentTo, asked: asked))
        marks.forget(2)
        due.append(marks.due(sentTo: sentTo, asked: asked))  // forgotten: marked afresh
        #expect(due == [[1, 2], [], [2], [2]])
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var kbps: Int
        var count: Int
        var testDescription: String { "\(kbps) kbit/s → \(count) marks" }
    }

    @Test(
        "a probe's marks are kilobytes paced evenly over 150 ms, at least 5",
        arguments: [Row(kbps: 50, count: 5), Row(kbps: 800, count: 15), Row(kbps: 5_000, count: 94)])
    func probePacing(_ row: Row) {
        var marks = DownlinkMarks()
        let start = Duration.seconds(100)
        let started = marks.request(ProbeRequest(ssrc: 40, cluster: 1, kbps: row.kbps), from: 1, at: start)
        #expect(started)
        var sent: [(at: Int, mark: SendTimeMark)] = []
        for step in 0...40 {
            for (member, owed) in marks.owed(at: start + .milliseconds(5 * step)) {
                #expect(member == 1)
                sent += owed.map { (5 * step, $0) }
            }
        }
        #expect(sent.count == row.count && marks.probes.isEmpty)
        #expect(sent.map { Int($0.mark.probe?.index ?? 999) } == Array(0..<row.count))
        #expect(sent.allSatisfy { $0.mark.size == 1_000 && $0.mark.mediaSSRC == 40 && $0.mark.probe?.cluster == 1 })
        // Mark i leaves within 5 ms (a tick) of i/n of 150 ms; the last before 150 ms.
        for (index, entry) in sent.enumerated() {
            let due = 150.0 * Double(index) / Double(row.count)
            #expect(Double(entry.at) >= due && Double(entry.at) < due + 5, "mark \(index) at \(entry.at) ms")
        }
    }

    @Test("one probe at a time, at most one a second, per member")
    func probeLimits() {
        var marks = DownlinkMarks()
        let request = ProbeRequest(ssrc: 40, cluster: 1, kbps: 800)
        var answers: [Bool] = []
        answers.append(marks.request(request, from: 1, at: .seconds(10)))
        answers.append(marks.request(request, from: 1, at: .seconds(10) + .milliseconds(100)))  // during one
        answers.append(marks.request(request, from: 2, at: .seconds(10)))  // another member's own
        _ = marks.owed(at: .seconds(11))
        answers.append(marks.request(request, from: 1, at: .seconds(10) + .milliseconds(999)))  // under a second
        answers.append(marks.request(request, from: 1, at: .seconds(11)))
        #expect(answers == [true, false, true, false, true])
    }
}
