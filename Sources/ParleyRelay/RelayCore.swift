import Dispatch
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

/// The relay's state and sockets, confined to the relay's single event loop.
final class RelayCore {
    var state: RelayState
    var media: MediaRouter<SocketAddress>
    /// Video packets kept for resending, and what was resent or asked of their senders.
    var retransmission: Retransmission
    /// The media socket's way out, and what went out through it.
    var output: MediaOutput
    /// The signaling connections' channels.
    var signalingChannels = SignalingChannels()
    /// Each member's uplink as this relay receives it, reported back to the member (transport-wide feedback).
    var uplinks = UplinkFeedback()
    /// Send-time marks and probes on each member's downlink.
    var downlinks = DownlinkMarks()
    /// The 5 ms pacing of downlink probes, while one is under way.
    var probePacing: RepeatedTask?
    /// The 5 ms release of video paced for limited receivers, while any is paced.
    var receiverPacing: RepeatedTask?
    let loop: any EventLoop
    let clock = ContinuousClock()
    let epoch: ContinuousClock.Instant
    var timers: [RepeatedTask] = []
    /// Which simulcast layer of each sender each receiver gets.
    var layers = LayerForwarding()
    /// Each room's dominant speaker, from the levels in its audio.
    var speakers: [String: DominantSpeakerDetector] = [:]
    /// TCP connections open against their limit, and those refused for it.
    var admission = ConnectionAdmission()
    let logger: Logger
    /// Accounts, presence and kept room chat; nil when the relay has no store.
    var messaging: MessagingService?
    /// Where rooms live, when the relay is a node of a cluster.
    var placer: (any RoomPlacer)?
    /// The cluster's bus, when rooms span nodes: where `.publish` actions go.
    var bus: (any ClusterBus)?
    /// The cluster's other nodes as this one sees them: their members here, the trunks to them and their counts.
    var links = NodeLinks()
    /// Where the rooms' hosts are kept across restarts; nil when they are not.
    let roomHosts: RoomHostsKeeper?
    /// Members in a browser: their WebRTC transports and receive slots.
    let browsers: BrowserMembers
    /// Browser members whose transport could not be set up, and why: told so instead of `joined`.
    var browserSetupFailures: [UInt32: String] = [:]

    init(configuration: RelayConfiguration, udpPort: Int, udp: any Channel, loop: any EventLoop) {
        state = RelayState(
            limits: configuration.limits, udpPort: udpPort,
            roomRule: { text in
                Result { () throws(NameError) in try RoomName.validate(text) }.mapError { NameRejection("\($0)") }
            },
            nameRule: { text in
                Result { () throws(NameError) in try DisplayName.validate(text) }.mapError { NameRejection("\($0)") }
            },
            configuredRooms: configuration.rooms, wallClock: { WallClock.milliseconds })
        state.keepsChat = configuration.messageStore != nil
        roomHosts = configuration.roomHosts.map { RoomHostsKeeper(file: $0, logger: configuration.logger) }
        if let roomHosts {
            do {
                state.awaitHosts(try roomHosts.load())
            } catch {
                configuration.logger.warning(
                    "room hosts not restored: the first member of each room hosts it", metadata: ["reason": "\(error)"])
            }
        }
        media = MediaRouter(limits: configuration.media)
        retransmission = Retransmission(retention: configuration.media.retransmissionWindow)
        let epoch = ContinuousClock.now
        browsers = BrowserMembers(epoch: epoch, handshake: configuration.browserHandshake)
        output = MediaOutput(
            udp: udp, refusedBindLogWindow: configuration.media.refusedBindLogWindow, browsers: browsers)
        self.loop = loop
        self.logger = configuration.logger
        self.epoch = epoch
    }

    var now: Duration { clock.now - epoch }

    /// Runs work on this core's loop from another thread (the messaging queue's answers come back this way).
    var onLoop: @Sendable (@escaping @Sendable (RelayCore) -> Void) -> Void {
        let core = NIOLoopBound(self, eventLoop: loop)
        let loop = self.loop
        return { body in loop.execute { body(core.value) } }
    }

