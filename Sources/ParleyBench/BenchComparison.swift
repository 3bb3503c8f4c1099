/// Earlier runs against a new one, figure by figure: which moved by more than their run-to-run spread. The spread of a
/// figure is the range the earlier runs gave it; with one earlier run there is no range to read, so it is taken as
/// `assumedSpread` of that run's value (the table says which). A change within one step of the printed digits is
/// rounding, never a move.
public struct BenchComparison: Sendable {
    /// One figure that left its spread.
    public struct Move: Sendable, Equatable {
        public var section: String
        public var table: String
        public var row: String
        public var column: String
        /// The earlier runs' values, oldest first.
        public var old: [Double]
        public var new: Double
        public var unit: String
        /// Lowest and highest value the spread allows.
        public var low: Double
        public var high: Double
    }

    /// A goal met in the last earlier run and not in the new one, or the other way round.
    public struct GoalChange: Sendable, Equatable {
        public var section: String
        public var goal: String
        public var met: Bool
        public var measured: String
    }

    /// Spread taken for a figure only one earlier run measured: 10 % of its value either way.
    public static let assumedSpread = 0.10

    public private(set) var moved: [Move] = []
    public private(set) var goalChanges: [GoalChange] = []
    /// Figures found in both the new run and an earlier one.
    public private(set) var compared = 0
    /// Of those, how many had a spread measured by two or more earlier runs.
    public private(set) var measuredSpreads = 0
    /// Figures only the earlier runs have, and only the new one.
    public private(set) var onlyOld = 0
    public private(set) var onlyNew = 0
    /// Sections the new run has and no earlier one.
    public private(set) var newSections: [String] = []

    /// Compares `new` with `old` (each run a list of sections, oldest run first).
    public init(old: [[SectionResults]], new: [SectionResults]) {
        for section in new {
            let earlier = old.compactMap { run in run.first { $0.section == section.section } }
            guard !earlier.isEmpty else {
                newSections.append(section.section)
                continue
            }
            compare(section, with: earlier)
        }
    }

    private struct Key: Hashable {
        var table: String
        var row: String
        var column: String
    }

    private static func figures(_ section: SectionResults) -> [Key: BenchFigure] {
        var out: [Key: BenchFigure] = [:]
        for table in section.tables {
            for figure in table.figures {
                out[Key(table: table.title, row: figure.row, column: figure.column)] = figure
            }
        }
        return out
    }

    private mutating func compare(_ section: SectionResults, with earlier: [SectionResults]) {
        let newFigures = Self.figures(section)
        let oldFigures = earlier.map(Self.figures)
        let oldKeys = Set(oldFigures.flatMap(\.keys))
        onlyOld += oldKeys.subtracting(newFigures.keys).count
        for table in section.tables {
            for figure in table.figures {
                let key = Key(table: table.title, row: figure.row, column: figure.column)
                let values = oldFigures.compactMap { $0[key] }
                guard !values.isEmpty else {
                    onlyNew += 1
                    continue
                }
                compared += 1
                let step = max(figure.resolution, values.map(\.resolution).max() ?? 0)
                var low = values.map(\.value).min() ?? figure.value
                var high = values.map(\.value).max() ?? figure.value
                if values.count >= 2 {
                    measuredSpreads += 1
                } else {
                    low -= abs(low) * Self.assumedSpread
                    high += abs(high) * Self.assumedSpread
                }
                low -= step
                high += step
                guard figure.value < low || figure.value > high else { continue }
                moved.append(
                    Move(
                        section: section.section, table: table.title, row: figure.row, column: figure.column,
                        old: values.map(\.value), new: figure.value, unit: figure.unit, low: low, high: high))
            }
        }
        guard let last = earlier.last else { return }
        let before = Dictionary(last.tables.flatMap(\.goals).map { ($0.goal, $0.met) }, uniquingKeysWith: { $1 })
        for goal in section.tables.flatMap(\.goals) where before[goal.goal].map({ $0 != goal.met }) == true {
            goalChanges.append(
                GoalChange(section: section.section, goal: goal.goal, met: goal.met, measured: goal.measured))
        }
    }

    /// What moved, as a table for the terminal, with the counts and changed goals under it.
    public var table: BenchTable {
        var table = BenchTable(
            title: "Figures that moved beyond their run-to-run spread",
            columns: ["Section", "Table", "Row", "Column", "Earlier", "New", "Change", "Spread allowed"])
        for move in moved {
            let last = move.old.last ?? move.new
            let change =
                last == 0 ? "n/a" : (move.new > last ? "+" : "") + formatted((move.new / last - 1) * 100) + " %"
            let unit = move.unit.isEmpty ? "" : " " + move.unit
            table.add([
                move.section, String(move.table.prefix(60)), move.row, move.column,
                move.old.map { Self.number($0) }.joined(separator: ", ") + unit, Self.number(move.new) + unit, change,
                Self.number(move.low) + " to " + Self.number(move.high),
            ])
        }
        let assumed = compared - measuredSpreads
        table.notes.append(
            "\(compared) figures compared, \(moved.count) moved; spreads from two or more earlier runs for "
                + "\(measuredSpreads), assumed ±\(Int(Self.assumedSpread * 100)) % for \(assumed) that one earlier run measured."
        )
        if onlyOld + onlyNew > 0 {
            table.notes.append(
                "\(onlyOld) figures only in the earlier runs, \(onlyNew) only in the new one (renamed or new rows).")
        }
        if !newSections.isEmpty {
            table.notes.append("No earlier run of: \(newSections.joined(separator: ", ")).")
        }
        for change in goalChanges {
            table.notes.append(
                "Goal \(change.met ? "now met" : "no longer met") (\(change.section)): \(change.goal) (\(change.measured))."
            )
        }
        return table
    }

    /// A value with as many decimals as it needs (at most 3).
    static func number(_ value: Double) -> String {
        for decimals in 0...2 where (value * decimalScale(decimals)).rounded() == value * decimalScale(decimals) {
            return formatted(value, decimals: decimals)
        }
        return formatted(value, decimals: 3)
    }
}
