import DequeModule

/// What kind of line a chat entry is, so the renderer can colour it by role.
public enum ChatKind: String, Hashable, Sendable {
    /// A message from another participant.
    case chat
    /// A message the local user sent.
    case own
    /// A connection alert (interrupted, lost, reconnected, join failed).
    case alert
    /// A room notice (someone joined or left).
    case system
}

/// One entry of the chat pane.
public struct ChatEntry: Hashable, Sendable {
    /// The sender's display name; nil for alerts and system notices.
    public var sender: String?
    /// The message, cleaned of control characters.
    public var text: String
    /// When it arrived, on the injected clock (time since the client started).
    public var time: Duration
    /// Chat, own, alert or system.
    public var kind: ChatKind

    /// An entry; `text` is used as given (``ChatLog/append(_:)`` cleans it).
    public init(sender: String?, text: String, time: Duration, kind: ChatKind) {
        self.sender = sender
        self.text = text
        self.time = time
        self.kind = kind
    }

    /// The entry as one line of text: "alice: hi", "! Connection lost", "* bob joined".
    public var formatted: String {
        switch kind {
        case .chat, .own: return "\(sender ?? "?"): \(text)"
        case .alert: return "! \(text)"
        case .system: return "* \(text)"
        }
    }
}

/// One screen line of the chat pane: a wrapped piece of an entry.
public struct ChatPaneLine: Hashable, Sendable {
    /// The text of this line (at most the pane width in cells).
    public var text: String
    /// The kind of the entry it belongs to.
    public var kind: ChatKind
    /// True for an entry's first line (where the sender name starts).
    public var isFirstLine: Bool

    /// A pane line.
    public init(text: String, kind: ChatKind, isFirstLine: Bool) {
        self.text = text
        self.kind = kind
        self.isFirstLine = isFirstLine
    }
}

/// The chat pane's history: bounded (oldest dropped first), cleaned of terminal control characters.
public struct ChatLog: Hashable, Sendable {
    /// Default number of entries kept.
    public static let defaultCapacity = 500

    /// Entries kept before the oldest is dropped.
    public let capacity: Int
    private var storage: Deque<ChatEntry> = []

    /// An empty log keeping at most `capacity` entries (at least 1).
    public init(capacity: Int = ChatLog.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// All entries, oldest first.
    public var entries: [ChatEntry] { Array(storage) }
    /// Number of entries held.
    public var count: Int { storage.count }
    /// True when the log holds nothing.
    public var isEmpty: Bool { storage.isEmpty }
    /// The newest entry.
    public var last: ChatEntry? { storage.last }

    /// Adds an entry after replacing control characters (escape sequences, newlines, tabs) with spaces.
    public mutating func append(_ entry: ChatEntry) {
        var entry = entry
        entry.text = Self.clean(entry.text)
        entry.sender = entry.sender.map(Self.clean)
        storage.append(entry)
        while storage.count > capacity {
            storage.removeFirst()
        }
    }

    /// Puts entries from before everything held (a room's kept history) at the start, cleaned like `append`; when
    /// the log is full the oldest of them go first.
    public mutating func prepend(_ entries: [ChatEntry]) {
        let room = capacity - storage.count
        guard room > 0 else { return }
        for var entry in entries.suffix(room).reversed() {
            entry.text = Self.clean(entry.text)
            entry.sender = entry.sender.map(Self.clean)
            storage.prepend(entry)
        }
    }

    /// The newest `limit` entries, oldest first.
    public func newest(_ limit: Int) -> [ChatEntry] {
        Array(storage.suffix(max(0, limit)))
    }

    /// The newest lines that fit a pane of `width` x `height` cells, entries wrapped at `width` cells
    /// (see ``TextWidth``), oldest line first.
    public func paneLines(width: Int, height: Int) -> [ChatPaneLine] {
        guard width > 0, height > 0 else { return [] }
        var lines: [ChatPaneLine] = []
        for entry in storage.reversed() {
            let wrapped = Self.wrap(entry.formatted, width: width)
            for (index, text) in wrapped.enumerated().reversed() {
                lines.append(ChatPaneLine(text: text, kind: entry.kind, isFirstLine: index == 0))
                if lines.count == height { return lines.reversed() }
            }
        }
        return lines.reversed()
    }

    /// Replaces control characters (C0, DEL, C1) with spaces so remote text cannot drive the terminal.
    public static func clean(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(scalar.properties.generalCategory == .control ? " " : scalar)
        }
        return String(scalars)
    }

