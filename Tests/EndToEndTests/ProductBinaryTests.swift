import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// The shipped `parley` holds the product only: the benchmarks are `parley-bench`, a program of their own.
@Suite("The product binary", .lane(.blocking))
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

    /// Help texts as a user reads them: each default said once, no runs of stray spaces inside a sentence, every
    /// rooms file key named, and no option or key offered where it does nothing.
    @Test("help texts say each thing once and offer only what works there")
    func helpTexts() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        func help(_ command: String) throws -> String {
            let result = try ChildProcess.run(parley, [command, "--help"])
            #expect(result.status == 0, "\(command) --help: \(result.output)")
            return result.output
        }
        func sentences(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let serve = try help("serve")
        #expect(!serve.contains("(default: 30) (default: 30)"), "\(serve)")
        #expect(sentences(serve).contains("[record=yes|no]"), "--rooms names every key: \(serve)")
        let join = try help("join")
        #expect(!join.contains("a meeting link   "), "stray spaces in join's help: \(join)")
        #expect(sentences(join).contains("or a meeting link parley://HOST:PORT/ROOM"), "\(join)")
        let bot = try help("bot")
        #expect(!bot.contains("R in a call"), "bots have no R key: \(bot)")
        let demo = try help("demo")
        #expect(!demo.contains("--guest") && !demo.contains("--hide-room"), "the demo is always a guest's: \(demo)")
        #expect(join.contains("--guest") && join.contains("--hide-room"), "\(join)")
    }

    /// A negative number is a value, refused by its range like any other, not "Missing value".
    @Test(arguments: [
        (["serve", "--port", "-5"], "--port must be 0…65535, got -5"),
        (["demo", "--port", "-1"], "--port must be 0…65535, got -1"),
        (["serve", "--max-members", "-3"], "--max-members must be 2…10000, got -3"),
        (["join", "r", "--name", "a", "--vp8-profile", "-1"], "--vp8-profile must be 0, 1, 2 or 3"),
        (["bot", "r", "--fps", "-2"], "--fps must be 1…60, got -2"),
    ])
    func negativeNumbersAreRefusedByTheirRange(arguments: [String], expected: String) throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let result = try ChildProcess.run(parley, arguments, timeout: .seconds(20))
        #expect(result.status != 0 && result.output.contains(expected), "\(arguments): \(result.output)")
        #expect(!result.output.contains("Missing value"), "\(result.output)")
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
