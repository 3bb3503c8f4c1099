import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Signaling over TLS on loopback: the real relay with a self-signed certificate, real engines that pin it.
@Suite(.serialized, .lane(.timing))
struct TLSCallTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func startRelay(tls: RelayIdentity?) async throws -> Relay {
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger())
        configuration.tls = tls
        return try await Relay.start(configuration)
    }

    func configuration(_ name: String, port: Int, security: SignalingSecurity) -> CallConfiguration {
        var configuration = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "standup", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150), showsSelfView: false,
            logger: quietLogger())
        configuration.signalingSecurity = security
        // A TLS handshake with a fresh self-signed certificate beside the whole suite on 2 cores once took over the
        // 5 s a user's join allows: the calls here are about trust, not speed.
        configuration.signalingTimeout = .seconds(15)
        return configuration
    }

    func start(_ configuration: CallConfiguration) throws -> (CallEngine, EventLog, Task<Void, Never>) {
        let engine = try CallEngine(configuration)
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        return (engine, log, task)
    }

    func failure(in log: EventLog) -> String? {
        log.all.lazy.compactMap { if case .joinFailed(let reason) = $0 { reason } else { nil } }.first
    }

    @Test func aCallOverTLSPinsTheRelayOnFirstUseAndSaysSo() async throws {
        let identity = try RelayIdentity.selfSigned(hosts: ["127.0.0.1"])
        let relay = try await startRelay(tls: identity)
        let store = try RelayTrustStore(path: nil)
        let relayName = "127.0.0.1:\(relay.signalingPort)"
        let notice = "relay \(relayName) pinned on first use: \(identity.fingerprint)"
        let (alice, aliceLog, aliceTask) = try start(
            configuration("alice", port: relay.signalingPort, security: .tls(store)))
        // A TLS handshake with a fresh self-signed certificate beside the whole suite on 2 cores: give it time.
        #expect(
            await eventually(within: .seconds(15)) { aliceLog.all.contains(.alert(.message(notice))) },
            "\(aliceLog.all.prefix(8))")
        let (bob, bobLog, bobTask) = try start(configuration("bob", port: relay.signalingPort, security: .tls(store)))
        let decoding = await eventually(within: .seconds(20)) {
            let a = await alice.statistics()
            let b = await bob.statistics()
            return a.peers.values.contains { $0.framesDecoded >= 5 }
                && b.peers.values.contains { $0.framesDecoded >= 5 }
        }
        #expect(decoding)
        #expect(store.known.pin(for: relayName) == identity.fingerprint)
        // Bob met the relay already pinned (same store): nothing to announce.
        #expect(!bobLog.all.contains(.alert(.message(notice))))
        // The header has nothing to warn about.
        #expect(
            aliceLog.all.contains {
                if case .security(let security) = $0 { !security.insecureTransport } else { false }
            })
        await alice.leave()
        await bob.leave()
        aliceTask.cancel()
        bobTask.cancel()
        await relay.shutdown()
    }

    @Test func aRelayShowingAnotherCertificateIsRefusedWithWhatToDo() async throws {
        let relay = try await startRelay(tls: try RelayIdentity.selfSigned(hosts: []))
        let relayName = "127.0.0.1:\(relay.signalingPort)"
        var pins = KnownRelays()
        let pinned = try RelayIdentity.selfSigned(hosts: []).fingerprint
        pins.pin(pinned, for: relayName)
        let (engine, log, task) = try start(
            configuration(
                "mallory-victim", port: relay.signalingPort, security: .tls(try RelayTrustStore(path: nil, pins: pins)))
        )
        #expect(await eventually(within: .seconds(5)) { failure(in: log) != nil })
        let reason = try #require(failure(in: log))
        #expect(
            reason.contains("shows a different TLS certificate") && reason.contains("pinned \(pinned)"), "\(reason)")
        #expect(reason.contains("parley relays forget \(relayName)"), "\(reason)")
        #expect(try await relay.rooms().isEmpty, "nothing was sent to a relay that failed the check")
        await engine.leave()
        task.cancel()
        await relay.shutdown()
    }

    @Test func tlsAndPlainDoNotMixSilently() async throws {
        // A TLS client at a plain relay: a clear error that names --insecure.
        let plain = try await startRelay(tls: nil)
        let (one, oneLog, oneTask) = try start(
            configuration(
                "alice", port: plain.signalingPort, security: .tls(try RelayTrustStore(path: nil))))
        #expect(await eventually(within: .seconds(5)) { failure(in: oneLog) != nil })
        let reason = try #require(failure(in: oneLog))
        #expect(
            reason.contains("the relay at 127.0.0.1:\(plain.signalingPort) was started with --insecure")
                && reason.contains("add --insecure"),
            "\(reason)")
        await one.leave()
        oneTask.cancel()
        await plain.shutdown()

        // A plain client at a TLS relay gets no room, and is told to leave out --insecure.
        let secure = try await startRelay(tls: try RelayIdentity.selfSigned(hosts: []))
        let (two, twoLog, twoTask) = try start(configuration("bob", port: secure.signalingPort, security: .insecure))
        #expect(await eventually(within: .seconds(8)) { failure(in: twoLog) != nil })
        let secureReason = try #require(failure(in: twoLog))
        #expect(
            secureReason.contains("the relay at 127.0.0.1:\(secure.signalingPort) speaks TLS: leave out --insecure"),
            "\(secureReason)")
        #expect(try await secure.rooms().isEmpty)
        await two.leave()
        twoTask.cancel()
        await secure.shutdown()
    }
}
