import ArgumentParser
import Foundation
import ParleyEngine
import ParleyRoom
import ParleyWire

/// `parley chats`: every conversation, newest first, with unread counts.
struct Chats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List your conversations (direct and channels), newest first, with unread counts.")

    @Option(parsing: .unconditional, help: "How many (1-200).")
    var limit = 50
    @OptionGroup var account: AccountOptions

    func validate() throws {
        guard (1...200).contains(limit) else { throw ValidationError("--limit must be 1…200, got \(limit)") }
    }

    func run() async throws {
        let client = try await account.connect()
        let list: [Conversation]
        var members: [String: Int] = [:]
        do {
            list = try await client.conversations(limit: limit)
            // Each channel's member count, as the messages screen's list shows it (one request a channel).
            for channel in list where channel.kind == .channel {
                members[channel.name] = try await client.members(of: channel.name).count
            }
        } catch {
            await client.close()
            throw CommandFailure("\(error)")
        }
        await client.close()
        if list.isEmpty { print("no conversations yet: parley msg NAME \"text\", or parley channel join NAME") }
        for line in list { print(Self.line(line, members: members[line.name])) }
    }

    /// One conversation as a line: name, a channel's member count, unread count, the last message's time, who wrote
    /// it and what.
    static func line(_ conversation: Conversation, members: Int? = nil) -> String {
        let name =
            conversation.kind == .channel
            ? "#" + conversation.name + (members.map { " (\(counted($0, "member")))" } ?? "") : conversation.name
        let unread = conversation.unread > 0 ? " (\(conversation.unread) unread)" : ""
        let last =
            conversation.lastText.map { text in
                "\(shortTime(conversation.lastAt)) \(conversation.lastFrom ?? ""): \(text.prefix(60))"
            } ?? "no messages yet"
        return "\(name)\(unread)  \(last)"
    }
}

/// `parley channel …`: channels between calls.
struct Channel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join, leave, read and write channels (group conversations kept by the relay).",
        subcommands: [JoinChannel.self, LeaveChannel.self, Say.self, ChannelHistory.self, Members.self])

    struct JoinChannel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "join", abstract: "Join a channel (created if new).")
        @Argument(help: "The channel: letters, digits, spaces and room-name punctuation, at most 64 bytes.")
        var channel: String
        @OptionGroup var account: AccountOptions

        func run() async throws {
            let members = try await Channel.with(account) { try await $0.join(channel: channel) }
            print("joined \(channel): \(members.count) member\(members.count == 1 ? "" : "s")")
        }
    }

    struct LeaveChannel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "leave", abstract: "Leave a channel.")
        @Argument(help: "The channel.")
        var channel: String
        @OptionGroup var account: AccountOptions

        func run() async throws {
            let members = try await Channel.with(account) { try await $0.leave(channel: channel) }
            print("left \(channel) (\(members.count) member\(members.count == 1 ? "" : "s") now)")
        }
    }

    struct Say: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Post a message in a channel you joined; exits 0 only once the relay has stored it.")
        @Argument(help: "The channel.")
        var channel: String
        @Argument(help: "The message.")
        var text: String
        @Option(help: "Message id (default: a new one); resending with the same id never makes a duplicate.")
        var id: String?
        @OptionGroup var account: AccountOptions

        func validate() throws {
            try validateMessage(text, limit: maxChannelPostCharacters)
        }

        func run() async throws {
            let stored = try await Channel.with(account, failure: "not stored") {
                try await $0.post(text, in: channel, id: id ?? UUID().uuidString)
            }
            print("stored in \(channel) (message \(stored.sequence))")
        }
    }

    struct ChannelHistory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history", abstract: "Print a channel's messages and who joined or left, oldest first.")
        @Argument(help: "The channel.")
        var channel: String
        @Option(parsing: .unconditional, help: "How many lines, newest (1-200).")
        var limit = 50
        @OptionGroup var account: AccountOptions

        func validate() throws {
            guard (1...200).contains(limit) else { throw ValidationError("--limit must be 1…200, got \(limit)") }
        }

        func run() async throws {
            let lines = try await Channel.with(account) { client in
                let lines = try await client.channelHistory(channel, limit: limit)
                if let newest = lines.first { client.markChannelRead(channel, through: newest.sequence) }
                return lines
            }
            if lines.isEmpty { print("no messages in \(channel)") }
            for line in lines.reversed() {
                print(
                    line.kind == "message"
                        ? "\(shortTime(line.sentAt)) \(line.from): \(line.text)"
                        : "\(shortTime(line.sentAt)) -- \(MessagingClient.text(of: line))")
            }
        }
    }

    struct Members: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's member count and members.")
        @Argument(help: "The channel.")
        var channel: String
        @OptionGroup var account: AccountOptions

        func run() async throws {
            let members = try await Channel.with(account) { try await $0.members(of: channel) }
            print("\(channel): \(members.count) member\(members.count == 1 ? "" : "s")")
            for name in members.names { print("  \(name)") }
            if members.count > members.names.count { print("  … and \(members.count - members.names.count) more") }
        }
    }

    /// Logs in, runs `body`, closes; a refusal becomes the command's error (prefixed with `failure`).
    static func with<T>(
        _ account: AccountOptions, failure: String? = nil,
        _ body: (MessagingClient) async throws -> T
    ) async throws -> T {
        let client = try await account.connect()
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch {
            await client.close()
            throw CommandFailure(failure.map { "\($0): \(error)" } ?? "\(error)")
        }
    }
}
