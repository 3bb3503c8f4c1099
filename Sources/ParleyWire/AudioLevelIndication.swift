// RFC 6464 client-to-mixer audio level, carried in every Opus packet as an RFC 8285 one-byte header extension, so
// the relay can tell who is talking without decoding (or, in an end-to-end encrypted call, being able to decode)
// the audio:
//
//     0                   1                   2                   3
//     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//    |      0xBE     |      0xDE     |           length=1            |
//    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//    |  ID=1 | len=0 |V|    level    |    padding (zeros)            |
//    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// V is the sender's voice activity; level is -dBov, 0 (loudest) ... 127 (silence). The level is in the clear even
// in an encrypted call (as with every RFC 6464 sender): it says when someone talks, never what is said.

/// One packet's audio level (RFC 6464).
public struct AudioLevelIndication: Sendable, Equatable {
    /// The extension id Parley's clients and relay agree on (the signaling protocol fixes it; no SDP here).
    public static let extensionID: UInt8 = 1
    /// The quietest level: digital silence.
    public static let silence: UInt8 = 127

    /// The sender's voice activity detector says this packet is speech.
    public var voiceActivity: Bool
    /// Loudness as -dBov: 0 is full scale, 127 silence.
    public var level: UInt8

    /// A level; values past 127 are read as silence.
    public init(voiceActivity: Bool, level: UInt8) {
        self.voiceActivity = voiceActivity
        self.level = min(level, Self.silence)
    }

    /// The level of a block measured at `dBFS` (0 loudest, negative quieter).
    public init(voiceActivity: Bool, dBFS: Double) {
        let attenuation = dBFS.isNaN ? 127 : min(127, max(0, (-dBFS).rounded()))
        self.init(voiceActivity: voiceActivity, level: UInt8(attenuation))
    }

    /// The header extension carrying this level alone.
    public var headerExtension: RTPHeaderExtension {
        RTPHeaderExtension(
            profile: RTPHeaderExtension.oneByteProfile,
            data: [Self.extensionID << 4, (voiceActivity ? 0x80 : 0) | level, 0, 0])
    }

    /// The level in a packet's one-byte header extension; nil when there is none or it is malformed.
    public init?(_ headerExtension: RTPHeaderExtension) {
        guard headerExtension.profile == RTPHeaderExtension.oneByteProfile,
            let elements = try? headerExtension.elements(),
            let element = elements.first(where: { $0.id == Self.extensionID }), element.data.count == 1
        else { return nil }
        self.init(voiceActivity: element.data[0] & 0x80 != 0, level: element.data[0] & 0x7F)
    }

    /// The level in a received packet, read in place (the relay's forwarding path); nil without one.
    public init?(packet bytes: UnsafeRawBufferPointer, header: RTPHeaderView) {
        guard let range = header.oneByteElement(Self.extensionID, in: bytes), range.count == 1 else { return nil }
        let value = bytes[range.lowerBound]
        self.init(voiceActivity: value & 0x80 != 0, level: value & 0x7F)
    }
}
