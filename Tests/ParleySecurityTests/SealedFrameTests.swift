import Testing

@testable import ParleySecurity

/// Whole frames sealed as a browser's encoded-frame transform seals them (SealedFrame.swift): what stays clear, what
/// is zeroed and put back, and each way a sealed frame is refused.
@Suite struct SealedFrameTests {
    static let encryption = try! CallEncryption(secret: "a long shared secret", room: "standup", suite: .aes128GCM)
    /// A VP8 keyframe's header (frame tag, start code, 640x360) and a body.
    static let keyframe: [UInt8] = [0x50, 0x42, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] + Array(1...40)
    static let delta: [UInt8] = [0x31, 0x07, 0x00] + Array(50...90)

    @Test func aKeyframeKeepsItsTagAndSizeClearAndTravelsWithoutItsStartCode() throws {
        let sealer = MediaSealer(encryption: Self.encryption, senderID: 77)
        let wire = try sealer.sealVideoFrame(Self.keyframe)
        #expect(Array(wire[0..<3]) == [0x50, 0x42, 0x00])
        #expect(Array(wire[3..<6]) == [0, 0, 0], "no start code: an eavesdropper's decoder finds no frame")
        #expect(Array(wire[6..<10]) == [0x80, 0x02, 0x68, 0x01], "the size Chromium's depacketizer reads")
        #expect(
            !wire.indices.dropFirst(10).contains { wire[$0...].starts(with: [UInt8](1...12)) }, "the body is sealed")
        var opener = MediaOpener(encryption: Self.encryption)
        #expect(try opener.openVideoFrame(wire) == Self.keyframe)
    }

    @Test func anotherFrameKeepsOnlyItsFirstByteClear() throws {
        let sealer = MediaSealer(encryption: Self.encryption, senderID: 77)
        let wire = try sealer.sealVideoFrame(Self.delta)
        #expect(wire[0] == 0x31)
        #expect(wire.count == Self.delta.count + SFrameHeader(keyID: 77 << 2 | 1, counter: 0).encoded.count + 16)
        var opener = MediaOpener(encryption: Self.encryption)
        #expect(try opener.openVideoFrame(wire) == Self.delta)
        #expect(throws: SFrameError.replayedCounter(keyID: 77 << 2 | 1, counter: 0)) {
            try opener.openVideoFrame(wire)
        }
    }

    @Test func soundIsSealedWholeUnderItsOwnKey() throws {
        let sealer = MediaSealer(encryption: Self.encryption, senderID: 9)
        let opus: [UInt8] = [0xFC, 0xFF, 0xFE, 1, 2, 3]
        let wire = try sealer.sealAudioFrame(opus)
        #expect(try SFrameHeader.parse(wire).header.keyID == 9 << 2 | EncryptedStream.audio.rawValue)
        var opener = MediaOpener(encryption: Self.encryption)
        #expect(try opener.openAudioFrame(wire) == opus)
    }

    /// Sealed frames that must not open, each with its own error.
    @Test(arguments: [
        ("empty", [UInt8](), SFrameError.frameTooShort(bytes: 0, needed: 2)),
        (
            "keyframe bit, 10 bytes", [0x50, 0x42, 0x00, 0, 0, 0, 0x80, 0x02, 0x68, 0x01],
            .frameTooShort(bytes: 10, needed: 11)
        ),
        ("one byte", [0x31], .frameTooShort(bytes: 1, needed: 2)),
        ("no tag after the header", [0x31, 0x13, 0x01], .truncatedCiphertext(keyID: 1, bytes: 1, tagBytes: 16)),
    ])
    func malformedFramesAreRefusedByName(_ row: (String, [UInt8], SFrameError)) {
        var opener = MediaOpener(encryption: Self.encryption)
        #expect(throws: row.2, "\(row.0)") { try opener.openVideoFrame(row.1) }
    }

    @Test func aClearByteChangedOnTheWayFailsToOpen() throws {
        let sealer = MediaSealer(encryption: Self.encryption, senderID: 5)
        var wire = try sealer.sealVideoFrame(Self.keyframe)
        wire[7] ^= 0x01  // another width
        var opener = MediaOpener(encryption: Self.encryption)
        #expect(throws: SFrameError.authenticationFailed(keyID: 5 << 2 | 1)) { try opener.openVideoFrame(wire) }
    }

    @Test func aKeyframeTooShortForItsHeaderIsNotSent() {
        let sealer = MediaSealer(encryption: Self.encryption, senderID: 5)
        #expect(throws: SFrameError.frameTooShort(bytes: 4, needed: 10)) {
            try sealer.sealVideoFrame([0x50, 0x42, 0x00, 0x9D])
        }
        #expect(throws: SFrameError.frameTooShort(bytes: 0, needed: 1)) { try sealer.sealVideoFrame([]) }
    }
}
