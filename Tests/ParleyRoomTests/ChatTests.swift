import ParleyRoom
import Testing

private func entry(_ text: String, _ kind: ChatKind = .chat, sender: String? = "bob", ms: Int64 = 0) -> ChatEntry {
    ChatEntry(sender: kind == .chat || kind == .own ? sender : nil, text: text, time: .milliseconds(ms), kind: kind)
}

@Suite("ChatLog")
struct ChatLogTests {
    @Test("history is bounded, oldest dropped first")
    func bounded() {
        var log = ChatLog(capacity: 3)
        for i in 1...5 { log.append(entry("m\(i)")) }
        #expect(log.count == 3)
        #expect(log.entries.map(\.text) == ["m3", "m4", "m5"])
        #expect(log.newest(2).map(\.text) == ["m4", "m5"])
        #expect(ChatLog().capacity == 500)
    }

    @Test("control characters from the network are replaced")
    func cleaned() {
        var log = ChatLog()
        log.append(ChatEntry(sender: "ev\u{1B}il", text: "hi\u{1B}[2J\nthere\u{7}\u{9B}", time: .zero, kind: .chat))
        #expect(log.last?.text == "hi [2J there  ")
        #expect(log.last?.sender == "ev il")
    }

    @Test("formatting by kind")
    func formatting() {
        #expect(entry("hi").formatted == "bob: hi")
        #expect(entry("hey", .own, sender: "me").formatted == "me: hey")
        #expect(entry("Connection lost", .alert).formatted == "! Connection lost")
        #expect(entry("bob joined", .system).formatted == "* bob joined")
    }

    @Test("the pane shows the newest lines that fit, wrapped at the width")
    func paneLines() {
        var log = ChatLog()
        log.append(entry("first"))
        log.append(entry("the quick brown fox jumps"))
        log.append(entry("Reconnected", .alert))
        // "! Reconnected" is 13 characters: it breaks at its space.
        #expect(
            log.paneLines(width: 12, height: 4) == [
                ChatPaneLine(text: "quick brown", kind: .chat, isFirstLine: false),
                ChatPaneLine(text: "fox jumps", kind: .chat, isFirstLine: false),
                ChatPaneLine(text: "!", kind: .alert, isFirstLine: true),
                ChatPaneLine(text: "Reconnected", kind: .alert, isFirstLine: false),
            ])
        #expect(log.paneLines(width: 12, height: 0).isEmpty)
        #expect(
            log.paneLines(width: 40, height: 10).map(\.text) == [
                "bob: first", "bob: the quick brown fox jumps", "! Reconnected",
            ])
    }

    @Test("long words are cut hard")
    func hardWrap() {
        var log = ChatLog()
        log.append(entry("abcdefghij", .system))
        #expect(log.paneLines(width: 5, height: 5).map(\.text) == ["*", "abcde", "fghij"])
    }
}

@Suite("TextWidth")
struct TextWidthTests {
    @Test(
        "cells per character",
        arguments: [
            ("a", 1), ("é", 1), ("e\u{301}", 1), ("日", 2), ("한", 2), ("👋", 2), ("👋🏽", 2), ("❤️", 2),
            ("\u{1B}", 0), ("Ａ", 2), ("→", 1),
        ])
    func cells(text: String, cells: Int) {
        #expect(TextWidth.cells(Character(text)) == cells)
    }

    @Test("wide characters wrap by cells, and prefixes fit")
    func wideWrap() {
        var log = ChatLog()
        log.append(entry("日本語テキスト", .system))
        #expect(log.paneLines(width: 6, height: 9).map(\.text) == ["*", "日本語", "テキス", "ト"])
        #expect(TextWidth.prefix("ab日本", fitting: 5) == "ab日")
        #expect(TextWidth.cells("ab日本") == 6)
    }
}

@Suite("ChatInput")
struct ChatInputTests {
    @Test("UTF-8 editing with a character cursor")
    func editing() {
        var input = ChatInput()
        for c in "héllo 👋🏽" { input.insert(c) }
        #expect(input.text == "héllo 👋🏽" && input.cursor == 7 && input.cursorColumn == 8)
        input.moveLeft()
        input.moveLeft()
        input.insert("!")
        #expect(input.text == "héllo! 👋🏽" && input.cursor == 6)
        input.deleteBackward()
        input.deleteForward()
        #expect(input.text == "héllo👋🏽" && input.cursor == 5)
        input.moveToStart()
        let deletedAtStart = input.deleteBackward()
        #expect(!deletedAtStart)
        input.deleteForward()
        #expect(input.text == "éllo👋🏽")
        input.moveToEnd()
        let movedPastEnd = input.moveRight()
        #expect(!movedPastEnd && input.cursor == 5)
    }

    @Test("control characters are refused and the byte limit holds")
    func limits() {
        var input = ChatInput(maximumBytes: 5)
        let results = [input.insert("\u{1B}"), input.insert("a"), input.insert("é"), input.insert("b")]
        #expect(results == [false, true, true, true])
        let tooLong = input.insert("é")
        #expect(!tooLong, "a+é+b is 4 bytes; another é would make 6")
        let fits = input.insert("c")
        #expect(fits)
        #expect(input.text == "aébc")
        #expect(ChatInput(text: "abcdef", maximumBytes: 4).text == "abcd")
    }

    @Test("Ctrl-W deletes the previous word")
    func deleteWord() {
        var input = ChatInput(text: "see you  soon  ")
        input.deleteWordBackward()
        #expect(input.text == "see you  ")
        input.deleteWordBackward()
        #expect(input.text == "see ")
        #expect(input.isBlank == false)
        input.clear()
        #expect(input.isBlank && input.cursor == 0)
    }
}

@Suite("ChatLog: history from before")
struct ChatLogPrependTests {
    @Test("prepended entries go first, cleaned, and never push out what is newer")
    func prepend() {
        var log = ChatLog(capacity: 4)
        log.append(entry("new1"))
        log.append(entry("new2"))
        log.prepend([entry("old1"), entry("old2"), entry("ol\u{1B}d3")])
        #expect(log.entries.map(\.text) == ["old2", "ol d3", "new1", "new2"])
        log.prepend([entry("older")])
        #expect(log.count == 4 && log.entries.first?.text == "old2", "a full log keeps what it has")
    }
}
