import Foundation
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// The page a Chromium tab runs for the call benchmark: a 1:1 WebRTC call inside one page. Two RTCPeerConnections
/// connected to each other in the page (no signalling server), each sending the fake camera and microphone (the
/// benchmark's Y4M and WAV files) to the other, VP8 only, capped at the call's bitrate at full resolution; each
/// side's received video plays in its own `<video>` element. Once a second it logs a `PARLEYBENCH` line
/// (`BrowserCallReport`) to the console, which Chromium writes to its standard error.
struct BrowserCallPage {
    var width: Int
    var height: Int
    var fps: Int
    var videoKbps: Int

    /// A page for these call settings; throws a message naming a value out of range.
    init(width: Int, height: Int, fps: Int, videoKbps: Int) throws {
        func check(_ name: String, _ value: Int, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw CallBenchError.unexpected(
                    "browser call page: \(name) \(value) is outside \(range.lowerBound)…\(range.upperBound)")
            }
        }
        try check("width", width, 16...4096)
        try check("height", height, 16...4096)
        try check("frame rate", fps, 1...60)
        try check("video bitrate (kbit/s)", videoKbps, 30...20_000)
        guard width % 2 == 0, height % 2 == 0 else {
            throw CallBenchError.unexpected("browser call page: \(width)x\(height) is not an even size (4:2:0 video)")
        }
        self.width = width
        self.height = height
        self.fps = fps
        self.videoKbps = videoKbps
    }

    /// The browser window that shows both videos whole, with room for the tab strip, toolbar and an info bar.
    var windowSize: (width: Int, height: Int) { (2 * width + 40, height + 200) }

    /// The whole page. Only numbers checked in `init` are put into it.
    var html: String {
        """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>Parley call benchmark</title>
        <style>
        body { margin: 0; background: #000; overflow: hidden; display: flex; }
        video { width: \(width)px; height: \(height)px; flex: none; }
        </style></head>
        <body><video id="a" autoplay playsinline></video><video id="b" autoplay playsinline></video>
        <script>
        const KBPS = \(videoKbps), WIDTH = \(width), HEIGHT = \(height), FPS = \(fps);
        function report(text) { console.log('\(BrowserCallReport.marker)' + text); }
        function fail(error) { report('error=' + encodeURIComponent(String((error && error.stack) || error))); }
        window.onerror = (message) => fail(message);
        // VP8 only (and its retransmission stream): what Parley and baresip send.
        function preferVP8(transceiver) {
          transceiver.setCodecPreferences(RTCRtpReceiver.getCapabilities('video').codecs
            .filter((codec) => ['video/vp8', 'video/rtx'].includes(codec.mimeType.toLowerCase())));
        }
        const shown = [0, 0];
        async function main() {
          const camera = await navigator.mediaDevices.getUserMedia({
            audio: true, video: { width: WIDTH, height: HEIGHT, frameRate: FPS } });
          const peers = [new RTCPeerConnection(), new RTCPeerConnection()];
          const videos = [document.getElementById('a'), document.getElementById('b')];
          peers.forEach((peer, index) => {
            const other = peers[1 - index];
            peer.onicecandidate = (event) => {
              if (event.candidate) other.addIceCandidate(event.candidate).catch(fail);
            };
            const incoming = new MediaStream();
            peer.ontrack = (event) => { incoming.addTrack(event.track); videos[index].srcObject = incoming; };
          });
          // Frames each element has put on screen (requestVideoFrameCallback's running count).
          videos.forEach((video, index) => {
            const count = (now, frame) => {
              shown[index] = frame.presentedFrames;
              video.requestVideoFrameCallback(count);
            };
            video.requestVideoFrameCallback(count);
          });
          for (const track of camera.getTracks()) peers[0].addTransceiver(track, { direction: 'sendrecv' });
          peers[0].getTransceivers().filter((t) => t.receiver.track.kind === 'video').forEach(preferVP8);
          await peers[0].setLocalDescription(await peers[0].createOffer());
          await peers[1].setRemoteDescription(peers[0].localDescription);
          for (const transceiver of peers[1].getTransceivers()) {
            const kind = transceiver.receiver.track.kind;
            await transceiver.sender.replaceTrack(camera.getTracks().find((t) => t.kind === kind));
            transceiver.direction = 'sendrecv';
            if (kind === 'video') preferVP8(transceiver);
          }
          await peers[1].setLocalDescription(await peers[1].createAnswer());
          await peers[0].setRemoteDescription(peers[1].localDescription);
          // The call's bitrate, and no shrinking of the picture when the CPU is busy: the same work as the others.
          for (const peer of peers) {
            for (const sender of peer.getSenders()) {
              if (!sender.track || sender.track.kind !== 'video') continue;
              const parameters = sender.getParameters();
              parameters.encodings[0].maxBitrate = KBPS * 1000;
              parameters.degradationPreference = 'maintain-resolution';
              await sender.setParameters(parameters);
            }
          }
          setInterval(async () => {
            const fields = { sent: [], received: [], decoded: [], size: [], codec: [] };
            for (const peer of peers) {
              const stats = await peer.getStats();
              const codecs = {};
              let sent = 0, received = 0, decoded = 0, size = '0x0', codec = 'none';
              stats.forEach((s) => { if (s.type === 'codec') codecs[s.id] = s.mimeType; });
              stats.forEach((s) => {
                if (s.type === 'outbound-rtp' && s.kind === 'video') sent += s.bytesSent;
                if (s.type === 'inbound-rtp' && s.kind === 'video') {
                  received += s.bytesReceived;
                  decoded += s.framesDecoded || 0;
                  size = (s.frameWidth || 0) + 'x' + (s.frameHeight || 0);
                  codec = (codecs[s.codecId] || 'none').replace(/^video\\//i, '');
                }
              });
              fields.sent.push(sent); fields.received.push(received); fields.decoded.push(decoded);
              fields.size.push(size); fields.codec.push(codec);
            }
            report('time=' + Math.round(performance.timeOrigin + performance.now()) + ' sent=' + fields.sent
              + ' received=' + fields.received + ' decoded=' + fields.decoded + ' shown=' + shown
              + ' size=' + fields.size + ' codec=' + fields.codec);
          }, 1000);
        }
        main().catch(fail);
        </script></body></html>

        """
    }
}

