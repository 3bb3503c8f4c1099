import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The call of `parley-bench browser` (issue 53): one `parley serve --insecure` process, 2 headless Chromiums on the
/// relay's own page and 2 `parley bot`s, everyone sending 640x360 at 30 fps and decoding everyone; before it the same
/// call with 4 bots, so the relay's CPU per browser member (DTLS, SRTP, the page's RTCP) can be set against its CPU
/// per native member, over windows of the same length after the same warm-up.
enum BrowserCallBench {
    /// From everyone decoding everyone to the start of the window (keyframes, rate control, the pages' layer
    /// switches).
    static let warmUp: Duration = .seconds(5)
    /// The measured window of each call.
    static let window: Duration = .seconds(30)
    /// Chromium's window, CSS pixels: the page's grid of 4 (its self view and 3 peers) then draws every peer in a
    /// tile larger than 640x360, so the relay sends it every sender's full layer and it is drawn at least that size.
    static let browserWindow = (width: 1600, height: 1000)
    /// The bots' video bitrate: the page's cap on its full layer (room.js, `maxBitrate` of rid f), so a native and a
    /// browser member send about as much (Parley's 640x360 profile sends 600 kbit/s, half of it) and the relay's CPU
    /// per member kind compares what it does for each kind, not how much each sends.
    static let botKbps = 1200
    /// Other processes' CPU (% of a core) above which a call's window counts as shared with someone else's work: the
    /// call is measured again, up to `attempts` times in all, and the window with the least of it is kept.
    static let quietLimit = 10.0
    static let attempts = 2
    static let fpsGoal = 25.0
    static let ratioGoal = 1.3
    static let room = "browsercall"

    enum Kind {
        case bot, browser
    }

    /// What one receiver decoded of one sender over the window.
    struct Decoded {
        var fps: Double
        /// The decoded picture (pages: the `<video>`'s size), nil where the receiver does not say.
        var picture: String?
        /// The tile the receiver draws the sender in (pages), nil for a bot.
        var tile: String?
        /// Video received, kbit/s and packets/s (bots), nil where the receiver does not say.
        var kbps: Double?
        var packetsPerSecond: Double?
        /// What the relay holds the sender to for this receiver's downlink, nil when nothing.
        var held: String?
    }

    struct Receiver {
        var name: String
        var kind: Kind
        /// By sender's name.
        var of: [String: Decoded]
    }

    /// One call measured.
    struct CallResult {
        /// Senders in the order of the table's columns.
        var names: [String]
        var receivers: [Receiver]
        var relay: CallBench.ProcessFigures
        /// RTP and RTCP packets the relay forwarded a second over the window, one per destination.
        var forwarded: Double
        /// Time the relay's threads were runnable but waited for a core (another process had it), % of the window.
        var relayWaiting: Double
        var bots: [CallBench.ProcessFigures]
        /// Every process of each Chromium together.
        var browsers: [FamilyCPUWindow.Figures]
        /// Every process on the machine but the call's and this benchmark's, together (someone else's work).
        var elsewhere: FamilyCPUWindow.Figures
        /// The whole machine, % of all its cores.
        var machineBusy: Double
        /// Which measurement of this call this is (1 unless other processes shared the machine).
        var attempt = 1
        /// Frames each sender encoded a second, by name (a bot's camera frames encoded over the window; a page's
        /// getStats framesPerSecond of its largest layer at the end).
        var encoded: [String: Double]
        /// Camera frames a second each bot dropped because the one before was still being encoded, by name.
        var droppedBusy: [String: Double]
        /// The layers the pages' camera was sent in at the end ("f on, h off"), one entry per page.
        var pageLayers: [String]
        /// The layers the bots encoded at the end, largest first, one entry per bot.
        var botLayers: [[Bool]]

        /// The worst fps of any receiver of any sender, with who.
        var worst: (fps: Double, label: String)? {
            receivers.flatMap { receiver in
                receiver.of.map { sender, decoded in (decoded.fps, "\(receiver.name) of \(sender)") }
            }.min { $0.0 < $1.0 }
        }

