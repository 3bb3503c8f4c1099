import ParleyRoom
import ParleyWire
import Testing

@testable import ParleyEngine

/// Meeting links and relay addresses as a new user types them: every form either works or says what to type.
struct MeetingLinkTests {
    @Test(arguments: [
        ("parley://relay.example:7878/standup", "relay.example", 7878, "standup", false),
        ("parley://relay.example/standup", "relay.example", 7878, "standup", false),
        ("PARLEY://relay.example:9000/standup/", "relay.example", 9000, "standup", false),
        ("wss://10.0.0.2:443/design%20review", "10.0.0.2", 443, "design review", false),
        ("ws://127.0.0.1:7878/room", "127.0.0.1", 7878, "room", true),
        ("parley://[::1]:7878/standup", "::1", 7878, "standup", false),
        ("  parley://host:1/a%2Fb  ", "host", 1, "a/b", false),
        // The web form, the relay's page for browser guests, names the same relay and room.
        ("https://relay.example:7878/design%20review", "relay.example", 7878, "design review", false),
        ("http://127.0.0.1:7878/standup", "127.0.0.1", 7878, "standup", true),
    ])
    func linksThatWork(text: String, host: String, port: Int, room: String, insecure: Bool) throws {
        let link = try MeetingLink(parsing: text)
        #expect(link.server.host == host && link.server.port == port && link.room == room && link.insecure == insecure)
        // What Parley writes parses back to the same link.
        #expect(try MeetingLink(parsing: link.description) == link)
    }

    @Test func theWebFormIsTheRelaysPageForTheSameRoom() throws {
        let link = try MeetingLink(parsing: "parley://relay.example:7878/design%20review")
        #expect(link.webAddress == "https://relay.example:7878/design%20review")
        #expect(try MeetingLink(parsing: link.webAddress) == link)
        let plain = try MeetingLink(parsing: "ws://127.0.0.1:9000/standup")
        #expect(plain.webAddress == "http://127.0.0.1:9000/standup")
        #expect(try MeetingLink(parsing: plain.webAddress) == plain)
    }

    @Test(arguments: [
        ("relay.example:7878/standup", "not a meeting link; a link looks like parley://HOST:PORT/ROOM"),
        ("ftp://relay.example/standup", "starts with parley://, wss://, ws://, https:// or http://, not ftp://"),
        ("parley://relay.example:7878", "names no room; add it after a slash: parley://relay.example:7878/ROOM"),
        (
            "parley://relay.example:7878/",
            "names no room; add it after the slash, e.g. parley://relay.example:7878/standup"
        ),
        ("parley:///standup", "names no relay"),
        (
            "parley://relay.example:99999/standup",
            "the link's relay: server port \"99999\" is not a number from 1 to 65535"
        ),
        ("parley://relay.example/a/b", "has a \"/\""),
        ("parley://relay.example/a%zz", "broken %-escape"),
        ("parley://relay.example/standup?name=bob", "after the room"),
        ("parley://::1:7878/standup", "looks like a bare IPv6 address"),
    ])
    func linksThatSayWhatToType(text: String, expected: String) {
        do {
            let link = try MeetingLink(parsing: text)
            Issue.record("\(text) parsed as \(link)")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test(arguments: [
        (
            "ws://127.0.0.1:7878/room",
            "is a link, not a relay address: join it with parley join ws://127.0.0.1:7878/room"
        ),
        ("127.0.0.1:7878/room", "has a path (\"/room\"); --server takes HOST:PORT, e.g. 127.0.0.1:7878"),
        ("fe80::1", "looks like a bare IPv6 address; write it as [fe80::1]:7878"),
    ])
    func aServerOptionGivenALinkSaysSo(text: String, expected: String) {
        do {
            let address = try ServerAddress(parsing: text)
            Issue.record("\(text) parsed as \(address)")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test(
        arguments: [
            ("team/alpha", "'/' is not allowed in room names"),
            ("téam/alpha", "'é' and '/' are not allowed in room names"),
            ("standup", nil),
            ("  standup  ", nil),
            (String(repeating: "a", count: 70), "room names are at most 64 bytes"),
        ] as [(String, String?)])
    func roomNameChangesAreNamed(typed: String, expected: String?) {
        #expect(RoomName.changes(typed) == expected)
    }
}
