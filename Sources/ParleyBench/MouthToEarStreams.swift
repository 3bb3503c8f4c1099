// What the sound server itself says about a path's streams during the mouth-to-ear benchmark: `pactl list
// sink-inputs` and `source-outputs` give each stream's "Buffer Latency", the audio queued in the server for it.
// Measured from outside the clients, so it is there for Parley, baresip and Chromium alike.
import Foundation
import ParleyProcesses

/// One stream of the sound server, as `pactl list sink-inputs` or `pactl list source-outputs` prints it.
struct SoundStream: Equatable {
    /// The sink (playing) or source (recording) index it is connected to.
    var device: Int
    /// The module that made it: `protocol-native.c` for a client, `module-loopback.c`, `module-remap-sink.c`…
    var driver: String
    /// The client's `application.name` ("" for a module's stream).
    var application: String
    /// Audio queued in the server for this stream, microseconds.
    var bufferMicroseconds: Int
    /// Its sample format, channels and rate ("s16le 1ch 48000Hz"); a client at another rate is resampled.
    var format: String = ""

    /// The streams in `pactl list sink-inputs` or `pactl list source-outputs` output (`Sink:` or `Source:` lines
    /// name the device); a block without a device or a buffer latency is left out.
    static func parse(_ text: String) -> [SoundStream] {
        var streams: [SoundStream] = []
        var current: (device: Int?, driver: String, application: String, format: String, buffer: Int?)?
        func finish() {
            if let block = current, let device = block.device, let buffer = block.buffer {
                streams.append(
                    SoundStream(
                        device: device, driver: block.driver, application: block.application,
                        bufferMicroseconds: buffer, format: block.format))
            }
            current = nil
        }
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Sink Input #") || line.hasPrefix("Source Output #") {
                finish()
                current = (nil, "", "", "", nil)
                continue
            }
            guard current != nil else { continue }
            if let value = Self.value(line, after: "Sink:") ?? Self.value(line, after: "Source:") {
                current?.device = Int(value)
            } else if let value = Self.value(line, after: "Sample Specification:") {
                current?.format = value
            } else if let value = Self.value(line, after: "Driver:") {
                current?.driver = value
            } else if let value = Self.value(line, after: "Buffer Latency:"), value.hasSuffix(" usec") {
                current?.buffer = Int(value.dropLast(5))
            } else if let value = Self.value(line, after: "application.name =") {
                current?.application = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        finish()
        return streams
    }

    /// The rest of `line` after `prefix`, trimmed; nil when the line does not start with it.
    private static func value(_ line: String, after prefix: String) -> String? {
        guard line.hasPrefix(prefix) else { return nil }
        return line.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
    }

    /// The index of the sink or source called `name` in `pactl list short sinks` / `sources` output.
    static func index(of name: String, inShortList text: String) -> Int? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count >= 2, fields[1] == name { return Int(fields[0]) }
        }
        return nil
    }
}

/// The buffer latencies of a path's streams on the microphone and the speaker: the median of a few samples.
struct PathStreams: Equatable {
    /// The clients' recording streams on the microphone (remap modules' own streams left out), by application
    /// name and format.
    var recording: [String: Double]
    /// The clients' playing streams on the speaker.
    var playing: [String: Double]

