import Foundation

/// The tables of `BrowserCallBench`: what each member decoded of each sender in the call with Chromiums, and the
/// relay's CPU per member kind from both calls.
extension BrowserCallBench {
    static func decodeTable(_ mixed: CallResult, natives: CallResult) -> BenchTable {
        let senders = mixed.names
        var table = BenchTable(
            title: "A 4-party call, 2 headless Chromiums and 2 `parley bot`s through `parley serve` (loopback): "
                + "frames decoded per second of each sender",
            columns: ["Receiver"] + senders.map { "of \($0)" } + ["Goal", "Met"])
        table.add(
            ["What each sender encoded (its own count)"]
                + senders.map { sender in
                    (mixed.encoded[sender].map { formatted($0) } ?? "n/a")
                        + (mixed.droppedBusy[sender].map { " (\(formatted($0)) dropped busy)" } ?? "")
                } + ["", ""])
        for receiver in mixed.receivers {
            let label =
                receiver.kind == .bot
                ? "\(receiver.name) (`parley bot`: draws nothing, asks every full layer)"
                : "\(receiver.name) (the relay's page in Chromium)"
            let cells = senders.map { sender -> String in
                guard let decoded = receiver.of[sender] else { return sender == receiver.name ? "–" : "none" }
                var details: [String] = []
                if let tile = decoded.tile { details.append("tile \(tile)") }
                if let picture = decoded.picture { details.append("decoded \(picture)") }
                if let kbps = decoded.kbps { details.append("\(formatted(kbps, decimals: 0)) kbit/s") }
                if let held = decoded.held { details.append("held to \(held)") }
                return formatted(decoded.fps) + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
            }
            let met = receiver.of.count == senders.count - 1 && receiver.of.values.allSatisfy { $0.fps >= fpsGoal }
            table.add([label] + cells + ["≥ \(formatted(fpsGoal, decimals: 0)) fps each", met ? "yes" : "no"])
        }
        let worst = mixed.worst
        let complete = mixed.receivers.allSatisfy { $0.of.count == senders.count - 1 }
        let nativeWorst = natives.worst
        table.notes = [
            "One run: `parley serve --insecure` (its own process, default limits), 2 `parley bot`s (`--profile 640x360 "
                + "--fps 30 --bitrate \(botKbps)`: 640x360 at 30 fps, \(botKbps) kbit/s like the page's full layer "
                + "rather than the profile's 600, simulcast as `parley join` sends by default) playing "
                + "the synthetic camera clip (640x360, 30 fps Y4M, looped) and voice, and 2 `chromium --headless=new` "
                + "on the relay's page (`http://127.0.0.1:PORT/\(room)?name=NAME&join=1`), window "
                + "\(browserWindow.width)x\(browserWindow.height), fake camera and microphone fed the same clip and "
                + "voice (`--use-file-for-fake-video-capture`, 640x360 at 30 fps). Everyone decodes everyone; "
                + "figures over a \(Int(seconds(window))) s window after a \(Int(seconds(warmUp))) s warm-up.",
            "The pages' figures: getStats' framesDecoded per member (`window.parley.snapshot()`) over the page's "
                + "clock; tile = the tile's size in CSS pixels (the page's grid of its self view and 3 peers, which "
                + "it reports to the relay as the size it needs), decoded = its `<video>`'s picture. The bots' "
                + "figures: their `--stats-file` (frames decoded, video bytes received per peer). A bot draws "
                + "nothing and sends no tile report, so the relay forwards it every sender's full layer (a "
                + "`parley join` drawing these peers in tiles this size gets the same); \"held to\" is a smaller "
                + "layer (or none) the relay gave it instead, for the downlink its losses showed. What each sender "
                + "encoded: a bot's camera frames encoded a second (its statistics), a page's getStats "
                + "framesPerSecond of its largest layer at the end of the window (the page's `i` figures).",
            "Layers sent at the end: pages "
                + mixed.pageLayers.map { "[\($0)]" }.joined(separator: " ")
                + " (f 640x360, h 320x180); bots "
                + mixed.botLayers.map { "[\($0.map { $0 ? "on" : "off" }.joined(separator: ", "))]" }
                .joined(separator: " ")
                + " (640x360, 320x180, 160x90): the relay pauses layers nobody receives.",
            "The same call with 4 bots (call (a) of the next table): bots decoded each other at "
                + (nativeWorst.map { "≥ \(formatted($0.fps)) fps (worst: \($0.label))" } ?? "no figure") + ".",
            goalNote(
                "≥ \(formatted(fpsGoal, decimals: 0)) fps of every sender at every receiver, full tile size",
                met: complete && (worst?.fps ?? 0) >= fpsGoal,
                worst.map { "\(formatted($0.fps)) at worst, \($0.label)" } ?? "no figure"),
        ]
        return table
    }

