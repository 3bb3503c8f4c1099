import Foundation
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Recording a call (issue 31) through real processes: `parley serve`, `parley bot`s and a `parley join` in tmux, the
/// file read back by FFmpeg (ffprobe for its tracks, ffmpeg to decode every frame and the audio, and to pull the
/// WebVTT chat out) and GStreamer, never by Parley's own code.
@Suite(.serialized, .lane(.recording))
struct RecordingProcessTests {
    static let speech = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/media/speech.wav").path

    /// A relay on a free port with its state (and an optional rooms file) in `folder`.
    struct Relay {
        let process: BackgroundProcess
        let port: String

        init(_ parley: String, folder: String, rooms: String? = nil) async throws {
            var arguments = ["serve", "--port", "0", "--insecure", "--state-dir", folder + "/relay"]
            if let rooms {
                try rooms.write(toFile: folder + "/rooms.txt", atomically: true, encoding: .utf8)
                arguments += ["--rooms", folder + "/rooms.txt"]
            }
            process = try BackgroundProcess(parley, arguments)
            try await process.output(containing: "listening on", within: .seconds(10))
            port = try #require(process.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        }
    }

    static func folder(_ name: String) throws -> String {
        let folder = NSTemporaryDirectory() + "parley-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    static func bot(
        _ parley: String, room: String, port: String, name: String, _ extra: [String], prefix: [String] = []
    ) throws -> BackgroundProcess {
        let arguments =
            ["bot", room, "--server", "127.0.0.1:\(port)", "--insecure", "--name", name, "--profile", "320x240"]
            + extra
        if prefix.isEmpty { return try BackgroundProcess(parley, arguments) }
        return try BackgroundProcess(prefix[0], Array(prefix.dropFirst()) + [parley] + arguments)
    }

    static func tool(_ name: String) throws -> String {
        try #require(
            ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "\(name) is missing: make deps installs ffmpeg")
    }

    /// What ffprobe says about a file's streams and format.
    struct Probe: Decodable {
        struct Stream: Decodable {
            var index: Int
            var codec_name: String?
            var codec_type: String
            var width: Int?
            var height: Int?
            var tags: [String: String]?
            var title: String? { tags?["title"] ?? tags?["TITLE"] }
        }
        func stream(_ index: Int) -> Stream? { streams.first { $0.index == index } }
        struct Format: Decodable {
            var duration: String?
        }
        var streams: [Stream]
        var format: Format

        func streams(_ type: String) -> [Stream] { streams.filter { $0.codec_type == type } }
        var seconds: Double { Double(format.duration ?? "") ?? 0 }
    }

    static func probe(_ path: String) throws -> Probe {
        let result = try ChildProcess.run(
            try tool("ffprobe"), ["-v", "error", "-print_format", "json", "-show_streams", "-show_format", path],
            timeout: .seconds(30))
        if result.status != 0 {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            let head = bytes.prefix(48).map { String(format: "%02x", $0) }.joined()
            Issue.record("ffprobe: \(result.output) (\(bytes.count) bytes: \(head)…)")
        }
        return try JSONDecoder().decode(Probe.self, from: Data(result.output.utf8))
    }

