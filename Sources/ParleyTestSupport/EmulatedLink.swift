import Foundation
import NIOCore
import NIOPosix
import ParleyProcesses

/// A member's media path through a user-space link element (`LinkModel`, one per direction): the client's datagrams
/// reach the element's front socket, which delays, jitters and loses each as its settings say and passes the rest on
/// from its back socket; the relay binds that back address as the member's, as it would a NAT's. On loopback the
/// client sends to the front through `CallConfiguration.mediaAddressOverride` (in process, as pion's vnet is); in the
/// network lab both sockets live in the relay's namespace and nftables redirects the member's media to the front
/// (`NetworkLab.redirectMedia`), so the client needs no setting at all.
public final class EmulatedLink: Sendable {
    /// The client-facing UDP port.
    public let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let front: any Channel
    private let back: any Channel
    private let state: NIOLoopBound<LinkState>

    private init(
        port: Int, group: MultiThreadedEventLoopGroup, front: any Channel, back: any Channel,
        state: NIOLoopBound<LinkState>
    ) {
        self.port = port
        self.group = group
        self.front = front
        self.back = back
        self.state = state
    }

    /// An element on loopback toward the relay's media port: `uplink` on what the client sends, `downlink` on what
    /// it gets; the client sends to `port`.
    public static func start(
        relayPort: Int, uplink: LinkModel.Settings, downlink: LinkModel.Settings, seed: UInt64
    ) async throws -> EmulatedLink {
        try await start(
            front: NamespaceSocket.Address(host: "127.0.0.1", port: 0),
            relay: NamespaceSocket.Address(host: "127.0.0.1", port: relayPort), in: nil, uplink: uplink,
            downlink: downlink, seed: seed)
    }

    /// An element in the network lab for `member`: in the relay's namespace, fed by nftables with what the member
    /// sends to the relay's media port (`relayPort`), passing it on to the relay over the namespace's loopback.
    public static func start(
        in lab: NetworkLab, for member: NetworkLab.Member, relayPort: Int, uplink: LinkModel.Settings,
        downlink: LinkModel.Settings, seed: UInt64
    ) async throws -> EmulatedLink {
        let frontPort = try lab.elementPort(of: member)
        let link = try await start(
            front: NamespaceSocket.Address(host: member.relayAddress, port: frontPort),
            relay: NamespaceSocket.Address(host: "127.0.0.1", port: relayPort), in: lab.relayNamespace,
            uplink: uplink, downlink: downlink, seed: seed)
        do {
            try lab.redirectMedia(of: member, port: relayPort, to: frontPort)
        } catch {
            await link.stop()
            throw error
        }
        return link
    }

    private static func start(
        front frontAddress: NamespaceSocket.Address, relay relayAddress: NamespaceSocket.Address,
        in namespace: String?, uplink: LinkModel.Settings, downlink: LinkModel.Settings, seed: UInt64
    ) async throws -> EmulatedLink {
        let up = try LinkModel(uplink, seed: seed)
        let down = try LinkModel(downlink, seed: seed &+ 1)
        let relay = try SocketAddress(ipAddress: relayAddress.host, port: relayAddress.port)
        let sockets = try await NamespaceSocket.boundUDP(
            [frontAddress, NamespaceSocket.Address(host: relayAddress.host, port: 0)], in: namespace)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        do {
            let state = try await loop.submit {
                NIOLoopBound(LinkState(relay: relay, uplink: up, downlink: down), eventLoop: loop)
            }.get()
            let front = try await DatagramBootstrap(group: loop).withBoundSocket(sockets[0]).get()
            let back = try await DatagramBootstrap(group: loop).withBoundSocket(sockets[1]).get()
            try await loop.submit {
                let link = state.value
                link.front = front
                link.back = back
                try front.pipeline.syncOperations.addHandler(LinkHandler(state: link, fromClient: true))
                try back.pipeline.syncOperations.addHandler(LinkHandler(state: link, fromClient: false))
            }.get()
            return EmulatedLink(
                port: front.localAddress?.port ?? 0, group: group, front: front, back: back, state: state)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Datagrams lost and passed so far each way.
    public func counts() async throws -> (uplink: (lost: Int, passed: Int), downlink: (lost: Int, passed: Int)) {
        try await state.eventLoop.submit { [state] in
            let link = state.value
            return ((link.uplink.lost, link.uplink.passed), (link.downlink.lost, link.downlink.passed))
        }.get()
    }

    public func stop() async {
        try? await front.close()
        try? await back.close()
        try? await group.shutdownGracefully()
    }
}

/// The element's state, confined to its event loop.
private final class LinkState {
    let relay: SocketAddress
    var uplink: LinkModel
    var downlink: LinkModel
    var client: SocketAddress?
    var front: (any Channel)?
    var back: (any Channel)?
    let epoch = NIODeadline.now()

    init(relay: SocketAddress, uplink: LinkModel, downlink: LinkModel) {
        self.relay = relay
        self.uplink = uplink
        self.downlink = downlink
    }

    /// One datagram in: passed on when its arrival time comes, unless the direction's model loses it.
    func pass(_ envelope: AddressedEnvelope<ByteBuffer>, fromClient: Bool, on loop: any EventLoop) {
        let now = Double((NIODeadline.now() - epoch).nanoseconds) / 1_000_000
        let arrival: Double?
        let channel: (any Channel)?
        let destination: SocketAddress?
        if fromClient {
            client = envelope.remoteAddress
            arrival = uplink.arrival(sentAt: now)
            channel = back
            destination = relay
        } else {
            arrival = downlink.arrival(sentAt: now)
            channel = front
            destination = client
        }
        guard let arrival, let channel, let destination else { return }
        let out = AddressedEnvelope(remoteAddress: destination, data: envelope.data)
        if arrival <= now {
            channel.writeAndFlush(out, promise: nil)
        } else {
            loop.scheduleTask(deadline: epoch + .nanoseconds(Int64(arrival * 1_000_000))) {
                channel.writeAndFlush(out, promise: nil)
            }
        }
    }
}

private final class LinkHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let state: LinkState
    private let fromClient: Bool

    init(state: LinkState, fromClient: Bool) {
        self.state = state
        self.fromClient = fromClient
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        state.pass(unwrapInboundIn(data), fromClient: fromClient, on: context.eventLoop)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
