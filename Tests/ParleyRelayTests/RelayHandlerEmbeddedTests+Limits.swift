import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOWebSocket
import ParleyWire
import Testing

@testable import ParleyRelay

/// The signaling handler's limits on `EmbeddedChannel`s: behind the same frame aggregator the relay puts in front of
/// it after the WebSocket upgrade (fragments, size across fragments), and the relay's own message size and rate.
extension RelayHandlerEmbeddedTests {
    /// A signaling connection as the relay builds it after the upgrade: the frame aggregator, then the handler.
    static func connectBehindTheAggregator(_ relay: Relay) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: relay.loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_001)).wait()
        try channel.pipeline.syncOperations.addHandlers([
            NIOWebSocketFrameAggregator(
                minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: WebSocketFailure.maximumFragments,
                maxAccumulatedFrameSize: 2 * maxSignalingMessageBytes),
            SignalingHandler(core: relay.core),
        ])
        return channel
    }

    static func fragment(_ opcode: WebSocketOpcode, _ text: String, fin: Bool) -> WebSocketFrame {
        WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(string: text))
    }

    static func signalingErrors(_ messages: [ServerMessage]) -> [SignalingError] {
        messages.compactMap { if case .error(let error) = $0 { error } else { nil } }
    }

    /// One message broken into fragments that the aggregator refuses: what the client is told, and the close status.
    struct FragmentRow: CustomTestStringConvertible, Sendable {
        var name: String
        var frames: [WebSocketFrame]
        var error: SignalingError
        var status: WebSocketErrorCode
        var testDescription: String { name }
    }

    static let fragmentRows: [FragmentRow] = {
        let total = 2 * maxSignalingMessageBytes
        let half = String(repeating: "x", count: total / 2 + 1)
        return [
            FragmentRow(
                name: "65 fragments",
                frames: [fragment(.text, "[", fin: false)]
                    + (0..<63).map { _ in fragment(.continuation, "1", fin: false) }
                    + [fragment(.continuation, "]", fin: true)],
                error: SignalingError(.tooLarge, "a message in more than 64 fragments (the limit)"),
                status: .messageTooLarge),
            FragmentRow(
                name: "two fragments of more than 32 KiB together",
                frames: [fragment(.text, half, fin: false), fragment(.continuation, half, fin: true)],
                error: SignalingError(
                    .tooLarge, "a message of more than \(total) bytes across its fragments (the limit is \(total))"),
                status: .messageTooLarge),
            FragmentRow(
                name: "an empty fragment before the last",
                frames: [fragment(.text, "", fin: false), fragment(.continuation, "{}", fin: true)],
                error: SignalingError(.badJSON, "an empty fragment before the last one"),
                status: .protocolError),
            FragmentRow(
                name: "a new message before the last fragment",
                frames: [fragment(.text, "{", fin: false), fragment(.text, "{}", fin: true)],
                error: SignalingError(.badJSON, "a new message before the last fragment of the one before"),
                status: .protocolError),
            FragmentRow(
                name: "a continuation with no message",
                frames: [fragment(.continuation, "{}", fin: true)],
                error: SignalingError(.badJSON, "a continuation frame with no message to continue"),
                status: .protocolError),
        ]
    }()

    @Test(arguments: fragmentRows)
    func fragmentsPastTheLimitsAreRefusedByNameThenClosed(_ row: FragmentRow) throws {
        let relay = try Relay()
        let alice = try Self.connectBehindTheAggregator(relay)
        // Frames after the refusal are not written: the connection is closed by then.
        for frame in row.frames where alice.isActive { try alice.writeInbound(frame) }
        let frames = try Self.written(alice)
        #expect(Self.signalingErrors(Self.messages(frames)) == [row.error], "\(frames)")
        #expect(frames.last?.opcode == .connectionClose, "the close frame comes last: \(frames)")
        var status = try #require(frames.last).unmaskedData
        #expect(status.readWebSocketErrorCode() == row.status)
        #expect(!alice.isActive, "closed once the close frame is out")
        #expect(relay.core.value.counters.refusedFrames == 1)
    }

    @Test func aJoinIn64FragmentsTheLimitIsAnsweredAsOne() throws {
        let relay = try Relay()
        let alice = try Self.connectBehindTheAggregator(relay)
        let text = Array(ClientMessage.join(JoinRequest(room: "standup", name: "alice")).encoded())
        try #require(text.count > 63)
        let frames =
            [Self.fragment(.text, String(text[0]), fin: false)]
            + text[1..<63].map { Self.fragment(.continuation, String($0), fin: false) }
            + [Self.fragment(.continuation, String(text[63...]), fin: true)]
        #expect(frames.count == WebSocketFailure.maximumFragments)
        for frame in frames { try alice.writeInbound(frame) }
        let joined = try #require(Self.joined(Self.messages(try Self.written(alice))))
        #expect(joined.you.name == "alice")
        #expect(alice.isActive)
    }

    @Test func aJoinInTwoFragmentsIsAnsweredAsOne() throws {
        let relay = try Relay()
        let alice = try Self.connectBehindTheAggregator(relay)
        let text = ClientMessage.join(JoinRequest(room: "standup", name: "alice")).encoded()
        let middle = text.index(text.startIndex, offsetBy: text.count / 2)
        try alice.writeInbound(Self.fragment(.text, String(text[..<middle]), fin: false))
        #expect(try Self.written(alice).isEmpty, "nothing before the last fragment")
        try alice.writeInbound(Self.fragment(.continuation, String(text[middle...]), fin: true))
        let joined = try #require(Self.joined(Self.messages(try Self.written(alice))))
        #expect(joined.you.name == "alice")
        #expect(alice.isActive)
    }

    @Test func aMessageOverTheRelaysSizeLimitIsRefusedAndTheConnectionStays() throws {
        let relay = try Relay { $0.limits.messageBytes = 120 }
        let alice = try relay.connect()
        try alice.writeInbound(Self.frame(.text, String(repeating: " ", count: 121)))
        #expect(
            Self.signalingErrors(Self.messages(try Self.written(alice))) == [
                SignalingError(.tooLarge, "message is 121 bytes; this relay's limit is 120 (--max-message-bytes)")
            ])
        #expect(alice.isActive)
        #expect(relay.core.value.counters.signalingErrors == 1)
        // A message within the limit is read (and this one joins).
        let join = ClientMessage.join(JoinRequest(room: "r", name: "a")).encoded()
        try #require(join.utf8.count <= 120)
        try alice.writeInbound(Self.frame(.text, join))
        #expect(Self.joined(Self.messages(try Self.written(alice))) != nil)
    }

    @Test func aFloodIsToldOnceASecondAndCountedEachTime() throws {
        let relay = try Relay { $0.limits = SignalingLimits(burst: 2, messagesPerSecond: 1) }
        let alice = try relay.connect()
        for _ in 0..<4 { try alice.writeInbound(Self.frame(.text, "{}")) }
        let errors = Self.signalingErrors(Self.messages(try Self.written(alice)))
        // Two messages of the burst are read (and refused as bad), then one notice for the two dropped.
        #expect(errors.count == 3, "\(errors)")
        #expect(errors.last == SignalingError(.rateLimited, "too many messages; the limit is 1 per second"))
        #expect(relay.core.value.counters.rateLimited == 2)
        #expect(alice.isActive)
    }

    @Test func aFrameNIORefusedIsCountedAndNothingMoreIsSentOrRead() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        // NIO's decoder answers such a frame itself with a close frame (1009 or 1002): the handler adds nothing.
        alice.pipeline.fireErrorCaught(NIOWebSocketError.invalidFrameLength)
        #expect(try Self.written(alice).isEmpty)
        #expect(relay.core.value.counters.refusedFrames == 1)
        try alice.writeInbound(Self.join("alice"))
        #expect(try Self.written(alice).isEmpty, "what arrives after is dropped")
    }

    @Test func aConnectionErrorClosesWithoutAWord() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        alice.pipeline.fireErrorCaught(IOError(errnoCode: ECONNRESET, reason: "read"))
        #expect(try Self.written(alice).isEmpty)
        #expect(!alice.isActive)
    }
}
