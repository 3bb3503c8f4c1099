import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

@testable import ParleyWebRTC

/// A real headless Chromium against the relay's WebRTC transport (ICE-lite, DTLS-SRTP through OpenSSL and libsrtp2,
/// the SDP answer): the page sends its fake camera in three simulcast layers and its microphone, the endpoint reads
/// its layers and the sound decrypted, and sends the smallest layer back, which the page decodes.
@Suite(.lane(.browsers), .timeLimit(.minutes(2))) struct ChromiumTransportTests {
    static let chromium = "/usr/bin/chromium"
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/echo.html").path

    @Test func chromiumConnectsSendsItsLayersAndDecodesWhatComesBack() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.chromium),
            "Debian's chromium is missing (`make deps` installs it)")
        let endpoint = try EchoEndpoint(page: Self.page)
        try await endpoint.start()
        let folder = NSTemporaryDirectory() + "parley-echo-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let browser = try BackgroundProcess(
            Self.chromium,
            [
                "--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", "--mute-audio",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
                "--user-data-dir=\(folder)/profile", "http://127.0.0.1:\(endpoint.httpPort)/",
            ], outputPath: "\(folder)/chromium.log")
        defer {
            browser.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
        do {
            try await waitUntil(
                "the page decodes its own smallest layer", timeout: .seconds(60), every: .milliseconds(200)
            ) {
                let seen = endpoint.seen.withLockedValue { $0 }
                if let error = seen.offerError { throw EchoFailure(what: "the offer was refused: \(error)") }
                if let failure = seen.failure { throw EchoFailure(what: "the transport failed: \(failure)") }
                if let error = seen.reports.last?["error"] { throw EchoFailure(what: "the page failed: \(error)") }
                return (Int(seen.reports.last?["framesDecoded"] ?? "") ?? 0) >= 30
            }
        } catch {
            let seen = endpoint.seen.withLockedValue { $0 }
            Issue.record("\(error); seen: \(seen); chromium: \(browser.output.suffix(2_000))")
            await endpoint.stop()
            return
        }
        let seen = endpoint.seen.withLockedValue { $0 }
        await endpoint.stop()
        #expect(seen.connected)
        #expect(seen.audioPackets > 50, "Opus packets decrypted")
        // The two smaller layers; Chromium starts the full one only when its estimate allows, and nothing here sends it
        // congestion feedback (the relay's forwarding will).
        #expect(
            (seen.videoPacketsByRID["q"] ?? 0) > 10 && (seen.videoPacketsByRID["h"] ?? 0) > 10,
            "the smaller simulcast layers as the member's layers 2 and 1: \(seen.videoPacketsByRID), dropped \(seen.dropped)"
        )
        #expect(seen.rtcpPackets > 0)
        #expect(seen.echoed >= 30, "a packet or more for each frame decoded")
        #expect(seen.reports.last?["ice"] == "connected" || seen.reports.last?["ice"] == "completed")
        #expect(seen.reports.last?["dtls"] == "connected")
        #expect((Int(seen.reports.last?["frameWidth"] ?? "") ?? 0) == 160, "the smallest layer of 640x360")
    }
}

struct EchoFailure: Error, CustomStringConvertible {
    var what: String
    var description: String { what }
}
