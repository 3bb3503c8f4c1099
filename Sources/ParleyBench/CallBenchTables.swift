import Foundation
import ParleyMedia

extension CallBench {
    // MARK: - Tables

    static func pairTable(_ settings: Settings, _ runs: PairRuns, media: BenchMedia) -> BenchTable {
        var table = BenchTable(
            title: "Call 1:1 on loopback, Parley vs baresip vs a Chromium tab: \(width)x\(height) at \(fps) fps, "
                + "VP8 \(videoKbps) kbit/s, Opus 32 kbit/s (\(Int(settings.pairSeconds)) s window, median of "
                + "\(settings.runs) run\(settings.runs == 1 ? "" : "s"))",
            columns: [
                "Process", "CPU % of a core", "Per side with display %", "Peak RSS MiB", "Video sent kbit/s",
                "All sent kbit/s", "Frames in/s (wire)", "Frames shown/s", "Redraws/s",
            ])
        let parley = runs.parley.map(\.sides)
        let baresip = runs.baresip.map(\.sides)
        let x11 = runs.baresipX11.map(\.sides)
        let chromium = runs.chromium.map { [$0.side] }
        let headless = runs.headless.map(\.sides)
        let parleyDefault = runs.parleyDefault.map(\.sides)
        /// One side over the runs: `index` picks the client (0 alice, 1 bob).
        func sideRow(_ label: String, _ runs: [[SideFigures]], _ index: Int) {
            let sides = runs.compactMap { $0.indices.contains(index) ? $0[index] : nil }
            table.add([
                label, cell(sides.map(\.cpuPercent)), cell(sides.map(\.withDisplayPercent)),
                cell(sides.map(\.peakMiB)), cell(sides.map { $0.wire?.videoKbps }, decimals: 0),
                cell(sides.map { $0.wire?.totalKbps }, decimals: 0),
                cell(sides.map { $0.wire?.framesArrivingPerSecond }),
                cell(sides.map(\.shownPerSecond)), cell(sides.map(\.redrawsPerSecond)),
            ])
        }
        func ratioRow(_ label: String, _ ours: [[SideFigures]], _ theirs: [[SideFigures]]) {
            func ratio(_ value: (SideFigures) -> Double?) -> String {
                guard let middle = sideRatio(ours, theirs, value) else { return "n/a" }
                return formatted(middle, decimals: 2) + "x"
            }
            table.add([
                label, ratio(\.cpuPercent), ratio(\.withDisplayPercent), ratio(\.peakMiB), ratio { $0.wire?.videoKbps },
                ratio { $0.wire?.totalKbps }, ratio { $0.wire?.framesArrivingPerSecond }, ratio(\.shownPerSecond), "",
            ])
        }
        let pane = "\(paneColumns)x\(paneRows)"
        sideRow("Parley alice (`parley join`, draws into tmux \(pane))", parley, 0)
        sideRow("Parley bob (`parley join`, draws into tmux \(pane))", parley, 1)
        if !parleyDefault.isEmpty {
            sideRow(
                "Parley's default alice (`parley join` with simulcast, each tile's layer, tmux \(CallBench.defaultPaneColumns)x\(CallBench.defaultPaneRows))",
                parleyDefault, 0)
            sideRow("Parley's default bob", parleyDefault, 1)
        }
        sideRow("baresip alice (display discarded)", baresip, 0)
        sideRow("baresip bob (display discarded)", baresip, 1)
        sideRow("baresip alice (x11 window under Xvfb)", x11, 0)
        sideRow("baresip bob (x11 window under Xvfb)", x11, 1)
        let processes = runs.chromium.map { Double($0.tab.processes) }
        sideRow(
            "Chromium tab, per side: all \(cell(processes, decimals: 0)) processes ÷ 2 (RSS: the whole tab)",
            chromium, 0)
        ratioRow("**Parley / baresip (display discarded)** (mean of the two clients)", parley, baresip)
        ratioRow("**Parley (+ tmux) / baresip x11 (+ its Xvfb)**: equal work", parley, x11)
        ratioRow("**Parley (+ tmux) / Chromium tab (+ Xvfb)**, per side", parley, chromium)
        if !parleyDefault.isEmpty {
            ratioRow("**Parley's default (+ tmux) / baresip x11 (+ its Xvfb)**", parleyDefault, x11)
            ratioRow("**Parley's default (+ tmux) / Chromium tab (+ Xvfb)**", parleyDefault, chromium)
        }
        if !headless.isEmpty {
            sideRow("Parley alice headless (`parley bot`: decodes, draws nothing)", headless, 0)
            sideRow("Parley bob headless (`parley bot`)", headless, 1)
            ratioRow("Parley headless / baresip (display discarded)", headless, baresip)
        }
        addOtherProcessRows(to: &table, runs)

        var notes = pairNotes(settings, runs, media: media)
        let problems = Set(
            (runs.parley + runs.baresip + runs.baresipX11).compactMap(\.captureProblem)
                + runs.chromium.compactMap(\.captureProblem))
        if !problems.isEmpty { notes.append("No wire figures: " + problems.sorted().joined(separator: "; ")) }
        table.notes = notes
        return table
    }