    /// Samples the sound server `count` times, `interval` seconds apart; names streams by application (or driver).
    static func sample(_ sound: SoundServer, count: Int = 5, interval: Double = 0.2) -> PathStreams {
        guard let sinks = try? sound.pactl(["list", "short", "sinks"]).output,
            let sources = try? sound.pactl(["list", "short", "sources"]).output,
            let ear = SoundStream.index(of: MouthToEarBench.Device.ear, inShortList: sinks),
            let microphone = SoundStream.index(of: MouthToEarBench.Device.microphone, inShortList: sources)
        else { return PathStreams(recording: [:], playing: [:]) }
        func streams(_ list: String, on device: Int) -> [SoundStream] {
            guard let text = try? sound.pactl(["list", list]).output else { return [] }
            return SoundStream.parse(text).filter { $0.device == device && !$0.driver.hasPrefix("module-remap") }
        }
        // Keyed by name, the format as first seen: module-loopback steers its rate (48001Hz), which must not split
        // one stream into two.
        var formats: [String: String] = [:]
        func add(_ stream: SoundStream, to samples: inout [String: [Double]]) {
            let name = stream.application.isEmpty ? stream.driver : stream.application
            if formats[name] == nil { formats[name] = stream.format }
            samples[name, default: []].append(Double(stream.bufferMicroseconds) / 1000)
        }
        var recording: [String: [Double]] = [:]
        var playing: [String: [Double]] = [:]
        for index in 0..<count {
            if index > 0 { Thread.sleep(forTimeInterval: interval) }
            for stream in streams("source-outputs", on: microphone) { add(stream, to: &recording) }
            for stream in streams("sink-inputs", on: ear) { add(stream, to: &playing) }
        }
        func named(_ samples: [String: [Double]]) -> [String: Double] {
            var result: [String: Double] = [:]
            for (name, values) in samples {
                let format = formats[name] ?? ""
                result[name + (format.isEmpty ? "" : " (\(format))")] = Sample.median(values)
            }
            return result
        }
        return PathStreams(recording: named(recording), playing: named(playing))
    }

    /// "name (format): 12.3" for each stream, or "none".
    static func cell(_ streams: [String: Double]) -> String {
        streams.isEmpty
            ? "none"
            : streams.sorted { $0.key < $1.key }.map { "\($0.key): \(formatted($0.value))" }.joined(separator: ", ")
    }
}

/// The latency PulseAudio settled on for each stream a client opened, from its `info`-level log: a `Created output
/// N "NAME" on DEVICE …` (recording) or `Created input N "NAME" on DEVICE …` (playing) line, then `Final latency
/// 60.00 ms = 30.00 ms + 30.00 ms` (recording: the fragment the client receives at once, plus the source's latency;
/// playing: the sink's latency, twice the request size and the rest of the target length). What the client asked
/// for, so it shows the fragment a recording client waits for, which the queue figure cannot.
struct ConfiguredLatency: Equatable {
    /// True for a recording stream (a source output), false for a playing one (a sink input).
    var recording: Bool
    /// The stream's name as the server logged it.
    var name: String
    /// The sink or source it was created on.
    var device: String
    /// The logged sum, "60.00 ms = 30.00 ms + 30.00 ms".
    var latency: String

    /// Every stream created in `log` (a part of the server's log) with the latency logged after it, in order.
    static func parse(_ log: String) -> [ConfiguredLatency] {
        var found: [ConfiguredLatency] = []
        var pending: (recording: Bool, name: String, device: String)?
        for line in log.split(separator: "\n") {
            if let created = line.firstMatch(of: #/Created (output|input) \d+ "([^"]*)" on (\S+)\s/#) {
                pending = (created.1 == "output", String(created.2), String(created.3))
            } else if let final = line.firstMatch(of: /protocol-native\.c: Final latency (.+)$/), let stream = pending {
                found.append(
                    ConfiguredLatency(
                        recording: stream.recording, name: stream.name, device: stream.device,
                        latency: String(final.1).trimmingCharacters(in: .whitespaces)))
                pending = nil
            }
        }
        return found
    }

    /// The server's log from byte `offset` on ("" when unreadable); with the offset of its end.
    static func read(_ path: String, from offset: Int) -> (text: String, end: Int) {
        guard let data = FileManager.default.contents(atPath: path) else { return ("", offset) }
        let start = min(offset, data.count)
        return (String(decoding: data[start...], as: UTF8.self), data.count)
    }

    /// "NAME: LATENCY" for each different stream of `streams` on `device` in the given direction ("(opened N
    /// times)" when the same one was opened again, as PortAudio does while probing a device), or "none".
    static func cell(_ streams: [ConfiguredLatency], recording: Bool, device: String) -> String {
        var kinds: [(text: String, count: Int)] = []
        for stream in streams where stream.recording == recording && stream.device == device {
            let text = "\(stream.name): \(stream.latency)"
            if let index = kinds.firstIndex(where: { $0.text == text }) {
                kinds[index].count += 1
            } else {
                kinds.append((text, 1))
            }
        }
        return kinds.isEmpty
            ? "none"
            : kinds.map { $0.count > 1 ? "\($0.text) (opened \($0.count) times)" : $0.text }.joined(separator: "; ")
    }
}
