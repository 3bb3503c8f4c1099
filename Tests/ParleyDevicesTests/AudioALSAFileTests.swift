import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// The ALSA code path through ALSA's own `file` plugin: a user-defined pcm in a temporary HOME's .asoundrc that reads
/// capture samples from `infile` and writes playback samples to `file`, byte-exactly, with no clock at all. PortAudio
/// 19.6 lists such a pcm under its name (it skips only built-in names like "hw", "plug", "file", "null").
@Suite(.lane(.blocking)) struct AudioALSAFileTests {
    /// A HOME holding the .asoundrc, the input samples and (after playback) the output file.
    struct FileDevice {
        let home: String
        var input: String { home + "/in.raw" }
        var output: String { home + "/out.raw" }
        var environment: [String: String] {
            [
                "HOME": home, "PATH": "/usr/bin:/bin",
                "PULSE_CLIENTCONFIG": SoundServer.resourcesDirectory + "/client.conf",
            ]
        }

        init(input samples: [Int16]) throws {
            home = try temporaryFolder("alsa-file")
            try Data(samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] })
                .write(to: URL(fileURLWithPath: home + "/in.raw"))
            let configuration = """
                pcm.parleyfile {
                    type file
                    slave.pcm "null"
                    format "raw"
                    file "\(home)/out.raw"
                    infile "\(home)/in.raw"
                }
                """
            try configuration.write(toFile: home + "/.asoundrc", atomically: true, encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(atPath: home) }
    }

    @Test func listsTheUserDefinedPCMAsMicrophoneAndSpeaker() throws {
        let device = try FileDevice(input: [])
        defer { device.remove() }
        let result = try runProbe(["list"], environment: device.environment)
        #expect(result.status == 0, "\(result.output)")
        let list = try probeJSON(ProbeDeviceList.self, in: result.output)
        #expect(list.microphones.contains { $0.name == "parleyfile" && $0.inputChannels >= 1 && $0.hostAPI == "ALSA" })
        #expect(list.speakers.contains { $0.name == "parleyfile" && $0.outputChannels >= 1 })
    }

    @Test func captureReturnsTheInputExactlyAtAboutRealTime() throws {
        let samples = noise(seconds: 2, seed: 7)
        let device = try FileDevice(input: samples)
        defer { device.remove() }
        let wav = device.home + "/captured.wav"
        let result = try runProbe(
            ["capture", "--device", "parleyfile", "--seconds", "2", "--out", wav], environment: device.environment)
        #expect(result.status == 0, "\(result.output)")
        let report = try probeJSON(ProbeReport.self, in: result.output)
        #expect(report.device == "parleyfile")
        let captured = try readWAV(wav)
        #expect(captured.count == samples.count)
        #expect(
            captured == samples,
            "first difference at \(zip(captured, samples).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)"
        )
        // The file plugin returns 2 s at once; the capture's guard holds it to the wall clock (less one burst).
        #expect(report.elapsedSeconds > 1.75 && report.elapsedSeconds < 4, "took \(report.elapsedSeconds) s")
    }

    @Test func playbackWritesTheSamplesExactlyAtAboutRealTime() throws {
        let samples = noise(seconds: 2, seed: 11)
        let device = try FileDevice(input: [])
        defer { device.remove() }
        let wav = device.home + "/play.wav"
        try writeWAV(samples, to: wav)
        let result = try runProbe(["play", "--device", "parleyfile", "--in", wav], environment: device.environment)
        #expect(result.status == 0, "\(result.output)")
        let report = try probeJSON(ProbeReport.self, in: result.output)
        #expect(report.underruns == 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: device.output)))
        let written = stride(from: 0, to: bytes.count - 1, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
        }
        #expect(Array(written.prefix(samples.count)) == samples)
        #expect(written.dropFirst(samples.count).allSatisfy { $0 == 0 }, "only silence after the file")
        #expect(report.elapsedSeconds > 1.75 && report.elapsedSeconds < 4, "took \(report.elapsedSeconds) s")
    }

    @Test func anUnknownNameSaysWhatExists() throws {
        let device = try FileDevice(input: [])
        defer { device.remove() }
        let result = try runProbe(
            ["capture", "--device", "Blue Yeti", "--seconds", "1", "--out", device.home + "/x.wav"],
            environment: device.environment)
        #expect(result.status == 2)
        #expect(
            result.output.contains("error: no microphone named \"Blue Yeti\"; available: \"parleyfile\""),
            "\(result.output)")
    }

    @Test func aUniquePrefixInAnyCaseIsEnough() throws {
        let device = try FileDevice(input: noise(seconds: 0.5, seed: 3))
        defer { device.remove() }
        let result = try runProbe(
            ["capture", "--device", "PARLEYF", "--seconds", "0.1", "--out", device.home + "/x.wav"],
            environment: device.environment)
        #expect(result.status == 0, "\(result.output)")
        #expect(try probeJSON(ProbeReport.self, in: result.output).device == "parleyfile")
    }

    /// Only meaningful where ALSA sees no sound card (CI, these machines): then nothing at all is listed.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/snd"), "this machine has sound cards"))
    func noDeviceAtAllIsSaidPlainly() throws {
        let home = try temporaryFolder("alsa-none")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let capture = try runProbe(
            ["capture", "--seconds", "1", "--out", home + "/x.wav"],
            environment: [
                "HOME": home, "PATH": "/usr/bin:/bin",
                "PULSE_CLIENTCONFIG": SoundServer.resourcesDirectory + "/client.conf",
            ])
        #expect(capture.status == 2)
        #expect(capture.output.contains("error: no microphone found"), "\(capture.output)")
    }
}
