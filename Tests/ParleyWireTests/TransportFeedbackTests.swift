import Testing

@testable import ParleyWire

@Suite("Transport-wide feedback (RTPFB FMT 15)")
struct TransportFeedbackTests {
    struct RoundTrip: CustomTestStringConvertible, Sendable {
        var name: String
        var arrivals: [Int64?]
        var testDescription: String { name }
    }

    /// Every third lost, every fifth 300 ticks a step (large and negative deltas), the rest 2 ticks.
    static let mixed: [Int64?] = (0..<60).map { index in
        let step: Int64 = index % 5 == 0 ? 300 : 2
        return index % 3 == 0 ? nil : Int64(index) * step
    }
    static let lostAfterFirst: [Int64?] = [7] + [Int64?](repeating: nil, count: 40)
    static let longRun: [Int64?] = (0..<8_192).map { Int64(100 + $0) }

    static let roundTrips: [RoundTrip] = [
        RoundTrip(name: "three packets, small deltas", arrivals: [260, 264, 268]),
        RoundTrip(name: "a lost packet between two", arrivals: [1_000, nil, 1_010]),
        RoundTrip(name: "a large and a negative delta (reordering)", arrivals: [5_000, 5_400, 5_390, nil, 5_395]),
        RoundTrip(name: "everything lost but the first", arrivals: lostAfterFirst),
        RoundTrip(name: "a long run past one run chunk's 8191", arrivals: longRun),
        RoundTrip(name: "mixed one-bit and two-bit vectors", arrivals: mixed),
        RoundTrip(name: "no packet received at all", arrivals: [nil, nil]),
        RoundTrip(name: "an arrival before the clock's zero", arrivals: [-300, -100]),
    ]

    @Test("a feedback packet survives serializing and parsing", arguments: roundTrips)
    func roundTrip(_ trip: RoundTrip) throws {
        let feedback = TransportFeedback(
            senderSSRC: 0x1111_2222, mediaSSRC: 0x3333_4444, baseSequence: 65_530, feedbackCount: 255,
            arrivals: trip.arrivals)
        let raw = try feedback.raw()
        #expect(raw.body.count % 4 == 0)
        #expect(try TransportFeedback(raw) == feedback)
        // Through a whole compound datagram, as the relay and clients send it.
        let datagram = RTCPPacket.serializeCompound([.other(raw)])
        let parsed = try RTCPPacket.parseCompound(datagram)
        guard case .other(let back)? = parsed.first else {
            Issue.record("parsed as \(parsed)")
            return
        }
        #expect(try TransportFeedback(back) == feedback)
    }

