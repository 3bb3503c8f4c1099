import ArgumentParser
import Foundation
import Logging
import ParleyRelay

/// `parley serve`: the relay.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a Parley relay: WebSocket signaling on TCP and RTP forwarding on UDP, same port number.")

    @Option(help: "Interface to listen on.")
    var host = "127.0.0.1"

    @Option(help: "TCP port for signaling; media uses the same UDP port (0 picks free ports).")
    var port = 7878

    @Option(help: "Seconds of signaling silence after which a member is removed.")
    var liveness = 10.0

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: "Write logs to this file instead of standard error.")
    var log: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535, got \(port)") }
        guard liveness >= 1, liveness <= 600 else {
            throw ValidationError("--liveness must be 1…600 seconds, got \(liveness)")
        }
        _ = try LogSetup.level(logLevel)
    }

    func run() async throws {
        let level = try LogSetup.level(logLevel)
        if let log { try LogSetup.toFile(log, level: level) } else { LogSetup.toStandardError(level: level) }
        let logger = Logger(label: "parley.relay")
        let signals = Signals()
        let relay: Relay
        do {
            relay = try await Relay.start(RelayConfiguration(
                host: host, port: port, limits: SignalingLimits(livenessTimeout: .milliseconds(Int64(liveness * 1000))),
                logger: logger))
        } catch {
            throw CommandFailure("\(error)")
        }
        say("parley relay listening on \(host):\(relay.signalingPort) (signaling tcp, media udp \(relay.mediaPort))")
        let signal = await signals.wait()
        let counters = try? await relay.counters()
        logger.info("shutting down", metadata: ["signal": "\(signal)"])
        await relay.shutdown()
        if let counters {
            say("""
                relay stopped: forwarded \(counters.packetsForwarded) packets, dropped \(counters.packetsDropped), \
                refused \(counters.signalingErrors) signaling messages, rate-limited \(counters.rateLimited)
                """)
        }
    }
}
