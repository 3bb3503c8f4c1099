import COpus
import COpusShim
import CVPX
import Foundation
import ParleyMedia

/// Codec speed: Parley's VP8 and Opus wrappers against the reference implementations, measured in the same run on
/// the same generated content (`parley-bench codecs`, `make bench`).
///
/// VP8 is compared with Debian's `vpxenc`/`vpxdec` (vpx-tools) at identical settings; their own timers are used
/// (they time only the libvpx calls), so file I/O and process start do not count against them. Opus is compared with
/// direct libopus calls on preallocated buffers, the cheapest way to drive libopus at all.
public enum CodecBench {
    /// One VP8 size and rate to measure.
    public struct VideoProfile: Sendable {
        /// Picture width.
        public var width: Int
        /// Picture height.
        public var height: Int
        /// Target bitrate in kbit/s.
        public var kbps: Int
        /// Frames of camera content (media time at 30 frames/s).
        public var frames: Int

        /// A profile to measure.
        public init(width: Int, height: Int, kbps: Int, frames: Int) {
            self.width = width
            self.height = height
            self.kbps = kbps
            self.frames = frames
        }
    }

    /// The call profiles: 640x360 for 10 s and 1280x720 for 5 s of media.
    public static let defaultProfiles = [
        VideoProfile(width: 640, height: 360, kbps: 600, frames: 300),
        VideoProfile(width: 1280, height: 720, kbps: 1500, frames: 150),
    ]

    /// Measures each case `repeats` times, alternating Parley and reference, keeping each side's fastest round;
    /// `log` gets progress lines. Throws `CodecBenchError` if a reference tool is missing or fails.
    public static func run(
        profiles: [VideoProfile] = defaultProfiles, audioSeconds: Int = 30, repeats: Int = 3,
        log: (String) -> Void = { _ in }
    ) throws -> [BenchTable] {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let video = try videoTable(profiles: profiles, repeats: repeats, directory: directory, log: log)
        let audio = try audioTable(seconds: audioSeconds, repeats: repeats, log: log)
        var table = BenchTable(
            title: "Codecs: frames per CPU-second, Parley against vpxenc/vpxdec (libvpx "
                + "\(String(cString: vpx_codec_version_str()))) and direct libopus calls "
                + "(\(String(cString: opus_get_version_string())))",
            columns: columns, rows: video.rows + audio.rows)
        // The goal reads the ratios as printed, so its verdict is the table's.
        let ratios = table.rows.compactMap { Double($0[5].dropLast()) }
        table.notes =
            video.notes + audio.notes + [
                goalNote(
                    "Parley ≥ 0.95x the reference on every row",
                    met: ratios.count == table.rows.count
                        && ratios.allSatisfy { $0 >= 0.95 },
                    "\(formatted(ratios.min() ?? .nan, decimals: 2))x–\(formatted(ratios.max() ?? .nan, decimals: 2))x")
            ]
        return [table]
    }

    // MARK: - VP8

    /// Frames per second of CPU time and of wall-clock time for one round.
    struct Rate {
        var cpu: Double
        var wall: Double
    }

    /// The rounds of one comparison.
    struct Rounds {
        var parley: [Rate] = []
        var reference: [Rate] = []

        /// A table row: CPU-time rates and their ratio, plus the wall-clock ratio, each side's fastest round.
        func row(_ operation: String, _ content: String, _ tool: String) -> [String] {
            let parleyCPU = parley.map(\.cpu).max() ?? .nan
            let referenceCPU = reference.map(\.cpu).max() ?? .nan
            let wallRatio = (parley.map(\.wall).max() ?? .nan) / (reference.map(\.wall).max() ?? .nan)
            return [
                operation, content, formatted(parleyCPU, decimals: 0), tool, formatted(referenceCPU, decimals: 0),
                formatted(parleyCPU / referenceCPU, decimals: 2) + "x", formatted(wallRatio, decimals: 2) + "x",
            ]
        }
    }

