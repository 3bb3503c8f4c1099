import Foundation
import ParleyProcesses

/// A call of headless Chromiums in the network lab, the reference `parley-bench network` measures Parley beside:
/// one Chromium per member in the member's namespace, a mesh of peer connections (Chromium's own congestion control,
/// GCC), every packet through a TURN server (coturn) in the relay's namespace, so Chromium's media crosses the same
/// uplink and downlink, `tc` buckets, nftables rules and user-space elements as a Parley call's media through its
/// relay. Fake devices play the same clip and voice files as the Parley bots it is compared with.
public struct ChromiumCall: Sendable {
    public let folder: String
    public let names: [String]
    public let turn: BackgroundProcess
    public let browsers: [BackgroundProcess]
    public let signaling: LabSignaling
    public let elements: [EmulatedLink]
    /// Sound alone, from a sound server (`SoundDevices`): no pictures to wait for.
    public var soundOnly = false

    /// Chromiums that capture and play through a sound server instead of files, as the mouth-to-ear benchmark's
    /// do: each member's environment by name (its sound server, microphone and speaker: `SoundServer`'s client
    /// environment) and an X display to paint on (a Chromium here plays sound only with a window). Each sends its
    /// microphone alone, echo cancellation, noise suppression and gain control off (the page's `sound=1`).
    public struct SoundDevices: Sendable {
        public var display: String
        public var environment: [String: [String: String]]

        public init(display: String, environment: [String: [String: String]]) {
            self.display = display
            self.environment = environment
        }
    }

    /// The TURN server's port on every relay address (UDP and TCP).
    public static let turnPort = 3478
    /// The signaling server's port.
    public static let signalingPort = 8090

    static let chromium = "/usr/bin/chromium"
    static let turnserver = "/usr/bin/turnserver"

    /// Why a Chromium call cannot run here, nil when it can.
    public static var unavailableReason: String? {
        if let reason = NetworkLab.unavailableReason { return reason }
        for (tool, package) in [(chromium, "chromium"), (turnserver, "coturn")]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (Debian's \(package); `make bench-network` installs it)"
        }
        return nil
    }

