import Foundation
import ParleyProcesses
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The probe executable built next to the tests (or named by PARLEY_TUI_PROBE).
func probePath() -> String? {
    var candidates: [String] = []
    let environment = ProcessInfo.processInfo.environment
    if let path = environment["PARLEY_TUI_PROBE"] { candidates.append(path) }
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("parley-tui-probe").path)
    }
    let argumentZero = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    candidates.append(argumentZero.appendingPathComponent("parley-tui-probe").path)
    if let bin = environment["PARLEY_BIN"] {
        candidates.append(
            URL(fileURLWithPath: bin).deletingLastPathComponent()
                .appendingPathComponent("parley-tui-probe").path)
    }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// The probe inside a shell that reports its exit status and keeps the pane open afterwards.
func probeCommand(_ arguments: String = "", environment: String = "TERM=tmux-256color NO_COLOR=") throws -> String {
    let probe = try #require(probePath(), "parley-tui-probe was not built next to the tests; run swift build")
    return "sh -c '\(environment) \(probe) \(arguments); echo RESTORED rc=$?; sleep 60'"
}
