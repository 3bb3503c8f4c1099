import ArgumentParser
import Foundation
import ParleyBench

/// `parley-bench`: the measurements behind `make bench`, kept out of the shipped `parley` binary, and the comparison of
/// two runs' results. Benchmarks that run a relay or bots start the `parley` binary given by `--parley`.
@main
struct ParleyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-bench",
        abstract: "Measure Parley against reference tools in the same run; compare runs.",
        subcommands: [Measure.self, Compare.self, Export.self],
        defaultSubcommand: Measure.self)
}

/// `parley-bench [suite]`: runs benchmarks, prints their tables, and with `--markdown` writes them into the results
/// page and their figures beside it as JSON.
struct Measure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure Parley against reference tools in the same run and print Markdown tables.")

    enum Suite: String, ExpressibleByArgument, CaseIterable {
        case codecs, wire, relay, load, messaging, cluster, latency, render, picture, simulcast, call, broadcast, echo,
            encryption
        case mouthToEar = "mouth-to-ear"
        case network
        case share
        case browser
        case firstRun = "first-run"
        case all

        /// The sections of the results page this suite measures, in the order it runs them.
        var sections: [BenchSection] {
            switch self {
            case .codecs: [.codecs]
            case .wire: [.wire]
            case .relay: [.relay]
            case .load: [.load]
            case .messaging: [.messaging]
            case .cluster: [.cluster]
            case .latency: [.latency]
            case .render: [.picture, .render]
            case .picture: [.picture, .simulcast]
            case .simulcast: [.simulcast]
            case .call: [.simulcast, .call]
            case .broadcast: [.broadcast]
            case .echo: [.echo]
            case .encryption: [.encryption]
            case .mouthToEar: [.mouthToEar]
            case .network: [.network]
            case .share: [.share]
            case .browser: [.browser]
            case .firstRun: [.firstRun]
            // first-run clones and builds Parley four times (~25 min): run on its own (`make bench-first-run`).
            case .all: BenchSection.allCases.filter { $0 != .firstRun }
            }
        }
    }

    @Argument(help: "Which benchmark: \(Suite.allCases.map(\.rawValue).joined(separator: ", ")).")
    var suite: Suite = .all

    @Option(
        help: ArgumentHelp(
            "With render: write PNGs of one frame in every picture mode to this folder.",
            valueName: "folder"))
    var pictures: String?

    @Option(
        help: ArgumentHelp(
            "The parley binary the relay, load, messaging, call, broadcast, encryption and browser benchmarks "
                + "start (default: PARLEY_BIN, or the parley next to this program).", valueName: "path"))
    var parley: String?

    @Option(
        help: ArgumentHelp(
            "With mouth-to-ear: clicks per path, one a second (default 60; fewer for a quick look).",
            valueName: "seconds"))
    var seconds: Int?

    @Option(
        help: ArgumentHelp(
            "Also write each section's tables into this results page (docs/benchmarks.md), "
                + "between that section's begin and end lines, keeping the rest of the file.",
            valueName: "file"))
    var markdown: String?

    @Option(
        help: ArgumentHelp(
            "Write each section's results as JSON into this folder (default with --markdown: the folder beside "
                + "the page, docs/benchmarks/ for docs/benchmarks.md).",
            valueName: "folder"))
    var json: String?

    func validate() throws {
        let path = parleyPath()
        if let seconds, !(3...3600).contains(seconds) {
            throw ValidationError("--seconds \(seconds): give between 3 and 3600 clicks (one a second)")
        }
        if suite.sections.contains(where: \.startsParley), !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("no parley binary at \(path): build it (`make build`) or give its path with --parley")
        }
        if let markdown {
            // Checked before the run, so a page without a section's lines costs no benchmark time.
            let page: ResultsPage
            do { page = try readResultsPage(markdown) } catch { throw ValidationError("\(error)") }
            for section in suite.sections {
                do { try page.check(section.rawValue) } catch { throw ValidationError("\(error); nothing was written") }
            }
        }
    }

    func run() async throws {
        let started = Date()
        let machine = BenchMachine.current(at: started)
        let command = ResultsPage.commandLine(
            settings: ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("PARLEY_") },
            arguments: CommandLine.arguments)
        let log: @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        let context = BenchContext(parley: executablePath(), log: log, pictures: pictures, seconds: seconds)
        let folder = json ?? markdown.map(SectionResults.folder(besidePage:))
        print("# Parley benchmarks — \(machine)\n")
        for section in suite.sections {
            let sectionStarted = Date()
            let tables = try await section.measure(context)
            for table in tables { print(table.markdown + "\n") }
            let seconds = Int(Date().timeIntervalSince(sectionStarted).rounded())
            if let markdown {
                let header = ResultsPage.header(command: command, machine: machine.description, seconds: seconds)
                try write(ResultsPage.block(header: header, tables: tables), into: section, of: markdown)
            }
            if let folder {
                let results = SectionResults(
                    section: section.rawValue, command: command, machine: machine, seconds: seconds, tables: tables)
                try writeResults(results, into: folder)
            }
        }
        print("Total time: \(String(format: "%.0f", Date().timeIntervalSince(started))) s")
    }

    /// Puts one section's block into the page at `path`: read afresh (a long run may outlast edits to the page),
    /// edited in memory, and written to a temporary file that then replaces the page, so a reader never sees half.
    private func write(_ block: String, into section: BenchSection, of path: String) throws {
        var page = try readResultsPage(path)
        do {
            try page.replace(section.rawValue, with: block)
        } catch {
            throw BenchFailure("\(error); nothing was written")
        }
        do {
            try Data(page.text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw BenchFailure("could not write \(path): \(error.localizedDescription)")
        }
    }

    /// Writes one section's results file into `folder` (made when missing), whole or not at all.
    private func writeResults(_ results: SectionResults, into folder: String) throws {
        let path = folder + "/" + results.section + ".json"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data(results.json().utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw BenchFailure("could not write \(path): \(error.localizedDescription)")
        }
    }

    /// The `parley` binary the benchmarks start (`parley serve`, `parley bot`), as an absolute path.
    private func executablePath() -> String {
        URL(fileURLWithPath: parleyPath()).standardizedFileURL.path
    }

    private func parleyPath() -> String {
        if let parley { return parley }
        if let path = ProcessInfo.processInfo.environment["PARLEY_BIN"], !path.isEmpty { return path }
        let own =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("parley").path
    }
}

