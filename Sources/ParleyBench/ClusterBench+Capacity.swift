import Foundation
import ParleyProcesses
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

extension ClusterBench {
    /// A `parley serve --database` node with a cluster secret (so rooms spread over the nodes) on `port`, once it says
    /// it joined the cluster.
    static func startNode(
        executable: String, id: String, port: Int, url: String, secret: String, folder: String, extra: [String] = []
    ) throws -> BackgroundProcess {
        let node = try BackgroundProcess(
            executable,
            [
                "serve", "--host", "127.0.0.1", "--port", "\(port)", "--insecure", "--log-level", "warning",
                "--state-dir", folder + "/node-" + id, "--database", url, "--node-id", id,
                "--advertise", "127.0.0.1:\(port)", "--cluster-secret-file", secret,
            ] + extra)
        guard node.waitForOutput(containing: "--placement spread", seconds: 30) else {
            node.stop()
            throw FailoverBenchError("node \(id) did not start: \(node.output.suffix(500))")
        }
        return node
    }

    /// Writes a cluster secret (mode 600) into `folder` and returns its path.
    static func writeSecret(in folder: String, name: String) throws -> String {
        let path = folder + "/" + name
        try "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n".write(
            toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// One audience size on one set of nodes.
    struct AudienceStep {
        var nodes: Int
        var viewers: Int
        /// RTP bytes that reached the viewers a second, per viewer, kbit/s.
        var perViewerKbps: Double
        /// The broadcaster's media payload a second, kbit/s (from its statistics file).
        var sentKbps: Double
        /// The `parley serve` processes together, % of one core.
        var relaysCPU: Double
        /// This process (the viewers: their receiving thread, signaling and keep-alives), % of one core.
        var viewersCPU: Double = 0
        /// Why viewers could not all join at this size (the nodes were past what they hold), nil when they did.
        var failure: String? = nil
        /// What reached each viewer against what the broadcaster sent, over the window.
        var ratio: Double { failure == nil && sentKbps > 0 ? perViewerKbps / sentKbps : 0 }
    }

    /// The largest broadcast audience one node holds against three on this machine: a `parley bot` broadcasting
    /// 640x480 at 30 fps, 1 Mbit/s (the call benchmark's equal-work settings, one layer) through node a, and light
    /// viewers in this process (a WebSocket joined as audience and a UDP socket each, counting what arrives) joining
    /// the nodes in turn. At each size, for `seconds`: what reached each viewer against what the broadcaster sent.
    /// A size is held while each viewer gets at least 97 % of what it got at the first size.
    static func capacity(
        executable: String, urls: [Int: String], folder: String, audiences: [Int], seconds: Double,
        log: @escaping @Sendable (String) -> Void
    ) throws -> BenchTable {
        // Two descriptors a viewer here (its WebSocket and its UDP socket): the soft limit goes up to the hard one.
        var files = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        files.rlim_cur = files.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        let room = Int(min(files.rlim_cur, 1 << 20)) / 2 - 200
        guard (audiences.max() ?? 0) <= room else {
            throw FailoverBenchError(
                "\(audiences.max() ?? 0) viewers need \(2 * (audiences.max() ?? 0) + 400) descriptors; this process "
                    + "may open \(files.rlim_cur) (ulimit -n)")
        }
        var steps: [AudienceStep] = []
        for count in [1, 3] {
            steps += try audienceSteps(
                nodes: count, executable: executable, url: urls[count]!, folder: folder, audiences: audiences,
                seconds: seconds, log: log)
        }
        var table = BenchTable(
            title: "The largest broadcast audience one node holds against three on this machine (light viewers, "
                + "\(CallBench.width)x\(CallBench.height) at \(CallBench.fps) fps, \(CallBench.videoKbps) kbit/s, "
                + "\(Int(seconds)) s a size)",
            columns: [
                "Nodes", "Viewers", "Reached each viewer", "Broadcaster sent", "Reached / sent", "Relays' CPU",
                "Viewers' CPU (this process)", "Held",
            ])
        var largest: [Int: Int] = [:]
        for count in [1, 3] {
            let mine = steps.filter { $0.nodes == count }
            guard let first = mine.first else { continue }
            for step in mine {
                let held = step.ratio >= first.ratio * 0.97
                if held { largest[count] = max(largest[count] ?? 0, step.viewers) }
                if let failure = step.failure {
                    table.add(["\(count)", "\(step.viewers)", failure, "", "", "", "", "no"])
                    continue
                }
                table.add([
                    "\(count)", "\(step.viewers)", formatted(step.perViewerKbps, decimals: 0) + " kbit/s",
                    formatted(step.sentKbps, decimals: 0) + " kbit/s", formatted(step.ratio * 100, decimals: 1) + " %",
                    formatted(step.relaysCPU, decimals: 0) + " %", formatted(step.viewersCPU, decimals: 0) + " %",
                    held ? "yes" : "no",
                ])
            }
        }
        let one = largest[1].map(String.init) ?? "none"
        let three = largest[3].map(String.init) ?? "none"
        /// The nodes' CPU at the largest size held with `count` nodes.
        func cpuAtLargest(_ count: Int) -> String {
            steps.first { $0.nodes == count && $0.viewers == largest[count] }.map {
                formatted($0.relaysCPU, decimals: 0) + " %"
            } ?? "–"
        }
        table.notes = [
            "Largest audience held: \(one) on one node, \(three) on three (of the sizes tried: "
                + audiences.map(String.init).joined(separator: ", ") + "), the nodes then using \(cpuAtLargest(1)) "
                + "and \(cpuAtLargest(3)) of one core. Held: each viewer got at least 97 % of the share it got at the "
                + "first size. A size where a viewer's join or media bind went unanswered for 5 s is not held (the row "
                + "names the viewer), and larger sizes are not tried.",
            "Every process shares this machine's 2 cores: the broadcaster, the viewers in this process (one thread "
                + "receiving every viewer's media, one for every viewer's signaling, which is told of every join) and "
                + "every node; the viewers' CPU is in its own column. With three nodes node a sends one copy of the "
                + "stream to each of b and c and each node fans it out to a third of the audience; each join also "
                + "crosses the bus.",
            "One node: `parley serve --database` with a cluster secret and no other node (the same code path, no "
                + "trunk). Three: viewer i joins node i mod 3; the broadcaster joins a. Relays' CPU: the nodes "
                + "together, % of one core.",
        ]
        return table
    }

    private static func audienceSteps(
        nodes count: Int, executable: String, url: String, folder: String, audiences: [Int], seconds: Double,
        log: @escaping @Sendable (String) -> Void
    ) throws -> [AudienceStep] {
        let largest = audiences.max() ?? 0
        let secret = try writeSecret(in: folder, name: "capacity-secret-\(count)")
        let limits = [
            "--max-members", "\(largest + 8)", "--max-connections-per-address", "\(largest + 16)",
            "--max-connections", "\(largest + 64)",
        ]
        var nodes: [BackgroundProcess] = []
        var ports: [Int] = []
        defer { for node in nodes { node.stop(grace: 1) } }
        for index in 0..<count {
            let port = try PostgresServer.freePort()
            ports.append(port)
            nodes.append(
                try startNode(
                    executable: executable, id: "cap\(count)-\(index)", port: port, url: url, secret: secret,
                    folder: folder, extra: limits))
        }
        // The trunks come up within a second of the nodes finding each other in the registry.
        Thread.sleep(forTimeInterval: count > 1 ? 3 : 0)
        let statsPath = folder + "/capacity-\(count).json"
        let broadcaster = try BackgroundProcess(
            executable,
            ["bot", "capacity", "--server", "127.0.0.1:\(ports[0])", "--insecure", "--name", "host"]
                + CallBench.equalWorkArguments + ["--log-level", "warning", "--stats-file", statsPath])
        defer { broadcaster.stop() }
        var sockets: [SignalingSocket] = []
        var media: [MediaSocket] = []
        let counters = LoadCounters()
        var receiver: LoadReceiver?
        var receiving: DispatchSemaphore?
        defer {
            receiver?.stop()
            receiving?.wait()
            for socket in sockets { socket.leave() }
        }
        var steps: [AudienceStep] = []
        for audience in audiences {
            // Past the first size not held, larger ones are not tried.
            if let first = steps.first, let last = steps.last, last.ratio < first.ratio * 0.97 { break }
            log("cluster: \(audience) viewers on \(count) node\(count == 1 ? "" : "s")")
            while sockets.count < audience {
                let port = ports[sockets.count % count]
                do {
                    let socket = try SignalingSocket(port: port, inboxCapacity: largest + 64)
                    let grant = try socket.join(room: "capacity", name: "viewer\(sockets.count + 1)", role: .audience)
                    let viewer = try MediaSocket(connectingTo: grant.media.udpPort)
                    try viewer.bind(grant)
                    sockets.append(socket)
                    media.append(viewer)
                } catch {
                    // Past what the nodes hold: a join or its media bind goes unanswered.
                    let failure = "viewer \(sockets.count + 1) could not join: \(error)"
                    log("cluster: \(failure)")
                    steps.append(
                        AudienceStep(
                            nodes: count, viewers: audience, perViewerKbps: 0, sentKbps: 0, relaysCPU: 0,
                            failure: failure))
                    return steps
                }
                // Every join is told to every member: read away, so no inbox holds more than a few dozen.
                if sockets.count % 25 == 0 {
                    for socket in sockets {
                        socket.keepAlive()
                        socket.discardIncoming()
                    }
                }
            }
            receiver?.stop()
            receiving?.wait()
            let started = LoadReceiver(sockets: media.map(\.descriptor), counters: counters)
            receiving = started.start(cpu: nil)
            receiver = started
            BroadcastBench.keepAlive(sockets, for: CallBench.warmUp)
            for (index, node) in nodes.enumerated() {
                if let status = node.waitForExit(seconds: 0) {
                    throw FailoverBenchError("node \(index) exited (\(status)): \(node.output.suffix(500))")
                }
            }
            let statsBefore = try BroadcastBench.BroadcasterStats.read(statsPath)
            let bytesBefore = counters.snapshot().receivedBytes
            let window = CallBench.CPUWindow(nodes.map(\.pid))
            let ownBefore = ProcessProbe.cpuSeconds(getpid()) ?? 0
            let start = WallClock.seconds
            BroadcastBench.keepAlive(sockets, for: seconds)
            let elapsed = max(0.001, WallClock.seconds - start)
            let cpu = window.finish().values.map(\.cpuPercent).reduce(0, +)
            let own = 100 * ((ProcessProbe.cpuSeconds(getpid()) ?? 0) - ownBefore) / elapsed
            let received = Double(counters.snapshot().receivedBytes - bytesBefore) * 8 / elapsed
            // The statistics file is rewritten every second: wait for the one after the window.
            BroadcastBench.keepAlive(sockets, for: 1.1)
            guard let before = statsBefore, let after = try BroadcastBench.BroadcasterStats.read(statsPath),
                after.time > before.time
            else { throw FailoverBenchError("the broadcaster's statistics (\(statsPath)) stopped changing") }
            let sent =
                Double(after.videoBytesSent + after.audioBytesSent - before.videoBytesSent - before.audioBytesSent)
                * 8 / (after.time - before.time)
            steps.append(
                AudienceStep(
                    nodes: count, viewers: audience, perViewerKbps: received / 1000 / Double(audience),
                    sentKbps: sent / 1000, relaysCPU: cpu, viewersCPU: own))
        }
        return steps
    }
}
