import ArgumentParser
import Foundation
import Logging
import ParleyEngine
import ParleyRoom
import ParleySecurity
import ParleyShare
import ParleyTUI
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// `parley share`: this terminal's shell (or a command) shown to a call as text cells, as a member of its own
/// ("alice's terminal"). The person keeps using the shell as usual; leaving it ends the share.
struct Share: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share this terminal's shell, or a command, with a call: the others see its text, sharp at any size.",
        discussion: """
            Runs your shell (or the command after --) in this terminal as usual, and shows its screen to the room \
            as a member of its own, named after you ("alice's terminal"). Nobody else can type in it until you let \
            one member do so: /control NAME in your own call's chat (/control off stops it). Leave the shell \
            (exit, Ctrl-D) to stop sharing. In an end-to-end encrypted room the screen is sealed like media.
            """)

    @Argument(
        help: ArgumentHelp(
            "Room to share into (as for join), or a meeting link parley://HOST:PORT/ROOM."))
    var room: String

    @Option(help: "Relay address, HOST:PORT (default \(LobbyState.defaultServer); a link names its own).")
    var server: String?

    @Option(help: "Your display name, no spaces (default: the account logged in with `parley login`, else $USER).")
    var name: String?

    @OptionGroup var relayTrust: RelayTrustOptions

    @OptionGroup var account: AccountUseOptions

    @OptionGroup var access: RoomAccessOptions

    @Option(help: "Log file (default: $XDG_STATE_HOME/parley/parley-share.log). Logs never go to the screen.")
    var log: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Argument(
        parsing: .postTerminator,
        help: ArgumentHelp("The command to share instead of your shell (after --).", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        do {
            _ = try target(room, server: server, insecure: relayTrust.insecure)
            _ = try displayName()
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("\(error)")
        }
        _ = try LogSetup.level(logLevel)
    }

    func displayName() throws -> String { try chosenDisplayName(name, guest: account.guest) }

    func run() async throws {
        let (address, roomName, _, fallbacks) = try target(room, server: server, insecure: relayTrust.insecure)
        let name = try displayName()
        try LogSetup.toFile(log ?? LogSetup.stateDirectory + "/parley-share.log", level: try LogSetup.level(logLevel))
        let feed = TerminalShareFeed()
        var configuration = CallConfiguration(
            server: address, room: roomName, name: name, videoSources: [.synthetic], audioSource: .silence,
            audioSink: .none, microphoneMuted: true, decodesVideo: false, decodesAudio: false, showsSelfView: false,
            logger: Logger(label: "parley.share"))
        // A share's updates come in bursts (a full screen, a scroll): the relay's cap allows for them.
        configuration.profile.bitrateKbps = Self.shareKbps
        configuration.share = feed
        configuration.fallbackServers = fallbacks
        configuration.signalingSecurity = try relayTrust.security()
        configuration.mediaTransport = try relayTrust.mediaTransport()
        configuration.password = try access.roomPassword()
        configuration.hideRoom = account.hideRoom
        if !account.guest,
            case .success(let messaging) = AccountFiles.standard.messagingAccount(
                server: nil, security: configuration.signalingSecurity)
        {
            configuration.account = messaging.identity
        }
        if let encryption = try access.joinEncryption() {
            do {
                configuration.encryption = try CallEncryption(
                    secret: encryption.key, room: roomName, suite: encryption.suite)
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        let engine = try CallEngine(configuration)
        let joined = ShareJoinWatch()
        let events = Task { await joined.watch(engine.events) }
        engine.start()
        guard case .joined = await joined.outcome(within: .seconds(15)) else {
            let reason = await joined.failure ?? "no answer from \(address) within 15 s"
            events.cancel()
            await engine.leave()
            throw CommandFailure("Could not share into \(roomName): \(reason)")
        }
        let shell = ProcessInfo.processInfo.environment["SHELL"].flatMap { $0.isEmpty ? nil : $0 } ?? "/bin/sh"
        let program = command.isEmpty ? [shell] : command
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_SHARE"] = roomName
        say("Sharing this terminal with \(roomName) as \(name)'s terminal. Leave the shell (exit) to stop sharing.")
        let status: Int32
        do {
            let terminal = try SharedTerminal(command: program, environment: environment)
            let signals = Signals([SIGTERM, SIGHUP, SIGINT])
            let stopper = Task {
                if await signals.wait() != 0 { terminal.stop() }
            }
            status = await Self.runOnThread(terminal, feed: feed)
            stopper.cancel()
        } catch {
            events.cancel()
            await engine.leave()
            throw CommandFailure("Could not start \(program.joined(separator: " ")): \(error)")
        }
        events.cancel()
        await engine.leave()
        say("Stopped sharing this terminal with \(roomName).")
        if status != 0 { throw ExitCode(status) }
    }

    /// The relay's cap on what a share sends, kbit/s (twice this, in bursts).
    static let shareKbps = 2_000

    /// Runs the shared terminal on a thread of its own (it blocks in poll); returns the program's exit status.
    static func runOnThread(_ terminal: SharedTerminal, feed: TerminalShareFeed) async -> Int32 {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                let status = terminal.run(
                    publish: { feed.publish($0) }, controllerInput: { feed.takeInput() },
                    controller: { feed.controller })
                continuation.resume(returning: status)
            }
            thread.name = "parley share"
            thread.start()
        }
    }
}

/// Waits for the engine's word on the join: joined, or refused and why.
actor ShareJoinWatch {
    enum Outcome {
        case joined
        case failed
        case timedOut
    }

    private(set) var failure: String?
    private var result: Outcome?
    private var waiters: [CheckedContinuation<Outcome, Never>] = []

    func watch(_ events: AsyncStream<RoomEvent>) async {
        for await event in events {
            switch event {
            case .joined: settle(.joined)
            case .joinFailed(let reason):
                failure = reason
                settle(.failed)
            default: break
            }
        }
    }

    func outcome(within limit: Duration) async -> Outcome {
        if let result { return result }
        Task {
            try? await Task.sleep(for: limit)
            self.settle(.timedOut)
        }
        return await withCheckedContinuation { waiters.append($0) }
    }

    private func settle(_ outcome: Outcome) {
        guard result == nil else { return }
        result = outcome
        for waiter in waiters { waiter.resume(returning: outcome) }
        waiters.removeAll()
    }
}
