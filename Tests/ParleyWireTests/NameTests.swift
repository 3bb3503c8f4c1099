import ParleyWire
import Testing

@Suite("Names")
struct NameTests {
    @Test(
        "room names are cleaned as typed",
        arguments: [
            ("standup", "standup"),
            ("team standup #3", "team standup #3"),
            ("café/bar\\baz", "cafbarbaz"),
            ("a\"b'c*d", "abcd"),
            ("x\u{1B}[31my", "x[31my"),
            ("!#$%&()+,-:;<=.>?@[]^_`{|}~", "!#$%&()+,-:;<=.>?@[]^_`{|}~"),
            (String(repeating: "a", count: 70), String(repeating: "a", count: 64)),
            ("日本語", ""),
        ])
    func clean(typed: String, expected: String) {
        #expect(RoomName.clean(typed) == expected)
    }

    @Test("room name validation trims blanks and rejects empty names")
    func validateRoom() throws {
        #expect(try RoomName.validate("  daily sync ") == "daily sync")
        #expect(try RoomName.validate("ü-team") == "-team")
        for bad in ["", "   ", "\u{1B}\u{7}", " \u{1B} "] {
            #expect(throws: NameError.emptyRoomName) { try RoomName.validate(bad) }
        }
        // Characters were typed, none of them kept: said so, rather than "empty".
        #expect(throws: NameError.roomNameHasNoLegalCharacter(typed: "日本")) { try RoomName.validate(" 日本 ") }
        #expect(throws: NameError.roomNameHasNoLegalCharacter(typed: "日本")) { try RoomName.validate("日\u{1B}本") }
        #expect(
            NameError.roomNameHasNoLegalCharacter(typed: "日本").description
                == "Room name \"日本\" has no character a room name keeps: only ASCII letters and digits, spaces and "
                + "!#$%&()+,-:;<=.>?@[]^_`{|}~ are kept, e.g. standup.")
        #expect(
            NameError.emptyRoomName.description
                == "Room name is empty: use letters, digits, spaces or !#$%&()+,-:;<=.>?@[]^_`{|}~"
                + " (at most 64 bytes), e.g. standup."
        )
    }

    @Test("display names: accepted")
    func goodNames() throws {
        for name in ["alice", "Bob_2", "zoë", String(repeating: "x", count: 128), "🦊"] {
            #expect(try DisplayName.validate(name) == name)
        }
    }

    @Test(
        "display names: each rule has its own message",
        arguments: [
            ("", NameError.emptyDisplayName, "Name is empty: pick a name such as alice."),
            (
                String(repeating: "x", count: 129), .displayNameTooLong(length: 129),
                "Name is 129 characters long: the limit is 128."
            ),
            (
                "bob smith", .displayNameHasSpace(name: "bob smith", suggestion: "bob_smith"),
                "Name \"bob smith\" contains a space: use bob_smith instead."
            ),
            (
                "a\tb", .displayNameHasSpace(name: "a\tb", suggestion: "a_b"),
                "Name \"a\tb\" contains a space: use a_b instead."
            ),
            (
                "eve\u{1B}[2J", .displayNameHasControlCharacter(scalar: 0x1B),
                "Name contains the control character U+001B: use printable characters only."
            ),
        ])
    func badNames(name: String, error: NameError, message: String) {
        #expect(throws: error) { try DisplayName.validate(name) }
        #expect(error.description == message)
    }
}
