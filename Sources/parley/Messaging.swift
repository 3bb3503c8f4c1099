import ArgumentParser
import Foundation
import ParleyEngine
import ParleyRoom
import ParleySecurity
import ParleyStore
import ParleyTUI
import ParleyWire

/// This computer's accounts: one identity file per account (mode 600) and the one logged in now, with its relay.
struct AccountFiles {
    let folder: String

    /// `$XDG_CONFIG_HOME/parley` (or `~/.config/parley`), where known_relays lives too.
    static var standard: AccountFiles {
        AccountFiles(folder: (RelayTrustStore.defaultPath() as NSString).deletingLastPathComponent)
    }

    func identityPath(_ name: String) -> String { folder + "/accounts/\(name).identity" }
    /// The account's messages on this computer and its outbox (mode 600 beside the identity).
    func cachePath(_ name: String) -> String { folder + "/accounts/\(name).messages.sqlite" }
    var currentPath: String { folder + "/account" }

    /// The identity of `name`, created (and saved) on first use.
    func identity(for name: String) throws -> (identity: AccountIdentity, created: Bool) {
        let path = identityPath(name)
        if FileManager.default.fileExists(atPath: path) {
            return (try load(path), false)
        }
        let identity = AccountIdentity.create(name: name)
        try save(identity)
        return (identity, true)
    }

    func load(_ path: String) throws -> AccountIdentity {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 64 * 1024 else {
            throw CommandFailure("\(path) cannot be read (or is larger than 64 KiB)")
        }
        do {
            return try AccountIdentity(parsing: String(decoding: data, as: UTF8.self))
        } catch {
            throw CommandFailure("\(path): \(error)")
        }
    }

    func save(_ identity: AccountIdentity) throws {
        let path = identityPath(identity.name)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(identity.encoded().utf8),
                attributes: [.posixPermissions: 0o600])
        else {
            throw CommandFailure("could not write \(path)")
        }
    }

    /// The account logged in now: its name, its relay, and whether `parley login` reached that relay without TLS
    /// (`--insecure`), so every later command reaches it the same way without being told again.
    struct Current {
        var name: String
        var server: String
        var insecure: Bool
    }

    /// The account logged in now and its relay, if any. The file is the name, the relay and "insecure" or "tls", a
    /// line each (a file from before the third line means TLS).
    func current() -> Current? {
        guard let text = FileManager.default.contents(atPath: currentPath).map({ String(decoding: $0, as: UTF8.self) })
        else { return nil }
        let parts = text.split(separator: "\n").map(String.init)
        guard parts.count >= 2 else { return nil }
        return Current(name: parts[0], server: parts[1], insecure: parts.count >= 3 && parts[2] == "insecure")
    }

    func setCurrent(name: String, server: String, insecure: Bool) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard
            FileManager.default.createFile(
                atPath: currentPath,
                contents: Data("\(name)\n\(server)\n\(insecure ? "insecure" : "tls")\n".utf8),
                attributes: [.posixPermissions: 0o600])
        else {
            throw CommandFailure("could not write \(currentPath)")
        }
    }
}

/// The logged-in account and its relay, for the messaging commands.
struct AccountOptions: ParsableArguments {
    @Option(help: "Relay to use (default: the one `parley login` used).")
    var server: String?

    @OptionGroup var relayTrust: RelayTrustOptions

