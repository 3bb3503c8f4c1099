/// Medians and percentiles, computed one way for every benchmark: a table's "median" and "p95" mean the same in
/// each of them.
enum Sample {
    /// The median of the finite values (the mean of the middle two for an even count), nil when there are none.
    static func median(_ values: [Double]) -> Double? {
        let sorted = values.filter(\.isFinite).sorted()
        guard !sorted.isEmpty else { return nil }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The median of the values there are.
    static func median(_ values: [Double?]) -> Double? { median(values.compactMap { $0 }) }

    /// Nearest-rank percentile (`p` in 0…1) of the values, nil when there are none.
    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(sorted.count - 1, max(0, rank))]
    }
}
