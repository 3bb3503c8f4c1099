import ParleyWire

/// This member's video packets kept for resending what a NACK (the relay's, on behalf of receivers) says never
/// reached the relay: kept 500 ms, no longer than the relay keeps them itself (older ones were not lost on the way
/// in, and a peer NACKing them must not make us resend), and each sequence number resent at most once per
/// `resendGap` however many receivers missed it. Time is an input.
struct VideoResends {
    /// How soon the same sequence number may go again.
    static let resendGap: Duration = .milliseconds(30)
    /// Sequence numbers remembered as resent before the old ones are forgotten.
    static let resentLimit = 512

    private var kept = RetransmissionBuffer<RTPPacket>(retention: .milliseconds(500), capacityPerStream: 512)
    /// When each sequence number was last resent.
    private var lastResent: [UInt16: Duration] = [:]
    /// Packets resent so far.
    private(set) var resent = 0

    /// A video packet sent at `now`.
    mutating func sent(_ packet: RTPPacket, at now: Duration) {
        kept.store(packet, ssrc: packet.header.ssrc, sequenceNumber: packet.header.sequenceNumber, at: now)
    }

    /// The packets to send again for `nack` at `now`: those still kept and not resent within `resendGap`.
    mutating func answer(_ nack: GenericNACK, at now: Duration) -> [RTPPacket] {
        if lastResent.count > Self.resentLimit { lastResent = lastResent.filter { now - $0.value < Self.resendGap } }
        var packets: [RTPPacket] = []
        for sequenceNumber in nack.lostSequenceNumbers {
            if let last = lastResent[sequenceNumber], now - last < Self.resendGap { continue }
            guard let packet = kept.packet(ssrc: nack.mediaSSRC, sequenceNumber: sequenceNumber, at: now) else {
                continue
            }
            lastResent[sequenceNumber] = now
            packets.append(packet)
        }
        resent += packets.count
        return packets
    }
}
