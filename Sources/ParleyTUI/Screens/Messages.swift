import Foundation
import ParleyRoom
import ParleyWire

/// A conversation: direct with an account, or a channel.
public struct ConversationKey: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case direct, channel
    }

    public var kind: Kind
    /// The peer's account or the channel's name.
    public var name: String

    public init(_ kind: Kind, _ name: String) {
        self.kind = kind
        self.name = name
    }

    /// "bob" or "#team", as the screen shows it.
    public var description: String { kind == .channel ? "#" + name : name }
}

/// One line of a conversation as the messages screen shows it.
public struct MessageLine: Hashable, Sendable {
    /// Where a message of this account stands.
    public enum Progress: Hashable, Sendable {
        /// Written here, not yet acknowledged by the relay.
        case sending
        /// Stored by the relay.
        case stored
        /// Reached the recipient's client.
        case delivered
        /// The recipient read it.
        case read
        /// Refused or not sent, with why.
        case failed(String)
    }

    /// The relay's sequence (nil while sending).
    public var sequence: Int64?
    /// The sender's id.
    public var id: String
    public var from: String
    public var text: String
    /// Milliseconds since 1970.
    public var sentAt: Int64
    /// An activity line (joined, left) rather than a message.
    public var isActivity: Bool
    /// For this account's own direct messages.
    public var progress: Progress?

    public init(
        sequence: Int64?, id: String, from: String, text: String, sentAt: Int64, isActivity: Bool = false,
        progress: Progress? = nil
    ) {
        self.sequence = sequence
        self.id = id
        self.from = from
        self.text = text
        self.sentAt = sentAt
        self.isActivity = isActivity
        self.progress = progress
    }
}

/// One entry of the conversation list.
public struct ConversationEntry: Hashable, Sendable {
    public var key: ConversationKey
    public var unread: Int
    /// Milliseconds since 1970 of the last line, 0 when none.
    public var lastAt: Int64
    public var lastFrom: String?
    public var lastText: String?
    /// For a direct conversation: whether the peer is online (nil while unknown).
    public var online: Bool?
    /// For a direct conversation: "in a call (standup)" or "in a call" while the peer is in one.
    public var call: String? = nil
    /// For a channel: its member count when known.
    public var members: Int?

    public init(
        key: ConversationKey, unread: Int = 0, lastAt: Int64 = 0, lastFrom: String? = nil,
        lastText: String? = nil, online: Bool? = nil, members: Int? = nil
    ) {
        self.key = key
        self.unread = unread
        self.lastAt = lastAt
        self.lastFrom = lastFrom
        self.lastText = lastText
        self.online = online
        self.members = members
    }
}

/// What the messaging connection reported, for the screen to show.
public enum MessagesUpdate: Hashable, Sendable {
    /// Logged in; these are the conversations.
    case conversations([ConversationEntry])
    /// A page of a conversation (newest first), older than what is shown when `older`.
    case history(ConversationKey, [MessageLine], older: Bool)
    /// A line arrived live (or from the backlog) in a conversation.
    case arrived(ConversationKey, MessageLine)
    /// A message this account sent was stored under `sequence`.
    case stored(id: String, sequence: Int64)
    /// A message this account sent was not stored.
    case failed(id: String, reason: String)
    /// Messages this account sent to `peer` were delivered or read.
    case receipt(peer: String, sequences: [Int64], read: Bool)
    /// A watched account came online, went offline, or joined or left a call (`call`: "in a call (standup)").
    case presence(name: String, online: Bool, call: String? = nil)
    /// A channel's member count changed (join, leave, or an answer).
    case members(channel: String, count: Int)
    /// Something to tell the user (an error from the relay, a joined channel).
    case notice(String)
    /// The connection closed or could not be made.
    case disconnected(String)
}

