import Foundation
import ParleyProcesses
import ParleyTestSupport

/// The reference column of `parley-bench network`: each scenario as a call of headless Chromiums in the same lab
/// (`ChromiumCall`: a mesh of peer connections through a TURN server in the relay's namespace, fake devices playing
/// the same clip and voice as the Parley bots, the video capped at the profile's 600 kbit/s).
extension NetworkBench {
    typealias ChromiumSnapshot = ChromiumCall.Snapshot
    typealias ChromiumWindow = ChromiumCall.Window

    /// A Chromium call of the scenario's shape, measured as `steadyCall` measures Parley's.
    static func chromiumSteady(_ scenario: NetworkScenario, members: Int, media: CallBench.BenchMedia) async throws
        -> SteadyResult
    {
        let tag = "c\(scenario.name.prefix(2))\(members)"
        let (lab, people) = try lab(scenario, members: members, tag: tag)
        defer { lab.tearDown() }
        let call = try await chromiumCall(in: lab, people, tag: tag, media: media)
        do {
            try await call.waitUntilFlowing()
            let start: ChromiumSnapshot
            if let move = scenario.steps.first(where: { $0.change == .moveAddress }) {
                try await Task.sleep(for: move.after)
                start = ChromiumSnapshot(call)
                try lab.apply(.moveAddress, to: people[0])
            } else {
                try await Task.sleep(for: .seconds(settle))
                start = ChromiumSnapshot(call)
            }
            let cpu = MachineCPU.now()
            let dropsBefore = try lab.uplinkDrops(of: people[0])
            let end = try await call.window(after: start, seconds: window)
            let busy = MachineCPU.now().busyPercent(since: cpu)
            let dropped = bucketDrops(before: dropsBefore, after: try lab.uplinkDrops(of: people[0]))
            await call.stop()
            return steadyRow(scenario, members: members, end, names: call.names, busy: busy, dropped: dropped)
        } catch {
            await call.stop()
            throw error
        }
    }

    static func chromiumCall(
        in lab: NetworkLab, _ people: [NetworkLab.Member], tag: String, media: CallBench.BenchMedia
    ) async throws -> ChromiumCall {
        try await ChromiumCall.start(
            in: lab, members: people, tag: tag, video: media.video, audio: media.loopedVoice,
            videoKbps: chromiumVideoKbps)
    }

    /// The video sender's cap: the 640x360 profile's rate, Parley's full layer.
    static let chromiumVideoKbps = 600

    static func steadyRow(
        _ scenario: NetworkScenario, members: Int, _ end: ChromiumWindow, names: [String], busy: Double,
        dropped: String = "–"
    ) -> SteadyResult {
        let others = Array(names.dropFirst())
        let alice = "alice"
        let aliceSees = others.map { end.fps(alice, of: $0) }
        let frozen = others.map { end.frozenMs(alice, of: $0) }
        var receiving: [Double] = []
        for receiver in others {
            for sender in names where sender != receiver { receiving.append(end.fps(receiver, of: sender)) }
        }
        let othersReceive = receiving.isEmpty ? 0 : receiving.reduce(0, +) / Double(receiving.count)
        let estimate = (end.after.reports[alice]?.availableOutgoingBps).map { String(format: "%.0f", $0 / 1_000) }
        let row = [
            "`\(scenario.name)` **Chromium** (\(paths(end)))", "\(members)",
            String(format: "%.0f", end.sendKbps(alice)),
            estimate ?? "–", dropped, String(format: "%.1f / %.1f", aliceSees.max() ?? 0, aliceSees.min() ?? 0),
            "\(frozen.min() ?? 0) / \(frozen.max() ?? 0)",
            percent(others.map { end.concealed(alice, of: $0) }.max() ?? 0),
            String(format: "%.1f", others.map { end.fps($0, of: alice) }.min() ?? 0),
            "\(others.map { end.frozenMs($0, of: alice) }.max() ?? 0)",
            percent(others.map { end.concealed($0, of: alice) }.max() ?? 0), String(format: "%.1f", othersReceive),
            String(format: "%.0f %%", busy),
        ]
        return SteadyResult(
            row: row, othersReceive: othersReceive, aliceFrozenMs: frozen.max() ?? 0,
            aliceConcealed: others.map { end.concealed(alice, of: $0) }.max() ?? 0)
    }

