import Foundation
import Testing

@Suite("README's module table")
struct ModuleTableTests {
    @Test("the README's module table names every module Package.swift builds, and nothing else")
    func everyModuleIsListed() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let modules = Set(
            manifest.matches(of: /\.(?:target|executableTarget|systemLibrary)\(\s*name: "([^"]+)"/).map { String($0.1) }
        )
        let start = try #require(readme.range(of: "| Module | What it is |"), "README.md has no module table")
        let rows = readme[start.upperBound...].split(separator: "\n").dropFirst().prefix { $0.hasPrefix("|") }
        // The first column names the modules of a row.
        let listed = Set(
            rows.flatMap { row in
                (row.split(separator: "|").first ?? "").matches(of: /`([^`]+)`/).map { String($0.1) }
            })
        #expect(modules.count > 20, "\(modules.sorted())")
        #expect(
            modules.subtracting(listed).isEmpty,
            "modules missing from README.md's table: \(modules.subtracting(listed).sorted())")
        #expect(
            listed.subtracting(modules).isEmpty,
            "README.md's table names modules Package.swift does not build: \(listed.subtracting(modules).sorted())")
    }
}