    @Test("the bytes match the draft's layout: header, a run chunk, 1-byte deltas, zero padding")
    func knownBytes() throws {
        let feedback = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 1, feedbackCount: 9, arrivals: [260, 264, 268])
        #expect(
            try feedback.raw().body == [
                0, 0, 0, 1, 0, 0, 0, 2,  // SSRCs
                0, 1, 0, 3,  // base sequence 1, 3 packets
                0, 0, 1, 9,  // reference time 1 (64 ms), feedback 9
                0x20, 0x03,  // run chunk: symbol 1 (small delta), length 3
                4, 4, 4,  // deltas: 260 - 256, then 4 and 4
                0, 0, 0,  // padding
            ])
    }

    struct Chunking: CustomTestStringConvertible, Sendable {
        var symbols: [UInt8]
        var chunks: [UInt16]
        var testDescription: String { "\(symbols)" }
    }

    static let chunkings: [Chunking] = [
        Chunking(symbols: Array(repeating: 1, count: 7), chunks: [0x2007]),
        Chunking(symbols: [1, 0, 1], chunks: [0x8000 | 0b1010_0000_0000_00]),
        Chunking(symbols: [2, 1, 0], chunks: [0xC000 | 0b10_01_00_00_00_00_00]),
        Chunking(symbols: Array(repeating: 0, count: 9_000), chunks: [0x1FFF, 0x0000 | 9_000 - 8_191]),
        Chunking(symbols: [1, 1], chunks: [0x2002]),
    ]

    @Test(
        "symbols become run chunks where they repeat, one-bit vectors where they can, two-bit vectors else",
        arguments: chunkings)
    func chunks(_ chunking: Chunking) {
        #expect(TransportFeedback.chunks(chunking.symbols) == chunking.chunks)
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var body: [UInt8]
        var error: WireError
        var testDescription: String { name }
    }

    static let bad: [Bad] = [
        Bad(
            name: "shorter than the fixed part", body: [0, 0, 0, 1],
            error: .truncated(.transportFeedback, needed: 16, available: 4)),
        Bad(
            name: "chunks end before the count", body: [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 20, 0, 0, 0, 0, 0x20, 0x05],
            error: .truncated(.transportFeedback, needed: 20, available: 18)),
        Bad(
            name: "a delta missing", body: [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0x20, 0x02, 4],
            error: .truncated(.transportFeedback, needed: 20, available: 19)),
        Bad(
            name: "the reserved symbol", body: [0, 0, 0, 1, 0, 0, 0, 2, 0, 9, 0, 1, 0, 0, 0, 0, 0x60, 0x01, 0, 0],
            error: .reservedFeedbackSymbol(sequenceNumber: 9)),
        Bad(
            name: "more packets than the limit",
            body: [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0, 0x1F, 0xFF],
            error: .feedbackPacketCount(65_535, limit: 8_192)),
    ]

    @Test("a malformed packet is refused, naming what was wrong", arguments: bad)
    func malformed(_ bad: Bad) {
        #expect(throws: bad.error) { try TransportFeedback(body: bad.body) }
    }

    @Test("two arrivals too far apart for one delta are refused when serializing")
    func deltaRange() {
        let feedback = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 5, feedbackCount: 0, arrivals: [0, 40_000])
        #expect(throws: WireError.feedbackDeltaRange(sequenceNumber: 6, ticks: 40_000)) { try feedback.raw() }
        #expect("\(WireError.feedbackDeltaRange(sequenceNumber: 6, ticks: 40_000))".contains("10000 ms"))
    }

    @Test("the transport-wide sequence number rides in a one-byte header extension element beside the audio level")
    func headerExtension() throws {
        let level = AudioLevelIndication(voiceActivity: true, level: 30)
        let both = try RTPHeaderExtension(elements: [
            RTPHeaderExtensionElement(id: AudioLevelIndication.extensionID, data: [0x80 | 30]),
            TransportSequence.element(0xBEEF),
        ])
        #expect(TransportSequence.read(both) == 0xBEEF)
        #expect(AudioLevelIndication(both) == level)
        #expect(TransportSequence.read(level.headerExtension) == nil)
    }

    static let stamps: [(what: String, before: RTPHeaderExtension?, level: AudioLevelIndication?)] = [
        ("no extension", nil, nil),
        (
            "an audio level", AudioLevelIndication(voiceActivity: true, level: 30).headerExtension,
            AudioLevelIndication(voiceActivity: true, level: 30)
        ),
        ("an older stamp, replaced", TransportSequence.stamp(7, onto: nil), nil),
        ("not RFC 8285 elements", RTPHeaderExtension(profile: 0x1234, data: [1, 2, 3, 4]), nil),
    ]

    @Test(
        "a packet is stamped keeping its other elements, and both read in place as the relay reads them",
        arguments: stamps)
    func stampedPacketsReadInPlace(_ row: (what: String, before: RTPHeaderExtension?, level: AudioLevelIndication?))
        throws
    {
        let stamped = TransportSequence.stamp(0xBEEF, onto: row.before)
        #expect(TransportSequence.read(stamped) == 0xBEEF, "\(row.what)")
        let packet = RTPPacket(
            header: RTPHeader(
                marker: false, payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, headerExtension: stamped),
            payload: [9, 9, 9]
        ).serialized()
        try packet.withUnsafeBytes { raw in
            let header = try RTPHeaderView(parsing: raw)
            #expect(TransportSequence.read(packet: raw, header: header) == 0xBEEF, "\(row.what)")
            #expect(AudioLevelIndication(packet: raw, header: header) == row.level, "\(row.what)")
            #expect(Array(raw[header.payloadRange]) == [9, 9, 9])
        }
    }
}
