import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's feedback about each member's uplink, driven with a manual clock.
@Suite("Uplink feedback", .lane(.timing))
struct UplinkFeedbackTests {
    @Test("each member is told what arrived since its last feedback, the missing as lost, about its own stream")
    func feedbackPerMember() throws {
        var uplinks = UplinkFeedback()
        for (sequence, at) in [(UInt16(10), 0), (11, 1), (13, 3)] {
            uplinks.received(sequence, from: 4, at: .milliseconds(at))
        }
        uplinks.received(0, from: 8, at: .milliseconds(2))
        let due = uplinks.due { $0 == 4 ? 0x400 : nil }  // member 8 has no route: nothing to send it yet
        #expect(due.map(\.member) == [4])
        let feedback = try #require(due.first?.feedback)
        #expect(feedback.mediaSSRC == 0x400)
        #expect(feedback.baseSequence == 10)
        #expect(feedback.arrivals.map { $0 == nil } == [false, false, true, false])
        #expect(uplinks.due { _ in 0x400 }.map(\.member) == [8], "member 4 has nothing new; 8 is routed now")
        uplinks.received(14, from: 4, at: .milliseconds(60))
        uplinks.forget(4)
        #expect(uplinks.due { _ in 0x400 }.isEmpty, "a member gone is told nothing")
        #expect(uplinks.sent == 2)
    }
}
