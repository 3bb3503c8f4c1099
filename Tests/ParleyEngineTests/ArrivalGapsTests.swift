import Testing

@testable import ParleyEngine

@Suite struct ArrivalGapsTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var label: String
        /// Arrival times in milliseconds; nil restarts the stream.
        var arrivals: [Int?]
        var count: Int
        var longestMs: Int
        var testDescription: String { label }
    }

    static let rows: [Row] = [
        Row(label: "a steady 20 ms pace has no gap", arrivals: [0, 20, 40, 61, 80], count: 0, longestMs: 21),
        Row(label: "exactly the limit is not a gap", arrivals: [0, 40, 80], count: 0, longestMs: 40),
        Row(label: "one held-up block is one gap", arrivals: [0, 20, 140, 141, 160], count: 1, longestMs: 120),
        Row(label: "each long wait counts", arrivals: [0, 50, 100, 300], count: 3, longestMs: 200),
        Row(label: "a restart (muting) is not a gap", arrivals: [0, 20, nil, 5_000, 5_020], count: 0, longestMs: 20),
        Row(label: "the first arrival is no gap", arrivals: [9_000], count: 0, longestMs: 0),
    ]

    @Test(arguments: rows)
    func counts(_ row: Row) {
        var gaps = ArrivalGaps(limit: .milliseconds(40))
        for arrival in row.arrivals {
            if let arrival { gaps.arrived(at: .milliseconds(arrival)) } else { gaps.restart() }
        }
        #expect(gaps.count == row.count)
        #expect(gaps.longest == .milliseconds(row.longestMs))
    }
}
