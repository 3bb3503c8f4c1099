import Foundation
import Testing

@testable import ParleyBench

@Suite("Benchmark results as JSON, and runs compared")
struct BenchResultsTests {
    struct Cell: CustomTestStringConvertible, Sendable {
        var text: String
        var value: Double?
        var unit = ""
        var resolution = 1.0
        var testDescription: String { "\"\(text)\"" }
    }

    static let cells: [Cell] = [
        Cell(text: "687", value: 687),
        Cell(text: "0.97x", value: 0.97, unit: "x", resolution: 0.01),
        Cell(text: "12.6 ms", value: 12.6, unit: "ms", resolution: 0.1),
        Cell(text: "+4.95 %", value: 4.95, unit: "%", resolution: 0.01),
        Cell(text: "-0.3 dB", value: -0.3, unit: "dB", resolution: 0.1),
        Cell(text: "14,900", value: 14_900),
        Cell(text: "231k packets/s", value: 231_000, unit: "packets/s", resolution: 1_000),
        Cell(text: "1.5 M", value: 1_500_000, resolution: 100_000),
        Cell(text: "340 kbit/s", value: 340, unit: "kbit/s"),
        Cell(text: "**0.44x**", value: 0.44, unit: "x", resolution: 0.01),
        Cell(text: " 83 MiB ", value: 83, unit: "MiB"),
        // Text, not a figure.
        Cell(text: "640x360 600 kbit/s", value: nil),
        Cell(text: "0.97x–1.00x", value: nil),
        Cell(text: "2026-11-28", value: nil),
        Cell(text: "1:1", value: nil),
        Cell(text: "p50 1.8 ms", value: nil),
        Cell(text: "vpxenc --rt", value: nil),
        Cell(text: "n/a", value: nil),
        Cell(text: "", value: nil),
        Cell(text: "3.", value: nil),
        Cell(text: "0.94x as the median of five", value: nil),
        Cell(text: "12 (of 40)", value: nil),
    ]

    @Test("a cell is a figure when it holds one number and a short unit", arguments: cells)
    func cell(_ cell: Cell) {
        let number = BenchNumber(cell.text)
        guard let value = cell.value else {
            #expect(number == nil)
            return
        }
        #expect(number?.value == value)
        #expect(number?.unit == cell.unit)
        #expect(number.map { abs($0.resolution - cell.resolution) < 1e-9 } == true, "\(String(describing: number))")
    }

