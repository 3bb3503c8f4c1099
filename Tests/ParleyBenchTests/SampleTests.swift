import Testing

@testable import ParleyBench

/// Every benchmark's medians and percentiles come from `Sample`.
@Suite struct SampleTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var values: [Double]
        var median: Double?
        var p90: Double?
        var testDescription: String { "\(values)" }
    }

    static let rows: [Row] = [
        Row(values: [], median: nil, p90: nil),
        Row(values: [7], median: 7, p90: 7),
        Row(values: [3, 1, 2], median: 2, p90: 3),
        Row(values: [4, 1, 3, 2], median: 2.5, p90: 4),
        Row(values: Array(1...10).map(Double.init), median: 5.5, p90: 9),
        Row(values: [1, .nan, 3, .infinity], median: 2, p90: 3),
    ]

    @Test(arguments: rows)
    func medianAndPercentile(_ row: Row) {
        #expect(Sample.median(row.values) == row.median)
        let finite = row.values.filter(\.isFinite)
        #expect(Sample.percentile(finite, 0.9) == row.p90)
    }

    @Test func missingValuesAreLeftOut() {
        #expect(Sample.median([nil, 4, nil, 2]) == 3)
        #expect(Sample.median([nil, nil] as [Double?]) == nil)
    }

    @Test func theEndsAreTheSmallestAndLargest() {
        #expect(Sample.percentile([5, 9, 1], 0) == 1)
        #expect(Sample.percentile([5, 9, 1], 1) == 9)
    }
}