    static let columns = ["Operation", "Content", "Parley fps", "Reference", "Reference fps", "Ratio", "Wall ratio"]

    static func videoTable(
        profiles: [VideoProfile], repeats: Int, directory: String, log: (String) -> Void
    ) throws -> BenchTable {
        var table = BenchTable(
            title: "Codecs: VP8 (Parley vs vpxenc/vpxdec, libvpx \(String(cString: vpx_codec_version_str())))",
            columns: columns)
        var notes: [String] = []
        for profile in profiles {
            let label = "\(profile.width)x\(profile.height) \(profile.kbps) kbit/s"
            log("VP8 \(label): rendering \(profile.frames) camera frames")
            let input = directory + "/camera-\(profile.width)x\(profile.height).y4m"
            let camera = SyntheticCamera(
                name: "Bench", participant: 1, width: profile.width, height: profile.height)
            let writer = try Y4MFileWriter(path: input)
            for _ in 0..<profile.frames { try writer.write(camera.nextFrame()) }

            var encoding = Rounds()
            var decoding = Rounds()
            var parleyStream: [EncodedVideoFrame] = []
            var referenceBytes = 0
            var referenceFrames: [[UInt8]] = []
            let parleyIVF = directory + "/parley.ivf"
            let referenceIVF = directory + "/vpxenc.ivf"
            for round in 0..<repeats {
                log("VP8 \(label): round \(round + 1) of \(repeats)")
                let encoded = try parleyEncodeRun(profile: profile, input: input)
                encoding.parley.append(encoded.rate)
                parleyStream = encoded.frames
                let reference = try vpxencRun(profile: profile, input: input, output: referenceIVF)
                encoding.reference.append(reference.rate)
                referenceBytes = reference.bytes
                if round == 0 {
                    try writeIVF(parleyStream, width: profile.width, height: profile.height, to: parleyIVF)
                    referenceFrames = try readIVF(referenceIVF)
                }
                decoding.parley.append(try parleyDecodeRun(parleyStream))
                decoding.reference.append(try vpxdecRun(parleyIVF, frames: parleyStream.count))
            }
            table.add(encoding.row("encode", label, "vpxenc --rt"))
            table.add(decoding.row("decode", label, "vpxdec"))
            let seconds = Double(profile.frames) / 30
            let parleyKbps = formatted(Double(parleyStream.reduce(0) { $0 + $1.bytes.count }) * 8 / seconds / 1000)
            let referenceKbps = formatted(Double(referenceBytes) * 8 / seconds / 1000)
            let identical = referenceFrames == parleyStream.map(\.bytes)
            notes.append(
                "VP8 \(label), \(profile.frames) frames: Parley stream \(parleyKbps) kbit/s, vpxenc stream "
                    + "\(referenceKbps) kbit/s; "
                    + (identical ? "byte-identical." : "the bitstreams differ."))
        }
        let method = [
            "VP8: the synthetic camera (moving pattern, text, sensor noise) written to Y4M once; both encoders encode "
                + "that file, both decoders Parley's stream. Both sides: realtime, cpu-used -6, 1 thread, CBR, error "
                + "resilient, lag 0, buffer 1000/500/600 ms, q 2-56, static threshold 1, max intra 900 %, keyframe "
                + "every 300 frames.",
            "fps = frames per CPU-second, each side's fastest of \(repeats) alternating rounds, so other load skews "
                + "the ratio little. Parley: thread CPU time inside each `VP8Encoder.encode` call and over the loop of "
                + "`VP8Decoder.decode` calls (pictures and packets copied into Swift arrays); vpxenc: user CPU time "
                + "minus a 1-frame run's (start, headers); vpxdec: total CPU time minus a 1-frame run's. Wall ratio: "
                + "Parley's wall-clock time against the tools' own timers (libvpx calls only).",
        ]
        table.notes = method + notes
        return table
    }

