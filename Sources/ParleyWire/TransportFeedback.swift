// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1), RTPFB
// FMT 15: which of a sender's packets, numbered by one transport-wide sequence across all its streams, arrived and
// when. Chosen over RFC 8888 because browsers send and read this one (a guest's Chromium speaks it as is), and
// libwebrtc's and pion's send-side estimators, the implementations Parley's estimator is read against, consume it.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|  FMT=15 |    PT=205     |           length              |
// |                     SSRC of packet sender                     |
// |                      SSRC of media source                     |
// |      base sequence number     |      packet status count      |
// |                 reference time                | fb pkt. count |
// |          packet chunk         |         packet chunk          |
// .                               .                               .
// |         packet chunk          |  recv delta   |  recv delta   |
// .                               .                               .
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Reference time: signed 24 bits, in 64 ms. A chunk is a run (0, 2-bit symbol, 13-bit length) or a vector (1, then
// 14 one-bit or 7 two-bit symbols). Symbols: 0 not received, 1 received with a 1-byte delta (0..63.75 ms), 2 received
// with a 2-byte signed delta, 3 reserved. Deltas, in 250 µs, run from the reference time to the first packet
// received, then from each received packet to the next.

/// One transport-wide feedback packet: per packet from `baseSequence`, its arrival time or nil when it was not
/// received.
public struct TransportFeedback: Sendable, Equatable {
    /// The FMT of a transport-wide feedback packet in PT 205.
    public static let format: UInt8 = 15
    /// Arrival times are in ticks of 250 µs.
    public static let tickMicroseconds: Int64 = 250
    /// A reference-time step is 64 ms, 256 ticks.
    public static let ticksPerReference: Int64 = 256
    /// Most packets one feedback may describe (a hostile count would otherwise size an array by it).
    public static let packetLimit = 8_192

    /// SSRC of the receiver sending the feedback.
    public var senderSSRC: UInt32
    /// SSRC of a media stream the feedback covers (any one of the sender's streams).
    public var mediaSSRC: UInt32
    /// The transport-wide sequence number of the first packet described.
    public var baseSequence: UInt16
    /// Counts the feedback packets the receiver sent (wraps at 255), so the sender can see one went missing.
    public var feedbackCount: UInt8
    /// Per packet from `baseSequence`, its arrival in 250 µs ticks on the receiver's clock, or nil if not received.
    /// The first arrival fixes the reference time (its 64 ms step); each next one may come at most 8.19 s after or
    /// before the one received before it.
    public var arrivals: [Int64?]

    /// A feedback packet.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, baseSequence: UInt16, feedbackCount: UInt8, arrivals: [Int64?]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.baseSequence = baseSequence
        self.feedbackCount = feedbackCount
        self.arrivals = arrivals
    }

    /// The packet a raw RTPFB FMT 15 packet carries (`body` is everything after the 4-byte RTCP header).
    public init(_ raw: RTCPRawPacket) throws(WireError) {
        guard raw.packetType == RTCPPacketType.transportFeedback, raw.count == Self.format else {
            throw .unexpectedRTCPType(found: raw.packetType, expected: RTCPPacketType.transportFeedback)
        }
        try self.init(body: raw.body)
    }

    /// Parses the body after the RTCP header.
    public init(body: [UInt8]) throws(WireError) {
        guard body.count >= 16 else { throw .truncated(.transportFeedback, needed: 16, available: body.count) }
        func u16(_ at: Int) -> UInt16 { UInt16(body[at]) << 8 | UInt16(body[at + 1]) }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) << 16 | UInt32(u16(at + 2)) }
        senderSSRC = u32(0)
        mediaSSRC = u32(4)
        baseSequence = u16(8)
        let count = Int(u16(10))
        guard count <= Self.packetLimit else { throw .feedbackPacketCount(count, limit: Self.packetLimit) }
        let reference = Int32(bitPattern: UInt32(body[12]) << 24 | UInt32(body[13]) << 16 | UInt32(body[14]) << 8) >> 8
        feedbackCount = body[15]
        // The symbols, chunk by chunk, until `count` packets are described.
        var symbols: [UInt8] = []
        symbols.reserveCapacity(count)
        var offset = 16
        while symbols.count < count {
            guard offset + 2 <= body.count else {
                throw .truncated(.transportFeedback, needed: offset + 2, available: body.count)
            }
            let chunk = u16(offset)
            offset += 2
            let left = count - symbols.count
            if chunk & 0x8000 == 0 {
                let symbol = UInt8(chunk >> 13 & 0x3)
                let run = Int(chunk & 0x1FFF)
                symbols.append(contentsOf: repeatElement(symbol, count: min(run, left)))
            } else if chunk & 0x4000 == 0 {
                for bit in 0..<min(14, left) { symbols.append(UInt8(chunk >> (13 - bit) & 0x1)) }
            } else {
                for pair in 0..<min(7, left) { symbols.append(UInt8(chunk >> (12 - 2 * pair) & 0x3)) }
            }
        }
        var time = Int64(reference) * Self.ticksPerReference
        var arrivals: [Int64?] = []
        arrivals.reserveCapacity(count)
        for (index, symbol) in symbols.enumerated() {
            switch symbol {
            case 0:
                arrivals.append(nil)
            case 1:
                guard offset < body.count else {
                    throw .truncated(.transportFeedback, needed: offset + 1, available: body.count)
                }
                time += Int64(body[offset])
                offset += 1
                arrivals.append(time)
            case 2:
                guard offset + 2 <= body.count else {
                    throw .truncated(.transportFeedback, needed: offset + 2, available: body.count)
                }
                time += Int64(Int16(bitPattern: u16(offset)))
                offset += 2
                arrivals.append(time)
            default:
                throw .reservedFeedbackSymbol(sequenceNumber: baseSequence &+ UInt16(truncatingIfNeeded: index))
            }
        }
        self.arrivals = arrivals
    }

    /// The packet as an RTCP packet of a compound datagram. Throws when two arrivals in a row are more than a 16-bit
    /// delta apart (8.19 s) or there are more than `packetLimit`: the caller sends such feedback in two packets.
    public func raw() throws(WireError) -> RTCPRawPacket {
        guard arrivals.count <= Self.packetLimit else {
            throw .feedbackPacketCount(arrivals.count, limit: Self.packetLimit)
        }
        var body: [UInt8] = []
        body.appendU32(senderSSRC)
        body.appendU32(mediaSSRC)
        body.appendU16(baseSequence)
        body.appendU16(UInt16(arrivals.count))
        let first = arrivals.lazy.compactMap { $0 }.first ?? 0
        // Floor division, so a negative first arrival still has a reference at or before it; kept within the
        // field's signed 24 bits, the first delta covering the rest (wrapped, the packet read back as other times:
        // fuzz target feedback found it).
        let floor =
            first >= 0
            ? first / Self.ticksPerReference : -((-first + Self.ticksPerReference - 1) / Self.ticksPerReference)
        let reference = min(max(floor, -(1 << 23)), (1 << 23) - 1)
        body.appendU24(UInt32(bitPattern: Int32(reference)) & 0xFF_FFFF)
        body.append(feedbackCount)
        var symbols: [UInt8] = []
        var deltas: [UInt8] = []
        var time = reference * Self.ticksPerReference
        for (index, arrival) in arrivals.enumerated() {
            guard let arrival else {
                symbols.append(0)
                continue
            }
            let delta = arrival - time
            time = arrival
            if (0...255).contains(delta) {
                symbols.append(1)
                deltas.append(UInt8(delta))
            } else if (Int64(Int16.min)...Int64(Int16.max)).contains(delta) {
                symbols.append(2)
                deltas.appendU16(UInt16(bitPattern: Int16(delta)))
            } else {
                throw .feedbackDeltaRange(
                    sequenceNumber: baseSequence &+ UInt16(truncatingIfNeeded: index), ticks: delta)
            }
        }
        for chunk in Self.chunks(symbols) { body.appendU16(chunk) }
        body.append(contentsOf: deltas)
        body.padToWord()
        return RTCPRawPacket(packetType: RTCPPacketType.transportFeedback, count: Self.format, body: body)
    }

    /// The symbols as chunks: a run where 7 or more in a row are the same (a two-bit vector holds no more) or the
    /// rest are all one symbol; else a vector, one-bit when the next 14 symbols are all 0 or 1.
    static func chunks(_ symbols: [UInt8]) -> [UInt16] {
        var chunks: [UInt16] = []
        var index = 0
        while index < symbols.count {
            var run = 1
            while index + run < symbols.count, symbols[index + run] == symbols[index], run < 0x1FFF { run += 1 }
            if run >= 7 || index + run == symbols.count {
                chunks.append(UInt16(symbols[index]) << 13 | UInt16(run))
                index += run
                continue
            }
            let fourteen = symbols[index..<min(index + 14, symbols.count)]
            if fourteen.allSatisfy({ $0 <= 1 }) {
                var chunk: UInt16 = 0x8000
                for (bit, symbol) in fourteen.enumerated() { chunk |= UInt16(symbol) << (13 - bit) }
                chunks.append(chunk)
                index += fourteen.count
            } else {
                let seven = symbols[index..<min(index + 7, symbols.count)]
                var chunk: UInt16 = 0xC000
                for (pair, symbol) in seven.enumerated() { chunk |= UInt16(symbol) << (12 - 2 * pair) }
                chunks.append(chunk)
                index += seven.count
            }
        }
        return chunks
    }
}
