/// Every command typed in the chat line: the one table behind the chat line's parser, its usage messages and the
/// help overlay, so none of them can leave a command out.
public enum ChatCommand: String, CaseIterable, Hashable, Sendable {
    /// Show (and write to) a direct conversation in the chat pane.
    case dm = "/dm"
    /// Back to the room's chat.
    case room = "/room"
    /// Host: let an audience member broadcast, or someone removed back in.
    case allow = "/allow"
    /// Host: remove a member until allowed back.
    case remove = "/remove"
    /// Host: forbid recording, or allow it again.
    case norecord = "/norecord"
    /// The sharer of a terminal: let one member type in it, or nobody.
    case control = "/control"

    /// How it is typed.
    public var usage: String {
        switch self {
        case .dm: return "/dm NAME [TEXT]"
        case .room: return "/room"
        case .allow: return "/allow NAME"
        case .remove: return "/remove NAME"
        case .norecord: return "/norecord [off]"
        case .control: return "/control NAME"
        }
    }

    /// What it does, for the help overlay and the usage messages.
    public var help: String {
        switch self {
        case .dm: return "Show your direct messages with NAME in the chat pane; with TEXT, send one"
        case .room: return "Show the room's chat again"
        case .allow: return "Host: let NAME broadcast, or back in after a removal"
        case .remove: return "Host: remove NAME from the room until allowed back"
        case .norecord: return "Host: forbid recording in the room (/norecord off allows it)"
        case .control:
            return "Your shared terminal: let NAME type in it (/control off: nobody)"
        }
    }

    /// Only the room's host may use it.
    public var isHostOnly: Bool {
        switch self {
        case .allow, .remove, .norecord: return true
        case .dm, .room, .control: return false
        }
    }

    /// The command a chat line starts with, nil for plain chat (a line not starting with "/").
    public static func named(in line: String) -> String? {
        guard line.hasPrefix("/") else { return nil }
        return String(line.prefix { $0 != " " })
    }

    /// "Chat commands: /dm NAME [TEXT], /room, …": said when a line names no command of the table.
    public static var summary: String {
        "Chat commands: " + allCases.map(\.usage).joined(separator: ", ") + " (? lists what they do)"
    }

    /// The usage of the host's commands, said when one is typed wrong.
    public static var hostUsage: String {
        "Host commands: "
            + allCases.filter(\.isHostOnly).map { "\($0.usage): \($0.help.dropFirst("Host: ".count))" }
            .joined(separator: "; ")
    }
}
