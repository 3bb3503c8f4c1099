import Foundation
import Logging
import ParleyRelay
import ParleyTestLanes
import ParleyWire
import Testing

/// Frames over the WebSocket limits, on a real relay, for call signaling and messaging alike: the client is told
/// why (when NIO has not already answered), then gets one close frame whose status says the same, and nothing
/// after it.
@Suite(.lane(.timing)) struct WebSocketLimitTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        /// The error the client reads before the close frame (nil: none, NIO answers with the close frame alone).
        var error: (code: String, mentions: String)?
        var status: UInt16
        var description: String { name }
    }

    static let cases: [Case] = {
        let total = 2 * maxSignalingMessageBytes
        let fragments =
            [RawWebSocket.frame(opcode: 0x1, payload: Array("{".utf8), fin: false)]
            + (0..<70).map { RawWebSocket.frame(opcode: 0x0, payload: Array("x".utf8), fin: $0 == 69) }
        let half = [UInt8](repeating: 0x41, count: total / 2 + 1024)
        return [
            Case(
                name: "one frame over 32 KiB",
                bytes: RawWebSocket.frame(opcode: 0x1, payload: [UInt8](repeating: 0x41, count: total + 16_384)),
                error: nil, status: 1009),
            Case(
                name: "a message in 71 fragments", bytes: fragments.flatMap { $0 },
                error: ("too-large", "more than 64 fragments"), status: 1009),
            Case(
                name: "two fragments adding up to more than 32 KiB",
                bytes: RawWebSocket.frame(opcode: 0x1, payload: half, fin: false)
                    + RawWebSocket.frame(opcode: 0x0, payload: half),
                error: ("too-large", "the limit is \(total)"), status: 1009),
            Case(
                name: "a reserved bit set",
                bytes: [0xC1] + RawWebSocket.frame(opcode: 0x1, payload: Array("{}".utf8)).dropFirst(),
                error: ("bad-json", "reserved bits 64 is not part of the protocol"), status: 1002),
            Case(
                name: "an undefined opcode", bytes: RawWebSocket.frame(opcode: 0x3, payload: []),
                error: ("bad-json", "is not part of the protocol"), status: 1002),
            Case(
                name: "a new message before the last fragment",
                bytes: RawWebSocket.frame(opcode: 0x1, payload: Array("{".utf8), fin: false)
                    + RawWebSocket.frame(opcode: 0x1, payload: Array("{}".utf8)),
                error: ("bad-json", "before the last fragment"), status: 1002),
        ]
    }()

    @Test(arguments: cases, ["/parley", MessagingService.path])
    func aFrameOverTheLimitsIsRefusedWithItsReasonThenOneCloseFrame(_ limit: Case, path: String) async throws {
        let folder = NSTemporaryDirectory() + "parley-ws-limits-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await startMessagingRelay(in: folder)
        let socket = try await RawWebSocket.connect(port: relay.signalingPort, path: path)
        await socket.write(limit.bytes)
        let frames = RawWebSocket.serverFrames(await socket.read(for: .seconds(5)))
        let opcodes = frames.map(\.opcode)
        if let error = limit.error {
            #expect(opcodes == [0x1, 0x8], "\(path): \(opcodes)")
            let text = String(decoding: frames.first.map { $0.payload } ?? [], as: UTF8.self)
            #expect(text.contains("\"\(error.code)\"") && text.contains(error.mentions), "\(path): \(text)")
        } else {
            #expect(opcodes == [0x8], "\(path): \(opcodes)")
        }
        let closeFrame: [UInt8] = frames.last(where: { $0.opcode == 0x8 }).map { $0.payload } ?? []
        let status = closeFrame.count >= 2 ? UInt16(closeFrame[0]) << 8 | UInt16(closeFrame[1]) : 0
        #expect(status == limit.status, "\(path): close frame \(closeFrame)")
        #expect(await socket.isClosed(within: .seconds(2)), "\(path): the relay closes the connection")
        await relay.shutdown()
    }

    /// The call relay's own limits that end a connection say why first, then close it with a close frame: the
    /// error is flushed before the close, on a real socket.
    @Test func theJoinTimeoutAndThePerAddressLimitSayWhyBeforeTheCloseFrame() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var limits = SignalingLimits()
        // Long enough that the third connection is made while the first two are still open: at 0.5 s the three
        // connects beside the main group once took longer, the first was closed by then, and the third was let in.
        limits.joinTimeout = .seconds(3)
        limits.connectionsPerAddress = 2
        let relay = try await Relay.start(
            RelayConfiguration(host: "127.0.0.1", port: 0, limits: limits, logger: logger))
        let first = try await RawWebSocket.connect(port: relay.signalingPort)
        let second = try await RawWebSocket.connect(port: relay.signalingPort)
        let third = try await RawWebSocket.connect(port: relay.signalingPort)
        for (socket, mentions) in [
            (third, "2 is the limit per address"),
            (first, "no join within 3 s of connecting (the join timeout)"),
            (second, "the join timeout"),
        ] {
            let frames = RawWebSocket.serverFrames(await socket.read(for: .seconds(5)))
            #expect(frames.map(\.opcode) == [0x1, 0x8], "\(mentions): \(frames.map(\.opcode))")
            let text = String(decoding: frames.first.map { $0.payload } ?? [], as: UTF8.self)
            #expect(text.contains("\"limit-reached\"") && text.contains(mentions), "\(text)")
            #expect(await socket.isClosed(within: .seconds(2)), "\(mentions): the relay closes the connection")
        }
        await relay.shutdown()
    }
}
