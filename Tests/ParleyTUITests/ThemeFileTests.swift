import Foundation
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Theme files")
struct ThemeFileTests {
    static let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/theme/default.theme").path

    @Test("Resources/theme/default.theme writes out exactly the built-in 256-colour looks, every role")
    func shippedIsBuiltIn() throws {
        let overrides = try Theme.parseOverrides(String(contentsOfFile: Self.shipped, encoding: .utf8))
        #expect(Set(overrides.keys) == Set(ColorRole.allCases))
        for role in ColorRole.allCases {
            #expect(overrides[role] == Theme.look(role).rich, "\(role.configName)")
        }
    }

    @Test("a theme file replaces the rich looks only; 8 colours and monochrome keep theirs")
    func overridesRichOnly() throws {
        let overrides = try Theme.parseOverrides("# mine\nheader = #102030 default bold underline\n\nchat-own = 9 0\n")
        let header = CellStyle(
            foreground: .rgb(0x10, 0x20, 0x30), background: .default, attributes: [.bold, .underline])
        #expect(Theme(depth: .palette256, overrides: overrides).style(.header) == header)
        #expect(
            Theme(depth: .direct, overrides: overrides).style(.chatOwn)
                == CellStyle(foreground: .palette(9), background: .palette(0)))
        #expect(Theme(depth: .palette256, overrides: overrides).style(.tileName) == Theme.look(.tileName).rich)
        #expect(Theme(depth: .ansi8, overrides: overrides).style(.header) == Theme.look(.header).basic)
    }

    @Test("role names are the kebab-case of the roles")
    func names() {
        #expect(ColorRole.tileBorderSpeaking.configName == "tile-border-speaking")
        #expect(ColorRole.text.configName == "text")
    }

    @Test(
        "bad lines name the line and the problem",
        arguments: [
            ("header 1 2", "line 1: expected `role = foreground background [attributes]`, got \"header 1 2\""),
            (
                "\nheaders = 1 2",
                "line 2: unknown colour role \"headers\"; roles are "
                    + ColorRole.allCases.map(\.configName).joined(separator: ", ")
            ),
            ("header = 1 2\nheader = 3 4", "line 2: header is already set on line 1"),
            ("header = 1", "line 1: header needs a foreground and a background colour (0…255, #rrggbb or default)"),
            (
                "header = 256 0",
                "line 1: \"256\" is not a colour; write 0…255 (the 256-colour palette), #rrggbb or default"
            ),
            (
                "header = #12345 0",
                "line 1: \"#12345\" is not a colour; write 0…255 (the 256-colour palette), #rrggbb or default"
            ),
            ("header = 1 2 blink", "line 1: unknown attribute \"blink\"; use bold, dim, reverse or underline"),
        ])
    func bad(text: String, message: String) {
        #expect(throws: ThemeFileError.self) { try Theme.parseOverrides(text) }
        do {
            _ = try Theme.parseOverrides(text)
        } catch {
            #expect(error.description == message)
        }
    }
}
