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

/// A blocking UDP socket on 127.0.0.1 for talking to the relay like a client's media socket would.
final class TestUDPSocket: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            _ = $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8], toPort port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        _ = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Datagrams received within `window`.
    func receive(for window: Duration = .milliseconds(300)) -> [[UInt8]] {
        var out: [[UInt8]] = []
        let deadline = ContinuousClock.now + window
        var buffer = [UInt8](repeating: 0, count: 2048)
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 { out.append(Array(buffer[0..<count])) }
        }
        return out
    }

    /// Receives until `match` returns true for a datagram or the window ends.
    func receive(within window: Duration = .seconds(2), until match: ([UInt8]) -> Bool) -> [UInt8]? {
        let deadline = ContinuousClock.now + window
        var buffer = [UInt8](repeating: 0, count: 2048)
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0, match(Array(buffer[0..<count])) { return Array(buffer[0..<count]) }
        }
        return nil
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
            case .invalid: break
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
func bindMedia(_ socket: TestUDPSocket, joined: JoinedRoom) throws -> BindStatus? {
    let token = try #require(BindToken(hex: joined.media.credential))
    let request = BindRequest(ssrc: joined.media.ssrcs.audio, memberID: joined.you.id, token: token)
    socket.send(request.serialized(), toPort: joined.media.udpPort)
    guard let reply = socket.receive(until: { Bind.isBindPacket($0) }) else { return nil }
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
