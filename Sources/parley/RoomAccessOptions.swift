import ArgumentParser
import Foundation
import ParleyEngine
import ParleySecurity
import ParleyTUI

#if canImport(Glibc)
import Glibc
#endif

/// Room password and end-to-end encryption, for `join` and the lobby. Secrets can come from a file or a prompt so
/// they stay out of shell history and `ps`.
struct RoomAccessOptions: ParsableArguments {
    @Option(
        help:
            "End-to-end encryption of media and chat: aes-128-gcm (the default with a secret, SFrame's own) or aes-256-gcm."
    )
    var encryption: String?

    @Option(
        help:
            "The room secret for end-to-end encryption. Visible in shell history: prefer --secret-file or --ask-secret."
    )
    var secret: String?

    @Option(name: .customLong("secret-file"), help: "Read the room secret from the first line of this file.")
    var secretFile: String?

    @Flag(name: .customLong("ask-secret"), help: "Ask for the room secret on the terminal (not echoed).")
    var askSecret = false

    @Option(help: "The room's password (joining proves it; creating the room sets it). Prefer --password-file.")
    var password: String?

    @Option(name: .customLong("password-file"), help: "Read the room password from the first line of this file.")
    var passwordFile: String?

    @Flag(name: .customLong("ask-password"), help: "Ask for the room password on the terminal (not echoed).")
    var askPassword = false

    func validate() throws {
        if [secret != nil, secretFile != nil, askSecret].filter({ $0 }).count > 1 {
            throw ValidationError("give the room secret one way: --secret, --secret-file or --ask-secret")
        }
        if [password != nil, passwordFile != nil, askPassword].filter({ $0 }).count > 1 {
            throw ValidationError("give the room password one way: --password, --password-file or --ask-password")
        }
        if let encryption, !["aes-128-gcm", "aes-256-gcm"].contains(encryption.lowercased()) {
            throw ValidationError("--encryption must be aes-128-gcm or aes-256-gcm, got \"\(encryption)\"")
        }
        if encryption != nil, secret == nil, secretFile == nil, !askSecret {
            throw ValidationError("--encryption needs the room secret: --secret, --secret-file or --ask-secret")
        }
        if secret?.isEmpty == true { throw ValidationError("--secret cannot be empty") }
        if password?.isEmpty == true { throw ValidationError("--password cannot be empty") }
    }

    /// The encryption asked for (reading a file or prompting as told), nil for none. A secret is always
    /// encryption; a short one is refused, or asked for again at the prompt.
    func joinEncryption() throws -> JoinEncryption? {
        let source: SecretSource? =
            if let secret { .given(secret) } else if let secretFile { .file(secretFile) } else if askSecret {
                .prompt
            } else { nil }
        do {
            return try JoinSecret.encryption(
                cipher: encryption, source: source,
                readFile: { path in
                    FileManager.default.contents(atPath: path).flatMap { String(bytes: $0, encoding: .utf8) }
                },
                ask: { prompt in getpass(prompt).map { String(cString: $0) } },
                say: { line in FileHandle.standardError.write(Data((line + "\n").utf8)) })
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The room password asked for, nil for none.
    func roomPassword() throws -> String? {
        try resolve(password, file: passwordFile, ask: askPassword, what: "room password")
    }

    private func resolve(_ value: String?, file: String?, ask: Bool, what: String) throws -> String? {
        if let value { return value }
        if let file {
            guard let data = FileManager.default.contents(atPath: file),
                let text = String(data: data, encoding: .utf8)
            else { throw ValidationError("cannot read the \(what) from \(file)") }
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.isEmpty else { throw ValidationError("\(file) is empty: its first line is the \(what)") }
            return line
        }
        guard ask else { return nil }
        guard let typed = getpass("\(what.prefix(1).uppercased() + what.dropFirst()): ") else {
            throw ValidationError("could not read the \(what) from the terminal")
        }
        let text = String(cString: typed)
        guard !text.isEmpty else { throw ValidationError("the \(what) cannot be empty") }
        return text
    }
}

/// How a client trusts its relay (TLS with the relay pinned in known_relays by default, or plain ws:// on request),
/// and how its media reaches it.
struct RelayTrustOptions: ParsableArguments {
    @Flag(
        help:
            "Connect with plain ws:// without TLS (to a relay started with --insecure): the network can read chat, names and media credentials."
    )
    var insecure = false

    @Option(
        name: .customLong("known-relays"),
        help:
            "File of pinned relay certificates (default: $XDG_CONFIG_HOME/parley/known_relays, or ~/.config/parley/known_relays)."
    )
    var knownRelays: String?

    @Option(
        name: .customLong("media"),
        help:
            "How media reaches the relay: auto (UDP, or the relay's TLS connection when UDP gets no answer in 2 s), tcp (the TLS connection from the start), or udp (never the TLS connection)."
    )
    var media = MediaTransport.auto.rawValue

    func validate() throws {
        if insecure, knownRelays != nil {
            throw ValidationError(
                "--insecure does not use TLS, so --known-relays has nothing to check: give one of them")
        }
        _ = try mediaTransport()
    }

    /// The media path `--media` asks for.
    func mediaTransport() throws -> MediaTransport {
        guard let transport = MediaTransport(rawValue: media) else {
            throw ValidationError("--media is auto, tcp or udp, not \"\(media)\"")
        }
        return transport
    }

    /// The signaling security these options ask for.
    func security() throws -> SignalingSecurity {
        if insecure { return .insecure }
        do {
            return .tls(try RelayTrustStore(path: knownRelays ?? RelayTrustStore.defaultPath()))
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
