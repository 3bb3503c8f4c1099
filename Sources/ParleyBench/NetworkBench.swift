import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyTestSupport

/// `parley-bench network`: every named scenario (`NetworkScenario.all`) as a call of `parley bot`s at 640x360 through
/// `parley serve` in the network lab (namespaces, `tc`, nftables, the user-space element), the first member (alice) on
/// the scenario's link and the others on clean ones. Root only, as the lab is.
enum NetworkBench {
    /// Seconds the call settles before a steady window (estimates finding the link, the relay choosing layers).
    static let settle = 5
    /// Seconds of a steady window.
    static let window = 15
    /// Seconds of the `udp-blocked` call's window (the issue's 60 s call).
    static let blockedWindow = 60

    static let names = ["alice", "bob", "carol", "dave"]

    static func run(parley: String, log: @escaping @Sendable (String) -> Void) async throws -> [BenchTable] {
        if let reason = NetworkLab.unavailableReason { throw BenchFailure("the network lab cannot run: \(reason)") }
        // Both calls send the same files: the synthetic camera's clip (moving pattern, text, sensor noise) and voice.
        let media = try CallBench.BenchMedia.prepare(videoSeconds: 10, width: 640, height: 360, log: log)
        let chromiumProblem = ChromiumCall.unavailableReason
        let withChromium = chromiumProblem == nil
        var steady = BenchTable(
            title:
                "Calls on the named network scenarios: 640x360 `parley bot`s through `parley serve` in the network lab, "
                + "alice on the scenario's link, the others clean (\(window) s window after \(settle) s)"
                + (withChromium ? "; each beside Chromium 156 in the same lab" : ""),
            columns: [
                "scenario", "members", "alice sends kbit/s", "her uplink estimate kbit/s", "her uplink bucket dropped",
                "alice sees, fps (best / worst peer)", "alice's frozen ms (best / worst peer)",
                "alice's voice concealed (worst peer)", "others see alice, fps (worst)",
                "others' frozen ms of alice (worst)", "others' voice of alice concealed (worst)",
                "others receive (mean fps)", "machine busy (\(ProcessInfo.processInfo.activeProcessorCount) cores)",
            ])
        var timelines = BenchTable(
            title: "What happens over time: the scenarios that change mid-call",
            columns: ["scenario", "what", "measured", "the issue's goal"])
        var goals = BenchTable(
            title: "The issue's goals beside Chromium 156 (same lab, same run)",
            columns: ["scenario", "goal", "Parley", "Chromium", "met"])
        var mouthToEar = BenchTable(
            title:
                "Mouth-to-ear on the lab's links: \(MouthToEarBench.labClicks) clicks, one a second, into alice's "
                + "microphone (her link the scenario's) and out of bob's speaker (his clean), "
                + "\(Int(MouthToEarBench.labWarmUp)) s after the call settled",
            columns: ["scenario", "path", "clicks heard", "p50 ms", "p90 ms", "max ms", "notes"])
        var cleanReceive: [Int: Double] = [:]
        // Chromium calls that failed once and were run again, with why.
        var retried: [String] = []
        // PARLEY_NETWORK_SCENARIOS=a,b runs those alone (a shorter run while working on one).
        let chosen = ProcessInfo.processInfo.environment["PARLEY_NETWORK_SCENARIOS"].map {
            Set($0.split(separator: ",").map(String.init))
        }
        for name in chosen ?? [] { _ = try NetworkScenario.named(name) }
        for scenario in NetworkScenario.all where chosen?.contains(scenario.name) ?? true {
            switch scenario.name {
            case "capacity-drop":
                log("network: \(scenario.name)")
                let parleyDrop = try await capacityDrop(scenario, parley: parley, media: media)
                timelines.rows += parleyDrop.rows(scenario, who: "")
                guard withChromium else { continue }
                log("network: \(scenario.name), Chromium")
                let chromiumDrop = try await again(scenario.name, &retried) {
                    try await chromiumCapacityDrop(scenario, media: media)
                }
                timelines.rows += chromiumDrop.rows(scenario, who: " **Chromium**")
                goals.add([
                    scenario.name, "back to ≥ 90 % of the clean send rate, no slower than Chromium",
                    parleyDrop.back.map(seconds) ?? "not within 30 s",
                    chromiumDrop.back.map(seconds) ?? "not within 30 s",
                    verdict(parleyDrop.back.map(inSeconds) ?? 99, chromiumDrop.back.map(inSeconds) ?? 99),
                ])
            case "udp-blocked":
                log("network: \(scenario.name) (\(blockedWindow) s)")
                let (row, timeline) = try await blocked(scenario, parley: parley, media: media)
                steady.add(row)
                timelines.rows += timeline
                guard withChromium else { continue }
                log("network: \(scenario.name), Chromium (\(blockedWindow) s)")
                let (chromiumRow, chromiumTimeline) = try await again(scenario.name, &retried) {
                    try await chromiumBlocked(scenario, media: media)
                }
                steady.add(chromiumRow)
                timelines.rows += chromiumTimeline
            default:
                // congested-downlink's other members are compared with a clean call of the same size.
                let sizes = scenario.name == "clean" ? [2, 4] : [scenario.members]
                for members in sizes {
                    log("network: \(scenario.name), \(members) members")
                    let result = try await steadyCall(scenario, members: members, parley: parley, media: media)
                    if scenario.name == "clean" { cleanReceive[members] = result.othersReceive }
                    steady.add(result.row(comparedWith: scenario.name == "clean" ? nil : cleanReceive[members]))
                    guard withChromium else { continue }
                    log("network: \(scenario.name), \(members) members, Chromium")
                    let chromium = try await again("\(scenario.name), \(members) members", &retried) {
                        try await chromiumSteady(scenario, members: members, media: media)
                    }
                    if scenario.name == "clean" { cleanReceive[-members] = chromium.othersReceive }
                    steady.add(chromium.row(comparedWith: scenario.name == "clean" ? nil : cleanReceive[-members]))
                    switch scenario.name {
                    case "congested-downlink":
                        goals.add([
                            scenario.name, "alice's video frozen (worst peer, ms in \(window) s), ≤ Chromium's",
                            "\(result.aliceFrozenMs)", "\(chromium.aliceFrozenMs)",
                            verdict(Double(result.aliceFrozenMs), Double(chromium.aliceFrozenMs)),
                        ])
                    case "mobile", "lossy-wifi":
                        goals.add([
                            scenario.name, "alice's voice concealed (worst peer), ≤ Chromium's",
                            percent(result.aliceConcealed), percent(chromium.aliceConcealed),
                            verdict(result.aliceConcealed, chromium.aliceConcealed),
                        ])
                        log("network: \(scenario.name), mouth-to-ear")
                        let clicks = try await MouthToEarBench.inLab(scenario, parley: parley, log: log)
                        mouthToEar.rows += mouthToEarRows(scenario, clicks)
                        let p50 = (clicks.parley.heard, clicks.chromium.heard)
                        goals.add([
                            scenario.name, "mouth-to-ear p50 (the click method, alice → bob), ≤ Chromium's",
                            milliseconds(p50.0), milliseconds(p50.1),
                            verdict(
                                Sample.percentile(p50.0, 0.5) ?? .infinity, Sample.percentile(p50.1, 0.5) ?? .infinity),
                        ])
                    default:
                        break
                    }
                }
            }
        }
        steady.notes = [
            "Each rate is over the time between a member's own two statistics files (`--stats-file`, rewritten once a "
                + "second). fps: frames decoded a second of a peer (30 sent). Frozen: the gaps of over 300 ms between "
                + "a peer's decoded frames in the window, summed, a gap still going on counted up to the file's time "
                + "(a tile the relay paused for alice's downlink counts; a camera turned off does not). Concealed: audio frames "
                + "concealed ÷ played. alice sends: her video and audio RTP bytes.",
            "Links: \(NetworkScenario.all.map { "`\($0.name)` \($0.summary)" }.joined(separator: "; ")). "
                + "`rebind`'s window starts at the move: its cost is in the frozen columns.",
            withChromium
                ? "**Chromium** rows: the same call as headless Chromiums (`ChromiumCall`), one per member in the "
                    + "member's namespace, a mesh of peer connections (so in a call of 4 alice sends 3 copies), "
                    + "every packet through coturn in the relay's namespace (so over the same links, buckets, rules "
                    + "and elements), fake devices playing the same clip and voice files as the bots, video capped "
                    + "at \(chromiumVideoKbps) kbit/s. Its figures come from `getStats` once a second (its own clock "
                    + "for the rates): payload bytes sent (resends included), `availableOutgoingBitrate` as its "
                    + "estimate (summed over its connections), frames decoded; frozen: gaps of over 300 ms between "
                    + "frames its video elements presented (`requestVideoFrameCallback`); concealed: samples "
                    + "concealed ÷ received."
                : "Chromium 156 in the same lab was not measured: \(chromiumProblem ?? "")",
        ]
        if !retried.isEmpty {
            steady.notes.append(
                "Chromium calls run a second time after the first failed: " + retried.joined(separator: "; "))
        }
        mouthToEar.notes = [
            "The mouth-to-ear benchmark's method (`parley-bench mouth-to-ear`, docs/benchmarks.md) on one private "
                + "sound server: the click sent and the click heard recorded in one stereo stream; each path in a lab "
                + "of its own with the same links. Both send sound alone (Parley's two clients join with a 160x120 "
                + "camera and turn it off with `v` before the clicks; Chromium's tabs have no camera); each its own "
                + "Opus settings and jitter buffer. A click a lossy link lost is counted as not heard, not a failure."
        ]
        if withChromium {
            return mouthToEar.rows.isEmpty ? [steady, timelines, goals] : [steady, timelines, mouthToEar, goals]
        }
        return [steady, timelines]
    }