        /// Video each sender of `kind` sent through the relay, as the bots received it: kbit/s and packets/s
        /// (means over every bot that received it).
        func sent(by kind: Kind) -> (kbps: Double, packets: Double)? {
            let senders = Set(receivers.filter { $0.kind == kind }.map(\.name))
            let seen = receivers.filter { $0.kind == .bot }.flatMap { bot in
                bot.of.filter { senders.contains($0.key) }.compactMap { _, decoded -> (Double, Double)? in
                    guard let kbps = decoded.kbps, let packets = decoded.packetsPerSecond else { return nil }
                    return (kbps, packets)
                }
            }
            guard !seen.isEmpty else { return nil }
            let count = Double(seen.count)
            return (seen.map(\.0).reduce(0, +) / count, seen.map(\.1).reduce(0, +) / count)
        }
    }

    /// Runs the 4-bot call, then the call with 2 Chromiums; returns the decode table and the relay's CPU table.
    static func run(parley: String, log: @escaping @Sendable (String) -> Void) async throws -> [BenchTable] {
        if let missing = DevToolsPage.missing { throw BenchFailure(missing) }
        let directory = try CallBench.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let media = try CallBench.BenchMedia.prepare(videoSeconds: 10, width: 640, height: 360, log: log)
        log("browser call (a): 4 parley bots, \(Int(seconds(window))) s window")
        let natives = try await quietCall(browsers: 0, parley: parley, media: media, directory: directory, log: log)
        log("browser call (b): 2 parley bots and 2 headless Chromiums, \(Int(seconds(window))) s window")
        let mixed = try await quietCall(browsers: 2, parley: parley, media: media, directory: directory, log: log)
        return [decodeTable(mixed, natives: natives), cpuTable(natives: natives, mixed: mixed)]
    }

    /// `call`, started on a quiet machine and measured again (up to `attempts` in all) while other processes used
    /// more than `quietLimit` of a core in its window; the measurement with the least of them.
    static func quietCall(
        browsers: Int, parley: String, media: CallBench.BenchMedia, directory: String,
        log: @Sendable (String) -> Void
    ) async throws -> CallResult {
        var kept: CallResult?
        for attempt in 1...attempts {
            try await waitForQuietMachine(log: log)
            var result = try await call(
                browsers: browsers, parley: parley, media: media, directory: directory, log: log)
            result.attempt = attempt
            if kept.map({ result.elsewhere.cpuPercent < $0.elsewhere.cpuPercent }) ?? true { kept = result }
            guard result.elsewhere.cpuPercent > quietLimit else { break }
            log(
                "  other processes used \(formatted(result.elsewhere.cpuPercent)) % of a core in that window"
                    + (attempt < attempts ? ": measuring this call again" : ": keeping the quietest of \(attempts)"))
        }
        guard let kept else { throw BenchFailure("browser call: no measurement") }
        return kept
    }

    /// Waits (suspended) until the whole machine was busy for at most `quietLimit` % of a core over a second, for up
    /// to 30 s; then goes on anyway (the table says what else ran).
    static func waitForQuietMachine(log: @Sendable (String) -> Void) async throws {
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let deadline = ContinuousClock.now + .seconds(30)
        var said = false
        while ContinuousClock.now < deadline {
            let start = MachineCPU.now()
            try await Task.sleep(for: .seconds(1))
            let busy = MachineCPU.now().busyPercent(since: start) * cores
            if busy <= quietLimit { return }
            if !said {
                log("  the machine is busy (\(formatted(busy)) % of a core): waiting up to 30 s for it to calm")
            }
            said = true
        }
        log("  the machine stayed busy for 30 s: measuring anyway")
    }

    // MARK: - One call

    /// The processes of one call, stopped together.
    struct CallProcesses {
        let relay: BackgroundProcess
        var bots: [BackgroundProcess] = []
        var pages: [DevToolsPage] = []
        /// Every process of the Chromiums seen so far (helpers may outlive their browser).
        var chromiumProcesses: Set<ProcessFamily.Member> = []

        /// Each Chromium's processes: its descendants and those naming its profile folder.
        var families: [ProcessFamily] { pages.map { ProcessFamily(root: $0.process.pid, marker: $0.folder) } }

        /// The call's processes now, and this benchmark's own.
        func everyProcess() -> Set<ProcessFamily.Member> {
            var processes = families.reduce(into: Set<ProcessFamily.Member>()) { $0.formUnion($1.members()) }
            for pid in [relay.pid, getpid()] + bots.map(\.pid) {
                if let stat = ProcessFamily.stat(pid) {
                    processes.insert(ProcessFamily.Member(pid: pid, startTicks: stat.startTicks))
                }
            }
            return processes
        }

        /// Adds the Chromiums' processes now to those to stop.
        mutating func noteChromiumProcesses() {
            for family in families { chromiumProcesses.formUnion(family.members()) }
        }

