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
        case codecs, wire, relay, load, messaging, latency, render, picture, simulcast, call, broadcast, echo, encryption,
            all
    }

    @Argument(help: "Which benchmark: \(Suite.allCases.map(\.rawValue).joined(separator: ", ")).")
    var suite: Suite = .all

    @Option(help: ArgumentHelp("With render: write PNGs of one frame in every picture mode to this folder.",
                               valueName: "folder"))
    var pictures: String?

    @Option(help: ArgumentHelp("The parley binary the relay, load, messaging, call, broadcast and encryption benchmarks "
                               + "start (default: PARLEY_BIN, or the parley next to this program).", valueName: "path"))
    var parley: String?

    func validate() throws {
        let path = parleyPath()
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ValidationError("no parley binary at \(path): build it (`make build`) or give its path with --parley")
        }
    }

    func run() async throws {
        let started = Date()
        let log: @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        print("# Parley benchmarks — \(machineDescription())\n")
        if suite == .codecs || suite == .all {
            for table in try CodecBench.run(log: log) { print(table.markdown + "\n") }
        }
        if suite == .wire || suite == .all {
            print(WireBench.run().markdown + "\n")
        }
        if suite == .relay || suite == .all {
            print(try RelayBench.run(executable: executablePath(), log: log).markdown + "\n")
        }
        if suite == .load || suite == .all {
            for table in try LoadBench.run(executable: executablePath(), log: log) { print(table.markdown + "\n") }
        }
        if suite == .messaging || suite == .all {
            for table in try await MessagingBench.run(executable: executablePath(), log: log) { print(table.markdown + "\n") }
        }
        if suite == .latency || suite == .all {
            print(try await LatencyBench.run(log: log).markdown + "\n")
        }
        if suite == .render || suite == .picture || suite == .all {
            print(try RenderQualityBench.run(pictures: pictures, progress: log).markdown + "\n")
        }
        if suite == .render || suite == .picture || suite == .all {
            print(try PixelRenderBench.run(progress: log).markdown + "\n")
        }
        if suite == .picture || suite == .simulcast {
            print(try SimulcastQualityBench.run(log: log).markdown + "\n")
        }
        if suite == .render || suite == .all {
            for table in try RenderBench.run(progress: log) { print(table.markdown + "\n") }
        }
        if suite == .echo || suite == .all {
            for table in try EchoBench.run(log: log) { print(table.markdown + "\n") }
            print(try await CallEchoBench.run(log: log).markdown + "\n")
        }
        if suite == .encryption || suite == .all {
            do {
                let settings = try CallBench.Settings.fromEnvironment(parleyPath: executablePath())
                for table in try EncryptionBench.run(settings, log: log) { print(table.markdown + "\n") }
            } catch let error as CallBenchError {
                throw BenchFailure("encryption benchmark: \(error)")
            }
        }
        if suite == .call || suite == .all {
            print(try SimulcastQualityBench.run(log: log).markdown + "\n")
            do {
                let settings = try CallBench.Settings.fromEnvironment(parleyPath: executablePath())
                for table in try CallBench.run(settings, log: log) { print(table.markdown + "\n") }
            } catch let error as CallBenchError {
                throw BenchFailure("call benchmark: \(error)")
            }
        }
        if suite == .broadcast || suite == .all {
            do {
                let settings = try BroadcastBench.Settings.fromEnvironment(parleyPath: executablePath())
                for table in try BroadcastBench.run(settings, log: log) { print(table.markdown + "\n") }
            } catch let error as CallBenchError {
                throw BenchFailure("broadcast benchmark: \(error)")
            }
        }
        print("Total time: \(String(format: "%.0f", Date().timeIntervalSince(started))) s")
    }

    /// The `parley` binary the benchmarks start (`parley serve`, `parley bot`), as an absolute path.
    private func executablePath() -> String {
        URL(fileURLWithPath: parleyPath()).standardizedFileURL.path
    }

    private func parleyPath() -> String {
        if let parley { return parley }
        if let path = ProcessInfo.processInfo.environment["PARLEY_BIN"], !path.isEmpty { return path }
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("parley").path
    }

    private func machineDescription() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
        return "\(date), \(cpu), \(cores) cores"
    }
}

/// A benchmark that could not run, said in one line.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