    /// The mouth-to-ear table's rows for one scenario: Parley's path and Chromium's.
    static func mouthToEarRows(_ scenario: NetworkScenario, _ result: MouthToEarBench.LabResult) -> [[String]] {
        [result.parley, result.chromium].map { path in
            let delays = path.heard
            func cell(_ p: Double) -> String { Sample.percentile(delays, p).map { String(format: "%.0f", $0) } ?? "–" }
            let name = path.path == .chromium ? " **Chromium**" : ""
            return [
                "`\(scenario.name)`\(name)", path.label, "\(delays.count) of \(MouthToEarBench.labClicks)", cell(0.5),
                cell(0.9), cell(1), path.notes.joined(separator: " "),
            ]
        }
    }

    /// A p50 of click delays for the goals table, with how many were heard.
    static func milliseconds(_ delays: [Double]) -> String {
        guard let p50 = Sample.percentile(delays, 0.5) else { return "no click heard" }
        return String(format: "%.0f ms (%d of %d clicks)", p50, delays.count, MouthToEarBench.labClicks)
    }

    /// A Chromium call, run once more when it fails (starting a browser per member on two cores is the slowest
    /// part of the lab); the first failure is kept in `retried` for the table's notes. A second failure stops the
    /// benchmark.
    static func again<T>(_ what: String, _ retried: inout [String], _ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch {
            retried.append("\(what) (\(error))")
            return try await call()
        }
    }

