import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyStore
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on 127.0.0.1 for talking to the relay like a client's media socket would. Datagrams are received
/// by SwiftNIO on its own event loop into an inbox; the `receive` calls wait for them asynchronously with a
/// deadline, so a test never blocks a thread the async runtime needs, and returns as soon as what it waits for came.
final class TestUDPSocket: Sendable {
    let port: Int
    private let channel: Channel
    private let inbox: TestInbox

    private init(channel: Channel, inbox: TestInbox) {
        self.channel = channel
        self.inbox = inbox
        port = channel.localAddress?.port ?? 0
    }

    /// A socket bound to a free port on 127.0.0.1.
    static func open() async throws -> TestUDPSocket {
        let inbox = TestInbox()
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TestInbox.DatagramHandler(inbox: inbox))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TestUDPSocket(channel: channel, inbox: inbox)
    }

    deinit { channel.close(promise: nil) }

    /// Sends a datagram; returns once it was handed to the kernel (so datagrams sent one after another from
    /// different sockets leave in that order, as from a client's blocking socket).
    func send(_ bytes: [UInt8], toPort port: Int) async {
        guard let address = try? SocketAddress(ipAddress: "127.0.0.1", port: port) else { return }
        let envelope = AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes))
        try? await channel.writeAndFlush(envelope).get()
    }

    /// Sends datagrams in one go: written together and flushed once, on the socket's event loop, so they leave
    /// within microseconds of each other however busy the test process is (one `send` each waits its turn on the
    /// async runtime between datagrams: on a loaded machine 200 of them took over two seconds).
    func sendAll(_ datagrams: [[UInt8]], toPort port: Int) async {
        guard let address = try? SocketAddress(ipAddress: "127.0.0.1", port: port), !datagrams.isEmpty else { return }
        let channel = self.channel
        try? await channel.eventLoop.flatSubmit {
            let written = datagrams.map {
                channel.write(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: $0)))
            }
            channel.flush()
            return EventLoopFuture.andAllComplete(written, on: channel.eventLoop)
        }.get()
    }

    /// Datagrams received within `window` (wall time: used to show that nothing, or nothing more, arrives).
    func receive(for window: Duration = .milliseconds(300)) async -> [[UInt8]] {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline { await inbox.waitForMore(than: inbox.received, until: deadline) }
        return inbox.takeAll()
    }

    /// The first `count` datagrams, returned as soon as they came; fewer when `window` ends first.
    func receive(count: Int, within window: Duration = .seconds(5)) async -> [[UInt8]] {
        let deadline = ContinuousClock.now + window
        while true {
            let seen = inbox.received
            guard inbox.pending < count, ContinuousClock.now < deadline else { return inbox.take(atMost: count) }
            await inbox.waitForMore(than: seen, until: deadline)
        }
    }

    /// Receives until `match` returns true for a datagram (the ones before it are dropped), or nil when the window
    /// ends first.
    func receive(within window: Duration = .seconds(5), until match: @Sendable ([UInt8]) -> Bool) async -> [UInt8]? {
        let deadline = ContinuousClock.now + window
        while true {
            let seen = inbox.received
            if let found = inbox.take(through: match) { return found }
            guard ContinuousClock.now < deadline else { return nil }
            await inbox.waitForMore(than: seen, until: deadline)
        }
    }
}

/// A signaling client for tests: collects every message the relay sends.
final class TestMember: Sendable {
    let connection: SignalingConnection
    private let box: Box

    private init(connection: SignalingConnection, box: Box) {
        self.connection = connection
        self.box = box
    }

    static func connect(port: Int, group: MultiThreadedEventLoopGroup) async throws -> TestMember {
        let box = Box()
        let connection = try await SignalingConnection.connect(
            to: ServerAddress(host: "127.0.0.1", port: port), on: group.next()
        ) { event in
            switch event {
            case .message(let message): box.inbox.withLock { $0.append(message) }
            case .invalid, .media: break
            case .closed: box.closed.withLock { $0 = true }
            }
        }.get()
        return TestMember(connection: connection, box: box)
    }

    private final class Box: Sendable {
        let inbox = Mutex<[ServerMessage]>([])
        let closed = Mutex(false)
    }

    var messages: [ServerMessage] { box.inbox.withLock { $0 } }
    var isClosed: Bool { box.closed.withLock { $0 } }

    func send(_ message: ClientMessage) { connection.send(message) }

    /// Waits for the first message that `match` maps to a value.
    func wait<T>(
        for what: String, within window: Duration = .seconds(5),
        _ match: (ServerMessage) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline {
            if let found = messages.lazy.compactMap(match).first { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestTimeout(what: what, seen: messages.map(\.type))
    }

    /// Joins and returns the `joined` answer.
    func join(
        _ name: String, room: String = "standup", role: MemberRole = .broadcaster,
        videoKbps: Int? = nil, videoLayers: [VideoLayerSize]? = nil
    ) async throws -> JoinedRoom {
        send(.join(JoinRequest(room: room, name: name, role: role, videoKbps: videoKbps, videoLayers: videoLayers)))
        return try await wait(for: "joined") { if case .joined(let joined) = $0 { joined } else { nil } }
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var seen: [String]
    var description: String { "timed out waiting for \(what); saw \(seen)" }
}

/// Polls `condition` until it holds or the window ends.
func eventually(within window: Duration = .seconds(5), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + window
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Binds a test socket for a joined member and waits for the acknowledgement.
func bindMedia(_ socket: TestUDPSocket, joined: JoinedRoom) async throws -> BindStatus? {
    let token = try #require(BindToken(hex: joined.media.credential))
    let request = BindRequest(ssrc: joined.media.ssrcs.audio, memberID: joined.you.id, token: token)
    await socket.send(request.serialized(), toPort: joined.media.udpPort)
    guard let reply = await socket.receive(until: { Bind.isBindPacket($0) }) else { return nil }
    return try BindAcknowledgement(parsing: reply).status
}

/// A new empty folder for one relay's or client's files (certificate, known_relays), so tests never touch the
/// user's own and never share one between processes.
func stateDirectory() -> String {
    let path = NSTemporaryDirectory() + "parley-state-\(getpid())-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A relay on loopback that offers messaging, its store in `folder`/messages.sqlite (`folder` is made if missing;
/// the caller removes it; `readOnly` opens an existing store without writing); `adjust` changes the configuration
/// (limits) first.
func startMessagingRelay(
    in folder: String, storeBytes: Int? = nil, readOnly: Bool = false,
    _ adjust: (inout RelayConfiguration) -> Void = { _ in }
) async throws -> Relay {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger)
    configuration.messageStore = try SQLiteMessageStore(
        path: folder + "/messages.sqlite", maximumBytes: storeBytes,
        readOnly: readOnly)
    adjust(&configuration)
    return try await Relay.start(configuration)
}
