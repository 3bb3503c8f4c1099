import Foundation

/// One number a table printed: its row and column, the value and the unit written after it.
public struct BenchFigure: Codable, Sendable, Equatable {
    /// The row's name: its first cell, and the text cells after it up to the first number.
    public var row: String
    /// The column's heading.
    public var column: String
    public var value: Double
    /// What followed the number in its cell ("ms", "%", "x", "MiB"); empty for a bare count.
    public var unit: String
    /// One step of the last digit printed ("12.6" 0.1, "231k" 1000): a change smaller than that is rounding.
    public var resolution: Double
    /// The cell as the table printed it.
    public var cell: String

    public init(row: String, column: String, value: Double, unit: String, resolution: Double, cell: String) {
        self.row = row
        self.column = column
        self.value = value
        self.unit = unit
        self.resolution = resolution
        self.cell = cell
    }
}

/// A goal's verdict from a table's notes ("Goal: what: met (figures).").
public struct BenchGoal: Codable, Sendable, Equatable {
    public var goal: String
    public var met: Bool
    public var measured: String

    public init(goal: String, met: Bool, measured: String) {
        self.goal = goal
        self.met = met
        self.measured = measured
    }
}

extension BenchTable {
    /// Every cell that holds one number and a short unit, keyed by row and column: what a program reads from a run.
    public var figures: [BenchFigure] {
        var seen: [String: Int] = [:]
        var out: [BenchFigure] = []
        for row in rows {
            var name = Self.rowName(row)
            seen[name, default: 0] += 1
            if let count = seen[name], count > 1 { name += " (\(count))" }
            for (column, cell) in zip(columns, row).dropFirst() {
                guard let numbers = BenchNumber.figures(in: cell) else { continue }
                for (index, number) in numbers.enumerated() {
                    out.append(
                        BenchFigure(
                            row: name,
                            column: numbers.count == 1 ? column : "\(column) (\(index + 1) of \(numbers.count))",
                            value: number.value, unit: number.unit, resolution: number.resolution, cell: cell))
                }
            }
        }
        return out
    }

    /// The verdicts of the goals in the notes.
    public var goals: [BenchGoal] { notes.compactMap(BenchGoal.init(note:)) }

    /// A row's name: its first cell, then each text cell after it until the first number or empty cell.
    static func rowName(_ row: [String]) -> String {
        guard let first = row.first else { return "" }
        var parts = [first]
        for cell in row.dropFirst() {
            guard BenchNumber.figures(in: cell) == nil, !BenchNumber.isEmpty(cell) else { break }
            parts.append(cell)
        }
        return parts.joined(separator: " · ")
    }
}

extension BenchGoal {
    /// The goal a note line states, nil for any other note.
    init?(note: String) {
        guard note.hasPrefix("Goal: "), note.hasSuffix(")."),
            let verdict = note.range(of: ": NOT met (") ?? note.range(of: ": met (")
        else { return nil }
        goal = String(note[note.index(note.startIndex, offsetBy: 6)..<verdict.lowerBound])
        met = !note[verdict].contains("NOT")
        measured = String(note[verdict.upperBound..<note.index(note.endIndex, offsetBy: -2)])
    }
}

/// A cell read as a number and a unit: "687", "0.97x", "12.6 ms", "+4.95 %", "14,900", "231k" (k and M multiply).
struct BenchNumber: Equatable {
    var value: Double
    var unit: String
    /// One step of the last digit printed.
    var resolution: Double

    /// Longest unit a cell may carry after its number; anything longer is prose.
    static let unitLimit = 12

    init?(_ cell: String) {
        let text = cell.replacingOccurrences(of: "**", with: "").trimmingCharacters(in: .whitespaces)
        var index = text.startIndex
        var digits = ""
        if index < text.endIndex, text[index] == "+" || text[index] == "-" || text[index] == "\u{2212}" {
            if text[index] != "+" { digits = "-" }
            index = text.index(after: index)
        }
        var resolution = 1.0
        var sawDot = false
        var sawDigit = false
        while index < text.endIndex {
            let character = text[index]
            if character.isASCII, character.isNumber {
                digits.append(character)
                sawDigit = true
                if sawDot { resolution /= 10 }
            } else if character == ",", sawDigit, !sawDot {
                // A thousands separator: "14,900".
            } else if character == ".", sawDigit, !sawDot {
                sawDot = true
                digits.append(character)
            } else {
                break
            }
            index = text.index(after: index)
        }
        guard sawDigit, !digits.hasSuffix("."), var value = Double(digits) else { return nil }
        var unit = text[index...].trimmingCharacters(in: .whitespaces)
        for (prefix, scale) in [("k", 1_000.0), ("M", 1_000_000.0)] where unit == prefix || unit.hasPrefix(prefix + " ")
        {
            value *= scale
            resolution *= scale
            unit = String(unit.dropFirst()).trimmingCharacters(in: .whitespaces)
        }
        // "/s" is a unit; "/ raw" is a second cell's worth of text after a separator.
        guard unit.count <= Self.unitLimit, !unit.hasPrefix("/ "),
            !unit.contains(where: { $0.isNumber || $0 == "(" || $0 == ":" })
        else { return nil }
        self.value = value
        self.unit = unit
        self.resolution = resolution
    }

