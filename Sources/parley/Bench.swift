import ArgumentParser
import Foundation
import ParleyBench

/// `parley bench`: the measurements behind `make bench`.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
                throw CommandFailure("encryption benchmark: \(error)")
            }
        }
        if suite == .call || suite == .all {
            print(try SimulcastQualityBench.run(log: log).markdown + "\n")
            let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            do {
                let settings = try CallBench.Settings.fromEnvironment(parleyPath: executable)
                for table in try CallBench.run(settings, log: log) { print(table.markdown + "\n") }
            } catch let error as CallBenchError {
                throw CommandFailure("call benchmark: \(error)")
            }
        }
        if suite == .broadcast || suite == .all {
            do {
                let settings = try BroadcastBench.Settings.fromEnvironment(parleyPath: executablePath())
                for table in try BroadcastBench.run(settings, log: log) { print(table.markdown + "\n") }
            } catch let error as CallBenchError {
                throw CommandFailure("broadcast benchmark: \(error)")
            }
        }
        print("Total time: \(String(format: "%.0f", Date().timeIntervalSince(started))) s")
    }

    /// This program's own path, so the relay benchmark can start `parley serve` from the same build.
    private func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
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