    /// How long after `since` a client's send rate, read between each two consecutive reports (`time` tells a new
    /// one), reached `sendKbps`; nil when it did not within 30 s.
    static func timeUntil<Reports>(
        sendKbps: Double, since: ContinuousClock.Instant, read: () -> Reports, time: (Reports) -> Double?,
        rate: (Reports, Reports) -> Double
    ) async throws -> Duration? {
        var previous = read()
        while ContinuousClock.now - since < .seconds(30) {
            try await Task.sleep(for: .milliseconds(250))
            let now = read()
            guard time(now) != time(previous) else { continue }
            if rate(previous, now) >= sendKbps { return ContinuousClock.now - since }
            previous = now
        }
        return nil
    }

    /// Whether a Parley figure meets a goal of being at most Chromium's.
    static func verdict(_ parley: Double, _ chromium: Double) -> String { parley <= chromium ? "yes" : "no" }

    /// A lab with the scenario's members, alice on its link; changes due at once are done.
    static func lab(
        _ scenario: NetworkScenario, members: Int, tag: String
    ) throws -> (NetworkLab, [NetworkLab.Member]) {
        let lab = try NetworkLab(tag: tag)
        var made: [NetworkLab.Member] = []
        for (index, name) in names.prefix(members).enumerated() {
            made.append(try lab.addMember(name, link: index == 0 ? scenario.link : .clean))
        }
        for step in scenario.steps where step.after == .zero { made[0] = try lab.apply(step.change, to: made[0]) }
        return (lab, made)
    }

