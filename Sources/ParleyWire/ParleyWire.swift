// ParleyWire: the wire formats shared by the relay and the call engine. Pure value types, no I/O.
// Media over UDP: RTP (RFC 3550) with VP8 (RFC 7741) and Opus (RFC 7587) payloads, RTCP feedback (RFC 4585),
// the Parley bind packet (an RTCP APP packet), jitter buffers, the relay's retransmission buffer and throttle.
// See docs/protocol.md, section "Media (UDP)".

/// RTP payload types Parley uses; the relay forwards any payload type unchanged.
public enum MediaPayloadType {
    /// VP8 video, 90 kHz clock (RFC 7741).
    public static let vp8: UInt8 = 96
    /// A shared terminal's screen updates (issue 52), 90 kHz clock, framed as VP8 is (RFC 7741's payload
    /// descriptor) so that reassembly, NACK, keyframe requests and the relay's forwarding treat it alike
    /// (`ShareFrame`, docs/protocol.md).
    public static let share: UInt8 = 98
    /// Opus audio, 48 kHz clock, one Opus packet per RTP packet (RFC 7587).
    public static let opus: UInt8 = 111
    /// A probe's padding: zeros on the sender's audio SSRC, acknowledged by the relay in its transport-wide
    /// feedback and never forwarded (docs/protocol.md).
    public static let probe: UInt8 = 127
}

/// RTP clock rates, in ticks per second, for Parley's payload formats.
public enum MediaClockRate {
    /// The 90 kHz clock of every video payload format.
    public static let video = 90_000
    /// The 48 kHz clock RFC 7587 mandates for Opus, whatever the encoder's sample rate.
    public static let opus = 48_000
}

/// Default largest RTP payload (descriptor included): 1200 bytes keeps a packet well under a 1280-byte IPv6 MTU.
public let defaultMaxPayloadSize = 1200
