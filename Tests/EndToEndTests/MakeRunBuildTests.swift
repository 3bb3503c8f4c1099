import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// What `make run` says while it builds: the real Makefile and make, with a stand-in `swift` that prints what SwiftPM
/// prints (the real build is `parley-bench first-run`'s to time).
@Suite("make run's build line", .lane(.blocking))
struct MakeRunBuildTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Runs `make build-demo` with a `swift` that prints SwiftPM's kinds of lines and exits with `status`.
    func build(exitingWith status: Int) throws -> (result: ChildProcess.Result, log: String) {
        let folder = NSTemporaryDirectory() + "parley-make-run-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let swift = folder + "/swift"
        try """
        #!/bin/sh
        echo "Fetching https://github.com/apple/swift-nio.git from cache"
        echo "Building for debugging..."
        for step in 1 2 3 4; do echo "[$((step * 200))/800] Compiling NIOCore File$step.swift"; done
        echo "Sources/X.swift:1:1: error: a compiler line"
        exit \(status)
        """.write(toFile: swift, atomically: true, encoding: .utf8)
        chmod(swift, 0o755)
        let log = folder + "/build.log"
        let result = try ChildProcess.run(
            "/usr/bin/make",
            [
                "-s", "-C", Self.root, "build-demo", "SWIFT=\(swift)", "DEMO_BIN=\(folder)/parley", "DEMO_LOG=\(log)",
            ], timeout: .seconds(60))
        return (result, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test("a build says how long a first build takes, shows one progress line, keeps the compiler's lines in a log")
    func progress() throws {
        let (result, log) = try build(exitingWith: 0)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("the first build takes about 5 minutes on 2 cores"), "\(result.output)")
        #expect(result.output.contains("getting the packages: swift-nio"), "\(result.output)")
        #expect(result.output.contains("compiling: 50 %") && result.output.contains("compiling: 100 %"))
        #expect(result.output.contains("Built in "), "\(result.output)")
        #expect(!result.output.contains("a compiler line"), "a compiler line reached the terminal: \(result.output)")
        #expect(log.contains("Compiling NIOCore File4.swift") && log.contains("a compiler line"), "\(log)")
    }

    @Test("a failed build shows the compiler's last lines, says where the rest is and fails make")
    func failure() throws {
        let (result, _) = try build(exitingWith: 1)
        #expect(result.status != 0, "\(result.output)")
        #expect(result.output.contains("error: a compiler line"), "\(result.output)")
        #expect(result.output.contains("The build failed (swift build exited with 1)"), "\(result.output)")
        #expect(!result.output.contains("Built in "), "\(result.output)")
    }
}
