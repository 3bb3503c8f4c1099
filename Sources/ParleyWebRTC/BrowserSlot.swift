import ParleyWire

/// One receive slot of a browser: a transceiver of its page with one steady SSRC, which the relay's answer announced.
/// The relay puts one stream in it at a time (a peer's layer, a peer's microphone) and rewrites each packet onto the
/// slot, so the browser sees one stream that never ends: the slot's SSRC and payload type, sequence numbers that run on
/// by one across a change of source, timestamps that run on by the time that passed (Chromium's jitter buffer would
/// otherwise take a new layer for a reordered or a stalled stream).
public struct BrowserSlot: Sendable, Equatable {
    /// The SSRC the answer announced for this slot.
    public let ssrc: UInt32
    /// The browser's payload type for the slot's codec (its offer's).
    public let payloadType: UInt8
    /// The codec's clock: 90,000 for VP8, 48,000 for Opus.
    public let clockRate: Int
    /// The stream the slot carries now (a member's SSRC), if any.
    public private(set) var source: UInt32?
    private var rebasePending = false
    private var sequenceOffset: UInt16 = 0
    private var timestampOffset: UInt32 = 0
    /// The first sequence number of the current source in the slot: nothing older of it is sent.
    private var firstSourceSequence: UInt16?
    private var lastSequence: UInt16?
    private var lastTimestamp: UInt32?
    private var lastSentAt: Duration?

    /// An empty slot.
    public init(ssrc: UInt32, payloadType: UInt8, clockRate: Int) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
    }

    /// Puts `source` in the slot (nil: empty it); its next packet continues the slot's numbering. The caller switches
    /// a video slot at a keyframe of the new source.
    public mutating func carry(_ source: UInt32?) {
        guard source != self.source else { return }
        self.source = source
        rebasePending = source != nil
        firstSourceSequence = nil
    }

    /// `packet` rewritten onto the slot at `now`, or nil when it is not from the source the slot carries, or is older
    /// than the source's first packet in it.
    public mutating func rewrite(_ packet: RTPPacket, at now: Duration) -> RTPPacket? {
        guard let source, packet.header.ssrc == source else { return nil }
        if rebasePending {
            rebasePending = false
            firstSourceSequence = packet.header.sequenceNumber
            if let lastSequence, let lastTimestamp, let lastSentAt {
                sequenceOffset = lastSequence &+ 1 &- packet.header.sequenceNumber
                let elapsed = max(now - lastSentAt, .milliseconds(1))
                let ticks = UInt32(truncatingIfNeeded: Int64(elapsed / .seconds(1) * Double(clockRate)))
                timestampOffset = lastTimestamp &+ max(ticks, 1) &- packet.header.timestamp
            } else {
                sequenceOffset = 0
                timestampOffset = 0
            }
        } else if let first = firstSourceSequence, SequenceNumber.isNewer(first, than: packet.header.sequenceNumber) {
            return nil
        }
        var rewritten = packet
        rewritten.header.ssrc = ssrc
        rewritten.header.payloadType = payloadType
        rewritten.header.sequenceNumber = packet.header.sequenceNumber &+ sequenceOffset
        rewritten.header.timestamp = packet.header.timestamp &+ timestampOffset
        if lastSequence.map({ SequenceNumber.isNewer(rewritten.header.sequenceNumber, than: $0) }) ?? true {
            lastSequence = rewritten.header.sequenceNumber
            lastTimestamp = rewritten.header.timestamp
            lastSentAt = now
        }
        return rewritten
    }

    /// The source's sequence number of a packet the browser asks for by the slot's (a NACK), while the slot carries
    /// that source; nil for a packet from before the source came into the slot.
    public func sourceSequence(of slotSequence: UInt16) -> UInt16? {
        guard source != nil, !rebasePending, let first = firstSourceSequence else { return nil }
        let sequence = slotSequence &- sequenceOffset
        return SequenceNumber.isNewer(first, than: sequence) ? nil : sequence
    }
}
