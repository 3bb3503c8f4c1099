import ParleyWire
import Testing

struct RetransmissionBufferTests {
    @Test func expiredPacketsAreReleasedAndNewOnesKept() {
        var buffer = RetransmissionBuffer<[UInt8]>(retention: .milliseconds(500))
        for sequence in UInt16(0)..<100 {
            buffer.store(
                [UInt8(sequence & 0xFF)], ssrc: 7, sequenceNumber: sequence, at: .milliseconds(Int64(sequence) * 10))
        }
        #expect(buffer.storedPackets == 100)
        // At 1.2 s, packets stored before 0.7 s are past the window: 0…69 go, 70…99 stay.
        buffer.dropExpired(at: .milliseconds(1200))
        #expect(buffer.storedPackets == 30)
        #expect(buffer.releasedPackets == 70)
        #expect(buffer.packet(ssrc: 7, sequenceNumber: 69, at: .milliseconds(1200)) == nil)
        #expect(buffer.packet(ssrc: 7, sequenceNumber: 70, at: .milliseconds(1200)) == [70])
        #expect(buffer.streamCount == 1, "the stream stays until its member leaves")
    }

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
        /// A receiver's media started: its first keyframe.
        case first(ssrc: UInt32, at: Int, forwarded: Bool)
        case due(at: Int, ssrcs: [UInt32])
        case keyframeSent(ssrc: UInt32)
        case remove(ssrc: UInt32)
    }

    static func run(_ throttle: inout KeyframeRequestThrottle, _ steps: [Step]) {
        for (index, step) in steps.enumerated() {
            switch step {
            case .request(let ssrc, let time, let expected):
                let forwarded = throttle.shouldForward(mediaSSRC: ssrc, at: ms(time))
                #expect(forwarded == expected, "step \(index): request for \(ssrc) at \(time) ms")
            case .first(let ssrc, let time, let expected):
                let forwarded = throttle.shouldForwardFirst(mediaSSRC: ssrc, at: ms(time))
                #expect(forwarded == expected, "step \(index): first keyframe of \(ssrc) at \(time) ms")
            case .due(let time, let expected):
                let due = throttle.dueRequests(at: ms(time))
                #expect(due == expected, "step \(index): due at \(time) ms")
            case .keyframeSent(let ssrc):
                throttle.keyframeSent(mediaSSRC: ssrc)
            case .remove(let ssrc):
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

    /// A receiver joining just after another member's request was answered would otherwise wait out the interval
    /// for its first picture (a recording's first half second had no video): its first request goes at once, unless
    /// a keyframe is already on its way, which reaches it too.
    @Test func aNewReceiversFirstRequestIsNotHeldToTheInterval() {
        var throttle = KeyframeRequestThrottle()
        Self.run(
            &throttle,
            [
                .request(ssrc: 1, at: 0, forwarded: true),  // a member a moment before
                .first(ssrc: 1, at: 20, forwarded: false),  // that keyframe has not gone by: it comes to both
                .keyframeSent(ssrc: 1),
                .first(ssrc: 1, at: 40, forwarded: true),  // it went by before this receiver could receive
                .request(ssrc: 1, at: 60, forwarded: false),  // the newcomer's own request: the interval holds it
                .keyframeSent(ssrc: 1),  // answered: nothing left deferred
                .due(at: 600, ssrcs: []),
                .first(ssrc: 1, at: 700, forwarded: true),
                .request(ssrc: 1, at: 710, forwarded: false),
                .due(at: 1200, ssrcs: [1]),  // never answered: the deferred request goes out when due
                .first(ssrc: 1, at: 1300, forwarded: false),  // that one is on its way
                .first(ssrc: 1, at: 1700, forwarded: true),  // lost: past the interval a newcomer asks again
                .request(ssrc: 2, at: 1700, forwarded: true),  // another sender's is its own
            ])
        #expect(throttle.suppressedCount == 4)
    }
}
