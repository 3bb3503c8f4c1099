import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Calls in the network lab: the relay and each member in namespaces of their own, links shaped with `tc`.
@Suite(
    "Network lab", .serialized,
    .enabled(if: NetworkLab.unavailableReason == nil, "\(NetworkLab.unavailableReason ?? "")"), .lane(.processes))
struct NetworkLabTests {
    /// Two bots through a relay in the lab: alice's uplink is a 300 kbit/s token bucket (60 ms of queue) under the
    /// ~900 kbit/s her camera's layers and voice ask for, bob's link is clean.
    @Test("a member on a narrow uplink cuts her camera's rate to fit it, and the others keep seeing her")
    func narrowUplinkIsEstimatedAndFitted() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary (PARLEY_BIN)")
        let lab = try NetworkLab(tag: "up")
        defer { lab.tearDown() }
        let alice = try lab.addMember("alice", link: NetworkLab.Link(uplinkKbps: 300))
        let bob = try lab.addMember("bob")
        let folder = NSTemporaryDirectory() + "parley-lab-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let (relayPath, relayArguments) = lab.command(
            in: lab.relayNamespace, parley,
            ["serve", "--host", "0.0.0.0", "--port", "7878", "--insecure", "--state-dir", folder])
        let relay = try BackgroundProcess(relayPath, relayArguments, outputPath: "\(folder)/relay.log")
        defer { relay.stop() }
        try await relay.output(containing: "relay listening", within: .seconds(10))

        var bots: [BackgroundProcess] = []
        defer { for bot in bots { bot.stop() } }
        for member in [alice, bob] {
            let (path, arguments) = lab.command(
                in: member.namespace, parley,
                [
                    "bot", "standup", "--server", "\(member.relayAddress):7878", "--insecure", "--name", member.name,
                    "--profile", "640x360", "--duration", "40", "--stats-file", "\(folder)/\(member.name).json",
                ])
            bots.append(try BackgroundProcess(path, arguments, outputPath: "\(folder)/\(member.name).log"))
        }
        func report(_ name: String) -> CallStatisticsReport? {
            try? CallStatisticsFile(path: "\(folder)/\(name).json").read()
        }
        // Both are in the call first, media bound over the lab's links, each receiving the other.
        try await waitUntil("alice and bob bound and receiving each other's audio", timeout: .seconds(15)) {
            [alice, bob].allSatisfy { member in
                guard let report = report(member.name) else { return false }
                return report.mediaBound && (report.peers.first?.audioPackets ?? 0) > 20
            }
        }
        // Alice's estimate falls under her bucket's rate, saying why, and her camera's rate follows it down.
        let squeezed = try await poll(
            "alice's estimate under her 300 kbit/s uplink and her camera's rate cut to fit", timeout: .seconds(20),
            { report("alice") },
            until: { ($0?.uplinkEstimateKbps ?? .max) <= 300 && ($0?.videoTargetKbps ?? .max) <= 250 })
        let reason = squeezed?.uplinkEstimateReason ?? "none"
        #expect(reason.hasPrefix("loss") || reason == "delay rising" || reason == "holding", "why: \(reason)")
        #expect((try lab.uplinkDrops(of: alice) ?? 0) > 0, "the bucket dropped what alice sent past it")
        #expect(try lab.uplinkDrops(of: bob) == nil, "bob's uplink is not shaped")
        // Bob's link is clean: his estimate stays at what he sends, his camera at the profile's rate.
        let clean = try #require(report("bob"))
        #expect(clean.uplinkEstimateReason?.hasPrefix("loss") == false)
        #expect(clean.videoTargetKbps == 600, "bob's camera at the profile's 600 kbit/s")
        // Bob keeps seeing alice: her frames, fewer bits each, get through her uplink and decode.
        func aliceFramesAtBob() -> Int { report("bob")?.peers.first?.framesDecoded ?? 0 }
        let before = aliceFramesAtBob()
        let window = ContinuousClock.now
        try await Task.sleep(for: .seconds(5))  // a measurement window of wall time
        let seconds = Double((ContinuousClock.now - window).components.seconds)
        let fps = Double(aliceFramesAtBob() - before) / max(1, seconds)
        #expect(fps >= 10, "bob decodes alice at \(fps) fps over her 300 kbit/s uplink")
    }

    @Test("a lab that cannot be made says which command failed")
    func badShapingIsAnError() throws {
        let lab = try NetworkLab(tag: "bad")
        defer { lab.tearDown() }
        #expect(throws: NetworkLabError.self) {
            try lab.addMember("alice", link: NetworkLab.Link(uplinkKbps: 0))
        }
    }
}
