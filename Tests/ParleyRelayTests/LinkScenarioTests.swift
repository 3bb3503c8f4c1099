import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyRelay
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

/// Calls with one member behind a user-space link element (`EmulatedLink`) doing what two of the network issue's
/// named scenarios do to media: `mobile` (80 ms ± 30 ms each way, 1 % loss) and `lossy-wifi` (5 % loss in bursts of
/// 3, 20 ms ± 15 ms). The capacities those scenarios also name are the network lab's (`tc`), not the element's. In a
/// lane of their own, as the lossy call: their threads must keep time.
@Suite(.serialized, .lane(.lossy)) struct LinkScenarioTests {
    let calls = ResilienceTests()

    struct Seen {
        var fps: Double
        var concealedShare: Double
        var audioTarget: Duration
        var decodeErrors: Int
    }

    /// A 5 s window of what `receiver` got from its one peer, after the call settled.
    func window(_ receiver: CallEngine) async throws -> Seen {
        let before = try #require(await receiver.statistics().peers.values.first)
        try await Task.sleep(for: .seconds(5))  // a measurement window of wall time
        let after = try #require(await receiver.statistics().peers.values.first)
        let played = max(1, after.audioFramesPlayed - before.audioFramesPlayed)
        return Seen(
            fps: Double(after.framesDecoded - before.framesDecoded) / 5,
            concealedShare: Double(after.concealments - before.concealments) / Double(played),
            audioTarget: after.audioTarget, decodeErrors: after.decodeErrors)
    }

    /// Alice behind the element, bob direct; what each saw of the other over 5 s after 3 s of settling.
    func call(uplink: LinkModel.Settings, downlink: LinkModel.Settings) async throws -> (alice: Seen, bob: Seen) {
        let relay = try await calls.startRelay()
        let link = try await EmulatedLink.start(
            relayPort: relay.mediaPort, uplink: uplink, downlink: downlink, seed: 0x51_0B11E)
        var behind = calls.configuration("alice", port: relay.signalingPort)
        behind.mediaAddressOverride = ServerAddress(host: "127.0.0.1", port: link.port)
        let (alice, _, aliceTask) = try calls.startEngine(behind)
        let (bob, _, bobTask) = try calls.startEngine(calls.configuration("bob", port: relay.signalingPort))
        #expect(await calls.allDecode([alice, bob], peers: 1, frames: 10, within: .seconds(10)))
        try await Task.sleep(for: .seconds(3))  // the jitter buffers settle on the link
        async let aliceSaw = window(alice)
        async let bobSaw = window(bob)
        let seen = try await (aliceSaw, bobSaw)
        let counts = try await link.counts()
        print("link \(uplink) / \(downlink): alice saw \(seen.0), bob saw \(seen.1); element \(counts)")
        await alice.leave()
        await bob.leave()
        _ = await (aliceTask.value, bobTask.value)
        await link.stop()
        await relay.shutdown()
        return seen
    }

    @Test("mobile: 80 ms ± 30 ms each way and 1 % loss; pictures smooth, the voice's buffer grows to the jitter")
    func mobile() async throws {
        let settings = LinkModel.Settings(
            delay: .milliseconds(80), delayDeviation: .milliseconds(30), lossPercent: 1)
        let (alice, bob) = try await call(uplink: settings, downlink: settings)
        for (name, seen) in [("alice", alice), ("bob", bob)] {
            #expect(seen.fps >= 13, "\(name) decodes the other at \(seen.fps) fps (15 sent)")
            #expect(seen.concealedShare <= 0.05, "\(name) concealed \(seen.concealedShare * 100) % of the voice")
            #expect(seen.audioTarget > .milliseconds(40), "\(name)'s voice buffer at \(seen.audioTarget): not adapted")
            #expect(seen.decodeErrors == 0)
        }
    }

    @Test("lossy Wi-Fi: 5 % lost in bursts of 3, 20 ms ± 15 ms; pictures repaired, the voice mostly whole")
    func lossyWiFi() async throws {
        let settings = LinkModel.Settings(
            delay: .milliseconds(20), delayDeviation: .milliseconds(15), lossPercent: 5, meanBurstLength: 3)
        let (alice, bob) = try await call(uplink: settings, downlink: settings)
        for (name, seen) in [("alice", alice), ("bob", bob)] {
            #expect(seen.fps >= 12, "\(name) decodes the other at \(seen.fps) fps (15 sent)")
            #expect(seen.concealedShare <= 0.10, "\(name) concealed \(seen.concealedShare * 100) % of the voice")
            #expect(seen.decodeErrors == 0)
        }
    }
}
