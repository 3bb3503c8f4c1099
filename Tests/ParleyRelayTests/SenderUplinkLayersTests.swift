import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// A sender whose uplink carries only some of its layers (`video-sending`): its receivers get the next smaller layer
/// that is sent, switching at its keyframe, and move back when the layer returns.
@Suite("A sender's uplink layers")
struct SenderUplinkLayersTests {
    static let sizes = [
        VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
        VideoLayerSize(width: 160, height: 90),
    ]

    /// Sender 1 with three layers; receivers 2 (full size tile) and 3 (a 320x180 tile), both switched already.
    static func room() -> LayerForwarding {
        var forwarding = LayerForwarding()
        _ = forwarding.add(member: 1, room: "r", layers: sizes)
        _ = forwarding.add(member: 2, room: "r", layers: nil)
        _ = forwarding.add(member: 3, room: "r", layers: nil)
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 640, height: 360)]), from: 2)
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 320, height: 180)]), from: 3)
        _ = forwarding.forwards(layer: 1, startsKeyframe: true, from: 1, to: 3)
        _ = forwarding.takeDemandChanges()
        return forwarding
    }

    @Test("a layer left out: its receivers switch to the next smaller one at its keyframe, and back when it returns")
    func dropAndRestore() {
        var forwarding = Self.room()
        #expect(forwarding.choice(of: 1, for: 2) == .init(current: 0, target: nil))
        #expect(forwarding.announcedDemand(of: 1) == [true, true, false])

        let dropped = forwarding.setSending(of: 1, [false, true, true])
        #expect(dropped.contains(.requestKeyframe(sender: 1, layer: 1)), "\(dropped)")
        #expect(forwarding.choice(of: 1, for: 2) == .init(current: 0, target: 1))
        #expect(forwarding.choice(of: 1, for: 3) == .init(current: 1, target: nil))
        // The half layer's keyframe completes the switch: the full layer is needed by nobody.
        let switched = forwarding.forwards(layer: 1, startsKeyframe: true, from: 1, to: 2)
        let oldLayer = forwarding.forwards(layer: 0, startsKeyframe: false, from: 1, to: 2)
        #expect(switched && !oldLayer)
        let demand = forwarding.takeDemandChanges()
        #expect(demand == [.demand(sender: 1, active: [false, true, false])])
        // A tile report changes nothing while the layer is out.
        let reported = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 640, height: 360)]), from: 2)
        #expect(reported.filter { if case .requestKeyframe = $0 { true } else { false } } == [])

        let restored = forwarding.setSending(of: 1, [true, true, true])
        #expect(restored.contains(.requestKeyframe(sender: 1, layer: 0)), "\(restored)")
        #expect(restored.contains(.demand(sender: 1, active: [true, true, false])), "\(restored)")
        #expect(forwarding.choice(of: 1, for: 2) == .init(current: 1, target: 0))
        #expect(forwarding.sending(of: 1) == nil)
        let again = forwarding.setSending(of: 1, [true, true, true])
        #expect(again == [], "said again: no change")
    }

    @Test("the smallest layer is always counted as sent, and flags past the sender's layers are cut")
    func flagsAreBounded() {
        var forwarding = Self.room()
        _ = forwarding.setSending(of: 1, [false, false, false, true, true])
        #expect(forwarding.sending(of: 1) == [false, false, true])
        #expect(forwarding.choice(of: 1, for: 2)?.target == 2)
        #expect(forwarding.choice(of: 1, for: 3)?.target == 2)
        let nobody = forwarding.setSending(of: 99, [false, true, true])
        #expect(nobody == [], "nobody: nothing")
    }

    @Test("a limited downlink is shared among the layers that are sent")
    func allocationSkipsLayersNotSent() {
        var forwarding = Self.room()
        // Receiver 2's downlink holds the full layer (guessed at 600 kbit/s) with room to spare.
        _ = forwarding.report(
            TileReport(tiles: [TileSize(id: 1, width: 640, height: 360)], downlinkKbps: 2_000), from: 2)
        #expect(forwarding.choice(of: 1, for: 2)?.current == 0)
        _ = forwarding.setSending(of: 1, [false, true, true])
        #expect(forwarding.choice(of: 1, for: 2)?.target == 1)
    }
}
