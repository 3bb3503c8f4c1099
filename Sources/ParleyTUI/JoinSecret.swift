import ParleySecurity

/// Where the command line's room secret comes from: `--secret`, `--secret-file` or `--ask-secret`.
public enum SecretSource: Hashable, Sendable {
    /// Given on the command line.
    case given(String)
    /// The first line of a file.
    case file(String)
    /// Asked for on the terminal.
    case prompt
}

/// Why the command line's room secret cannot be used.
public struct JoinSecretError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong and what to do instead.
    public var description: String
}

/// The end-to-end encryption a command line asks for (`join`, a meeting link, `bot`). Every source of a secret
/// goes through here, so each gives the same rules: a secret is always encryption (AES-128-GCM unless
/// `--encryption` says otherwise), a short or empty one is refused with the reason, and a prompt asks again.
public enum JoinSecret {
    /// Times `--ask-secret` asks before giving up.
    public static let promptAttempts = 3

    /// The encryption asked for, nil when no secret was given. `cipher` is `--encryption`'s text; `readFile`
    /// returns a file's text (nil when it cannot be read); `ask` shows a prompt and returns the answer (nil when
    /// the terminal cannot be read); `say` tells the person at the prompt why an answer was refused.
    public static func encryption(
        cipher: String?, source: SecretSource?, readFile: (String) -> String?, ask: (String) -> String?,
        say: (String) -> Void
    ) throws(JoinSecretError) -> JoinEncryption? {
        let chosen: LobbyCipher
        if let cipher {
            guard let named = LobbyCipher(rawValue: cipher.lowercased()), named != .none else {
                throw JoinSecretError(
                    description: "--encryption must be aes-128-gcm or aes-256-gcm, got \"\(cipher)\"")
            }
            chosen = named
        } else {
            chosen = .aes128GCM
        }
        guard let source else {
            if cipher != nil {
                throw JoinSecretError(
                    description: "--encryption needs the room secret: --secret, --secret-file or --ask-secret")
            }
            return nil
        }
        let secret: String
        switch source {
        case .given(let text):
            secret = try checked(text, from: "--secret")
        case .file(let path):
            guard let text = readFile(path) else {
                throw JoinSecretError(description: "cannot read the room secret from \(path)")
            }
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.isEmpty else {
                throw JoinSecretError(description: "\(path) is empty: its first line is the room secret")
            }
            secret = try checked(line, from: path)
        case .prompt:
            secret = try prompted(ask: ask, say: say)
        }
        return JoinEncryption(cipher: chosen, key: secret)
    }

    private static func checked(_ secret: String, from source: String) throws(JoinSecretError) -> String {
        do {
            try CallEncryption.checkSecret(secret)
        } catch {
            throw JoinSecretError(description: "\(source): \(error)")
        }
        return secret
    }

    private static func prompted(ask: (String) -> String?, say: (String) -> Void) throws(JoinSecretError) -> String {
        for attempt in 1...promptAttempts {
            guard let answer = ask("Room secret: ") else {
                throw JoinSecretError(description: "could not read the room secret from the terminal")
            }
            do {
                try CallEncryption.checkSecret(answer)
                return answer
            } catch {
                if attempt < promptAttempts { say("\(error): try again") }
            }
        }
        throw JoinSecretError(
            description:
                "no room secret of at least \(CallEncryption.minimumSecretCharacters) characters after "
                + "\(promptAttempts) tries")
    }
}
