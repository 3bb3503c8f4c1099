// The mouth-to-ear paths between a terminal and a browser guest (issue 53): one `parley join` and the guests' page,
// served by the same `parley serve`, in a Chromium tab on the benchmark's sound server; and the Chromium tab the
// paths share with the Chromium-to-Chromium row.
import Foundation
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// A Chromium tab under Xvfb on the sound server (`sink` its speaker, `source` its microphone) showing `url`, its
/// certificate errors ignored (the relay's own certificate is self-signed); its stderr, console lines included, in
/// `browser.output`.
final class ChromiumTab {
    let browser: BackgroundProcess
    private let display: VirtualDisplay
    private let family: ProcessFamily
    private let profile: String
    private var everyone = Set<ProcessFamily.Member>()

    init(
        tools: MouthToEarBench.Tools, sound: SoundServer, directory: String, url: String, sink: String, source: String
    ) throws {
        profile = directory + "/m2e-chromium-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        display = try VirtualDisplay(xvfb: tools.xvfb, directory: directory)
        let environment =
            sound.clientEnvironment(home: profile, sink: sink, source: source)
            .merging([
                "DISPLAY": display.name, "XDG_CONFIG_HOME": "\(profile)/.config", "XDG_CACHE_HOME": "\(profile)/.cache",
            ]) { $1 }
        let arguments =
            (geteuid() == 0 ? ["--no-sandbox"] : []) + [
                "--no-first-run", "--no-default-browser-check", "--user-data-dir=\(profile)",
                "--autoplay-policy=no-user-gesture-required", "--use-fake-ui-for-media-stream",
                "--ignore-certificate-errors", "--enable-logging=stderr", "--v=0", "--window-position=0,0",
                "--window-size=400,300", url,
            ]
        let command = ChildEnvironment.command(environment: environment, program: tools.chromium, arguments: arguments)
        do {
            browser = try BackgroundProcess(
                command.path, command.arguments, outputPath: directory + "/m2e-chromium-\(profile.suffix(8)).log")
        } catch {
            display.stop()
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
        family = ProcessFamily(root: browser.pid, marker: profile)
    }

    /// Notes the browser's processes as they are now (its renderer and audio service start after it), so `stop`
    /// ends every one.
    func noteProcesses() { everyone.formUnion(family.members()) }

    func stop() {
        noteProcesses()
        browser.stop(grace: 5)
        ProcessFamily.kill(everyone)
        display.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }
}

extension MouthToEarBench {
    /// The guests' page of the relay at `port`, joining the mouth-to-ear room as `name` with its microphone as it is
    /// (`processing=off`: no echo cancellation, noise suppression or gain control, as every client here).
    static func guestPage(port: UInt16, name: String) -> String {
        "https://127.0.0.1:\(port)/mouth-to-ear?name=\(name)&join=1&processing=off"
    }

    /// A terminal talks, a browser guest listens: `parley join` (the microphone, no speaker) and the page in a
    /// Chromium tab (a silent microphone, the speaker) through `parley serve`.
    static func terminalToPage(tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder) throws
        -> PathResult
    {
        let (relay, port, _) = try CallBench.startRelay(parley: tools.parley, directory: directory)
        defer { relay.stop() }
        let statistics = "\(directory)/parley-\(ParleyNames.talker)-m2e.json"
        let talker = try joinPane(
            tools: tools, sound: sound, directory: directory, server: "127.0.0.1:\(port)", name: ParleyNames.talker,
            arguments: ["--speaker", "none"], statistics: statistics)
        defer { talker.close() }
        let tab = try ChromiumTab(
            tools: tools, sound: sound, directory: directory, url: guestPage(port: port, name: ParleyNames.listener),
            sink: Device.ear, source: Device.silence)
        defer { tab.stop() }
        // In the call once the talker's statistics name the page; playing once the tab has a stream on the speaker.
        try CallBench.waitUntil(seconds: 45, "the page in the call, playing on the speaker") {
            let inCall = (try? LatencyFields.read(path: statistics))?.peer(ParleyNames.listener) != nil
            let playing = (try? sound.pactl(["list", "short", "sink-inputs"]).output)?.contains { $0 == "\n" } ?? false
            return inCall && playing
        }
        tab.noteProcesses()
        Thread.sleep(forTimeInterval: warmUp)
        let (matches, streams) = try recorder.clicks()
        tab.noteProcesses()
        return PathResult(
            path: .terminalToPage,
            label: "Parley → browser guest: `parley join` (160x120 video) through `parley serve` to the guests' page "
                + "in a Chromium\(chromiumVersion(tools, in: directory)) tab (DTLS-SRTP)",
            matches: matches, streams: streams)
    }

    /// A browser guest talks, a terminal listens: the page in a Chromium tab (the microphone, no speaker that is
    /// heard) and `parley join` (a silent microphone, the speaker) through `parley serve`.
    static func pageToTerminal(tools: Tools, sound: SoundServer, directory: String, recorder: ClickRecorder) throws
        -> PathResult
    {
        let (relay, port, _) = try CallBench.startRelay(parley: tools.parley, directory: directory)
        defer { relay.stop() }
        let statistics = "\(directory)/parley-\(ParleyNames.listener)-m2e.json"
        let listener = try joinPane(
            tools: tools, sound: sound, directory: directory, server: "127.0.0.1:\(port)",
            name: ParleyNames.listener, arguments: ["--audio", "silence"], statistics: statistics)
        defer { listener.close() }
        let tab = try ChromiumTab(
            tools: tools, sound: sound, directory: directory, url: guestPage(port: port, name: ParleyNames.talker),
            sink: Device.void, source: Device.microphone)
        defer { tab.stop() }
        try CallBench.waitUntil(seconds: 45, "the Parley listener playing the page's audio") {
            ((try? LatencyFields.read(path: statistics))?.peer(ParleyNames.talker)?.audioPlayed ?? 0) > 0
        }
        tab.noteProcesses()
        Thread.sleep(forTimeInterval: warmUp)
        let before = try? LatencyFields.read(path: statistics)
        let (matches, streams) = try recorder.clicks()
        Thread.sleep(forTimeInterval: 1.1)  // the next statistics write covers the whole train
        tab.noteProcesses()
        var notes: [String] = []
        if let then = before?.peer(ParleyNames.talker),
            let now = (try? LatencyFields.read(path: statistics))?.peer(ParleyNames.talker)
        {
            let buffered = now.milliseconds["audioDelayMs"].map { ", its jitter buffer \(formatted($0)) ms" } ?? ""
            notes.append(
                "Parley's listener of the browser guest during the clicks: \(now.concealments - then.concealments) "
                    + "frames concealed, \(now.audioPlayed - then.audioPlayed) played\(buffered).")
        }
        return PathResult(
            path: .pageToTerminal,
            label: "browser guest → Parley: the guests' page in a Chromium\(chromiumVersion(tools, in: directory)) "
                + "tab (DTLS-SRTP, audio only) through `parley serve` to `parley join`",
            matches: matches, notes: notes, streams: streams)
    }
}
