import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The relay's channel handlers on `EmbeddedChannel`s, beside their loopback tests: each frame or datagram written in
/// and what the handler wrote out, on one thread, with no socket and no timing.
@Suite(.lane(.timing)) struct RelayHandlerEmbeddedTests {
    /// A relay core on an embedded loop, its media socket an embedded channel.
    struct Relay {
        let loop = EmbeddedEventLoop()
        let media: EmbeddedChannel
        let core: NIOLoopBound<RelayCore>

        /// `adjust` changes the configuration (its limits) first.
        init(_ adjust: (inout RelayConfiguration) -> Void = { _ in }) throws {
            media = EmbeddedChannel(loop: loop)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger)
            adjust(&configuration)
            core = NIOLoopBound(
                RelayCore(configuration: configuration, udpPort: 50_000, udp: media, loop: loop), eventLoop: loop)
            try media.pipeline.syncOperations.addHandler(
                DatagramHandler(core: core, socket: "media") { $0.handleDatagram($1) })
        }

        /// A new signaling connection: a WebSocket whose frames the handler reads.
        func connect() throws -> EmbeddedChannel {
            let channel = EmbeddedChannel(loop: loop)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_000)).wait()
            try channel.pipeline.syncOperations.addHandler(SignalingHandler(core: core))
            return channel
        }

        /// A new connection that joined the standup room as `name`, and what the relay answered.
        func join(_ name: String) throws -> (channel: EmbeddedChannel, joined: JoinedRoom) {
            let channel = try connect()
            try channel.writeInbound(RelayHandlerEmbeddedTests.join(name))
            let messages = RelayHandlerEmbeddedTests.messages(try RelayHandlerEmbeddedTests.written(channel))
            return (channel, try #require(RelayHandlerEmbeddedTests.joined(messages)))
        }

        /// Binds `joined`'s media to `address` with its credential; returns what the relay wrote back.
        @discardableResult
        func bind(_ joined: JoinedRoom, at address: SocketAddress) throws -> [AddressedEnvelope<ByteBuffer>] {
            let token = try #require(BindToken(hex: joined.media.credential))
            let bind = BindRequest(ssrc: joined.media.ssrcs.audio, memberID: joined.you.id, token: token)
            return try udp(bind.serialized(), from: address)
        }

        /// Hands the media socket a datagram from `address`; returns what it wrote back, in order.
        func udp(_ bytes: [UInt8], from address: SocketAddress) throws -> [AddressedEnvelope<ByteBuffer>] {
            try media.writeInbound(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)))
            media.pipeline.fireChannelReadComplete()
            var out: [AddressedEnvelope<ByteBuffer>] = []
            while let envelope: AddressedEnvelope<ByteBuffer> = try media.readOutbound() { out.append(envelope) }
            return out
        }
    }

    static func frame(_ opcode: WebSocketOpcode, _ text: String, reserved: WebSocketFrame.ReservedBits = [])
        -> WebSocketFrame
    {
        WebSocketFrame(fin: true, rsv1: reserved.contains(.rsv1), opcode: opcode, data: ByteBuffer(string: text))
    }

    /// A text frame asking to join the standup room as `name`.
    static func join(_ name: String) -> WebSocketFrame {
        frame(.text, ClientMessage.join(JoinRequest(room: "standup", name: name)).encoded())
    }

    /// The frames the handler wrote, in order.
    static func written(_ channel: EmbeddedChannel) throws -> [WebSocketFrame] {
        var frames: [WebSocketFrame] = []
        while let frame: WebSocketFrame = try channel.readOutbound() { frames.append(frame) }
        return frames
    }

    /// The signaling messages among `frames`.
    static func messages(_ frames: [WebSocketFrame]) -> [ServerMessage] {
        frames.filter { $0.opcode == .text }.compactMap { frame in
            var data = frame.unmaskedData
            return try? ServerMessage.decode(data.readString(length: data.readableBytes) ?? "")
        }
    }

    static func joined(_ messages: [ServerMessage]) -> JoinedRoom? {
        messages.lazy.compactMap { if case .joined(let joined) = $0 { joined } else { nil } }.first
    }

    static func errors(_ messages: [ServerMessage]) -> [String] {
        messages.compactMap { if case .error(let error) = $0 { "\(error)" } else { nil } }
    }

    @Test func aJoinInATextFrameIsAnsweredWithJoined() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        try alice.writeInbound(
            Self.join("alice"))
        let joined = try #require(Self.joined(Self.messages(try Self.written(alice))))
        #expect(joined.media.udpPort == 50_000)
        #expect(BindToken(hex: joined.media.credential) != nil)
        #expect(relay.core.value.counters.signalingErrors == 0)
    }

    @Test func garbageIsRefusedByNameAndTheConnectionStays() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        try alice.writeInbound(Self.frame(.text, "{not json"))
        try alice.writeInbound(Self.frame(.binary, "\u{1}\u{2}"))
        let errors = Self.errors(Self.messages(try Self.written(alice)))
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.last?.contains("has not joined a room") == true, "\(errors)")
        #expect(alice.isActive, "a bad message is refused, not a reason to hang up")
        // Still served after.
        try alice.writeInbound(
            Self.join("alice"))
        #expect(Self.joined(Self.messages(try Self.written(alice))) != nil)
    }

    @Test func aPingIsAnsweredWithItsDataAndACloseWithANormalClose() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        try alice.writeInbound(Self.frame(.ping, "are you there"))
        let pong = try #require(try Self.written(alice).first)
        #expect(pong.opcode == .pong && String(buffer: pong.unmaskedData) == "are you there")

        var status = ByteBuffer()
        status.write(webSocketErrorCode: .goingAway)
        try alice.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: status))
        let close = try #require(try Self.written(alice).first)
        var data = close.unmaskedData
        #expect(close.opcode == .connectionClose && data.readWebSocketErrorCode() == .normalClosure)
        #expect(!alice.isActive, "closed once the close frame is out")
    }

    @Test func aFrameWithReservedBitsClosesWithAProtocolErrorAndNothingAfter() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        try alice.writeInbound(Self.frame(.text, "{}", reserved: .rsv1))
        let frames = try Self.written(alice)
        #expect(Self.errors(Self.messages(frames)).first?.contains("reserved bits") == true, "\(frames)")
        var data = try #require(frames.last { $0.opcode == .connectionClose }).unmaskedData
        #expect(data.readWebSocketErrorCode() == .protocolError)
        // What arrives after the refusal is dropped.
        _ = try? alice.writeInbound(
            Self.join("a"))
        #expect(try Self.written(alice).isEmpty)
    }

    @Test func aMediaBindIsAcknowledgedByStatusAndGarbageGetsNothing() throws {
        let relay = try Relay()
        let alice = try relay.connect()
        try alice.writeInbound(
            Self.join("alice"))
        let joined = try #require(Self.joined(Self.messages(try Self.written(alice))))
        let token = try #require(BindToken(hex: joined.media.credential))
        let from = try SocketAddress(ipAddress: "127.0.0.1", port: 41_000)

        func bind(_ request: BindRequest) throws -> BindStatus? {
            let answers = try relay.udp(request.serialized(), from: from)
            let ack = answers.first { Bind.isBindPacket(Array($0.data.readableBytesView)) }
            #expect(ack == nil || ack?.remoteAddress == from, "the answer goes back where the request came from")
            return try ack.map { try BindAcknowledgement(parsing: Array($0.data.readableBytesView)).status }
        }
        let ssrc = joined.media.ssrcs.audio
        let wrong = try #require(BindToken(bytes: [UInt8](repeating: 7, count: BindToken.length)))
        #expect(try bind(BindRequest(ssrc: ssrc, memberID: joined.you.id, token: wrong)) == .wrongToken)
        #expect(try bind(BindRequest(ssrc: ssrc, memberID: joined.you.id + 99, token: token)) == .unknownMember)
        #expect(try bind(BindRequest(ssrc: ssrc, memberID: joined.you.id, token: token)) == .bound)

        try relay.media.writeInbound(
            AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: [0x80, 0xCC, 0, 1])))
        relay.media.pipeline.fireChannelReadComplete()
        let nothing: AddressedEnvelope<ByteBuffer>? = try relay.media.readOutbound()
        #expect(nothing == nil, "a broken packet is counted, never answered")
    }

    @Test func aTrunkHelloWithTheSecretIsAnsweredAndOneWithoutIsRefused() throws {
        let relay = try Relay()
        let secret = try ClusterSecret(bytes: [UInt8](repeating: 1, count: ClusterSecret.minimumBytes))
        let stranger = try ClusterSecret(bytes: [UInt8](repeating: 2, count: ClusterSecret.minimumBytes))
        let trunk = EmbeddedChannel(loop: relay.loop)
        try trunk.pipeline.syncOperations.addHandler(
            DatagramHandler(core: relay.core, socket: "trunk") { $0.handleTrunkDatagram($1) })
        relay.core.value.links.trunkChannel = trunk
        relay.core.value.links.trunks = TrunkLinks(gate: try TrunkGate(nodeID: "b", boot: 1, secret: secret))
        let from = try SocketAddress(ipAddress: "127.0.0.1", port: 42_000)
        let nonce = [UInt8](repeating: 9, count: 16)

        var nodeA = try TrunkGate(nodeID: "a", boot: 1, secret: secret)
        let hello = nodeA.hello(to: "b", now: WallClock.milliseconds, nonce: nonce)
        try trunk.writeInbound(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: hello)))
        let answer = try #require(try trunk.readOutbound(as: AddressedEnvelope<ByteBuffer>.self))
        #expect(answer.remoteAddress == from)
        let (kind, answered) = try nodeA.accept(
            hello: Array(answer.data.readableBytesView), now: WallClock.milliseconds)
        #expect(kind == .helloAnswer && answered.from == "b")
        #expect(relay.core.value.links.trunks?.isUp("a", at: relay.core.value.now) == true)

        let forged = try TrunkGate(nodeID: "c", boot: 1, secret: stranger)
            .hello(to: "b", now: WallClock.milliseconds, nonce: [UInt8](repeating: 8, count: 16))
        try trunk.writeInbound(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: forged)))
        #expect(try trunk.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) == nil)
        #expect(relay.core.value.links.trunks?.refused[.forged] == 1)
        // The same hello again is a replay.
        try trunk.writeInbound(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: hello)))
        #expect(try trunk.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) == nil)
        #expect(relay.core.value.links.trunks?.refused[.replayed] == 1)
    }
}