    /// Splits `text` into lines of at most `width` cells, breaking after the last space when there is one.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line: [Character] = []
        var lineWidth = 0
        for character in text {
            let size = TextWidth.cells(character)
            if lineWidth + size > width, !line.isEmpty {
                if character == " " {
                    lines.append(String(line))
                    line = []
                    lineWidth = 0
                    continue
                }
                if let space = line.lastIndex(of: " "), space > 0 {
                    lines.append(String(line[..<space]))
                    line = Array(line[(space + 1)...])
                    lineWidth = TextWidth.cells(String(line))
                } else {
                    lines.append(String(line))
                    line = []
                    lineWidth = 0
                }
            }
            line.append(character)
            lineWidth += size
        }
        lines.append(String(line))
        return lines
    }
}

/// The chat input line: text plus a cursor counted in characters, edited as the user types.
public struct ChatInput: Hashable, Sendable {
    /// Default limit on a message's UTF-8 size.
    public static let defaultMaximumBytes = 1000

    /// The line typed so far.
    public private(set) var text: String
    /// Cursor position in characters from the start (0…text.count).
    public private(set) var cursor: Int
    /// Longest line accepted, in UTF-8 bytes; typing beyond it is refused.
    public let maximumBytes: Int

    /// An input line holding `text` (cut to ``maximumBytes``) with the cursor at its end.
    public init(text: String = "", maximumBytes: Int = ChatInput.defaultMaximumBytes) {
        self.maximumBytes = max(1, maximumBytes)
        var fitting = ""
        for character in text {
            guard fitting.utf8.count + character.utf8.count <= self.maximumBytes else { break }
            fitting.append(character)
        }
        self.text = fitting
        self.cursor = fitting.count
    }

    /// The cursor's column in cells from the start of the line, for drawing it.
    public var cursorColumn: Int { TextWidth.cells(text.prefix(cursor)) }

    /// True when the line holds nothing but blanks.
    public var isBlank: Bool { text.allSatisfy(\.isWhitespace) }

    /// Inserts a printable character at the cursor; returns false (and changes nothing) for control characters
    /// or when the line would exceed ``maximumBytes``.
    @discardableResult
    public mutating func insert(_ character: Character) -> Bool {
        guard !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return false
        }
        guard text.utf8.count + character.utf8.count <= maximumBytes else { return false }
        text.insert(character, at: index(cursor))
        cursor += 1
        return true
    }

    /// Deletes the character before the cursor (Backspace).
    @discardableResult
    public mutating func deleteBackward() -> Bool {
        guard cursor > 0 else { return false }
        text.remove(at: index(cursor - 1))
        cursor -= 1
        return true
    }

    /// Deletes the character under the cursor (Delete).
    @discardableResult
    public mutating func deleteForward() -> Bool {
        guard cursor < text.count else { return false }
        text.remove(at: index(cursor))
        return true
    }

    /// Deletes the word before the cursor and the blanks after it (Ctrl-W).
    @discardableResult
    public mutating func deleteWordBackward() -> Bool {
        guard cursor > 0 else { return false }
        var start = cursor
        let characters = Array(text)
        while start > 0, characters[start - 1].isWhitespace { start -= 1 }
        while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
        text.removeSubrange(index(start)..<index(cursor))
        cursor = start
        return true
    }

    /// Moves the cursor one character left.
    @discardableResult
    public mutating func moveLeft() -> Bool { moveCursor(to: cursor - 1) }
    /// Moves the cursor one character right.
    @discardableResult
    public mutating func moveRight() -> Bool { moveCursor(to: cursor + 1) }
    /// Moves the cursor to the start of the line.
    @discardableResult
    public mutating func moveToStart() -> Bool { moveCursor(to: 0) }
    /// Moves the cursor to the end of the line.
    @discardableResult
    public mutating func moveToEnd() -> Bool { moveCursor(to: text.count) }

    /// Empties the line.
    public mutating func clear() {
        text = ""
        cursor = 0
    }

    private mutating func moveCursor(to position: Int) -> Bool {
        let clamped = min(max(0, position), text.count)
        guard clamped != cursor else { return false }
        cursor = clamped
        return true
    }

    private func index(_ offset: Int) -> String.Index {
        text.index(text.startIndex, offsetBy: offset)
    }
}
