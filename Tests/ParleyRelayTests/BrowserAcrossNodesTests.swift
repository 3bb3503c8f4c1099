import Foundation
import Logging
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay
@testable import ParleyRoom

/// A browser member on one node of a cluster and a Parley client on another, in one room (issue 53: "a browser member
/// is a member like any other … a cluster node"): the page's media reaches the other node over the trunk as any
/// member's does, and the other node's comes back to the page's slot.
@Suite(.serialized, .lane(.browsers), .timeLimit(.minutes(3)))
struct BrowserAcrossNodesTests {
    @Test func aGuestOnOneNodeAndAMemberOnAnotherSeeHearAndChat() async throws {
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let page = try WebPage(folder: BrowserPageTests.webFolder)
        let cluster = try await InProcessCluster.start(
            nodes: 2, logger: logger, configure: { _, configuration in configuration.webPage = page })
        try await cluster.connect()
        let alice = try CallEngine(
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: cluster.relays[1].signalingPort), room: "spread",
                name: "alice", profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600),
                audioSource: .synthetic, showsSelfView: false, logger: logger))
        let log = EventLog()
        let events = log.consume(alice)
        alice.start()
        let browser = try await DevToolsPage.open(
            "http://127.0.0.1:\(cluster.relays[0].signalingPort)/spread?name=bea&join=1", tag: "node-0")
        defer {
            browser.stop()
            events.cancel()
        }
        func snapshot() async throws -> PageSnapshot { try await BrowserPageTests.snapshot(browser) }
        func failure() async -> String { await BrowserPageTests.failure(browser) }
        try await BrowserPageTests.waitForScript(browser)
        // Alice is on node 1 under an id of its own: the page knows her by name.
        try await waitUntil("the page has alice in a slot", timeout: .seconds(30), every: .milliseconds(200)) {
            let now = try await snapshot()
            if !now.errors.isEmpty { throw BrowserPageFailure(await failure()) }
            return now.members.contains { $0.name == "alice" } && now.slots.count == 1
        }
        let aliceAtPage = try #require(try await snapshot().members.first { $0.name == "alice" }?.id)
        let beaAtAlice = try #require(await alice.statistics().peers.first { $0.value.name == "bea" }?.key)
        alice.reportTiles([TileSize(id: beaAtAlice, width: 320, height: 180)])
        guard
            await BrowserPageTests.eachDecodesAndHears(
                browser, alice: alice, aliceID: aliceAtPage, guest: beaAtAlice)
        else {
            await alice.leave()
            await cluster.shutdown()
            return
        }
        #expect(await alice.statistics().peers[beaAtAlice]?.decodeErrors == 0)
        // The media crossed the trunk both ways.
        let trunk = try await cluster.relays[0].counters()
        #expect(trunk.trunkPacketsSent > 100 && trunk.trunkPacketsReceived > 100, "\(trunk)")

        alice.perform(.sendChat("hello across the nodes"))
        _ = try await browser.evaluate(
            """
            (() => { const input = document.getElementById("chat-input"); input.value = "hello from node 0";
              input.form.requestSubmit(); return true; })()
            """)
        let chatted = await eventually(within: .seconds(10)) {
            let atPage = (try? await snapshot().chat) ?? []
            return atPage.contains("alice: hello across the nodes") && log.chats.contains("hello from node 0")
        }
        let why = await failure()
        #expect(chatted, "alice: \(log.chats); \(why)")
        await alice.leave()
        await cluster.shutdown()
    }
}