/// One `PARLEYBENCH` line of the call page: running totals of both sides at one instant. Side 0 is the first
/// peer connection (the offerer), side 1 the answerer; "received" and "decoded" are what that side got.
struct BrowserCallReport: Equatable {
    static let marker = "PARLEYBENCH "

    /// Milliseconds since the Unix epoch (the page's clock).
    var time: Int64
    /// Video payload bytes each side sent (`outbound-rtp.bytesSent`).
    var sent: [Int]
    /// Video payload bytes each side received.
    var received: [Int]
    /// Video frames each side decoded.
    var decoded: [Int]
    /// Frames each side's `<video>` element presented.
    var shown: [Int]
    /// Size of the decoded picture on each side, "640x480".
    var size: [String]
    /// Codec each side receives ("VP8").
    var codec: [String]

    /// The report in `line`, nil when the line is not one (Chromium logs plenty of other lines). Throws on a
    /// report that is malformed, and on the page's own error reports (with the page's message).
    static func parse(line: some StringProtocol) throws -> BrowserCallReport? {
        guard let start = line.range(of: marker) else { return nil }
        // Chromium quotes the console message: `"PARLEYBENCH …", source: file:///… (12)`.
        let body = line[start.upperBound...].prefix { $0 != "\"" }
        if body.hasPrefix("error=") {
            let message = String(body.dropFirst(6))
            throw CallBenchError.unexpected(
                "the browser call page failed: \(message.removingPercentEncoding ?? message)")
        }
        var fields: [String: String] = [:]
        for pair in body.split(separator: " ", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw CallBenchError.unexpected("browser call report: \"\(pair)\" is not NAME=VALUE in \"\(body)\"")
            }
            let name = String(pair[..<equals])
            guard fields[name] == nil else {
                throw CallBenchError.unexpected("browser call report: \(name) given twice in \"\(body)\"")
            }
            fields[name] = String(pair[pair.index(after: equals)...])
        }
        func value(_ name: String) throws -> String {
            guard let value = fields[name] else {
                throw CallBenchError.unexpected("browser call report: no \(name)= in \"\(body)\"")
            }
            return value
        }
        func pair(_ name: String) throws -> [String] {
            let parts = try value(name).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty }) else {
                throw CallBenchError.unexpected(
                    "browser call report: \(name)= needs two values (one per side), got \"\(fields[name] ?? "")\"")
            }
            return parts
        }
        func counts(_ name: String) throws -> [Int] {
            try pair(name).map { text in
                guard let number = Int(text), number >= 0 else {
                    throw CallBenchError.unexpected(
                        "browser call report: \(name)= holds \"\(text)\", not a count")
                }
                return number
            }
        }
        guard let time = Int64(try value("time")), time > 0 else {
            throw CallBenchError.unexpected(
                "browser call report: time=\(fields["time"] ?? "") is not a positive number")
        }
        let size = try pair("size")
        for text in size {
            let sides = text.split(separator: "x", omittingEmptySubsequences: false)
            guard sides.count == 2, sides.allSatisfy({ Int($0).map { $0 >= 0 } ?? false }) else {
                throw CallBenchError.unexpected("browser call report: size \"\(text)\" is not WIDTHxHEIGHT")
            }
        }
        return BrowserCallReport(
            time: time, sent: try counts("sent"), received: try counts("received"), decoded: try counts("decoded"),
            shown: try counts("shown"), size: size, codec: try pair("codec"))
    }

    /// Every report in Chromium's output, oldest first.
    static func all(in output: String) throws -> [BrowserCallReport] {
        try output.split(separator: "\n").compactMap { try parse(line: $0) }
    }

    /// Per-second rates of each side between `earlier` and this report.
    func rates(since earlier: BrowserCallReport) -> (sentKbps: [Double], decoded: [Double], shown: [Double]) {
        let seconds = max(0.001, Double(time - earlier.time) / 1000)
        func rate(_ now: [Int], _ then: [Int], scale: Double = 1) -> [Double] {
            zip(now, then).map { Double($0 - $1) * scale / seconds }
        }
        return (rate(sent, earlier.sent, scale: 8.0 / 1000), rate(decoded, earlier.decoded), rate(shown, earlier.shown))
    }
}