    var counters: RelayCounters {
        var counters = state.counters
        counters.packetsForwarded = output.forwarded
        counters.refusedFull = admission.refused
        counters.openConnections = admission.open
        counters.limitsReached += admission.refused
        // Cross-room feedback is counted per NACK, PLI or report block, not per datagram.
        counters.packetsDropped =
            media.dropped.filter { $0.key != .otherRoom }.values.reduce(0, +) + output.pacing.dropped
        counters.forgedFeedback = media.dropped[.forgedFeedback] ?? 0
        counters.crossRoomFeedback = media.dropped[.otherRoom] ?? 0
        counters.oversizedKeyframes = media.dropped[.oversizedKeyframe] ?? 0
        counters.unallottedSSRC = media.dropped[.unallottedSSRC] ?? 0
        counters.retainedStreams = retransmission.buffer.streamCount
        counters.retainedPackets = retransmission.buffer.storedPackets
        counters.releasedPackets = retransmission.buffer.releasedPackets
        counters.limitsReached += media.dropped[.overRate] ?? 0
        counters.keyframeRequestsThrottled = media.throttledKeyframeRequests
        counters.membersWithMediaOverTCP = output.streams.count
        counters.mediaOverTCPReceived = output.streams.packetsIn
        counters.mediaOverTCPSent = output.streams.packetsOut
        counters.mediaOverTCPBackedUp = output.streams.packetsDropped
        counters.retransmissionsServed = retransmission.resent
        counters.nacksForwardedToSenders = retransmission.nacksForwarded
        links.count(into: &counters, now: now)
        return counters
    }

