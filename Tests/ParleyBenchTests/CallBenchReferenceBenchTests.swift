import Foundation
import Testing

@testable import ParleyBench
@testable import ParleyEngine

/// The call benchmark's reference clients: baresip's configuration, the Chromium page and its console reports,
/// Xvfb's display number, and IPv6 in captures (WebRTC's host candidates).
struct CallBenchReferenceBenchTests {
    static let media = CallBench.BenchMedia(
        video: "/tmp/media/camera.y4m", loopedVoice: "/tmp/media/voice-10s.wav", longVoice: "/tmp/media/voice-58s.wav",
        videoFrames: 1440)

    /// The message of the error `body` throws ("" when it throws none).
    static func message(_ body: () throws -> Void) -> String {
        do {
            try body()
            return ""
        } catch {
            return "\(error)"
        }
    }

    // MARK: - baresip

    @Test func baresipUsesParleysOpusComplexity() throws {
        #expect(CallBench.opusComplexity == AudioSender.complexity)
        let config = try CallBench.baresipConfig(
            sipPort: 5060, consolePort: 5555, rtpPorts: 20_000...20_019, media: Self.media)
        let lines = config.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: true) }
        #expect(lines.contains { $0 == ["opus_complexity", "\(AudioSender.complexity)"] })
    }

    @Test("baresip display modules", arguments: [("fakevideo", "fakevideo"), ("x11", "x11")])
    func baresipDisplay(module: String, expected: String) throws {
        let config = try CallBench.baresipConfig(
            sipPort: 5060, consolePort: 5555, rtpPorts: 20_000...20_019, media: Self.media, displayModule: module)
        let lines = config.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: true) }
        #expect(lines.contains { $0 == ["video_display", "\(expected),nil"] })
        #expect(lines.contains { $0 == ["module", "\(expected).so"] })
        #expect(lines.filter { $0.first == "video_display" }.count == 1)
    }

    struct BadConfig: CustomTestStringConvertible, Sendable {
        var name: String
        var sip: UInt16 = 5060
        var console: UInt16 = 5555
        var rtp: ClosedRange<Int> = 20_000...20_019
        var video = "/tmp/media/camera.y4m"
        var module = "fakevideo"
        var expected: String
        var testDescription: String { name }
    }

    @Test(
        "bad baresip configurations",
        arguments: [
            BadConfig(
                name: "unknown display", module: "sdl",
                expected: "baresip config: display module \"sdl\" is not one of fakevideo, x11"),
            BadConfig(
                name: "same ports", sip: 5060, console: 5060,
                expected: "baresip config: SIP port 5060 and console port 5060 must be distinct and non-zero"),
            BadConfig(
                name: "zero port", sip: 0,
                expected: "baresip config: SIP port 0 and console port 5555 must be distinct and non-zero"),
            BadConfig(
                name: "privileged RTP ports", rtp: 100...119,
                expected: "baresip config: RTP ports 100-119 must be at least 4 ports within 1024-65535"),
            BadConfig(
                name: "too few RTP ports", rtp: 20_000...20_001,
                expected: "baresip config: RTP ports 20000-20001 must be at least 4 ports within 1024-65535"),
            BadConfig(
                name: "space in a media path", video: "/tmp/my media/camera.y4m",
                expected: "baresip config: the media path /tmp/my media/camera.y4m has a space or comma in it"),
        ])
    func badBaresipConfig(_ c: BadConfig) {
        var media = Self.media
        media.video = c.video
        #expect(
            Self.message {
                _ = try CallBench.baresipConfig(
                    sipPort: c.sip, consolePort: c.console, rtpPorts: c.rtp, media: media, displayModule: c.module)
            } == c.expected)
    }

    // MARK: - Chromium page

    @Test func pageCarriesTheCallSettings() throws {
        let page = try BrowserCallPage(width: 640, height: 480, fps: 30, videoKbps: 1000)
        #expect(page.html.contains("const KBPS = 1000, WIDTH = 640, HEIGHT = 480, FPS = 30;"))
        #expect(page.html.contains("video { width: 640px; height: 480px; flex: none; }"))
        #expect(page.html.contains("console.log('PARLEYBENCH ' + text)"))
        #expect(page.html.contains("degradationPreference = 'maintain-resolution'"))
        #expect(page.windowSize == (1320, 680))
    }

    @Test(
        "bad page settings",
        arguments: [
            (0, 480, 30, 1000, "browser call page: width 0 is outside 16…4096"),
            (640, 480, 90, 1000, "browser call page: frame rate 90 is outside 1…60"),
            (640, 480, 30, 10, "browser call page: video bitrate (kbit/s) 10 is outside 30…20000"),
            (641, 480, 30, 1000, "browser call page: 641x480 is not an even size (4:2:0 video)"),
        ])
    func badPage(width: Int, height: Int, fps: Int, kbps: Int, expected: String) {
        #expect(
            Self.message { _ = try BrowserCallPage(width: width, height: height, fps: fps, videoKbps: kbps) }
                == expected)
    }

    @Test func chromiumSandboxOnlyOffAsRoot() throws {
        let page = try BrowserCallPage(width: 640, height: 480, fps: 30, videoKbps: 1000)
        func arguments(root: Bool) -> [String] {
            CallBench.chromiumArguments(
                page: page, pagePath: "/tmp/run/page.html", profile: "/tmp/run/profile",
                media: Self.media, asRoot: root)
        }
        #expect(arguments(root: true).first == "--no-sandbox")
        #expect(!arguments(root: false).contains("--no-sandbox"))
        #expect(arguments(root: false).contains("--use-file-for-fake-video-capture=/tmp/media/camera.y4m"))
        #expect(arguments(root: false).contains("--use-file-for-fake-audio-capture=/tmp/media/voice-10s.wav"))
        #expect(arguments(root: false).contains("--window-size=1320,680"))
        #expect(arguments(root: false).last == "file:///tmp/run/page.html")
    }

    // MARK: - Console reports

    static let reportLine =
        "[27981:27981:1125/030801.104301:INFO:CONSOLE:7] \"PARLEYBENCH time=1795576081104 "
        + "sent=2134829,2138061 received=2133033,2140569 decoded=536,536 shown=497,483 size=640x480,640x480 "
        + "codec=VP8,VP8\", source: file:///tmp/run/browser-call.html (7)"

    @Test func reportFromChromiumsConsoleLine() throws {
        let report = try BrowserCallReport.parse(line: Self.reportLine)
        #expect(
            report
                == BrowserCallReport(
                    time: 1_795_576_081_104, sent: [2_134_829, 2_138_061], received: [2_133_033, 2_140_569],
                    decoded: [536, 536], shown: [497, 483], size: ["640x480", "640x480"], codec: ["VP8", "VP8"]))
    }

    @Test func otherLinesAreNotReports() throws {
        #expect(
            try BrowserCallReport.parse(line: "[1:1:1125/030742.250617:WARNING:vaapi_wrapper.cc:1655] no devices")
                == nil)
        #expect(try BrowserCallReport.parse(line: "") == nil)
        let output = "noise\n" + Self.reportLine + "\nmore noise\n" + Self.reportLine + "\n"
        #expect(try BrowserCallReport.all(in: output).count == 2)
    }

    @Test(
        "bad reports",
        arguments: [
            (
                "PARLEYBENCH time=5 sent=1 received=1,2 decoded=1,2 shown=1,2 size=1x1,1x1 codec=VP8,VP8",
                "browser call report: sent= needs two values (one per side), got \"1\""
            ),
            (
                "PARLEYBENCH time=5 sent=1,2 received=1,2 decoded=1,-2 shown=1,2 size=1x1,1x1 codec=VP8,VP8",
                "browser call report: decoded= holds \"-2\", not a count"
            ),
            (
                "PARLEYBENCH time=5 sent=1,2 received=1,2 decoded=1,2 size=1x1,1x1 codec=VP8,VP8",
                "browser call report: no shown= in \"time=5 sent=1,2 received=1,2 decoded=1,2 size=1x1,1x1 codec=VP8,VP8\""
            ),
            (
                "PARLEYBENCH time=x sent=1,2 received=1,2 decoded=1,2 shown=1,2 size=1x1,1x1 codec=VP8,VP8",
                "browser call report: time=x is not a positive number"
            ),
            (
                "PARLEYBENCH time=5 sent=1,2 received=1,2 decoded=1,2 shown=1,2 size=640,1x1 codec=VP8,VP8",
                "browser call report: size \"640\" is not WIDTHxHEIGHT"
            ),
            ("PARLEYBENCH time=5 time=6", "browser call report: time given twice in \"time=5 time=6\""),
            ("PARLEYBENCH time=5 junk", "browser call report: \"junk\" is not NAME=VALUE in \"time=5 junk\""),
            (
                "\"PARLEYBENCH error=TypeError%3A%20x%20is%20%22y%22\", source: file:///p.html (3)",
                "the browser call page failed: TypeError: x is \"y\""
            ),
        ])
    func badReport(line: String, expected: String) {
        #expect(Self.message { _ = try BrowserCallReport.parse(line: line) } == expected)
    }

    @Test func ratesBetweenReports() {
        let earlier = BrowserCallReport(
            time: 10_000, sent: [0, 0], received: [0, 0], decoded: [100, 90],
            shown: [50, 50], size: ["640x480", "640x480"], codec: ["VP8", "VP8"])
        var later = earlier
        later.time = 12_000
        later.sent = [250_000, 125_000]
        later.decoded = [160, 150]
        later.shown = [110, 108]
        let rates = later.rates(since: earlier)
        #expect(rates.sentKbps == [1000, 500])
        #expect(rates.decoded == [30, 30])
        #expect(rates.shown == [30, 29])
    }

    // MARK: - Xvfb

    @Test(
        "Xvfb's display number",
        arguments: [
            ("1\n", 1 as Int?),
            ("_XSERVTransmkdir: Owner of /tmp/.X11-unix should be set to root\n99\n", 99),
            ("", nil),
            ("Fatal server error:\n(EE) Cannot establish any listening sockets\n", nil),
            ("2", 2),
        ])
    func displayNumber(output: String, expected: Int?) {
        #expect(VirtualDisplay.displayNumber(in: output) == expected)
    }

    // MARK: - IPv6 in captures

    /// An IPv6 packet carrying UDP (or `nextHeader`) from `source` to `destination` with `payload`.
    static func ipv6(source: UInt16, destination: UInt16, payload: [UInt8], nextHeader: UInt8 = 17) -> [UInt8] {
        let udpLength = 8 + payload.count
        let fixed: [UInt8] =
            [0x60, 0, 0, 0, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), nextHeader, 64]
            + [UInt8](repeating: 0, count: 15) + [1] + [UInt8](repeating: 0, count: 15) + [1]
        let udp: [UInt8] = [
            UInt8(source >> 8), UInt8(source & 0xFF), UInt8(destination >> 8), UInt8(destination & 0xFF),
            UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0,
        ]
        return fixed + udp + payload
    }

    @Test(
        "IPv6 datagrams",
        arguments: [
            ("Ethernet", 1 as UInt32, [UInt8](repeating: 0, count: 12) + [0x86, 0xDD], 1),
            ("Linux cooked v2", 276, [0x86, 0xDD] + [UInt8](repeating: 0, count: 18), 1),
            ("raw IPv6", 229, [], 1),
            ("raw IP", 101, [], 1),
            ("Ethernet saying IPv4", 1, [UInt8](repeating: 0, count: 12) + [0x08, 0x00], 0),
        ])
    func ipv6Datagrams(name: String, linkType: UInt32, link: [UInt8], count: Int) throws {
        let payload = CallBenchCaptureTests.payload
        let file = CallBenchCaptureTests.pcap(
            linkType: linkType,
            frames: [
                (
                    10, 250_000,
                    link
                        + Self.ipv6(
                            source: 5004, destination: 7878,
                            payload: payload)
                )
            ])
        let datagrams = try PacketCapture.parse(file)
        #expect(datagrams.count == count, "\(name)")
        if let datagram = datagrams.first {
            #expect(datagram.sourcePort == 5004 && datagram.destinationPort == 7878)
            #expect(datagram.length == payload.count)
            #expect(datagram.head == CallBenchCaptureTests.rtpHead)
        }
    }

    @Test func ipv6OtherThanUDPIsSkipped() throws {
        let file = CallBenchCaptureTests.pcap(
            linkType: 229, frames: [(1, 0, Self.ipv6(source: 1, destination: 2, payload: [1, 2, 3], nextHeader: 6))])
        #expect(try PacketCapture.parse(file).isEmpty)
    }

    // MARK: - The camera file in memory

    @Test func cameraFileIsHeldInMemory() throws {
        let path = NSTemporaryDirectory() + "parley-resident-\(getpid()).y4m"
        defer { unlink(path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 64 * 1024)))
        let file = ResidentFile(path: path)
        // 64 KiB is under the smallest RLIMIT_MEMLOCK, so even an unprivileged run may lock it.
        #expect(file.isHeld)
        #expect(file.how.contains("mlock"))
    }

    @Test func missingCameraFileIsSaid() {
        let file = ResidentFile(path: "/nonexistent/parley-camera.y4m")
        #expect(!file.isHeld)
        #expect(file.how.contains("cannot open it"))
        #expect(file.how.contains("No such file"))
    }
}