    typealias Snapshot = LabCall.Snapshot
    typealias Window = LabCall.Window

    struct SteadyResult {
        var row: [String]
        var othersReceive: Double
        /// Alice's frozen time of her worst-served peer, and her worst peer's concealed share.
        var aliceFrozenMs: Int
        var aliceConcealed: Double

        /// The row, its "others receive" cell (the one before the machine's) also as a share of a clean call's
        /// (`clean`) when given.
        func row(comparedWith clean: Double?) -> [String] {
            guard let clean, row.count >= 2 else { return row }
            var row = row
            row[row.count - 2] += String(format: " (%.0f %% of clean)", othersReceive / clean * 100)
            return row
        }
    }

    /// What `capacity-drop` measured of one client.
    struct CapacityDropResult {
        var clean: Double
        var under: Duration
        var squeezedKbps: Double
        var squeezedFps: Double
        var back: Duration?

        func rows(_ scenario: NetworkScenario, who: String) -> [[String]] {
            let narrow =
                scenario.steps.first.map { step -> String in
                    if case .uplinkKbps(let kbps?) = step.change { return "\(kbps)" }
                    return "?"
                } ?? "?"
            return [
                [
                    scenario.name + who, "alice's send rate on the clean 4 Mbit/s uplink",
                    String(format: "%.0f kbit/s", clean), "",
                ],
                [scenario.name + who, "her estimate under \(narrow) kbit/s after the drop", seconds(under), "≤ 2 s"],
                [
                    scenario.name + who, "the last 8 s of the squeeze: she sends / bob sees her",
                    String(format: "%.0f kbit/s / %.1f fps", squeezedKbps, squeezedFps), "",
                ],
                [
                    scenario.name + who, "she sends ≥ 90 % of the clean rate again after the capacity returns",
                    back.map(seconds) ?? "not within 30 s", "≤ 10 s",
                ],
            ]
        }
    }

