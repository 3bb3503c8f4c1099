import Foundation
import Logging
import ParleyMedia
import ParleySecurity
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

extension EncryptionCaptureTests {
    /// A two-node call with everything between the nodes recorded: alice joins node 0, bob node 1, and the trunk
    /// between them runs through a recording proxy (node 1 reaches node 0 through its front, node 0 reaches node 1
    /// through its back). Returns alice's datagrams as they crossed from node 0, trunk framing removed.
    func recordTrunk(encrypted: Bool) async throws -> Recorded {
        let cluster = try await InProcessCluster.start(nodes: 2, logger: quietLogger())
        let proxy = try await LossyUDPProxy.start(relayPort: cluster.trunkPorts[0], lossPercent: 0, seed: 2)
        try await cluster.connect { from, _ in from == 1 ? proxy.port : proxy.backPort }
        let tone = try toneFile()
        defer { unlink(tone) }
        func member(_ name: String, node: Int) throws -> CallConfiguration {
            var settings = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: cluster.relays[node].signalingPort), room: "vault",
                name: name, profile: VideoProfile(width: 320, height: 240, fps: 15, bitrateKbps: 300),
                audioSource: .file(tone), showsSelfView: false, logger: quietLogger())
            if encrypted {
                settings.encryption = try CallEncryption(
                    secret: "correct horse battery", room: "vault", suite: .aes128GCM)
            }
            return settings
        }
        let alice = try CallEngine(try member("alice", node: 0))
        let bob = try CallEngine(try member("bob", node: 1))
        let bobLog = EventLog()
        let task = bobLog.consume(bob)
        alice.start()
        bob.start()
        let decoding = await eventually(within: .seconds(20)) {
            await bob.statistics().peers.values.contains { $0.framesDecoded >= 30 && $0.audioFramesPlayed >= 50 }
        }
        #expect(decoding, "bob (node 1) never decoded alice (node 0) across the trunk (encrypted: \(encrypted))")
        let sent = await alice.statistics().videoFramesSent
        let decoded = await bob.statistics().peers.values.map(\.framesDecoded).max() ?? 0
        await alice.leave()
        await bob.leave()
        task.cancel()
        // Node 0's media datagrams toward node 1: "PT", version 1, kind 4 (media), then the member's datagram.
        let trunkMedia = try await proxy.capture().filter { !$0.fromClient }.map(\.bytes).filter {
            $0.count > TrunkPacket.mediaOverhead
                && $0.starts(with: TrunkPacket.magic + [TrunkPacketKind.media.rawValue])
        }.map { Array($0.dropFirst(TrunkPacket.mediaOverhead)) }
        await proxy.stop()
        await cluster.shutdown()
        return Recorded(
            datagramsFromAlice: trunkMedia, signaling: [], aliceFramesSent: sent, bobDecodedOfAlice: decoded,
            bobChats: bobLog.chats)
    }

    /// The trunk between two relays carries an end-to-end encrypted call as ciphertext: fed a capture of it, the
    /// independent stack decodes nothing, where it decodes the same call without encryption.
    @Test func aCaptureOfTheTrunkBetweenNodesDecodesToNothing() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.gstLaunch),
            "\(Self.gstLaunch) is missing: run `make deps` (gstreamer1.0-tools, -plugins-good, -plugins-bad)")
        let clear = try await recordTrunk(encrypted: false)
        #expect(
            clear.datagramsFromAlice.count > 100, "alice's media crossed the trunk: \(clear.datagramsFromAlice.count)")
        let clearFrames = try await independentlyDecodedFrames(clear)
        let clearTone = try await independentlyDecodedTone(clear)
        #expect(clearFrames >= 20, "the independent decoder must work on a clear trunk (decoded \(clearFrames))")
        #expect(clearTone > 0.5, "the independent decoder must recover the tone from a clear trunk (\(clearTone))")

        let sealed = try await recordTrunk(encrypted: true)
        #expect(
            sealed.datagramsFromAlice.count > 100, "alice's media crossed the trunk: \(sealed.datagramsFromAlice.count)"
        )
        let sealedFrames = try await independentlyDecodedFrames(sealed)
        let sealedTone = try await independentlyDecodedTone(sealed)
        #expect(sealedFrames == 0, "the trunk capture decoded into \(sealedFrames) pictures without the secret")
        #expect(sealedTone < 0.05, "the trunk capture's audio resembles the tone (\(sealedTone)) without the secret")
        #expect(sealed.bobDecodedOfAlice >= 30, "bob, with the secret, decoded \(sealed.bobDecodedOfAlice) frames")
    }
}