    /// The figures of a cell: one number, or several side by side ("50008 / 50011": Parley's and the reference's);
    /// nil for text.
    static func figures(in cell: String) -> [BenchNumber]? {
        if let number = BenchNumber(cell) { return [number] }
        let parts = cell.components(separatedBy: " / ")
        guard parts.count > 1 else { return nil }
        let numbers = parts.compactMap(BenchNumber.init)
        return numbers.count == parts.count ? numbers : nil
    }

    /// A cell that says nothing was measured.
    static func isEmpty(_ cell: String) -> Bool {
        ["", "-", "\u{2014}", "n/a"].contains(cell.trimmingCharacters(in: .whitespaces))
    }
}

/// Where and when a run measured: the page's "2026-11-26 12:11 UTC, AMD EPYC, 2 cores, load average 2.13".
public struct BenchMachine: Codable, Sendable, Equatable, CustomStringConvertible {
    /// When the run started, to the minute, in UTC ("2026-11-26 12:11 UTC").
    public var time: String
    public var cpu: String
    public var cores: Int
    /// The 1-minute load average when the run started.
    public var loadAverage: Double?

    public init(time: String, cpu: String, cores: Int, loadAverage: Double?) {
        self.time = time
        self.cpu = cpu
        self.cores = cores
        self.loadAverage = loadAverage
    }

    /// This machine now.
    public static func current(at date: Date) -> BenchMachine {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
            .split(separator: " ").first.flatMap { Double($0) }
        return BenchMachine(
            time: formatter.string(from: date), cpu: cpu, cores: ProcessInfo.processInfo.activeProcessorCount,
            loadAverage: load)
    }

    public var description: String {
        "\(time), \(cpu), \(cores) cores" + (loadAverage.map { ", load average " + formatted($0, decimals: 2) } ?? "")
    }

    /// The machine a page's header line names, nil when it is not in that shape.
    init?(described text: Substring) {
        var parts = text.components(separatedBy: ", ")
        guard parts.count >= 3, parts[0].hasSuffix(" UTC") else { return nil }
        time = parts.removeFirst()
        loadAverage = nil
        if let last = parts.last, last.hasPrefix("load average ") {
            loadAverage = Double(last.dropFirst("load average ".count))
            parts.removeLast()
        }
        guard let coresText = parts.popLast(), coresText.hasSuffix(" cores"),
            let count = Int(coresText.dropLast(" cores".count)), !parts.isEmpty
        else { return nil }
        cores = count
        cpu = parts.joined(separator: ", ")
    }
}

/// One table as a run's results file holds it: what was printed, and the numbers and goals read from it.
public struct TableResults: Codable, Sendable, Equatable {
    public var title: String
    public var columns: [String]
    public var rows: [[String]]
    public var notes: [String]
    public var figures: [BenchFigure]
    public var goals: [BenchGoal]

    /// The table as the page shows it: cells trimmed, a note of several lines one note per line (so the page's
    /// copy and the file's read the same).
    public init(_ table: BenchTable) {
        var shown = table
        shown.columns = table.columns.map { $0.trimmingCharacters(in: .whitespaces) }
        shown.rows = table.rows.map { $0.map { $0.trimmingCharacters(in: .whitespaces) } }
        shown.notes = table.notes.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: false) }.map(
            String.init)
        title = shown.title
        columns = shown.columns
        rows = shown.rows
        notes = shown.notes
        figures = shown.figures
        goals = shown.goals
    }
}

/// What one run measured for one section of the results page, as `docs/benchmarks/SECTION.json` holds it: the
/// command, the machine and the time, and every table with its figures, so a program can compare two runs.
public struct SectionResults: Codable, Sendable, Equatable {
    /// The version of this file's shape; a reader refuses a newer one by name.
    public static let currentFormat = 1

    public var format: Int
    public var section: String
    public var command: String
    public var machine: BenchMachine
    /// How long the section's benchmarks took.
    public var seconds: Int
    public var tables: [TableResults]