    private static func parleyEncodeRun(
        profile: VideoProfile, input: String
    ) throws -> (rate: Rate, frames: [EncodedVideoFrame]) {
        let source = try Y4MFileSource(path: input)
        let encoder = try VP8Encoder(
            VP8EncoderConfig(
                width: profile.width, height: profile.height, targetBitrateKbps: profile.kbps, threads: 1))
        var frames: [EncodedVideoFrame] = []
        var timer = CallTimer()
        for _ in 0..<profile.frames {
            let picture = try source.nextFrame()
            let output = try timer.measure { try encoder.encode(picture) }
            frames += output
        }
        return (timer.rate(frames: profile.frames), frames)
    }

    private static func parleyDecodeRun(_ stream: [EncodedVideoFrame]) throws -> Rate {
        let decoder = try VP8Decoder()
        let packets = stream.map(\.bytes)
        var pictures = 0
        var timer = CallTimer()
        // One timed loop: per-call CPU clock reads are system calls, a visible share of a 0.4 ms decode.
        try timer.measure {
            for packet in packets where try decoder.decode(packet) != nil { pictures += 1 }
        }
        guard pictures == stream.count else {
            throw CodecBenchError.mismatch("Parley decoded \(pictures) of \(stream.count) frames")
        }
        return timer.rate(frames: stream.count)
    }

    private static func vpxencRun(
        profile: VideoProfile, input: String, output: String
    ) throws -> (rate: Rate, bytes: Int) {
        func arguments(frames: Int, output: String) -> [String] {
            [
                "vpxenc", "--codec=vp8", "--rt", "--cpu-used=-6", "--threads=1", "--end-usage=cbr",
                "--target-bitrate=\(profile.kbps)", "--lag-in-frames=0", "--error-resilient=1", "--kf-min-dist=0",
                "--kf-max-dist=300", "--min-q=2", "--max-q=56", "--undershoot-pct=100", "--overshoot-pct=15",
                "--buf-sz=1000", "--buf-initial-sz=500", "--buf-optimal-sz=600", "--static-thresh=1",
                "--max-intra-rate=900", "--noise-sensitivity=0", "--token-parts=0", "--drop-frame=0",
                "--resize-allowed=0", "--timebase=1/1000000", "--limit=\(frames)", "--ivf", "-o", output, input,
            ]
        }
        let baseline = try runTool(arguments(frames: 1, output: output + ".one"))
        let run = try runTool(arguments(frames: profile.frames, output: output))
        // Final status line: "Pass 1/1 frame  300/300  445566B  11881b/f 356448b/s  468123 us (640.87 fps)".
        let lines = run.text.split(whereSeparator: { $0 == "\r" || $0 == "\n" })
        guard let summary = lines.last(where: { $0.contains(" fps)") }),
            let fps = number(in: summary, before: " fps)"), let bytes = number(in: summary, before: "B ")
        else { throw CodecBenchError.unparsable(tool: "vpxenc", output: String(run.text.suffix(300))) }
        // User time only: the system time is mostly reading the Y4M file, which Parley's timing leaves out too.
        let cpu = Double(profile.frames - 1) / max(1e-9, run.user - baseline.user)
        return (Rate(cpu: cpu, wall: fps), Int(bytes))
    }

    private static func vpxdecRun(_ path: String, frames: Int) throws -> Rate {
        let arguments = ["vpxdec", "--codec=vp8", "--threads=1", "--summary", "--noblit"]
        let baseline = try runTool(arguments + ["--limit=1", path])
        let run = try runTool(arguments + [path])
        // "300 decoded frames/300 showed frames in 145000 us (2068.97 fps)"
        guard let line = run.text.split(separator: "\n").last(where: { $0.contains("decoded frames/") }),
            let fps = number(in: line, before: " fps)"), let decoded = number(in: line, before: " decoded frames")
        else { throw CodecBenchError.unparsable(tool: "vpxdec", output: String(run.text.suffix(300))) }
        guard Int(decoded) == frames else {
            throw CodecBenchError.mismatch("vpxdec decoded \(Int(decoded)) of \(frames) frames")
        }
        // vpxdec reads a few MB at most, so its total CPU time is the decoder's; the kernel's user/system split
        // is tick-sampled and too coarse for a 0.1 s run.
        let busy = (run.user + run.system) - (baseline.user + baseline.system)
        return Rate(cpu: Double(frames - 1) / max(1e-9, busy), wall: fps)
    }

