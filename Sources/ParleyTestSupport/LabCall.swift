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

    /// What each `receiver←sender` pair got over `seconds` of wall time: frames decoded a second, and the share of
    /// the sender's voice the receiver concealed (`Window`).
    public func window(_ pairs: [(String, String)], seconds: Int) async throws -> [String: (
        fps: Double, concealed: Double
    )] {
        let end = try await window(after: Snapshot(self), seconds: seconds)
        var seen: [String: (fps: Double, concealed: Double)] = [:]
        for (receiver, sender) in pairs {
            seen["\(receiver)←\(sender)"] = (end.fps(receiver, of: sender), end.concealed(receiver, of: sender))
        }
        return seen
    }

    /// Waits `seconds` of wall time, then reads everyone again.
    public func window(after start: Snapshot, seconds: Int) async throws -> Window {
        try await Task.sleep(for: .seconds(seconds))  // a measurement window of wall time
        return Window(before: start, after: Snapshot(self))
    }

    /// Every member's statistics at one moment, each file read once: its time and its counters are one rewrite's.
    public struct Snapshot: Sendable {
        public var reports: [String: CallStatisticsReport]

        public init(_ call: LabCall) {
            reports = Dictionary(
                uniqueKeysWithValues: call.names.compactMap { name in call.report(name).map { (name, $0) } })
        }

        /// What `receiver` holds of `sender`.
        public func peer(_ receiver: String, _ sender: String) -> CallStatisticsReport.Peer? {
            reports[receiver]?.peers.first { $0.name == sender }
        }
    }

    /// What happened between two snapshots. Each rate is over the time between the member's own two statistics
    /// files (rewritten once a second), not the wall time between reading them: that is up to a second off.
    public struct Window: Sendable {
        public var before: Snapshot
        public var after: Snapshot

        public init(before: Snapshot, after: Snapshot) {
            self.before = before
            self.after = after
        }

        /// Seconds between `name`'s two files.
        public func seconds(_ name: String) -> Double {
            max(0.5, (after.reports[name]?.time ?? 0) - (before.reports[name]?.time ?? 0))
        }

        /// How much a counter of what `receiver` holds of `sender` grew.
        func grew(_ receiver: String, _ sender: String, _ counter: (CallStatisticsReport.Peer) -> Int?) -> Int {
            (after.peer(receiver, sender).flatMap(counter) ?? 0) - (before.peer(receiver, sender).flatMap(counter) ?? 0)
        }

        /// Frames `receiver` decoded of `sender` a second.
        public func fps(_ receiver: String, of sender: String) -> Double {
            Double(grew(receiver, sender) { $0.framesDecoded }) / seconds(receiver)
        }

        /// The share of `sender`'s voice `receiver` concealed.
        public func concealed(_ receiver: String, of sender: String) -> Double {
            Double(grew(receiver, sender) { $0.concealments })
                / Double(max(1, grew(receiver, sender) { $0.audioPlayed }))
        }

        /// Milliseconds `receiver`'s picture of `sender` stood still (gaps of over 300 ms).
        public func frozenMs(_ receiver: String, of sender: String) -> Int {
            grew(receiver, sender) { $0.videoFrozenMs }
        }

        /// Sound dropouts `receiver` heard of `sender`.
        public func dropouts(_ receiver: String, of sender: String) -> Int {
            grew(receiver, sender) { $0.audioDropouts }
        }

        /// What `name` sent, video and audio RTP bytes, in kbit/s.
        public func sendKbps(_ name: String) -> Double {
            func bytes(_ snapshot: Snapshot) -> Int {
                guard let report = snapshot.reports[name] else { return 0 }
                return report.videoBytesSent + report.audioBytesSent
            }
            return Double(bytes(after) - bytes(before)) * 8 / 1_000 / seconds(name)
        }
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
