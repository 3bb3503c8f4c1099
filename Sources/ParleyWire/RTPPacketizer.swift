// The packetizer owns a stream's RTP header state: SSRC, payload type, the sequence counter and the mapping from
// media time to RTP timestamps. Both starting values are injected (random in production, fixed in tests).

/// Conversions between durations and RTP clock ticks.
public enum RTPClock {
    /// Whole ticks in `duration` at `clockRate` ticks per second (nanosecond precision, rounded toward zero).
    @inlinable
    public static func ticks(_ duration: Duration, clockRate: Int) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let rate = Int64(clockRate)
        return seconds * rate + (attoseconds / 1_000_000_000) * rate / 1_000_000_000
    }

    /// The duration of `ticks` at `clockRate`.
    @inlinable
    public static func duration(ticks: Int64, clockRate: Int) -> Duration {
        let rate = Int64(clockRate)
        return .seconds(ticks / rate) + .nanoseconds((ticks % rate) * 1_000_000_000 / rate)
    }
}

/// Adds RTP headers to payloads for one stream: SSRC, payload type, sequence numbers, timestamps, marker.
public struct RTPPacketizer: Sendable {
    /// The stream's SSRC (assigned by the relay).
    public let ssrc: UInt32
    /// Payload type (96 VP8, 111 Opus).
    public let payloadType: UInt8
    /// RTP clock rate in ticks per second (90 000 video, 48 000 Opus).
    public let clockRate: Int
    /// RTP timestamp of media time zero.
    public let initialTimestamp: UInt32
    /// Sequence number the next packet gets.
    public private(set) var nextSequenceNumber: UInt16
    /// Packets produced so far (for sender reports; wraps like the RTCP field).
    public private(set) var packetCount: UInt32
    /// Payload octets produced so far (for sender reports; wraps like the RTCP field).
    public private(set) var octetCount: UInt32

    /// A packetizer with injected starting sequence number and timestamp.
    public init(
        ssrc: UInt32, payloadType: UInt8, clockRate: Int, initialSequenceNumber: UInt16, initialTimestamp: UInt32
    ) {
        self.ssrc = ssrc
        self.payloadType = payloadType & 0x7F
        self.clockRate = clockRate
        self.initialTimestamp = initialTimestamp
        nextSequenceNumber = initialSequenceNumber
        packetCount = 0
        octetCount = 0
    }

    /// The RTP timestamp of `mediaTime` (time since the stream's media clock started).
    public func timestamp(at mediaTime: Duration) -> UInt32 {
        initialTimestamp &+ UInt32(truncatingIfNeeded: RTPClock.ticks(mediaTime, clockRate: clockRate))
    }

    /// Packets for one frame's payloads, all with the timestamp of `mediaTime`. The last packet gets the marker
    /// when `markLast` is true (end of a video frame; for Opus, the first packet of a talkspurt).
    public mutating func packetize(_ payloads: [[UInt8]], at mediaTime: Duration, markLast: Bool) -> [RTPPacket] {
        let timestamp = timestamp(at: mediaTime)
        var packets: [RTPPacket] = []
        packets.reserveCapacity(payloads.count)
        for (index, payload) in payloads.enumerated() {
            let header = RTPHeader(
                marker: markLast && index == payloads.count - 1, payloadType: payloadType,
                sequenceNumber: nextSequenceNumber, timestamp: timestamp, ssrc: ssrc)
            packets.append(RTPPacket(header: header, payload: payload))
            nextSequenceNumber &+= 1
            packetCount &+= 1
            octetCount &+= UInt32(truncatingIfNeeded: payload.count)
        }
        return packets
    }

    /// A sender report for this stream at wallclock `ntpTimestamp`, which is media time `mediaTime`.
    public func senderReport(
        ntpTimestamp: UInt64, mediaTime: Duration, reports: [ReportBlock] = []
    ) -> SenderReport {
        SenderReport(
            ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: timestamp(at: mediaTime),
            packetCount: packetCount, octetCount: octetCount, reports: reports)
    }
}
