import ParleyWire
import Testing

@testable import ParleyWebRTC

/// A receive slot's numbering across changes of source, on a manual clock.
@Suite struct BrowserSlotTests {
    static let alice: UInt32 = 0x1001
    static let bob: UInt32 = 0x2001

    static func packet(_ ssrc: UInt32, _ sequence: UInt16, _ timestamp: UInt32) -> RTPPacket {
        RTPPacket(
            header: RTPHeader(
                marker: true, payloadType: MediaPayloadType.vp8, sequenceNumber: sequence, timestamp: timestamp,
                ssrc: ssrc), payload: [0x10])
    }

    static func numbers(_ packet: RTPPacket?) -> [UInt32]? {
        packet.map {
            [$0.header.ssrc, UInt32($0.header.payloadType), UInt32($0.header.sequenceNumber), $0.header.timestamp]
        }
    }

    @Test func theFirstSourceKeepsItsNumbersUnderTheSlotsSSRCAndPayloadType() {
        var slot = BrowserSlot(ssrc: 77, payloadType: 100, clockRate: 90_000)
        #expect(slot.rewrite(Self.packet(Self.alice, 10, 3_000), at: .zero) == nil)
        slot.carry(Self.alice)
        #expect(Self.numbers(slot.rewrite(Self.packet(Self.alice, 10, 3_000), at: .zero)) == [77, 100, 10, 3_000])
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.alice, 11, 6_000), at: .milliseconds(33))) == [
                77, 100, 11, 6_000,
            ])
        #expect(slot.rewrite(Self.packet(Self.bob, 500, 9_000), at: .milliseconds(40)) == nil)
    }

    @Test func aNewSourceRunsOnByOneAndByTheTimeThatPassed() {
        var slot = BrowserSlot(ssrc: 77, payloadType: 100, clockRate: 90_000)
        slot.carry(Self.alice)
        _ = slot.rewrite(Self.packet(Self.alice, 10, 3_000), at: .zero)
        _ = slot.rewrite(Self.packet(Self.alice, 11, 6_000), at: .milliseconds(100))
        slot.carry(Self.bob)
        // Alice's late packet no longer goes out; bob's first comes 50 ms (4,500 ticks) after alice's last.
        #expect(slot.rewrite(Self.packet(Self.alice, 12, 9_000), at: .milliseconds(120)) == nil)
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.bob, 60_000, 1), at: .milliseconds(150))) == [
                77, 100, 12, 10_500,
            ])
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.bob, 60_001, 3_001), at: .milliseconds(183))) == [
                77, 100, 13, 13_500,
            ])
        // Bob's packets from before he came into the slot are not sent; a reordered later one keeps its gap.
        #expect(slot.rewrite(Self.packet(Self.bob, 59_999, 0), at: .milliseconds(190)) == nil)
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.bob, 60_005, 9_001), at: .milliseconds(200))) == [
                77, 100, 17, 19_500,
            ])
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.bob, 60_004, 6_001), at: .milliseconds(201))) == [
                77, 100, 16, 16_500,
            ])
    }

    @Test func numbersWrapAt65535() {
        var slot = BrowserSlot(ssrc: 77, payloadType: 100, clockRate: 48_000)
        slot.carry(Self.alice)
        _ = slot.rewrite(Self.packet(Self.alice, 65_535, UInt32.max - 10), at: .zero)
        slot.carry(Self.bob)
        let first = slot.rewrite(Self.packet(Self.bob, 100, 5), at: .milliseconds(20))
        #expect(Self.numbers(first) == [77, 100, 0, 949])
        #expect(
            Self.numbers(slot.rewrite(Self.packet(Self.bob, 101, 965), at: .milliseconds(40))) == [77, 100, 1, 1_909])
    }

    @Test func aNACKForTheSlotNamesTheSourcesPacket() {
        var slot = BrowserSlot(ssrc: 77, payloadType: 100, clockRate: 90_000)
        slot.carry(Self.alice)
        _ = slot.rewrite(Self.packet(Self.alice, 10, 0), at: .zero)
        slot.carry(Self.bob)
        #expect(slot.sourceSequence(of: 11) == nil, "nothing of bob's is in the slot yet")
        _ = slot.rewrite(Self.packet(Self.bob, 900, 0), at: .milliseconds(10))
        #expect(slot.sourceSequence(of: 11) == 900)
        #expect(slot.sourceSequence(of: 14) == 903)
        #expect(slot.sourceSequence(of: 10) == nil, "alice's packet, from before bob came in")
    }

    @Test func emptyingTheSlotSendsNothing() {
        var slot = BrowserSlot(ssrc: 77, payloadType: 100, clockRate: 90_000)
        slot.carry(Self.alice)
        _ = slot.rewrite(Self.packet(Self.alice, 1, 0), at: .zero)
        slot.carry(nil)
        #expect(slot.rewrite(Self.packet(Self.alice, 2, 3_000), at: .milliseconds(33)) == nil)
        #expect(slot.source == nil)
    }
}
