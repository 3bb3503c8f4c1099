import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

@Suite("Layers across nodes", .lane(.timing))
struct LayerNeedsTests {
    static let sizes = [
        VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
        VideoLayerSize(width: 160, height: 90),
    ]

    @Test("another node's member receives nothing here and adds nothing to a sender's demand")
    func remoteReceiversDoNotCount() {
        var forwarding = LayerForwarding()
        _ = forwarding.add(member: 1, room: "r", layers: Self.sizes)
        // Member 2 is another node's: it gets its media there.
        let added = forwarding.add(member: 2, room: "r", layers: nil, receivesHere: false)
        #expect(forwarding.choice(of: 1, for: 2) == nil)
        #expect(!added.contains(.demand(sender: 1, active: [true, false, false])), "\(added)")
        #expect(forwarding.announcedDemand(of: 1) == [false, false, false])
    }

    @Test("what other nodes need adds to the demand; a node that said nothing gets the full layer only")
    func needsOfOtherNodes() {
        var forwarding = LayerForwarding()
        _ = forwarding.add(member: 1, room: "r", layers: Self.sizes)
        _ = forwarding.add(member: 2, room: "r", layers: nil)  // a receiver here, on the full layer
        #expect(forwarding.announcedDemand(of: 1) == [true, false, false])
        #expect(forwarding.needs(layer: 0, of: 1, node: "b") && !forwarding.needs(layer: 2, of: 1, node: "b"))

        // Node b's receivers draw sender 1 small: the small layer resumes and crosses to b, the full one does not.
        #expect(
            forwarding.setNeeds(of: 1, node: "b", active: [false, false, true])
                == [.demand(sender: 1, active: [true, false, true])])
        #expect(!forwarding.needs(layer: 0, of: 1, node: "b") && forwarding.needs(layer: 2, of: 1, node: "b"))
        #expect(forwarding.setNeeds(of: 1, node: "b", active: [false, false, true]) == [], "said again: no change")
        // Node c wants the middle layer; masks longer than the sender's layers are cut.
        #expect(
            forwarding.setNeeds(of: 1, node: "c", active: [false, true, false, true, true, false, false, false])
                == [.demand(sender: 1, active: [true, true, true])])
        #expect(!forwarding.needs(layer: 3, of: 1, node: "c"))

        // Node b has no members left in the room: what it needed goes.
        #expect(forwarding.forget(node: "b", in: "r") == [.demand(sender: 1, active: [true, true, false])])
        #expect(forwarding.forget(node: "b", in: "r") == [])
        // Needs of another node's member are not this node's to take.
        _ = forwarding.add(member: 3, room: "r", layers: Self.sizes, receivesHere: false)
        #expect(forwarding.setNeeds(of: 3, node: "c", active: [true, true, true]) == [])
    }

    @Test("the demand of another node's sender is what the receivers here need of it")
    func demandOfARemoteSender() {
        var forwarding = LayerForwarding()
        _ = forwarding.add(member: 5, room: "r", layers: Self.sizes, receivesHere: false)
        let joined = forwarding.add(member: 6, room: "r", layers: nil)
        #expect(joined.contains(.demand(sender: 5, active: [true, false, false])), "\(joined)")
        let small = forwarding.report(TileReport(tiles: [TileSize(id: 5, width: 150, height: 84)]), from: 6)
        #expect(small == [.requestKeyframe(sender: 5, layer: 2), .demand(sender: 5, active: [true, false, true])])
    }

    @Test("layer needs round-trip", arguments: [0, 1, 3, TrunkLayerNeeds.maximumEntries])
    func roundTrip(count: Int) throws {
        let entries = (0..<count).map { index in
            TrunkLayerNeeds.Entry(
                block: UInt32(index) * 4 + 0x1000, active: (0..<8).map { bit in (index >> bit) & 1 == 1 })
        }
        for kind in [TrunkLayerNeeds.Kind.needs, .sending] {
            let bytes = TrunkLayerNeeds(kind, entries: entries).serialized()
            #expect(bytes.count == 2 + count * 5)
            #expect(try TrunkLayerNeeds(parsing: bytes) == TrunkLayerNeeds(kind, entries: entries))
        }
    }

    @Test(
        "malformed layer needs are refused, saying what was wrong",
        arguments: [
            ([], "trunk control payload is empty"),
            ([3, 0], "unknown trunk control message type 3 (layer needs is 1, layers sent 2)"),
            ([1], "layer needs of 1 bytes where its count says 2"),
            ([1, 201], "layer needs with 201 entries, more than 200"),
            ([1, 1, 0, 0, 0x10], "layer needs of 5 bytes where its count says 7"),
            ([1, 1, 0, 0, 0x10, 0, 1, 9], "layer needs of 8 bytes where its count says 7"),
            ([1, 1, 0, 0, 0x10, 2, 1], "layer needs names SSRC 4098, not the start of a block of four"),
        ] as [([UInt8], String)])
    func refused(bytes: [UInt8], message: String) {
        #expect(throws: TrunkLayerNeeds.Refusal.self) { try TrunkLayerNeeds(parsing: bytes) }
        do {
            _ = try TrunkLayerNeeds(parsing: bytes)
        } catch {
            #expect(error.description == message)
        }
    }
}
