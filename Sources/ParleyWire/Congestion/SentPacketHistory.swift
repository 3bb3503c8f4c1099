/// The transport-wide sequence number a client puts on every packet it sends, audio and video alike, so one feedback
/// packet can say what happened to all of them: an RFC 8285 one-byte element, id 3, two bytes big-endian.
public enum TransportSequence {
    /// The extension id Parley's clients and relay agree on (the signaling protocol fixes it; no SDP here).
    public static let extensionID: UInt8 = 3

    /// The element carrying `sequence`.
    public static func element(_ sequence: UInt16) -> RTPHeaderExtensionElement {
        RTPHeaderExtensionElement(id: extensionID, data: [UInt8(sequence >> 8), UInt8(sequence & 0xFF)])
    }

    /// `extension` with the element carrying `sequence` added (or replacing one there): the other elements kept,
    /// so an audio packet keeps its level. An extension that is not RFC 8285 elements is replaced.
    public static func stamp(_ sequence: UInt16, onto headerExtension: RTPHeaderExtension?) -> RTPHeaderExtension {
        var elements = (try? headerExtension?.elements()) ?? []
        elements.removeAll { $0.id == extensionID }
        elements.append(element(sequence))
        // Every element here fits the one-byte form (ids 1...14, 1...16 bytes), which cannot overflow.
        return (try? RTPHeaderExtension(elements: elements))
            ?? RTPHeaderExtension(
                profile: RTPHeaderExtension.oneByteProfile, data: [extensionID << 4 | 1] + element(sequence).data + [0])
    }

    /// The sequence number in a received packet, read in place (the relay's forwarding path); nil without one.
    public static func read(packet bytes: UnsafeRawBufferPointer, header: RTPHeaderView) -> UInt16? {
        guard let range = header.oneByteElement(extensionID, in: bytes), range.count == 2 else { return nil }
        return UInt16(bytes[range.lowerBound]) << 8 | UInt16(bytes[range.lowerBound + 1])
    }

    /// The sequence number in a packet's header extension; nil without one or when it is malformed.
    public static func read(_ headerExtension: RTPHeaderExtension) -> UInt16? {
        guard let elements = try? headerExtension.elements(),
            let element = elements.first(where: { $0.id == extensionID }), element.data.count == 2
        else { return nil }
        return UInt16(element.data[0]) << 8 | UInt16(element.data[1])
    }
}

/// What the sender learnt of one packet from feedback.
public struct PacketResult: Sendable, Equatable {
    /// The transport-wide sequence number, unwrapped.
    public var sequence: Int64
    /// When it was sent, on the sender's clock (ms).
    public var sentAt: Double
    /// Its size on the wire (bytes).
    public var size: Int
    /// When it arrived, on the receiver's clock (ms); nil when the feedback says it was lost.
    public var arrivedAt: Double?

    public init(sequence: Int64, sentAt: Double, size: Int, arrivedAt: Double?) {
        self.sequence = sequence
        self.sentAt = sentAt
        self.size = size
        self.arrivedAt = arrivedAt
    }
}

/// The packets a sender sent lately, by transport-wide sequence number, so feedback can be matched to their send
/// times and sizes. Bounded: the oldest are forgotten past `capacity` (feedback about them is ignored).
public struct SentPacketHistory: Sendable {
    struct Entry: Sendable {
        var sequence: Int64
        var sentAt: Double
        var size: Int
        var reported: Bool
    }

    /// Packets remembered at most (10 s of 800 packets a second).
    public let capacity: Int
    private var slots: [Entry?]
    private var unwrapper = SequenceUnwrapper<UInt16>()
    /// The next number `next()` hands out.
    private var nextSequence: UInt16 = 0

    /// A history of at most `capacity` packets.
    public init(capacity: Int = 8_192) {
        self.capacity = max(1, capacity)
        slots = Array(repeating: nil, count: self.capacity)
    }

    /// The number for the next packet sent.
    public mutating func next() -> UInt16 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// Notes that packet `sequence` of `size` bytes left at `sentAt` (ms on the sender's clock); returns its number
    /// unwrapped.
    @discardableResult
    public mutating func sent(_ sequence: UInt16, size: Int, at sentAt: Double) -> Int64 {
        let unwrapped = unwrapper.unwrap(sequence)
        slots[Self.slot(unwrapped, capacity)] = Entry(sequence: unwrapped, sentAt: sentAt, size: size, reported: false)
        return unwrapped
    }

    /// The packets a feedback packet reports on, in sequence order, each at most once over the history's life (a
    /// packet reported twice, by a repeated or overlapping feedback, is left out the second time). Packets the
    /// history no longer has, or never sent, are skipped.
    public mutating func results(of feedback: TransportFeedback) -> [PacketResult] {
        var out: [PacketResult] = []
        out.reserveCapacity(feedback.arrivals.count)
        guard let highest = unwrapper.highest else { return out }
        // Unwrapped against the newest packet sent, so a feedback after a wrap finds its packets.
        let base =
            highest + SequenceNumber.distance(from: UInt16(truncatingIfNeeded: highest), to: feedback.baseSequence)
        for (offset, arrival) in feedback.arrivals.enumerated() {
            let sequence = base + Int64(offset)
            let index = Self.slot(sequence, capacity)
            guard var entry = slots[index], entry.sequence == sequence, !entry.reported else { continue }
            entry.reported = true
            slots[index] = entry
            out.append(
                PacketResult(
                    sequence: sequence, sentAt: entry.sentAt, size: entry.size,
                    arrivedAt: arrival.map { Double($0) * Double(TransportFeedback.tickMicroseconds) / 1_000 }))
        }
        return out
    }

    private static func slot(_ sequence: Int64, _ capacity: Int) -> Int {
        Int(((sequence % Int64(capacity)) + Int64(capacity)) % Int64(capacity))
    }
}

extension Duration {
    /// This duration in milliseconds: the congestion controller's unit of time.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}