    /// Liveness every 250 ms; held-back keyframe requests, each member's uplink feedback and downlink marks every 50 ms; packets past the retransmission window
    /// released and held-back refused-bind counts written every second. Cancelled by `shutDown`.
    func startTimers() {
        let core = NIOLoopBound(self, eventLoop: loop)
        timers.append(
            loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                let core = core.value
                core.saveRoomHosts()
                core.retransmission.buffer.dropExpired(at: core.now)
                for (source, heldBack) in core.output.refusedBinds.expire(at: core.now) {
                    core.logger.notice(
                        "bind refused, held back",
                        metadata: [
                            "source": "\(source)", "held_back": "\(heldBack)",
                        ])
                }
            })
        let decision = TimeAmount(DominantSpeakerDetector.decisionInterval)
        timers.append(
            loop.scheduleRepeatedTask(initialDelay: decision, delay: decision) { _ in
                core.value.decideSpeakers()
            })
        timers.append(
            loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                // A switch still waiting for its keyframe (the request or the keyframe was lost) asks again.
                let core = core.value
                core.performLayerEffects(core.layers.pendingSwitches())
                // Receivers with a limited downlink choose again with the layer rates of the last second.
                core.performLayerEffects(core.layers.reallocate(after: 1))
                core.sendForwardedCounts()
                core.output.pacing.refresh(after: 1)
                core.flushWrites()
                // What the receivers here need of other nodes' senders, again (a control datagram may be lost).
                core.repeatLayerNeeds()
            })
        timers.append(
            loop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in
                let core = core.value
                core.perform(core.state.tick(now: core.now))
            })
        timers.append(
            loop.scheduleRepeatedTask(initialDelay: .milliseconds(50), delay: .milliseconds(50)) { _ in
                let core = core.value
                for (member, bytes) in core.media.dueKeyframeRequests(at: core.now) {
                    core.send(bytes, toMember: member)
                }
                core.sendUplinkFeedback()
                core.sendSendTimeMarks()
                if !core.browsers.isEmpty { core.perform(core.browsers.tick(at: core.now)) }
                core.flushWrites()
            })
    }

    /// Sends what the media and trunk sockets were given (after each batch of datagrams read on either: a
    /// packet read on one socket is often written on the other).
    func flushWrites() {
        output.flush()
        links.flushWrites()
    }

    func shutDown() {
        for timer in timers { timer.cancel() }
        probePacing?.cancel()
        receiverPacing?.cancel()
        links.trunkChannel?.close(promise: nil)
        // Kept before everyone is let go: a relay restarted on purpose gives the roles back like one that crashed.
        saveRoomHosts()
        roomHosts?.waitForWrites()
        perform(state.shutDown())
    }

    /// Writes the rooms' hosts when they changed (at most once a second, from the timer, and at shutdown): a host
    /// change in the last second before a crash is not kept.
    func saveRoomHosts() {
        roomHosts?.save(state.roomHosts)
    }

    /// A TCP connection just accepted: true when it may go on to its handshake, false when the relay already holds
    /// `limits.connections` (it is then closed unanswered, counted, and logged once a minute). Every admitted
    /// connection is given back with ``socketClosed()``.
    func admitSocket() -> Bool {
        switch admission.admit(limit: state.limits.connections, now: now) {
        case .admitted:
            return true
        case .refused(let heldBack):
            if let heldBack {
                logger.error(
                    """
                    refusing new connections: the relay holds \(admission.open) connections, its limit \
                    (--max-connections, or raise ulimit -n); calls in progress go on
                    """, metadata: heldBack > 0 ? ["held_back": "\(heldBack)"] : [:])
            }
            return false
        }
    }

    /// A connection that did not finish its TLS/HTTP handshake within the join timeout is being closed.
    func handshakeTimedOut() {
        state.counters.joinTimeouts += 1
    }

    /// An admitted TCP connection closed.
    func socketClosed() {
        admission.closed()
    }

    func register(_ channel: any Channel) -> ConnectionID {
        let id = signalingChannels.add(channel)
        logger.debug(
            "signaling connected",
            metadata: [
                "connection": "\(id)", "peer": "\(channel.remoteAddress.map { "\($0)" } ?? "?")",
            ])
        perform(state.connected(id, from: channel.remoteAddress?.ipAddress, now: now))
        return id
    }

    /// The connection's channel closed. One the relay closed itself (`.close`) is no longer in `channels`, but the
    /// state still counts it (its address's place among them): it is told either way.
    func unregister(_ id: ConnectionID) {
        _ = signalingChannels.remove(id)
        output.streams.remove(id)
        perform(state.disconnected(id, now: now))
        logger.debug("signaling closed", metadata: ["connection": "\(id)"])
    }

    func received(_ text: String, on id: ConnectionID) {
        let before = state.counters
        perform(state.received(text, on: id, now: now))
        if state.counters.signalingErrors != before.signalingErrors {
            logger.notice(
                "refused signaling message", metadata: ["connection": "\(id)", "bytes": "\(text.utf8.count)"])
        }
    }

    /// A binary frame on a signaling connection: one media datagram of a member whose UDP does not get through,
    /// handled as if it came from the connection's stand-in address; one larger than any media datagram is dropped
    /// and counted, and one before a join is refused like a bad message.
    func receivedMedia(_ data: ByteBuffer, on id: ConnectionID, channel: any Channel) {
        guard state.connections[id]?.member != nil else {
            refused(on: id, reason: "a binary frame carries media, and this connection has not joined a room")
            return
        }
        guard data.readableBytes <= MediaStreams.maxDatagramBytes else {
            media.count(.oversizedStreamDatagram)
            return
        }
        let address = output.streams.received(on: id, channel: channel)
        handleDatagram(AddressedEnvelope(remoteAddress: address, data: data))
        flushWrites()
    }

    func refused(on id: ConnectionID, reason: String, code: SignalingErrorCode = .badJSON) {
        perform(state.refusedFrame(id, reason: reason, code: code))
    }

    /// A frame NIO refused and answered itself with a close frame: counted, and nothing more is sent.
    func countRefusedFrame(on id: ConnectionID) {
        state.counters.refusedFrames += 1
    }

    /// Carries out the state's actions: on the connections, the media router, the layers and the services.
    func perform(_ actions: [RelayAction]) {
        for action in actions {
            switch action {
            case .send(let message, let targets):
                send(message, to: targets)
            case .close(let target):
                close(target)
            case .memberAdded(let id, let room):
                memberAdded(id, in: room)
            case .memberRemoved(let id, let room):
                memberRemoved(id, from: room)
            case .roleChanged(let id, let role):
                media.setRole(role, of: id)
            case .tiles(let id, let report):
                performLayerEffects(layers.report(report, from: id))
                paceDownlink(of: id, kbps: report.downlinkKbps)
            case .videoSending(let id, let sending):
                performLayerEffects(layers.setSending(of: id, sending.active))
                announceSending(of: id)
            case .checkAccount(let connection, let account, let message, let signature):
                checkAccount(account, message: message, signature: signature, for: connection)
            case .placeRoom(let connection, let room):
                place(room, for: connection)
            case .roomClosed(let room):
                placer?.release(room)
            case .publish(let event):
                bus?.publish(event)
            case .roomChat(let room, let id, let sender, let text, let time):
                messaging?.roomChat(room: room, id: id, sender: sender, text: text, time: time)
            case .callActivity(let activity):
                callActivity(activity)
            }
        }
    }

    /// Sends a signaling message to each of `targets` still connected.
    func send(_ message: ServerMessage, to targets: [ConnectionID]) {
        if case .mute(let mute) = message {
            logger.info(
                "member mute",
                metadata: [
                    "member": "\(mute.id)", "audio": "\(mute.audio)", "video": "\(mute.video)",
                ])
        }
        guard !targets.isEmpty else { return }
        if case .joined(let joined) = message, joined.media.webrtc == nil, browserJoined(joined, on: targets) { return }
        let text = message.encoded()
        for target in targets {
            guard let channel = signalingChannels.byID[target] else { continue }
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
        }
    }

    /// Closes a connection after a normal close frame.
    private func close(_ target: ConnectionID) {
        guard let channel = signalingChannels.remove(target) else { return }
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// A member in `room`: its streams routed, its layers forwarded, what it needs to see asked for or sent.
    private func memberAdded(_ id: UInt32, in room: String) {
        if let node = state.members[id]?.node { links.memberJoined(id, through: node, in: room) }
        if let member = state.members[id] {
            media.add(
                member: id, room: room, ssrcs: member.info.ssrcs, role: member.info.role,
                videoKbps: member.videoKbps, videoLayers: member.videoLayers?.count ?? 1)
            performLayerEffects(
                layers.add(
                    member: id, room: room, layers: member.videoLayers, receivesHere: links.remoteNodes[id] == nil))
            // Another node's member: its first keyframe may have crossed the trunk before the bus said who
            // it is (and was dropped here), so ask for one at once rather than wait for a receiver to.
            if links.remoteNodes[id] != nil, member.info.role == .broadcaster,
                let (owner, bytes) = media.keyframeRequest(for: member.info.ssrcs.video, at: now)
            {
                send(bytes, toMember: owner)
            }
            if let dominant = speakers[room]?.dominant, let connection = member.connection {
                perform([.send(.dominantSpeaker(DominantSpeakerNotice(id: dominant)), to: [connection])])
            }
            browserMemberAdded(id, member, in: room)
        }
        logger.info(
            "member joined",
            metadata: ["member": "\(id)", "room": "\(room)", "node": "\(links.remoteNodes[id] ?? "here")"])
    }

    /// A member gone from `room`: everything kept for its streams forgotten.
    private func memberRemoved(_ id: UInt32, from room: String) {
        if let route = media.route(of: id) {
            // Every stream of the block, so nothing a member stored outlives it.
            for offset in UInt32(0)...3 { retransmission.buffer.removeStream(ssrc: route.ssrcs.block + offset) }
        }
        media.forget(member: id)
        uplinks.forget(id)
        downlinks.forget(id)
        output.forget(id)
        paceDownlink(of: id, kbps: nil)  // the release stops with the last paced member
        performLayerEffects(layers.remove(member: id))
        if let emptied = links.memberLeft(id, from: room) {
            // Nobody there needs anything of the senders here any more.
            performLayerEffects(layers.forget(node: emptied, in: room))
        }
        speakers[room]?.remove(id)
        if speakers[room]?.memberCount == 0 { speakers[room] = nil }
        browserMemberRemoved(id, from: room)
        logger.info("member left", metadata: ["member": "\(id)", "room": "\(room)"])
    }

    /// Asks the messaging service whether `signature` proves `account`; the answer goes back to the state.
    private func checkAccount(
        _ account: String, message: [UInt8], signature: [UInt8], for connection: ConnectionID
    ) {
        guard let messaging else {
            perform(
                state.accountChecked(
                    connection, .unverified("this relay keeps no accounts; you joined as a guest"), now: now))
            return
        }
        let onLoop = onLoop
        messaging.checkAccount(account, message: message, signature: signature) { check in
            onLoop { core in core.perform(core.state.accountChecked(connection, check, now: core.now)) }
        }
    }

    /// Asks the cluster where `room` lives (here without one); the answer goes back to the state.
    private func place(_ room: String, for connection: ConnectionID) {
        guard let placer else {
            perform(state.roomPlaced(connection, .here, now: now))
            return
        }
        let onLoop = onLoop
        placer.place(room) { placement in
            onLoop { core in core.perform(core.state.roomPlaced(connection, placement, now: core.now)) }
        }
    }

    /// A call's activity, kept in its room's channel; a joiner (its connection is named) gets the room's lines from
    /// before it.
    private func callActivity(_ activity: CallActivity) {
        var history: (@Sendable ([StoredChannelPost]) -> Void)?
        if let connection = activity.connection {
            let onLoop = onLoop
            history = { lines in
                guard !lines.isEmpty else { return }
                let message = ServerMessage.chatHistory(
                    ChatHistory.fitting(
                        room: activity.room,
                        lines: lines.map {
                            ChatHistoryLine(
                                kind: $0.post.kind.rawValue, from: $0.post.sender, text: $0.post.text,
                                time: $0.post.postedAt, members: $0.members)
                        }))
                onLoop { $0.perform([.send(message, to: [connection])]) }
            }
        }
        messaging?.callActivity(activity, history: history)
    }

}
