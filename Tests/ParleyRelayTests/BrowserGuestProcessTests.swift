import Foundation
import ParleyEngine
import ParleyProcesses
import ParleySecurity
import ParleyTestLanes
import ParleyTestSupport
import Testing

/// The guest's scenario with the shipped programs: `parley serve --insecure` serving its guests' page (read from the
/// Resources it was installed with), a `parley bot` and the page in a headless Chromium. Each decodes and hears the
/// other, the bot's chat lines reach the page and the page's line reaches the bot, the bot's camera turning off is
/// shown on the page; then the same in a room the bot encrypts end to end (`--secret`), the secret typed into the page.
@Suite(.serialized, .lane(.browsers), .timeLimit(.minutes(3)))
struct BrowserGuestProcessTests {
    @Test(arguments: [false, true])
    func aBotAndThePageDecodeEachOtherAndChat(encrypted: Bool) async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        try #require(DevToolsPage.missing == nil, Comment(rawValue: DevToolsPage.missing ?? ""))
        let folder = NSTemporaryDirectory() + "parley-guest-\(getpid())-\(encrypted)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try BackgroundProcess(
            parley, ["serve", "--port", "0", "--insecure", "--state-dir", folder + "/relay"])
        defer { relay.stop() }
        try await relay.output(containing: "browser guests join at", within: .seconds(15))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        let room = encrypted ? "sealed" : "open"
        let secret = "a long shared secret"
        let statistics = folder + "/bot.json"
        let bot = try BackgroundProcess(
            parley,
            [
                "bot", room, "--server", "127.0.0.1:\(port)", "--insecure", "--name", "botty", "--profile", "640x360",
                "--chat-every", "1", "--toggle-video-every", "6", "--stats-file", statistics,
            ] + (encrypted ? ["--secret", secret] : []))
        defer { bot.stop() }
        func atBot() -> CallStatisticsReport? { try? CallStatisticsFile(path: statistics).read() }

        let page = try await DevToolsPage.open("http://127.0.0.1:\(port)/\(room)", tag: "guest-\(room)")
        defer { page.stop() }
        try await BrowserPageTests.waitForScript(page)
        _ = try await page.evaluate(
            """
            (() => { document.getElementById("name").value = "bea";
              document.getElementById("secret").value = \(BrowserPageTests.quoted(encrypted ? secret : ""));
              document.getElementById("join").click(); return true; })()
            """)
        func snapshot() async throws -> PageSnapshot { try await BrowserPageTests.snapshot(page) }
        func failure() async -> String {
            await BrowserPageTests.failure(page)
                + "; bot: \(bot.output.suffix(800)); relay: \(relay.output.suffix(800))"
        }
        var botID: UInt32 = 0
        do {
            try await waitUntil("each decodes and hears the other", timeout: .seconds(45), every: .milliseconds(250)) {
                let now = try await snapshot()
                if !now.errors.isEmpty { throw BrowserPageFailure(await failure()) }
                botID = now.members.first { $0.name == "botty" }?.id ?? 0
                let bea = atBot()?.peers.first { $0.name == "bea" }
                return (bea?.framesDecoded ?? 0) >= 30 && (bea?.audioPackets ?? 0) >= 50
                    && (now.frames["\(botID)"]?.decoded ?? 0) >= 30 && (now.heard["\(botID)"] ?? 0) > 0
            }
        } catch {
            let why = await failure()
            Issue.record("\(error); at the bot: \(String(describing: atBot()?.peers)); \(why)")
            return
        }
        let bea = atBot()?.peers.first { $0.name == "bea" }
        #expect(bea?.decodeErrors == 0 && bea?.decryptFailures == 0, "\(String(describing: bea))")
        if encrypted {
            let safety = try CallEncryption(secret: secret, room: room, suite: .aes128GCM).safetyCode
            let lock = try await snapshot().encryption?.lock
            #expect(lock == "🔒 \(safety)")
        }

        // Chat both ways: the bot's lines on the page (opened there in the encrypted room), the page's at the bot.
        _ = try await page.evaluate(
            """
            (() => { const input = document.getElementById("chat-input"); input.value = "hello, botty";
              input.form.requestSubmit(); return true; })()
            """)
        let chatted = await eventually(within: .seconds(15)) {
            let lines = (try? await snapshot().chat) ?? []
            let fromBot = lines.filter { $0.hasPrefix("botty: ") }
            return !fromBot.isEmpty && fromBot.allSatisfy { $0.contains("(#") }
                && (atBot()?.chatLinesReceived ?? 0) >= 1
        }
        var why = await failure()
        #expect(chatted, "\(why)")

        // The bot turns its camera off every 6 s: the page shows it.
        let cameraOff = await eventually(within: .seconds(15)) {
            (try? await snapshot().member(botID)?.videoMuted) == true
        }
        why = await failure()
        #expect(cameraOff, "\(why)")
    }
}
