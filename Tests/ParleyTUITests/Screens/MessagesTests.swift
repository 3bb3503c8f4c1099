import Foundation
import ParleyRoom
import Testing

@testable import ParleyTUI

@Suite("Messages screen")
struct MessagesTests {
    static let theme = Theme(depth: .palette256)
    static let utc = TimeZone(identifier: "UTC")!

    func type(_ text: String, into state: inout MessagesState) {
        for character in text { _ = reduce(&state, .char(character), at: 7_000) }
    }

    func listed(_ names: [String]) -> [ConversationEntry] {
        names.enumerated().map { index, name in
            ConversationEntry(
                key: name.hasPrefix("#")
                    ? ConversationKey(.channel, String(name.dropFirst()))
                    : ConversationKey(.direct, name),
                unread: index, lastAt: Int64(1000 - index), lastFrom: "bob", lastText: "hi \(index)")
        }
    }

    @Test("Up/Down choose, Enter opens the highlighted conversation and clears its unread count")
    func choosing() {
        var state = MessagesState(account: "alice")
        _ = apply(&state, .conversations(listed(["bob", "#team", "carol"])))
        #expect(state.connection == nil)
        #expect(
            reduce(&state, .down, at: 7_000) == nil && reduce(&state, .down, at: 7_000) == nil
                && reduce(&state, .down, at: 7_000) == nil)
        #expect(state.selected == 2, "stops at the last")
        _ = reduce(&state, .up, at: 7_000)
        #expect(reduce(&state, .enter, at: 7_000) == .open(ConversationKey(.channel, "team")))
        #expect(
            state.open == ConversationKey(.channel, "team")
                && state.entry(ConversationKey(.channel, "team"))?.unread == 0)
    }

    /// Commands and refusals typed into the input line.
    static let commands: [(typed: String, action: MessagesAction?, notice: String?)] = [
        ("/dm bob", .open(ConversationKey(.direct, "bob")), nil),
        ("/dm two words", nil, "use two_words instead"),
        ("/join design team", .joinChannel("design team"), nil),
        ("/join ops/é", nil, "(e.g. /join ops)"),
        ("/leave", nil, "/leave works in an open channel."),
        ("/shout", nil, "Unknown command /shout"),
        ("hello", nil, "Open a conversation first"),
    ]

    @Test("commands in the input line, and what they refuse")
    func commandTable() {
        for row in Self.commands {
            var state = MessagesState(account: "alice")
            type(row.typed, into: &state)
            #expect(reduce(&state, .enter, at: 7_000) == row.action, "\(row.typed)")
            if let notice = row.notice {
                #expect(
                    state.notice?.isError == true && state.notice?.text.contains(notice) == true,
                    "\(row.typed): \(String(describing: state.notice))")
            }
        }
    }

    @Test("a sent message shows at once as sending, then stored, delivered and read")
    func sendingProgress() throws {
        var state = MessagesState(account: "alice")
        type("/dm bob", into: &state)
        _ = reduce(&state, .enter, at: 7_000)
        type("lunch?", into: &state)
        #expect(
            reduce(&state, .enter, at: 7_000, newID: { "id-1" }) == .sendDirect(id: "id-1", to: "bob", text: "lunch?"))
        #expect(state.input.text.isEmpty)
        let bob = ConversationKey(.direct, "bob")
        #expect(state.lines[bob]?.map(\.progress) == [.sending])
        #expect(state.lines[bob]?.first?.sentAt == 7_000, "stamped with the time the shell passed in")
        #expect(state.conversations.first?.lastText == "lunch?" && state.conversations.first?.unread == 0)
        _ = apply(&state, .stored(id: "id-1", sequence: 7))
        #expect(state.lines[bob]?.first?.sequence == 7 && state.lines[bob]?.first?.progress == .stored)
        _ = apply(&state, .receipt(peer: "bob", sequences: [7], read: false))
        #expect(state.lines[bob]?.first?.progress == .delivered)
        _ = apply(&state, .receipt(peer: "bob", sequences: [7], read: true))
        _ = apply(&state, .receipt(peer: "bob", sequences: [7], read: false))  // late: read stays
        #expect(state.lines[bob]?.first?.progress == .read)
        let screen = MessagesScreen.render(
            state, size: TerminalSize(columns: 100, rows: 30), theme: Self.theme,
            timeZone: Self.utc)
        #expect(screen.rows(containing: "you: lunch? ✓✓ read").count == 1, "\(screen.text)")
        type("again", into: &state)
        _ = reduce(&state, .enter, at: 7_000, newID: { "id-2" })
        _ = apply(&state, .failed(id: "id-2", reason: "no account is named bob"))
        #expect(state.lines[bob]?.last?.progress == .failed("no account is named bob"))
        #expect(state.notice?.text == "Not sent: no account is named bob")
    }

    @Test("a line that arrives counts as unread unless its conversation is open, where it is marked read")
    func arriving() {
        var state = MessagesState(account: "alice")
        _ = apply(&state, .conversations(listed(["carol", "#team"])))
        state.selected = 1
        let line = MessageLine(sequence: 40, id: "x", from: "bob", text: "new", sentAt: 5000)
        #expect(apply(&state, .arrived(ConversationKey(.direct, "bob"), line)) == nil)
        #expect(state.conversations.map(\.key.description) == ["bob", "carol", "#team"])
        #expect(state.conversations[0].unread == 1 && state.selected == 2, "the highlight stays on #team")
        #expect(apply(&state, .arrived(ConversationKey(.direct, "bob"), line)) == nil)
        #expect(state.lines[ConversationKey(.direct, "bob")]?.count == 1, "the same sequence twice is one line")
        _ = reduce(&state, .up, at: 7_000)
        _ = reduce(&state, .up, at: 7_000)
        #expect(reduce(&state, .enter, at: 7_000) == .open(ConversationKey(.direct, "bob")))
        let next = MessageLine(sequence: 41, id: "y", from: "bob", text: "newer", sentAt: 6000)
        #expect(
            apply(&state, .arrived(ConversationKey(.direct, "bob"), next))
                == .markRead(ConversationKey(.direct, "bob"), through: 41))
        #expect(state.conversations[0].unread == 0)
    }

    @Test("a reply typed before the opened conversation's page came back stays, and so does a line that arrived")
    func aPageDoesNotWipeWhatCameAfterIt() {
        var state = MessagesState(account: "alice")
        let bob = ConversationKey(.direct, "bob")
        _ = apply(&state, .conversations(listed(["bob"])))
        #expect(reduce(&state, .enter, at: 7_000) == .open(bob))
        // Typed and sent while the page asked for by opening is on its way (a fast typist, a slow relay).
        type("yes, here", into: &state)
        #expect(
            reduce(&state, .enter, at: 7_000, newID: { "r1" }) == .sendDirect(id: "r1", to: "bob", text: "yes, here"))
        let live = MessageLine(sequence: 12, id: "l", from: "bob", text: "hello?", sentAt: 6_500)
        _ = apply(&state, .arrived(bob, live))
        let page = [
            MessageLine(sequence: 11, id: "b", from: "bob", text: "are you there?", sentAt: 6_000),
            MessageLine(sequence: 10, id: "a", from: "alice", text: "hi", sentAt: 5_000),
        ]
        _ = apply(&state, .history(bob, page, older: false))
        #expect(state.lines[bob]?.map(\.text) == ["hi", "are you there?", "hello?", "yes, here"])
        _ = apply(&state, .stored(id: "r1", sequence: 13))
        #expect(state.lines[bob]?.last?.progress == .stored, "the reply is still there to be marked stored")
        // A page read after the reply was stored has it: shown once, as stored.
        _ = apply(
            &state,
            .history(
                bob,
                [MessageLine(sequence: 13, id: "r1", from: "alice", text: "yes, here", sentAt: 7_000), live] + page,
                older: false))
        #expect(state.lines[bob]?.map(\.text) == ["hi", "are you there?", "hello?", "yes, here"])
    }

    @Test("history pages go before what is shown; PgUp asks for the page before the oldest line until the first")
    func paging() {
        var state = MessagesState(account: "alice")
        let team = ConversationKey(.channel, "team")
        type("/join team", into: &state)
        _ = reduce(&state, .enter, at: 7_000)
        let newest = (51...100).reversed().map {
            MessageLine(sequence: Int64($0), id: "\($0)", from: "bob", text: "m\($0)", sentAt: Int64($0))
        }
        _ = apply(&state, .history(team, newest, older: false))
        #expect(reduce(&state, .pageUp, at: 7_000) == .loadOlder(team, before: 51))
        let older = (31...50).reversed().map {
            MessageLine(sequence: Int64($0), id: "\($0)", from: "bob", text: "m\($0)", sentAt: Int64($0))
        }
        _ = apply(&state, .history(team, older, older: true))
        #expect(state.lines[team]?.map(\.sequence) == (31...100).map { Int64($0) })
        #expect(reduce(&state, .pageUp, at: 7_000) == nil, "a short page was the first")
        _ = apply(&state, .members(channel: "team", count: 4))
        let screen = MessagesScreen.render(
            state, size: TerminalSize(columns: 100, rows: 30), theme: Self.theme,
            timeZone: Self.utc)
        #expect(screen.rows(containing: "#team · 4 members").count == 1, "\(screen.text)")
        #expect(
            screen.rows(containing: "bob: m100").count == 1 && screen.rows(containing: "bob: m31").isEmpty,
            "newest at the bottom; old ones scrolled off:\n\(screen.text)")
    }

    @Test("logins after a broken connection are 1, 2, 4 … 30 s apart")
    func retryDelays() {
        #expect((1...8).map(MessagesLink.retryDelay(after:)) == [1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test("a message that failed while the connection broke turns stored when it goes later")
    func failedThenStored() {
        var state = MessagesState(account: "alice")
        type("/dm bob", into: &state)
        _ = reduce(&state, .enter, at: 7_000)
        type("hi", into: &state)
        _ = reduce(&state, .enter, at: 7_000, newID: { "m" })
        _ = apply(&state, .failed(id: "m", reason: "closed"))
        _ = apply(&state, .stored(id: "m", sequence: 3))
        #expect(state.lines[ConversationKey(.direct, "bob")]?.first?.progress == .stored)
    }

    @Test("the screen: list with unread counts and presence, the open conversation, notice, input and keys")
    func screen() {
        var state = MessagesState(account: "alice")
        _ = apply(
            &state,
            .conversations([
                ConversationEntry(
                    key: ConversationKey(.direct, "bob"), unread: 2, lastAt: 0, lastFrom: "bob", lastText: "lunch?"),
                ConversationEntry(
                    key: ConversationKey(.channel, "team"), unread: 0, lastAt: 0, lastFrom: "alice", lastText: "ok"),
            ]))
        _ = apply(&state, .presence(name: "bob", online: true))
        _ = reduce(&state, .enter, at: 7_000)
        _ = apply(
            &state,
            .history(
                ConversationKey(.direct, "bob"),
                [
                    MessageLine(sequence: 2, id: "b", from: "bob", text: "lunch?", sentAt: 0),
                    MessageLine(sequence: 1, id: "a", from: "alice", text: "hi", sentAt: 0, progress: .delivered),
                ], older: false))
        type("sure", into: &state)
        let size = TerminalSize(columns: 90, rows: 24)
        let screen = MessagesScreen.render(state, size: size, theme: Self.theme, timeZone: Self.utc)
        let text = screen.text
        #expect(text.contains("Parley · messages · alice") && text.contains("online"))
        #expect(screen.rows(containing: ">bob ●").count == 1, "\(text)")
        #expect(screen.rows(containing: "you: ok").count == 1, "the last line, from the account itself:\n\(text)")
        #expect(screen.rows(containing: "bob · online").count == 1, "\(text)")
        #expect(
            screen.rows(containing: "you: hi ✓✓").count == 1 && screen.rows(containing: "bob: lunch?").count == 2,
            "\(text)")
        #expect(screen.rows(containing: "bob > sure").count == 1, "\(text)")
        #expect(screen.rows(containing: "/dm NAME").count == 1, "\(text)")
        #expect(MessagesScreen.cursor(state, size: size) == CursorPosition(column: 1 + 6 + 4, row: 22))
        let small = MessagesScreen.render(state, size: TerminalSize(columns: 60, rows: 20), theme: Self.theme)
        #expect(small.text.contains("80x24"), "\(small.text)")
    }
}
