import NIOCore
import NIOPosix
import ParleySecurity
import ParleyStore
import ParleyWire

/// The trunk socket's edge: datagrams in, hellos out. What they mean is `TrunkLinks`'.
extension RelayCore {
    /// One datagram from the trunk socket.
    func handleTrunkDatagram(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard trunks != nil else { return }
        let bytes = Array(envelope.data.readableBytesView)
        // Changed in place (not copied out and back), so its tables are never copied per datagram.
        let received = trunks!.receive(bytes, from: envelope.remoteAddress, now: now, wallClock: WallClock.milliseconds)
        switch received {
        case .hello(let node, let answer, let cameUp):
            trunkChannel?.writeAndFlush(
                AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: answer)), promise: nil)
            if cameUp { logger.info("trunk up", metadata: ["node": "\(node)"]) }
        case .answered(let node, let cameUp):
            if cameUp { logger.info("trunk up", metadata: ["node": "\(node)"]) }
        case .control, .media:
            break  // Rooms across nodes come next; until then a proven node's media and control are not used.
        case .refused(let reason):
            let source = envelope.remoteAddress.ipAddress ?? "\(envelope.remoteAddress)"
            if let heldBack = refusedTrunkLog.admit(source, at: now) {
                logger.notice(
                    "trunk datagram refused",
                    metadata: ["reason": "\(reason.rawValue)", "source": "\(source)", "held_back": "\(heldBack)"])
            }
        }
    }

    /// Sends the hellos due (the timer calls it).
    func sendTrunkHellos() {
        guard trunks != nil, let channel = trunkChannel else { return }
        var random = SystemRandomNumberGenerator()
        let hellos = trunks!.dueHellos(now: now, wallClock: WallClock.milliseconds) {
            (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        for (address, bytes) in hellos {
            channel.write(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
        }
        if !hellos.isEmpty { channel.flush() }
    }
}

extension Relay {
    /// Opens this node's trunk socket on `host`:`port` (0: any free port) and starts saying hello to the nodes
    /// `setTrunkPeers` names, authenticated by `gate`'s cluster secret. Returns the port.
    public func openTrunks(gate: TrunkGate, host: String, port: Int) async throws -> Int {
        let loop = core.eventLoop
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .bind(host: host, port: port).get()
        } catch {
            throw RelayError.bindFailed(what: "trunk (UDP)", host: host, port: port, underlying: error)
        }
        try await loop.submit { [core] in
            try channel.pipeline.syncOperations.addHandler(
                DatagramHandler(core: core, socket: "trunk") { $0.handleTrunkDatagram($1) })
            core.value.trunkChannel = channel
            core.value.trunks = TrunkLinks(gate: gate)
            let bound = core
            core.value.timers.append(
                loop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { _ in
                    bound.value.sendTrunkHellos()
                })
        }.get()
        return channel.localAddress?.port ?? port
    }

    /// The other live nodes that take trunks, as the registry lists them (each heartbeat). Their addresses are
    /// looked up here, on the caller's thread, never on the relay's event loop; one that does not resolve is left
    /// out until the next call.
    public func setTrunkPeers(_ peers: [TrunkPeer]) async throws {
        let resolved = peers.compactMap { peer in
            Self.socketAddress(peer.address).map { (node: peer.node, address: $0) }
        }
        try await core.eventLoop.submit { [core] in
            core.value.trunks?.setPeers(resolved)
            core.value.sendTrunkHellos()
        }.get()
    }

    /// "HOST:PORT" or "[IPv6]:PORT" as a socket address: an IP address as such, a host name looked up.
    static func socketAddress(_ text: String) -> SocketAddress? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (try? SocketAddress(ipAddress: host, port: port))
            ?? (try? SocketAddress.makeAddressResolvingHost(host, port: port))
    }
}
