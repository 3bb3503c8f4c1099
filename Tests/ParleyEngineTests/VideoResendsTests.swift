import ParleyWire
import Testing

@testable import ParleyEngine

@Suite struct VideoResendsTests {
    static let ssrc: UInt32 = 0xB0B0

    static func packet(_ sequenceNumber: UInt16) -> RTPPacket {
        RTPPacket(
            header: RTPHeader(payloadType: 96, sequenceNumber: sequenceNumber, timestamp: 0, ssrc: ssrc),
            payload: [UInt8(truncatingIfNeeded: sequenceNumber)])
    }

    static func nack(_ lost: [UInt16]) -> GenericNACK { GenericNACK(senderSSRC: 1, mediaSSRC: ssrc, lost: lost) }

    /// At `ms`, a NACK for `lost`, answered with `resent`.
    struct Row: Sendable, CustomTestStringConvertible {
        var ms: Int
        var lost: [UInt16]
        var resent: [UInt16]
        var testDescription: String { "at \(ms) ms \(lost) → \(resent)" }
    }

    @Test("what is kept is resent, once per 30 ms however many ask, and nothing older than 500 ms")
    func resendsAreKeptBriefAndNotRepeated() {
        var resends = VideoResends()
        for sequence in UInt16(100)...104 { resends.sent(Self.packet(sequence), at: .milliseconds(0)) }
        let rows: [Row] = [
            Row(ms: 10, lost: [101, 103, 200], resent: [101, 103]),  // 200 was never sent
            Row(ms: 20, lost: [101, 102], resent: [102]),  // 101 went 10 ms ago: a second receiver's NACK
            Row(ms: 45, lost: [101], resent: [101]),  // 35 ms on: it may go again
            Row(ms: 600, lost: [104], resent: []),  // past the relay's own window: not lost on the way in
        ]
        for row in rows {
            let answer = resends.answer(Self.nack(row.lost), at: .milliseconds(row.ms))
            #expect(answer.map(\.header.sequenceNumber) == row.resent, "\(row.testDescription)")
        }
        #expect(resends.resent == 4)
    }
}