    /// The current account's name, relay, how to reach it, and this computer's cache of its messages.
    func local() throws -> (name: String, server: String, security: SignalingSecurity, cache: MessageCache) {
        let files = AccountFiles.standard
        guard let current = files.current() else {
            throw CommandFailure("not logged in: run `parley login NAME --server HOST:PORT` first")
        }
        do {
            return (
                current.name, server ?? current.server, try security(for: current),
                try MessageCache(path: files.cachePath(current.name))
            )
        } catch let error as CommandFailure {
            throw error
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    /// How to reach the relay: `--insecure` when given; else as `parley login` reached the account's own relay
    /// (without TLS if it was told `--insecure`); else TLS with the pinned certificates.
    func security(for current: AccountFiles.Current) throws -> SignalingSecurity {
        if current.insecure, server == nil || server == current.server, relayTrust.knownRelays == nil {
            return .insecure
        }
        return try relayTrust.security()
    }

    /// Connects and logs in as the current account, then sends what its outbox kept from before (same ids, so the
    /// relay never stores one twice); returns the client and what became of each outbox message.
    func connect() async throws -> MessagingClient {
        try await connectAndSendOutbox().client
    }

    func connectAndSendOutbox() async throws
        -> (client: MessagingClient, sent: [String: Result<MessageStored, MessagingClientError>])
    {
        let files = AccountFiles.standard
        let local = try local()
        let identity = try files.load(files.identityPath(local.name))
        let client = try await Self.login(identity, server: local.server, security: local.security)
        var results: [String: Result<MessageStored, MessagingClientError>] = [:]
        for message in (try? local.cache.outbox()) ?? [] {
            do {
                let stored = try await client.send(message.text, to: message.to, id: message.id)
                try? local.cache.acknowledged(
                    message.id, sequence: stored.sequence, from: local.name,
                    sentAt: Int64(Date().timeIntervalSince1970 * 1000))
                results[message.id] = .success(stored)
            } catch let error as MessagingClientError {
                results[message.id] = .failure(error)
                // A refusal (unknown account, too large) will not change by retrying: it leaves the outbox. A store
                // that failed, or no answer, keeps it for next time.
                if let code = error.code, code != .storeFailed, code != .storeUnavailable, code != .rateLimited {
                    try? local.cache.forget(message.id)
                }
            } catch {
                results[message.id] = .failure(MessagingClientError("\(error)"))
            }
        }
        return (client, results)
    }

    static func login(_ identity: AccountIdentity, server: String, security: SignalingSecurity) async throws
        -> MessagingClient
    {
        let address: ServerAddress
        do {
            address = try ServerAddress(parsing: server)
        } catch {
            throw CommandFailure("\(error)")
        }
        do {
            return try await MessagingClient.connect(to: address, security: security, identity: identity)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

/// `parley login NAME`: create or use this computer's identity for NAME and prove it to the relay.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log in to an account (created with its own key pair on first use; no password).")

    @Argument(help: "Account name: 1-128 characters, no spaces.")
    var name: String

    @Option(help: "Relay, HOST:PORT.")
    var server = LobbyState.defaultServer

    @OptionGroup var relayTrust: RelayTrustOptions

    func validate() throws {
        do {
            _ = try DisplayName.validate(name)
        } catch {
            throw ValidationError("account name: \(error)")
        }
    }

    func run() async throws {
        let files = AccountFiles.standard
        let (identity, createdHere) = try files.identity(for: name)
        let client = try await AccountOptions.login(identity, server: server, security: try relayTrust.security())
        await client.close()
        try files.setCurrent(name: name, server: server, insecure: relayTrust.insecure)
        var lines = ["logged in as \(name) on \(server)"]
        if createdHere { lines.append("new identity saved in \(files.identityPath(name)) (mode 600)") }
        if client.created {
            lines.append("the relay bound \(name) to this key: fingerprint \(identity.keys.fingerprint)")
        }
        if client.waiting > 0 { lines.append("\(counted(client.waiting, "message")) waiting: parley inbox") }
        print(lines.joined(separator: "\n"))
    }
}

/// `parley logout`: forget which account is logged in (its keys stay, to log in again or export).
struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log out (the account's keys stay on this computer).")

    func run() async throws {
        let files = AccountFiles.standard
        guard let current = files.current() else {
            print("not logged in")
            return
        }
        try? FileManager.default.removeItem(atPath: files.currentPath)
        print("logged out of \(current.name); its keys stay in \(files.identityPath(current.name))")
    }
}

/// `parley msg PEER TEXT`: send a direct message; the exit status says whether the relay stored it.
struct Msg: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a direct message, end-to-end encrypted; exits 0 only once the relay has stored it.")

    @Argument(help: "The recipient's account name.")
    var peer: String
    @Argument(help: "The message.")
    var text: String
    @Option(help: "Message id (default: a new one); resending with the same id never makes a duplicate.")
    var id: String?
    @OptionGroup var account: AccountOptions

    func validate() throws {
        try validateMessage(text, limit: 4000)
    }

    func run() async throws {
        // Into the outbox first: a message the relay never acknowledged is sent again by the next command that
        // reaches it (same id: never twice).
        let local = try account.local()
        let id = id ?? UUID().uuidString
        do {
            try local.cache.queue(
                OutgoingMessage(
                    id: id, to: peer, text: text,
                    writtenAt: Int64(Date().timeIntervalSince1970 * 1000)))
        } catch {
            throw CommandFailure("not stored: \(error)")
        }
        let session: (client: MessagingClient, sent: [String: Result<MessageStored, MessagingClientError>])
        do {
            session = try await account.connectAndSendOutbox()
        } catch {
            throw CommandFailure(
                "not stored: \(error)\nkept in this computer's outbox: the next parley command that "
                    + "reaches the relay sends it")
        }
        await session.client.close()
        for (other, result) in session.sent where other != id {
            if case .success = result { print("also sent a message kept from before (\(other))") }
        }
        switch session.sent[id] {
        case .success(let stored):
            print("stored for \(peer) (message \(stored.sequence))")
        case .failure(let error)
        where error.code == nil || error.code == .storeFailed || error.code == .storeUnavailable
            || error.code == .rateLimited:
            throw CommandFailure(
                "not stored: \(error)\nkept in this computer's outbox: the next parley command that "
                    + "reaches the relay sends it")
        case .failure(let error):
            throw CommandFailure("not stored: \(error)")
        case nil:
            throw CommandFailure("not stored: the outbox lost the message")
        }
    }
}

/// `parley inbox`: print the messages that waited for this account and acknowledge them.
struct Inbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the direct messages waiting for you.")

    @OptionGroup var account: AccountOptions

    func run() async throws {
        let client = try await account.connect()
        defer { Task { await client.close() } }
        let messages = try await client.receiveWaiting()
        try? account.local().cache.remember(messages.map(\.cached), of: client.identity.name)
        for message in messages { print(Self.line(message)) }
        // Printed is read: each sender gets a read receipt.
        for (sender, theirs) in Dictionary(grouping: messages, by: \.from) {
            if let newest = theirs.map(\.sequence).max() { client.markRead(sender, through: newest) }
        }
        if messages.isEmpty { print("no messages waiting") }
        await client.close()
    }

    static func line(_ message: ReceivedMessage) -> String {
        "\(shortTime(message.sentAt)) \(message.from): \(message.text)"
    }
}

/// `parley history PEER`: the conversation with one account.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the conversation with an account, oldest first.")

    @Argument(help: "The other account.")
    var peer: String
    @Option(parsing: .unconditional, help: "How many messages, newest (1-200).")
    var limit = 50
    @OptionGroup var account: AccountOptions

    func validate() throws {
        guard (1...200).contains(limit) else { throw ValidationError("--limit must be 1…200, got \(limit)") }
    }

    func run() async throws {
        let local = try account.local()
        let client: MessagingClient
        do {
            client = try await account.connect()
        } catch {
            // Offline: what this computer has.
            let cached = try local.cache.history(with: peer, limit: limit)
            for message in cached.reversed() {
                print("\(shortTime(message.sentAt)) \(message.from): \(message.text)")
            }
            print(
                "(offline: \(error); \(cached.isEmpty ? "nothing with \(peer)" : "these are") in this computer's copy)")
            return
        }
        let messages: [ReceivedMessage]
        do {
            messages = try await client.history(with: peer, limit: limit)
        } catch {
            await client.close()
            throw CommandFailure("\(error)")
        }
        try? local.cache.remember(messages.map(\.cached), of: local.name)
        // Printed is read: the peer gets a read receipt.
        if let newest = messages.first(where: { $0.from == peer }) { client.markRead(peer, through: newest.sequence) }
        await client.close()
        for message in messages.reversed() { print(Inbox.line(message)) }
        if messages.isEmpty { print("no messages with \(peer)") }
    }
}

/// `parley status NAME`: online, or when last seen.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say whether an account is online, or when it last was; with no name, your own account.")