/// What a key press on the messages screen asks the shell to do.
public enum MessagesAction: Hashable, Sendable {
    /// Seal and send a direct message.
    case sendDirect(id: String, to: String, text: String)
    /// Post in a channel.
    case post(id: String, channel: String, text: String)
    /// Load the newest page of a conversation and mark it read.
    case open(ConversationKey)
    /// Load the page before `before`.
    case loadOlder(ConversationKey, before: Int64)
    /// Mark a conversation read up to a sequence (a line arrived while it is open).
    case markRead(ConversationKey, through: Int64)
    case joinChannel(String)
    case leaveChannel(String)
    /// Back to the lobby.
    case back
    /// Quit Parley.
    case quit
}

/// A line under the conversation: news or an error.
public struct MessagesNotice: Hashable, Sendable {
    public var text: String
    public var isError: Bool
}

/// The messages screen: the conversation list, the open conversation and the input line. A value changed by keys
/// (`reduce`) and by what the connection reports (`apply`).
public struct MessagesState: Hashable, Sendable {
    /// Lines kept per conversation on screen (older ones load again with PgUp).
    public static let linesPerConversation = 500
    /// Conversations kept in the list.
    public static let listLimit = 200

    /// The account logged in.
    public let account: String
    /// Newest first.
    public internal(set) var conversations: [ConversationEntry] = []
    /// The highlighted entry of the list.
    public internal(set) var selected = 0
    /// The conversation shown on the right.
    public internal(set) var open: ConversationKey?
    /// Each conversation's lines as loaded, oldest first.
    public internal(set) var lines: [ConversationKey: [MessageLine]] = [:]
    /// Conversations whose history reached their first line.
    public internal(set) var complete: Set<ConversationKey> = []
    public var input = InputLine("", maximumLength: 2000)
    /// The last thing to tell the user.
    public internal(set) var notice: MessagesNotice?
    /// Connecting, online, or why not.
    public internal(set) var connection: String? = "Connecting…"

    /// Where Esc goes from here, as the key line says it: the lobby, the call under the screen, or out of Parley.
    public enum EscapeGoesTo: String, Hashable, Sendable {
        case lobby = "Esc lobby"
        case call = "Esc back to the call"
        case quit = "Esc quits"
    }

    /// Where Esc goes.
    public let escape: EscapeGoesTo

    /// The screen for `account`, opened from where `escape` returns to.
    public init(account: String, escape: EscapeGoesTo = .lobby) {
        self.account = account
        self.escape = escape
    }

    /// The entry of a conversation, if listed.
    public func entry(_ key: ConversationKey) -> ConversationEntry? { conversations.first { $0.key == key } }

    mutating func say(_ text: String, error: Bool = false) { notice = MessagesNotice(text: text, isError: error) }

    /// Lists `key` (at the top when new) and returns its index.
    @discardableResult
    mutating func ensureListed(_ key: ConversationKey) -> Int {
        if let index = conversations.firstIndex(where: { $0.key == key }) { return index }
        conversations.insert(ConversationEntry(key: key), at: 0)
        if conversations.count > Self.listLimit { conversations.removeLast() }
        return 0
    }

    /// Opens `key`: listed, highlighted, shown on the right, its unread count cleared.
    mutating func show(_ key: ConversationKey) -> MessagesAction {
        let index = ensureListed(key)
        selected = index
        open = key
        conversations[index].unread = 0
        return .open(key)
    }

    /// Moves an entry to the top after a new line.
    mutating func bump(_ key: ConversationKey, line: MessageLine) {
        let selectedKey = conversations.indices.contains(selected) ? conversations[selected].key : nil
        var entry =
            conversations.firstIndex { $0.key == key }.map { conversations.remove(at: $0) }
            ?? ConversationEntry(key: key)
        entry.lastAt = line.sentAt
        entry.lastFrom = line.from
        entry.lastText = line.text
        if open != key, line.from != account, !line.isActivity { entry.unread += 1 }
        conversations.insert(entry, at: 0)
        if conversations.count > Self.listLimit { conversations.removeLast() }
        selected = selectedKey.flatMap { key in conversations.firstIndex { $0.key == key } } ?? 0
    }