extension CallBench {
    /// One 1:1 call in one Chromium tab (both sides in one page) under Xvfb.
    struct BrowserResult {
        /// Every Chromium process together (browser, zygotes, renderers, GPU, network, audio, capture, crash
        /// handlers).
        var tab: FamilyCPUWindow.Figures
        /// The X server Chromium paints into.
        var display: ProcessFigures
        /// Both sides' traffic together (one set of sockets in Chromium's network process).
        var wire: WireTraffic.Figures?
        /// Frames each side decoded and its `<video>` element presented, per second.
        var decodedPerSecond: [Double]
        var shownPerSecond: [Double]
        /// Decoded picture sizes and codecs at the end of the window.
        var sizes: [String]
        var codecs: [String]
        var captureProblem: String?

        /// One side's share: everything ÷ 2.
        var side: SideFigures {
            SideFigures(
                cpuPercent: tab.cpuPercent / 2, withDisplayPercent: (tab.cpuPercent + display.cpuPercent) / 2,
                peakMiB: tab.peakMiBSum,
                wire: wire.map {
                    WireTraffic.Figures(
                        videoKbps: $0.videoKbps / 2, audioKbps: $0.audioKbps / 2, totalKbps: $0.totalKbps / 2,
                        framesSentPerSecond: $0.framesSentPerSecond / 2,
                        framesArrivingPerSecond: $0.framesArrivingPerSecond / 2)
                },
                shownPerSecond: mean(shownPerSecond), redrawsPerSecond: nil)
        }
    }

    /// The Chromium flags of the benchmark besides the page: fake devices fed from the call's files, no prompts,
    /// autoplay, logging to standard error (where the page's reports go), a fresh profile, a window that shows both
    /// videos. `--no-sandbox` only as root, where Chromium refuses to start without it.
    static func chromiumArguments(
        page: BrowserCallPage, pagePath: String, profile: String, media: BenchMedia,
        asRoot: Bool
    ) -> [String] {
        let window = page.windowSize
        return (asRoot ? ["--no-sandbox"] : []) + [
            "--no-first-run", "--no-default-browser-check", "--user-data-dir=\(profile)",
            "--autoplay-policy=no-user-gesture-required", "--use-fake-ui-for-media-stream",
            "--use-fake-device-for-media-stream", "--use-file-for-fake-video-capture=\(media.video)",
            "--use-file-for-fake-audio-capture=\(media.loopedVoice)", "--enable-logging=stderr", "--v=0",
            "--window-position=0,0", "--window-size=\(window.width),\(window.height)",
            "file://" + pagePath,
        ]
    }