    /// The processes in no per-side figure of their own: the relay, and each side's terminal or display.
    static func addOtherProcessRows(to table: inout BenchTable, _ runs: PairRuns) {
        func otherRow(_ label: String, _ figures: [ProcessFigures?]) {
            table.add([
                label, cell(figures.map { $0?.cpuPercent }), "", cell(figures.map { $0?.peakMiB }),
                "", "", "", "", "",
            ])
        }
        otherRow("parley serve (Parley's relay; in no per-side figure)", runs.parley.map(\.relay))
        otherRow(
            "tmux server per Parley pane (the terminal; in Parley's per-side figure)",
            runs.parley.map { run in
                let terminals = run.clients.compactMap(\.terminal)
                return mean(terminals.map(\.cpuPercent)).map {
                    ProcessFigures(cpuPercent: $0, peakMiB: mean(terminals.map(\.peakMiB)) ?? .nan)
                }
            })
        otherRow(
            "Xvfb per baresip x11 client (its own; in its per-side figure)",
            runs.baresipX11.map { run in
                let displays = run.clients.compactMap(\.display)
                return mean(displays.map(\.cpuPercent)).map {
                    ProcessFigures(cpuPercent: $0, peakMiB: mean(displays.map(\.peakMiB)) ?? .nan)
                }
            })
        otherRow("Xvfb of the Chromium tab (half in each per-side figure)", runs.chromium.map(\.display))
    }

