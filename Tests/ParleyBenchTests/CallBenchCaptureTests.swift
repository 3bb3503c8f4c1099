import Testing

@testable import ParleyBench

/// The call benchmark's wire figures: pcap parsing with exact bytes, and rates and frames from RTP datagrams.
struct CallBenchCaptureTests {
    /// A classic pcap file: the 24-byte header and one record per frame.
    static func pcap(
        linkType: UInt32, frames: [(seconds: UInt32, fraction: UInt32, bytes: [UInt8])],
        bigEndian: Bool = false, nanoseconds: Bool = false
    ) -> [UInt8] {
        func u32(_ value: UInt32) -> [UInt8] {
            let little = [0, 8, 16, 24].map { UInt8(truncatingIfNeeded: value >> $0) }
            return bigEndian ? little.reversed() : little
        }
        func u16(_ value: UInt16) -> [UInt8] {
            let little = [UInt8(value & 0xFF), UInt8(value >> 8)]
            return bigEndian ? little.reversed() : little
        }
        var file =
            u32(nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4) + u16(2) + u16(4) + u32(0) + u32(0) + u32(128)
            + u32(linkType)
        for frame in frames {
            file +=
                u32(frame.seconds) + u32(frame.fraction) + u32(UInt32(frame.bytes.count))
                + u32(UInt32(frame.bytes.count)) + frame.bytes
        }
        return file
    }

    /// An IPv4 packet carrying UDP (or `protocolNumber`) from `source` to `destination` with `payload`.
    static func ipv4(source: UInt16, destination: UInt16, payload: [UInt8], protocolNumber: UInt8 = 17) -> [UInt8] {
        let udpLength = 8 + payload.count
        let totalLength = 20 + udpLength
        let ip: [UInt8] = [
            0x45, 0, UInt8(totalLength >> 8), UInt8(totalLength & 0xFF), 0, 0, 0x40, 0, 64, protocolNumber, 0, 0,
            127, 0, 0, 1, 127, 0, 0, 1,
        ]
        let udp: [UInt8] = [
            UInt8(source >> 8), UInt8(source & 0xFF), UInt8(destination >> 8), UInt8(destination & 0xFF),
            UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0,
        ]
        return ip + udp + payload
    }

    static let ethernetIPv4: [UInt8] = [UInt8](repeating: 0, count: 12) + [0x08, 0x00]
    static let rtpHead: [UInt8] = [0x80, 0xE0, 0x12, 0x34, 0, 0, 0x0B, 0xB8, 0x11, 0x22, 0x33, 0x44]

    struct ParseCase: CustomTestStringConvertible, Sendable {
        var name: String
        var file: [UInt8]
        var expected: [CapturedDatagram]
        var testDescription: String { name }
    }

    static let payload = rtpHead + [UInt8](repeating: 0xAB, count: 20)
    static let datagram = CapturedDatagram(
        time: 10.25, sourcePort: 5004, destinationPort: 7878, length: 32, head: rtpHead)

    @Test(
        "pcap files",
        arguments: [
            ParseCase(
                name: "Ethernet, little-endian, microseconds",
                file: pcap(
                    linkType: 1,
                    frames: [
                        (
                            10, 250_000,
                            ethernetIPv4
                                + ipv4(
                                    source: 5004, destination: 7878,
                                    payload: payload)
                        )
                    ]),
                expected: [datagram]),
            ParseCase(
                name: "Ethernet, big-endian, nanoseconds",
                file: pcap(
                    linkType: 1,
                    frames: [
                        (
                            10, 250_000_000,
                            ethernetIPv4
                                + ipv4(
                                    source: 5004, destination: 7878,
                                    payload: payload)
                        )
                    ],
                    bigEndian: true, nanoseconds: true),
                expected: [datagram]),
            ParseCase(
                name: "Linux cooked v1",
                file: pcap(
                    linkType: 113,
                    frames: [
                        (
                            10, 250_000,
                            [UInt8](repeating: 0, count: 14) + [0x08, 0x00]
                                + ipv4(source: 5004, destination: 7878, payload: payload)
                        )
                    ]),
                expected: [datagram]),
            ParseCase(
                name: "raw IPv4",
                file: pcap(
                    linkType: 101, frames: [(10, 250_000, ipv4(source: 5004, destination: 7878, payload: payload))]),
                expected: [datagram]),
            ParseCase(
                name: "TCP is skipped",
                file: pcap(
                    linkType: 1,
                    frames: [
                        (
                            10, 0,
                            ethernetIPv4
                                + ipv4(
                                    source: 1, destination: 2, payload: payload,
                                    protocolNumber: 6)
                        )
                    ]),
                expected: []),
            ParseCase(
                name: "IPv6 ethertype is skipped",
                file: pcap(
                    linkType: 1,
                    frames: [
                        (
                            10, 0,
                            [UInt8](repeating: 0, count: 12) + [0x86, 0xDD]
                                + ipv4(source: 1, destination: 2, payload: payload)
                        )
                    ]),
                expected: []),
            ParseCase(
                name: "short payload keeps what there is",
                file: pcap(
                    linkType: 1, frames: [(1, 0, ethernetIPv4 + ipv4(source: 1, destination: 2, payload: [9, 8]))]),
                expected: [CapturedDatagram(time: 1, sourcePort: 1, destinationPort: 2, length: 2, head: [9, 8])]),
            ParseCase(
                name: "a record cut short at the end of the file is dropped",
                file: Array(
                    pcap(
                        linkType: 1,
                        frames: [
                            (
                                10, 0,
                                ethernetIPv4
                                    + ipv4(
                                        source: 1, destination: 2,
                                        payload: payload)
                            )
                        ]
                    ).dropLast(5)),
                expected: []),
        ])
    func parse(_ c: ParseCase) throws {
        let datagrams = try PacketCapture.parse(c.file)
        #expect(datagrams.count == c.expected.count)
        for (got, want) in zip(datagrams, c.expected) {
            #expect(abs(got.time - want.time) < 1e-9)
            #expect(got.sourcePort == want.sourcePort)
            #expect(got.destinationPort == want.destinationPort)
            #expect(got.length == want.length)
            #expect(got.head == want.head)
        }
    }