        /// SIGTERM to everything, a wait (suspended) for it to exit, then SIGKILL to what did not and to any
        /// Chromium helper that outlived its browser.
        mutating func stop() async {
            noteChromiumProcesses()
            let processes = bots + pages.map(\.process)
            for process in processes { process.signal(SIGTERM) }
            for process in processes { _ = await process.exitStatus(within: .seconds(5)) }
            for page in pages { page.stop() }
            for bot in bots { bot.stop(grace: 0) }
            ProcessFamily.kill(chromiumProcesses)
            relay.signal(SIGTERM)
            _ = await relay.exitStatus(within: .seconds(5))
            relay.stop(grace: 0)
        }
    }

    /// One call of 4 − `browsers` bots and `browsers` Chromiums on a relay of its own, measured over `window`.
    static func call(
        browsers: Int, parley: String, media: CallBench.BenchMedia, directory: String,
        log: @Sendable (String) -> Void
    ) async throws -> CallResult {
        let botNames = (1...(4 - browsers)).map { "bot\($0)" }
        let pageNames = (0..<browsers).map { "chromium\($0 + 1)" }
        let (relay, port, _) = try await CallBench.launchRelay(
            parley: parley, directory: directory, extraArguments: ["--insecure", "--admin", "127.0.0.1:0"])
        var call = CallProcesses(relay: relay)
        do {
            let adminPort = try await adminPort(of: relay)
            let statsPaths = botNames.map { "\(directory)/\(room)-\(browsers)-\($0).json" }
            for (name, stats) in zip(botNames, statsPaths) {
                call.bots.append(
                    try BackgroundProcess(
                        parley,
                        [
                            "bot", room, "--server", "127.0.0.1:\(port)", "--insecure", "--name", name, "--profile",
                            "640x360", "--fps", "30", "--bitrate", "\(botKbps)", "--video", media.video,
                            "--audio", media.loopedVoice, "--log-level", "warning", "--stats-file", stats,
                        ], outputPath: "\(directory)/\(room)-\(browsers)-\(name).log"))
            }
            for name in pageNames {
                call.pages.append(
                    try await DevToolsPage.open(
                        "http://127.0.0.1:\(port)/\(room)?name=\(name)&join=1", tag: name,
                        arguments: [
                            "--window-size=\(browserWindow.width),\(browserWindow.height)",
                            "--use-file-for-fake-video-capture=\(media.video)",
                            "--use-file-for-fake-audio-capture=\(media.loopedVoice)",
                        ]))
            }
            try await waitForEveryone(bots: Array(zip(botNames, statsPaths)), pages: Array(zip(pageNames, call.pages)))
            // i: the page's figures of its tiles, its own sent frame rate among them.
            for page in call.pages { try await page.press("i") }
            try await Task.sleep(for: warmUp)
            call.noteChromiumProcesses()
            let result = try await measure(
                call, botNames: botNames, statsPaths: statsPaths, pageNames: pageNames, adminPort: adminPort)
            call.noteChromiumProcesses()
            for receiver in result.receivers {
                log(
                    "  \(receiver.name) decodes "
                        + receiver.of.sorted { $0.key < $1.key }.map { "\($0.key) \(formatted($0.value.fps)) fps" }
                        .joined(separator: ", "))
            }
            log("  relay CPU \(formatted(result.relay.cpuPercent, decimals: 2)) % of a core")
            await call.stop()
            return result
        } catch {
            await call.stop()
            throw error
        }
    }

    /// Waits until every bot decodes its 3 peers (its statistics) and every page its 3 members (getStats); throws
    /// what a page reported as an error, or after 45 s who was still waiting for whom.
    static func waitForEveryone(bots: [(name: String, stats: String)], pages: [(name: String, page: DevToolsPage)])
        async throws
    {
        var last = ""
        do {
            try await waitUntil("everyone decoding everyone", timeout: .seconds(45), every: .milliseconds(250)) {
                var waiting: [String] = []
                for (name, path) in bots {
                    let peers = (try? CallStatisticsFile(path: path).read())?.peers ?? []
                    if peers.count < 3 || peers.contains(where: { $0.framesDecoded == 0 }) {
                        waiting.append("\(name) decodes \(peers.filter { $0.framesDecoded > 0 }.map(\.name))")
                    }
                }
                for (name, page) in pages {
                    let view = try? await PageView.read(page)
                    if let errors = view?.errors, !errors.isEmpty {
                        throw BenchFailure("\(name)'s page failed: \(errors.joined(separator: "; "))")
                    }
                    let decoding = view?.frames.values.filter { $0.decoded > 0 }.count ?? 0
                    if decoding < 3 { waiting.append("\(name) decodes \(decoding) members") }
                }
                last = waiting.joined(separator: ", ")
                return waiting.isEmpty
            }
        } catch let timeout as WaitTimeout {
            throw BenchFailure("browser call: \(timeout); still waiting: \(last)")
        }
    }