    @Test("a cell of numbers side by side gives one figure each, numbered in its column; it ends the row's name")
    func pairs() {
        #expect(BenchNumber.figures(in: "50008 / 50011")?.map(\.value) == [50_008, 50_011])
        #expect(BenchNumber.figures(in: "23.5 / 16.0")?.map(\.resolution) == [0.1, 0.1])
        #expect(BenchNumber.figures(in: "parley / raw") == nil)
        #expect(BenchNumber.figures(in: "12 / raw") == nil)
        let table = BenchTable(
            title: "Relay", columns: ["layout", "pkt/s"], rows: [["4 rooms", "212777 / 311997"]])
        #expect(
            table.figures.map(\.column) == ["pkt/s (1 of 2)", "pkt/s (2 of 2)"])
        #expect(table.figures.map(\.row) == ["4 rooms", "4 rooms"])
    }

    static let table = BenchTable(
        title: "Codecs: frames per CPU-second (libvpx v1.12.0)",
        columns: ["Operation", "Content", "Parley fps", "Reference", "Reference fps", "Ratio"],
        rows: [
            ["encode", "640x360 600 kbit/s", "687", "vpxenc --rt", "709", "0.97x"],
            ["decode", "640x360 600 kbit/s", "2595", "vpxdec", "2612", "0.99x"],
            ["decode", "640x360 600 kbit/s", "n/a", "vpxdec", "2600", "n/a"],
        ],
        notes: [
            "fps = frames per CPU-second.", "Goal: Parley ≥ 0.95x the reference on every row: met (0.97x–1.00x).",
            "Goal: RSS ≤ 50 MiB: NOT met (83 MiB).",
        ])

    @Test("figures are named by row (its leading text cells) and column; a repeated row name gets a count")
    func figures() {
        let figures = Self.table.figures
        #expect(figures.count == 7)
        #expect(
            figures.first
                == BenchFigure(
                    row: "encode · 640x360 600 kbit/s", column: "Parley fps", value: 687, unit: "", resolution: 1,
                    cell: "687"))
        #expect(figures.map(\.column).filter { $0 == "Ratio" }.count == 2)
        #expect(figures.last?.row == "decode · 640x360 600 kbit/s (2)")
        #expect(figures.last?.column == "Reference fps")
    }

    @Test("goals are read from their note lines, met or NOT met, with what was measured")
    func goals() {
        #expect(
            Self.table.goals == [
                BenchGoal(goal: "Parley ≥ 0.95x the reference on every row", met: true, measured: "0.97x–1.00x"),
                BenchGoal(goal: "RSS ≤ 50 MiB", met: false, measured: "83 MiB"),
            ])
        #expect(BenchGoal(note: goalNote("p50 ≤ 43 ms", met: true, "p50 1.8 ms")) != nil)
        #expect(BenchGoal(note: "Goal of the run: none.") == nil)
    }

    static let machine = BenchMachine(time: "2026-11-26 12:11 UTC", cpu: "AMD EPYC, rev 2", cores: 2, loadAverage: 2.13)

    @Test("a section's block on the page reads back as the tables and the run that wrote it")
    func pageBlockReadsBack() throws {
        let second = BenchTable(title: "Opus", columns: ["What", "kbit/s"], rows: [["voice", "28.3"]])
        let header = ResultsPage.header(
            command: "parley-bench codecs --markdown x.md", machine: "\(Self.machine)", seconds: 13)
        let block = ResultsPage.block(header: header, tables: [Self.table, second])
        let read = try SectionResults(section: "codecs", block: Substring(block), file: "x.md")
        #expect(
            read
                == SectionResults(
                    section: "codecs", command: "parley-bench codecs --markdown x.md", machine: Self.machine,
                    seconds: 13, tables: [Self.table, second]))
    }

    @Test("a block that is not a run's is refused, naming the section and what is wrong")
    func badBlocks() {
        #expect(throws: BenchResultsError.self) {
            try SectionResults(section: "wire", block: "no header here", file: "x.md")
        }
        let header = ResultsPage.header(command: "c", machine: "\(Self.machine)", seconds: 1)
        do {
            _ = try SectionResults(
                section: "wire", block: Substring(header + "\n\n### T\n\n| a | b |\n|--|--|\n| 1 |"), file: "x.md")
            Issue.record("a short row was read")
        } catch {
            #expect("\(error)" == "x.md: the table \"T\" has a row of 1 cells under 2 columns")
        }
    }

    @Test("results survive JSON; a newer format is refused by name, and garbage says what it is not")
    func json() throws {
        let results = SectionResults(
            section: "codecs", command: "c", machine: Self.machine, seconds: 13, tables: [Self.table])
        let text = results.json()
        #expect(try SectionResults.read(Data(text.utf8), file: "codecs.json") == results)
        #expect(text.contains("\"format\" : 1"))
        let newer = text.replacingOccurrences(of: "\"format\" : 1", with: "\"format\" : 2")
        #expect(throws: BenchResultsError.newerFormat(file: "codecs.json", format: 2, known: 1)) {
            try SectionResults.read(Data(newer.utf8), file: "codecs.json")
        }
        #expect(
            throws: BenchResultsError.unreadable(file: "a.json", reason: "not a JSON object with a \"format\" number")
        ) {
            try SectionResults.read(Data("[1, 2]".utf8), file: "a.json")
        }
        #expect(SectionResults.folder(besidePage: "docs/benchmarks.md") == "docs/benchmarks")
    }

    @Test("the machine line reads back, commas in the CPU's name and a missing load average included")
    func machineLine() {
        #expect(BenchMachine(described: Substring(Self.machine.description)) == Self.machine)
        var idle = Self.machine
        idle.loadAverage = nil
        #expect(BenchMachine(described: Substring(idle.description)) == idle)
        #expect(BenchMachine(described: "yesterday, a computer") == nil)
    }

    // MARK: Comparing runs

    static func run(_ values: [String], section: String = "codecs", goalMet: Bool = true) -> SectionResults {
        let table = BenchTable(
            title: "T", columns: ["Row", "fps", "Ratio"],
            rows: values.enumerated().map { ["row \($0.offset)", $0.element, "1.00x"] },
            notes: [goalNote("fast", met: goalMet, "x")])
        return SectionResults(section: section, command: "c", machine: machine, seconds: 1, tables: [table])
    }

    struct Comparison: CustomTestStringConvertible, Sendable {
        var name: String
        var old: [[String]]
        var new: [String]
        var moved: [String]
        var testDescription: String { name }
    }

    static let comparisons: [Comparison] = [
        Comparison(
            name: "one earlier run: within 10 % stays, beyond it moves", old: [["100", "100"]], new: ["109", "112"],
            moved: ["row 1"]),
        Comparison(name: "one earlier run: a fall beyond 10 % moves", old: [["100"]], new: ["88"], moved: ["row 0"]),
        Comparison(
            name: "earlier runs give the range: inside stays, a step outside moves",
            old: [["100", "100"], ["120", "101"]],
            new: ["119", "103"], moved: ["row 1"]),
        Comparison(
            name: "a change of one printed step is rounding", old: [["10", "10"], ["10", "10"]], new: ["11", "12"],
            moved: ["row 1"]),
        Comparison(
            name: "a figure only in the new run is counted, not compared", old: [["100"]], new: ["100", "5"], moved: []),
    ]

    @Test("figures move only beyond their spread", arguments: comparisons)
    func compare(_ comparison: Comparison) {
        let result = BenchComparison(old: comparison.old.map { [Self.run($0)] }, new: [Self.run(comparison.new)])
        #expect(result.moved.map(\.row) == comparison.moved)
    }

    @Test("the comparison says what it compared, how each spread was had, and which goals turned")
    func comparisonTable() {
        let result = BenchComparison(
            old: [[Self.run(["100", "50"])], [Self.run(["102", "50"])]],
            new: [Self.run(["130", "50"], goalMet: false), Self.run(["1"], section: "wire")])
        #expect(result.moved.count == 1)
        #expect(result.compared == 4)
        #expect(result.measuredSpreads == 4)
        #expect(result.newSections == ["wire"])
        #expect(
            result.goalChanges == [
                BenchComparison.GoalChange(section: "codecs", goal: "fast", met: false, measured: "x")
            ])
        let printed = result.table.markdown
        #expect(printed.contains("| codecs  | T     | row 0 | fps    | 100, 102 | 130 | +27.5 % | 99 to 103"))
        #expect(printed.contains("4 figures compared, 1 moved"))
        #expect(printed.contains("Goal no longer met (codecs): fast (x)."))
        #expect(printed.contains("No earlier run of: wire."))
    }

    // MARK: The repository's own results

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("docs/benchmarks/ holds one results file per section, each the same run as the page's block")
    func resultsMatchThePage() throws {
        let pageFile = Self.root.appendingPathComponent("docs/benchmarks.md")
        let page = ResultsPage(file: "docs/benchmarks.md", text: try String(contentsOf: pageFile, encoding: .utf8))
        for section in BenchSection.allCases {
            let file = "docs/benchmarks/\(section.rawValue).json"
            let data = try #require(
                FileManager.default.contents(atPath: Self.root.appendingPathComponent(file).path),
                "\(file) is missing: run the section with --markdown docs/benchmarks.md, or parley-bench export")
            let saved = try SectionResults.read(data, file: file)
            let shown = try SectionResults(
                section: section.rawValue, block: try page.content(of: section.rawValue), file: page.file)
            #expect(
                saved == shown, "\(file) and the page's \(section.rawValue) block are different runs: write both again")
        }
    }

    @Test("every number in the README's Measured table is a figure or a note of today's results")
    func readmeFiguresComeFromTheResults() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "| What | Parley | Reference in the same run | Goal |"))
        let rows = readme[start.upperBound...].split(separator: "\n").dropFirst().prefix { $0.hasPrefix("|") }
        #expect(rows.count > 10)
        var known = Set<String>()
        for section in BenchSection.allCases {
            let file = Self.root.appendingPathComponent("docs/benchmarks/\(section.rawValue).json").path
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let results = try SectionResults.read(data, file: file)
            for table in results.tables {
                for text in [table.title] + Array(table.rows.joined()) + table.notes {
                    known.formUnion(Self.numbers(in: text))
                }
            }
        }
        for row in rows {
            let cells = SectionResults.cells(row)
            guard cells.count >= 3 else { continue }
            let missing = Self.numbers(in: cells[1] + " " + cells[2]).subtracting(known)
            #expect(
                missing.isEmpty,
                "README's \"\(cells[0].prefix(50))\" row quotes \(missing.sorted()), which no result holds")
        }
    }

    /// Every number written in `text` and not part of a word, without its sign or thousands separators ("+4.95 %"
    /// gives "4.95", "2,000" gives "2000", "640x360" gives "640").
    static func numbers(in text: String) -> Set<String> {
        let characters = Array(text)
        func isDigit(_ at: Int) -> Bool { at < characters.count && characters[at].isASCII && characters[at].isNumber }
        var out = Set<String>()
        var index = 0
        while index < characters.count {
            let before: Character = index > 0 ? characters[index - 1] : " "
            guard isDigit(index), !before.isLetter, !before.isNumber, before != ".", before != "_" else {
                index += 1
                continue
            }
            var end = index
            var sawDot = false
            while end < characters.count {
                if isDigit(end) {
                    end += 1
                } else if characters[end] == ",", !sawDot, isDigit(end + 1) {
                    end += 1
                } else if characters[end] == ".", !sawDot, isDigit(end + 1) {
                    sawDot = true
                    end += 1
                } else {
                    break
                }
            }
            out.insert(String(characters[index..<end]).replacingOccurrences(of: ",", with: ""))
            index = end
        }
        return out
    }
}
