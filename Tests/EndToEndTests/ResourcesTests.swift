import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

@Suite("Shipped resources", .lane(.blocking))
struct ResourcesTests {
    static let checkoutResources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Resources").path
    static let shippedFiles = [
        "keys/default.keys", "theme/default.theme", "media/speech.wav", "media/sample.y4m", "sound/parley-test.pa",
    ]

    /// `parley resources` run from `/` with `environment` added; its status and lines.
    func resources(_ parley: String, environment: String = "") throws -> (
        status: Int32, lines: [String], output: String
    ) {
        let result = try ChildProcess.run("/bin/sh", ["-c", "cd / && \(environment) exec '\(parley)' resources"])
        return (result.status, result.output.split(separator: "\n").map(String.init), result.output)
    }

    @Test("the built parley finds its Resources folder (key map, theme, sample media, sound setup) from any folder")
    func builtBinaryFindsThem() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let result = try resources(parley)
        #expect(result.status == 0, "\(result.output)")
        let folder = try #require(result.lines.first)
        #expect(
            URL(fileURLWithPath: folder).standardized.path
                == URL(fileURLWithPath: Self.checkoutResources).standardized.path)
        for name in Self.shippedFiles {
            #expect(FileManager.default.fileExists(atPath: folder + "/" + name), "\(name) is missing")
        }
        #expect(
            result.lines.dropFirst().allSatisfy {
                FileManager.default.fileExists(atPath: $0.trimmingCharacters(in: .whitespaces))
            })
    }

    @Test("installed as make install lays it out (PREFIX/bin/parley, PREFIX/share/parley), it uses the installed files")
    func installedLayout() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let prefix = NSTemporaryDirectory() + "parley-prefix-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        try FileManager.default.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: prefix + "/share", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: parley, toPath: prefix + "/bin/parley")
        try FileManager.default.copyItem(atPath: Self.checkoutResources, toPath: prefix + "/share/parley")
        let result = try resources(prefix + "/bin/parley")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.lines.first == prefix + "/share/parley", "\(result.output)")

        // A broken installed key map is reported by name, not skipped for the checkout's copy.
        try "mic = m\nmic = n\n".write(
            toFile: prefix + "/share/parley/keys/default.keys", atomically: true, encoding: .utf8)
        let broken = try resources(prefix + "/bin/parley")
        #expect(broken.status != 0)
        #expect(
            broken.output.contains("\(prefix)/share/parley/keys/default.keys: line 2: mic is already set on line 1"),
            "\(broken.output)")
    }

    @Test("the running call takes its keys from the resources folder: an edited key map shows in the control bar")
    func callUsesShippedKeys() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = NSTemporaryDirectory() + "parley-resources-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.copyItem(atPath: Self.checkoutResources, toPath: folder)
        let keys = folder + "/keys/default.keys"
        let edited = try String(contentsOfFile: keys, encoding: .utf8).replacingOccurrences(
            of: "\nmic = m\n", with: "\nmic = x\n")
        #expect(edited.contains("\nmic = x\n"))
        try edited.write(toFile: keys, atomically: true, encoding: .utf8)
        let home = folder + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let command =
            "sh -c 'HOME=\(home) PARLEY_RESOURCES=\(folder) \(parley) demo --bots 0 --log \(folder)/demo.log; "
            + "echo EXITED rc=$?; sleep 60'"
        let pane = try TmuxPane(command: command, columns: 100, rows: 30)
        let lines = try await pane.text("\" x Mic \" on the screen", within: .seconds(20)) {
            $0.contains { $0.contains(" x Mic ") }
        }
        #expect(lines.contains { $0.contains(" x Mic ") }, "the control bar:\n\(lines.joined(separator: "\n"))")
        try pane.send(["x"])
        let muted = try await pane.text("\"Mic off\" on the screen", within: .seconds(10)) {
            $0.contains { $0.contains("Mic off") }
        }
        #expect(muted.contains { $0.contains("Mic off") }, "x mutes:\n\(muted.joined(separator: "\n"))")
        try pane.send(["q"])
        try pane.send(["y"])
        let exited = try await pane.text("\"EXITED\" on the screen", within: .seconds(10)) {
            $0.contains { $0.contains("EXITED") }
        }
        #expect(exited.contains { $0.contains("EXITED rc=0") }, "\(exited.joined(separator: "\n"))")
    }
}
