import Foundation
import ParleyEngine
import ParleySecurity

/// What end-to-end encryption costs a client in a 1:1 call at 640x480@30: the same call measured with and without
/// it in one run (CPU of each headless client), and the SFrame work alone timed on the packet stream such a call
/// carries, which is too small to see reliably beside encoding and decoding.
public enum EncryptionBench {
    /// Rounds of the clear/encrypted pair (alternating which goes first).
    static let rounds = 2
    /// The target from issue 11: encryption adds at most this share of a core per client.
    static let budgetPercent = 3.0

    /// Runs both parts and returns one table.
    public static func run(_ settings: CallBench.Settings, log: (String) -> Void) throws -> [BenchTable] {
        let tools = try CallBench.Tools.find(parley: settings.parleyPath, windowed: false)
        let directory = try CallBench.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let media = try CallBench.BenchMedia.prepare(
            videoSeconds: max(48, settings.groupSeconds + CallBench.warmUp + 15), log: log)
        let secret = ["--encryption", "aes-128-gcm", "--secret", "benchmark room secret"]

        var clear: [CallBench.PairResult] = []
        var sealed: [CallBench.PairResult] = []
        for round in 0..<rounds {
            for encrypted in round % 2 == 0 ? [false, true] : [true, false] {
                log(
                    "encryption bench round \(round + 1)/\(rounds): 1:1 headless, "
                        + (encrypted ? "encrypted" : "clear") + ", \(Int(settings.groupSeconds)) s")
                let result = try CallBench.parleyPair(
                    settings, headless: true, seconds: settings.groupSeconds, tools: tools, media: media,
                    directory: directory, extraArguments: encrypted ? secret : [])
                try checkCipher(in: directory, encrypted: encrypted)
                if encrypted { sealed.append(result) } else { clear.append(result) }
            }
        }

        var table = BenchTable(
            title: "End-to-end encryption (SFrame) cost per client, 1:1 call at 640x480@30, "
                + "\(CallBench.videoKbps) kbit/s video + Opus",
            columns: ["Measure", "Clear", "Encrypted", "Added", "Budget"])
        func cpu(_ results: [CallBench.PairResult], _ client: Int) -> Double? {
            Sample.median(
                results.compactMap { $0.clients.indices.contains(client) ? $0.clients[client].process.cpuPercent : nil }
            )
        }
        func shown(_ results: [CallBench.PairResult], _ client: Int) -> Double? {
            Sample.median(
                results.compactMap { $0.clients.indices.contains(client) ? $0.clients[client].shownPerSecond : nil })
        }
        for (client, name) in ["alice", "bob"].enumerated() {
            let before = cpu(clear, client)
            let after = cpu(sealed, client)
            table.add([
                "\(name) (`parley bot`, decodes everything), CPU % of a core, median of \(rounds)",
                before.map { formatted($0) } ?? "–", after.map { formatted($0) } ?? "–",
                before.flatMap { b in after.map { formatted($0 - b) } } ?? "–",
                "≤ \(formatted(budgetPercent, decimals: 0))",
            ])
            table.add([
                "\(name): frames decoded per second",
                shown(clear, client).map { formatted($0) } ?? "–", shown(sealed, client).map { formatted($0) } ?? "–",
                "", "",
            ])
        }
        for suite in SFrameCipherSuite.allCases {
            let percent = try sframeWorkPercent(suite: suite)
            table.add([
                "SFrame alone (\(suite.name)): seal own + open peer's frames, CPU % of a core", "0",
                formatted(percent, decimals: 2),
                formatted(percent, decimals: 2), "≤ \(formatted(budgetPercent, decimals: 0))",
            ])
        }
        table.notes = [
            "Whole-call rows: two `parley bot`s through `parley serve` on loopback (TLS signaling in both columns), "
                + "the bench's Y4M and WAV as sources, \(Int(settings.groupSeconds)) s windows after "
                + "\(formatted(CallBench.warmUp, decimals: 0)) s warm-up; clear and encrypted calls alternate. "
                + "Their difference is within run-to-run noise when it is under a percent or two.",
            "SFrame-alone rows: the frames one client seals and opens per second of such a call (30 video frames "
                + "and 50 Opus frames each way), timed over \(Int(simulatedSeconds)) s "
                + "of call media, median of 5; includes key-id lookup, replay window and metadata authentication.",
        ]
        return [table]
    }

    /// The stats files in `directory` say whether the call really was encrypted, and that nothing failed to open.
    static func checkCipher(in directory: String, encrypted: Bool) throws {
        for name in ["alice", "bob"] {
            let path = "\(directory)/parley-\(name).json"
            let stats: CallStatisticsReport
            do {
                stats = try CallStatisticsFile(path: path).read()
            } catch {
                throw CallBenchError.unexpected("\(name)'s statistics after the call: \(error)")
            }
            let cipher = stats.encryption
            let failures = stats.peers.map(\.decryptFailures)
            guard cipher == (encrypted ? "AES-128-GCM" : nil), !failures.isEmpty,
                failures.allSatisfy({ $0 == 0 })
            else {
                throw CallBenchError.unexpected(
                    "\(name)'s statistics show cipher \(cipher ?? "none") and decrypt failures \(failures) "
                        + "in the \(encrypted ? "encrypted" : "clear") call (\(path))")
            }
        }
    }

    static let simulatedSeconds = 10.0

    /// The share of a core that sealing one client's sent frames and opening its received ones takes (camera and
    /// sound are sealed a whole frame at a time).
    static func sframeWorkPercent(suite: SFrameCipherSuite) throws -> Double {
        let room = try CallEncryption(secret: "benchmark room secret", room: "bench", suite: suite)
        let frameBytes = CallBench.videoKbps * 1000 / 8 / 30
        // A frame that is not a keyframe (first byte's low bit set), and an Opus frame.
        let videoFrame = [0x31] + [UInt8](repeating: 3, count: frameBytes - 1)
        let audioFrame = [UInt8](repeating: 4, count: 80)
        var samples: [Double] = []
        for _ in 0..<5 {
            let mine = MediaSealer(encryption: room)
            let theirs = MediaSealer(encryption: room)
            var opener = MediaOpener(encryption: room)
            // The peer's frames are sealed beforehand: only our own work is timed.
            var incomingVideo: [[UInt8]] = []
            var incomingAudio: [[UInt8]] = []
            for _ in 0..<Int(simulatedSeconds) {
                for _ in 0..<30 { incomingVideo.append(try theirs.sealVideoFrame(videoFrame)) }
                for _ in 0..<50 { incomingAudio.append(try theirs.sealAudioFrame(audioFrame)) }
            }
            let started = ContinuousClock.now
            for _ in 0..<Int(simulatedSeconds) {
                for _ in 0..<30 { _ = try mine.sealVideoFrame(videoFrame) }
                for _ in 0..<50 { _ = try mine.sealAudioFrame(audioFrame) }
            }
            for frame in incomingVideo { _ = try opener.openVideoFrame(frame) }
            for frame in incomingAudio { _ = try opener.openAudioFrame(frame) }
            let elapsed = ContinuousClock.now - started
            samples.append(Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
        }
        samples.sort()
        return samples[samples.count / 2] / simulatedSeconds * 100
    }
}
