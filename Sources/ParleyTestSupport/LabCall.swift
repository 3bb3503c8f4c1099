import Foundation
import ParleyEngine
import ParleyProcesses

/// A relay and `parley bot`s at 640x360 in a lab, each with a statistics file.
public struct LabCall: Sendable {
    public let folder: String
    public let names: [String]
    public let relay: BackgroundProcess
    public let bots: [BackgroundProcess]
    /// The user-space elements on the media paths of members whose links ask for one.
    public let elements: [EmulatedLink]

    public static func start(
        _ parley: String, in lab: NetworkLab, members: [NetworkLab.Member], tag: String, seconds: Int = 40,
        chatEvery: Double? = nil, botArguments: [String] = []
    ) async throws -> LabCall {
        let folder = NSTemporaryDirectory() + "parley-lab-\(tag)-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let (relayPath, relayArguments) = lab.command(
            in: lab.relayNamespace, parley,
            ["serve", "--host", "0.0.0.0", "--port", "7878", "--insecure", "--state-dir", folder])
        let relay = try BackgroundProcess(relayPath, relayArguments, outputPath: "\(folder)/relay.log")
        try await relay.output(containing: "relay listening", within: .seconds(10))
        let elements = try await lab.startElements(relayPort: 7878)
        let bots = try members.map { member in
            let (path, arguments) = lab.command(
                in: member.namespace, parley,
                [
                    "bot", "standup", "--server", "\(member.relayAddress):7878", "--insecure", "--name", member.name,
                    "--profile", "640x360", "--duration", "\(seconds)", "--stats-file", "\(folder)/\(member.name).json",
                ] + (chatEvery.map { ["--chat-every", "\($0)"] } ?? []) + botArguments)
            return try BackgroundProcess(path, arguments, outputPath: "\(folder)/\(member.name).log")
        }
        return LabCall(folder: folder, names: members.map(\.name), relay: relay, bots: bots, elements: elements)
    }

    public func report(_ name: String) -> CallStatisticsReport? {
        try? CallStatisticsFile(path: "\(folder)/\(name).json").read()
    }

    /// Frames `name` decoded of its first peer so far.
    public func framesDecoded(by name: String) -> Int { report(name)?.peers.first?.framesDecoded ?? 0 }

    /// What `name` received of `peer` so far: frames decoded, sound frames played and concealed.
    public func received(by name: String, of peer: String) -> (frames: Int, played: Int, concealed: Int) {
        guard let entry = report(name)?.peers.first(where: { $0.name == peer }) else { return (0, 0, 0) }
        return (entry.framesDecoded, entry.audioPlayed, entry.concealments)
    }

    /// What each `receiver←sender` pair got over `seconds` of wall time: frames decoded a second, and the share of
    /// the sender's voice the receiver concealed.
    /// Each rate is over the time between the receiver's two statistics files (rewritten once a second), not the
    /// wall time between reading them: that is up to a second off either way.
    public func window(_ pairs: [(String, String)], seconds: Int) async throws -> [String: (
        fps: Double, concealed: Double
    )] {
        let before = pairs.map { (report($0.0)?.time ?? 0, received(by: $0.0, of: $0.1)) }
        try await Task.sleep(for: .seconds(seconds))  // a measurement window of wall time
        var seen: [String: (fps: Double, concealed: Double)] = [:]
        for (pair, (time, start)) in zip(pairs, before) {
            let elapsed = max(0.5, (report(pair.0)?.time ?? 0) - time)
            let end = received(by: pair.0, of: pair.1)
            let played = max(1, end.played - start.played)
            seen["\(pair.0)←\(pair.1)"] = (
                Double(end.frames - start.frames) / elapsed,
                Double(end.concealed - start.concealed) / Double(played)
            )
        }
        return seen
    }

    /// Every bot in the call, media bound, receiving the others' audio.
    public func waitUntilBound() async throws {
        try await waitUntil("\(names.joined(separator: " and ")) bound and receiving audio", timeout: .seconds(15)) {
            names.allSatisfy { name in
                guard let report = report(name) else { return false }
                return report.mediaBound && (report.peers.first?.audioPackets ?? 0) > 20
            }
        }
    }

    public func stop() {
        for bot in bots { bot.stop() }
        relay.stop()
        for element in elements { Task { await element.stop() } }
        try? FileManager.default.removeItem(atPath: folder)
    }
}