    /// How the 1:1 call table was measured, and what each side ran.
    static func pairNotes(_ settings: Settings, _ runs: PairRuns, media: BenchMedia) -> [String] {
        let chromiumPSS = cell(runs.chromium.map(\.tab.proportionalMiB), decimals: 0)
        let exited = runs.chromium.map(\.tab.exited).max() ?? 0
        return [
            "CPU: user + system seconds of all threads from /proc/PID/stat over the window, as % of one core. "
                + "Peak RSS: VmHWM from /proc/PID/status at the end of the window.",
            "Per side with display: what one side of the call costs with the program that paints its picture: "
                + "Parley, the client + its tmux server; baresip x11, the client + its own Xvfb; the Chromium tab, "
                + "(every Chromium process + its Xvfb) ÷ 2; baresip with the display "
                + "discarded and headless Parley paint nothing, so the client alone.",
            "Wire: dumpcap on `lo` during the window; UDP payload bytes (RTP header + payload, RTCP in \"all\") "
                + "sent by each client's own sockets; streams told apart by their RTP clock rate (90 kHz video, "
                + "48 kHz audio). Parley's media goes through the relay, baresip's and Chromium's peer to peer "
                + "(Chromium's: SRTP, both sides' sockets in its network process, so its figures are the tab's ÷ 2). "
                + "Frames in/s: video RTP packets with the marker bit arriving at the client's sockets.",
            "Frames shown/s: Parley, frames decoded (`--stats-file`); baresip, frames handed to its display "
                + "(`/video_debug` on its console); Chromium, frames each `<video>` element presented "
                + "(requestVideoFrameCallback). Redraws/s: Parley's call screen written to the terminal.",
            "Headless rows: the same Parley call between two `parley bot`s (same files and settings, every frame "
                + "decoded, nothing drawn), measured over \(Int(settings.groupSeconds)) s: what drawing costs.",
            "Same work on every side: video from the same file, \(media.videoFrames) frames of Parley's synthetic "
                + "camera (moving pattern, text, sensor noise) as raw 4:2:0 Y4M (Parley `--video`, baresip "
                + "`avformat`, Chromium `--use-file-for-fake-video-capture`), "
                + "\(media.residentVideo?.how ?? "read from disk"); audio the synthetic voice as 48 kHz mono WAV "
                + "(Parley and Chromium loop a 10 s clip, baresip's `aufile` cannot loop and holds the whole "
                + "\(fileSeconds(media.longVoice)) s file, ~"
                + "\(formatted(Double(fileBytes(media.longVoice)) / 1_048_576, decimals: 1)) MiB, in memory).",
            "Parley: `parley join \((equalWorkArguments + baresipBitstreamArguments + equalWorkDisplayArguments).joined(separator: " "))` "
                + "twice, each in its own tmux server (TERM=tmux-256color), VP8 CBR at speed "
                + "\(VP8EncoderConfig.callSpeed) in bitstream version \(VP8EncoderConfig.lightProfile) as baresip sends "
                + "(Parley's default is \(VP8EncoderConfig.sharpProfile), about 1 dB sharper; the VP8 table below "
                + "says what each costs), Opus 32 kbit/s mono VOIP FEC complexity \(opusComplexity) (Parley's call "
                + "default); draws the other side's picture, its own self view hidden as baresip and the Chromium "
                + "page show none (Parley's default row keeps both defaults).",
            "baresip 1.0.0: `video_bitrate \(baresipVideoBitrateSetting)`. Its vp8 module passes this number to "
                + "libvpx's rc_target_bitrate, which is in kbit/s, so the video on the wire is ~\(videoKbps) kbit/s "
                + "like Parley's (compare the \"Video sent\" column); VP8 VBR at its fixed speed 16, bitstream "
                + "version 2 (its `g_profile`, fixed); Opus "
                + "32 kbit/s mono VOIP FEC complexity \(opusComplexity) (`opus_complexity`, as Parley's); modules "
                + "avformat, fakevideo or x11 (display), aufile, aubridge (player), cons; direct SIP call on "
                + "127.0.0.1 without a registrar. x11 rows: `video_display x11` (Debian's baresip-x11) paints the "
                + "other side's picture into a \(width)x\(height) window; each client on an Xvfb of its own "
                + "(\(VirtualDisplay.screen), -nolisten tcp) started for the call, as two desktops would be (on one "
                + "shared screen, with no window manager, one window would cover the other and go unpainted); no "
                + "self view (baresip's default).",
            "Chromium tab: Debian's `chromium` under its own Xvfb (painting, not headless), one tab, a fresh "
                + "profile; the page (`BrowserCallPage`) connects two RTCPeerConnections to each other (host "
                + "candidates, DTLS-SRTP, no signalling server), each sending the fake camera and microphone "
                + "(`--use-fake-device-for-media-stream`, fed the files above; one capture feeds both senders) to "
                + "the other, VP8 only (setCodecPreferences), maxBitrate \(videoKbps) kbit/s, degradationPreference "
                + "maintain-resolution; each side's received video (and audio) plays in its own \(width)x\(height) "
                + "`<video>`. Opus at WebRTC's own settings (a page cannot set them: 32 kbit/s mono, FEC, "
                + "complexity 9 on desktop), VP8 at WebRTC's own speed in bitstream version 0. Decoded per side: "
                + "\(cell(runs.chromium.map { mean($0.decodedPerSecond) })) frames/s, sizes "
                + "\(runs.chromium.last.map { $0.sizes.joined(separator: ", ") } ?? "n/a"), codecs "
                + "\(runs.chromium.last.map { $0.codecs.joined(separator: ", ") } ?? "n/a"). Counted: every process "
                + "of the browser (browser, zygotes, GPU, network, audio and capture services, renderers, crash "
                + "handlers) and the Xvfb. Its RSS is the sum of every process's VmHWM (shared pages once per "
                + "process); the sum of their PSS at the end of the window was \(chromiumPSS) MiB."
                + (exited > 0 ? " \(exited) process(es) exited during the window (their last CPU is missing)." : ""),
        ]
    }