    /// A 1:1 call in one Chromium tab painting into Xvfb, measured over `settings.pairSeconds`.
    static func chromiumPair(_ settings: Settings, tools: Tools, media: BenchMedia, directory: String) throws
        -> BrowserResult
    {
        guard let chromium = tools.chromium else { throw CallBenchError.missingTool("chromium", package: "chromium") }
        let page = try BrowserCallPage(width: width, height: height, fps: fps, videoKbps: videoKbps)
        let pagePath = directory + "/browser-call.html"
        guard FileManager.default.createFile(atPath: pagePath, contents: Data(page.html.utf8)) else {
            throw CallBenchError.unexpected("cannot write the browser call page \(pagePath)")
        }
        let profile = directory + "/chromium-profile-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let display = try VirtualDisplay(xvfb: tools.xvfb, directory: directory)
        defer { display.stop() }
        // HOME and XDG folders inside the profile: Chromium's crash handler keeps its database under HOME, and
        // nothing of the run is left in the user's own folders.
        let environment = [
            "DISPLAY=\(display.name)", "HOME=\(profile)", "XDG_CONFIG_HOME=\(profile)/.config",
            "XDG_CACHE_HOME=\(profile)/.cache",
        ]
        let arguments = chromiumArguments(
            page: page, pagePath: pagePath, profile: profile, media: media, asRoot: geteuid() == 0)
        let browser = try BackgroundProcess(
            tools.env, environment + [chromium] + arguments, outputPath: directory + "/chromium.log")
        let family = ProcessFamily(root: browser.pid, marker: profile)
        var everyone = Set<ProcessFamily.Member>()
        defer {
            everyone.formUnion(family.members())
            browser.stop(grace: 5)
            ProcessFamily.kill(everyone)
        }
        func reports() throws -> [BrowserCallReport] {
            if let status = browser.waitForExit(seconds: 0) {
                throw CallBenchError.unexpected(
                    "Chromium exited (status \(status)) during the call: \(browser.output.suffix(800))")
            }
            return try BrowserCallReport.all(in: browser.output)
        }
        // Going: both sides decode VP8 and each sends near the call's rate (WebRTC's bandwidth estimate starts
        // low and climbs), judged over the last two reports.
        var last = "no report from the page yet"
        var failure: (any Error)?
        do {
            try waitUntil(seconds: 45, "the Chromium tab's call at \(videoKbps) kbit/s each way") {
                let seen: [BrowserCallReport]
                do {
                    seen = try reports()
                } catch {
                    failure = error
                    return true
                }
                guard seen.count >= 3 else { return false }
                let now = seen[seen.count - 1]
                let before = seen[seen.count - 3]
                let rates = now.rates(since: before)
                last =
                    "sent \(rates.sentKbps.map { formatted($0, decimals: 0) }) kbit/s, decoded "
                    + "\(rates.decoded.map { formatted($0, decimals: 0) }) fps, codecs \(now.codec)"
                return now.codec.allSatisfy { $0.uppercased() == "VP8" } && rates.decoded.allSatisfy { $0 > 0 }
                    && rates.sentKbps.allSatisfy { $0 >= 0.8 * Double(videoKbps) }
            }
        } catch CallBenchError.timedOut(let what) {
            throw CallBenchError.timedOut("\(what); last seen: \(last)")
        }
        if let failure { throw failure }
        Thread.sleep(forTimeInterval: warmUp)

        let members = family.members()
        everyone.formUnion(members)
        var capture: PacketCapture?
        var captureProblem = tools.dumpcapProblem
        let ports = members.reduce(into: Set<UInt16>()) { $0.formUnion(ProcessProbe.udpPorts($1.pid)) }
        if let dumpcap = tools.dumpcap, !ports.isEmpty {
            do {
                capture = try PacketCapture(
                    dumpcap: dumpcap, filter: ports.sorted().map { "udp port \($0)" }.joined(separator: " or "),
                    path: directory + "/chromium.pcap", directory: directory)
            } catch {
                captureProblem = "\(error)"
            }
        }
        let before = try reports().last
        let window = FamilyCPUWindow(family)
        let xvfbWindow = CPUWindow([display.pid])
        let start = WallClock.seconds
        Thread.sleep(forTimeInterval: settings.pairSeconds)
        let end = WallClock.seconds
        let tab = window.finish()
        let xvfb = xvfbWindow.finish()[display.pid] ?? ProcessFigures(cpuPercent: .nan, peakMiB: .nan)
        everyone.formUnion(family.members())
        // The page reports once a second: wait for the one after the window.
        Thread.sleep(forTimeInterval: 1.1)
        let after = try reports().last
        let traffic = WireTraffic.stopping(capture, window: start...end, problem: &captureProblem)
        guard let before, let after, after.time > before.time else {
            throw CallBenchError.unexpected("the Chromium tab stopped reporting during the window")
        }
        let rates = after.rates(since: before)
        // Flowing means about the camera's frame rate decoded on both sides, not just a frame now and then.
        guard rates.decoded.allSatisfy({ $0 >= 0.8 * Double(fps) }) else {
            throw CallBenchError.unexpected(
                "the Chromium tab's call decoded \(rates.decoded.map { formatted($0) }) frames/s per side over the "
                    + "window, expected about \(fps) (sizes \(after.size), codecs \(after.codec))")
        }
        return BrowserResult(
            tab: tab, display: xvfb, wire: traffic?.figures(forPorts: ports), decodedPerSecond: rates.decoded,
            shownPerSecond: rates.shown, sizes: after.size, codecs: after.codec, captureProblem: captureProblem)
    }
}
