import Foundation
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

extension CallBench {
    // MARK: - baresip 1:1

    /// Where baresip's decoded picture goes.
    enum BaresipDisplay {
        /// `fakevideo`: handed to a display that drops it (the cost of everything but painting).
        case discarded
        /// `x11`: painted into a window on an Xvfb of its own (a desktop user's baresip).
        case x11Window

        var module: String {
            switch self {
            case .discarded: "fakevideo"
            case .x11Window: "x11"
            }
        }
    }

    /// A baresip configuration doing what Parley's call does: the same Y4M and WAV files as sources, VP8 at
    /// 640x480@30 and Opus 32 kbit/s (mono, VOIP, in-band FEC, 10 % loss, complexity `opusComplexity` like
    /// Parley's) over RTP on 127.0.0.1, the picture decoded and handed to `displayModule` (`fakevideo` discards it,
    /// `x11` paints it into a window), received audio decoded into a bridge nobody listens to. A console on UDP
    /// answers `/video_debug`. Throws a message naming a setting baresip would not take.
    static func baresipConfig(
        sipPort: UInt16, consolePort: UInt16, rtpPorts: ClosedRange<Int>, media: BenchMedia,
        displayModule: String = "fakevideo"
    ) throws -> String {
        guard ["fakevideo", "x11"].contains(displayModule) else {
            throw CallBenchError.unexpected(
                "baresip config: display module \"\(displayModule)\" is not one of fakevideo, x11")
        }
        guard sipPort > 0, consolePort > 0, sipPort != consolePort else {
            throw CallBenchError.unexpected(
                "baresip config: SIP port \(sipPort) and console port \(consolePort) must be distinct and non-zero")
        }
        guard rtpPorts.lowerBound >= 1024, rtpPorts.upperBound <= 65535, rtpPorts.count >= 4 else {
            throw CallBenchError.unexpected(
                "baresip config: RTP ports \(rtpPorts.lowerBound)-\(rtpPorts.upperBound) must be at least 4 ports "
                    + "within 1024-65535")
        }
        guard (0...10).contains(opusComplexity) else {
            throw CallBenchError.unexpected("baresip config: opus_complexity \(opusComplexity) is outside 0…10")
        }
        for path in [media.video, media.longVoice] where path.contains(where: { $0.isWhitespace || $0 == "," }) {
            // baresip splits its config values at white space, and module,device at the comma.
            throw CallBenchError.unexpected("baresip config: the media path \(path) has a space or comma in it")
        }
        return """
            poll_method\t\tepoll
            sip_listen\t\t127.0.0.1:\(sipPort)
            net_interface\t\t127.0.0.1
            call_local_timeout\t120
            call_max_calls\t\t4
            audio_player\t\taubridge,nil
            audio_source\t\taufile,\(media.longVoice)
            audio_alert\t\taubridge,nil
            ausrc_srate\t\t48000
            auplay_srate\t\t48000
            ausrc_channels\t\t1
            auplay_channels\t\t1
            audio_level\t\tno
            video_source\t\tavformat,\(media.video)
            video_display\t\t\(displayModule),nil
            video_size\t\t\(width)x\(height)
            video_bitrate\t\t\(baresipVideoBitrateSetting)
            video_fps\t\t\(fps).00
            video_fullscreen\tno
            videnc_format\t\tyuv420p
            rtp_ports\t\t\(rtpPorts.lowerBound)-\(rtpPorts.upperBound)
            rtcp_mux\t\tyes
            jitter_buffer_delay\t5-10
            rtp_stats\t\tno
            statmode_default\toff
            module_path\t\t\(baresipModules)
            module\t\t\tcons.so
            module\t\t\topus.so
            module\t\t\tvp8.so
            module\t\t\tavformat.so
            module\t\t\t\(displayModule).so
            module\t\t\taufile.so
            module\t\t\taubridge.so
            module_tmp\t\taccount.so
            module_app\t\tmenu.so
            cons_listen\t\t127.0.0.1:\(consolePort)
            opus_bitrate\t\t32000
            opus_stereo\t\tno
            opus_sprop_stereo\tno
            opus_inbandfec\t\tyes
            opus_packet_loss\t10
            opus_application\tvoip
            opus_complexity\t\t\(opusComplexity)

            """
    }

