import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A blocking WebSocket client on 127.0.0.1, just enough to join a room and stay alive: the handshake, masked text
/// frames out, unmasked text frames in.
final class SignalingSocket {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    private var lastKeepAlive = ContinuousClock.now

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RelayBenchError.socket(call: "socket", errno: errno) }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw RelayBenchError.socket(call: "connect to signaling port \(port)", errno: code)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // "parley-bench-key" in base64: any 16 bytes do.
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: cGFybGV5LWJlbmNoLWtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8))
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = findSubsequence(terminator, in: pending) {
                let head = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                guard head.hasPrefix("HTTP/1.1 101") else {
                    throw RelayBenchError.joinFailed("WebSocket upgrade refused: \(head.prefix(80))")
                }
                return
            }
            try readMore()
        }
    }

    deinit { Glibc.close(descriptor) }

    /// Joins `room` (as a broadcaster unless `role` says otherwise) and returns the relay's answer.
    func join(room: String, name: String, role: MemberRole = .broadcaster) throws -> JoinedRoom {
        try send(.join(JoinRequest(room: room, name: name, role: role)))
        while true {
            switch try receive() {
            case .joined(let joined): return joined
            case .error(let error): throw RelayBenchError.joinFailed("relay answered \(error)")
            default: continue
            }
        }
    }

    /// A ping every 2 s keeps the member inside the relay's 10 s liveness timeout.
    func keepAlive() {
        guard ContinuousClock.now - lastKeepAlive >= .seconds(2) else { return }
        lastKeepAlive = ContinuousClock.now
        try? send(.ping(KeepAlive(token: 1)))
    }

    /// Reads and drops whatever the relay sent since (roster changes, pongs) without waiting, so a member that never
    /// reads does not fill its socket's buffer over a long run.
    func discardIncoming() {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        pending.removeAll()
    }

    /// Says goodbye and closes the TCP connection for writing.
    func leave() {
        try? send(.leave)
        shutdown(descriptor, Int32(SHUT_WR))
    }

    private func send(_ message: ClientMessage) throws {
        let payload = Array(message.encoded().utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
        try write(frame)
    }

    private func receive() throws -> ServerMessage {
        while true {
            try fill(2)
            let opcode = pending[0] & 0x0F
            var length = Int(pending[1] & 0x7F)
            var offset = 2
            if length == 126 {
                try fill(4)
                length = Int(pending[2]) << 8 | Int(pending[3])
                offset = 4
            } else if length == 127 {
                try fill(10)
                length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
                offset = 10
            }
            try fill(offset + length)
            let payload = Array(pending[offset..<(offset + length)])
            pending.removeFirst(offset + length)
            switch opcode {
            case 1:
                do {
                    return try ServerMessage.decode(String(decoding: payload, as: UTF8.self))
                } catch {
                    throw RelayBenchError.joinFailed("unreadable relay message: \(error)")
                }
            case 8:
                throw RelayBenchError.joinFailed("the relay closed the WebSocket")
            default:
                continue
            }
        }
    }

    private func fill(_ count: Int) throws {
        while pending.count < count { try readMore() }
    }

    private func readMore() throws {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw RelayBenchError.joinFailed(count == 0 ? "the relay closed the connection" : "no answer within 5 s")
        }
        pending += buffer[0..<count]
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard written > 0 else { throw RelayBenchError.socket(call: "send on signaling", errno: errno) }
            offset += written
        }
    }
}

private func findSubsequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for start in 0...(haystack.count - needle.count)
    where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return start
    }
    return nil
}
