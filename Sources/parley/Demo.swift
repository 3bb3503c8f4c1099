import ArgumentParser
import Foundation
import Logging
import ParleyEngine
import ParleyMedia
import ParleyRelay
import ParleyRoom
import ParleySecurity
import ParleyTUI
import ParleyWire

/// `parley demo` (and `make run`): a live four-party call on an embedded relay, in one command.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a local relay, three chatty bots and you: a live four-party call in this terminal.")

    @Option(help: "Your display name.")
    var name = "you"

    @Option(parsing: .unconditional, help: "Number of bots (0…8).")
    var bots = 3

    @Option(help: "Your video profile: \(VideoProfile.all.map(\.name).joined(separator: ", ")).")
    var profile = "640x360"

    @Option(name: .customLong("bot-profile"), help: "The bots' video profile.")
    var botProfile = "320x240"

    @Option(parsing: .unconditional, help: "Port for the embedded relay (0 picks a free one).")
    var port = 0

    @Option(
        name: .customLong("chat-every"), parsing: .unconditional,
        help: "Seconds between a bot's chat lines (each bot adds a little).")
    var chatEvery = 9.0

    @Option(
        name: .customLong("toggle-video-every"), parsing: .unconditional,
        help: "Seconds between a bot's camera toggles.")
    var toggleVideoEvery = 25.0

    @OptionGroup var options: InteractiveOptions

    static let botNames = ["ana", "bruno", "chen", "dara", "emeka", "fumiko", "gus", "hana"]

    func validate() throws {
        guard (0...8).contains(bots) else { throw ValidationError("--bots must be 0…8, got \(bots)") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, got \(port)") }
        do {
            _ = try DisplayName.validate(name)
            _ = try VideoProfile.named(profile)
            _ = try VideoProfile.named(botProfile)
        } catch {
            throw ValidationError("\(error)")
        }
        guard chatEvery > 0, toggleVideoEvery > 0 else {
            throw ValidationError("--chat-every and --toggle-video-every must be positive")
        }
    }

    func run() async throws {
        // The embedded relay keeps no accounts: the demo call is a guest's (no --guest or --hide-room to give).
        var app = try options.appOptions(
            directJoin: nil, lobby: LobbyState(), returnToLobby: false, account: nil, realDevices: false)
        var relayConfiguration = RelayConfiguration(
            host: "127.0.0.1", port: port, logger: Logger(label: "parley.relay"))
        // The embedded relay gets a fresh self-signed certificate that lives only in memory, and everyone in the
        // demo pins exactly it: a real TLS call, with nothing written to known_relays.
        if !options.relayTrust.insecure { relayConfiguration.tls = try RelayIdentity.selfSigned(hosts: ["127.0.0.1"]) }
        _ = relayConfiguration.loadWebPage(selfSigned: true)
        let relay = try await Relay.start(relayConfiguration)
        let server = ServerAddress(host: "127.0.0.1", port: relay.signalingPort)
        if let identity = relayConfiguration.tls {
            var pins = KnownRelays()
            pins.pin(identity.fingerprint, for: server.description)
            app.signalingSecurity = .tls(try RelayTrustStore(path: nil, pins: pins))
        }
        var engines: [CallEngine] = []
        var runners: [Task<Void, Never>] = []
        for index in 0..<bots {
            let botName = Self.botNames[index]
            var botConfiguration = CallConfiguration(
                server: server, room: "demo", name: botName, profile: try VideoProfile.named(botProfile),
                decodesVideo: false, decodesAudio: false, showsSelfView: false,
                logger: Logger(label: "parley.bot.\(botName)"))
            botConfiguration.signalingSecurity = app.signalingSecurity
            // The first bot talks and moves with the sample media Parley ships (a real voice and picture); the
            // others, and every bot when the resources are not installed, use the synthetic ones.
            if index == 0, let video = try? BundledResources.path(BundledResources.sampleVideo),
                let speech = try? BundledResources.path(BundledResources.speech)
            {
                botConfiguration.videoSources = [.file(video)]
                botConfiguration.audioSource = .file(speech)
            }
            let engine = try CallEngine(botConfiguration)
            engine.start()
            engines.append(engine)
            let runner = BotRunner(engine: engine, name: botName, logger: Logger(label: "parley.bot.\(botName)"))
            // Staggered timers so the bots don't all talk at once.
            let chat = chatEvery + Double(index) * 2.5
            let toggle = toggleVideoEvery + Double(index) * 7
            runners.append(Task { await runner.run(chatEvery: chat, toggleVideoEvery: toggle, duration: 86_400) })
            // The next bot joins after this one (at most 2 s later), so the tiles are in the names' order.
            let deadline = ContinuousClock.now + .seconds(2)
            while await engine.statistics().localID == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        var direct = app
        direct.directJoin = JoinSettings(
            server: server, name: try DisplayName.validate(name), room: "demo", role: .broadcaster,
            profile: options.adjusted(try VideoProfile.named(profile)), encryption: nil)
        direct.directJoin?.greeting = Self.greeting(
            bots: Array(Self.botNames.prefix(bots)), keymap: app.roomSettings.keymap)
        do {
            try await runTerminal(direct)
        } catch {
            await stop(engines: engines, runners: runners, relay: relay)
            throw CommandFailure("\(error)")
        }
        await stop(engines: engines, runners: runners, relay: relay)
    }

    /// The first line of the demo's chat: who the others are, and the keys to try first.
    static func greeting(bots: [String], keymap: Keymap) -> String {
        func key(_ command: RoomCommand) -> String { keymap.keyLabels(for: command) }
        let who =
            switch bots.count {
            case 0: "you are alone on a relay inside this program (--bots 3 brings company)"
            case 1: "\(bots[0]) is a bot on a relay inside this program"
            default:
                "\(bots.dropLast().joined(separator: ", ")) and \(bots.last!) are bots on a relay inside this program"
            }
        // Fullscreen needs three tiles or more: with fewer, the key would only say so.
        let fullscreen = bots.count < 2 ? "" : "2 twice (that tile fullscreen), "
        return "Welcome to the demo: \(who). Try \(fullscreen)\(key(.microphone)) (mute), \(key(.chat)) (chat), "
            + "\(key(.help)) (every key), \(key(.leave)) (leave)."
    }

    private func stop(engines: [CallEngine], runners: [Task<Void, Never>], relay: Relay) async {
        for runner in runners { runner.cancel() }
        for engine in engines { await engine.leave() }
        await relay.shutdown()
    }
}