    @Argument(help: "The account (default: your own, as `parley login` left it).")
    var name: String?
    @OptionGroup var account: AccountOptions

    func run() async throws {
        let local = try account.local()
        let name = self.name ?? local.name
        let client = try await account.connect()
        let presence: PresenceAnswer
        do {
            presence = try await client.presence(of: name)
        } catch {
            await client.close()
            throw CommandFailure("\(error)")
        }
        await client.close()
        if self.name == nil {
            print("You are logged in as \(local.name) on \(local.server)")
        }
        if presence.inCall == true {
            print("\(name) is \(presence.state)")
        } else if presence.online {
            print("\(name) is online")
        } else if let lastSeen = presence.lastSeen {
            print("\(name) is offline, last seen \(shortTime(lastSeen))")
        } else {
            print("\(name) is offline, never seen online")
        }
    }
}

/// `parley account export NAME` / `parley account import FILE`: move an account to another computer.
struct Account: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export an account's identity (keep it secret) or import one on another computer.")

    @Argument(help: "export or import")
    var action: String
    @Argument(help: "export: the account name; import: the exported file.")
    var target: String

    func run() async throws {
        let files = AccountFiles.standard
        switch action {
        case "export":
            print(try files.load(files.identityPath(target)).encoded(), terminator: "")
        case "import":
            let identity = try files.load(target)
            if FileManager.default.fileExists(atPath: files.identityPath(identity.name)) {
                throw CommandFailure(
                    "an identity for \(identity.name) exists already: \(files.identityPath(identity.name))")
            }
            try files.save(identity)
            print("imported \(identity.name): parley login \(identity.name) --server HOST:PORT")
        default:
            throw ValidationError("unknown action \"\(action)\": export NAME or import FILE")
        }
    }
}

