import NIOCore
import NIOPosix
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

/// What a node of a cluster keeps about the others: who they are, which members here joined through them, which
/// rooms span them, and the trunks that carry media to them with their counts. Changed on the relay's event loop only.
struct NodeLinks {
    /// The other live nodes with trunks, as the registry gave them last (where a draining node moves members).
    var peerNodes: [TrunkPeer] = []
    /// Members of other nodes by their id here: the node each joined through.
    var remoteNodes: [UInt32: String] = [:]
    /// Each room's members of other nodes, counted by node: the nodes its media goes to, one copy each.
    var roomNodes: [String: [String: Int]] = [:]
    /// The trunks to the cluster's other nodes and their socket, once `Relay.openTrunks` opened them.
    var trunks: TrunkLinks<SocketAddress>?
    var trunkChannel: (any Channel)?
    /// Media datagrams sent to other nodes, received from them, and not sent for want of an up trunk.
    var trunkPacketsSent = 0
    var trunkPacketsReceived = 0
    var trunkPacketsUnsent = 0
    /// Video packets not sent to a node because none of its members needs their layer, and those sent to one whose
    /// members do.
    var trunkPacketsWithheld = 0
    var trunkVideoPacketsSent = 0
    /// Media from another node's member beyond the rate that member is held to here, dropped.
    var trunkPacketsOverRate = 0
    /// Control messages (layer needs) sent to other nodes, received from them, and refused as malformed.
    var trunkControlSent = 0
    var trunkControlReceived = 0
    var trunkControlRefused = 0
    /// Trunk writes wait for the next flush.
    var trunkWritesPending = false
    var refusedTrunkLog = LogThrottle<String>(window: .seconds(60))

    /// Member `id` of `room` joined through `node`: the room's media goes there too.
    mutating func memberJoined(_ id: UInt32, through node: String, in room: String) {
        remoteNodes[id] = node
        roomNodes[room, default: [:]][node, default: 0] += 1
    }

    /// Member `id` left `room`: the node it joined through when it was that node's last member in the room (nil
    /// for a member of this node, or when others of its node stay).
    mutating func memberLeft(_ id: UInt32, from room: String) -> String? {
        guard let node = remoteNodes.removeValue(forKey: id) else { return nil }
        roomNodes[room]?[node, default: 1] -= 1
        var emptied: String?
        if roomNodes[room]?[node] == 0 {
            roomNodes[room]?[node] = nil
            emptied = node
        }
        if roomNodes[room]?.isEmpty == true { roomNodes[room] = nil }
        return emptied
    }

    /// Sends what was written to the trunk socket since the last flush.
    mutating func flushWrites() {
        guard trunkWritesPending else { return }
        trunkWritesPending = false
        trunkChannel?.flush()
    }

    /// The trunks' counts and state into the relay's counters.
    func count(into counters: inout RelayCounters, now: Duration) {
        counters.trunkPacketsSent = trunkPacketsSent
        counters.trunkPacketsReceived = trunkPacketsReceived
        counters.trunkPacketsUnsent = trunkPacketsUnsent
        counters.trunkPacketsWithheld = trunkPacketsWithheld
        counters.trunkVideoPacketsSent = trunkVideoPacketsSent
        counters.trunkPacketsOverRate = trunkPacketsOverRate
        counters.trunkControlSent = trunkControlSent
        counters.trunkControlReceived = trunkControlReceived
        counters.trunkControlRefused = trunkControlRefused
        if let trunks {
            counters.trunksUp = trunks.upNodes(at: now).count
            counters.trunkRefused = trunks.refused
        }
    }
}