    /// The call's figures over `window`: the relay's and the bots' CPU from /proc, the Chromiums' families', the
    /// relay's forwarded packets from `/metrics`, and what each member decoded and sent by its own account.
    static func measure(
        _ call: CallProcesses, botNames: [String], statsPaths: [String], pageNames: [String], adminPort: Int
    ) async throws -> CallResult {
        let botsBefore = try statsPaths.map { try CallStatisticsFile(path: $0).read() }
        var pagesBefore: [PageView] = []
        for page in call.pages { pagesBefore.append(try await PageView.read(page)) }
        let forwardedBefore = try await packetsForwarded(adminPort: adminPort)
        let machine = MachineCPU.now()
        let waitBefore = processSchedulerSeconds(pid: call.relay.pid).wait
        let processes = CallBench.CPUWindow([call.relay.pid] + call.bots.map(\.pid))
        let browserWindows = call.families.map { FamilyCPUWindow($0) }
        let elsewhereWindow = FamilyCPUWindow { ProcessFamily.everyProcess().subtracting(call.everyProcess()) }
        try await Task.sleep(for: window)
        let figures = processes.finish()
        let waited = (processSchedulerSeconds(pid: call.relay.pid).wait - waitBefore) / seconds(window) * 100
        let forwarded = (try await packetsForwarded(adminPort: adminPort) - forwardedBefore) / seconds(window)
        let browserFigures = browserWindows.map { $0.finish() }
        let elsewhere = elsewhereWindow.finish()
        let busy = MachineCPU.now().busyPercent(since: machine)
        var pagesAfter: [PageView] = []
        for page in call.pages { pagesAfter.append(try await PageView.read(page)) }
        // The bots write their statistics once a second: wait for the one after the window.
        try await Task.sleep(for: .milliseconds(1_100))
        let botsAfter = try statsPaths.map { try CallStatisticsFile(path: $0).read() }

        var receivers: [Receiver] = []
        var encoded: [String: Double] = [:]
        var droppedBusy: [String: Double] = [:]
        for (index, name) in botNames.enumerated() {
            let (before, after) = (botsBefore[index], botsAfter[index])
            let elapsed = max(0.001, after.time - before.time)
            receivers.append(Receiver(name: name, kind: .bot, of: botDecoded(before: before, after: after)))
            encoded[name] = Double(after.videoFramesCaptured - before.videoFramesCaptured) / elapsed
            droppedBusy[name] = Double(after.videoFramesDroppedBusy - before.videoFramesDroppedBusy) / elapsed
        }
        for (index, name) in pageNames.enumerated() {
            receivers.append(
                Receiver(
                    name: name, kind: .browser, of: try pagesAfter[index].decoded(since: pagesBefore[index], page: name)
                ))
            encoded[name] = pagesAfter[index].sentFPS
        }
        let missing = CallBench.ProcessFigures(cpuPercent: .nan, peakMiB: .nan)
        return CallResult(
            names: botNames + pageNames, receivers: receivers, relay: figures[call.relay.pid] ?? missing,
            forwarded: forwarded, relayWaiting: waited, bots: call.bots.map { figures[$0.pid] ?? missing },
            browsers: browserFigures, elsewhere: elsewhere, machineBusy: busy, encoded: encoded,
            droppedBusy: droppedBusy,
            pageLayers: pagesAfter.map { view in
                view.sending.map { "\($0.rid ?? "?") \($0.active ? "on" : "off")" }.joined(separator: ", ")
            },
            botLayers: botsAfter.map(\.activeVideoLayers))
    }

    /// The port of the relay's `/metrics` (`--admin 127.0.0.1:0`), from the line it prints.
    static func adminPort(of relay: BackgroundProcess) async throws -> Int {
        let marker = "/healthz on http://127.0.0.1:"
        let text = try await relay.output(containing: marker, within: .seconds(15))
        guard let range = text.range(of: marker), let port = Int(text[range.upperBound...].prefix { $0.isNumber })
        else { throw BenchFailure("cannot read the relay's admin port from: \(text)") }
        return port
    }