/// The results page at `path`, or a failure that says what the page must be.
func readResultsPage(_ path: String) throws -> ResultsPage {
    do {
        return ResultsPage(file: path, text: try String(contentsOfFile: path, encoding: .utf8))
    } catch {
        throw BenchFailure(
            "cannot read \(path) (\(error.localizedDescription)): give the results "
                + "page, docs/benchmarks.md, with a begin and an end line for each section")
    }
}

/// `parley-bench compare OLD... NEW`: which figures of the new run left the spread the earlier runs give them.
struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare runs' JSON results: print the figures that moved by more than their run-to-run spread.",
        discussion: """
            Each run is a results file (SECTION.json) or a folder of them (docs/benchmarks/). The last run is the \
            new one; the others are earlier runs, oldest first. A figure's spread is the range the earlier runs \
            gave it; with one earlier run it is taken as ±10 % of that run's value. Exits 1 when a figure moved.
            """)

    @Argument(help: ArgumentHelp("Earlier runs, then the new one: files or folders of results.", valueName: "run"))
    var runs: [String]

    func validate() throws {
        guard runs.count >= 2 else {
            throw ValidationError("give at least two runs (an earlier one and the new one); got \(runs.count)")
        }
    }

    func run() throws {
        let loaded = try runs.map(Self.load)
        let comparison = BenchComparison(old: Array(loaded.dropLast()), new: loaded[loaded.count - 1])
        for (name, sections) in zip(runs, loaded) {
            let machines = Set(sections.map { "\($0.machine)" }).sorted()
            print("\(name): \(sections.map(\.section).joined(separator: ", ")) — \(machines.joined(separator: "; "))")
        }
        print("")
        print(comparison.table.markdown)
        if !comparison.moved.isEmpty { throw ExitCode(1) }
    }

    /// The sections of one run: a results file, or every `.json` file in a folder.
    static func load(_ path: String) throws -> [SectionResults] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw BenchFailure("\(path) does not exist: give a results file (SECTION.json) or a folder of them")
        }
        let files: [String]
        if isFolder.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            files = names.filter { $0.hasSuffix(".json") }.sorted().map { path + "/" + $0 }
            guard !files.isEmpty else { throw BenchFailure("\(path) holds no .json results files") }
        } else {
            files = [path]
        }
        return try files.map { file in
            guard let data = FileManager.default.contents(atPath: file) else {
                throw BenchFailure("cannot read \(file)")
            }
            do {
                return try SectionResults.read(data, file: file)
            } catch {
                throw BenchFailure("\(error)")
            }
        }
    }
}

/// `parley-bench export PAGE`: the JSON results of every section a results page holds, read from its blocks.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the JSON results of each section of a results page (for a page written before the JSON was).")

    @Argument(help: ArgumentHelp("The results page.", valueName: "page"))
    var page: String = "docs/benchmarks.md"

    @Option(help: ArgumentHelp("Where the files go (default: the folder beside the page).", valueName: "folder"))
    var to: String?

    func run() throws {
        let text = try readResultsPage(page)
        let folder = to ?? SectionResults.folder(besidePage: page)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for section in BenchSection.allCases {
            let results: SectionResults
            do {
                results = try SectionResults(
                    section: section.rawValue, block: try text.content(of: section.rawValue), file: page)
            } catch {
                throw BenchFailure("\(error)")
            }
            let path = folder + "/" + section.rawValue + ".json"
            try Data(results.json().utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            print("\(path): \(results.tables.count) tables, \(results.tables.flatMap(\.figures).count) figures")
        }
    }
}