    mutating func insert(_ line: MessageLine, into key: ConversationKey) {
        var list = lines[key] ?? []
        if let sequence = line.sequence, list.contains(where: { $0.sequence == sequence }) { return }
        if let index = list.firstIndex(where: { $0.id == line.id && $0.from == line.from }) {
            list[index] = line
        } else if let sequence = line.sequence,
            let after = list.lastIndex(where: { ($0.sequence ?? Int64.max) < sequence })
        {
            list.insert(line, at: after + 1)
        } else if line.sequence != nil, list.contains(where: { $0.sequence != nil }) {
            list.insert(line, at: 0)
        } else {
            list.append(line)
        }
        if list.count > Self.linesPerConversation {
            list.removeFirst(list.count - Self.linesPerConversation)
            complete.remove(key)
        }
        lines[key] = list
    }
}

/// Applies what the connection reported.
public func apply(_ state: inout MessagesState, _ update: MessagesUpdate) -> MessagesAction? {
    switch update {
    case .conversations(let entries):
        let previous = state.conversations
        state.conversations = Array(entries.prefix(MessagesState.listLimit))
        // Known presence and counts survive a refresh.
        for index in state.conversations.indices {
            if let old = previous.first(where: { $0.key == state.conversations[index].key }) {
                state.conversations[index].online = state.conversations[index].online ?? old.online
                state.conversations[index].members = state.conversations[index].members ?? old.members
            }
        }
        state.selected = min(state.selected, max(0, state.conversations.count - 1))
        state.connection = nil
        if let open = state.open, let index = state.conversations.firstIndex(where: { $0.key == open }) {
            state.conversations[index].unread = 0
        }
    case .history(let key, let page, let older):
        // A fresh page replaces what was shown, except lines newer than it: a reply typed while the page was on its
        // way (still sending, or stored after the page was read) and lines that arrived live meanwhile.
        let newest = page.compactMap(\.sequence).max() ?? Int64.min
        let kept =
            older
            ? []
            : (state.lines[key] ?? []).filter { line in
                (line.sequence.map { $0 > newest } ?? true)
                    && !page.contains { $0.id == line.id && $0.from == line.from }
            }
        if !older { state.lines[key] = [] }
        for line in page + kept { state.insert(line, into: key) }
        if page.count < maxHistoryPage { state.complete.insert(key) }
    case .arrived(let key, let line):
        state.insert(line, into: key)
        state.bump(key, line: line)
        if state.open == key, let sequence = line.sequence, line.from != state.account {
            return .markRead(key, through: sequence)
        }
    case .stored(let id, let sequence):
        for (key, list) in state.lines {
            if let index = list.firstIndex(where: { $0.id == id && $0.from == state.account }) {
                var line = list[index]
                line.sequence = sequence
                switch line.progress {
                case .sending?, .failed?: line.progress = .stored
                default: break
                }
                state.lines[key]?[index] = line
            }
        }
    case .failed(let id, let reason):
        for (key, list) in state.lines {
            if let index = list.firstIndex(where: { $0.id == id && $0.from == state.account }) {
                state.lines[key]?[index].progress = .failed(reason)
            }
        }
        state.say("Not sent: \(reason)", error: true)
    case .receipt(let peer, let sequences, let read):
        let key = ConversationKey(.direct, peer)
        let marked = Set(sequences)
        for index in (state.lines[key] ?? []).indices {
            guard let sequence = state.lines[key]?[index].sequence, marked.contains(sequence) else { continue }
            if read || state.lines[key]?[index].progress != .read {
                state.lines[key]?[index].progress = read ? .read : .delivered
            }
        }
    case .presence(let name, let online, let call):
        if let index = state.conversations.firstIndex(where: { $0.key == ConversationKey(.direct, name) }) {
            state.conversations[index].online = online
            state.conversations[index].call = call
        }
    case .members(let channel, let count):
        if let index = state.conversations.firstIndex(where: { $0.key == ConversationKey(.channel, channel) }) {
            state.conversations[index].members = count
        }
    case .notice(let text):
        state.say(text)
    case .disconnected(let reason):
        state.connection = reason
    }
    return nil
}

