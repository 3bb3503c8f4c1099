import Foundation
import ParleyProcesses
import Testing

@Suite("Shipped resources")
struct ResourcesTests {
    static let checkoutResources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Resources").path

    @Test("the built parley finds its Resources folder (key map, theme, sample media) from any working folder")
    func builtBinaryFindsThem() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let result = try ChildProcess.run("/bin/sh", ["-c", "cd / && exec '\(parley)' resources"])
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let folder = try #require(lines.first)
        #expect(URL(fileURLWithPath: folder).standardized.path
            == URL(fileURLWithPath: Self.checkoutResources).standardized.path)
        for name in ["keys/default.keys", "theme/default.theme", "media/speech.wav", "media/sample.y4m"] {
            #expect(FileManager.default.fileExists(atPath: folder + "/" + name), "\(name) is missing")
        }
        #expect(lines.dropFirst().allSatisfy { FileManager.default.fileExists(atPath: $0.trimmingCharacters(in: .whitespaces)) })
    }
}
