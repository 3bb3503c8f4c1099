import Foundation
import ParleyRoom
import Testing

@Suite("The key map shipped in Resources")
struct ShippedKeymapTests {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/keys/default.keys").path

    @Test("Resources/keys/default.keys binds exactly the built-in keys, so a copy of it changes nothing")
    func sameAsBuiltIn() throws {
        let text = try String(contentsOfFile: Self.path, encoding: .utf8)
        let shipped = try Keymap.parse(text)
        for command in RoomCommand.allCases {
            #expect(shipped.keys(for: command) == Keymap.standard.keys(for: command), "\(command.rawValue)")
        }
        let mentioned = Set(
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }
                .compactMap { $0.split(separator: "=").first?.trimmingCharacters(in: .whitespaces) })
        #expect(mentioned == Set(RoomCommand.allCases.map(\.rawValue)), "every command is written out")
    }
}
