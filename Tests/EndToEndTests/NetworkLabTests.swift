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
    /// ~700 kbit/s her camera and voice ask for, bob's link is clean.
    @Test("a member on a narrow uplink sees it in its estimate; a member on a clean link does not")
    func narrowUplinkIsEstimated() async throws {
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
        // Bob's estimate climbs on his clean link; by then alice's is under her bucket's rate, saying why, and the
        // bucket has been dropping what she sent past it.
        let clean = try await poll(
            "bob's uplink estimate climbing past 330 kbit/s on his clean link", timeout: .seconds(30),
            { report("bob") }, until: { ($0?.uplinkEstimateKbps ?? 0) >= 330 })
        #expect(clean?.uplinkEstimateReason?.hasPrefix("loss") == false)
        let squeezed = try #require(report("alice"))
        let kbps = try #require(squeezed.uplinkEstimateKbps, "alice has an estimate")
        let reason = squeezed.uplinkEstimateReason ?? "none"
        #expect(kbps <= 300, "alice's estimate \(kbps) kbit/s (\(reason)) is under her 300 kbit/s uplink")
        #expect(reason.hasPrefix("loss") || reason == "delay rising" || reason == "holding", "why: \(reason)")
        #expect((try lab.uplinkDrops(of: alice) ?? 0) > 0, "the bucket dropped what alice sent past it")
        #expect(try lab.uplinkDrops(of: bob) == nil, "bob's uplink is not shaped")
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