    /// A 1:1 baresip call, the picture discarded or painted into X11 windows (each client on its own Xvfb, whose
    /// CPU its result carries as `display`), measured over `settings.pairSeconds`.
    static func baresipPair(
        _ settings: Settings, display: BaresipDisplay = .discarded, tools: Tools,
        media: BenchMedia, directory: String
    ) throws -> PairResult {
        // One X server per client, as two desktops would be: baresip's x11 windows open at the top left corner
        // and there is no window manager to move them, so on one shared screen one window would hide the other
        // and the X server would skip painting it.
        var screens: [VirtualDisplay] = []
        defer { screens.forEach { $0.stop() } }
        var launchers = [[tools.baresip], [tools.baresip]]
        if case .x11Window = display {
            for index in launchers.indices {
                let started = try VirtualDisplay(xvfb: tools.xvfb, directory: directory)
                screens.append(started)
                launchers[index] = [tools.env, "DISPLAY=\(started.name)", tools.baresip]
            }
        }
        let ports = freePorts(4)
        let (sipA, sipB, consoleA, consoleB) = (ports[0], ports[1], ports[2], ports[3])
        var base = 20_000
        for _ in 0..<50 {
            let candidate = 20_000 + 40 * Int.random(in: 0..<250)
            if udpPortsFree(from: UInt16(candidate), count: 40) {
                base = candidate
                break
            }
        }
        var children: [BackgroundProcess] = []
        defer { children.forEach { $0.stop() } }
        var capture: PacketCapture?
        var captureProblem = tools.dumpcapProblem
        if let dumpcap = tools.dumpcap {
            do {
                capture = try PacketCapture(
                    dumpcap: dumpcap, filter: "udp portrange \(base)-\(base + 39)",
                    path: directory + "/baresip.pcap", directory: directory)
            } catch {
                captureProblem = "\(error)"
            }
        }
        var folders: [String] = []
        for (index, (name, sip, console)) in [("alice", sipA, consoleA), ("bob", sipB, consoleB)].enumerated() {
            let folder = "\(directory)/baresip-\(name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let config = try baresipConfig(
                sipPort: sip, consolePort: console, rtpPorts: (base + 20 * index)...(base + 20 * index + 19),
                media: media, displayModule: display.module)
            let answer = name == "bob" ? ";answermode=auto" : ""
            let account = "<sip:\(name)@127.0.0.1:\(sip)>;regint=0\(answer);audio_codecs=opus;video_codecs=vp8\n"
            guard FileManager.default.createFile(atPath: folder + "/config", contents: Data(config.utf8)),
                FileManager.default.createFile(atPath: folder + "/accounts", contents: Data(account.utf8))
            else { throw CallBenchError.unexpected("cannot write baresip's configuration in \(folder)") }
            folders.append(folder)
        }
        // Through env(1) when DISPLAY is set: env execs baresip, so the pid measured is baresip's own.
        let bob = try BackgroundProcess(
            launchers[1][0], Array(launchers[1].dropFirst()) + ["-f", folders[1]],
            outputPath: directory + "/baresip-bob.log")
        children.append(bob)
        guard bob.waitForOutput(seconds: 15, { $0.contains("baresip is ready") }) else {
            throw CallBenchError.timedOut("baresip (bob) did not start: \(bob.output.suffix(600))")
        }
        let alice = try BackgroundProcess(
            launchers[0][0],
            Array(launchers[0].dropFirst()) + ["-f", folders[0], "-e", "/dial sip:bob@127.0.0.1:\(sipB)"],
            outputPath: directory + "/baresip-alice.log")
        children.append(alice)
        try waitUntil(seconds: 30, "both baresip clients receiving video") {
            children.allSatisfy { $0.output.contains("video: receiving with resolution") }
        }
        Thread.sleep(forTimeInterval: warmUp)

        let clients = [alice, bob]
        let consoles = [consoleA, consoleB]
        let udp = clients.map { ProcessProbe.udpPorts($0.pid) }
        let shownBefore = consoles.map { displayedFrames(console: $0) }
        let window = CPUWindow(clients.map(\.pid) + screens.map(\.pid))
        let start = WallClock.seconds
        Thread.sleep(forTimeInterval: settings.pairSeconds)
        let end = WallClock.seconds
        let figures = window.finish()
        let shownAfter = consoles.map { displayedFrames(console: $0) }

        let traffic = WireTraffic.stopping(capture, window: start...end, problem: &captureProblem)
        var results: [ClientResult] = []
        for (index, client) in clients.enumerated() {
            var shown: Double?
            if let before = shownBefore[index], let after = shownAfter[index] {
                shown = Double(after.frames - before.frames) / max(0.001, after.time - before.time)
            }
            results.append(
                ClientResult(
                    process: figures[client.pid] ?? ProcessFigures(cpuPercent: .nan, peakMiB: .nan),
                    wire: traffic?.figures(forPorts: udp[index]), shownPerSecond: shown,
                    display: screens.indices.contains(index) ? figures[screens[index].pid] : nil))
        }
        return PairResult(clients: results, relay: nil, captureProblem: captureProblem)
    }

    /// Frames baresip has handed to its display so far ("vidisp: fakevideo 640 x 480 frames=N", or x11, in
    /// `/video_debug`)..
    static func displayedFrames(console: UInt16) -> (frames: Int, time: Double)? {
        let time = WallClock.seconds
        let answer = baresipConsole(port: console, command: "/video_debug")
        guard let line = answer.split(separator: "\n").first(where: { $0.contains("vidisp:") }),
            let range = line.range(of: "frames="), let frames = Int(line[range.upperBound...].prefix { $0.isNumber })
        else { return nil }
        return (frames, time)
    }
}