/// Lines a history page asks for.
public let maxHistoryPage = 50

/// Applies a key: typing edits the input line; Enter sends it to the open conversation (or runs a command:
/// `/dm NAME`, `/join CHANNEL`, `/leave`), or opens the highlighted conversation when the line is empty; Up/Down
/// move through the list; PgUp loads older lines; Esc returns to the lobby; Ctrl-C quits. `now` (milliseconds since
/// 1970) stamps a line sent.
public func reduce(
    _ state: inout MessagesState, _ key: Key, at now: Int64, newID: () -> String = { UUID().uuidString }
) -> MessagesAction? {
    switch key {
    case .control("c"), .control("C"):
        return .quit
    case .escape:
        return .back
    case .up:
        state.selected = max(0, state.selected - 1)
        return nil
    case .down:
        state.selected = min(max(0, state.conversations.count - 1), state.selected + 1)
        return nil
    case .pageUp:
        guard let open = state.open, !state.complete.contains(open),
            let oldest = state.lines[open]?.first(where: { $0.sequence != nil })?.sequence
        else { return nil }
        return .loadOlder(open, before: oldest)
    case .enter:
        return submit(&state, at: now, newID: newID)
    default:
        if state.input.edit(key) { state.notice = nil }
        return nil
    }
}

private func submit(_ state: inout MessagesState, at now: Int64, newID: () -> String) -> MessagesAction? {
    let text = state.input.text.trimmingCharacters(in: .whitespaces)
    if text.isEmpty {
        guard state.conversations.indices.contains(state.selected) else {
            state.say("No conversations yet: type /dm NAME or /join CHANNEL, then Enter.")
            return nil
        }
        return state.show(state.conversations[state.selected].key)
    }
    if text.hasPrefix("/") {
        let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
        let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        switch parts[0] {
        case "/dm", "/msg":
            do {
                let name = try DisplayName.validate(argument)
                state.input = InputLine("", maximumLength: state.input.maximumLength)
                return state.show(ConversationKey(.direct, name))
            } catch {
                state.say("/dm NAME: \(error)", error: true)
                return nil
            }
        case "/join":
            guard let name = try? RoomName.validate(argument), name == argument else {
                let cleaned = RoomName.clean(argument)
                state.say(
                    "/join CHANNEL: use letters, digits, spaces or \(RoomName.punctuation)"
                        + (cleaned.isEmpty ? "" : " (e.g. /join \(cleaned))"), error: true)
                return nil
            }
            state.input = InputLine("", maximumLength: state.input.maximumLength)
            _ = state.show(ConversationKey(.channel, name))
            return .joinChannel(name)
        case "/leave":
            guard let open = state.open, open.kind == .channel else {
                state.say("/leave works in an open channel.", error: true)
                return nil
            }
            state.input = InputLine("", maximumLength: state.input.maximumLength)
            return .leaveChannel(open.name)
        default:
            state.say("Unknown command \(parts[0].prefix(20)): /dm NAME, /join CHANNEL or /leave.", error: true)
            return nil
        }
    }
    guard let open = state.open else {
        state.say("Open a conversation first: Up/Down and Enter, or /dm NAME.", error: true)
        return nil
    }
    let id = newID()
    state.input = InputLine("", maximumLength: state.input.maximumLength)
    let line = MessageLine(
        sequence: nil, id: id, from: state.account, text: text,
        sentAt: now,
        progress: open.kind == .direct ? .sending : nil)
    state.insert(line, into: open)
    state.bump(open, line: line)
    switch open.kind {
    case .direct: return .sendDirect(id: id, to: open.name, text: text)
    case .channel: return .post(id: id, channel: open.name, text: text)
    }
}
