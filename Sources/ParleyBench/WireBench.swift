import ParleyWire

/// Throughput of ParleyWire's hot paths: the relay's header peek and retransmission buffer, parsing, packetizing
/// and the jitter buffer, next to a plain copy of the same datagram as a baseline.
public enum WireBench {
    /// Runs every case `iterations` times (median of 5 runs) and returns the table.
    public static func run(iterations: Int = 200_000) -> BenchTable {
        var table = BenchTable(
            title: "ParleyWire hot paths (\(iterations) operations per run, median of 5)",
            columns: ["operation", "ns/op", "ops/s"],
            notes: ["1200-byte VP8 RTP packet unless noted; single thread; release build."])
        var packetizer = RTPPacketizer(
            ssrc: 0x1234_5671, payloadType: MediaPayloadType.vp8, clockRate: MediaClockRate.video,
            initialSequenceNumber: 0, initialTimestamp: 0)
        let payload = [0x90, 0x80, 0x80, 0x01] + [UInt8](repeating: 0xAB, count: 1196)
        let packet = packetizer.packetize([payload], at: .zero, markLast: true)[0]
        let wire = packet.serialized()
        let rtcp = RTCPPacket.serializeCompound([
            .receiverReport(
                ReceiverReport(
                    ssrc: 1,
                    reports: [
                        ReportBlock(
                            ssrc: 2, fractionLost: 3, cumulativeLost: 4, extendedHighestSequenceNumber: 5, jitter: 6)
                    ])),
            .sourceDescription(SourceDescription(ssrc: 1, cname: "alice@parley")),
        ])
        var sink = 0

        func measure(_ name: String, _ body: (Int) -> Int) {
            var samples: [Double] = []
            for _ in 0..<5 {
                let clock = ContinuousClock()
                let start = clock.now
                sink &+= body(iterations)
                let elapsed = clock.now - start
                let (seconds, attoseconds) = elapsed.components
                samples.append((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(iterations))
            }
            let median = samples.sorted()[2]
            table.add([name, formatted(median, decimals: 1), formatted(1e9 / median, decimals: 0)])
        }

        measureParsing(measure, packet: packet, wire: wire, rtcp: rtcp)
        measureBuffering(measure, wire: wire)
        table.notes.append("checksum \(sink & 0xFFFF) (keeps the work from being optimized away)")
        return table
    }

    /// Reading and writing one packet: the header peek, full parses, serializing (each timed by `measure`).
    static func measureParsing(
        _ measure: (String, (Int) -> Int) -> Void, packet: RTPPacket, wire: [UInt8], rtcp: [UInt8]
    ) {
        measure("baseline: copy datagram into a new [UInt8]") { count in
            var total = 0
            wire.withUnsafeBytes { raw in
                for _ in 0..<count { total &+= [UInt8](raw).count }
            }
            return total
        }
        measure("RTPHeaderView peek (raw buffer)") { count in
            var total = 0
            wire.withUnsafeBytes { raw in
                for _ in 0..<count {
                    if let view = try? RTPHeaderView(parsing: raw) { total &+= Int(view.sequenceNumber) }
                }
            }
            return total
        }
        measure("MediaPacketKind.classify + peek ([UInt8])") { count in
            var total = 0
            for _ in 0..<count where MediaPacketKind.classify(wire) == .rtp {
                if let view = try? RTPHeaderView(parsing: wire) { total &+= view.payloadLength }
            }
            return total
        }
        measure("RTPPacket full parse (copies payload)") { count in
            var total = 0
            for _ in 0..<count { total &+= (try? RTPPacket(parsing: wire))?.payload.count ?? 0 }
            return total
        }
        measure("RTPPacket serialize") { count in
            var total = 0
            for _ in 0..<count { total &+= packet.serialized().count }
            return total
        }
        measure("RTCP compound parse (RR + SDES)") { count in
            var total = 0
            for _ in 0..<count { total &+= (try? RTCPPacket.parseCompound(rtcp))?.count ?? 0 }
            return total
        }
    }

    /// What holds or makes packets: the retransmission buffer, the keyframe request throttle, the packetizer, the
    /// jitter buffer (each timed by `measure`).
    static func measureBuffering(_ measure: (String, (Int) -> Int) -> Void, wire: [UInt8]) {
        measure("RetransmissionBuffer store + NACK lookup") { count in
            var buffer = RetransmissionBuffer<[UInt8]>()
            var total = 0
            for index in 0..<count {
                let sequence = UInt16(truncatingIfNeeded: index)
                buffer.store(wire, ssrc: 7, sequenceNumber: sequence, at: .milliseconds(index / 100))
                total &+=
                    buffer.packet(ssrc: 7, sequenceNumber: sequence &- 50, at: .milliseconds(index / 100))?.count
                    ?? 0
            }
            return total
        }
        measure("KeyframeRequestThrottle decision") { count in
            var throttle = KeyframeRequestThrottle()
            var total = 0
            for index in 0..<count where throttle.shouldForward(mediaSSRC: UInt32(index & 15), at: .microseconds(index))
            {
                total &+= 1
            }
            return total
        }
        measure("VP8 payloader + packetizer, per 1200-byte packet (5 KB frames)") { count in
            var payloader = try! VP8Payloader()
            var packetizer = RTPPacketizer(
                ssrc: 1, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 0, initialTimestamp: 0)
            let frame = [UInt8](repeating: 0x51, count: 5 * 1196)
            var total = 0
            for index in 0..<(count / 5) {
                let payloads = try! payloader.payloads(for: frame)
                total &+= packetizer.packetize(payloads, at: .milliseconds(33 * index), markLast: true).count
            }
            return total
        }
        measure("VideoJitterBuffer insert + poll, per packet (3-packet frames)") { count in
            var buffer = VideoJitterBuffer()
            var total = 0
            for index in 0..<count {
                let frame = index / 3
                let first = index % 3 == 0
                let header = RTPHeader(
                    marker: index % 3 == 2, payloadType: 96, sequenceNumber: UInt16(truncatingIfNeeded: index),
                    timestamp: UInt32(truncatingIfNeeded: frame * 3000), ssrc: 1)
                let payload: [UInt8] = first ? [0x10, frame % 100 == 0 ? 0x00 : 0x01, 0] : [0x00, 1, 2]
                _ = buffer.insert(RTPPacket(header: header, payload: payload), at: .microseconds(index * 100))
                total &+= buffer.poll(at: .microseconds(index * 100)).frames.count
            }
            return total
        }
    }
}