    public init(section: String, command: String, machine: BenchMachine, seconds: Int, tables: [BenchTable]) {
        format = Self.currentFormat
        self.section = section
        self.command = command
        self.machine = machine
        self.seconds = seconds
        self.tables = tables.map(TableResults.init)
    }

    /// The file's text: pretty-printed JSON with sorted keys, so two runs diff line by line.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and arrays cannot fail.
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// A results file read back; `file` names it in errors.
    public static func read(_ data: Data, file: String) throws(BenchResultsError) -> SectionResults {
        struct Version: Decodable { var format: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: data) else {
            throw .unreadable(file: file, reason: "not a JSON object with a \"format\" number")
        }
        guard version.format <= currentFormat else {
            throw .newerFormat(file: file, format: version.format, known: currentFormat)
        }
        do {
            return try JSONDecoder().decode(SectionResults.self, from: data)
        } catch {
            throw .unreadable(file: file, reason: "\(error)")
        }
    }

    /// The folder of results files beside a results page: `docs/benchmarks.md` keeps them in `docs/benchmarks/`.
    public static func folder(besidePage page: String) -> String {
        page.hasSuffix(".md") ? String(page.dropLast(3)) : page + ".results"
    }

    /// The results a page's section block holds (a run writes both; this reads the page's copy back).
    public init(section: String, block: Substring, file: String) throws(BenchResultsError) {
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
        guard let header = lines.first, header.hasPrefix("Measured with `"),
            let commandEnd = header.range(of: "` on "),
            let machineEnd = header.range(of: "; these tables took ", options: .backwards),
            header.hasSuffix(" s."),
            let machine = BenchMachine(described: header[commandEnd.upperBound..<machineEnd.lowerBound]),
            let seconds = Int(header[machineEnd.upperBound...].dropLast(3))
        else {
            throw .unreadable(
                file: file, reason: "the \(section) section does not start with a \"Measured with `…` on …\" line")
        }
        format = Self.currentFormat
        self.section = section
        command = String(header[header.index(header.startIndex, offsetBy: 15)..<commandEnd.lowerBound])
        self.machine = machine
        self.seconds = seconds
        tables = try Self.tables(in: lines.dropFirst(), section: section, file: file).map(TableResults.init)
    }

    /// The tables of a block: each a "### title" line, a Markdown table, and note lines up to the next title.
    static func tables(in lines: ArraySlice<Substring>, section: String, file: String) throws(BenchResultsError)
        -> [BenchTable]
    {
        var tables: [BenchTable] = []
        var rest = lines.drop { $0.isEmpty }
        while let titleLine = rest.first {
            guard titleLine.hasPrefix("### ") else {
                throw .unreadable(
                    file: file,
                    reason: "the \(section) section has \"\(titleLine.prefix(60))\" where a ### title belongs")
            }
            rest = rest.dropFirst().drop { $0.isEmpty }
            let tableLines = rest.prefix { $0.hasPrefix("|") }
            guard tableLines.count >= 2 else {
                throw .unreadable(
                    file: file, reason: "the table \"\(titleLine.dropFirst(4).prefix(60))\" has no heading and rule")
            }
            rest = rest.dropFirst(tableLines.count)
            let cells = tableLines.map(Self.cells)
            var table = BenchTable(title: String(titleLine.dropFirst(4)), columns: cells[cells.startIndex])
            for row in cells.dropFirst(2) {
                guard row.count == table.columns.count else {
                    throw .unreadable(
                        file: file,
                        reason: "the table \"\(table.title.prefix(60))\" has a row of \(row.count) cells under "
                            + "\(table.columns.count) columns")
                }
                table.rows.append(row)
            }
            let notes = rest.prefix { !$0.hasPrefix("### ") }
            rest = rest.dropFirst(notes.count)
            table.notes = notes.drop { $0.isEmpty }.map(String.init)
            while table.notes.last?.isEmpty == true { table.notes.removeLast() }
            tables.append(table)
        }
        return tables
    }

    /// A Markdown row's cells, trimmed.
    static func cells(_ line: Substring) -> [String] {
        var inner = line.dropFirst()
        if inner.hasSuffix("|") { inner = inner.dropLast() }
        return inner.split(separator: "|", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
    }
}

/// Why a results file cannot be read; each names the file.
public enum BenchResultsError: Error, Equatable, CustomStringConvertible {
    case unreadable(file: String, reason: String)
    case newerFormat(file: String, format: Int, known: Int)

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): "\(file): \(reason)"
        case .newerFormat(let file, let format, let known):
            "\(file) is results format \(format), and this parley-bench reads up to \(known): build a newer one"
        }
    }
}
