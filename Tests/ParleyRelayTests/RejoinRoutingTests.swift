import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The media routes of a client that rejoined while its earlier self lingers at the relay.
@Suite(.lane(.timing))
struct RejoinRoutingTests {
    @Test func rejoinedClientTakesItsAddressFromItsEarlierSelf() {
        var router = MediaRouter<String>()
        router.add(member: 1, room: "r", ssrcs: MemberSSRCs(block: 0x100), role: .broadcaster)
        router.add(member: 2, room: "r", ssrcs: MemberSSRCs(block: 0x200), role: .broadcaster)
        router.bind(member: 1, to: "alice:5000")
        router.bind(member: 2, to: "bob:6000")
        // Alice's signaling dropped; she rejoined as member 3 from the same media socket.
        router.add(member: 3, room: "r", ssrcs: MemberSSRCs(block: 0x300), role: .broadcaster)
        router.bind(member: 3, to: "alice:5000")

        var out: [String] = []
        router.destinations(from: 2, in: "r", into: &out)
        #expect(out == ["alice:5000"], "bob's packets reach alice once")
        router.destinations(from: 3, in: "r", into: &out)
        #expect(out == ["bob:6000"], "alice's packets are not echoed back to her")
        #expect(router.route(of: 1)?.address == nil)
        #expect(
            router.sender(ssrc: MemberSSRCs(block: 0x100).audio, from: "alice:5000") == nil,
            "the lingering self can no longer send")
        #expect(router.dropped[.unprovenAddress] == 1)
    }
}
