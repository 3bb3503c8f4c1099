import Foundation
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// One UDP datagram seen on the loopback interface: when, between which ports, how big, and its first bytes.
struct CapturedDatagram: Sendable {
    /// Capture time, seconds since the Unix epoch.
    var time: Double
    var sourcePort: UInt16
    var destinationPort: UInt16
    /// UDP payload bytes (RTP or RTCP header and payload), from the UDP length field.
    var length: Int
    /// The first bytes of the payload (up to 12: a whole RTP fixed header).
    var head: [UInt8]
}

/// Packets on `lo` recorded by dumpcap (Wireshark's capture engine) for the measurement window.
///
/// Why a capture: it counts what really goes over the wire for both clients the same way, without touching either
/// program (no proxy in the path, no counters that one side has and the other lacks).
final class PacketCapture {
    private let child: BackgroundProcess
    private let path: String

    /// Starts dumpcap on `lo` with a BPF `filter`, writing classic pcap (128-byte snapshots) to `path`.
    init(dumpcap: String, filter: String, path: String, directory: String) throws {
        self.path = path
        child = try BackgroundProcess(
            dumpcap, ["-q", "-i", "lo", "-P", "-s", "128", "-f", filter, "-w", path],
            outputPath: directory + "/dumpcap-\(UUID().uuidString.prefix(8)).log")
        let started = child.waitForOutput(seconds: 8) { $0.contains("Capturing on") || $0.contains("rror") }
        guard started, child.output.contains("Capturing on") else {
            child.stop(grace: 1)
            throw CallBenchError.unexpected(
                "dumpcap could not capture on lo (run as root or in the wireshark group): "
                    + child.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Stops the capture and reads every UDP datagram it recorded.
    func stop() throws -> [CapturedDatagram] {
        child.stop(grace: 3)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CallBenchError.unexpected("dumpcap wrote no file at \(path): \(child.output)")
        }
        defer { unlink(path) }
        return try Self.parse([UInt8](data))
    }

    /// Reads a classic pcap file (either byte order, micro- or nanosecond stamps) of Ethernet, Linux cooked (v1/v2),
    /// BSD loopback or raw IP frames; keeps UDP datagrams over IPv4 and IPv6.
    static func parse(_ bytes: [UInt8]) throws -> [CapturedDatagram] {
        guard bytes.count >= 24 else { throw CallBenchError.unexpected("pcap file too short (\(bytes.count) bytes)") }
        let magic = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        let little: Bool
        let nanoseconds: Bool
        switch magic {
        case 0xA1B2_C3D4: (little, nanoseconds) = (true, false)
        case 0xD4C3_B2A1: (little, nanoseconds) = (false, false)
        case 0xA1B2_3C4D: (little, nanoseconds) = (true, true)
        case 0x4D3C_B2A1: (little, nanoseconds) = (false, true)
        default: throw CallBenchError.unexpected("not a pcap file (magic \(String(magic, radix: 16)))")
        }
        func u32(_ at: Int) -> Int {
            let b = (UInt32(bytes[at]), UInt32(bytes[at + 1]), UInt32(bytes[at + 2]), UInt32(bytes[at + 3]))
            return Int(little ? b.0 | b.1 << 8 | b.2 << 16 | b.3 << 24 : b.3 | b.2 << 8 | b.1 << 16 | b.0 << 24)
        }
        func u16be(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        let linkType = u32(20)
        var datagrams: [CapturedDatagram] = []
        var offset = 24
        while offset + 16 <= bytes.count {
            let seconds = Double(u32(offset))
            let fraction = Double(u32(offset + 4)) / (nanoseconds ? 1e9 : 1e6)
            let captured = u32(offset + 8)
            let start = offset + 16
            offset = start + captured
            guard offset <= bytes.count else { break }
            // Where the IP header starts, and which IP version the link layer says it carries (nil: read the
            // version from the header itself).
            let ip: Int
            let version: UInt8?
            func ipVersion(_ type: Int) -> UInt8? { type == 0x0800 ? 4 : type == 0x86DD ? 6 : nil }
            switch linkType {
            case 1:  // Ethernet
                guard captured >= 14, let said = ipVersion(u16be(start + 12)) else { continue }
                (ip, version) = (start + 14, said)
            case 113:  // Linux cooked v1
                guard captured >= 16, let said = ipVersion(u16be(start + 14)) else { continue }
                (ip, version) = (start + 16, said)
            case 276:  // Linux cooked v2
                guard captured >= 20, let said = ipVersion(u16be(start)) else { continue }
                (ip, version) = (start + 20, said)
            case 0:  // BSD loopback
                (ip, version) = (start + 4, nil)
            case 101:  // raw IP
                (ip, version) = (start, nil)
            case 228:  // raw IPv4
                (ip, version) = (start, 4)
            case 229:  // raw IPv6
                (ip, version) = (start, 6)
            default:
                throw CallBenchError.unexpected("pcap link type \(linkType) is not supported")
            }
            guard ip < offset, version == nil || bytes[ip] >> 4 == version else { continue }
            let udp: Int
            if ip + 20 <= offset, bytes[ip] >> 4 == 4, bytes[ip + 9] == 17 {
                udp = ip + Int(bytes[ip] & 0x0F) * 4
            } else if ip + 40 <= offset, bytes[ip] >> 4 == 6, bytes[ip + 6] == 17 {
                // IPv6 with UDP right after the fixed header (WebRTC's host candidates on this machine's IPv6
                // address); extension headers are not followed.
                udp = ip + 40
            } else {
                continue
            }
            guard udp + 8 <= offset else { continue }
            let length = u16be(udp + 4) - 8
            let payload = udp + 8
            datagrams.append(
                CapturedDatagram(
                    time: seconds + fraction, sourcePort: UInt16(u16be(udp)), destinationPort: UInt16(u16be(udp + 2)),
                    length: max(0, length), head: Array(bytes[payload..<min(offset, payload + 12)])))
        }
        return datagrams
    }
}

/// What a set of datagrams says about one client's media: sent rates and frames arriving, within a time window.
struct WireTraffic {
    /// Stops `capture` and reads it over `window`; nil without a capture, or when it failed (`problem` then says why).
    static func stopping(_ capture: PacketCapture?, window: ClosedRange<Double>, problem: inout String?)
        -> WireTraffic?
    {
        guard let capture else { return nil }
        do {
            return WireTraffic(try capture.stop(), window: window)
        } catch {
            problem = "\(error)"
            return nil
        }
    }

    /// Per-second figures for one process (identified by its UDP ports).
    struct Figures {
        /// RTP bytes (header and payload) of its video streams, in kbit/s.
        var videoKbps: Double
        /// RTP bytes of its audio streams, in kbit/s.
        var audioKbps: Double
        /// Everything it sent (RTP and RTCP), in kbit/s.
        var totalKbps: Double
        /// Video frames sent (RTP packets with the marker bit) per second.
        var framesSentPerSecond: Double
        /// Video frames arriving at its ports per second (marker bits of video packets addressed to it).
        var framesArrivingPerSecond: Double
    }

    private let datagrams: [CapturedDatagram]
    private let window: ClosedRange<Double>
    private var videoSSRCs = Set<UInt32>()

    /// Classifies every RTP stream in `datagrams` as audio or video by its clock rate (RTP timestamp advance per
    /// second of capture: 48 kHz for Opus, 90 kHz for VP8), then keeps the datagrams inside `window`.
    init(_ datagrams: [CapturedDatagram], window: ClosedRange<Double>) {
        var first: [UInt32: (time: Double, timestamp: UInt32)] = [:]
        var last: [UInt32: (time: Double, timestamp: UInt32)] = [:]
        var sizes: [UInt32: (bytes: Int, packets: Int)] = [:]
        for datagram in datagrams {
            guard let rtp = Self.rtp(datagram) else { continue }
            if first[rtp.ssrc] == nil { first[rtp.ssrc] = (datagram.time, rtp.timestamp) }
            last[rtp.ssrc] = (datagram.time, rtp.timestamp)
            sizes[rtp.ssrc, default: (0, 0)].bytes += datagram.length
            sizes[rtp.ssrc, default: (0, 0)].packets += 1
        }
        for (ssrc, start) in first {
            guard let end = last[ssrc] else { continue }
            let span = end.time - start.time
            if span > 1 {
                let rate = Double(end.timestamp &- start.timestamp) / span
                if rate > 69_000 && rate < 200_000 { videoSSRCs.insert(ssrc) }
            } else if let size = sizes[ssrc], size.bytes / max(1, size.packets) > 400 {
                videoSSRCs.insert(ssrc)  // Too short to time: big packets are video.
            }
        }
        self.datagrams = datagrams.filter { window.contains($0.time) }
        self.window = window
    }

    /// The figures for the process holding `ports`.
    func figures(forPorts ports: Set<UInt16>) -> Figures {
        var video = 0
        var audio = 0
        var total = 0
        var framesSent = 0
        var framesArriving = 0
        for datagram in datagrams {
            let sent = ports.contains(datagram.sourcePort)
            let arriving = ports.contains(datagram.destinationPort)
            guard sent || arriving else { continue }
            let rtp = Self.rtp(datagram)
            if sent {
                total += datagram.length
                if let rtp {
                    if videoSSRCs.contains(rtp.ssrc) {
                        video += datagram.length
                        if rtp.marker { framesSent += 1 }
                    } else {
                        audio += datagram.length
                    }
                }
            }
            if arriving, let rtp, rtp.marker, videoSSRCs.contains(rtp.ssrc) { framesArriving += 1 }
        }
        let seconds = max(0.001, window.upperBound - window.lowerBound)
        return Figures(
            videoKbps: Double(video) * 8 / 1000 / seconds, audioKbps: Double(audio) * 8 / 1000 / seconds,
            totalKbps: Double(total) * 8 / 1000 / seconds, framesSentPerSecond: Double(framesSent) / seconds,
            framesArrivingPerSecond: Double(framesArriving) / seconds)
    }

    /// The RTP fields used here, or nil for RTCP (packet types 192…223 in the second byte) and anything else.
    private static func rtp(_ datagram: CapturedDatagram) -> (ssrc: UInt32, timestamp: UInt32, marker: Bool)? {
        let head = datagram.head
        guard head.count >= 12, head[0] >> 6 == 2, !(192...223).contains(head[1]) else { return nil }
        func u32(_ at: Int) -> UInt32 {
            UInt32(head[at]) << 24 | UInt32(head[at + 1]) << 16 | UInt32(head[at + 2]) << 8 | UInt32(head[at + 3])
        }
        return (u32(8), u32(4), head[1] & 0x80 != 0)
    }
}
