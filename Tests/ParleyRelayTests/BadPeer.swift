import Foundation
import ParleyRelay
import ParleyWire
import Synchronization

/// A TCP connection to the relay that speaks just enough HTTP to upgrade to a WebSocket and then writes whatever
/// bytes a test wants: frames the protocol forbids, which no well-behaved client library would send. Reads wait
/// asynchronously (`TestTCPConnection`), never blocking a thread the async runtime needs.
final class RawWebSocket: Sendable {
    private let connection: TestTCPConnection
    /// Bytes read with the handshake's answer that belong to what follows it.
    private let leftover: Mutex<[UInt8]>

    private init(connection: TestTCPConnection, leftover: [UInt8]) {
        self.connection = connection
        self.leftover = Mutex(leftover)
    }

    /// Connects to 127.0.0.1:`port`; with `upgrade`, completes the WebSocket handshake (101) for `path` first.
    static func connect(port: Int, upgrade: Bool = true, path: String = "/parley") async throws -> RawWebSocket {
        let connection = try await TestTCPConnection.connect(port: port)
        guard upgrade else { return RawWebSocket(connection: connection, leftover: []) }
        await connection.write(
            Array(
                """
                GET \(path) HTTP/1.1\r
                Host: 127.0.0.1:\(port)\r
                Upgrade: websocket\r
                Connection: Upgrade\r
                Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
                Sec-WebSocket-Version: 13\r
                \r

                """.utf8))
        let end = [UInt8]("\r\n\r\n".utf8)
        let started = ContinuousClock.now
        let bytes = await connection.read(for: .seconds(5), until: { $0.firstRange(of: end) != nil })
        guard String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 101"), let at = bytes.firstRange(of: end)
        else {
            let closed = await connection.isClosed(within: .zero)
            await connection.close()
            throw UpgradeRefused(
                path: path, waited: ContinuousClock.now - started, closed: closed,
                answer: String(decoding: bytes.prefix(200), as: UTF8.self))
        }
        // Frames the relay sent right behind its answer (an error and a close, say) came in the same read.
        return RawWebSocket(connection: connection, leftover: Array(bytes[at.upperBound...]))
    }

    /// Writes bytes (errors ignored: the relay may already have closed on us).
    func write(_ bytes: [UInt8]) async { await connection.write(bytes) }

    /// Reads for up to `window`, or until `done` holds for what arrived, or the relay closes.
    func read(for window: Duration, until done: @Sendable @escaping (String) -> Bool = { _ in false }) async -> [UInt8]
    {
        let before = leftover.withLock { bytes in
            defer { bytes = [] }
            return bytes
        }
        if done(String(decoding: before, as: UTF8.self)) { return before }
        return before
            + (await connection.read(for: window) { done(String(decoding: before + $0, as: UTF8.self)) })
    }

    /// True once the relay has closed the connection within `window`.
    func isClosed(within window: Duration) async -> Bool { await connection.isClosed(within: window) }

    /// The frames a server sent (unmasked, RFC 6455 §5.2), in order; a frame cut short ends the list.
    static func serverFrames(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        var frames: [(opcode: UInt8, payload: [UInt8])] = []
        var at = 0
        while at + 2 <= bytes.count {
            var length = Int(bytes[at + 1] & 0x7F)
            var header = 2
            if length == 126, at + 4 <= bytes.count {
                length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
                header = 4
            } else if length == 127, at + 10 <= bytes.count {
                length = (2..<10).reduce(0) { $0 << 8 | Int(bytes[at + $1]) }
                header = 10
            }
            guard at + header + length <= bytes.count else { break }
            frames.append((bytes[at] & 0x0F, Array(bytes[(at + header)..<(at + header + length)])))
            at += header + length
        }
        return frames
    }

    /// One WebSocket frame (RFC 6455 §5.2). `declaredLength` lies about the payload length.
    static func frame(
        opcode: UInt8, payload: [UInt8], fin: Bool = true, masked: Bool = true,
        declaredLength: UInt64? = nil
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (opcode & 0x0F)]
        let length = declaredLength ?? UInt64(payload.count)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes += [UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((length >> UInt64(shift)) & 0xFF)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        if masked { bytes += mask }
        bytes += payload.enumerated().map { masked ? $0.element ^ mask[$0.offset % 4] : $0.element }
        return bytes
    }
}

/// Seeded garbage for the media socket: what a broken or hostile member might send.
struct MediaGarbage {
    var random: SeededRandom

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// Random bytes of random length, from empty to a jumbo datagram.
    mutating func noise() -> [UInt8] {
        bytes([0, 1, 2, 3, 11, 12, 13, 40, 200, 1199, 1500, 4000][Int.random(in: 0..<12, using: &random)])
    }

    /// A well-formed RTP header with this SSRC and payload type, random counters and a random payload.
    mutating func rtp(ssrc: UInt32, payloadType: UInt8) -> [UInt8] {
        RTPPacket(
            header: RTPHeader(
                marker: Bool.random(using: &random), payloadType: payloadType,
                sequenceNumber: UInt16.random(in: 0...UInt16.max, using: &random),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &random), ssrc: ssrc),
            payload: bytes(Int.random(in: 0...1200, using: &random))
        ).serialized()
    }

    /// A VP8 payload claiming to start a 16383x16383 keyframe (the largest size the header can state).
    mutating func giantKeyframe(ssrc: UInt32, sequenceNumber: UInt16) -> [UInt8] {
        // Descriptor: X=1, S=1, PID=0; I=1; 15-bit PictureID. Then a keyframe header: frame tag (P=0, show),
        // start code 9d 01 2a, 14-bit width and height with no scaling, then noise.
        let payload: [UInt8] =
            [0x90, 0x80, 0x80, 0x01, 0x50, 0x42, 0x00, 0x9D, 0x01, 0x2A, 0xFF, 0x3F, 0xFF, 0x3F]
            + bytes(600)
        return RTPPacket(
            header: RTPHeader(
                marker: true, payloadType: MediaPayloadType.vp8,
                sequenceNumber: sequenceNumber, timestamp: UInt32(sequenceNumber) * 6000,
                ssrc: ssrc), payload: payload
        ).serialized()
    }

    /// A real RTCP packet cut short somewhere inside.
    mutating func truncatedRTCP(senderSSRC: UInt32, mediaSSRC: UInt32) -> [UInt8] {
        let whole: [UInt8]
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            whole = RTCPPacket.nack(GenericNACK(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, lost: [1, 2, 40]))
                .serialized()
        case 1:
            whole = RTCPPacket.pictureLossIndication(
                PictureLossIndication(
                    senderSSRC: senderSSRC,
                    mediaSSRC: mediaSSRC)
            ).serialized()
        case 2: whole = RTCPPacket.receiverReport(ReceiverReport(ssrc: senderSSRC, reports: [])).serialized()
        default:
            whole = RTCPPacket.sourceDescription(SourceDescription(ssrc: senderSSRC, cname: "vandal"))
                .serialized()
        }
        return Array(whole.prefix(Int.random(in: 2..<max(3, whole.count), using: &random)))
    }
}

/// The relay did not switch a raw connection to WebSocket: what it answered, whether it closed, and after how long.
struct UpgradeRefused: Error, CustomStringConvertible {
    var path: String
    var waited: Duration
    var closed: Bool
    var answer: String

    var description: String {
        let answered = answer.isEmpty ? "nothing" : "\"\(answer.prefix(120))\""
        return "no WebSocket upgrade on \(path) after \(waited.spokenSeconds): the relay answered \(answered)"
            + (closed ? " and closed the connection" : ", the connection still open")
    }
}
