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
        var stats = buffer.statistics
        let report = ReceiverReport(ssrc: 0x0101_0101, reports: [stats.makeReportBlock(now: ms(100))])
        // 4 of 5 received: fraction 51/256; highest 1004; no jitter (on time); no SR yet.
        #expect(
            RTCPPacket.receiverReport(report).serialized()
                == bytes(
                    "81 c9 00 07 01 01 01 01  00 00 a0 d1 33 00 00 01 00 00 03 ec 00 00 00 00 00 00 00 00 00 00 00 00"))
    }
}

struct RetransmissionBufferTests {
    @Test func answersNACKsFromStoredPackets() {
        var buffer = RetransmissionBuffer<[UInt8]>(retention: .milliseconds(300))
        for sequence: UInt16 in 10...20 {
            buffer.store([UInt8(sequence)], ssrc: 7, sequenceNumber: sequence, at: ms(Int(sequence)))
        }
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 7, lost: [12, 14, 15, 30])
        #expect(buffer.packets(answering: nack, at: ms(100)) == [[12], [14], [15]])
        #expect(buffer.packet(ssrc: 8, sequenceNumber: 12, at: ms(100)) == nil)
        #expect(buffer.packet(ssrc: 7, sequenceNumber: 12, at: ms(312)) == [12])
        #expect(buffer.packet(ssrc: 7, sequenceNumber: 12, at: ms(313)) == nil)  // older than 300 ms
        #expect(buffer.streamCount == 1)
        buffer.removeStream(ssrc: 7)
        #expect(buffer.packet(ssrc: 7, sequenceNumber: 20, at: ms(21)) == nil && buffer.streamCount == 0)
    }

    @Test func newerPacketsOverwriteTheirSlot() {
        var buffer = RetransmissionBuffer<String>(capacityPerStream: 3)  // rounds up to 4
        #expect(buffer.capacityPerStream == 4)
        buffer.store("a", ssrc: 1, sequenceNumber: 65535, at: .zero)
        buffer.store("b", ssrc: 1, sequenceNumber: 3, at: .zero)  // 65535 & 3 == 3 & 3
        #expect(buffer.packet(ssrc: 1, sequenceNumber: 65535, at: .zero) == nil)
        #expect(buffer.packet(ssrc: 1, sequenceNumber: 3, at: .zero) == "b")
        #expect(buffer.packet(ssrc: 1, sequenceNumber: 0, at: .zero) == nil)  // never stored
    }
}

struct KeyframeRequestThrottleTests {
    enum Step {
        case request(ssrc: UInt32, at: Int, forwarded: Bool)
        case due(at: Int, ssrcs: [UInt32])
        case keyframeSent(ssrc: UInt32)
        case remove(ssrc: UInt32)
    }

    static func run(_ throttle: inout KeyframeRequestThrottle, _ steps: [Step]) {
        for (index, step) in steps.enumerated() {
            switch step {
            case let .request(ssrc, time, expected):
                let forwarded = throttle.shouldForward(mediaSSRC: ssrc, at: ms(time))
                #expect(forwarded == expected, "step \(index): request for \(ssrc) at \(time) ms")
            case let .due(time, expected):
                let due = throttle.dueRequests(at: ms(time))
                #expect(due == expected, "step \(index): due at \(time) ms")
            case let .keyframeSent(ssrc):
                throttle.keyframeSent(mediaSSRC: ssrc)
            case let .remove(ssrc):
                throttle.removeStream(ssrc: ssrc)
            }
        }
    }

    @Test func passesOneRequestPerSenderPerInterval() {
        var throttle = KeyframeRequestThrottle()
        Self.run(
            &throttle,
            [
                .request(ssrc: 1, at: 0, forwarded: true),
                .request(ssrc: 1, at: 100, forwarded: false),
                .request(ssrc: 1, at: 499, forwarded: false),
                .request(ssrc: 2, at: 100, forwarded: true),  // another sender
                .due(at: 499, ssrcs: []),
                .due(at: 500, ssrcs: [1]),  // the deferred request goes out once
                .due(at: 2000, ssrcs: []),
                .request(ssrc: 1, at: 600, forwarded: false),
                .request(ssrc: 1, at: 1000, forwarded: true),
            ])
        #expect(throttle.suppressedCount == 3)
    }

    @Test func aKeyframeCancelsTheDeferredRequest() {
        var throttle = KeyframeRequestThrottle(minimumInterval: .milliseconds(200))
        Self.run(
            &throttle,
            [
                .request(ssrc: 5, at: 0, forwarded: true),
                .request(ssrc: 5, at: 50, forwarded: false),
                .keyframeSent(ssrc: 5),
                .due(at: 300, ssrcs: []),
                .request(ssrc: 5, at: 150, forwarded: false),
                .remove(ssrc: 5),
                .request(ssrc: 5, at: 151, forwarded: true),
            ])
    }
}