    /// How alice's connections went at the end: "relay/udp" (TURN over UDP) or "relay/tcp".
    static func paths(_ end: ChromiumWindow) -> String {
        let paths = Set((end.after.reports["alice"]?.peers.values.map(\.path) ?? []).filter { !$0.isEmpty })
        return paths.isEmpty ? "no path" : paths.sorted().joined(separator: ", ")
    }

    /// `udp-blocked` for Chromium: its first sound (the page polls every 50 ms from its start, its join) and the
    /// concealment over the long window (it reaches TURN over TCP).
    static func chromiumBlocked(_ scenario: NetworkScenario, media: CallBench.BenchMedia) async throws -> (
        [String], [[String]]
    ) {
        let (lab, people) = try lab(scenario, members: 2, tag: "cudp")
        defer { lab.tearDown() }
        let call = try await chromiumCall(in: lab, people, tag: "cudp", media: media)
        do {
            try await call.waitUntilFlowing()
            let firstSound = call.reports["alice"]?.peers["bob"]?.firstAudioMs
            try await Task.sleep(for: .seconds(2))
            let cpu = MachineCPU.now()
            let end = try await call.window(after: ChromiumSnapshot(call), seconds: blockedWindow)
            let busy = MachineCPU.now().busyPercent(since: cpu)
            await call.stop()
            var row = steadyRow(scenario, members: 2, end, names: call.names, busy: busy).row
            row[0] = "`\(scenario.name)` **Chromium** (\(blockedWindow) s, \(paths(end)))"
            let events = [
                end.concealmentEvents("alice", of: "bob"), end.concealmentEvents("bob", of: "alice"),
            ]
            return (
                row,
                [
                    [
                        "\(scenario.name) **Chromium**", "alice's first sound arrived (from the page's start)",
                        firstSound.map { String(format: "%.1f s", $0 / 1_000) } ?? "never", "",
                    ],
                    [
                        "\(scenario.name) **Chromium**",
                        "concealment events in the \(blockedWindow) s window (alice / bob; not Parley's dropout rule)",
                        "\(events[0]) / \(events[1])", "",
                    ],
                ]
            )
        } catch {
            await call.stop()
            throw error
        }
    }

    /// `capacity-drop` for Chromium, as `capacityDrop` measures Parley: its estimate is `availableOutgoingBitrate`.
    static func chromiumCapacityDrop(_ scenario: NetworkScenario, media: CallBench.BenchMedia) async throws
        -> CapacityDropResult
    {
        guard scenario.steps.count == 2, case .uplinkKbps(let narrow?) = scenario.steps[0].change else {
            throw BenchFailure("capacity-drop is a squeeze and a return, not \(scenario.steps)")
        }
        let squeeze = scenario.steps[1].after - scenario.steps[0].after
        let (lab, people) = try lab(scenario, members: 2, tag: "ccd")
        defer { lab.tearDown() }
        let call = try await chromiumCall(in: lab, people, tag: "ccd", media: media)
        do {
            try await call.waitUntilFlowing()
            try await Task.sleep(for: .seconds(settle))
            let clean = try await call.window(after: ChromiumSnapshot(call), seconds: 3).sendKbps("alice")
            try lab.apply(scenario.steps[0].change, to: people[0])
            let dropped = ContinuousClock.now
            try await waitUntil(
                "Chromium's estimate under \(narrow) kbit/s", timeout: .seconds(20), every: .milliseconds(100)
            ) {
                (call.reports["alice"]?.availableOutgoingBps ?? .infinity) <= Double(narrow) * 1_000
            }
            let under = ContinuousClock.now - dropped
            try await Task.sleep(until: dropped + squeeze - .seconds(8))
            let squeezed = try await call.window(after: ChromiumSnapshot(call), seconds: 8)
            try lab.apply(scenario.steps[1].change, to: people[0])
            let restored = ContinuousClock.now
            let back = try await timeUntil(
                sendKbps: 0.9 * clean, since: restored, read: { ChromiumSnapshot(call) },
                time: { $0.reports["alice"]?.ms }, rate: { ChromiumWindow(before: $0, after: $1).sendKbps("alice") })
            await call.stop()
            return CapacityDropResult(
                clean: clean, under: under, squeezedKbps: squeezed.sendKbps("alice"),
                squeezedFps: squeezed.fps("bob", of: "alice"), back: back)
        } catch {
            await call.stop()
            throw error
        }
    }
}