    /// Per run, the mean of `ours`' sides over the mean of `theirs`' (`value` of each), then the median over runs;
    /// nil when no run has both.
    static func sideRatio(_ ours: [[SideFigures]], _ theirs: [[SideFigures]], _ value: (SideFigures) -> Double?)
        -> Double?
    {
        Sample.median(sideRatios(ours, theirs, value))
    }

    /// Per run, the mean of `ours`' sides over the mean of `theirs`' (`value` of each); runs missing a figure are
    /// left out.
    static func sideRatios(_ ours: [[SideFigures]], _ theirs: [[SideFigures]], _ value: (SideFigures) -> Double?)
        -> [Double]
    {
        zip(ours, theirs).compactMap { pair -> Double? in
            let mine = pair.0.compactMap(value)
            let others = pair.1.compactMap(value)
            guard !mine.isEmpty, mine.count == pair.0.count, !others.isEmpty, others.count == pair.1.count,
                let theirMean = mean(others), theirMean > 0, let myMean = mean(mine)
            else { return nil }
            return myMean / theirMean
        }
    }

    static func groupTable(_ settings: Settings, runs: [Int: [GroupResult]]) -> BenchTable {
        var table = BenchTable(
            title: "Group calls through the relay, \(groupProfile) at 15 fps (200 kbit/s) per peer "
                + "(\(Int(settings.groupSeconds)) s window, median of \(settings.runs) "
                + "run\(settings.runs == 1 ? "" : "s"))",
            columns: [
                "Call", "Drawing client CPU %", "Drawing client RSS MiB", "Headless CPU % median (max)",
                "Headless RSS MiB max", "Relay CPU %", "Terminal CPU %", "Total % of 2 cores",
                "Decoded fps per tile",
            ])
        for size in runs.keys.sorted() {
            let results = runs[size] ?? []
            let headlessMedian = results.map { Sample.median($0.headless.map(\.process.cpuPercent)) }
            let headlessMax = results.map { $0.headless.map(\.process.cpuPercent).max() }
            table.add([
                "\(size)-party", cell(results.map(\.drawing.process.cpuPercent)),
                cell(results.map(\.drawing.process.peakMiB)),
                cell(headlessMedian) + " (" + cell(headlessMax) + ")",
                cell(results.map { $0.headless.map(\.process.peakMiB).max() }),
                cell(results.map(\.relay.cpuPercent)), cell(results.map { $0.drawing.terminal?.cpuPercent }),
                cell(results.map { totalOfTwoCores($0) }),
                cell(results.map(\.decodedPerTile)) + " × " + "\(results.map(\.tilesDecoding).min() ?? 0) tiles",
            ])
        }
        table.notes = [
            "One client is `parley join` drawing every tile into tmux \(paneColumns)x\(paneRows); the others are "
                + "headless `parley bot`s (they decode all video and audio but draw nothing). Every peer sends "
                + "its synthetic camera and voice at the \(groupProfile) profile.",
            "Total: all clients + relay + the drawing client's terminal (tmux), as % of the machine's 2 cores. "
                + "The goal is at most 70 % (30 % to spare).",
        ]
        return table
    }

    static func totalOfTwoCores(_ result: GroupResult) -> Double {
        let clients = result.headless.map(\.process.cpuPercent).reduce(0, +) + result.drawing.process.cpuPercent
        return (clients + result.relay.cpuPercent + (result.drawing.terminal?.cpuPercent ?? 0)) / 2
    }

