// Opus over RTP (RFC 7587): the RTP payload is exactly one Opus packet, the clock is always 48 kHz, and the
// timestamp advances by the packet's duration in 48 kHz samples. Opus needs no payload descriptor.

/// What the TOC byte of an Opus packet (RFC 6716 §3.1) says: mode, bandwidth, frame size, channels and frames.
public struct OpusPacketInfo: Sendable, Equatable {
    /// The 5-bit configuration number, 0...31 (mode, bandwidth and frame size).
    public var configuration: UInt8
    /// True for stereo.
    public var isStereo: Bool
    /// Number of Opus frames in the packet, 1...48.
    public var frameCount: Int
    /// Samples per frame at 48 kHz (120, 240, 480, 960, 1920 or 2880).
    public var samplesPerFrame: Int

    /// The packet's duration in 48 kHz samples: how far the RTP timestamp advances.
    public var duration: Int { frameCount * samplesPerFrame }

    /// A record of a packet's layout.
    public init(configuration: UInt8, isStereo: Bool, frameCount: Int, samplesPerFrame: Int) {
        self.configuration = configuration
        self.isStereo = isStereo
        self.frameCount = frameCount
        self.samplesPerFrame = samplesPerFrame
    }

    /// Reads the TOC byte (and the frame count byte for code 3). Throws for an empty packet or a bad frame count.
    public init(parsing packet: [UInt8]) throws(WireError) {
        guard let toc = packet.first else { throw .truncated(.opusPacket, needed: 1, available: 0) }
        configuration = toc >> 3
        isStereo = toc & 0x04 != 0
        samplesPerFrame = Self.samplesPerFrame(configuration: configuration)
        switch toc & 0x03 {
        case 0: frameCount = 1
        case 1, 2: frameCount = 2
        default:
            guard packet.count >= 2 else { throw .truncated(.opusPacket, needed: 2, available: packet.count) }
            frameCount = Int(packet[1] & 0x3F)
            // RFC 6716 §3.2.5: at least one frame and at most 120 ms of audio.
            guard frameCount >= 1, frameCount * samplesPerFrame <= 5760 else {
                throw .invalidOpusFrameCount(frameCount)
            }
        }
    }

    /// Frame size for a configuration number (RFC 6716 Table 2), in 48 kHz samples.
    public static func samplesPerFrame(configuration: UInt8) -> Int {
        switch configuration {
        case 0...11: return [480, 960, 1920, 2880][Int(configuration % 4)]  // SILK: 10, 20, 40, 60 ms
        case 12...15: return [480, 960][Int(configuration % 2)]  // hybrid: 10, 20 ms
        default: return [120, 240, 480, 960][Int(configuration % 4)]  // CELT: 2.5, 5, 10, 20 ms
        }
    }
}

/// Wraps Opus packets as RTP payloads: one packet per payload, timestamps in 48 kHz samples.
public enum OpusPayloader {
    /// The payload for one Opus packet: the packet itself, unchanged (RFC 7587 §4.2). Throws for an empty packet.
    public static func payload(for packet: [UInt8]) throws(WireError) -> [UInt8] {
        guard !packet.isEmpty else { throw .emptyFrame }
        return packet
    }

    /// RTP timestamp ticks for a frame duration: 20 ms is 960.
    public static func ticks(for duration: Duration) -> UInt32 {
        UInt32(truncatingIfNeeded: RTPClock.ticks(duration, clockRate: MediaClockRate.opus))
    }
}
