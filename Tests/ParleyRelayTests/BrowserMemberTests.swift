import Foundation
import Logging
import ParleyMedia
import ParleyProcesses
import ParleyRoom
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// A real headless Chromium (Resources/lab/browser-member.html) as a member of a relay's room beside a Parley client (real engine, real codecs): it joins
/// over the relay's signaling with an SDP offer, and its media goes over ICE-lite and DTLS-SRTP on the relay's UDP
/// port. Each decodes the other's camera and hears the other's microphone; chat and mute states go both ways; a
/// second client takes the page's second slot pair and gives it back; the host removes the browser, whose page is
/// told so.
@Suite(.serialized, .lane(.browsers), .timeLimit(.minutes(3)))
struct BrowserMemberTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    @Test func aBrowserAndParleyClientsSeeHearChatAndMuteAndTheHostRemovesTheBrowser() async throws {
        try #require(BrowserMember.missing == nil, Comment(rawValue: BrowserMember.missing ?? ""))
        let relay = try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
        let alice = try CallEngine(
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: "standup", name: "alice",
                profile: VideoProfile(width: 640, height: 360, fps: 15, bitrateKbps: 600), audioSource: .synthetic,
                showsSelfView: false, logger: quietLogger()))
        let log = EventLog()
        let events = log.consume(alice)
        alice.start()
        let server = try await PageServer.start(page: BrowserMember.page)
        let browser = try BrowserMember(
            server: server, relayPort: relay.signalingPort, room: "standup", name: "bea",
            query: ["say": "hello from chrome", "mute": "1"])
        defer {
            browser.stop()
            events.cancel()
        }

        // The page joins: its offer answered, one slot pair carrying alice.
        func page() -> [String: Any] { server.report("bea") ?? [:] }
        func failure() -> String {
            "page: \(server.reportText("bea")); chromium: \(browser.process.output.suffix(1_500))"
        }
        try await waitUntil("the page joined and alice is in a slot", timeout: .seconds(30), every: .milliseconds(200))
        {
            if let errors = page()["errors"] as? [String], !errors.isEmpty { throw BrowserPageFailure(failure()) }
            return ((page()["slots"] as? [[String: Any]]) ?? []).count == 1
        }
        let beaID = try #require((page()["joined"] as? NSNumber)?.uint32Value)
        let aliceID = await alice.statistics().localID
        let slot = try #require((page()["slots"] as? [[String: Any]])?.first)
        #expect((slot["member"] as? NSNumber)?.uint32Value == aliceID)
        let videoMid = try #require(slot["video"] as? String)
        let audioMid = try #require(slot["audio"] as? String)
        #expect(((page()["offerBytes"] as? NSNumber)?.intValue ?? 0) < maxSignalingMessageBytes, "the offer fits")

        // Alice draws bea in a small tile: the smallest of its simulcast layers is the one Chromium sends at once.
        alice.reportTiles([TileSize(id: beaID, width: 160, height: 90)])
        func inbound(_ mid: String) -> [String: Any] {
            ((page()["inbound"] as? [String: Any])?[mid] as? [String: Any]) ?? [:]
        }
        do {
            try await waitUntil("each decodes the other", timeout: .seconds(45), every: .milliseconds(250)) {
                let atAlice = await alice.statistics().peers[beaID]
                let decodedAtPage = (inbound(videoMid)["framesDecoded"] as? NSNumber)?.intValue ?? 0
                let heardAtPage = (inbound(audioMid)["packets"] as? NSNumber)?.intValue ?? 0
                return (atAlice?.framesDecoded ?? 0) >= 30 && (atAlice?.audioPacketsReceived ?? 0) >= 50
                    && decodedAtPage >= 30 && heardAtPage >= 50
            }
        } catch {
            let atAlice = await alice.statistics().peers[beaID]
            let counters = try? await relay.counters()
            Issue.record(
                "\(error); at alice: \(String(describing: atAlice)); relay: \(String(describing: counters)); \(failure())"
            )
            await alice.leave()
            await relay.shutdown()
            await server.stop()
            return
        }
        let atAlice = try #require(await alice.statistics().peers[beaID])
        #expect(atAlice.lastFrameSize == VideoSize(width: 160, height: 90), "the page's smallest layer")
        #expect(atAlice.decodeErrors == 0)
        #expect((inbound(videoMid)["frameWidth"] as? NSNumber)?.intValue == 640, "alice's full layer at the page")
        // Chromium's estimate grows on the relay's transport-wide feedback: its 320x180 layer, which it leaves off
        // at its starting estimate, goes out too (without the feedback it stayed under 150 kbit/s, on `q` alone).
        func sent(_ rid: String) -> Int {
            (((page()["outbound"] as? [String: Any])?[rid] as? [String: Any])?["framesSent"] as? NSNumber)?.intValue
                ?? 0
        }
        let grew = await eventually(within: .seconds(20)) { sent("h") >= 30 }
        #expect(
            grew, "the page sends its h layer: \(page()["outbound"] ?? "nothing"), estimate \(page()["estimate"] ?? 0)")
        // Alice's tile grows: she switches to the page's h layer at its keyframe (Chromium's layers have clocks of
        // their own; the relay puts them on one, which the switch goes by).
        alice.reportTiles([TileSize(id: beaID, width: 300, height: 169)])
        let switched = await eventually(within: .seconds(10)) {
            await alice.statistics().peers[beaID]?.lastFrameSize == VideoSize(width: 320, height: 180)
        }
        let afterSwitch = await alice.statistics().peers[beaID]
        #expect(switched, "alice decodes the page's 320x180: \(String(describing: afterSwitch))")
        #expect(afterSwitch?.decodeErrors == 0)

        // Chat both ways.
        alice.perform(.sendChat("hello from the terminal"))
        let chatted = await eventually(within: .seconds(10)) {
            let atPage = (page()["chat"] as? [String]) ?? []
            return atPage.contains("alice: hello from the terminal") && log.chats.contains("hello from chrome")
        }
        #expect(chatted, "page: \(page()["chat"] ?? "none"); alice: \(log.chats)")

        // Mute states both ways: the page muted its microphone when it joined; alice mutes hers.
        alice.perform(.setMicrophoneMuted(true))
        let muted = await eventually(within: .seconds(10)) {
            let atPage = (page()["mutes"] as? [String: Any])?["\(aliceID)"] as? [String: Any]
            return (atPage?["audio"] as? Bool) == true
                && log.all.contains { $0 == .remoteAudioMuted(ParticipantID(beaID), true) }
        }
        #expect(muted, "page: \(page()["mutes"] ?? "none"); alice: \(log.all.filter { "\($0)".contains("Muted") })")

        // Carl comes and goes: the page's second slot pair carries him, then nobody.
        let carl = try CallEngine(
            CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: "standup", name: "carl",
                profile: VideoProfile(width: 320, height: 180, fps: 15, bitrateKbps: 300), showsSelfView: false,
                logger: quietLogger()))
        carl.start()
        func slotMembers() -> [UInt32] {
            ((page()["slots"] as? [[String: Any]]) ?? []).compactMap { ($0["member"] as? NSNumber)?.uint32Value }
        }
        #expect(await eventually(within: .seconds(10)) { slotMembers().count == 2 }, "\(slotMembers())")
        await carl.leave()
        #expect(await eventually(within: .seconds(10)) { slotMembers() == [aliceID] }, "\(slotMembers())")

        // Alice hosts (she came first): she removes bea, whose page is told so by name.
        alice.perform(.removeParticipant(ParticipantID(beaID)))
        let removed = await eventually(within: .seconds(10)) {
            (page()["removed"] as? String)?.hasPrefix("alice: ") == true
                && log.all.contains { $0 == .userOffline(ParticipantID(beaID), reason: .removed) }
        }
        #expect(removed, "page: \(page()["removed"] ?? "nothing"); closed \(page()["closed"] ?? "no")")
        #expect(await alice.statistics().peers[beaID] == nil, "bea is gone from alice's call")
        await alice.leave()
        await relay.shutdown()
        await server.stop()
    }
}

struct BrowserPageFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
