import ParleySecurity
import Testing

@testable import ParleyTUI

/// Every way the command line takes a room secret (`join`, a meeting link, `bot`, the lobby's prefill) goes through
/// `JoinSecret`: a secret is always encryption, a short one is refused with the reason, a prompt asks again.
@Suite("Room secrets from the command line")
struct JoinSecretTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var cipher: String? = nil
        var source: SecretSource?
        /// Files that exist, by path.
        var files: [String: String] = [:]
        /// Answers typed at the prompt, in turn (nil: the terminal cannot be read).
        var answers: [String?] = []
        var expected: Result<JoinEncryption?, JoinSecretError>
        /// Prompts shown, and lines said between them.
        var prompts = 0
        var said: [String] = []
        var testDescription: String { name }
    }

    static let phrase = "my room secret 123"
    static func fails(_ text: String) -> Result<JoinEncryption?, JoinSecretError> {
        .failure(JoinSecretError(description: text))
    }
    static let short = "the room secret has 5 characters; it needs at least 8 (a phrase is easiest to share by voice)"

    static let rows: [Row] = [
        Row(name: "no secret: in the clear", source: nil, expected: .success(nil)),
        Row(
            name: "--secret alone is AES-128-GCM", source: .given(phrase),
            expected: .success(JoinEncryption(cipher: .aes128GCM, key: phrase))),
        Row(
            name: "--secret with --encryption aes-256-gcm", cipher: "AES-256-GCM", source: .given(phrase),
            expected: .success(JoinEncryption(cipher: .aes256GCM, key: phrase))),
        Row(
            name: "--encryption none is not a cipher", cipher: "none", source: .given(phrase),
            expected: fails("--encryption must be aes-128-gcm or aes-256-gcm, got \"none\"")),
        Row(
            name: "--encryption without a secret", cipher: "aes-128-gcm", source: nil,
            expected: fails("--encryption needs the room secret: --secret, --secret-file or --ask-secret")),
        Row(name: "a short --secret", source: .given("short"), expected: fails("--secret: " + short)),
        Row(
            name: "--secret-file's first line is AES-128-GCM", source: .file("/s"), files: ["/s": phrase + "\nrest"],
            expected: .success(JoinEncryption(cipher: .aes128GCM, key: phrase))),
        Row(
            name: "an empty --secret-file", source: .file("/s"), files: ["/s": "\n" + phrase],
            expected: fails("/s is empty: its first line is the room secret")),
        Row(
            name: "a short --secret-file", source: .file("/s"), files: ["/s": "short"],
            expected: fails("/s: " + short)),
        Row(
            name: "a --secret-file that cannot be read", source: .file("/nope"),
            expected: fails("cannot read the room secret from /nope")),
        Row(
            name: "--ask-secret is AES-128-GCM", source: .prompt, answers: [phrase],
            expected: .success(JoinEncryption(cipher: .aes128GCM, key: phrase)), prompts: 1),
        Row(
            name: "a short answer asks again", source: .prompt, answers: ["short", "", phrase],
            expected: .success(JoinEncryption(cipher: .aes128GCM, key: phrase)), prompts: 3,
            said: [
                short + ": try again",
                "the room secret is empty; give one of at least 8 characters that every member knows: try again",
            ]),
        Row(
            name: "three short answers give up", source: .prompt, answers: ["short", "short", "short"],
            expected: fails("no room secret of at least 8 characters after 3 tries"), prompts: 3,
            said: [short + ": try again", short + ": try again"]),
        Row(
            name: "a terminal that cannot be read", source: .prompt, answers: [nil],
            expected: fails("could not read the room secret from the terminal"), prompts: 1),
    ]

    @Test("each source of a secret", arguments: rows)
    func source(_ row: Row) {
        var answers = row.answers[...]
        var prompts = 0
        var said: [String] = []
        let result = Result { () throws(JoinSecretError) -> JoinEncryption? in
            try JoinSecret.encryption(
                cipher: row.cipher, source: row.source, readFile: { row.files[$0] },
                ask: { prompt in
                    #expect(prompt == "Room secret: ")
                    prompts += 1
                    return answers.popFirst() ?? nil
                },
                say: { said.append($0) })
        }
        #expect(result == row.expected)
        #expect(prompts == row.prompts)
        #expect(said == row.said)
        if case .success(let encryption?) = result { #expect(encryption.suite == row.expected.suite) }
    }

    @Test("the lobby is prefilled from the command line's secret, and joins encrypted")
    func lobbyPrefill() {
        var lobby = LobbyState(name: "zed", room: "keyroom")
        lobby.prefill(JoinEncryption(cipher: .aes256GCM, key: Self.phrase))
        #expect(lobby.encryptionKey.text == Self.phrase && lobby.cipher == .aes256GCM)
        guard case .join(let settings) = reduce(&lobby, .enter) else {
            Issue.record("Enter did not join")
            return
        }
        #expect(settings.encryption == JoinEncryption(cipher: .aes256GCM, key: Self.phrase))
    }
}

extension Result<JoinEncryption?, JoinSecretError> {
    fileprivate var suite: SFrameCipherSuite? {
        if case .success(let encryption?) = self { encryption.suite } else { nil }
    }
}
