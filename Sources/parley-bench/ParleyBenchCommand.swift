import ArgumentParser
import Foundation
import ParleyBench

/// `parley-bench`: the measurements behind `make bench`, kept out of the shipped `parley` binary. Benchmarks that run
/// a relay or bots start the `parley` binary given by `--parley`.
@main
struct ParleyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-bench",
        abstract: "Measure Parley against reference tools in the same run and print Markdown tables.")

    enum Suite: String, ExpressibleByArgument, CaseIterable {
        case codecs, wire, relay, load, messaging, cluster, latency, render, picture, simulcast, call, broadcast, echo,
            encryption
        case mouthToEar = "mouth-to-ear"
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
            case .all: BenchSection.allCases
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
            "The parley binary the relay, load, messaging, call, broadcast and encryption benchmarks "
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

    func validate() throws {
        let path = parleyPath()
        let startsParley: Set<BenchSection> = [
            .relay, .load, .messaging, .cluster, .encryption, .call, .broadcast, .mouthToEar,
        ]
        if let seconds, !(3...3600).contains(seconds) {
            throw ValidationError("--seconds \(seconds): give between 3 and 3600 clicks (one a second)")
        }
        if !startsParley.isDisjoint(with: suite.sections), !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("no parley binary at \(path): build it (`make build`) or give its path with --parley")
        }
        if let markdown {
            // Checked before the run, so a page without a section's lines costs no benchmark time.
            let page: ResultsPage
            do { page = try readPage(markdown) } catch { throw ValidationError("\(error)") }
            for section in suite.sections {
                do { try page.check(section.rawValue) } catch { throw ValidationError("\(error); nothing was written") }
            }
        }
    }

    func run() async throws {
        let started = Date()
        let machine = machineDescription(at: started)
        let command = ResultsPage.commandLine(
            settings: ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("PARLEY_") },
            arguments: CommandLine.arguments)
        print("# Parley benchmarks — \(machine)\n")
        for section in suite.sections {
            let sectionStarted = Date()
            let tables = try await measure(section)
            for table in tables { print(table.markdown + "\n") }
            if let markdown {
                let seconds = Int(Date().timeIntervalSince(sectionStarted).rounded())
                let header = ResultsPage.header(command: command, machine: machine, seconds: seconds)
                try write(ResultsPage.block(header: header, tables: tables), into: section, of: markdown)
            }
        }
        print("Total time: \(String(format: "%.0f", Date().timeIntervalSince(started))) s")
    }

    /// Runs the benchmarks of one section of the results page and returns their tables.
    private func measure(_ section: BenchSection) async throws -> [BenchTable] {
        let log: @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        switch section {
        case .codecs:
            return try CodecBench.run(log: log)
        case .wire:
            return [WireBench.run()]
        case .relay:
            return [try RelayBench.run(executable: executablePath(), log: log)]
        case .load:
            return try LoadBench.run(executable: executablePath(), log: log)
        case .messaging:
            return try await MessagingBench.run(executable: executablePath(), log: log)
        case .cluster:
            return try await ClusterBench.run(executable: executablePath(), log: log)
        case .latency:
            return [try await LatencyBench.run(log: log)]
        case .picture:
            let quality = try RenderQualityBench.run(pictures: pictures, progress: log)
            return [quality, try PixelRenderBench.run(progress: log)]
        case .render:
            return try RenderBench.run(progress: log)
        case .echo:
            return try EchoBench.run(log: log) + [try await CallEchoBench.run(log: log)]
        case .encryption:
            do {
                let settings = try CallBench.Settings.fromEnvironment(parleyPath: executablePath())
                return try EncryptionBench.run(settings, log: log)
            } catch let error as CallBenchError {
                throw BenchFailure("encryption benchmark: \(error)")
            }
        case .simulcast:
            return [try SimulcastQualityBench.run(log: log)]
        case .call:
            do {
                let settings = try CallBench.Settings.fromEnvironment(parleyPath: executablePath())
                return try CallBench.run(settings, log: log)
            } catch let error as CallBenchError {
                throw BenchFailure("call benchmark: \(error)")
            }
        case .mouthToEar:
            do {
                return try MouthToEarBench.run(
                    MouthToEarBench.Settings(parleyPath: executablePath(), seconds: seconds ?? 60), log: log)
            } catch let error as CallBenchError {
                throw BenchFailure("mouth-to-ear benchmark: \(error)")
            }
        case .broadcast:
            do {
                let settings = try BroadcastBench.Settings.fromEnvironment(parleyPath: executablePath())
                return try BroadcastBench.run(settings, log: log)
            } catch let error as CallBenchError {
                throw BenchFailure("broadcast benchmark: \(error)")
            }
        }
    }

    /// Puts one section's block into the page at `path`: read afresh (a long run may outlast edits to the page),
    /// edited in memory, and written to a temporary file that then replaces the page, so a reader never sees half.
    private func write(_ block: String, into section: BenchSection, of path: String) throws {
        var page = try readPage(path)
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

    private func readPage(_ path: String) throws -> ResultsPage {
        do {
            return ResultsPage(file: path, text: try String(contentsOfFile: path, encoding: .utf8))
        } catch {
            throw BenchFailure(
                "cannot read \(path) (\(error.localizedDescription)): --markdown takes the results "
                    + "page, docs/benchmarks.md, with a begin and an end line for each section")
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

    /// When and where: "2026-11-26 09:41 UTC, AMD EPYC 7B13, 2 cores, load average 3.10".
    private func machineDescription(at date: Date) -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        let load =
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
            .split(separator: " ").first.map { ", load average \($0)" } ?? ""
        return "\(formatter.string(from: date)), \(cpu), \(cores) cores\(load)"
    }
}

/// A benchmark that could not run, said in one line.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