    static func goalTable(_ settings: Settings, _ runs: PairRuns, groups: [Int: [GroupResult]]) -> BenchTable {
        var table = BenchTable(title: "Call benchmark goals", columns: ["Goal", "Target", "Measured", "Met"])
        let parley = runs.parley.map(\.sides)
        let baresip = runs.baresip.map(\.sides)
        let x11 = runs.baresipX11.map(\.sides)
        if let ratio = sideRatio(parley, baresip, \.cpuPercent) {
            table.add([
                "1:1 client CPU, Parley (drawing included) / baresip (display discarded)", "≤ 0.80x",
                formatted(ratio, decimals: 2) + "x", ratio <= 0.8 ? "yes" : "**no**",
            ])
        }
        let equalWork = sideRatios(parley, x11, \.withDisplayPercent)
        if let ratio = Sample.median(equalWork) {
            // The median decides; the runs' spread shows how far one run can be trusted on its own.
            let under = equalWork.filter { $0 <= 1.0 }.count
            let spread =
                equalWork.count > 1
                ? " (runs \(formatted(equalWork.min() ?? .nan, decimals: 2))–"
                    + "\(formatted(equalWork.max() ?? .nan, decimals: 2))x, \(under) of \(equalWork.count) ≤ 1.00x)"
                : ""
            table.add([
                "Equal work, per side: Parley (drawing client + tmux) / baresip x11 (baresip + its Xvfb)",
                "≤ 1.00x", formatted(ratio, decimals: 2) + "x" + spread, ratio <= 1.0 ? "yes" : "**no**",
            ])
        }
        for row in defaultGoalRows(runs) { table.add(row) }
        let peaks = runs.parley.flatMap { $0.clients.map(\.process.peakMiB) }
        if let peak = Sample.median(runs.parley.map { run in run.clients.map(\.process.peakMiB).max() ?? .nan }) {
            table.add([
                "Parley client peak RSS (1:1, larger client)", "≤ 50 MiB",
                formatted(peak) + " MiB"
                    + " (max \(formatted(peaks.max() ?? .nan)))", peak <= 50 ? "yes" : "**no**",
            ])
        }
        if let ratio = sideRatio(baresip, parley, { $0.wire?.videoKbps }) {
            table.add([
                "Fair comparison: baresip video on the wire / Parley's", "0.90x…1.10x",
                formatted(ratio, decimals: 2) + "x", (0.9...1.1).contains(ratio) ? "yes" : "**no**",
            ])
        }
        if let ratio = sideRatio(runs.chromium.map { [$0.side] }, parley, { $0.wire?.videoKbps }) {
            table.add([
                "Fair comparison: Chromium video on the wire (per side) / Parley's", "0.90x…1.10x",
                formatted(ratio, decimals: 2) + "x", (0.9...1.1).contains(ratio) ? "yes" : "**no**",
            ])
        }
        if let largest = groups.keys.max(), let total = Sample.median((groups[largest] ?? []).map(totalOfTwoCores)) {
            table.add([
                "\(largest)-party call on 2 cores, 30 % to spare", "≤ 70 % of 2 cores",
                formatted(total) + " %", total <= 70 ? "yes" : "**no**",
            ])
        }
        table.notes = [
            "Medians over \(settings.runs) run\(settings.runs == 1 ? "" : "s"); the machine is shared, "
                + "so single runs can be off by a few points. Per side with display: tmux counted as "
                + "Parley's display, Xvfb as baresip x11's and Chromium's."
        ]
        return table
    }

    /// The goals of Parley's default (issue 14): per side, tmux and Xvfb counted, at most 0.5x the X11 baresip and
    /// 0.25x the Chromium tab. No rows while `runs.parleyDefault` is empty (see `parleyDefaultPair`).
    static func defaultGoalRows(_ runs: PairRuns) -> [[String]] {
        let ours = runs.parleyDefault.map(\.sides)
        guard !ours.isEmpty else { return [] }
        var rows: [[String]] = []
        let references: [(String, [[SideFigures]], Double)] = [
            ("baresip x11 (baresip + its Xvfb)", runs.baresipX11.map(\.sides), 0.5),
            ("Chromium tab ((tab + Xvfb) ÷ 2)", runs.chromium.map { [$0.side] }, 0.25),
        ]
        for (name, theirs, target) in references {
            guard let ratio = sideRatio(ours, theirs, \.withDisplayPercent) else { continue }
            rows.append([
                "Parley's default, per side (drawing client + tmux) / \(name)",
                "≤ \(formatted(target, decimals: 2))x", formatted(ratio, decimals: 2) + "x",
                ratio <= target ? "yes" : "**no**",
            ])
        }
        return rows
    }
}