    /// A call on the scenario's link, measured over one window after settling (for `rebind`, from the move).
    static func steadyCall(
        _ scenario: NetworkScenario, members: Int, parley: String, media: CallBench.BenchMedia
    ) async throws -> SteadyResult {
        let tag = "n\(scenario.name.prefix(2))\(members)"
        let (lab, people) = try lab(scenario, members: members, tag: tag)
        defer { lab.tearDown() }
        let call = try await LabCall.start(
            parley, in: lab, members: people, tag: tag, seconds: settle + window + 15, botArguments: files(media))
        defer { call.stop() }
        try await call.waitUntilBound()
        let start: Snapshot
        if let move = scenario.steps.first(where: { $0.change == .moveAddress }) {
            try await Task.sleep(for: move.after)  // the call as it was before the move
            start = Snapshot(call)
            try lab.apply(.moveAddress, to: people[0])
        } else {
            try await Task.sleep(for: .seconds(settle))  // estimates find the link
            start = Snapshot(call)
        }
        let cpu = MachineCPU.now()
        let dropsBefore = try lab.uplinkDrops(of: lab.members[0])
        let end = try await call.window(after: start, seconds: window)
        let busy = MachineCPU.now().busyPercent(since: cpu)
        let dropped = bucketDrops(before: dropsBefore, after: try lab.uplinkDrops(of: lab.members[0]))
        let others = Array(call.names.dropFirst())
        let alice = "alice"
        let aliceSees = others.map { end.fps(alice, of: $0) }
        let frozen = others.map { end.frozenMs(alice, of: $0) }
        let othersFrozen = others.map { end.frozenMs($0, of: alice) }.max() ?? 0
        let aliceConcealed = others.map { end.concealed(alice, of: $0) }.max() ?? 0
        let seen = others.map { end.fps($0, of: alice) }.min() ?? 0
        let othersConcealed = others.map { end.concealed($0, of: alice) }.max() ?? 0
        var receiving: [Double] = []
        for receiver in others {
            for sender in call.names where sender != receiver { receiving.append(end.fps(receiver, of: sender)) }
        }
        let othersReceive = receiving.isEmpty ? 0 : receiving.reduce(0, +) / Double(receiving.count)
        let row = [
            "`\(scenario.name)`", "\(members)", String(format: "%.0f", end.sendKbps(alice)),
            end.after.reports[alice]?.uplinkEstimateKbps.map(String.init) ?? "–", dropped,
            String(format: "%.1f / %.1f", aliceSees.max() ?? 0, aliceSees.min() ?? 0),
            "\(frozen.min() ?? 0) / \(frozen.max() ?? 0)", percent(aliceConcealed), String(format: "%.1f", seen),
            "\(othersFrozen)", percent(othersConcealed), String(format: "%.1f", othersReceive),
            String(format: "%.0f %%", busy),
        ]
        return SteadyResult(
            row: row, othersReceive: othersReceive, aliceFrozenMs: frozen.max() ?? 0, aliceConcealed: aliceConcealed)
    }

    /// The bots' camera and voice: the files the Chromiums play.
    static func files(_ media: CallBench.BenchMedia) -> [String] {
        ["--video", media.video, "--audio", media.loopedVoice]
    }

    /// Packets alice's uplink bucket dropped in a window ("–" for an unshaped uplink).
    static func bucketDrops(before: Int?, after: Int?) -> String {
        guard let before, let after else { return "–" }
        return "\(after - before)"
    }

