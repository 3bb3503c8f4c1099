// Mouth-to-ear on the network lab's links (issue 51's goal for `mobile` and `lossy-wifi`): the mouth-to-ear
// benchmark's click train played into alice's microphone, alice on the scenario's link, and heard from bob's speaker,
// bob on a clean one; for Parley (two `parley join`s through `parley serve`, each in its member's namespace) and for
// two Chromium tabs (one peer connection through TURN in the relay's namespace, as `ChromiumCall`), one after the
// other on one sound server, each in a lab of its own.
import Foundation
import ParleyProcesses
import ParleyTestSupport

extension MouthToEarBench {
    /// Clicks per path in the lab, one a second.
    static let labClicks = 30
    /// Seconds a lab call settles before its clicks: the estimate finds the link and the voice buffer the jitter.
    static let labWarmUp = 8.0

    /// What the click train found on one scenario's link, Parley's path and Chromium's.
    struct LabResult {
        var parley: PathResult
        var chromium: PathResult
    }

    /// The click train over `scenario`'s link for Parley, then for Chromium. Clicks a lossy link loses are counted,
    /// not a failure; a path that heard under half of them throws, naming it.
    static func inLab(_ scenario: NetworkScenario, parley: String, log: (String) -> Void) async throws -> LabResult {
        let tools = Tools(
            parley: parley, baresip: "", tmux: try findTool("tmux", package: "tmux"),
            xvfb: try findTool("Xvfb", package: "xvfb"), chromium: try findTool("chromium", package: "chromium"),
            env: try findTool("env", package: "coreutils"))
        let directory = try CallBench.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sound: SoundServer
        do {
            sound = try SoundServer(configuration: "mouth-to-ear.pa")
        } catch {
            throw CallBenchError.unexpected("mouth-to-ear in the lab: \(error)")
        }
        defer { sound.stop() }
        let train = try writeClickTrain(seconds: labClicks, in: directory)
        func recorder(_ name: String) -> ClickRecorder {
            var recorder = ClickRecorder(
                sound: sound, train: train, seconds: labClicks, directory: directory, name: "\(scenario.name)-\(name)")
            recorder.toleratesLoss = true
            return recorder
        }
        log("network: \(scenario.name), mouth-to-ear, Parley (\(labClicks) clicks)")
        let parleyPath = try await parleyInLab(
            scenario, tools: tools, sound: sound, directory: directory, recorder: recorder("parley"))
        log("network: \(scenario.name), mouth-to-ear, Chromium (\(labClicks) clicks)")
        let chromiumPath = try await chromiumInLab(
            scenario, tools: tools, sound: sound, directory: directory, recorder: recorder("chromium"))
        for path in [parleyPath, chromiumPath] {
            let heard = path.heard
            guard heard.count * 2 >= labClicks else {
                throw CallBenchError.unexpected(
                    "mouth-to-ear on \(scenario.name): \(path.path) heard \(heard.count) of \(labClicks) clicks"
                        + (path.searchFailure.map { " (\($0))" } ?? ""))
            }
        }
        withExtendedLifetime(sound) {}
        return LabResult(parley: parleyPath, chromium: chromiumPath)
    }

    /// Parley's path in a lab of its own: the relay in the relay's namespace, the talker in alice's, the listener
    /// in bob's, both joining at their link's relay address.
    static func parleyInLab(
        _ scenario: NetworkScenario, tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder
    ) async throws -> PathResult {
        let (lab, people) = try NetworkBench.lab(scenario, members: 2, tag: "m2\(scenario.name.prefix(2))")
        defer { lab.tearDown() }
        let (alice, bob) = (people[0], people[1])
        let state = directory + "/lab-relay"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let (relayPath, relayArguments) = lab.command(
            in: lab.relayNamespace, tools.parley,
            ["serve", "--host", "0.0.0.0", "--port", "7878", "--state-dir", state])
        let relay = try BackgroundProcess(relayPath, relayArguments, outputPath: "\(directory)/lab-relay.log")
        defer { relay.stop() }
        try await relay.output(containing: "relay listening", within: .seconds(10))
        let elements = try await lab.startElements(relayPort: 7878)
        do {
            let result = try parleyClicks(
                tools: tools, sound: sound, directory: directory, recorder: recorder,
                servers: (talker: "\(alice.relayAddress):7878", listener: "\(bob.relayAddress):7878"),
                warmUp: labWarmUp, soundAlone: true,
                label:
                    "Parley: two `parley join` through `parley serve`, sound alone (both cameras off with `v`), in tmux"
            ) { listener, path, arguments in
                lab.command(in: (listener ? bob : alice).namespace, path, arguments)
            }
            for element in elements { await element.stop() }
            return result
        } catch {
            for element in elements { await element.stop() }
            throw error
        }
    }

    /// Chromium's path in a lab of its own: two tabs under one Xvfb, alice's on the microphone (playing into a sink
    /// nobody hears), bob's on a silent microphone and the speaker; audio alone, its processing off.
    static func chromiumInLab(
        _ scenario: NetworkScenario, tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder
    ) async throws -> PathResult {
        let (lab, people) = try NetworkBench.lab(scenario, members: 2, tag: "c2\(scenario.name.prefix(2))")
        defer { lab.tearDown() }
        let display = try VirtualDisplay(xvfb: tools.xvfb, directory: directory)
        defer { display.stop() }
        var environment: [String: [String: String]] = [:]
        for (name, sink, source) in [("alice", Device.void, Device.microphone), ("bob", Device.ear, Device.silence)] {
            let home = "\(directory)/chromium-home-\(name)"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            environment[name] = sound.clientEnvironment(home: home, sink: sink, source: source)
        }
        let call = try await ChromiumCall.start(
            in: lab, members: people, tag: "m2\(scenario.name.prefix(2))", video: "", audio: "", videoKbps: 0,
            sound: .init(display: display.name, environment: environment))
        do {
            try await call.waitUntilFlowing()
            try await Task.sleep(for: .seconds(labWarmUp))
            let before = ChromiumCall.Snapshot(call)
            let (matches, streams) = try recorder.clicks()
            try await Task.sleep(for: .seconds(1.1))  // the next report covers the whole train
            let window = ChromiumCall.Window(before: before, after: ChromiumCall.Snapshot(call))
            await call.stop()
            return PathResult(
                path: .chromium,
                label:
                    "Chromium\(chromiumVersion(tools, in: directory)): two tabs, one peer connection through TURN, audio only",
                matches: matches,
                notes: [
                    "Chromium's listener concealed \(NetworkBench.percent(window.concealed("bob", of: "alice"))) of the talker's "
                        + "samples during the clicks."
                ], streams: streams)
        } catch {
            await call.stop()
            throw error
        }
    }
}

extension MouthToEarBench.PathResult {
    /// The delays of the clicks heard.
    var heard: [Double] {
        guard case .success(let matches) = matches else { return [] }
        return ClickDelays(matches).milliseconds
    }

    /// Why the search failed, when it did.
    var searchFailure: String? {
        guard case .failure(let error) = matches else { return nil }
        return "\(error)"
    }
}