    // MARK: - Opus

    static func audioTable(seconds audioSeconds: Int, repeats: Int, log: (String) -> Void) throws -> BenchTable {
        var table = BenchTable(
            title: "Codecs: Opus (Parley vs direct libopus calls, \(String(cString: opus_get_version_string())))",
            columns: columns)
        let config = OpusAudioConfig()
        let frameSamples = config.samplesPerChannel
        log("Opus: generating \(audioSeconds) s of synthetic speech")
        let voice = SyntheticVoice(participant: 1)
        let frames = (0..<(audioSeconds * 1000 / config.frameDuration.rawValue)).map { _ in
            voice.nextFrame(samplesPerChannel: frameSamples)
        }
        let pcm = frames.flatMap(\.samples)
        let label = "48 kHz mono 20 ms, 32 kbit/s VOIP, FEC"
        var encoding = Rounds()
        var decoding = Rounds()
        var packets: [[UInt8]] = []
        var referencePackets: [[UInt8]] = []
        for round in 0..<repeats {
            log("Opus: round \(round + 1) of \(repeats)")
            let encoded = try parleyOpusEncode(frames, config)
            encoding.parley.append(encoded.rate)
            packets = encoded.packets
            let reference = try libopusEncode(pcm, frameSamples: frameSamples, config)
            encoding.reference.append(reference.rate)
            referencePackets = reference.packets
            decoding.parley.append(try parleyOpusDecode(packets))
            decoding.reference.append(try libopusDecode(packets, frameSamples: frameSamples))
        }
        table.add(encoding.row("encode", label, "opus_encode"))
        table.add(decoding.row("decode", label, "opus_decode"))
        let kbps = Double(packets.reduce(0) { $0 + $1.count }) * 8 / Double(audioSeconds) / 1000
        table.notes = [
            "Opus: \(audioSeconds) s of the synthetic voice (talk spurts and pauses), \(frames.count) frames; "
                + "complexity 10, 10 % expected loss, VBR. Parley: `OpusAudioEncoder.encode(AudioFrame)` / "
                + "`OpusAudioDecoder.decode` returning new arrays; reference: the same libopus calls on one "
                + "preallocated buffer. Whole loops timed.",
            "Opus: Parley stream \(formatted(kbps)) kbit/s; "
                + (packets == referencePackets ? "packets byte-identical to the reference." : "packets differ."),
        ]
        return table
    }

    private static func parleyOpusEncode(
        _ frames: [AudioFrame], _ config: OpusAudioConfig
    ) throws -> (rate: Rate, packets: [[UInt8]]) {
        let encoder = try OpusAudioEncoder(config)
        var packets: [[UInt8]] = []
        packets.reserveCapacity(frames.count)
        var timer = CallTimer()
        try timer.measure {
            for frame in frames { packets.append(try encoder.encode(frame)) }
        }
        return (timer.rate(frames: frames.count), packets)
    }

    private static func parleyOpusDecode(_ packets: [[UInt8]]) throws -> Rate {
        let decoder = try OpusAudioDecoder()
        var samples = 0
        var timer = CallTimer()
        try timer.measure {
            for packet in packets { samples += try decoder.decode(packet).samples.count }
        }
        guard samples == packets.count * 960 else {
            throw CodecBenchError.mismatch("Parley decoded \(samples) samples")
        }
        return timer.rate(frames: packets.count)
    }

