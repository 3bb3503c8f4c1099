import CCursesShim
import CNcursesw
import ParleyRoom
import Testing

@testable import ParleyTUI

@Suite("Key decoding")
struct KeyDecoderTests {
    struct CharacterCase: CustomTestStringConvertible, Sendable {
        var name: String
        var value: UInt32
        var key: Key?
        var testDescription: String { name }
    }

    @Test(
        "characters from wget_wch",
        arguments: [
            CharacterCase(name: "letter", value: 0x61, key: .char("a")),
            CharacterCase(name: "space", value: 0x20, key: .char(" ")),
            CharacterCase(name: "umlaut", value: 0xE4, key: .char("ä")),
            CharacterCase(name: "CJK", value: 0x65E5, key: .char("日")),
            CharacterCase(name: "emoji", value: 0x1F600, key: .char("😀")),
            CharacterCase(name: "line feed", value: 10, key: .enter),
            CharacterCase(name: "carriage return (nonl)", value: 13, key: .enter),
            CharacterCase(name: "tab", value: 9, key: .tab),
            CharacterCase(name: "DEL", value: 127, key: .backspace),
            CharacterCase(name: "Ctrl-H", value: 8, key: .backspace),
            CharacterCase(name: "Esc", value: 27, key: .escape),
            CharacterCase(name: "Ctrl-C", value: 3, key: .control("c")),
            CharacterCase(name: "Ctrl-A", value: 1, key: .control("a")),
            CharacterCase(name: "Ctrl-Z", value: 26, key: .control("z")),
            CharacterCase(name: "NUL", value: 0, key: nil),
            CharacterCase(name: "Ctrl-backslash", value: 28, key: nil),
            CharacterCase(name: "C1 control", value: 0x9B, key: nil),
            CharacterCase(name: "surrogate", value: 0xD800, key: nil),
        ])
    func characters(_ c: CharacterCase) {
        #expect(KeyDecoder.key(character: c.value) == c.key)
    }

    struct CodeCase: CustomTestStringConvertible, Sendable {
        var name: String
        var code: Int32
        var key: Key?
        var testDescription: String { name }
    }

    @Test(
        "key codes from wget_wch",
        arguments: [
            CodeCase(name: "up", code: KEY_UP, key: .up),
            CodeCase(name: "down", code: KEY_DOWN, key: .down),
            CodeCase(name: "left", code: KEY_LEFT, key: .left),
            CodeCase(name: "right", code: KEY_RIGHT, key: .right),
            CodeCase(name: "home", code: KEY_HOME, key: .home),
            CodeCase(name: "end", code: KEY_END, key: .end),
            CodeCase(name: "page down", code: KEY_NPAGE, key: .pageDown),
            CodeCase(name: "page up", code: KEY_PPAGE, key: .pageUp),
            CodeCase(name: "backspace", code: KEY_BACKSPACE, key: .backspace),
            CodeCase(name: "delete", code: KEY_DC, key: .delete),
            CodeCase(name: "keypad enter", code: KEY_ENTER, key: .enter),
            CodeCase(name: "resize", code: KEY_RESIZE, key: .resize),
            CodeCase(name: "F1", code: KEY_F0 + 1, key: .function(1)),
            CodeCase(name: "F12", code: KEY_F0 + 12, key: .function(12)),
            CodeCase(name: "F13 is not mapped", code: KEY_F0 + 13, key: nil),
            CodeCase(name: "insert is not mapped", code: KEY_IC, key: nil),
        ])
    func codes(_ c: CodeCase) {
        #expect(KeyDecoder.key(keyCode: c.code) == c.key)
    }

    @Test("mouse events")
    func mouse() {
        let click = parley_curses_button1_clicked()
        let double = parley_curses_button1_double_clicked()
        #expect(KeyDecoder.key(mouseState: click, column: 7, row: 1) == .mouseClick(column: 7, row: 1))
        #expect(KeyDecoder.key(mouseState: double, column: 3, row: 4) == .mouseDoubleClick(column: 3, row: 4))
        #expect(KeyDecoder.key(mouseState: parley_curses_button4_pressed(), column: 1, row: 1) == nil)
        #expect(KeyDecoder.key(mouseState: 0, column: 1, row: 1) == nil)
        #expect(KeyDecoder.mouseEvents == click | double)
    }
}
