import ParleyWire
import Testing

struct ReceptionStatisticsTests {
    @Test func jitterFollowsTheRFC3550Estimator() {
        var stats = ReceptionStatistics(clockRate: 48_000)
        // 20 ms apart in media time; arrivals on time, then 10 ms late, then back on time.
        let arrivals = [0, 20, 40, 70, 80]
        for (index, arrival) in arrivals.enumerated() {
            stats.record(
                ssrc: 7, extendedSequenceNumber: Int64(index), timestamp: UInt32(960 * index), arrival: ms(arrival))
        }
        // D = +480 ticks at packet 3: J = 480 / 16 = 30; D = −480 at packet 4: J = 30 + (480 − 30) / 16 = 58.125.
        #expect(stats.jitter == 58.125)
        #expect(stats.jitterDuration == .nanoseconds(1_208_333))
    }

    @Test func reportBlocksCarryIntervalAndCumulativeLoss() {
        var stats = ReceptionStatistics(clockRate: 90_000)
        for sequence in 0..<10 where sequence != 3 && sequence != 4 {
            stats.record(ssrc: 0xABCD, extendedSequenceNumber: Int64(sequence), timestamp: 0, arrival: .zero)
        }
        #expect(stats.expected == 10 && stats.lost == 2)
        let first = stats.makeReportBlock(now: ms(100))
        #expect(
            first
                == ReportBlock(
                    ssrc: 0xABCD, fractionLost: 51, cumulativeLost: 2, extendedHighestSequenceNumber: 9, jitter: 0))
        for sequence in 10..<20 {
            stats.record(ssrc: 0xABCD, extendedSequenceNumber: Int64(sequence), timestamp: 0, arrival: ms(100))
        }
        let second = stats.makeReportBlock(now: ms(200))
        #expect(second.fractionLost == 0 && second.cumulativeLost == 2 && second.extendedHighestSequenceNumber == 19)
    }

    @Test func extendedHighestSequenceCountsWraps() {
        var stats = ReceptionStatistics(clockRate: 90_000)
        var unwrapper = RTPSequenceUnwrapper()
        for sequence: UInt16 in [65534, 65535, 0, 1] {
            stats.record(ssrc: 1, extendedSequenceNumber: unwrapper.unwrap(sequence), timestamp: 0, arrival: .zero)
        }
        #expect(stats.makeReportBlock(now: .zero).extendedHighestSequenceNumber == 0x0001_0001)
    }

    @Test func lastSenderReportAndDelaySinceIt() {
        var stats = ReceptionStatistics(clockRate: 90_000)
        stats.record(ssrc: 1, extendedSequenceNumber: 0, timestamp: 0, arrival: .zero)
        let ntp = NTPTimestamp.from(unixTime: .milliseconds(500))
        #expect(ntp == 0x83AA_7E80_8000_0000)
        stats.recordSenderReport(ntpTimestamp: ntp, arrival: .seconds(1))
        let block = stats.makeReportBlock(now: .milliseconds(1500))
        #expect(block.lastSenderReport == 0x7E80_8000)
        #expect(block.delaySinceLastSenderReport == 32768)  // 0.5 s in 1/65536 s
    }

    @Test func aReceiverReportFromAJitterBufferGoesOnTheWire() {
        var buffer = AudioJitterBuffer()
        for index in [0, 1, 2, 4] { _ = buffer.insert(opus(index), at: ms(20 * index)) }
        let report = ReceiverReport(ssrc: 0x0101_0101, reports: [buffer.makeReportBlock(now: ms(100))])
        // 4 of 5 received: fraction 51/256; highest 1004; no jitter (on time); no SR yet.
        #expect(
            RTCPPacket.receiverReport(report).serialized()
                == bytes("81 c9 00 07 01 01 01 01")
                + bytes("00 00 a0 d1 33 00 00 01 00 00 03 ec 00 00 00 00 00 00 00 00 00 00 00 00"))
        // The next interval starts from this report: packet 3 arrives late, nothing else is lost.
        _ = buffer.insert(opus(5), at: ms(100))
        buffer.recordSenderReport(ntpTimestamp: 0x0000_1234_5678_0000, arrival: ms(100))
        let next = buffer.makeReportBlock(now: ms(200))
        #expect(next.fractionLost == 0 && next.cumulativeLost == 1 && next.extendedHighestSequenceNumber == 1005)
        #expect(next.lastSenderReport == 0x1234_5678 && next.delaySinceLastSenderReport == 6553)
    }
}