    static func cpuTable(natives: CallResult, mixed: CallResult) -> BenchTable {
        let native = natives.relay.cpuPercent / 4
        let browser = (mixed.relay.cpuPercent - 2 * native) / 2
        let ratio = browser / native
        // The same with the native members' share scaled to the packets call (b) forwarded: a busy machine makes its
        // bots drop frames, and fewer packets cost the relay less whoever sends them.
        let scale = natives.forwarded > 0 ? mixed.forwarded / natives.forwarded : .nan
        let matchedNative = native * scale
        let matchedBrowser = (mixed.relay.cpuPercent - 2 * matchedNative) / 2
        let matchedRatio = matchedBrowser / matchedNative
        var table = BenchTable(
            title: "The relay's CPU per member kind: the same 4-party call with 4 `parley bot`s (a) and with 2 bots "
                + "and 2 headless Chromiums (b)",
            columns: ["Figure", "Value", "Goal", "Met"])
        func percent(_ value: Double) -> String { "\(formatted(value, decimals: 2)) % of a core" }
        let goal = "≤ \(formatted(ratioGoal, decimals: 1))x"
        table.add(["Relay CPU, call (a): 4 bots", percent(natives.relay.cpuPercent), "", ""])
        table.add(["Relay CPU, call (b): 2 bots + 2 Chromiums", percent(mixed.relay.cpuPercent), "", ""])
        table.add(["Per native member: (a) ÷ 4", percent(native), "", ""])
        table.add(["Per browser member: ((b) − 2 × per native) ÷ 2", percent(browser), "", ""])
        table.add([
            "Per browser member ÷ per native member", formatted(ratio, decimals: 2) + "x", goal,
            ratio <= ratioGoal ? "yes" : "no",
        ])
        table.add([
            "Packets the relay forwarded (RTP and RTCP, one per destination): (a) / (b)",
            "\(formatted(natives.forwarded, decimals: 0)) / \(formatted(mixed.forwarded, decimals: 0)) a second "
                + "(b ÷ a = \(formatted(scale, decimals: 2)))",
            "", "",
        ])
        table.add([
            "Per native member at (b)'s packets: (a) ÷ 4 × (b ÷ a)", percent(matchedNative), "", "",
        ])
        table.add([
            "Per browser member at (b)'s packets: ((b) − 2 × that) ÷ 2", percent(matchedBrowser), "", "",
        ])
        table.add([
            "Per browser member ÷ per native member, packets matched", formatted(matchedRatio, decimals: 2) + "x",
            goal, matchedRatio <= ratioGoal ? "yes" : "no",
        ])
        func sent(_ call: CallResult, _ kind: Kind) -> String {
            call.sent(by: kind).map {
                "\(formatted($0.kbps, decimals: 0)) kbit/s, \(formatted($0.packets, decimals: 0)) packets/s"
            } ?? "n/a"
        }
        table.add([
            "Video of one member as the bots received it: native (a) / native (b) / browser (b)",
            "\(sent(natives, .bot)) / \(sent(mixed, .bot)) / \(sent(mixed, .browser))", "", "",
        ])
        table.add([
            "The relay's threads runnable but waiting for a core: (a) / (b)",
            "\(formatted(natives.relayWaiting)) % / \(formatted(mixed.relayWaiting)) % of the window", "", "",
        ])
        table.add([
            "Each Chromium, all its processes (b; not in the relay's figure)",
            mixed.browsers.map { percent($0.cpuPercent) }.joined(separator: " and "), "", "",
        ])
        table.add([
            "Each bot: (a) / (b)",
            natives.bots.map { formatted($0.cpuPercent) }.joined(separator: ", ") + " / "
                + mixed.bots.map { formatted($0.cpuPercent) }.joined(separator: ", ") + " % of a core", "", "",
        ])
        table.add([
            "Every other process on the machine (not the call's, not this benchmark's): (a) / (b)",
            "\(formatted(natives.elsewhere.cpuPercent)) / \(formatted(mixed.elsewhere.cpuPercent)) % of a core", "",
            "",
        ])
        table.add([
            "The whole machine: (a) / (b)",
            "\(formatted(natives.machineBusy, decimals: 0)) % / \(formatted(mixed.machineBusy, decimals: 0)) % of "
                + "its \(ProcessInfo.processInfo.activeProcessorCount) cores",
            "", "",
        ])
        table.notes = [
            "Both calls in one run, one after the other, each on a fresh `parley serve --insecure`: the same room, "
                + "senders (640x360 at 30 fps), \(Int(seconds(warmUp))) s warm-up after everyone decodes everyone "
                + "and \(Int(seconds(window))) s window. Relay CPU = its user + system time over the window "
                + "(/proc/PID/stat, every thread) ÷ wall time; 100 % = one core. A browser member's share holds "
                + "what the relay does for it alone: DTLS, SRTP both ways, ICE, its RTCP and transport-wide "
                + "feedback, and forwarding its sender's layers.",
            "Chromium's figure: every process of its family (browser, renderer, GPU, network, audio, utility, "
                + "zygotes), as `parley-bench call` counts its tab; the bots' from /proc/PID/stat. The whole "
                + "machine's from /proc/stat (this benchmark's own waiting and anything else running included); the "
                + "relay's waiting from /proc/PID/task/*/schedstat; every other process's from /proc/PID/stat (one "
                + "started during the window counts from zero, one that exited during it is missing; well above 0, "
                + "someone else's work shared the machine, and every figure of that call with it). On a machine "
                + "that is busy the relay handles more packets per wake-up, which costs less per packet: call (b)'s "
                + "relay figure is then not measured under call (a)'s conditions.",
            "Each call starts once the machine is quiet (at most \(formatted(quietLimit, decimals: 0)) % of a core "
                + "busy over a second, or after 30 s of waiting) and is measured again, up to \(attempts) times in "
                + "all, while every other process used more than \(formatted(quietLimit, decimals: 0)) % of a core in "
                + "its window; the quietest window is kept. Kept: (a) measurement \(natives.attempt), (b) "
                + "measurement \(mixed.attempt).",
            "Packets matched: a native member's share of (a) scaled by the packets (b) forwarded over those (a) "
                + "forwarded (the relay's `parley_packets_forwarded_total` on `--admin`, read at both ends of each "
                + "window), so a call that carried less (its bots dropping frames on a busy machine) does not pass "
                + "for cheaper browser members. The goal is met when both ratios are.",
            goalNote(
                "relay CPU per browser member ≤ \(formatted(ratioGoal, decimals: 1))x per native member",
                met: ratio <= ratioGoal && matchedRatio <= ratioGoal,
                "\(formatted(ratio, decimals: 2))x: \(formatted(browser, decimals: 2)) % against "
                    + "\(formatted(native, decimals: 2)) % of a core; packets matched "
                    + "\(formatted(matchedRatio, decimals: 2))x"),
        ]
        return table
    }
}
