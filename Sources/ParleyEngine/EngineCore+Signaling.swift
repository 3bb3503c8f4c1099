import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Signaling and reconnecting, carried out: `CallSignalingState` decides (joining, resuming, reconnect attempts,
/// keep-alives); this extension holds the connection, the timers and the room bookkeeping its actions ask for.
extension EngineCore {

    /// Gives the signaling state one input at the current time and carries out what it returns.
    func advance(_ input: (inout CallSignalingState, Duration) -> [CallSignalingState.Action]) {
        let now = self.now
        carryOut(input(&signalingLink.state, now), now: now)
    }

    /// Carries out the signaling state's actions in order; `now` is the time their input was given at.
    func carryOut(_ actions: [CallSignalingState.Action], now: Duration) {
        for action in actions { carryOut(action, now: now) }
    }

    func carryOut(_ action: CallSignalingState.Action, now: Duration) {
        switch action {
        case .prepareMedia:
            prepareMedia()
        case .openConnection(let first):
            connect(first: first)
        case .send(let message):
            signalingLink.connection?.send(message)
        case .sendJoin(let credentials):
            sendJoin(credentials)
        case .emit(let event):
            emit(event)
        case .schedule(let timer, let at):
            schedule(timer, in: at - now)
        case .cancel(.reconnect):
            signalingLink.reconnectTask?.cancel()
        case .cancel(.lost):
            signalingLink.lostTask?.cancel()
        case .closeConnection:
            signalingLink.connection?.close()
            signalingLink.connection = nil
        case .follow(let redirect, let first):
            follow(redirect, first: first)
        case .dropStalledConnection(let silence):
            logger.notice("the relay went silent; reconnecting", metadata: ["after": "\(silence)"])
            signalingLink.connection?.abort()
        case .noteRefusal(let error):
            logger.notice("relay refused a message", metadata: ["error": "\(error)"])
        case .roomMessage(let message):
            handleRoomMessage(message)
        case .dropStalePeers(let room, let resumed):
            dropStalePeers(keeping: room, resumed: resumed)
        case .resendChat:
            for line in signalingLink.chatOutbox.pending { signalingLink.connection?.send(.chat(line)) }
        case .resendTiles:
            reports.tiles.forgetSent()
            sendTilesIfDue()
            // A relay that (re)admitted us knows all our layers as sent until told otherwise.
            let sending = ownVideo.uplinkLayers.sending
            if sending.contains(false) { signalingLink.connection?.send(.videoSending(VideoSending(active: sending))) }
        case .addMembers(let members):
            for member in members { addPeer(member) }
        case .bindMedia(let room, let restartMedia):
            bindMedia(room, restartMedia: restartMedia)
            recordingJoined(room)
        case .unbindMedia:
            media.isBound = false
        case .startKeepAlive(let interval):
            startKeepAlive(every: interval)
        case .startReporting:
            startSignalingTimers()
        case .setLocalRole(let newRole):
            controls.role = newRole
        case .stopMedia:
            stopMedia()
        case .closeDevices:
            closeDevices()
        case .stopTimers:
            stopTimers()
        case .closeMediaSocket:
            media.closingSocket = true
            media.udp?.close(promise: nil)
        case .finish:
            stopRecording()
            finish()
        }
    }

    /// Arms the signaling state's `timer` to fire after `delay`, replacing the one armed before.
    private func schedule(_ timer: CallSignalingState.Timer, in delay: Duration) {
        guard let bound else { return }
        let task = loop.scheduleTask(in: timeAmount(delay)) {
            bound.value.advance { $0.timerFired(timer, now: $1) }
        }
        switch timer {
        case .reconnect:
            signalingLink.reconnectTask?.cancel()
            signalingLink.reconnectTask = task
        case .lost:
            signalingLink.lostTask?.cancel()
            signalingLink.lostTask = task
        }
    }

    /// After a drop, members the relay no longer lists (or lists with other streams) are gone. A resumed membership
    /// keeps the receivers of the rest (decoder, buffers, counters: no keyframe to wait for); a new one starts every
    /// receiver again from the room that follows.
    private func dropStalePeers(keeping room: JoinedRoom, resumed: Bool) {
        for (id, peer) in remote.peers.sorted(by: { $0.key < $1.key }) {
            let listed = room.members.contains { $0.id == id && $0.ssrcs == peer.info.ssrcs }
            if !listed { emit(.userOffline(ParticipantID(id), reason: .dropped)) }
            if !listed || !resumed { remote.peers[id] = nil }
        }
        remote.ownerOfBlock = remote.ownerOfBlock.filter { remote.peers[$0.value] != nil }
    }

    private func stopTimers() {
        media.pacingTask?.cancel()
        media.pacingTask = nil
        signalingLink.reconnectTask?.cancel()
        signalingLink.lostTask?.cancel()
        media.bindTask?.cancel()
        signalingLink.keepAliveTask?.cancel()
        for task in reports.tasks { task.cancel() }
        reports.tasks.removeAll()
    }

    /// Opens the audio output and the media socket; the call connects once the socket is open.
    func prepareMedia() {
        guard let bound else { return }
        do {
            remote.audioSink = try makeAudioSink()
        } catch {
            emit(.alert(.message("Audio output unavailable: \(error)")))
        }
        if case .speaker(let name) = configuration.audioSink, configuration.decodesAudio {
            openSpeaker(named: name)
        }
        openMediaSocket().whenComplete { result in
            let core = bound.value
            switch result {
            case .success(let channel):
                core.adoptMediaSocket(channel)
                core.advance { state, _ in state.mediaSocketOpened() }
            case .failure(let error):
                core.advance { state, _ in state.mediaSocketFailed("\(error)") }
            }
        }
    }

    /// Opens a signaling connection to `currentServer`; when it cannot be reached, to the next relay of the
    /// configured list (`--server a,b`), each once per attempt, before the attempt counts as failed.
    func connect(first: Bool, tried: Int = 0) {
        guard let bound else { return }
        let address = signalingLink.server
        let loop = self.loop
        signalingLink.generation += 1
        let generation = signalingLink.generation
        var security = configuration.signalingSecurity
        if case .tls(let store) = security, let expected = signalingLink.redirectFingerprint {
            security = .tls(store.expecting(expected, for: address.description))
        }
        let timeout = configuration.signalingTimeout.components
        SignalingConnection.connect(
            to: address, on: loop, security: security,
            timeout: .nanoseconds(timeout.seconds * 1_000_000_000 + timeout.attoseconds / 1_000_000_000),
            trusted: { decision in
                // Called from the TLS handshake's task: hop onto the engine's loop before touching it.
                guard case .pinnedOnFirstUse(let fingerprint) = decision else { return }
                loop.execute {
                    bound.value.emit(.alert(.message("relay \(address) pinned on first use: \(fingerprint)")))
                }
            }
        ) { event in
            // A connection left behind (a redirect opened another) says nothing more.
            guard bound.value.signalingLink.generation == generation else { return }
            bound.value.handle(event)
        }.whenComplete { result in
            let core = bound.value
            guard core.signalingLink.generation == generation else {
                if case .success(let stale) = result { stale.close() }
                return
            }
            switch result {
            case .success(let connection):
                core.signalingLink.connection = connection
                core.advance { $0.connectionOpened(first: first, now: $1) }
            case .failure(let error):
                var certificateChanged = false
                if case SignalingConnectError.certificateChanged = error { certificateChanged = true }
                let servers = [core.configuration.server] + core.configuration.fallbackServers
                if !certificateChanged, tried + 1 < servers.count {
                    // The next relay of the list, after the one that failed.
                    let index = servers.firstIndex(of: address).map { ($0 + 1) % servers.count } ?? 0
                    core.logger.notice(
                        "relay unreachable, trying the next",
                        metadata: ["relay": "\(address)", "next": "\(servers[index])"])
                    core.signalingLink.server = servers[index]
                    core.signalingLink.redirectFingerprint = nil
                    core.connect(first: first, tried: tried + 1)
                    return
                }
                core.advance {
                    $0.connectionFailed(
                        first: first, certificateChanged: certificateChanged, reason: "\(error)",
                        now: $1)
                }
            }
        }
    }

    /// The relay said the room lives on another node: leave this connection and join there.
    func follow(_ redirect: Redirect, first: Bool) {
        guard let target = try? ServerAddress(parsing: redirect.server) else {
            advance {
                $0.connectionFailed(
                    first: true, certificateChanged: false,
                    reason: "the relay sent the join to \(redirect.server), which is not an address", now: $1)
            }
            return
        }
        logger.notice(
            first ? "room lives on another node: joining there" : "moving to another node of the cluster",
            metadata: ["room": "\(redirect.room)", "node": "\(redirect.node)", "server": "\(target)"])
        if case .tls(let store) = configuration.signalingSecurity {
            signalingLink.redirectFingerprint = store.known.pin(for: signalingLink.server.description)
        }
        signalingLink.server = target
        signalingLink.generation += 1
        signalingLink.connection?.close()
        signalingLink.connection = nil
        connect(first: first)
    }

    func sendJoin(_ credentials: CallSignalingState.JoinCredentials) {
        signalingLink.connection?.send(
            .join(
                JoinRequest(
                    room: configuration.room, name: configuration.name,
                    role: controls.role == .audience ? .audience : .broadcaster,
                    audioMuted: controls.microphoneMuted, videoMuted: controls.cameraOff, resume: credentials.resume,
                    proof: credentials.proof,
                    verifier: credentials.verifier, encryption: configuration.encryption?.suite.name,
                    videoKbps: configuration.profile.bitrateKbps.clamped(to: JoinRequest.videoKbpsRange),
                    account: credentials.account, hideRoom: configuration.hideRoom,
                    videoLayers: configuration.share == nil ? declaredLayers : nil,
                    downlinkCounts: true, kind: configuration.share == nil ? .person : .terminal)))
    }

    /// The layers this client's camera is sent in (what `VideoSender` will encode).
    var declaredLayers: [VideoLayerSize] {
        VideoSender.plan(profile: configuration.profile, simulcast: configuration.simulcast).layers.map {
            VideoLayerSize(width: $0.width, height: $0.height)
        }
    }

    /// Sends the newest tile report if it changed, no sooner than 250 ms after the last.
    func reportTiles(_ shown: [TileSize]) {
        reports.tiles.want(shown)
        sendTilesIfDue()
    }

    func sendTilesIfDue() {
        let joined = if case .joined = phase { true } else { false }
        switch reports.tiles.next(now: now, joined: joined, waiting: reports.tilesTask != nil) {
        case .send(let shown):
            signalingLink.connection?.send(
                .tiles(
                    TileReport(
                        tiles: Array(shown.prefix(maxReportedTiles)), downlinkKbps: reports.tiles.sentDownlink)))
        case .wait(let wait):
            guard let bound else { return }
            reports.tilesTask = loop.scheduleTask(in: TimeAmount(wait)) {
                bound.value.reports.tilesTask = nil
                bound.value.sendTilesIfDue()
            }
        case .nothing:
            break
        }
    }

    func handle(_ event: SignalingEvent) {
        switch event {
        case .message(let message):
            advance { $0.received(message, now: $1) }
        case .invalid(let error):
            logger.warning("relay sent an invalid message", metadata: ["error": "\(error)"])
            advance { $0.receivedInvalid(now: $1) }
        case .media(let buffer):
            // Media the relay sends over this connection only while ours goes there too.
            guard media.path == .tcp else { return }
            receiveMedia(Array(buffer.readableBytesView), overUDP: false)
        case .closed:
            signalingLink.connection = nil
            advance { $0.connectionClosed(now: $1) }
        }
    }

    /// A message about the room's members, chat or media (the signaling state decides the rest).
    func handleRoomMessage(_ message: ServerMessage) {
        switch message {
        case .joined, .challenge, .pong, .removed, .error, .redirect, .move:
            break  // The signaling state's.
        case .slots:
            break  // Only a browser member is sent its receive slots.
        case .control(let grant):
            controlGranted(grant)
        case .typing(let typing):
            typed(typing)
        case .controller(let change):
            guard let terminal = change.terminal else { return }
            emit(
                .shareController(
                    ParticipantID(terminal), controller: change.controller == 0 ? nil : ParticipantID(change.controller)
                ))
        case .memberJoined(let notice):
            addPeer(notice.member)
        case .memberLeft(let left):
            guard let peer = remote.peers.removeValue(forKey: left.id) else { return }
            remote.ownerOfBlock[peer.info.ssrcs.block] = nil
            let reason: OfflineReason =
                switch left.reason {
                case .removed: .removed
                case .quit: .quit
                case .timeout: .timeout
                case .dropped: .dropped
                }
            emit(.userOffline(ParticipantID(left.id), reason: reason))
            shareMemberLeft(left.id)
        case .mute(let mute):
            guard let peer = remote.peers[mute.id] else { return }
            if peer.info.audioMuted != mute.audio { emit(.remoteAudioMuted(ParticipantID(mute.id), mute.audio)) }
            if peer.info.videoMuted != mute.video { emit(.remoteVideoMuted(ParticipantID(mute.id), mute.video)) }
            peer.info.audioMuted = mute.audio
            // A camera turned off or on stands the picture still on purpose: no freeze.
            if peer.info.videoMuted != mute.video { peer.freezes.restart(at: now) }
            peer.info.videoMuted = mute.video
        case .chat(let chat) where chat.from == 0:
            // Posted in the room's channel from outside the call (the relay names the account).
            if chat.sealed == nil { emit(.channelMessage(sender: chat.name, text: chat.text)) }
        case .chat(let chat):
            guard chat.from != joined?.you.id else {
                signalingLink.chatOutbox.delivered(ref: chat.ref)  // our own line, echoed: it got through
                return
            }
            if let text = chatText(chat) {
                reports.chatLinesReceived += 1
                emit(.chatMessage(from: ParticipantID(chat.from), text: text))
                record { try $0.chat(sender: chat.name, text: text, at: now) }
            }
        case .stats:
            break  // Receivers measure what arrives themselves; senders' reports are informative only.
        case .role(let change):
            let newRole: Role = change.role == .audience ? .audience : .broadcaster
            remote.peers[change.id]?.info.role = change.role
            emit(.roleChanged(ParticipantID(change.id), newRole))
        case .host(let host):
            emit(.hostChanged(ParticipantID(host.id)))
        case .hand(let member):
            emit(.handRaised(ParticipantID(member.id)))
        case .videoLayers(let demand):
            ownVideo.layerDemand = demand.active
            runLayers()
        case .recording(let notice):
            recordingNotice(notice)
        case .recordingPolicy(let policy):
            recordingPolicyChanged(policy)
        case .videoHeld(let notice):
            remote.held = notice
        case .dominantSpeaker(let notice):
            remote.dominantSpeaker = notice.id == 0 ? nil : notice.id
            emit(.dominantSpeaker(remote.dominantSpeaker.map(ParticipantID.init)))
        case .chatHistory(let history):
            emit(
                .earlierChat(
                    history.lines.map { line in
                        line.kind == "message"
                            ? ChatEntry(sender: line.from, text: line.text, time: .zero, kind: .chat)
                            : ChatEntry(sender: nil, text: line.words, time: .zero, kind: .system)
                    }))
        }
    }

    /// Binds the media socket for a membership: the relay's media address, the local media (restarted for new
    /// SSRCs), then bind requests until the relay acknowledges one.
    func bindMedia(_ room: JoinedRoom, restartMedia: Bool) {
        do {
            let address =
                configuration.mediaAddressOverride
                ?? ServerAddress(host: signalingLink.server.host, port: room.media.udpPort)
            media.relay = try SocketAddress.makeAddressResolvingHost(address.host, port: address.port)
        } catch {
            emit(.alert(.message("Cannot resolve the relay's media address: \(error)")))
        }
        if restartMedia {
            do {
                try startMedia(ssrcs: room.media.ssrcs, participant: room.you.id)
            } catch {
                emit(.alert(.message("Media could not start: \(error)")))
            }
        }
        if configuration.mediaTransport == .tcp { moveMedia(to: .tcp, why: "--media tcp") }
        media.isBound = false
        media.bindAttempts = 0
        media.bindsUnanswered = 0
        media.unansweredSince = nil
        sendBind()
    }

    func addPeer(_ member: MemberInfo) {
        guard member.id != joined?.you.id else { return }
        if let existing = remote.peers[member.id] {
            existing.info = member
        } else {
            do {
                remote.peers[member.id] = try PeerReceiver(info: member)
            } catch {
                logger.error(
                    "cannot receive a member's media", metadata: ["member": "\(member.id)", "error": "\(error)"])
                return
            }
        }
        remote.ownerOfBlock[member.ssrcs.block] = member.id
        let id = ParticipantID(member.id)
        emit(
            .userJoined(
                id, name: member.label, role: member.role == .audience ? .audience : .broadcaster,
                inCallFor: member.timeInCall))
        if member.isTerminal {
            emit(.sharesTerminal(id, owner: MemberInfo.label(name: member.name, account: member.account)))
        }
        if member.audioMuted { emit(.remoteAudioMuted(id, true)) }
        if member.videoMuted { emit(.remoteVideoMuted(id, true)) }
        recordingMet(member)
    }

    /// Asks the signaling state at every keep-alive tick whether to ping the relay or drop a connection it went
    /// silent on (`KeepAliveSchedule` decides both).
    func startKeepAlive(every interval: Duration) {
        guard let bound else { return }
        signalingLink.keepAliveTask?.cancel()
        let period = timeAmount(interval)
        signalingLink.keepAliveTask = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
            let core = bound.value
            guard core.signalingLink.connection != nil else { return }  // Nothing to ping on between connections.
            core.advance { $0.keepAliveTick(now: $1) }
        }
    }

    func startSignalingTimers() {
        guard let bound else { return }
        reports.tasks.append(
            loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                bound.value.reportStatistics()
            })
        reports.tasks.append(
            loop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { _ in
                bound.value.reportLevels()
            })
    }

}
