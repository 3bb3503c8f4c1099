import Foundation
import ParleyFuzzTargets
import Testing

/// Every input the fuzzers were seeded with or ever crashed on, run again through the same targets (without the
/// fuzzer's instrumentation): a crash found once stays fixed.
@Suite struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func files(_ folder: String, _ target: String) -> [URL] {
        let url = root.appendingPathComponent(folder).appendingPathComponent(target)
        return ((try? FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)) ?? [])
            .filter { !$0.lastPathComponent.hasPrefix(".") && $0.lastPathComponent != "README.md" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(
        "every target has a seed corpus, and every seed and recorded crash runs through it",
        arguments: FuzzTarget.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let seeds = Self.files("Corpus", name)
        #expect(!seeds.isEmpty, "Tests/Fuzz/Corpus/\(name) has no seeds")
        for file in seeds + Self.files("Crashes", name) {
            target.run([UInt8](try Data(contentsOf: file)))
        }
    }
}