    private static func libopusEncode(
        _ pcm: [Int16], frameSamples: Int, _ config: OpusAudioConfig
    ) throws -> (rate: Rate, packets: [[UInt8]]) {
        var status: Int32 = 0
        guard let encoder = opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &status), status == OPUS_OK else {
            throw CodecBenchError.mismatch("opus_encoder_create failed: \(status)")
        }
        defer { opus_encoder_destroy(encoder) }
        for (request, value) in [
            (OPUS_SET_BITRATE_REQUEST, config.bitrateKbps * 1000), (OPUS_SET_COMPLEXITY_REQUEST, config.complexity),
            (OPUS_SET_INBAND_FEC_REQUEST, 1), (OPUS_SET_PACKET_LOSS_PERC_REQUEST, config.expectedLossPercent),
            (OPUS_SET_DTX_REQUEST, 0),
        ] {
            guard parley_opus_encoder_set_int(encoder, request, opus_int32(value)) == OPUS_OK else {
                throw CodecBenchError.mismatch("opus_encoder_ctl \(request) failed")
            }
        }
        let count = pcm.count / frameSamples
        var output = [UInt8](repeating: 0, count: 4000 * count)
        var sizes = [Int](repeating: 0, count: count)
        var timer = CallTimer()
        timer.measure {
            pcm.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { out in
                    for index in 0..<count {
                        sizes[index] = Int(
                            opus_encode(
                                encoder, input.baseAddress! + index * frameSamples, Int32(frameSamples),
                                out.baseAddress! + index * 4000, 4000))
                    }
                }
            }
        }
        let packets = (0..<count).map { Array(output[($0 * 4000)..<($0 * 4000 + max(0, sizes[$0]))]) }
        return (timer.rate(frames: count), packets)
    }

    private static func libopusDecode(_ packets: [[UInt8]], frameSamples: Int) throws -> Rate {
        var status: Int32 = 0
        guard let decoder = opus_decoder_create(48_000, 1, &status), status == OPUS_OK else {
            throw CodecBenchError.mismatch("opus_decoder_create failed: \(status)")
        }
        defer { opus_decoder_destroy(decoder) }
        // One contiguous buffer of packets, as a C program reading a file would have.
        let joined = packets.flatMap { $0 }
        let offsets = packets.reduce(into: [0]) { $0.append($0.last! + $1.count) }
        var pcm = [Int16](repeating: 0, count: 5760)
        var total = 0
        var timer = CallTimer()
        timer.measure {
            joined.withUnsafeBufferPointer { data in
                pcm.withUnsafeMutableBufferPointer { out in
                    for index in 0..<packets.count {
                        total += Int(
                            opus_decode(
                                decoder, data.baseAddress! + offsets[index],
                                opus_int32(offsets[index + 1] - offsets[index]), out.baseAddress!, 5760, 0))
                    }
                }
            }
        }
        guard total == packets.count * frameSamples else {
            throw CodecBenchError.mismatch("libopus decoded \(total) samples")
        }
        return timer.rate(frames: packets.count)
    }

    /// Adds up thread CPU time and wall-clock time spent inside measured calls.
    struct CallTimer {
        var cpu = 0.0
        var wall = Duration.zero
        private let clock = ContinuousClock()

        mutating func measure<T>(_ body: () throws -> T) rethrows -> T {
            let cpuStart = threadCPUSeconds()
            let wallStart = clock.now
            let result = try body()
            wall += wallStart.duration(to: clock.now)
            cpu += threadCPUSeconds() - cpuStart
            return result
        }

        func rate(frames: Int) -> Rate {
            Rate(cpu: Double(frames) / max(1e-9, cpu), wall: Double(frames) / max(1e-9, seconds(wall)))
        }
    }

    // MARK: - Helpers

    fileprivate static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The number ending right before `marker` in `line` ("623.29" in "(623.29 fps)").
    private static func number<Line: StringProtocol>(in line: Line, before marker: String) -> Double? {
        guard let range = line.range(of: marker) else { return nil }
        let head = line[..<range.lowerBound]
        let digits = head.reversed().prefix { $0.isNumber || $0 == "." }
        return Double(String(digits.reversed()))
    }

    /// Runs a tool; returns its output and the CPU time (user, system) it used, from the kernel's accounting.
    private static func runTool(_ arguments: [String]) throws -> (text: String, user: Double, system: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let outputPath = NSTemporaryDirectory() + "parley-bench-\(getpid())-\(arguments[0]).log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardOutput = log
        process.standardError = log
        let before = childrenUsage()
        try process.run()
        process.waitUntilExit()
        let after = childrenUsage()
        try log.close()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        if process.terminationStatus == 127 {
            throw CodecBenchError.toolMissing(arguments[0])
        }
        guard process.terminationStatus == 0 else {
            throw CodecBenchError.toolFailed(
                command: arguments.joined(separator: " "), status: process.terminationStatus,
                output: String(text.suffix(400)))
        }
        return (text, after.user - before.user, after.system - before.system)
    }

    /// CPU seconds used by all waited-for child processes so far.
    private static func childrenUsage() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return (seconds(usage.ru_utime), seconds(usage.ru_stime))
    }

    /// CPU time this thread has used, in seconds.
    fileprivate static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private static func makeTemporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "parley-codec-bench-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CodecBenchError.toolFailed(
                command: "mkdtemp", status: errno, output: String(cString: strerror(errno)))
        }
        return String(cString: made)
    }

    /// Writes frames as IVF (32-byte file header, 12-byte frame headers), the container vpxdec reads.
    private static func writeIVF(_ frames: [EncodedVideoFrame], width: Int, height: Int, to path: String) throws {
        var bytes = Array("DKIF".utf8) + le(0, 2) + le(32, 2) + Array("VP80".utf8) + le(width, 2) + le(height, 2)
        bytes += le(30, 4) + le(1, 4) + le(frames.count, 4) + le(0, 4)
        for (index, frame) in frames.enumerated() {
            bytes += le(frame.bytes.count, 4) + le(index, 8) + frame.bytes
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw CodecBenchError.toolFailed(
                command: "write \(path)", status: errno, output: String(cString: strerror(errno)))
        }
    }

    /// Frame payloads of an IVF file.
    private static func readIVF(_ path: String) throws -> [[UInt8]] {
        guard let data = FileManager.default.contents(atPath: path), data.count >= 32 else {
            throw CodecBenchError.unparsable(tool: "vpxenc", output: "no IVF output at \(path)")
        }
        let bytes = [UInt8](data)
        var frames: [[UInt8]] = []
        var position = Int(bytes[6]) | Int(bytes[7]) << 8
        while position + 12 <= bytes.count {
            let size =
                Int(bytes[position]) | Int(bytes[position + 1]) << 8 | Int(bytes[position + 2]) << 16
                | Int(bytes[position + 3]) << 24
            guard position + 12 + size <= bytes.count else { break }
            frames.append(Array(bytes[(position + 12)..<(position + 12 + size)]))
            position += 12 + size
        }
        return frames
    }

    private static func le(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

}

/// Why the codec benchmark could not finish.
public enum CodecBenchError: Error, CustomStringConvertible {
    /// A reference tool is not installed.
    case toolMissing(String)
    /// A reference tool exited with an error.
    case toolFailed(command: String, status: Int32, output: String)
    /// A reference tool printed something the benchmark could not read.
    case unparsable(tool: String, output: String)
    /// The two sides did not process the same amount of media.
    case mismatch(String)

    public var description: String {
        switch self {
        case .toolMissing(let tool):
            return "\(tool) is not installed; run `make bench-deps` (Debian packages vpx-tools, opus-tools)"
        case .toolFailed(let command, let status, let output):
            return "`\(command)` failed with status \(status): \(output)"
        case .unparsable(let tool, let output):
            return "could not read the timing from \(tool)'s output: \(output)"
        case .mismatch(let text):
            return "benchmark sides disagree: \(text)"
        }
    }
}