/// A time (milliseconds since 1970) as the messaging commands print it, in local time to the minute.
func shortTime(_ milliseconds: Int64) -> String {
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
}

extension ReceivedMessage {
    /// As this computer's cache keeps it.
    var cached: CachedMessage {
        CachedMessage(sequence: sequence, id: id, from: from, to: to, text: text, sentAt: sentAt)
    }
}

extension AccountFiles {
    /// The logged-in account for the messages screen, or why there is none.
    func messagingAccount(server override: String?, security: SignalingSecurity) -> Result<
        MessagingAccount, CommandFailure
    > {
        guard let current = current() else {
            return .failure(CommandFailure("Not logged in: run parley login NAME --server HOST:PORT first."))
        }
        do {
            let identity = try load(identityPath(current.name))
            let server = try ServerAddress(parsing: override ?? current.server)
            // The account's own relay is reached as `parley login` reached it.
            let reach: SignalingSecurity = current.insecure && override == nil ? .insecure : security
            return .success(MessagingAccount(identity: identity, server: server, security: reach))
        } catch {
            return .failure(CommandFailure("\(error)"))
        }
    }
}

/// `parley messages`: the messages screen (conversation list, conversation, input line).
struct Messages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open the messages screen: your conversations and channels, live (Esc quits).")

    @Option(help: "Relay to use (default: the one `parley login` used).")
    var server: String?

    @OptionGroup var options: InteractiveOptions

    func run() async throws {
        var app = try options.appOptions(
            directJoin: nil, lobby: LobbyState(), returnToLobby: false, account: nil, realDevices: false)
        switch AccountFiles.standard.messagingAccount(server: server, security: app.signalingSecurity) {
        case .success(let account): app.messaging = account
        case .failure(let problem): throw problem
        }
        app.openMessagesFirst = true
        do {
            try await runTerminal(app)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

/// A message typed on the command line: not blank, at most `limit` characters.
func validateMessage(_ text: String, limit: Int) throws {
    guard text.contains(where: { !$0.isWhitespace }) else { throw ValidationError("the message is empty") }
    guard text.count <= limit else {
        throw ValidationError("the message has \(text.count) characters; at most \(limit)")
    }
}
