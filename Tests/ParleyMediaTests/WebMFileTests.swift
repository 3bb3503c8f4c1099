import Foundation
import Testing

@testable import ParleyMedia

/// libwebm's muxer through the shim: the file's bytes, a chat line's cue, the Opus header, and a full disk.
/// (The whole file played back by FFmpeg is the process test's job: RecordingProcessTests.)
struct WebMFileTests {
    struct CueCase: Sendable, CustomTestStringConvertible {
        var sender: String
        var text: String
        var block: String
        var testDescription: String { text }
    }

    @Test(
        "a chat line as a WebVTT block: identifier, empty settings line, escaped payload",
        arguments: [
            CueCase(sender: "ana", text: "hello", block: "chat-7\n\nana: hello"),
            CueCase(sender: "ana", text: "a <b> & c", block: "chat-7\n\nana: a &lt;b&gt; &amp; c"),
            CueCase(sender: "ana", text: "x --> y", block: "chat-7\n\nana: x --&gt; y"),
            CueCase(sender: "bo ✓", text: "two\nlines\u{7}", block: "chat-7\n\nbo ✓: two lines "),
        ])
    func cue(_ row: CueCase) {
        #expect(WebVTTCue.block(sequence: 7, sender: row.sender, text: row.text) == Array(row.block.utf8))
    }

    @Test func opusHeadIsRFC7845() {
        #expect(
            OpusHead.bytes(channels: 1, preSkip: 312)
                == Array("OpusHead".utf8) + [1, 1, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    /// A few seconds of VP8 and Opus, written and finished: an EBML file of DocType webm with the track names in it.
    @Test func writesAWebMFileWithNamedTracks() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/call.webm"
            let file = try WebMFile(path: path)
            let video = try file.addVideoTrack(name: "ana", width: 160, height: 120)
            let audio = try file.addOpusTrack(name: "Everyone (mixed)", channels: 1, preSkip: 312)
            let chat = try file.addSubtitleTrack(name: "Chat")
            let encoder = try VP8Encoder(VP8EncoderConfig(width: 160, height: 120, targetBitrateKbps: 100))
            let camera = SyntheticCamera(name: "ana", participant: 2, width: 160, height: 120, framesPerSecond: 10)
            let opus = try OpusAudioEncoder()
            for index in 0..<20 {
                let at = UInt64(index) * 100_000_000
                for frame in try encoder.encode(camera.nextFrame(), forceKeyframe: index == 0) {
                    try file.writeFrame(frame.bytes, track: video, at: at, isKey: frame.isKeyframe)
                }
                for block in 0..<5 {
                    let packet = try opus.encode(AudioFrame(samples: [Int16](repeating: 0, count: 960)))
                    try file.writeFrame(packet, track: audio, at: at + UInt64(block) * 20_000_000, isKey: true)
                }
                if index == 5 {
                    try file.writeBlock(
                        WebVTTCue.block(sequence: 1, sender: "ana", text: "hi"), track: chat, at: at,
                        duration: 1_000_000_000)
                }
                if index % 10 == 9 { try file.checkpoint(durationMilliseconds: Double(at) / 1e6) }
            }
            try file.finish(durationMilliseconds: 2000)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(bytes.prefix(4) == [0x1A, 0x45, 0xDF, 0xA3])  // EBML
            let text = String(decoding: bytes, as: UTF8.self)
            for expected in ["webm", "V_VP8", "A_OPUS", "D_WEBVTT/SUBTITLES", "ana", "Everyone (mixed)", "ana: hi"] {
                #expect(text.contains(expected), "\(expected) in the file")
            }
            #expect(UInt64(bytes.count) == file.size)
        }
    }

    /// A full disk, injected at the writer: the write that does not fit throws `diskFull`, the bytes that fit are on
    /// disk, and every later write fails the same way (the engine then stops the recording; the call goes on).
    @Test func aFullDiskThrowsDiskFullAndKeepsWhatFit() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/full.webm"
            let file = try WebMFile(path: path)
            let video = try file.addVideoTrack(name: "ana", width: 160, height: 120)
            file.failWrites(after: 3000)
            let frame = [UInt8](repeating: 0x10, count: 900)
            var failure: WebMError?
            for index in 0..<50 {
                do throws(WebMError) {
                    try file.writeFrame(frame, track: video, at: UInt64(index) * 100_000_000, isKey: index == 0)
                    try file.checkpoint(durationMilliseconds: Double(index) * 100)
                } catch {
                    failure = error
                    break
                }
            }
            #expect(failure == .diskFull(path: path, bytes: file.size))
            let onDisk = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
            #expect(onDisk == 3000)
            #expect(throws: WebMError.self) { try file.checkpoint(durationMilliseconds: 9000) }
        }
    }

    /// libwebm writes the header with the first frame: until then a video track's size can be set (to its first
    /// keyframe's), and the header says that size; after it, or on another kind of track, setting one is refused.
    @Test func aVideoTracksSizeIsSetUntilTheFirstFrame() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/sized.webm"
            let file = try WebMFile(path: path)
            let video = try file.addVideoTrack(name: "ana", width: 640, height: 360)
            let audio = try file.addOpusTrack(name: "Everyone (mixed)", channels: 1, preSkip: 312)
            #expect(throws: WebMError.muxerRefused(path: path, what: "the size 160x120 of track \(audio)")) {
                try file.setVideoSize(track: audio, width: 160, height: 120)
            }
            try file.setVideoSize(track: video, width: 320, height: 240)
            let encoder = try VP8Encoder(VP8EncoderConfig(width: 320, height: 240, targetBitrateKbps: 100))
            let camera = SyntheticCamera(name: "ana", participant: 2, width: 320, height: 240, framesPerSecond: 10)
            for frame in try encoder.encode(camera.nextFrame(), forceKeyframe: true) {
                try file.writeFrame(frame.bytes, track: video, at: 0, isKey: frame.isKeyframe)
            }
            #expect(throws: WebMError.muxerRefused(path: path, what: "the size 160x120 of track \(video)")) {
                try file.setVideoSize(track: video, width: 160, height: 120)
            }
            try file.finish(durationMilliseconds: 100)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            func holds(_ element: [UInt8]) -> Bool {
                bytes.indices.dropLast(element.count).contains { Array(bytes[$0..<($0 + element.count)]) == element }
            }
            // PixelWidth (0xB0) 320 and PixelHeight (0xBA) 240, each in the fewest bytes; no 640 or 360.
            #expect(holds([0xB0, 0x82, 0x01, 0x40]) && holds([0xBA, 0x81, 0xF0]))
            #expect(!holds([0xB0, 0x82, 0x02, 0x80]) && !holds([0xBA, 0x82, 0x01, 0x68]))
        }
    }

    @Test func aFileThatCannotBeCreatedSaysWhy() {
        #expect(throws: WebMError.cannotCreate(path: "/nonexistent/x.webm", reason: "No such file or directory")) {
            _ = try WebMFile(path: "/nonexistent/x.webm")
        }
    }
}
