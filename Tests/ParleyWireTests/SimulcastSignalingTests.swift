import Testing

@testable import ParleyWire

@Suite("Audio levels and simulcast on the wire")
struct SimulcastSignalingTests {
    @Test("an RFC 6464 level survives the packet and is read in place")
    func audioLevelRoundTrip() throws {
        for (voice, dBFS, level) in [
            (true, -12.4, UInt8(12)), (false, -127.0, 127), (true, 3.0, 0), (false, -300, 127),
        ] {
            let indication = AudioLevelIndication(voiceActivity: voice, dBFS: dBFS)
            #expect(indication.level == level && indication.voiceActivity == voice)
            var packet = RTPPacket(
                header: RTPHeader(marker: false, payloadType: 111, sequenceNumber: 7, timestamp: 960, ssrc: 0x100),
                payload: [1, 2, 3])
            packet.header.headerExtension = indication.headerExtension
            let bytes = packet.serialized()
            // One-byte form: 0xBEDE, one word; id 1, length 0; V and the level.
            #expect(Array(bytes[12..<18]) == [0xBE, 0xDE, 0, 1, 0x10, (voice ? 0x80 : 0) | level])
            let parsed = try RTPPacket(parsing: bytes)
            #expect(parsed.payload == [1, 2, 3])
            #expect(parsed.header.headerExtension.flatMap(AudioLevelIndication.init) == indication)
            let inPlace = try bytes.withUnsafeBytes { raw in
                AudioLevelIndication(packet: raw, header: try RTPHeaderView(parsing: raw))
            }
            #expect(inPlace == indication)
        }
    }

    @Test(
        "packets without a level, or with a malformed one, give none",
        arguments: [
            ("no extension", [0x80, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 9]),
            ("another profile", [0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0x10, 0x00, 0, 1, 0x10, 0x85, 0, 0, 9]),
            ("another id", [0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0xBE, 0xDE, 0, 1, 0x20, 0x85, 0, 0, 9]),
            ("level of two bytes", [0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0xBE, 0xDE, 0, 1, 0x11, 0x85, 0, 0, 9]),
            ("element past the end", [0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0xBE, 0xDE, 0, 1, 0, 0, 0, 0x1F, 9]),
        ] as [(String, [UInt8])])
    func noLevel(name: String, bytes: [UInt8]) throws {
        let level = try bytes.withUnsafeBytes { raw in
            AudioLevelIndication(packet: raw, header: try RTPHeaderView(parsing: raw))
        }
        #expect(level == nil, "\(name)")
    }

    @Test("a level after padding and another element is found")
    func levelAfterOtherElements() throws {
        let bytes: [UInt8] = [
            0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0xBE, 0xDE, 0, 2,
            0x31, 0xAA, 0xBB, 0x00, 0x10, 0x9E, 0, 0, 9,
        ]
        let level = try bytes.withUnsafeBytes { raw in
            AudioLevelIndication(packet: raw, header: try RTPHeaderView(parsing: raw))
        }
        #expect(level == AudioLevelIndication(voiceActivity: true, level: 30))
    }

    /// A notice holding sender 3 to 320x180 and pausing sender 4 on a 900 kbit/s downlink.
    static let held = VideoHeld(
        downlinkKbps: 900,
        held: [
            VideoHeld.Entry(id: 3, size: VideoLayerSize(width: 320, height: 180)), VideoHeld.Entry(id: 4, size: nil),
        ])

    @Test("simulcast messages round-trip")
    func roundTrips() throws {
        let tiles = ClientMessage.tiles(
            TileReport(tiles: [
                TileSize(id: 7, width: 133, height: 100),
                TileSize(id: 9, width: 0, height: 0),
            ]))
        #expect(try ClientMessage.decode(tiles.encoded()) == tiles)
        let withDownlink = ClientMessage.tiles(TileReport(tiles: [], downlinkKbps: 900))
        #expect(try ClientMessage.decode(withDownlink.encoded()) == withDownlink)
        for message in [
            ServerMessage.videoLayers(VideoLayerDemand(active: [false, true, false])),
            .dominantSpeaker(DominantSpeakerNotice(id: 12)),
            .videoHeld(Self.held),
        ] {
            #expect(try ServerMessage.decode(message.encoded()) == message)
        }
        let join = JoinRequest(
            room: "standup", name: "alice",
            videoLayers: [
                VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
            ])
        #expect(try ClientMessage.decode(ClientMessage.join(join).encoded()) == .join(join))
        let counted = JoinRequest(room: "standup", name: "alice", downlinkCounts: true)
        #expect(ClientMessage.join(counted).encoded().contains(#""downlinkCounts":true"#))
        #expect(try ClientMessage.decode(ClientMessage.join(counted).encoded()) == .join(counted))
        #expect(!ClientMessage.join(join).encoded().contains("downlinkCounts"), "said only when asked")
    }

