/// How many terminal cells text takes: 2 for East Asian wide characters and emoji, 0 for control characters,
/// 1 otherwise. An approximation of wcwidth that needs no C library, shared by the chat pane and tile labels.
public enum TextWidth {
    /// Cells taken by one character (a grapheme cluster: combining marks add nothing).
    public static func cells(_ character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if first.properties.generalCategory == .control { return 0 }
        if character.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        if first.properties.isEmojiPresentation { return 2 }
        return isWide(first.value) ? 2 : 1
    }

    /// Cells taken by a string.
    public static func cells<S: StringProtocol>(_ text: S) -> Int {
        text.reduce(0) { $0 + cells($1) }
    }

    /// The longest prefix of `text` that fits in `width` cells.
    public static func prefix(_ text: String, fitting width: Int) -> String {
        var used = 0
        var result = ""
        for character in text {
            let size = cells(character)
            guard used + size <= width else { break }
            used += size
            result.append(character)
        }
        return result
    }

    /// Splits text into lines of at most `width` cells (each character `cells` wide), breaking at spaces where it can
    /// and inside long words where it must. Newlines in the text start new lines. Never returns an empty array.
    public static func wrap(_ text: String, width: Int, cells: (Character) -> Int = TextWidth.cells) -> [String] {
        guard width > 0 else { return [""] }
        func widthOf<S: StringProtocol>(_ text: S) -> Int { text.reduce(0) { $0 + cells($1) } }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            var lineWidth = 0
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                var word = String(word)
                var wordWidth = widthOf(word)
                if lineWidth > 0 && lineWidth + 1 + wordWidth <= width {
                    line += " " + word
                    lineWidth += 1 + wordWidth
                    continue
                }
                if lineWidth > 0 {
                    lines.append(line)
                    line = ""
                    lineWidth = 0
                }
                while wordWidth > width {
                    var head = ""
                    var used = 0
                    for character in word {
                        let size = cells(character)
                        guard used + size <= width else { break }
                        used += size
                        head.append(character)
                    }
                    if head.isEmpty { head = String(word.first!) }
                    lines.append(head)
                    word.removeFirst(head.count)
                    wordWidth = widthOf(word)
                }
                line = word
                lineWidth = wordWidth
            }
            lines.append(line)
        }
        return lines
    }

    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
            0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