    /// The presentation times of one stream's packets, in seconds.
    static func packetTimes(_ path: String, stream: Int) throws -> [Double] {
        let result = try ChildProcess.run(
            try tool("ffprobe"),
            [
                "-v", "error", "-select_streams", "\(stream)", "-show_entries", "packet=pts_time", "-of", "csv=p=0",
                path,
            ],
            timeout: .seconds(30))
        return result.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The VP8 bitstream version (the frame tag's VER bits, RFC 6386 section 9.1) of a video stream's first frames.
    static func vp8Versions(_ path: String, stream: Int) throws -> [Int] {
        struct Packets: Decodable {
            struct Packet: Decodable { var data: String? }
            var packets: [Packet]
        }
        let result = try ChildProcess.run(
            try tool("ffprobe"),
            [
                "-v", "error", "-select_streams", "\(stream)", "-read_intervals", "%+#5", "-show_packets",
                "-show_data", "-of", "json", path,
            ],
            timeout: .seconds(30))
        return try JSONDecoder().decode(Packets.self, from: Data(result.output.utf8)).packets.compactMap { packet in
            // -show_data is a hex dump: "00000000: 5043 009d 012a ...", the frame tag's first byte first.
            guard let line = packet.data?.split(separator: "\n").first(where: { $0.hasPrefix("00000000: ") }),
                let byte = UInt8(line.dropFirst(10).prefix(2), radix: 16)
            else { return nil }
            return Int(byte >> 1 & 0x07)
        }
    }

    /// Decodes every frame of one video stream: (frames decoded, packets read, what the decoder complained about).
    static func decodeVideo(_ path: String, stream: Int) throws -> (frames: Int, packets: Int, errors: String) {
        let count = try ChildProcess.run(
            try tool("ffprobe"),
            [
                "-v", "error", "-select_streams", "\(stream)", "-count_frames", "-count_packets", "-show_entries",
                "stream=nb_read_frames,nb_read_packets", "-of", "csv=p=0", path,
            ], timeout: .seconds(60))
        let numbers = count.output.split(whereSeparator: { $0 == "," || $0 == "\n" }).compactMap { Int($0) }
        // ffmpeg's defaults, as a user runs it: the frames re-timed to the stream's frame rate, so two frames of a
        // track in one slot are a complaint too.
        let decode = try ChildProcess.run(
            try tool("ffmpeg"), ["-v", "error", "-i", path, "-map", "0:\(stream)", "-f", "null", "-"],
            timeout: .seconds(60))
        return (numbers.first ?? -1, numbers.dropFirst().first ?? -2, decode.output + (decode.status == 0 ? "" : "!"))
    }

    /// Every line `ffmpeg -v error` prints reading the file: as a user runs it (`-i FILE -f null -`, which plays the
    /// largest video and the audio), and every audio and video stream on its own. Empty for a file any player reads
    /// without a complaint.
    static func complaints(_ path: String) throws -> String {
        let probe = try probe(path)
        var runs: [[String]] = [[]]
        runs += probe.streams.filter { $0.codec_type != "subtitle" }.map { ["-map", "0:\($0.index)"] }
        var said = ""
        for map in runs {
            let result = try ChildProcess.run(
                try tool("ffmpeg"), ["-v", "error", "-i", path] + map + ["-f", "null", "-"], timeout: .seconds(60))
            if result.status != 0 || !result.output.isEmpty {
                said += "ffmpeg \(map.joined(separator: " ")) (exit \(result.status)):\n\(result.output)"
            }
        }
        return said
    }

    /// The file's size now (0 while it does not exist).
    static func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// The size of every decoded frame of one video stream, in order ("320x240").
    static func frameSizes(_ path: String, stream: Int) throws -> [String] {
        let result = try ChildProcess.run(
            try tool("ffprobe"),
            [
                "-v", "error", "-select_streams", "\(stream)", "-show_entries", "frame=width,height", "-of", "csv=p=0",
                path,
            ], timeout: .seconds(60))
        return result.output.split(separator: "\n").map { $0.replacingOccurrences(of: ",", with: "x") }
    }

    /// The size a video stream's header says (what ffprobe reports for the stream): its first picture's.
    static func expectHonestSize(_ path: String, _ stream: Probe.Stream) throws {
        let sizes = try frameSizes(path, stream: stream.index)
        let header = "\(stream.width ?? 0)x\(stream.height ?? 0)"
        #expect(sizes.first == header, "\(stream.title ?? ""): header \(header), frames \(Set(sizes).sorted())")
    }

    /// The first audio stream decoded to 48 kHz mono samples.
    static func decodeAudio(_ path: String, into folder: String) throws -> [Int16] {
        let raw = folder + "/audio.raw"
        let result = try ChildProcess.run(
            try tool("ffmpeg"),
            ["-v", "error", "-i", path, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-ar", "48000", "-y", raw],
            timeout: .seconds(60))
        #expect(result.status == 0 && result.output.isEmpty, "ffmpeg audio: \(result.output)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: raw)))
        return stride(from: 0, to: bytes.count - 1, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
        }
    }

    /// The subtitle stream as WebVTT text.
    static func subtitles(_ path: String) throws -> String {
        try ChildProcess.run(
            try tool("ffmpeg"), ["-v", "error", "-i", path, "-map", "0:s:0", "-f", "webvtt", "-"],
            timeout: .seconds(30)
        ).output
    }

    /// `speech`, looped, starting 100 ms after the point of the loop where `heard` (which began somewhere inside the
    /// loop) begins, so `heard` lags it a little as `SpeechMatch` expects: the point is found on 1 ms energy
    /// envelopes over one whole loop, and `SpeechMatch` does the rest.
    static func aligned(_ speech: [Int16], to heard: [Int16]) -> [Int16] {
        var looped = speech
        while looped.count < speech.count * 2 + heard.count + 4_800 { looped += speech }
        func envelope(_ signal: ArraySlice<Int16>) -> [Double] {
            stride(from: signal.startIndex, to: signal.endIndex - 47, by: 48).map { start in
                (0..<48).reduce(0) { $0 + abs(Double(signal[start + $1])) }
            }
        }
        let probe = envelope(heard.prefix(48_000 * 6))
        let loop = envelope(looped[...])
        let period = speech.count / 48
        var best = -Double.infinity
        var offset = 0
        for candidate in 0..<period where candidate + probe.count <= loop.count {
            var sum = 0.0
            for index in probe.indices { sum += probe[index] * loop[candidate + index] }
            if sum > best {
                best = sum
                offset = candidate
            }
        }
        let start = offset * 48 + speech.count + 4_800
        return Array(looped[start..<min(looped.count, start + heard.count)])
    }

    @Test("a 3-party call recorded 20 s: 2 named VP8 tracks (one in version 2), the mix, all decode, audio, chat")
    func recordsAThreePartyCall() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        // ana shows her camera in VP8's light bitstream version (--vp8-profile 2) and chats, with no sound; bo shows
        // his camera in the default version 0 and speaks the shipped speech.
        let ana = try Self.bot(
            parley, room: "rec", port: relay.port, name: "ana",
            ["--audio", "silence", "--chat-every", "4", "--no-decode", "--vp8-profile", "2"])
        defer { ana.signal(SIGTERM) }
        let bo = try Self.bot(
            parley, room: "rec", port: relay.port, name: "bo", ["--audio", Self.speech, "--no-decode"])
        defer { bo.signal(SIGTERM) }
        try await relay.process.output("two members joined", within: .seconds(15)) {
            $0.components(separatedBy: "member joined").count >= 3
        }
        let file = folder + "/call.webm"
        let recorder = try Self.bot(
            parley, room: "rec", port: relay.port, name: "cy",
            ["--record", file, "--audio", "silence", "--duration", "20", "--log-level", "notice"])
        #expect(await recorder.exitStatus(within: .seconds(40)) == 0, "recorder:\n\(recorder.output)")
        #expect(recorder.output.contains("Recording to \(file): 2 video tracks"), "\(recorder.output)")
        #expect(recorder.output.contains("recording saved bytes="), "\(recorder.output)")
        // The others were told, with who records.
        try await ana.output(containing: "name: \"cy\", active: true", within: .seconds(10))

        let probe = try Self.probe(file)
        let videos = probe.streams("video")
        #expect(videos.map(\.codec_name) == ["vp8", "vp8"])
        #expect(Set(videos.compactMap(\.title)) == ["ana", "bo"], "\(videos)")
        #expect(probe.streams("audio").map(\.codec_name) == ["opus"])
        #expect(probe.streams("subtitle").map(\.codec_name) == ["webvtt"])
        #expect(abs(probe.seconds - 20) <= 0.5, "file duration \(probe.seconds) s for a 20 s call")
        for stream in probe.streams.filter({ $0.codec_type != "subtitle" }) {
            let times = try Self.packetTimes(file, stream: stream.index)
            let first = times.min() ?? 99
            let last = times.max() ?? 0
            #expect(first <= 0.5 && last >= probe.seconds - 0.5, "stream \(stream.index): \(first)…\(last) s")
        }
        let complaints = try Self.complaints(file)
        #expect(complaints.isEmpty, "\(complaints)")
        for video in videos {
            try Self.expectHonestSize(file, video)
            let versions = try Self.vp8Versions(file, stream: video.index)
            #expect(versions.count == 5, "\(video.title ?? ""): \(versions)")
            #expect(Set(versions) == [video.title == "ana" ? 2 : 0], "\(video.title ?? ""): versions \(versions)")
            let decoded = try Self.decodeVideo(file, stream: video.index)
            #expect(decoded.errors.isEmpty, "decoding \(video.title ?? ""): \(decoded.errors)")
            #expect(decoded.frames == decoded.packets && decoded.frames >= 250, "\(video.title ?? ""): \(decoded)")
        }
        // A second, unrelated player: GStreamer demuxes the file and plays both cameras and the audio to the end (it
        // skips what it cannot read rather than fail, so FFmpeg's count above is the strict check).
        let gstreamer = try ChildProcess.run(
            try Self.tool("gst-launch-1.0"),
            [
                "-q", "filesrc", "location=\(file)", "!", "matroskademux", "name=d",
                "d.video_0", "!", "queue", "!", "vp8dec", "!", "fakesink",
                "d.video_1", "!", "queue", "!", "vp8dec", "!", "fakesink",
                "d.audio_0", "!", "queue", "!", "opusdec", "!", "fakesink",
            ], timeout: .seconds(60))
        #expect(gstreamer.status == 0, "GStreamer: \(gstreamer.output)")
        let speech = try WAVAudio.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: Self.speech)))).samples
        let heard = try Self.decodeAudio(file, into: folder)
        let match = SpeechMatch(sent: Self.aligned(speech, to: heard), heard: heard)
        print("recording: \(probe.seconds) s, audio correlation \(match.correlation) over \(match.speechSeconds) s")
        #expect(match.correlation >= 0.9, "correlation \(match.correlation) (worst window \(match.worstWindow))")
        #expect(match.speechSeconds >= 10, "speech compared: \(match.speechSeconds) s")
        let chat = try Self.subtitles(file)
        #expect(chat.contains("-->") && chat.contains("ana: "), "subtitles:\n\(chat)")
        #expect(chat.contains("(#1)"), "ana's first line (4 s in) is a cue:\n\(chat)")
    }

    @Test("--record-tracks: one Opus track per member present at the start, named, decoding; a later joiner is named")
    func recordsEachMembersAudioApart() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-tracks")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        let ana = try Self.bot(parley, room: "apart", port: relay.port, name: "ana", ["--no-decode"])
        defer { ana.signal(SIGTERM) }
        let bo = try Self.bot(parley, room: "apart", port: relay.port, name: "bo", ["--no-decode"])
        defer { bo.signal(SIGTERM) }
        try await relay.process.output("two members joined", within: .seconds(15)) {
            $0.components(separatedBy: "member joined").count >= 3
        }
        let file = folder + "/apart.webm"
        let recorder = try Self.bot(
            parley, room: "apart", port: relay.port, name: "cy",
            ["--record", file, "--record-tracks", "--duration", "5", "--log-level", "notice"])
        try await recorder.output(containing: "Recording to", within: .seconds(10))
        let dee = try Self.bot(parley, room: "apart", port: relay.port, name: "dee", ["--no-decode"])
        defer { dee.signal(SIGTERM) }
        #expect(await recorder.exitStatus(within: .seconds(30)) == 0, "recorder:\n\(recorder.output)")
        #expect(
            recorder.output.contains("dee joined after the recording started: their picture is not in it"),
            "\(recorder.output)")
        let probe = try Self.probe(file)
        let audio = probe.streams("audio")
        #expect(audio.map(\.codec_name) == ["opus", "opus"])
        #expect(Set(audio.compactMap(\.title)) == ["ana", "bo"], "\(audio)")
        let complaints = try Self.complaints(file)
        #expect(complaints.isEmpty, "\(complaints)")
        for video in probe.streams("video") { try Self.expectHonestSize(file, video) }
        for track in audio {
            let times = try Self.packetTimes(file, stream: track.index)
            #expect(times.count >= 200, "\(track.title ?? ""): \(times.count) blocks of 20 ms in 5 s")
        }
    }

    /// How far into its recording the recorder is killed (the file is checked for about that much).
    static let killedAfter = Duration.seconds(10)

    @Test("kill -9 of the recorder at 10 s: the file still plays its first ~10 s, every frame decoding")
    func killedRecorderLeavesAPlayableFile() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-kill")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        let ana = try Self.bot(parley, room: "kill", port: relay.port, name: "ana", ["--no-decode"])
        defer { ana.signal(SIGTERM) }
        try await relay.process.output(containing: "member joined", within: .seconds(10))
        let file = folder + "/killed.webm"
        let recorder = try Self.bot(
            parley, room: "kill", port: relay.port, name: "cy", ["--record", file, "--log-level", "notice"])
        try await recorder.output(containing: "Recording to", within: .seconds(10))
        let started = ContinuousClock.now
        try await ana.output(containing: "active: true", within: .seconds(5))
        // The scenario is a recorder killed 10 s into its recording: that time is what the file is checked against.
        try await Task.sleep(until: started + Self.killedAfter, clock: .continuous)
        recorder.signal(SIGKILL)
        #expect(await recorder.exitStatus(within: .seconds(5)) == 128 + SIGKILL)
        // The others hear it left (dropped), and the file is what was on disk at the kill.
        let probe = try Self.probe(file)
        #expect(probe.streams("video").map(\.title) == ["ana"])
        #expect(probe.seconds >= 8.5 && probe.seconds <= 10.5, "header duration \(probe.seconds) s")
        let times = try Self.packetTimes(file, stream: probe.streams("video")[0].index)
        #expect((times.max() ?? 0) >= 8.5, "video up to \(times.max() ?? 0) s of ~10")
        let decoded = try Self.decodeVideo(file, stream: probe.streams("video")[0].index)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames == decoded.packets && decoded.frames >= 100, "\(decoded)")
        let complaints = try Self.complaints(file)
        #expect(complaints.isEmpty, "\(complaints)")
        try Self.expectHonestSize(file, probe.streams("video")[0])
        let audio = try Self.decodeAudio(file, into: folder)
        #expect(audio.count >= 48_000 * 8, "audio: \(Double(audio.count) / 48_000) s")
    }

    @Test("a room whose rooms file forbids recording: --record refuses, says why, writes nothing; the call goes on")
    func forbiddenRoomRefuses() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-forbidden")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder, rooms: "board record=no\n")
        defer { relay.process.signal(SIGTERM) }
        let file = folder + "/board.webm"
        let recorder = try Self.bot(
            parley, room: "board", port: relay.port, name: "cy", ["--record", file, "--duration", "3"])
        #expect(await recorder.exitStatus(within: .seconds(20)) == 0, "\(recorder.output)")
        #expect(
            recorder.output.contains(
                "Not recording: recording is not allowed in board (the relay's rooms file forbids it)"),
            "\(recorder.output)")
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("a full disk (a 300 kB file-size limit) stops the recording with a message; the call goes on")
    func fullDiskStopsTheRecordingNotTheCall() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-full")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        let ana = try Self.bot(parley, room: "full", port: relay.port, name: "ana", ["--no-decode"])
        defer { ana.signal(SIGTERM) }
        try await relay.process.output(containing: "member joined", within: .seconds(10))
        let file = folder + "/full.webm"
        let prlimit = try Self.tool("prlimit")
        let recorder = try Self.bot(
            parley, room: "full", port: relay.port, name: "cy",
            ["--record", file, "--duration", "12", "--stats", "--log-level", "notice"],
            prefix: [prlimit, "--fsize=300000"])
        #expect(await recorder.exitStatus(within: .seconds(30)) == 0, "\(recorder.output)")
        #expect(
            recorder.output.contains("Recording stopped: the disk is full: \(file) stopped at"), "\(recorder.output)")
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        #expect(size <= 300_000 && size > 100_000, "file size \(size)")
        // The call went on after the disk filled: the recorder kept receiving ana to the end (12 s at 15 fps).
        let line = recorder.output.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
        let frames = line.firstMatch(of: /"framesDecoded":(\d+)/).flatMap { Int($0.1) } ?? 0
        #expect(frames >= 140, "frames decoded in the call: \(line)")
        try await ana.output(containing: "active: false", within: .seconds(10))
    }

    @Test("the header shows ● REC with who records for the others; R records and stops; the host's /norecord stops all")
    func headerShowsRecForTheOthers() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-tmux")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        // alice joins first, so she hosts; `R` writes into the folder the pane starts in.
        let pane = try TmuxPane(
            command:
                "sh -c 'cd \(folder) && \(parley) join rec --server 127.0.0.1:\(relay.port) --insecure --name alice "
                + "--profile 320x180 --log \(folder)/alice.log; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        let alone = try await pane.text("\"1 person · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("1 person · connected") }
        }
        #expect(alone.contains { $0.contains("1 person · connected") }, "\(alone.joined(separator: "\n"))")
        let recorder = try Self.bot(
            parley, room: "rec", port: relay.port, name: "cy",
            ["--record", folder + "/seen.webm", "--log-level", "notice"])
        defer { recorder.signal(SIGTERM) }
        let lines = try await pane.text("\"● REC cy\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("● REC cy") }
        }
        print("header while cy records: \(lines.first ?? "")")
        #expect(lines.first?.contains("● REC cy · 2 people") == true, "header:\n\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("cy started recording the call") }, "\(lines.joined(separator: "\n"))")

        // R: alice records too, and the control bar's Rec is on.
        try pane.send(["R"])
        let both = try await pane.text("\"● REC cy, you\" on the screen", within: .seconds(15)) {
            $0.first?.contains("● REC cy, you") == true
        }
        #expect(both.first?.contains("● REC cy, you") == true, "\(both.joined(separator: "\n"))")
        try await recorder.output(containing: "name: \"alice\", active: true", within: .seconds(10))
        try pane.send(["R"])
        let saved = try await pane.text("\"Recording saved: parley-rec-\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Recording saved: parley-rec-") }
        }
        #expect(saved.contains { $0.contains("Recording saved: parley-rec-") }, "\(saved.joined(separator: "\n"))")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("parley-rec-") }
        #expect(files.count == 1, "\(files)")
        if let name = files.first {
            #expect(try Self.probe(folder + "/" + name).streams("video").map(\.title) == ["cy"])
            let complaints = try Self.complaints(folder + "/" + name)
            #expect(complaints.isEmpty, "\(complaints)")
        }

        // The host forbids recording: cy's recording stops (and is saved), and R is refused with the reason.
        try pane.send(["t"])
        try pane.sendLiteral("/norecord")
        try pane.send(["Enter"])
        try await recorder.output(
            containing: "alice, the host, forbade recording: your recording stopped", within: .seconds(10))
        let stopped = try await pane.text("the REC mark gone from the header", within: .seconds(15)) {
            !($0.first?.contains("● REC") ?? true)
        }
        #expect(stopped.first?.contains("● REC") == false, "\(stopped.joined(separator: "\n"))")
        #expect(stopped.contains { $0.contains("You forbade recording in this room") || $0.contains("alice forbade") })
        try pane.send(["R"])
        let refused = try await pane.text(
            "\"Recording is not allowed in this room\" on the screen", within: .seconds(15)
        ) { $0.contains { $0.contains("Recording is not allowed in this room") } }
        #expect(
            refused.contains { $0.contains("Recording is not allowed in this room: alice forbade") },
            "\(refused.joined(separator: "\n"))")
        #expect(
            try Self.probe(folder + "/seen.webm").streams("video").isEmpty, "cy's file was saved, alice's camera off")
        try pane.send(["q", "y"])
    }

    @Test("the layers received switch mid-recording (the window shrinks, then grows): no complaint, honest sizes")
    func layerSwitchesMidRecording() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-layers")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        // Both send 320x240 and 160x120 (simulcast); cy draws them in a small window first, so the relay switches
        // cy to the small layer, then in a large one, back to the full layer.
        let ana = try Self.bot(parley, room: "layers", port: relay.port, name: "ana", ["--no-decode"])
        defer { ana.signal(SIGTERM) }
        let bo = try Self.bot(parley, room: "layers", port: relay.port, name: "bo", ["--no-decode"])
        defer { bo.signal(SIGTERM) }
        try await relay.process.output("a member joined", within: .seconds(15)) {
            $0.components(separatedBy: "member joined").count >= 2
        }
        let file = folder + "/layers.webm"
        let pane = try TmuxPane(
            command:
                "sh -c '\(parley) join layers --server 127.0.0.1:\(relay.port) --insecure --name cy --profile 320x180 "
                + "--record \(file) --log \(folder)/cy.log; echo EXITED rc=$?; sleep 60'",
            columns: 100, rows: 30)
        let joined = try await pane.text("\"3 people · connected\" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("3 people · connected") }
        }
        #expect(joined.contains { $0.contains("3 people · connected") }, "\(joined.joined(separator: "\n"))")
        // The stats overlay shows each tile's decoded size: the small layer for both, then the full one.
        try pane.send(["i"])
        func both(_ size: String) -> ([String]) -> Bool {
            { $0.joined(separator: "\n").components(separatedBy: size).count >= 3 }
        }
        // Two checkpoints (a second and more) of each: the file grows at every checkpoint.
        func twoCheckpoints() async throws {
            for _ in 0..<2 {
                let size = Self.fileSize(file)
                try await waitUntil("the recording to grow at a checkpoint", timeout: .seconds(10)) {
                    Self.fileSize(file) > size
                }
            }
        }
        let small = try await pane.text("both tiles at 160x120", within: .seconds(20), both("160x120"))
        #expect(both("160x120")(small), "small tiles:\n\(small.joined(separator: "\n"))")
        try await twoCheckpoints()
        try pane.run(["resize-window", "-x", "240", "-y", "72"])
        let large = try await pane.text("both tiles at 320x240", within: .seconds(20), both("320x240"))
        #expect(both("320x240")(large), "large tiles:\n\(large.joined(separator: "\n"))")
        try await twoCheckpoints()
        try pane.send(["R"])
        let saved = try await pane.text("\"Recording saved: \" on the screen", within: .seconds(15)) {
            $0.contains { $0.contains("Recording saved: ") }
        }
        #expect(saved.contains { $0.contains("Recording saved: ") }, "\(saved.joined(separator: "\n"))")
        try pane.send(["q", "y"])

        let probe = try Self.probe(file)
        let videos = probe.streams("video")
        #expect(Set(videos.compactMap(\.title)) == ["ana", "bo"], "\(videos)")
        let complaints = try Self.complaints(file)
        #expect(complaints.isEmpty, "\(complaints)")
        for video in videos {
            try Self.expectHonestSize(file, video)
            let sizes = Set(try Self.frameSizes(file, stream: video.index))
            #expect(sizes.isSuperset(of: ["160x120", "320x240"]), "\(video.title ?? ""): frames of \(sizes.sorted())")
            let times = try Self.packetTimes(file, stream: video.index)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(video.title ?? ""): times go up")
            let decoded = try Self.decodeVideo(file, stream: video.index)
            #expect(decoded.errors.isEmpty && decoded.frames == decoded.packets, "\(video.title ?? ""): \(decoded)")
        }
        // GStreamer plays both cameras through their switches, and the audio, to the end.
        let gstreamer = try ChildProcess.run(
            try Self.tool("gst-launch-1.0"),
            [
                "-q", "filesrc", "location=\(file)", "!", "matroskademux", "name=d",
                "d.video_0", "!", "queue", "!", "vp8dec", "!", "fakesink",
                "d.video_1", "!", "queue", "!", "vp8dec", "!", "fakesink",
                "d.audio_0", "!", "queue", "!", "opusdec", "!", "fakesink",
            ], timeout: .seconds(60))
        #expect(gstreamer.status == 0 && gstreamer.output.isEmpty, "GStreamer: \(gstreamer.output)")
    }

    @Test("in an end-to-end encrypted room the notice says it is the member's decrypted view, and the file decodes")
    func encryptedRoomRecordsTheDecryptedView() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = try Self.folder("record-e2e")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await Relay(parley, folder: folder)
        defer { relay.process.signal(SIGTERM) }
        try "correct horse battery staple\n".write(toFile: folder + "/secret", atomically: true, encoding: .utf8)
        let secret = ["--secret-file", folder + "/secret"]
        let ana = try Self.bot(
            parley, room: "e2e", port: relay.port, name: "ana", ["--no-decode", "--chat-every", "1"] + secret)
        defer { ana.signal(SIGTERM) }
        try await relay.process.output(containing: "member joined", within: .seconds(10))
        let file = folder + "/e2e.webm"
        let recorder = try Self.bot(
            parley, room: "e2e", port: relay.port, name: "cy",
            ["--record", file, "--duration", "4", "--log-level", "notice"] + secret)
        #expect(await recorder.exitStatus(within: .seconds(30)) == 0, "recorder:\n\(recorder.output)")
        try await ana.output(containing: "name: \"cy\", active: true, encrypted: true", within: .seconds(10))
        let probe = try Self.probe(file)
        let video = try #require(probe.streams("video").first)
        let decoded = try Self.decodeVideo(file, stream: video.index)
        #expect(decoded.errors.isEmpty && decoded.frames == decoded.packets && decoded.frames >= 40, "\(decoded)")
        let complaints = try Self.complaints(file)
        #expect(complaints.isEmpty, "\(complaints)")
        try Self.expectHonestSize(file, video)
        #expect(try Self.subtitles(file).contains("ana: "), "the chat was decrypted before it was recorded")
    }
}
