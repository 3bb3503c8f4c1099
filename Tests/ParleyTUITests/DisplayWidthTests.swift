import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Display width")
struct DisplayWidthTests {
    struct WidthCase: CustomTestStringConvertible, Sendable {
        var name: String
        var character: Character
        var width: Int
        var testDescription: String { name }
    }

    @Test(
        "cell widths of grapheme clusters",
        arguments: [
            WidthCase(name: "ASCII letter", character: "a", width: 1),
            WidthCase(name: "space", character: " ", width: 1),
            WidthCase(name: "escape", character: "\u{1B}", width: 0),
            WidthCase(name: "DEL", character: "\u{7F}", width: 0),
            WidthCase(name: "C1 control", character: "\u{85}", width: 0),
            WidthCase(name: "Latin-1 letter", character: "é", width: 1),
            WidthCase(name: "decomposed e + acute", character: "e\u{301}", width: 1),
            WidthCase(name: "lone combining mark", character: "\u{301}", width: 0),
            WidthCase(name: "zero-width space", character: "\u{200B}", width: 0),
            WidthCase(name: "upper half block", character: "▀", width: 1),
            WidthCase(name: "box drawing", character: "┌", width: 1),
            WidthCase(name: "Han ideograph", character: "日", width: 2),
            WidthCase(name: "Hiragana", character: "あ", width: 2),
            WidthCase(name: "Hangul syllable", character: "한", width: 2),
            WidthCase(name: "fullwidth A", character: "Ａ", width: 2),
            WidthCase(name: "halfwidth katakana", character: "ｱ", width: 1),
            WidthCase(name: "emoji presentation", character: "😀", width: 2),
            WidthCase(name: "emoji with skin tone", character: "👍🏽", width: 2),
            WidthCase(name: "ZWJ family", character: "👨‍👩‍👧", width: 2),
            WidthCase(name: "flag", character: "🇫🇷", width: 2),
            WidthCase(name: "heart as text", character: "❤", width: 1),
            WidthCase(name: "heart with VS16", character: "❤️", width: 2),
            WidthCase(name: "Cyrillic", character: "Ж", width: 1),
            WidthCase(name: "watch, emoji presentation below U+3000", character: "\u{231A}", width: 2),
            WidthCase(name: "medium small square, emoji presentation", character: "\u{25FE}", width: 2),
            WidthCase(name: "Hangul vowel filler", character: "\u{1160}", width: 0),
            WidthCase(name: "angle bracket, East Asian wide", character: "\u{2329}", width: 2),
        ])
    func width(_ c: WidthCase) {
        #expect(DisplayWidth.of(c.character) == c.width)
    }

    struct TruncateCase: CustomTestStringConvertible, Sendable {
        var name: String
        var text: String
        var width: Int
        var expected: String
        var testDescription: String { name }
    }

    @Test(
        "truncation with an ellipsis",
        arguments: [
            TruncateCase(name: "fits", text: "Ada", width: 3, expected: "Ada"),
            TruncateCase(name: "one too long", text: "Ada L", width: 4, expected: "Ada…"),
            TruncateCase(name: "wide characters", text: "日本語です", width: 6, expected: "日本…"),
            TruncateCase(name: "wide character does not split", text: "日本語", width: 4, expected: "日…"),
            TruncateCase(name: "width one", text: "Grace", width: 1, expected: "…"),
            TruncateCase(name: "width zero", text: "Grace", width: 0, expected: ""),
        ])
    func truncate(_ c: TruncateCase) {
        let result = DisplayWidth.truncate(c.text, toWidth: c.width)
        #expect(result == c.expected)
        #expect(DisplayWidth.of(result) <= max(0, c.width))
    }

    struct WrapCase: CustomTestStringConvertible, Sendable {
        var name: String
        var text: String
        var width: Int
        var expected: [String]
        var testDescription: String { name }
    }

    @Test(
        "wrapping at spaces and inside long words",
        arguments: [
            WrapCase(name: "fits on one line", text: "hi there", width: 10, expected: ["hi there"]),
            WrapCase(
                name: "breaks at spaces", text: "the quick brown fox", width: 10,
                expected: ["the quick", "brown fox"]),
            WrapCase(
                name: "long word is split", text: "abcdefghij xy", width: 4, expected: ["abcd", "efgh", "ij", "xy"]),
            WrapCase(name: "newlines start lines", text: "a\nb c", width: 10, expected: ["a", "b c"]),
            WrapCase(name: "wide characters", text: "日本語の文", width: 4, expected: ["日本", "語の", "文"]),
            WrapCase(name: "empty text", text: "", width: 5, expected: [""]),
        ])
    func wrap(_ c: WrapCase) {
        #expect(DisplayWidth.wrap(c.text, width: c.width) == c.expected)
    }
}
