import ParleyPictures
import ParleyRoom
import ParleyWire

/// One line of editable text with a cursor, as in the lobby's fields: the editing keys every text field shares.
public struct InputLine: Hashable, Sendable {
    /// The text typed so far.
    public private(set) var text: String
    /// The cursor, in characters from the start (0…text.count).
    public private(set) var cursor: Int
    /// Most characters the line accepts.
    public let maximumLength: Int

    /// A line holding `text` (cut to `maximumLength`) with the cursor at its end.
    public init(_ text: String = "", maximumLength: Int = 256) {
        self.maximumLength = max(1, maximumLength)
        self.text = String(text.prefix(self.maximumLength))
        self.cursor = self.text.count
    }

    /// Applies an editing key: printable characters accepted by `accepts`, Backspace, Delete, Left, Right,
    /// Home/End (Ctrl-A/Ctrl-E), Ctrl-U (clear) and Ctrl-W (delete a word). Returns false for keys that are not
    /// editing keys or changed nothing.
    @discardableResult
    public mutating func edit(_ key: Key, accepts: (Character) -> Bool = { _ in true }) -> Bool {
        switch key {
        case .char(let character):
            guard text.count < maximumLength, !DisplayWidth.isUnprintable(character), accepts(character) else {
                return false
            }
            text.insert(character, at: index(cursor))
            cursor += 1
            return true
        case .backspace:
            guard cursor > 0 else { return false }
            text.remove(at: index(cursor - 1))
            cursor -= 1
            return true
        case .delete:
            guard cursor < text.count else { return false }
            text.remove(at: index(cursor))
            return true
        case .left: return move(to: cursor - 1)
        case .right: return move(to: cursor + 1)
        case .home, .control("a"): return move(to: 0)
        case .end, .control("e"): return move(to: text.count)
        case .control("u"):
            guard !text.isEmpty else { return false }
            text = ""
            cursor = 0
            return true
        case .control("w"):
            guard cursor > 0 else { return false }
            let characters = Array(text)
            var start = cursor
            while start > 0, characters[start - 1] == " " { start -= 1 }
            while start > 0, characters[start - 1] != " " { start -= 1 }
            text.removeSubrange(index(start)..<index(cursor))
            cursor = start
            return true
        default:
            return false
        }
    }

    /// Replaces the text with `clean(text)` (e.g. `RoomName.clean`), keeping the cursor after the same cleaned
    /// prefix. Returns true when the text changed.
    @discardableResult
    public mutating func clean(with clean: (String) -> String) -> Bool {
        let cleaned = clean(text)
        guard cleaned != text else { return false }
        let before = clean(String(text.prefix(cursor))).count
        text = String(cleaned.prefix(maximumLength))
        cursor = min(before, text.count)
        return true
    }

    private mutating func move(to position: Int) -> Bool {
        let clamped = min(max(0, position), text.count)
        guard clamped != cursor else { return false }
        cursor = clamped
        return true
    }

    private func index(_ offset: Int) -> String.Index {
        text.index(text.startIndex, offsetBy: offset)
    }
}
