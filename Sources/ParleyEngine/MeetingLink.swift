import Foundation
import ParleyRoom
import ParleyWire

/// A meeting link: the relay and the room in one line, as people paste it into chat or an invitation.
/// `parley://HOST[:PORT]/ROOM` (TLS, as every call by default), `wss://…` and the web form `https://…` (the same),
/// `ws://…` and `http://…` (a relay without TLS, joined with `--insecure`). The room is percent-encoded (`parley://relay.example:7878/design%20review`).
public struct MeetingLink: Sendable, Hashable, CustomStringConvertible {
    /// The relay.
    public var server: ServerAddress
    /// The room as the link names it (decoded, not yet checked against the room name rules).
    public var room: String
    /// A `ws://` link: the relay speaks plain WebSocket (no TLS).
    public var insecure: Bool

    /// A link from parts.
    public init(server: ServerAddress, room: String, insecure: Bool = false) {
        self.server = server
        self.room = room
        self.insecure = insecure
    }

    /// Whether `text` is meant as a link (it has a scheme), so a caller can tell a link from a bare room name.
    public static func looksLikeLink(_ text: String) -> Bool { text.contains("://") }

    /// Parses a link, with a message saying what to type instead when it is not one.
    public init(parsing text: String) throws(AddressError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let schemeEnd = trimmed.range(of: "://") else {
            throw AddressError("\"\(text)\" is not a meeting link; a link looks like parley://HOST:PORT/ROOM")
        }
        let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        // The web form is the address of the relay's page for browser guests: the same relay and room.
        case "parley", "wss", "https": insecure = false
        case "ws", "http": insecure = true
        default:
            throw AddressError(
                "a meeting link starts with parley://, wss://, ws://, https:// or http://, not \(scheme)://")
        }
        let rest = trimmed[schemeEnd.upperBound...]
        if let extra = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            throw AddressError(
                "the link has \"\(rest[extra...])\" after the room; a link is parley://HOST:PORT/ROOM "
                    + "(give the name with --name)")
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw AddressError(
                "the link \"\(text)\" names no room; add it after a slash: "
                    + "\(scheme)://\(rest)/ROOM, e.g. \(scheme)://\(rest)/standup")
        }
        let authority = String(rest[..<slash])
        let path = rest[rest.index(after: slash)...]
        guard !authority.isEmpty else {
            throw AddressError("the link \"\(text)\" names no relay; a link is parley://HOST:PORT/ROOM")
        }
        do {
            server = try ServerAddress(parsing: authority)
        } catch {
            throw AddressError("the link's relay: \(error.message)")
        }
        let encoded = path.hasSuffix("/") ? path.dropLast() : path
        guard !encoded.isEmpty else {
            throw AddressError(
                "the link \"\(text)\" names no room; add it after the slash, e.g. "
                    + "\(scheme)://\(authority)/standup")
        }
        guard !encoded.contains("/") else {
            throw AddressError(
                "the link's room \"\(encoded)\" has a \"/\"; a link is parley://HOST:PORT/ROOM "
                    + "(write a slash in a room name as %2F)")
        }
        guard let decoded = String(encoded).removingPercentEncoding else {
            throw AddressError(
                "the link's room \"\(encoded)\" has a broken %-escape (% is followed by two hex "
                    + "digits, e.g. %20 for a space)")
        }
        room = decoded
    }

    /// The link's web form: the relay's page for a guest without Parley, `https://HOST:PORT/ROOM` (`http://` for a
    /// relay without TLS).
    public var webAddress: String {
        "\(insecure ? "http" : "https")://\(server)/\(encodedRoom)"
    }

    private var encodedRoom: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return room.addingPercentEncoding(withAllowedCharacters: allowed) ?? room
    }

    /// The link as Parley writes it: `parley://` (or `ws://` for a relay without TLS), the room percent-encoded.
    public var description: String {
        "\(insecure ? "ws" : "parley")://\(server)/\(encodedRoom)"
    }
}

extension RoomName {
    /// What the room name rules changed in `typed`, in words ("'/' and 'é' are not allowed in room names"), or nil
    /// when it stays as typed (outer spaces aside).
    public static func changes(_ typed: String) -> String? {
        let trimmed = typed.trimmingCharacters(in: .whitespaces)
        guard let cleaned = try? validate(typed), cleaned != trimmed else { return nil }
        var dropped: [String] = []
        for character in trimmed where !isLegal(character) {
            let shown = "'\(character)'"
            if !dropped.contains(shown) { dropped.append(shown) }
        }
        if dropped.isEmpty {
            return "room names are at most \(maximumBytes) bytes"
        }
        let list =
            dropped.count == 1
            ? dropped[0]
            : dropped.dropLast().joined(separator: ", ") + " and " + dropped.last!
        return "\(list) \(dropped.count == 1 ? "is" : "are") not allowed in room names"
    }
}
