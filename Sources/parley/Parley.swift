import ArgumentParser

/// `parley`: video calls in the terminal.
@main
struct Parley: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Video calls in the terminal: live video in character cells, chat, hotkeys.",
        discussion: """
            Start with `parley demo` for a four-party call on a local relay, or `parley join ROOM --server HOST:PORT \
            --name NAME` to join a real one. `parley serve` runs the relay.
            """,
        subcommands: [
            Lobby.self, Join.self, Demo.self, Serve.self, Relays.self, Bot.self, Devices.self, Resources.self,
            Login.self, Logout.self, Msg.self, Inbox.self, History.self, Chats.self, Channel.self, Messages.self,
            Status.self,
            Account.self, Cluster.self, Share.self,
        ],
        defaultSubcommand: Lobby.self)
}
