import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleyBus
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
    /// Where `/metrics` and `/healthz` are served (`--admin`), on a socket of their own; nil (the default): not
    /// served. Never the public port: the relay refuses to start with that.
    public var admin: AdminAddress? = nil
    /// The bus lag hook: how far this node's bus between nodes is behind (the age of the oldest event it has not
    /// yet applied), asked at each scrape of `/metrics` and shown as the gauge `parley_bus_lag_seconds`. Nil, or a
    /// hook that returns nil (no bus, or it cannot tell), leaves the gauge out. Nothing sets it yet: the cluster bus
    /// (issue 29, item 3) sets it when it starts.
    public var busLag: (@Sendable () async -> Duration?)? = nil
    /// How long a browser member's DTLS handshake may take; past it the member is told (`media-failed`) and leaves.
    public var browserHandshake: Duration = .seconds(10)
    /// The page browser guests join from (`https://HOST:PORT/ROOM`); `parley serve` reads it from Resources/web.
    public var webPage = WebPage(missing: "the relay was started without its web folder")
    /// The cluster's counters (heartbeats failed, nodes reaped, bus events), asked at each scrape; nil, or a hook
    /// returning nil, leaves them out of `/metrics`.
    public var clusterCounters: (@Sendable () -> ClusterCounters?)? = nil

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
    /// The admin socket (`--admin`) could not be bound.
    case adminBindFailed(AdminAddress, underlying: any Error)
    /// `--admin` named the relay's public port: `/metrics` and `/healthz` are never served there.
    case adminOnPublicPort(AdminAddress, publicHost: String, publicPort: Int)

    public var description: String {
        switch self {
        case .bindFailed(let what, let host, let port, let underlying):
            Self.bindFailure(what: what, host: host, port: port, underlying: underlying, option: "--port")
        case .tlsSetup(let why):
            "cannot set up TLS for signaling: \(why)"
        case .adminBindFailed(let address, let underlying):
            Self.bindFailure(
                what: "admin (HTTP)", host: address.host, port: address.port, underlying: underlying, option: "--admin")
        case .adminOnPublicPort(let address, let publicHost, let publicPort):
            """
            --admin \(address) is the relay's public port (\(publicHost):\(publicPort)): /metrics and /healthz are never \
            served there; give --admin another port, e.g. --admin 127.0.0.1:9100
            """
        }
    }

    private static func bindFailure(what: String, host: String, port: Int, underlying: any Error, option: String)
        -> String
    {
        switch (underlying as? IOError)?.errnoCode {
        case EADDRINUSE:
            "port \(port) is already in use on \(host) (\(what)): another relay or program has it; pick another with \(option)"
        case EACCES:
            "port \(port) on \(host) needs privileges (\(what)): ports below 1024 need root; pick another with \(option)"
        case EADDRNOTAVAIL:
            "\(host) is not an address of this machine (\(what)); use 0.0.0.0 for all of them, or one that `ip addr` lists"
        default:
            "cannot listen for \(what) on \(host):\(port): \((underlying as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(underlying)")"
        }
    }
}
