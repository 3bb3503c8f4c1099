import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// How to run a relay.
public struct RelayConfiguration: Sendable {
    /// Interface to listen on.
    public var host: String
    /// TCP port for WebSocket signaling; the UDP media port is the same number (0 picks free ports for both).
    public var port: Int
    /// Signaling limits (liveness timeout, rate limit).
    public var limits: SignalingLimits
    /// Media limits (keyframe request throttle, retransmission window).
    public var media: MediaLimits
    /// Rooms from the operator's rooms file (passwords, stage rules), by name.
    public var rooms: [String: ConfiguredRoom] = [:]
    /// The certificate and key signaling is served with (`wss://`); nil serves plain `ws://` (`--insecure`).
    public var tls: RelayIdentity? = nil
    /// Where logs go.
    public var logger: Logger
    /// Where accounts and direct messages are kept (`/parley/messages`); nil: the relay offers no messaging.
    public var messageStore: (any MessageStore)? = nil
    /// Limits of the messaging connections.
    public var messaging = MessagingLimits()
    /// Where each room's host is kept across restarts (`RoomHostsFile`); nil: not kept.
    public var roomHosts: RoomHostsFile? = nil

    /// A configuration; defaults are the production values.
    public init(
        host: String = "127.0.0.1", port: Int = 7878, limits: SignalingLimits = SignalingLimits(),
        media: MediaLimits = MediaLimits(), logger: Logger = Logger(label: "parley.relay")
    ) {
        self.host = host
        self.port = port
        self.limits = limits
        self.media = media
        self.logger = logger
    }
}

/// Errors starting or running the relay.
public enum RelayError: Error, CustomStringConvertible {
    /// A socket could not be bound.
    case bindFailed(what: String, host: String, port: Int, underlying: any Error)
    /// The TLS certificate or key was refused by the TLS library.
    case tlsSetup(String)

    public var description: String {
        switch self {
        case .bindFailed(let what, let host, let port, let underlying):
            switch (underlying as? IOError)?.errnoCode {
            case EADDRINUSE:
                "port \(port) is already in use on \(host) (\(what)): another relay or program has it; pick another with --port"
            case EACCES:
                "port \(port) on \(host) needs privileges (\(what)): ports below 1024 need root; pick another with --port"
            case EADDRNOTAVAIL:
                "\(host) is not an address of this machine (\(what)); use 0.0.0.0 for all of them, or one that `ip addr` lists"
            default:
                "cannot listen for \(what) on \(host):\(port): \((underlying as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(underlying)")"
            }
        case .tlsSetup(let why):
            "cannot set up TLS for signaling: \(why)"
        }
    }
}
