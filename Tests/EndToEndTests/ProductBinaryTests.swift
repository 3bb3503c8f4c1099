import Foundation
import ParleyProcesses
import Testing

/// The shipped `parley` holds the product only: the benchmarks are `parley-bench`, a program of their own.
@Suite("The product binary")
struct ProductBinaryTests {
    @Test("parley links no benchmark code and its help names no bench command")
    func noBenchmarkInside() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let symbols = try ChildProcess.run("/bin/sh", ["-c", "nm '\(parley)' | grep -ci bench; true"])
        #expect(
            Int(symbols.output.trimmingCharacters(in: .whitespacesAndNewlines)) == 0,
            "benchmark symbols in \(parley): \(symbols.output)")
        let help = try ChildProcess.run(parley, ["--help"])
        #expect(help.status == 0, "\(help.output)")
        #expect(help.output.contains("join"), "\(help.output)")
        #expect(!help.output.lowercased().contains("bench"), "\(help.output)")
        let bench = try ChildProcess.run(parley, ["bench", "wire"])
        #expect(bench.status != 0, "parley bench still runs: \(bench.output)")
    }

    @Test("join's help names the cipher a secret alone gives, AES-128-GCM, as the code and docs do")
    func helpNamesTheDefaultCipher() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let help = try ChildProcess.run(parley, ["join", "--help"])
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.status == 0 && text.contains("aes-128-gcm (the default with a secret"), "\(help.output)")
        #expect(!text.contains("aes-256-gcm (the default"), "\(help.output)")
    }

    @Test("parley-bench sits beside parley and refuses a parley path that is not a program")
    func benchmarksAreTheirOwnProgram() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let bench = URL(fileURLWithPath: parley).deletingLastPathComponent().appendingPathComponent("parley-bench").path
        try #require(FileManager.default.isExecutableFile(atPath: bench), "no parley-bench beside \(parley)")
        let refused = try ChildProcess.run(bench, ["relay", "--parley", "/nonexistent/parley"])
        #expect(refused.status != 0)
        #expect(refused.output.contains("no parley binary at /nonexistent/parley"), "\(refused.output)")
    }
}