    /// The call page: Resources/lab/chromium-call.html (`PARLEY_RESOURCES` overrides the Resources folder).
    public static var page: String {
        if let path = ProcessInfo.processInfo.environment["PARLEY_RESOURCES"], !path.isEmpty {
            return path + "/lab/chromium-call.html"
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Resources/lab/chromium-call.html").path
    }

    /// Starts TURN, signaling, the elements of members whose links ask for one, and a Chromium per member sending
    /// `video` (a .y4m file at 640x360) capped at `videoKbps` and `audio` (a .wav file), or with `sound` its
    /// microphone alone.
    public static func start(
        in lab: NetworkLab, members: [NetworkLab.Member], tag: String, video: String, audio: String, videoKbps: Int,
        sound: SoundDevices? = nil
    ) async throws -> ChromiumCall {
        if let reason = unavailableReason { throw NetworkLabError(description: "Chromium in the lab: \(reason)") }
        let folder = NSTemporaryDirectory() + "parley-chromium-\(tag)-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let listening = ["127.0.0.1"] + members.map(\.relayAddress)
        let (turnPath, turnArguments) = lab.command(
            in: lab.relayNamespace, turnserver,
            [
                "-n", "--listening-port", "\(turnPort)", "--relay-ip", members[0].relayAddress, "--lt-cred-mech",
                "--user", "lab:lab", "--realm", "lab", "--no-tls", "--no-dtls", "--no-cli", "--allow-loopback-peers",
                "--userdb", "\(folder)/turndb", "--pidfile", "\(folder)/turn.pid", "--log-file", "stdout",
                "--simple-log", "--no-stdout-log",
            ] + listening.flatMap { ["--listening-ip", $0] })
        let turn = try BackgroundProcess(turnPath, turnArguments, outputPath: "\(folder)/turn.log")
        var browsers: [BackgroundProcess] = []
        var signaling: LabSignaling?
        var elements: [EmulatedLink] = []
        do {
            try await waitUntil("coturn listening", timeout: .seconds(10), every: .milliseconds(100)) {
                guard turn.exitStatusNow() == nil else {
                    throw NetworkLabError(description: "turnserver exited: \(turn.output.suffix(500))")
                }
                return turn.output.contains("Total General servers")
            }
            signaling = try await LabSignaling.start(in: lab.relayNamespace, port: signalingPort, page: page)
            elements = try await lab.startElements(relayPort: turnPort)
            for member in members {
                let origin = "http://\(member.relayAddress):\(signalingPort)"
                let peers = members.map(\.name).filter { $0 != member.name }.joined(separator: ",")
                let url =
                    "\(origin)/call.html?me=\(member.name)&peers=\(peers)&turn=\(member.relayAddress):\(turnPort)"
                    + "&kbps=\(videoKbps)"
                    // The user-space element carries UDP only: a member behind one reaches TURN over UDP alone, as
                    // Parley's media stays on UDP while it binds, so neither escapes the link's delay and loss.
                    + (member.link.needsElement ? "&tcp=0" : "")
                let devices =
                    sound == nil
                    ? [
                        "--headless=new", "--disable-gpu", "--mute-audio", "--use-fake-device-for-media-stream",
                        "--use-file-for-fake-video-capture=\(video)", "--use-file-for-fake-audio-capture=\(audio)",
                    ] : ["--window-position=0,0", "--window-size=400,300"]
                let profile = "\(folder)/profile-\(member.name)"
                let browserArguments =
                    ["--no-sandbox", "--no-first-run", "--use-fake-ui-for-media-stream"] + devices + [
                        "--autoplay-policy=no-user-gesture-required",
                        // The page is plain http inside the lab; the camera needs a secure context.
                        "--unsafely-treat-insecure-origin-as-secure=\(origin)",
                        "--user-data-dir=\(profile)", url + (sound == nil ? "" : "&sound=1"),
                    ]
                let browser =
                    sound.map { sound in
                        ChildEnvironment.command(
                            environment: sound.environment[member.name, default: [:]].merging([
                                "DISPLAY": sound.display, "XDG_CONFIG_HOME": "\(profile)/.config",
                                "XDG_CACHE_HOME": "\(profile)/.cache",
                            ]) { $1 }, program: chromium, arguments: browserArguments)
                    } ?? (chromium, browserArguments)
                let (path, arguments) = lab.command(in: member.namespace, browser.0, browser.1)
                browsers.append(try BackgroundProcess(path, arguments, outputPath: "\(folder)/\(member.name).log"))
            }
        } catch {
            for browser in browsers { browser.stop() }
            turn.stop()
            await signaling?.stop()
            for element in elements { await element.stop() }
            throw error
        }
        return ChromiumCall(
            folder: folder, names: members.map(\.name), turn: turn, browsers: browsers, signaling: signaling!,
            elements: elements, soundOnly: sound != nil)
    }

    /// Every member's last report.
    public var reports: [String: ChromiumReport] { signaling.reports }

    /// Every member receiving every other's sound and pictures.
    public func waitUntilFlowing(timeout: Duration = .seconds(45)) async throws {
        do {
            try await waitUntilReceiving(timeout: timeout)
        } catch let timeout as WaitTimeout {
            // What each page got of each peer, to tell a call that never connected from one that is slow.
            let seen = names.map { name in
                guard let report = signaling.reports[name] else { return "\(name): no report" }
                return "\(name): "
                    + report.peers.sorted { $0.key < $1.key }.map { peer, got in
                        "\(peer) \(got.framesDecoded) frames, \(got.totalSamples) samples, path \(got.path)"
                    }.joined(separator: "; ")
            }
            throw NetworkLabError(
                description: "\(timeout): \(seen.joined(separator: " | ")); turnserver: "
                    + "\(turn.output.split(separator: "\n").suffix(5).joined(separator: " / "))")
        }
    }

    private func waitUntilReceiving(timeout: Duration) async throws {
        try await waitUntil("every Chromium receiving every peer", timeout: timeout, every: .milliseconds(200)) {
            if let (name, error) = signaling.errors.first {
                throw NetworkLabError(description: "Chromium \(name)'s page failed: \(error)")
            }
            for browser in browsers where browser.exitStatusNow() != nil {
                throw NetworkLabError(description: "Chromium exited: \(browser.output.suffix(800))")
            }
            let reports = signaling.reports
            return names.allSatisfy { name in
                guard let report = reports[name], report.peers.count == names.count - 1 else { return false }
                return report.peers.values.allSatisfy { $0.totalSamples > 0 && ($0.framesDecoded > 0 || soundOnly) }
            }
        }
    }

    public func stop() async {
        for browser in browsers { browser.signal(SIGTERM) }
        for browser in browsers { browser.stop() }
        turn.stop()
        await signaling.stop()
        for element in elements { await element.stop() }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Every member's report at one moment.
    public struct Snapshot: Sendable {
        public var reports: [String: ChromiumReport]

        public init(_ call: ChromiumCall) { reports = call.reports }
    }

    /// What happened between two snapshots; each rate over the time between the member's own two reports.
    public struct Window: Sendable {
        public var before: Snapshot
        public var after: Snapshot

        public init(before: Snapshot, after: Snapshot) {
            self.before = before
            self.after = after
        }

        public func seconds(_ name: String) -> Double {
            max(0.5, ((after.reports[name]?.ms ?? 0) - (before.reports[name]?.ms ?? 0)) / 1_000)
        }

        func grew(_ receiver: String, _ sender: String, _ counter: (ChromiumReport.Peer) -> Double) -> Double {
            (after.reports[receiver]?.peers[sender].map(counter) ?? 0)
                - (before.reports[receiver]?.peers[sender].map(counter) ?? 0)
        }

        /// Frames `receiver` decoded of `sender` a second.
        public func fps(_ receiver: String, of sender: String) -> Double {
            grew(receiver, sender) { Double($0.framesDecoded) } / seconds(receiver)
        }

        /// The share of `sender`'s sound samples `receiver` concealed.
        public func concealed(_ receiver: String, of sender: String) -> Double {
            grew(receiver, sender) { Double($0.concealedSamples) }
                / max(1, grew(receiver, sender) { Double($0.totalSamples) })
        }

        /// Concealment events (runs of concealed samples) in `receiver`'s sound of `sender`.
        public func concealmentEvents(_ receiver: String, of sender: String) -> Int {
            Int(grew(receiver, sender) { Double($0.concealmentEvents) })
        }

        /// Milliseconds `receiver`'s picture of `sender` stood still: gaps of over 300 ms between presented frames.
        public func frozenMs(_ receiver: String, of sender: String) -> Int {
            Int(grew(receiver, sender) { $0.frozenMs }.rounded())
        }

        /// What `name` sent, video and audio RTP payload bytes over all its connections, in kbit/s.
        public func sendKbps(_ name: String) -> Double {
            func bytes(_ snapshot: Snapshot) -> Int {
                guard let report = snapshot.reports[name] else { return 0 }
                return report.sentVideoBytes + report.sentAudioBytes
            }
            return Double(bytes(after) - bytes(before)) * 8 / 1_000 / seconds(name)
        }
    }

    /// Waits `seconds` of wall time, then reads everyone again.
    public func window(after start: Snapshot, seconds: Int) async throws -> Window {
        try await Task.sleep(for: .seconds(seconds))  // a measurement window of wall time
        return Window(before: start, after: Snapshot(self))
    }
}
