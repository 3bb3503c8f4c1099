import ParleyRoom

/// How many terminal columns text takes, and helpers to cut and wrap text to a width.
///
/// A small conservative table instead of the C library's `wcwidth`, which depends on the process locale (it answers
/// -1 for everything non-ASCII until `setlocale` runs, and tests never run it). East Asian wide and fullwidth
/// characters and emoji presentation are 2 columns; combining marks and format characters are 0; controls are not
/// printable at all and are replaced before they reach a cell.
public enum DisplayWidth {
    /// Shown in place of control characters and other unprintable text.
    public static let replacement: Character = "\u{FFFD}"

    /// Columns a grapheme cluster takes: 0, 1 or 2.
    public static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        var iterator = scalars.makeIterator()
        guard let first = iterator.next() else { return 0 }
        if iterator.next() == nil { return of(lone: first) }
        var emojiStyle = false
        for scalar in scalars {
            if scalar.properties.isEmojiPresentation { return 2 }
            if scalar.value == 0xFE0F { emojiStyle = true }
        }
        if emojiStyle && first.properties.isEmoji { return 2 }
        return of(first)
    }

    /// Columns a character of this one scalar takes: `of(Character(scalar))`.
    @inline(__always)
    public static func of(lone scalar: Unicode.Scalar) -> Int {
        // Below U+3000 (text, box drawing, blocks, symbols: every frame's chrome) a table lookup instead of Unicode
        // property queries, which were ~2 % of a call's CPU.
        if scalar.value < tableLimit { return Int(singleScalarWidths[Int(scalar.value)]) }
        return scalar.properties.isEmojiPresentation ? 2 : of(scalar)
    }

    /// Scalars below this have their width as a lone character in `singleScalarWidths`.
    static let tableLimit: UInt32 = 0x3000

    /// `of(Character)` of each scalar below `tableLimit` on its own, computed once by the rules below.
    static let singleScalarWidths: [UInt8] = (0..<tableLimit).map { value in
        guard let scalar = Unicode.Scalar(value) else { return 1 }
        return UInt8(scalar.properties.isEmojiPresentation ? 2 : of(scalar))
    }

    /// Columns a single scalar takes on its own.
    public static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }
        // Box drawing, block elements and sextants: every picture cell, so no property lookups.
        if (0x2500...0x259F).contains(value) || (0x1FB00...0x1FB3B).contains(value) { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control, .lineSeparator, .paragraphSeparator:
            return 0
        default:
            break
        }
        if (0x1160...0x11FF).contains(value) || value == 0x200B { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        return isWide(value) ? 2 : 1
    }

    /// True when every byte of `text` is printable ASCII: one column each, one character each.
    @inline(__always)
    static func isPrintableASCII(_ text: String) -> Bool { text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } }

    /// Columns a string takes (the sum over its grapheme clusters).
    public static func of(_ text: String) -> Int {
        if isPrintableASCII(text) { return text.utf8.count }
        var total = 0
        for character in text { total += of(character) }
        return total
    }

    /// True for characters that cannot go into a cell as they are: controls, and clusters of width 0 standing alone
    /// (a combining mark with no base). `Screen` replaces them with `replacement`.
    public static func isUnprintable(_ character: Character) -> Bool {
        of(character) == 0
    }

    /// The longest prefix of `text` that fits in `width` columns; if text had to be cut, it ends with `ellipsis`.
    public static func truncate(_ text: String, toWidth width: Int, ellipsis: String = "…") -> String {
        guard width > 0 else { return "" }
        if of(text) <= width { return text }
        let ellipsisWidth = of(ellipsis)
        let room = width - ellipsisWidth
        guard room >= 0 else { return prefix(ellipsis, width: width) }
        return prefix(text, width: room) + ellipsis
    }

    /// The longest prefix of `text` that fits in `width` columns, cut at a grapheme boundary.
    public static func prefix(_ text: String, width: Int) -> String {
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let w = of(text[index])
            if used + w > width { break }
            used += w
            end = text.index(after: index)
        }
        return String(text[..<end])
    }

    /// Splits text into lines of at most `width` columns, breaking at spaces where it can and inside long words
    /// where it must. Newlines in the text start new lines. Never returns an empty array.
    public static func wrap(_ text: String, width: Int) -> [String] {
        TextWidth.wrap(text, width: width, cells: of)
    }

    /// East Asian Wide and Fullwidth ranges (Unicode 15), outside the emoji handled through scalar properties.
    static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
            0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19,
            0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x17000...0x18CFF,
            0x1AFF0...0x1B2FF, 0x1F200...0x1F2FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