    static func percent(_ share: Double) -> String { String(format: "%.1f %%", share * 100) }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f s", inSeconds(duration))
    }

    static func inSeconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `udp-blocked`: how soon the first sound plays, then a long window for dropouts.
    static func blocked(
        _ scenario: NetworkScenario, parley: String, media: CallBench.BenchMedia
    ) async throws -> ([String], [[String]]) {
        let (lab, people) = try lab(scenario, members: 2, tag: "nudp")
        defer { lab.tearDown() }
        let call = try await LabCall.start(
            parley, in: lab, members: people, tag: "nudp", seconds: blockedWindow + 20,
            botArguments: ["--log-level", "info"] + files(media))
        defer { call.stop() }
        // The join from alice's event log (polled every 50 ms); the first sound from her statistics files, a second
        // apart: it played after the last file with none and by the first with some.
        var joined: Double?
        var silentAt: Double?
        var heardBy: Double?
        try await waitUntil("alice plays bob's sound over TCP", timeout: .seconds(20), every: .milliseconds(50)) {
            if joined == nil,
                (try? String(contentsOfFile: call.folder + "/alice.log", encoding: .utf8))?.contains("joined(localID")
                    == true
            {
                joined = Date().timeIntervalSince1970
            }
            guard let report = call.report("alice") else { return false }
            if (report.peers.first?.audioPlayed ?? 0) > 0 {
                heardBy = report.time
                return joined != nil
            }
            silentAt = report.time
            return false
        }
        let firstSound = String(
            format: "%.1f–%.1f s after the join", max(0, (silentAt ?? 0) - (joined ?? 0)),
            (heardBy ?? 0) - (joined ?? 0))
        try await call.waitUntilBound()
        try await Task.sleep(for: .seconds(2))  // the stream settles
        let start = Snapshot(call)
        let cpu = MachineCPU.now()
        let end = try await call.window(after: start, seconds: blockedWindow)
        let busy = MachineCPU.now().busyPercent(since: cpu)
        let dropouts = [end.dropouts("alice", of: "bob"), end.dropouts("bob", of: "alice")]
        let row = [
            "`\(scenario.name)` (\(blockedWindow) s, media \(end.after.reports["alice"]?.mediaPath ?? "?"))", "2",
            String(format: "%.0f", end.sendKbps("alice")),
            end.after.reports["alice"]?.uplinkEstimateKbps.map(String.init) ?? "–", "–",
            String(format: "%.1f / %.1f", end.fps("alice", of: "bob"), end.fps("alice", of: "bob")),
            "\(end.frozenMs("alice", of: "bob")) / \(end.frozenMs("alice", of: "bob"))",
            percent(end.concealed("alice", of: "bob")), String(format: "%.1f", end.fps("bob", of: "alice")),
            "\(end.frozenMs("bob", of: "alice"))", percent(end.concealed("bob", of: "alice")),
            String(format: "%.1f", end.fps("bob", of: "alice")), String(format: "%.0f %%", busy),
        ]
        let timeline = [
            [
                scenario.name, "alice's first sound played (UDP dropped from the start)", firstSound, "≤ 3 s",
            ],
            [
                scenario.name, "dropouts in the \(blockedWindow) s window (alice / bob)",
                "\(dropouts[0]) / \(dropouts[1])", "0",
            ],
        ]
        return (row, timeline)
    }

    /// `capacity-drop`: alice's send rate clean, how soon her estimate is under the squeeze, and how soon she sends
    /// 90 % of the clean rate again once it ends.
    static func capacityDrop(
        _ scenario: NetworkScenario, parley: String, media: CallBench.BenchMedia
    ) async throws -> CapacityDropResult {
        guard scenario.steps.count == 2, case .uplinkKbps(let narrow?) = scenario.steps[0].change else {
            throw BenchFailure("capacity-drop is a squeeze and a return, not \(scenario.steps)")
        }
        let squeeze = scenario.steps[1].after - scenario.steps[0].after
        let (lab, people) = try lab(scenario, members: 2, tag: "ncd")
        defer { lab.tearDown() }
        let call = try await LabCall.start(
            parley, in: lab, members: people, tag: "ncd", seconds: 90, botArguments: files(media))
        defer { call.stop() }
        try await call.waitUntilBound()
        try await Task.sleep(for: .seconds(settle))  // the clean send rate, as the call settles
        let clean = try await call.window(after: Snapshot(call), seconds: 3).sendKbps("alice")
        try lab.apply(scenario.steps[0].change, to: people[0])
        let dropped = ContinuousClock.now
        try await waitUntil("alice's estimate under \(narrow) kbit/s", timeout: .seconds(20), every: .milliseconds(100))
        {
            (call.report("alice")?.uplinkEstimateKbps ?? .max) <= narrow
        }
        let under = ContinuousClock.now - dropped
        try await Task.sleep(until: dropped + squeeze - .seconds(8))
        let squeezed = try await call.window(after: Snapshot(call), seconds: 8)
        try lab.apply(scenario.steps[1].change, to: people[0])
        let restored = ContinuousClock.now
        let back = try await timeUntil(
            sendKbps: 0.9 * clean, since: restored, read: { Snapshot(call) },
            time: { $0.reports["alice"]?.time }, rate: { Window(before: $0, after: $1).sendKbps("alice") })
        return CapacityDropResult(
            clean: clean, under: under, squeezedKbps: squeezed.sendKbps("alice"),
            squeezedFps: squeezed.fps("bob", of: "alice"), back: back)
    }
}
