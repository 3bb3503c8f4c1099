import Foundation
import ParleyEngine
import ParleyRelay
import ParleyRoom
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

/// Calls whose media goes over the relay's signaling connection: asked for (`--media tcp`), or because UDP got no
/// answer (a proxy that drops every datagram stands in for a network that blocks UDP).
@Suite(.serialized, .lane(.timing)) struct MediaOverTCPTests {
    let calls = ResilienceTests()

    /// Waits until `engine` decodes `frames` more pictures of its one peer than `before` says.
    func decodesMore(_ engine: CallEngine, than before: CallStatistics, frames: Int) async -> Bool {
        await eventually(within: .seconds(8)) {
            let now = await engine.statistics()
            return now.peers.contains { id, peer in
                peer.framesDecoded >= (before.peers[id]?.framesDecoded ?? 0) + frames
            }
        }
    }

    @Test func mediaOverTCPAskedForCarriesTheCallBothWays() async throws {
        let relay = try await calls.startRelay()
        var tcp = calls.configuration("alice", port: relay.signalingPort)
        tcp.mediaTransport = .tcp
        let (alice, aliceLog, aliceTask) = try calls.startEngine(tcp)
        let (bob, _, bobTask) = try calls.startEngine(calls.configuration("bob", port: relay.signalingPort))
        #expect(await calls.allDecode([alice, bob], peers: 1, frames: 10))

        let aliceStats = await alice.statistics()
        let bobStats = await bob.statistics()
        #expect(aliceStats.mediaPath == "tcp" && aliceStats.mediaBound)
        #expect(bobStats.mediaPath == "udp")
        #expect(aliceLog.all.contains(.mediaOverTCP(true)))
        // Both hear each other too.
        #expect(aliceStats.peers.values.allSatisfy { $0.audioPacketsReceived > 0 })
        #expect(bobStats.peers.values.allSatisfy { $0.audioPacketsReceived > 0 })
        let counters = try await relay.counters()
        #expect(counters.membersWithMediaOverTCP == 1)
        #expect(counters.mediaOverTCPReceived > 20 && counters.mediaOverTCPSent > 20, "\(counters)")

        await alice.leave()
        await bob.leave()
        _ = await (aliceTask.value, bobTask.value)
        await relay.shutdown()
    }

    @Test func mediaOverTCPCrossesACluster() async throws {
        let cluster = try await InProcessCluster.start(nodes: 2, logger: calls.quietLogger())
        try await cluster.connect()
        var engines: [CallEngine] = []
        var tasks: [Task<Void, Never>] = []
        for (name, node) in [("alice", 0), ("bob", 1)] {
            var settings = calls.configuration(name, port: cluster.relays[node].signalingPort)
            settings.mediaTransport = .tcp
            let (engine, _, task) = try calls.startEngine(settings)
            engines.append(engine)
            tasks.append(task)
        }
        #expect(await calls.allDecode(engines, peers: 1, frames: 10, within: .seconds(15)))
        for engine in engines { #expect(await engine.statistics().mediaPath == "tcp") }
        for relay in cluster.relays {
            let counters = try await relay.counters()
            #expect(counters.membersWithMediaOverTCP == 1 && counters.trunkPacketsSent > 0, "\(counters)")
        }
        for engine in engines { await engine.leave() }
        for task in tasks { await task.value }
        await cluster.shutdown()
    }

    @Test func blockedUDPMovesMediaToTCPAndBackWhenItReturns() async throws {
        let relay = try await calls.startRelay()
        let proxy = try await LossyUDPProxy.start(relayPort: relay.mediaPort, lossPercent: 100, seed: 1)
        var blocked = calls.configuration("alice", port: relay.signalingPort)
        blocked.mediaAddressOverride = ServerAddress(host: "127.0.0.1", port: proxy.port)
        let started = ContinuousClock.now
        let (alice, aliceLog, aliceTask) = try calls.startEngine(blocked)
        let (bob, _, bobTask) = try calls.startEngine(calls.configuration("bob", port: relay.signalingPort))

        // UDP gets no answer: after 2 s alice's media goes over her TLS connection, and the call works.
        #expect(await calls.allDecode([alice, bob], peers: 1, frames: 10, within: .seconds(12)))
        let firstPictures = ContinuousClock.now - started
        #expect(aliceLog.all.contains(.mediaOverTCP(true)))
        #expect(
            aliceLog.all.contains {
                if case .alert(.message(let text)) = $0 {
                    text.contains("media goes over TCP, on the relay's WebSocket (no TLS)")
                } else {
                    false
                }
            })
        #expect((await alice.statistics()).mediaPath == "tcp")
        #expect(try await proxy.counts().toRelay > 0, "alice tried UDP")
        #expect(firstPictures < .seconds(12))

        // UDP comes back: a probe finds it within a keep-alive or two and the media moves back.
        try await proxy.setLossPercent(0)
        let back = await eventually(within: .seconds(15)) { await alice.statistics().mediaPath == "udp" }
        #expect(back)
        #expect(aliceLog.all.contains(.mediaOverTCP(false)))
        let bobBefore = await bob.statistics()
        let aliceBefore = await alice.statistics()
        #expect(await decodesMore(bob, than: bobBefore, frames: 15))
        #expect(await decodesMore(alice, than: aliceBefore, frames: 15))
        let countersBack = try await relay.counters()
        #expect(countersBack.membersWithMediaOverTCP == 1, "the connection is remembered until it closes")

        // And a network that starts dropping UDP mid-call sends the media over TCP again.
        try await proxy.setLossPercent(100)
        let again = await eventually(within: .seconds(10)) { await alice.statistics().mediaPath == "tcp" }
        #expect(again)
        let bobAgain = await bob.statistics()
        let aliceAgain = await alice.statistics()
        #expect(await decodesMore(bob, than: bobAgain, frames: 15))
        #expect(await decodesMore(alice, than: aliceAgain, frames: 15))

        await alice.leave()
        await bob.leave()
        _ = await (aliceTask.value, bobTask.value)
        await proxy.stop()
        await relay.shutdown()
    }
}