    @Test(
        "bad simulcast messages are refused with what is wrong",
        arguments: [
            (
                #"{"v":1,"type":"tiles","tiles":[{"id":1,"width":-4,"height":3}]}"#,
                "tiles[0] is -4x3; sizes are 0 to 8192 pixels"
            ),
            (
                #"{"v":1,"type":"tiles","tiles":[{"id":1,"width":9000,"height":3}]}"#,
                "tiles[0] is 9000x3; sizes are 0 to 8192 pixels"
            ),
            (
                #"{"v":1,"type":"tiles","tiles":[{"id":1,"width":1,"height":3},{"id":1,"width":1,"height":3}]}"#,
                "tiles names a peer twice"
            ),
            (#"{"v":1,"type":"tiles"}"#, "tiles needs field \"tiles\""),
            (#"{"v":1,"type":"tiles","tiles":[],"downlinkKbps":0}"#, "downlinkKbps is 0; it is 1 to 10000000 kbit/s"),
            (
                #"{"v":1,"type":"tiles","tiles":[],"downlinkKbps":99999999}"#,
                "downlinkKbps is 99999999; it is 1 to 10000000 kbit/s"
            ),
            (
                #"{"v":1,"type":"join","room":"r","name":"a","videoLayers":[]}"#,
                "join \"videoLayers\" has 0 layers; a sender has 1 to 3"
            ),
            (
                #"{"v":1,"type":"join","room":"r","name":"a","videoLayers":[{"width":1920,"height":1080}]}"#,
                "join \"videoLayers\"[0] is 1920x1080; a layer is 2x2 to 1280x720"
            ),
            (
                #"{"v":1,"type":"join","room":"r","name":"a","videoLayers":[{"width":320,"height":180},{"width":640,"height":360}]}"#,
                "join \"videoLayers\"[1] is 640x360, not smaller than the layer before it (320x180); list the largest layer first"
            ),
        ])
    func refused(text: String, message: String) {
        #expect {
            try ClientMessage.decode(text)
        } throws: { error in
            guard let error = error as? SignalingError else { return false }
            return error.code == .badField && error.message.contains(message)
        }
    }

    @Test(
        "a bad video-held notice is refused with what is wrong",
        arguments: [
            (#"{"v":1,"type":"video-held","held":[{"id":1,"width":320}]}"#, "gives one of width and height"),
            (#"{"v":1,"type":"video-held","held":[{"id":1,"width":0,"height":3}]}"#, "is 0x3; sizes are 1 to 8192"),
            (#"{"v":1,"type":"video-held","held":[{"id":1},{"id":1}]}"#, "names a sender twice"),
            (#"{"v":1,"type":"video-held","downlinkKbps":-1,"held":[]}"#, "downlinkKbps is -1"),
            (#"{"v":1,"type":"video-held"}"#, "needs field \"held\""),
        ])
    func refusedNotice(text: String, message: String) {
        #expect {
            try ServerMessage.decode(text)
        } throws: { error in
            guard let error = error as? SignalingError else { return false }
            return error.message.contains(message)
        }
        let many = (0..<65).map { #"{"id":\#($0)}"# }.joined(separator: ",")
        #expect(throws: SignalingError.self) {
            try ServerMessage.decode(#"{"v":1,"type":"video-held","held":[\#(many)]}"#)
        }
    }

    @Test("a tiles report is bounded")
    func boundedReport() {
        let many = (0..<65).map { #"{"id":\#($0),"width":1,"height":1}"# }.joined(separator: ",")
        #expect(throws: SignalingError.self) { try ClientMessage.decode(#"{"v":1,"type":"tiles","tiles":[\#(many)]}"#) }
        #expect(throws: SignalingError.self) { try ServerMessage.decode(#"{"v":1,"type":"video-layers","active":[]}"#) }
    }

    @Test("layer SSRCs of a block")
    func layerSSRCs() {
        let ssrcs = MemberSSRCs(block: 0x1000)
        #expect((0..<3).map(ssrcs.videoLayer) == [0x1001, 0x1002, 0x1003])
        #expect([0x1000, 0x1001, 0x1002, 0x1003, 0x1004].map(ssrcs.layerIndex) == [nil, 0, 1, 2, nil])
    }
}
