import ParleyWire
import Testing

@testable import ParleyRelay

/// A receiver that reports a limited downlink gets each sender's layer within it (`DownlinkAllocation`'s order).
@Suite("Layers within a receiver's downlink")
struct DownlinkForwardingTests {
    static let sizes = [
        VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
        VideoLayerSize(width: 160, height: 90),
    ]
    static let full = [1, 2, 3].map { TileSize(id: $0, width: 640, height: 360) }

    /// Senders 1, 2, 3 and receiver 4 in one room, 4 drawing everyone full size; 1 the dominant speaker.
    static func room() -> LayerForwarding {
        var forwarding = LayerForwarding()
        for id in UInt32(1)...3 { _ = forwarding.add(member: id, room: "r", layers: sizes) }
        _ = forwarding.add(member: 4, room: "r", layers: nil)
        forwarding.setDominant(1, in: "r")
        _ = forwarding.report(TileReport(tiles: full), from: 4)
        return forwarding
    }

    /// The layer receiver 4 gets or waits for of each sender, nil for none.
    static func layers(_ forwarding: LayerForwarding) -> [Int?] {
        [1, 2, 3].map { sender in forwarding.choice(of: sender, for: 4).flatMap { $0.target ?? $0.current } }
    }

    /// A downlink (kbit/s, nil for no limit) and the layers it leaves each sender. Until measured, a layer costs
    /// 600 kbit/s at 640x360 scaled by its pixels (150 and 37.5), and each voice 48.
    struct Row: Sendable, CustomTestStringConvertible {
        var downlinkKbps: Int?
        var layers: [Int?]
        var testDescription: String { "\(downlinkKbps.map { "\($0) kbit/s" } ?? "no limit") → \(layers)" }
    }

    static let rows: [Row] = [
        Row(downlinkKbps: nil, layers: [0, 0, 0]),  // no limit: each tile's layer
        // 1,000 less three voices (856): the dominant speaker full (600), then 150 and 37.5 for the next two.
        Row(downlinkKbps: 1_000, layers: [0, 1, 2]),
        Row(downlinkKbps: 500, layers: [1, 1, 2]),
        // Nothing left for sender 3: paused. The dominant speaker keeps its smallest even when it does not fit.
        Row(downlinkKbps: 250, layers: [2, 2, nil]),
        Row(downlinkKbps: 150, layers: [2, nil, nil]),
        Row(downlinkKbps: nil, layers: [0, 0, 0]),  // the limit went: everything back
    ]

    @Test("the dominant speaker first, then tiles by size, each at the largest layer that fits", arguments: rows)
    func withinTheDownlink(row: Row) {
        var forwarding = Self.room()
        let effects = forwarding.report(TileReport(tiles: Self.full, downlinkKbps: row.downlinkKbps), from: 4)
        #expect(Self.layers(forwarding) == row.layers, "\(effects)")
        #expect(forwarding.downlink(of: 4) == row.downlinkKbps.map { Double($0) * 1_000 })
        // The receiver is told who is held back and to what (nothing to tell without a limit: nobody was held).
        let held = zip(UInt32(1)...3, row.layers).filter { $0.1 != 0 }.map { sender, layer in
            VideoHeld.Entry(id: sender, size: layer.map { Self.sizes[$0] })
        }
        let notices = effects.filter { if case .held = $0 { true } else { false } }
        #expect(
            notices == (held.isEmpty ? [] : [.held(receiver: 4, VideoHeld(downlinkKbps: row.downlinkKbps, held: held))])
        )
        // Every layer it switches to is asked for with a keyframe; a paused one stops at once.
        for (sender, layer) in zip(UInt32(1)...3, row.layers) where layer != 0 {
            if let layer {
                #expect(effects.contains(.requestKeyframe(sender: sender, layer: layer)))
            } else {
                #expect(forwarding.choice(of: sender, for: 4)?.current == nil)
            }
        }
    }

    @Test("a new dominant speaker, or layers measured cheaper, change the share at the next reallocation")
    func reallocation() {
        var forwarding = Self.room()
        _ = forwarding.report(TileReport(tiles: Self.full, downlinkKbps: 1_000), from: 4)
        #expect(Self.layers(forwarding) == [0, 1, 2])
        forwarding.setDominant(3, in: "r")
        _ = forwarding.reallocate()
        #expect(Self.layers(forwarding) == [1, 2, 0])
        // Sender 2's full layer measured at 250 kbit/s (31,250 bytes in a second), sender 3's at 400: both fit, 2's
        // with the margin a step up needs (287.5 of the 306 left).
        forwarding.count(bytes: 31_250, layer: 0, from: 2)
        forwarding.count(bytes: 50_000, layer: 0, from: 3)
        forwarding.count(bytes: 1, layer: 7, from: 3)  // a layer it never declared: not counted
        let effects = forwarding.reallocate(after: 1)
        #expect(Self.layers(forwarding) == [1, 0, 0], "\(effects)")
        // A receiver without a limit is never reallocated.
        var clean = Self.room()
        #expect(clean.reallocate() == [])
    }

    @Test("a limit that goes is told: nobody is held back any more")
    func heldThenFree() {
        var forwarding = Self.room()
        _ = forwarding.report(TileReport(tiles: Self.full, downlinkKbps: 500), from: 4)
        let freed = forwarding.report(TileReport(tiles: Self.full), from: 4)
        #expect(freed.contains(.held(receiver: 4, VideoHeld(downlinkKbps: nil, held: []))), "\(freed)")
        #expect(
            !forwarding.report(TileReport(tiles: Self.full), from: 4).contains {
                if case .held = $0 { true } else { false }
            })
    }

    @Test("when the receiver is the speaker (a 1:1 call's other side), its largest tile keeps a picture")
    func aStandInForTheSpeaker() {
        var forwarding = LayerForwarding()
        _ = forwarding.add(member: 1, room: "r", layers: [Self.sizes[0]])
        _ = forwarding.add(member: 2, room: "r", layers: [Self.sizes[0]])
        forwarding.setDominant(2, in: "r")  // 2 speaks; what 2 receives of 1 must not pause on a full downlink
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 640, height: 360)], downlinkKbps: 200), from: 2)
        #expect(forwarding.choice(of: 1, for: 2)?.current == 0, "sender 1's only layer keeps flowing")
    }

    @Test("a sender that leaves frees its share")
    func leavingFreesTheShare() {
        var forwarding = Self.room()
        _ = forwarding.report(TileReport(tiles: Self.full, downlinkKbps: 500), from: 4)
        #expect(Self.layers(forwarding) == [1, 1, 2])
        _ = forwarding.remove(member: 1)
        // 500 less two voices leaves 404: 150 for each of the two left (their full layers do not fit).
        #expect([2, 3].map { forwarding.choice(of: $0, for: 4).flatMap { $0.target ?? $0.current } } == [1, 1])
    }
}
