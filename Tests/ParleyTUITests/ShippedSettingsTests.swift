import Foundation
import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("The key map and theme read from the resources folder")
struct ShippedSettingsTests {
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources").path

    /// A copy of the keys/ and theme/ folders in a fresh temporary folder, with `keys` and `theme` replacing the files
    /// when given.
    func copy(keys: String? = nil, theme: String? = nil) throws -> String {
        let folder = NSTemporaryDirectory() + "parley-shipped-\(UUID().uuidString.prefix(8))"
        for name in ["keys", "theme"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + name, withIntermediateDirectories: true)
        }
        let keysText = try keys ?? String(contentsOfFile: Self.checkout + "/keys/default.keys", encoding: .utf8)
        let themeText = try theme ?? String(contentsOfFile: Self.checkout + "/theme/default.theme", encoding: .utf8)
        try keysText.write(toFile: folder + "/keys/default.keys", atomically: true, encoding: .utf8)
        try themeText.write(toFile: folder + "/theme/default.theme", atomically: true, encoding: .utf8)
        return folder
    }

    @Test("the checkout's files give exactly the built-in key map and looks")
    func checkoutIsBuiltIn() throws {
        let shipped = try ShippedSettings.load(folder: Self.checkout)
        #expect(shipped.folder == Self.checkout)
        for command in RoomCommand.allCases {
            #expect(shipped.keymap.keys(for: command) == Keymap.standard.keys(for: command), "\(command)")
        }
        for depth in ColorDepth.allCases {
            for role in ColorRole.allCases {
                #expect(
                    Theme(depth: depth, overrides: shipped.themeOverrides).style(role)
                        == Theme(depth: depth).style(role), "\(depth) \(role)")
            }
        }
        #expect(ShippedSettings.builtIn.folder == nil)
        #expect(try ShippedSettings.load(folder: nil).themeOverrides.isEmpty)
    }

    @Test("an edited shipped file changes the defaults: the files are read, not compiled in")
    func editedFilesChangeTheDefaults() throws {
        let folder = try copy(keys: "mic = x\n", theme: "header = 1 2 bold\n")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let shipped = try ShippedSettings.load(folder: folder)
        #expect(shipped.keymap.keys(for: .microphone) == [.char("x")])
        #expect(shipped.keymap.keys(for: .camera) == Keymap.standard.keys(for: .camera))
        #expect(
            Theme(depth: .palette256, overrides: shipped.themeOverrides).style(.header)
                == CellStyle(foreground: .palette(1), background: .palette(2), attributes: [.bold]))
    }

    @Test(
        "a broken or missing shipped file is an error naming the file and what is wrong",
        arguments: [
            ("keys", "mic = m\nmic = n\n", "keys/default.keys: line 2: mic is already set on line 1"),
            ("theme", "header = 999 0\n", "theme/default.theme: line 1: \"999\" is not a colour"),
            (
                "theme", String(repeating: "#\n", count: 40_000),
                "theme/default.theme: 80000 bytes is more than the 65536"
            ),
            ("keys", "", "keys/default.keys: cannot be read"),
        ])
    func broken(file: String, text: String, message: String) throws {
        let folder = try copy(keys: file == "keys" ? text : nil, theme: file == "theme" ? text : nil)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        if text.isEmpty { try FileManager.default.removeItem(atPath: folder + "/keys/default.keys") }
        do {
            _ = try ShippedSettings.load(folder: folder)
            Issue.record("\(file) was accepted")
        } catch {
            #expect(error.description.hasPrefix("Parley's shipped file \(folder)/"), "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
    }
}
