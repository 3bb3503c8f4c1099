import ParleyWire
import Testing

@testable import ParleyWebRTC

/// A browser's packets as a member's: table rows of packets in, exact packets (or the reason) out, for the
/// Chromium-like offer of the SDP tests (Opus 111 with its SSRC 2718281828 and audio level at id 1; VP8 96, RTX 97,
/// simulcast q;h;f with the rid extension at id 10).
@Suite struct BrowserIngressTests {
    static let member = MemberSSRCs(block: 0x1000)
    static let offer = try! BrowserOffer(try! SessionDescription(parsing: SDPFixtures.chromeOffer))
    static let microphone: UInt32 = 2_718_281_828

    static func packet(
        type: UInt8, ssrc: UInt32, elements: [RTPHeaderExtensionElement] = [], sequence: UInt16 = 5
    ) -> [UInt8] {
        RTPPacket(
            header: RTPHeader(
                marker: false, payloadType: type, sequenceNumber: sequence, timestamp: 90_000, ssrc: ssrc,
                headerExtension: elements.isEmpty ? nil : try! RTPHeaderExtension(elements: elements)),
            payload: [0x10, 0x20, 0x30]
        ).serialized()
    }

    static func rid(_ name: String) -> RTPHeaderExtensionElement {
        RTPHeaderExtensionElement(id: 10, data: Array(name.utf8))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let packets: [[UInt8]]
        let last: BrowserIngress.Outcome
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "Opus with its audio level becomes the member's audio at Parley's id",
            packets: [
                packet(
                    type: 111, ssrc: microphone,
                    elements: [
                        RTPHeaderExtensionElement(id: 1, data: [0x80 | 33]),
                        RTPHeaderExtensionElement(id: 4, data: Array("0".utf8)),
                    ])
            ],
            last: .forward(
                RTPPacket(
                    header: RTPHeader(
                        marker: false, payloadType: MediaPayloadType.opus, sequenceNumber: 5, timestamp: 90_000,
                        ssrc: member.audio,
                        headerExtension: AudioLevelIndication(voiceActivity: true, level: 33).headerExtension),
                    payload: [0x10, 0x20, 0x30]
                ).serialized())),
        Row(
            name: "Opus from an SSRC the offer did not name", packets: [packet(type: 111, ssrc: 77)],
            last: .dropped(.unknownSSRC(77))),
        Row(
            name: "the half layer, learned from its rid, then without it",
            packets: [packet(type: 96, ssrc: 900, elements: [rid("h")]), packet(type: 96, ssrc: 900, sequence: 6)],
            last: .forward(
                RTPPacket(
                    header: RTPHeader(
                        marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: 6, timestamp: 90_000,
                        ssrc: member.videoLayer(1)), payload: [0x10, 0x20, 0x30]
                ).serialized())),
        Row(
            name: "the full layer is Parley's layer 0", packets: [packet(type: 96, ssrc: 901, elements: [rid("f")])],
            last: .forward(
                RTPPacket(
                    header: RTPHeader(
                        marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: 5, timestamp: 90_000,
                        ssrc: member.video), payload: [0x10, 0x20, 0x30]
                ).serialized())),
        Row(
            name: "video before its rid was seen", packets: [packet(type: 96, ssrc: 902)],
            last: .dropped(.unknownSSRC(902))),
        Row(
            name: "a rid the page never sends", packets: [packet(type: 96, ssrc: 903, elements: [rid("x")])],
            last: .dropped(.unknownRID("x"))),
        Row(name: "RTX", packets: [packet(type: 97, ssrc: 904)], last: .dropped(.retransmission)),
        Row(name: "VP9", packets: [packet(type: 98, ssrc: 905)], last: .dropped(.unknownPayloadType(98))),
        Row(name: "not RTP", packets: [[0x80, 96, 0]], last: .dropped(.notRTP)),
    ]

    @Test(arguments: rows)
    func packetsBecomeTheMembers(row: Row) {
        var ingress = BrowserIngress(offer: Self.offer, member: Self.member)
        var outcome: BrowserIngress.Outcome?
        for packet in row.packets { outcome = ingress.receive(packet) }
        #expect(outcome == row.last)
    }

    @Test func aLayersNewSSRCReplacesItsOldOne() {
        var ingress = BrowserIngress(offer: Self.offer, member: Self.member)
        _ = ingress.receive(Self.packet(type: 96, ssrc: 1, elements: [Self.rid("q")]))
        _ = ingress.receive(Self.packet(type: 96, ssrc: 2, elements: [Self.rid("q")]))
        #expect(ingress.layers == [2: 2])
        #expect(ingress.receive(Self.packet(type: 96, ssrc: 1)) == .dropped(.unknownSSRC(1)))
    }

    /// Chromium starts each layer at a timestamp of its own; the ingress puts every layer on the first one's clock,
    /// taking a new layer's first packet to be at the time that clock shows on its arrival.
    @Test func everyLayerIsPutOnTheFirstLayersClock() throws {
        var ingress = BrowserIngress(offer: Self.offer, member: Self.member)
        func timestamp(_ ssrc: UInt32, _ rid: String?, _ at: UInt32, arrived: Duration) throws -> UInt32? {
            var packet = try RTPPacket(
                parsing: Self.packet(type: 96, ssrc: ssrc, elements: rid.map { [Self.rid($0)] } ?? []))
            packet.header.timestamp = at
            guard case .forward(let bytes) = ingress.receive(packet.serialized(), at: arrived) else { return nil }
            return try RTPPacket(parsing: bytes).header.timestamp
        }
        // (ssrc, rid, timestamp sent, arrival, timestamp forwarded)
        let rows: [(UInt32, String?, UInt32, Duration, UInt32)] = [
            (1, "q", 1_000, .milliseconds(0), 1_000),  // the first layer keeps its clock
            (1, nil, 4_000, .milliseconds(33), 4_000),
            (2, "h", 700_000, .milliseconds(43), 4_900),  // 10 ms after q's last packet: 900 ticks on
            (2, nil, 703_000, .milliseconds(76), 7_900),  // then h's own steps
            (3, "f", UInt32.max - 10, .milliseconds(76), 4_000 &+ 3_870),  // wraps: 43 ms after q's 4,000
        ]
        for (ssrc, rid, sent, arrived, forwarded) in rows {
            #expect(try timestamp(ssrc, rid, sent, arrived: arrived) == forwarded, "ssrc \(ssrc) at \(sent)")
        }
    }

    @Test func everyReasonSaysWhatWasWrong() {
        for row in Self.rows {
            if case .dropped(let reason) = row.last { #expect(!reason.description.isEmpty) }
        }
    }
}
