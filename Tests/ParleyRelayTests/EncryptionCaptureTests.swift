import Foundation
import Logging
import ParleyMedia
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// The proof that the relay's path carries nothing readable: a call is recorded where an eavesdropper would sit
/// (alice's media through a recording UDP proxy, her signaling through a recording TCP proxy), and an independent
/// RTP stack (GStreamer's depayloaders and libvpx/libopus decoders, run as `gst-launch-1.0`) is fed the capture.
/// The same call without encryption is the control: there the independent stack decodes the pictures and the tone
/// and the chat line is in the recording, so the test shows it can see what it looks for.
@Suite(.serialized, .lane(.processes))
struct EncryptionCaptureTests {
    static let gstLaunch = "/usr/bin/gst-launch-1.0"
    static let chatLine = "the vault code is 8-1-4-7, tell nobody"
    static let tone = 440.0

    struct Recorded {
        var datagramsFromAlice: [[UInt8]]
        var signaling: [UInt8]
        var aliceFramesSent: Int
        var bobDecodedOfAlice: Int
        var bobChats: [String]
    }

    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// A pure tone, so a decoder that recovers the audio can be told from one that makes noise.
    func toneFile() throws -> String {
        let path = NSTemporaryDirectory() + "parley-tone-\(getpid()).wav"
        let samples = (0..<96_000).map { Int16(8000 * sin(2 * Double.pi * Self.tone * Double($0) / 48_000)) }
        try Data(WAVAudio(sampleRate: 48_000, channels: 1, samples: samples).encoded()).write(
            to: URL(fileURLWithPath: path))
        return path
    }

    /// A two-person call with alice's traffic recorded; end-to-end encrypted and over TLS, or neither.
    func recordCall(encrypted: Bool) async throws -> Recorded {
        var relayConfiguration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger())
        if encrypted { relayConfiguration.tls = try RelayIdentity.selfSigned(hosts: []) }
        let relay = try await Relay.start(relayConfiguration)
        let udp = try await LossyUDPProxy.start(relayPort: relay.mediaPort, lossPercent: 0, seed: 1)
        let tcp = try await TCPRecorder.start(targetPort: relay.signalingPort)
        let tone = try toneFile()
        defer { unlink(tone) }

        func member(_ name: String, port: Int) throws -> CallConfiguration {
            var settings = CallConfiguration(
                server: ServerAddress(host: "127.0.0.1", port: port), room: "vault", name: name,
                profile: VideoProfile(width: 320, height: 240, fps: 15, bitrateKbps: 300), audioSource: .file(tone),
                showsSelfView: false, logger: quietLogger())
            if encrypted {
                settings.encryption = try CallEncryption(
                    secret: "correct horse battery", room: "vault", suite: .aes128GCM)
                settings.signalingSecurity = .tls(try RelayTrustStore(path: nil))
            }
            return settings
        }
        var aliceSettings = try member("alice", port: tcp.port)
        aliceSettings.mediaAddressOverride = ServerAddress(host: "127.0.0.1", port: udp.port)
        let alice = try CallEngine(aliceSettings)
        let bob = try CallEngine(try member("bob", port: relay.signalingPort))
        let aliceLog = EventLog()
        let bobLog = EventLog()
        let tasks = [aliceLog.consume(alice), bobLog.consume(bob)]
        alice.start()
        bob.start()

        let decoding = await eventually(within: .seconds(10)) {
            await bob.statistics().peers.values.contains { $0.framesDecoded >= 30 && $0.audioFramesPlayed >= 50 }
        }
        #expect(decoding, "bob never decoded alice (encrypted: \(encrypted))")
        alice.perform(.sendChat(Self.chatLine))
        // A delivery check, not a latency one: CI has run this group 5x slower than an idle machine.
        let chatted = await eventually(within: .seconds(20)) { bobLog.chats.contains(Self.chatLine) }
        #expect(chatted, "bob never read alice's chat line (encrypted: \(encrypted))")
        // Every frame alice sent reached bob's decoder: her camera stops, and once bob's count stops growing the two
        // are compared.
        alice.perform(.setCameraEnabled(false))
        var decoded = -1
        _ = await eventually(within: .seconds(5)) {
            try? await Task.sleep(for: .milliseconds(300))
            let now = await bob.statistics().peers.values.map(\.framesDecoded).max() ?? 0
            defer { decoded = now }
            return now == decoded
        }
        let sent = await alice.statistics().videoFramesSent