    /// The relay's `parley_packets_forwarded_total` now.
    static func packetsForwarded(adminPort: Int) async throws -> Double {
        let url = URL(string: "http://127.0.0.1:\(adminPort)/metrics")!
        let (data, _) = try await URLSession.shared.data(from: url)
        let body = String(decoding: data, as: UTF8.self)
        let series = "parley_packets_forwarded_total "
        guard let line = body.split(separator: "\n").first(where: { $0.hasPrefix(series) }),
            let value = Double(line.dropFirst(series.count).trimmingCharacters(in: .whitespaces))
        else { throw BenchFailure("the relay's /metrics has no \(series)count: \(body.prefix(500))") }
        return value
    }

    /// Frames per second (and video kbit/s, packets/s) a bot decoded of each peer between two of its reports.
    static func botDecoded(before: CallStatisticsReport, after: CallStatisticsReport) -> [String: Decoded] {
        let elapsed = max(0.001, after.time - before.time)
        var decoded: [String: Decoded] = [:]
        for peer in after.peers {
            let earlier = before.peers.first { $0.id == peer.id }
            decoded[peer.name] = Decoded(
                fps: Double(peer.framesDecoded - (earlier?.framesDecoded ?? 0)) / elapsed,
                kbps: Double(peer.videoBytes - (earlier?.videoBytes ?? 0)) * 8 / 1_000 / elapsed,
                packetsPerSecond: Double(peer.videoPackets - (earlier?.videoPackets ?? 0)) / elapsed,
                held: peer.heldByDownlink)
        }
        return decoded
    }

    // MARK: - The page

    /// What the relay's page shows and decodes (its `window.parley.snapshot()`), with each tile's size and its
    /// `<video>`'s decoded size from the page itself, and the page's clock.
    struct PageView: Decodable {
        struct Member: Decodable {
            var id: UInt32
            var name: String
        }
        struct Frames: Decodable {
            var decoded: Int
        }
        struct Tile: Decodable {
            var id: UInt32
            var width: Int
            var height: Int
            var videoWidth: Int
            var videoHeight: Int
        }
        struct Encoding: Decodable {
            var rid: String?
            var active: Bool
        }
        var you: UInt32?
        var members: [Member]
        /// Frames decoded per member id (getStats' `framesDecoded`).
        var frames: [String: Frames]
        var tiles: [Tile]
        var sending: [Encoding]
        var errors: [String]
        /// The page's frame rate of its largest layer sent (from its `i` figures), nil while it shows none.
        var sentFPS: Double?
        /// `performance.now()`, milliseconds.
        var now: Double

        static let expression = """
            (async () => {
              const s = await window.parley.snapshot();
              const tiles = [...document.querySelectorAll("#grid .tile")].map((tile) => {
                const video = tile.querySelector("video");
                return { id: Number(tile.id.slice(5)), width: tile.clientWidth, height: tile.clientHeight,
                  videoWidth: video ? video.videoWidth : 0, videoHeight: video ? video.videoHeight : 0 };
              });
              const own = s.info && s.info[s.you];
              const sent = own && /· ([0-9.]+) fps/.exec(own);
              return { you: s.you || null, members: s.members.map((m) => ({ id: m.id, name: m.name || "" })),
                frames: s.frames, tiles, sending: s.sending, errors: s.errors.map(String),
                sentFPS: sent ? Number(sent[1]) : null, now: performance.now() };
            })()
            """

        static func read(_ page: DevToolsPage) async throws -> PageView {
            try await page.evaluate(expression, as: PageView.self)
        }

        /// Frames per second of each peer since `earlier`, by name, with its tile and decoded size now.
        func decoded(since earlier: PageView, page: String) throws -> [String: Decoded] {
            let elapsed = (now - earlier.now) / 1_000
            guard elapsed > 0 else { throw BenchFailure("\(page)'s clock did not move over the window") }
            var decoded: [String: Decoded] = [:]
            for member in members where member.id != you {
                let key = "\(member.id)"
                let tile = tiles.first { $0.id == member.id }
                decoded[member.name] = Decoded(
                    fps: Double((frames[key]?.decoded ?? 0) - (earlier.frames[key]?.decoded ?? 0)) / elapsed,
                    picture: tile.map { "\($0.videoWidth)x\($0.videoHeight)" },
                    tile: tile.map { "\($0.width)x\($0.height)" })
            }
            return decoded
        }
    }
}
