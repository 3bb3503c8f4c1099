import NIOCore
import ParleyTestLanes
import Testing

@testable import ParleyRelay

@Suite(.lane(.timing)) struct ConnectionAdmissionTests {
    @Test("connections past the limit are refused and counted, with one log line a minute")
    func pastTheLimitIsRefusedAndLoggedOnceAMinute() {
        var admission = ConnectionAdmission()
        #expect(admission.admit(limit: 2, now: .zero) == .admitted)
        #expect(admission.admit(limit: 2, now: .zero) == .admitted)
        #expect(admission.admit(limit: 2, now: .seconds(1)) == .refused(heldBack: 0), "the first refusal is logged")
        #expect(admission.admit(limit: 2, now: .seconds(2)) == .refused(heldBack: nil), "then held back")
        #expect(admission.admit(limit: 2, now: .seconds(3)) == .refused(heldBack: nil))
        #expect(admission.admit(limit: 2, now: .seconds(62)) == .refused(heldBack: 2), "a minute on, with the count")
        #expect(admission.open == 2 && admission.refused == 4)
        admission.closed()
        #expect(admission.admit(limit: 2, now: .seconds(63)) == .admitted)
        #expect(admission.open == 2)
    }
}

@Suite(.lane(.timing)) struct RetransmissionTests {
    @Test func heldPacketsAreResentAndTheRestNamed() {
        var retransmission = Retransmission(retention: .milliseconds(500))
        for sequence in UInt16(10)...12 {
            retransmission.buffer.store(
                ByteBuffer(bytes: [UInt8(sequence)]), ssrc: 7, sequenceNumber: sequence, at: .milliseconds(100))
        }
        let (held, missing) = retransmission.answer(ssrc: 7, [9, 10, 12, 13], at: .milliseconds(200))
        #expect(held.map { $0.readableBytesView.first } == [10, 12])
        #expect(missing == [9, 13])
        #expect(retransmission.resent == 2)
        // Past the retention window nothing is held.
        let late = retransmission.answer(ssrc: 7, [11], at: .seconds(2))
        #expect(late.held.isEmpty && late.missing == [11])
        retransmission.nackForwarded()
        #expect(retransmission.resent == 2 && retransmission.nacksForwarded == 1)
    }
}