        await alice.leave()
        await bob.leave()
        tasks.forEach { $0.cancel() }
        let capture = try await udp.capture()
        let recorded = Recorded(
            datagramsFromAlice: capture.filter(\.fromClient).map(\.bytes), signaling: tcp.bytes,
            aliceFramesSent: sent, bobDecodedOfAlice: decoded, bobChats: bobLog.chats)
        await udp.stop()
        await tcp.stop()
        await relay.shutdown()
        return recorded
    }

    /// The RTP packets of alice's busiest stream of one payload type, as a classic pcap file.
    func pcap(of datagrams: [[UInt8]], payloadType: UInt8) throws -> String {
        var bySSRC: [UInt32: [[UInt8]]] = [:]
        for datagram in datagrams {
            // RTP, not RTCP (payload types 72–76 with the marker bit are RTCP's 200–204).
            guard datagram.count > 12, datagram[0] >> 6 == 2, datagram[1] & 0x7f == payloadType else { continue }
            let ssrc = datagram[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            bySSRC[ssrc, default: []].append(datagram)
        }
        let packets = bySSRC.values.max { $0.count < $1.count } ?? []
        var file: [UInt8] = []
        func put32(_ value: UInt32) { file += withUnsafeBytes(of: value.littleEndian, Array.init) }
        func put16(_ value: UInt16) { file += withUnsafeBytes(of: value.littleEndian, Array.init) }
        put32(0xa1b2_c3d4)
        put16(2)
        put16(4)
        put32(0)
        put32(0)
        put32(65_535)
        put32(1)  // Ethernet
        for (index, payload) in packets.enumerated() {
            let udpLength = 8 + payload.count
            let ipLength = 20 + udpLength
            let frameLength = 14 + ipLength
            put32(UInt32(1 + index / 100))
            put32(UInt32(index % 100 * 10_000))
            put32(UInt32(frameLength))
            put32(UInt32(frameLength))
            file += [0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00]
            file += [
                0x45, 0, UInt8(ipLength >> 8), UInt8(ipLength & 0xff), 0, 0, 0, 0, 64, 17, 0, 0,
                127, 0, 0, 1, 127, 0, 0, 1,
            ]
            file += [0x13, 0x88, 0x13, 0x89, UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0]
            file += payload
        }
        let path =
            NSTemporaryDirectory() + "parley-capture-\(getpid())-\(payloadType)-\(UUID().uuidString.prefix(6)).pcap"
        try Data(file).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs a GStreamer pipeline to its end (a file source ends by itself), stopped after 30 s; its output file's
    /// bytes.
    func gstreamer(_ pipeline: String, output: String) async throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.gstLaunch)
        process.arguments = ["-q"] + pipeline.split(separator: " ").map(String.init)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if await !eventually(within: .seconds(30), { !process.isRunning }) {
            process.terminate()
            _ = await eventually(within: .seconds(5)) { !process.isRunning }
        }
        defer { unlink(output) }
        return Array(FileManager.default.contents(atPath: output) ?? Data())
    }

    /// What GStreamer makes of alice's busiest stream of `payloadType`: the capture as pcap, through `caps` and
    /// `decoder` (elements up to the encoder of the output file), into a file whose bytes are returned.
    func independentlyDecoded(
        _ recorded: Recorded, payloadType: UInt8, caps: String, decoder: String,
        fileExtension: String
    ) async throws -> [UInt8] {
        let capture = try pcap(of: recorded.datagramsFromAlice, payloadType: payloadType)
        defer { unlink(capture) }
        let output = capture + "." + fileExtension
        return try await gstreamer(
            "filesrc location=\(capture) ! pcapparse ! \(caps) ! \(decoder) ! filesink location=\(output)",
            output: output)
    }

    /// Pictures the independent stack decodes from alice's busiest VP8 stream.
    func independentlyDecodedFrames(_ recorded: Recorded) async throws -> Int {
        let y4m = try await independentlyDecoded(
            recorded, payloadType: MediaPayloadType.vp8,
            caps: "application/x-rtp,media=video,encoding-name=VP8,clock-rate=90000,payload=96",
            decoder: "rtpvp8depay ! vp8dec ! videoconvert ! y4menc", fileExtension: "y4m")
        return String(decoding: y4m, as: UTF8.self).components(separatedBy: "FRAME").count - 1
    }

    /// How much of the independently decoded audio is the tone alice sent: its power at 440 Hz over all its power
    /// (1 for a pure tone, near 0 for noise or silence).
    func independentlyDecodedTone(_ recorded: Recorded) async throws -> Double {
        let wav = try await independentlyDecoded(
            recorded, payloadType: MediaPayloadType.opus,
            caps: "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111",
            decoder: "rtpopusdepay ! opusdec ! audioconvert ! audioresample ! "
                + "audio/x-raw,format=S16LE,rate=48000,channels=1 ! wavenc",
            fileExtension: "wav")
        guard let audio = try? WAVAudio.parse(wav), audio.samples.count > 4800 else { return 0 }
        let samples = audio.samples.dropFirst(4800).map(Double.init)  // past the decoder's start-up
        let total = samples.reduce(0) { $0 + $1 * $1 }
        guard total > 0 else { return 0 }
        let omega = 2 * Double.pi * Self.tone / 48_000
        var re = 0.0
        var im = 0.0
        for (n, x) in samples.enumerated() {
            re += x * cos(omega * Double(n))
            im -= x * sin(omega * Double(n))
        }
        return 2 * (re * re + im * im) / Double(samples.count) / total
    }

    func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    @Test func anEavesdropperOnTheRelaysPathGetsNothingWhileThePeersGetEverything() async throws {
        // `make test` installs GStreamer: without it this proof must fail, not quietly skip.
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.gstLaunch),
            "\(Self.gstLaunch) is missing: run `make deps` (gstreamer1.0-tools, -plugins-good, -plugins-bad)")
        // Control: without encryption the independent stack sees the call, and the chat line is on the wire.
        let clear = try await recordCall(encrypted: false)
        let clearFrames = try await independentlyDecodedFrames(clear)
        let clearTone = try await independentlyDecodedTone(clear)
        #expect(clearFrames >= 20, "the independent decoder must work on a clear call (decoded \(clearFrames))")
        #expect(clearTone > 0.5, "the independent decoder must recover the tone of a clear call (\(clearTone))")
        #expect(contains(clear.signaling, Self.chatLine), "plain signaling carries the chat line in the clear")

        // Encrypted: the same call, with TLS signaling and the room secret.
        let sealed = try await recordCall(encrypted: true)
        #expect(sealed.datagramsFromAlice.count > 100, "alice's media was captured")
        let sealedFrames = try await independentlyDecodedFrames(sealed)
        let sealedTone = try await independentlyDecodedTone(sealed)
        #expect(sealedFrames == 0, "the capture decoded into \(sealedFrames) pictures without the secret")
        #expect(sealedTone < 0.05, "the capture's audio resembles the tone (\(sealedTone)) without the secret")
        #expect(!contains(sealed.signaling, Self.chatLine), "the chat line crossed signaling readable")
        #expect(!sealed.datagramsFromAlice.contains { contains($0, Self.chatLine) })
        #expect(!contains(sealed.signaling, "vault code"), "not even part of it")
        // Meanwhile the peer with the secret missed nothing.
        #expect(sealed.bobChats.contains(Self.chatLine))
        #expect(
            sealed.bobDecodedOfAlice == sealed.aliceFramesSent,
            "bob decoded \(sealed.bobDecodedOfAlice) of \(sealed.aliceFramesSent) frames")
    }
}
