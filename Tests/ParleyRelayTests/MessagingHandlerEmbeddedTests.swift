import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The messaging connection's handler on an embedded channel, beside its loopback tests: frames in, what the
/// service answers out. The service answers from its own queue, so the channel is NIO's thread-safe testing channel
/// and each answer is awaited (bounded by the suite's time limit, never a fixed wait).
@Suite(.timeLimit(.minutes(1)), .lane(.timing)) struct MessagingHandlerEmbeddedTests {
    /// A messaging service over a store in a folder of its own.
    final class Service {
        let folder = NSTemporaryDirectory() + "parley-messaging-embedded-\(getpid())-\(UUID().uuidString.prefix(8))"
        let service: MessagingService

        init(limits: MessagingLimits = MessagingLimits()) throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            service = MessagingService(
                store: try SQLiteMessageStore(path: folder + "/messages.sqlite"), limits: limits, logger: logger)
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }

        /// A new messaging connection: a WebSocket whose frames the handler reads.
        func connect() async throws -> NIOAsyncTestingChannel {
            let channel = NIOAsyncTestingChannel()
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_002))
            let service = service
            try await channel.testingEventLoop.executeInContext {
                try channel.pipeline.syncOperations.addHandler(MessagingHandler(service: service))
            }
            return channel
        }
    }

    static func frame(_ opcode: WebSocketOpcode, _ bytes: [UInt8], reserved: WebSocketFrame.ReservedBits = [])
        -> WebSocketFrame
    {
        WebSocketFrame(fin: true, rsv1: reserved.contains(.rsv1), opcode: opcode, data: ByteBuffer(bytes: bytes))
    }

    static func text(_ text: String) -> WebSocketFrame { frame(.text, Array(text.utf8)) }

    /// The next frame the handler writes, as the event it carries.
    static func nextEvent(_ channel: NIOAsyncTestingChannel) async throws -> MessagingEvent {
        let frame = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
        #expect(frame.opcode == .text, "\(frame)")
        return try MessagingEvent.decode(String(buffer: frame.unmaskedData))
    }

    /// A request, and the one event it is answered with.
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var frame: WebSocketFrame
        var answer: MessagingEvent
        var testDescription: String { name }
    }

    static let rows = [
        Row(
            name: "a ping", frame: text(MessagingRequest.ping(KeepAlive(token: 7)).encoded()),
            answer: .pong(KeepAlive(token: 7))),
        Row(
            name: "a request that needs a login", frame: text(MessagingRequest.keys(AccountRef(name: "bob")).encoded()),
            answer: .error(SignalingError(.notLoggedIn, "keys needs a login first"))),
        Row(
            name: "text that is not valid UTF-8", frame: frame(.text, [0x7B, 0xFF, 0xFE, 0x7D]),
            answer: .error(SignalingError(.badJSON, "a text frame that is not valid UTF-8"))),
        Row(
            name: "JSON that is not a request", frame: text("{not json"),
            answer: .error(SignalingError(.badJSON, "message is not valid JSON"))),
        // Binary frames are not part of the protocol: read as an empty message.
        Row(
            name: "a binary frame", frame: frame(.binary, [1, 2, 3]),
            answer: .error(SignalingError(.badJSON, "message is empty; expected a JSON object"))),
    ]

    @Test(arguments: rows)
    func eachFrameIsAnsweredAndTheConnectionStays(_ row: Row) async throws {
        let messaging = try Service()
        let channel = try await messaging.connect()
        try await channel.writeInbound(row.frame)
        #expect(try await Self.nextEvent(channel) == row.answer)
        #expect(channel.isActive, "an answered request keeps the connection")
        // Still served after.
        try await channel.writeInbound(Self.text(MessagingRequest.ping(KeepAlive(token: 1)).encoded()))
        #expect(try await Self.nextEvent(channel) == .pong(KeepAlive(token: 1)))
        _ = try await channel.finish()
    }

    @Test func aLoginIsAnsweredWithAChallenge() async throws {
        let messaging = try Service()
        let channel = try await messaging.connect()
        let identity = AccountIdentity.create(name: "alice")
        let card = AccountCard(
            name: "alice", signingKey: Data(identity.keys.signing).base64EncodedString(),
            agreementKey: Data(identity.keys.agreement).base64EncodedString())
        try await channel.writeInbound(Self.text(MessagingRequest.login(card).encoded()))
        guard case .challenge(let challenge) = try await Self.nextEvent(channel) else {
            Issue.record("a login is answered with a challenge")
            return
        }
        #expect(Data(base64Encoded: challenge.nonce)?.isEmpty == false, "\(challenge)")
        _ = try await channel.finish()
    }

    @Test func aFrameWithReservedBitsIsRefusedThenClosedWithAProtocolError() async throws {
        let messaging = try Service()
        let channel = try await messaging.connect()
        try await channel.writeInbound(Self.frame(.text, Array("{}".utf8), reserved: .rsv1))
        guard case .error(let error) = try await Self.nextEvent(channel) else {
            Issue.record("the refusal comes first, as an error event")
            return
        }
        #expect(error.code == .badJSON && error.message.contains("reserved bits 64"), "\(error)")
        let close = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
        var status = close.unmaskedData
        #expect(close.opcode == .connectionClose && status.readWebSocketErrorCode() == .protocolError)
        try await channel.closeFuture.get()
    }

    @Test func aWebSocketPingIsAnsweredAndACloseClosesTheConnection() async throws {
        let messaging = try Service()
        let channel = try await messaging.connect()
        try await channel.writeInbound(Self.frame(.ping, Array("are you there".utf8)))
        let pong = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
        #expect(pong.opcode == .pong && String(buffer: pong.unmaskedData) == "are you there")
        try await channel.writeInbound(Self.frame(.connectionClose, []))
        try await channel.closeFuture.get()
        #expect(!channel.isActive)
    }

    @Test func aFloodIsRefusedAsRateLimited() async throws {
        var limits = MessagingLimits()
        limits.burst = 2
        limits.requestsPerSecond = 1
        let messaging = try Service(limits: limits)
        let channel = try await messaging.connect()
        for token in UInt64(0)..<3 {
            try await channel.writeInbound(Self.text(MessagingRequest.ping(KeepAlive(token: token)).encoded()))
        }
        #expect(try await Self.nextEvent(channel) == .pong(KeepAlive(token: 0)))
        #expect(try await Self.nextEvent(channel) == .pong(KeepAlive(token: 1)))
        #expect(
            try await Self.nextEvent(channel)
                == .error(SignalingError(.rateLimited, "more than 1 requests a second: slow down")))
        #expect(channel.isActive)
        _ = try await channel.finish()
    }
}
