/// A printable table of benchmark results: one row per measured thing, columns chosen by the benchmark.
public struct BenchTable: Sendable {
    /// What was measured, printed above the table.
    public var title: String
    /// Column headings.
    public var columns: [String]
    /// Cells, one array per row, each as wide as `columns`.
    public var rows: [[String]]
    /// Lines printed under the table (settings, machine, caveats).
    public var notes: [String]

    /// An empty table with its headings.
    public init(title: String, columns: [String], rows: [[String]] = [], notes: [String] = []) {
        self.title = title
        self.columns = columns
        self.rows = rows
        self.notes = notes
    }

    /// Adds one row; it must have one cell per column.
    public mutating func add(_ row: [String]) {
        precondition(row.count == columns.count, "row has \(row.count) cells, table has \(columns.count) columns")
        rows.append(row)
    }

    /// The table as GitHub-flavoured Markdown, ready for `docs/benchmarks.md` and readable in a terminal.
    public var markdown: String {
        let widths = columns.indices.map { index in
            ([columns[index]] + rows.map { $0[index] }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            "| "
                + zip(cells, widths).map { $0 + String(repeating: " ", count: max(0, $1 - $0.count)) }.joined(
                    separator: " | ")
                + " |"
        }
        var out = [
            "### \(title)", "", line(columns),
            "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|",
        ]
        out += rows.map(line)
        if !notes.isEmpty {
            out.append("")
            out += notes
        }
        return out.joined(separator: "\n")
    }
}

/// Formats a number with a fixed count of decimals, for table cells.
public func formatted(_ value: Double, decimals: Int = 1) -> String {
    guard value.isFinite else { return "n/a" }
    let scale = decimalScale(decimals)
    var rounded = (value * scale).rounded() / scale
    if rounded == 0 { rounded = 0 }  // -0.0 (a small negative rounded away) prints as 0, not "-0"
    var text = String(rounded)
    if decimals == 0, text.hasSuffix(".0") { text.removeLast(2) }
    if let dot = text.firstIndex(of: "."), decimals > 0 {
        let have = text.distance(from: dot, to: text.endIndex) - 1
        if have < decimals { text += String(repeating: "0", count: decimals - have) }
    }
    return text
}

/// 10 to the power `decimals` (0 or more), without Foundation.
func decimalScale(_ decimals: Int) -> Double {
    var scale = 1.0
    for _ in 0..<max(0, decimals) { scale *= 10 }
    return scale
}

/// A goal's verdict as a note line under its table: "Goal: what: met (figures)." or "…: NOT met (figures)." The
/// benchmark that measures a figure checks its goal in the same run, so the page never quotes a goal by hand.
public func goalNote(_ goal: String, met: Bool, _ measured: String) -> String {
    "Goal: \(goal): \(met ? "met" : "NOT met") (\(measured))."
}