/// The trunk socket's edge: datagrams in, hellos out. What they mean is `TrunkLinks`'.
extension RelayCore {
    /// One datagram from the trunk socket.
    func handleTrunkDatagram(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard links.trunks != nil else { return }
        if envelope.data.withUnsafeReadableBytes(TrunkPacket.isMedia) {
            guard let node = links.trunks!.mediaNode(from: envelope.remoteAddress) else {
                logRefusedTrunk(.unboundSource, from: envelope.remoteAddress)
                return
            }
            var data = envelope.data
            data.moveReaderIndex(forwardBy: TrunkPacket.mediaOverhead)
            handleTrunkMedia(data, from: node)
            return
        }
        let bytes = Array(envelope.data.readableBytesView)
        // Changed in place (not copied out and back), so its tables are never copied per datagram.
        let received = links.trunks!.receive(
            bytes, from: envelope.remoteAddress, now: now, wallClock: WallClock.milliseconds)
        switch received {
        case .hello(let node, let answer, let cameUp):
            links.trunkChannel?.writeAndFlush(
                AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: answer)), promise: nil)
            if cameUp { logger.info("trunk up", metadata: ["node": "\(node)"]) }
        case .answered(let node, let cameUp):
            if cameUp { logger.info("trunk up", metadata: ["node": "\(node)"]) }
        case .control(let control):
            handleTrunkControl(control)
        case .media:
            break  // Read in place above.
        case .refused(let reason):
            logRefusedTrunk(reason, from: envelope.remoteAddress)
        }
    }

    /// One line a minute per source address, with a count of those held back.
    func logRefusedTrunk(_ reason: TrunkRefusedReason, from address: SocketAddress) {
        let source = address.ipAddress ?? "\(address)"
        if let heldBack = links.refusedTrunkLog.admit(source, at: now) {
            logger.notice(
                "trunk datagram refused",
                metadata: ["reason": "\(reason.rawValue)", "source": "\(source)", "held_back": "\(heldBack)"])
        }
    }

    /// A member's RTP or RTCP from another node (framing removed).
    func handleTrunkMedia(_ data: ByteBuffer, from node: String) {
        links.trunkPacketsReceived += 1
        switch data.withUnsafeReadableBytes({ MediaPacketKind.classify($0) }) {
        case .unknown:
            media.count(.notMedia)
        case .rtp:
            // From a member of that node, as its node announced it; fanned out to the members here only (never
            // on to a third node: every node sends to every other itself).
            guard let packet = parseRTP(data) else { return }
            let (header, keyframe, level) = (packet.header, packet.keyframe, packet.level)
            guard let member = media.owner(of: header.ssrc), links.remoteNodes[member] == node,
                let route = media.route(of: member)
            else {
                media.count(.unknownSource)
                return
            }
            // Each of that node's members is held here to the rate a member is held to here (`--max-member-kbps`,
            // or twice its declared profile), so a trunk carries at most the sum of its members' rates: a node that
            // limits less, or forwards more than it should, loses the excess here (counted) and the members here
            // are never flooded through it.
            guard media.admitMedia(from: member, bytes: data.readableBytes, at: now) else {
                links.trunkPacketsOverRate += 1
                return
            }
            fanOut(data, header: header, keyframe: keyframe, level: level, route: route)
        case .rtcp:
            handleTrunkRTCP(data, from: node)
        }
    }

    /// RTCP from another node: its members' reports and goodbyes for the members here, and feedback (keyframe
    /// requests, NACKs, receiver reports) about the streams of members here, from that node's members or the node
    /// itself.
    func handleTrunkRTCP(_ data: ByteBuffer, from node: String) {
        guard let packets = try? data.withUnsafeReadableBytes({ try RTCPPacket.parseCompound($0) }) else {
            media.count(.malformed)
            return
        }
        /// The member here owning `ssrc` (feedback only reaches this node's own senders).
        func localOwner(_ ssrc: UInt32) -> UInt32? {
            guard let owner = media.owner(of: ssrc), links.remoteNodes[owner] == nil else { return nil }
            return owner
        }
        var forwardWhole = false
        for packet in packets {
            switch packet {
            case .senderReport, .sourceDescription, .goodbye:
                forwardWhole = true
            case .pictureLossIndication(let pli):
                guard localOwner(pli.mediaSSRC) != nil,
                    let (member, bytes) = media.keyframeRequest(for: pli.mediaSSRC, at: now)
                else { continue }
                send(bytes, toMember: member)
            case .nack(let nack):
                guard localOwner(nack.mediaSSRC) != nil else { continue }
                answerNACK(ssrc: nack.mediaSSRC, nack.lostSequenceNumbers, from: nil, senderSSRC: 0) {
                    sendToNode($0, node: node)
                }
            case .receiverReport(let report):
                var byOwner: [UInt32: [ReportBlock]] = [:]
                for block in report.reports {
                    guard let owner = localOwner(block.ssrc) else { continue }
                    byOwner[owner, default: []].append(block)
                }
                for (owner, blocks) in byOwner.sorted(by: { $0.key < $1.key }) {
                    let rr = ReceiverReport(ssrc: report.ssrc, reports: blocks)
                    send(RTCPPacket.receiverReport(rr).serialized(), toMember: owner)
                }
            case .application, .other:
                break
            }
        }
        // A report or goodbye of that node's member: to the members here of its room.
        guard forwardWhole, let senderSSRC = packets.lazy.compactMap(\.senderSSRC).first,
            let member = media.owner(of: senderSSRC), links.remoteNodes[member] == node,
            let route = media.route(of: member)
        else { return }
        media.destinations(from: route.member, in: route.room, into: &output.destinations)
        output.sendToDestinations(data)
    }

    /// One copy of a member's datagram to each other node with members in `room`; of a packet of a video layer
    /// (`layer` of its sender), only to the nodes whose members need that layer.
    func sendToNodes(_ data: ByteBuffer, of room: String, layer: (index: Int, sender: UInt32)? = nil) {
        guard let nodes = links.roomNodes[room] else { return }
        for node in nodes.keys {
            if let layer, !layers.needs(layer: layer.index, of: layer.sender, node: node) {
                links.trunkPacketsWithheld += 1
                continue
            }
            if layer != nil { links.trunkVideoPacketsSent += 1 }
            sendToNode(data, node: node)
        }
    }

    /// What the receivers here need of other nodes' senders, to their nodes (as control messages, split at
    /// `TrunkLayerNeeds.maximumEntries`).
    func sendLayerNeeds(
        _ entries: [TrunkLayerNeeds.Entry], to node: String, kind: TrunkLayerNeeds.Kind = .needs
    ) {
        guard let channel = links.trunkChannel, let address = links.trunks?.address(of: node) else { return }
        for start in stride(from: 0, to: entries.count, by: TrunkLayerNeeds.maximumEntries) {
            let chunk = entries[start..<min(entries.count, start + TrunkLayerNeeds.maximumEntries)]
            guard let bytes = try? links.trunks!.control(TrunkLayerNeeds(kind, entries: Array(chunk)).serialized())
            else {
                return
            }
            channel.writeAndFlush(
                AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
            links.trunkControlSent += 1
        }
    }

    /// Every need of other nodes' senders again (each second: a control datagram may have been lost).
    func repeatLayerNeeds() {
        guard links.trunks != nil else { return }
        var byNode: [String: [TrunkLayerNeeds.Entry]] = [:]
        for (member, node) in links.remoteNodes {
            guard let active = layers.announcedDemand(of: member), let block = media.route(of: member)?.ssrcs.block
            else { continue }
            byNode[node, default: []].append(TrunkLayerNeeds.Entry(block: block, active: active))
        }
        for (node, entries) in byNode.sorted(by: { $0.key < $1.key }) {
            sendLayerNeeds(entries.sorted { $0.block < $1.block }, to: node)
        }
        // And which layers the senders here send, to every node with members in their rooms.
        var sendingByNode: [String: [TrunkLayerNeeds.Entry]] = [:]
        for (node, rooms) in remoteRooms() {
            for sender in media.members(inRooms: rooms) where links.remoteNodes[sender] == nil {
                guard let entry = sendingEntry(of: sender) else { continue }
                sendingByNode[node, default: []].append(entry)
            }
        }
        for (node, entries) in sendingByNode.sorted(by: { $0.key < $1.key }) {
            sendLayerNeeds(entries.sorted { $0.block < $1.block }, to: node, kind: .sending)
        }
    }

    /// The rooms each other node has members in here.
    private func remoteRooms() -> [String: Set<String>] {
        var rooms: [String: Set<String>] = [:]
        for (member, node) in links.remoteNodes {
            if let room = media.route(of: member)?.room { rooms[node, default: []].insert(room) }
        }
        return rooms
    }

    /// What `sender` (a member here) sends, as a trunk entry; nil when it has no route.
    private func sendingEntry(of sender: UInt32) -> TrunkLayerNeeds.Entry? {
        guard let block = media.route(of: sender)?.ssrcs.block else { return nil }
        let active =
            layers.sending(of: sender) ?? [Bool](repeating: true, count: layers.layerCount(of: sender))
        return TrunkLayerNeeds.Entry(block: block, active: active)
    }

    /// `sender` (a member here) changed the layers it sends: every node with members in its room is told at once.
    func announceSending(of sender: UInt32) {
        guard links.trunks != nil, links.remoteNodes[sender] == nil, let room = media.route(of: sender)?.room,
            let entry = sendingEntry(of: sender)
        else { return }
        for (node, rooms) in remoteRooms().sorted(by: { $0.key < $1.key }) where rooms.contains(room) {
            sendLayerNeeds([entry], to: node, kind: .sending)
        }
    }

    /// A control message from `node`: what its receivers need of the senders here.
    func handleTrunkControl(_ control: TrunkControl) {
        let needs: TrunkLayerNeeds
        do {
            needs = try TrunkLayerNeeds(parsing: control.payload)
        } catch {
            links.trunkControlRefused += 1
            // A node repeats its needs every second: one line a minute per node, with how many were held back.
            if let heldBack = links.refusedTrunkLog.admit("control from node \(control.from)", at: now) {
                logger.notice(
                    "trunk control refused",
                    metadata: ["node": "\(control.from)", "error": "\(error)", "held_back": "\(heldBack)"])
            }
            return
        }
        links.trunkControlReceived += 1
        if needs.kind == .sending {
            for entry in needs.entries {
                // Only that node's own senders: what a member sends is its node's word.
                guard let owner = media.owner(of: entry.block), links.remoteNodes[owner] == control.from,
                    media.route(of: owner)?.ssrcs.block == entry.block
                else { continue }
                performLayerEffects(layers.setSending(of: owner, entry.active))
            }
            return
        }
        for entry in needs.entries {
            // Only senders of this node: another node's member is that node's business.
            guard let owner = media.owner(of: entry.block), links.remoteNodes[owner] == nil,
                media.route(of: owner)?.ssrcs.block == entry.block
            else { continue }
            performLayerEffects(layers.setNeeds(of: owner, node: control.from, active: entry.active))
        }
    }

    /// A member's datagram, framed, to `node` over its trunk (dropped and counted when the trunk is not up).
    func sendToNode(_ data: ByteBuffer, node: String) {
        guard let channel = links.trunkChannel, let address = links.trunks?.address(of: node) else {
            links.trunkPacketsUnsent += 1
            return
        }
        // The socket's queue is bounded (`Relay.trunkQueueBytes`): past it, datagrams are dropped and counted
        // rather than held, so a trunk the kernel cannot drain in time never grows the relay's memory.
        guard channel.isWritable else {
            links.trunkPacketsUnsent += 1
            return
        }
        var framed = channel.allocator.buffer(capacity: data.readableBytes + TrunkPacket.mediaOverhead)
        framed.writeBytes(TrunkPacket.magic)
        framed.writeInteger(TrunkPacketKind.media.rawValue)
        framed.writeImmutableBuffer(data)
        channel.write(AddressedEnvelope(remoteAddress: address, data: framed), promise: nil)
        links.trunkPacketsSent += 1
        links.trunkWritesPending = true
    }

    /// Sends the hellos due (the timer calls it).
    func sendTrunkHellos() {
        guard links.trunks != nil, let channel = links.trunkChannel else { return }
        var random = SystemRandomNumberGenerator()
        let hellos = links.trunks!.dueHellos(now: now, wallClock: WallClock.milliseconds) {
            (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        for (address, bytes) in hellos {
            channel.write(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
        }
        if !hellos.isEmpty { channel.flush() }
    }
}

extension Relay {
    /// Bytes of trunk datagrams the relay holds when the kernel takes no more; past it they are dropped and counted.
    public static let trunkQueueBytes = 4 << 20

    /// Opens this node's trunk socket on `host`:`port` (0: any free port) and starts saying hello to the nodes
    /// `setTrunkPeers` names, authenticated by `gate`'s cluster secret. Returns the port.
    public func openTrunks(gate: TrunkGate, host: String, port: Int) async throws -> Int {
        let loop = core.eventLoop
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
                .channelOption(
                    .writeBufferWaterMark,
                    value: .init(low: Self.trunkQueueBytes / 2, high: Self.trunkQueueBytes)
                )
                .bind(host: host, port: port).get()
        } catch {
            throw RelayError.bindFailed(what: "trunk (UDP)", host: host, port: port, underlying: error)
        }
        try await loop.submit { [core] in
            try channel.pipeline.syncOperations.addHandler(
                DatagramHandler(core: core, socket: "trunk") { $0.handleTrunkDatagram($1) })
            core.value.links.trunkChannel = channel
            core.value.links.trunks = TrunkLinks(gate: gate)
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
            core.value.links.peerNodes = peers
            core.value.links.trunks?.setPeers(resolved)
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

extension Relay {
    /// Drains this node: each member is told to move to another live node (the least loaded first) and new joins
    /// are sent there. Returns how many members were told.
    public func drain() async throws -> Int {
        try await core.eventLoop.submit { [core] in
            let core = core.value
            let actions = core.state.drain(
                to: core.links.peerNodes.map { (node: $0.node, server: $0.advertise, members: $0.members) })
            core.perform(actions)
            return actions.count
        }.get()
    }

    /// Members that joined through this node (a draining node stops once none is left).
    public func localMembers() async throws -> Int {
        try await core.eventLoop.submit { [core] in core.value.state.localMemberCount }.get()
    }
}