    @Test(
        "bad pcap files",
        arguments: [
            ("too short", [UInt8](repeating: 0, count: 10), "pcap file too short (10 bytes)"),
            ("not pcap", [UInt8](repeating: 0x41, count: 24), "not a pcap file (magic 41414141)"),
            (
                "unknown link type", pcap(linkType: 147, frames: [(1, 0, [1, 2, 3])]),
                "pcap link type 147 is not supported"
            ),
        ])
    func badFiles(_ label: String, _ bytes: [UInt8], _ message: String) {
        #expect(throws: (any Error).self, "\(label)") { try PacketCapture.parse(bytes) }
        do {
            _ = try PacketCapture.parse(bytes)
        } catch {
            #expect("\(error)" == message, "\(label)")
        }
    }

    /// An RTP head: version 2, payload type 96, the marker bit, timestamp and SSRC.
    static func rtp(ssrc: UInt32, timestamp: UInt32, marker: Bool) -> [UInt8] {
        let be = { (value: UInt32) in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        return [0x80, (marker ? 0x80 : 0) | 96, 0, 0] + be(timestamp) + be(ssrc)
    }

    /// Two seconds of a client (port 5000) sending through a relay (7000) to a peer (6000): 30 fps video in three
    /// 1000-byte packets per frame, 50 audio packets per second of 100 bytes, one 50-byte RTCP packet per second.
    static func twoSecondsOfCall() -> [CapturedDatagram] {
        var datagrams: [CapturedDatagram] = []
        for frame in 0..<60 {
            let time = Double(frame) / 30
            for packet in 0..<3 {
                let head = rtp(ssrc: 0x1111, timestamp: UInt32(frame * 3000), marker: packet == 2)
                datagrams.append(
                    CapturedDatagram(
                        time: time, sourcePort: 5000, destinationPort: 7000, length: 1000, head: head))
                datagrams.append(
                    CapturedDatagram(
                        time: time + 0.001, sourcePort: 7000, destinationPort: 6000, length: 1000, head: head))
            }
        }
        for packet in 0..<100 {
            let head = rtp(ssrc: 0x2222, timestamp: UInt32(packet * 960), marker: false)
            datagrams.append(
                CapturedDatagram(
                    time: Double(packet) / 50, sourcePort: 5000, destinationPort: 7000, length: 100, head: head))
        }
        for second in 0..<2 {
            datagrams.append(
                CapturedDatagram(
                    time: Double(second) + 0.5, sourcePort: 5000, destinationPort: 7000, length: 50,
                    head: [0x81, 201, 0, 7, 0, 0, 0x22, 0x22, 0, 0, 0, 0]))
        }
        return datagrams.sorted { $0.time < $1.time }
    }

    @Test func ratesAndFramesOfOneClient() {
        let traffic = WireTraffic(Self.twoSecondsOfCall(), window: 0...2)
        let sender = traffic.figures(forPorts: [5000])
        #expect(sender.videoKbps == 720)  // 60 frames × 3000 bytes × 8 / 1000 / 2 s
        #expect(sender.audioKbps == 40)  // 100 × 100 bytes × 8 / 1000 / 2 s
        #expect(sender.totalKbps == 760.4)  // plus 2 × 50 bytes of RTCP
        #expect(sender.framesSentPerSecond == 30)
        #expect(sender.framesArrivingPerSecond == 0)
        let receiver = traffic.figures(forPorts: [6000])
        #expect(receiver.framesArrivingPerSecond == 30)
        #expect(receiver.totalKbps == 0)
    }

    @Test func theWindowLimitsWhatCounts() {
        let traffic = WireTraffic(Self.twoSecondsOfCall(), window: 1...2)
        let receiver = traffic.figures(forPorts: [6000])
        #expect(receiver.framesArrivingPerSecond == 30)  // frames 30…59 arrive in the second second
    }
}
