import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// Signaling and reconnecting: joining, the relay's messages, keep-alives, resuming after a lost connection.
extension EngineCore {

    func connect(first: Bool) {
        guard let bound else { return }
        let address = configuration.server
        let loop = self.loop
        SignalingConnection.connect(to: address, on: loop, security: configuration.signalingSecurity, trusted: { decision in
            // Called from the TLS handshake's task: hop onto the engine's loop before touching it.
            guard case .pinnedOnFirstUse(let fingerprint) = decision else { return }
            loop.execute {
                bound.value.emit(.alert(.message("relay \(address) pinned on first use: \(fingerprint)")))
            }
        }) { event in
            bound.value.handle(event)
        }.whenComplete { result in
            let core = bound.value
            if case .left = core.phase {
                if case .success(let connection) = result { connection.close() }
                return
            }
            switch result {
            case .success(let connection):
                core.signaling = connection
                core.lastHeard = core.now
                core.joiningFirst = first
                core.pendingProof = nil
                // A password or an account is proven against a fresh challenge; without either the join goes at once.
                if core.configuration.password != nil || core.configuration.account != nil {
                    connection.send(.challenge)
                } else {
                    core.sendJoin(proof: nil, verifier: nil)
                }
            case .failure(let error):
                // A relay showing another certificate than the pinned one is not retried, mid-call either.
                var refused = false
                if case SignalingConnectError.certificateChanged = error { refused = true }
                if first || refused {
                    core.emit(.joinFailed(reason: "\(error)"))
                    core.phase = .left
                    core.stopMedia()
                    core.finish()
                    core.udp?.close(promise: nil)
                } else {
                    core.scheduleReconnect()
                }
            }
        }
    }

    /// The room and display name as the relay checks them (its proof covers the cleaned names).
    var roomName: String { (try? RoomName.validate(configuration.room)) ?? configuration.room }
    var displayName: String { (try? DisplayName.validate(configuration.name)) ?? configuration.name }

    func sendJoin(proof: String?, verifier: String?) {
        // After a drop, ask for the old membership back so the others never see us leave and rejoin.
        let resume = joiningFirst ? nil : joined.map {
            ResumeToken(member: $0.you.id, credential: $0.media.credential)
        }
        signaling?.send(.join(JoinRequest(
            room: configuration.room, name: configuration.name, role: role == .audience ? .audience : .broadcaster,
            audioMuted: microphoneMuted, videoMuted: cameraOff, resume: resume, proof: proof, verifier: verifier,
            encryption: configuration.encryption?.suite.name,
            videoKbps: configuration.profile.bitrateKbps.clamped(to: JoinRequest.videoKbpsRange),
            account: pendingClaim, hideRoom: configuration.hideRoom, videoLayers: declaredLayers)))
    }

    /// The layers this client's camera is sent in (what `VideoSender` will encode).
    var declaredLayers: [VideoLayerSize] {
        VideoSender.plan(profile: configuration.profile, simulcast: configuration.simulcast).layers.map {
            VideoLayerSize(width: $0.width, height: $0.height)
        }
    }

    /// Sends the newest tile report if it changed, no sooner than 250 ms after the last.
    func reportTiles(_ tiles: [TileSize]) {
        wantedTiles = tiles
        sendTilesIfDue()
    }

    func sendTilesIfDue() {
        guard case .joined = phase, let tiles = wantedTiles, tiles != sentTiles, tilesTask == nil else { return }
        let wait = tilesSentAt.map { .milliseconds(250) - (now - $0) } ?? .zero
        if wait > .zero, let bound {
            tilesTask = loop.scheduleTask(in: TimeAmount(wait)) {
                bound.value.tilesTask = nil
                bound.value.sendTilesIfDue()
            }
            return
        }
        signaling?.send(.tiles(TileReport(tiles: Array(tiles.prefix(maxReportedTiles)))))
        sentTiles = tiles
        tilesSentAt = now
    }

    func answer(_ challenge: AccessChallenge) {
        guard let nonce = Hex.decode(challenge.nonce) else { return }
        if let account = configuration.account {
            let message = AccountIdentity.joinMessage(account: account.name, room: configuration.room,
                                                      name: configuration.name, challenge: nonce)
            pendingClaim = AccountClaim(name: account.name,
                                        signature: account.signatureText(message))
        }
        var proof: String?
        if let verifier = passwordVerifier {
            proof = Hex.encode(RoomPassword.proof(verifier: verifier, challenge: nonce, room: roomName,
                                                  name: displayName))
        }
        pendingProof = proof
        sendJoin(proof: proof, verifier: nil)
    }

    func handle(_ event: SignalingEvent) {
        switch event {
        case .message(let message):
            lastHeard = now
            handle(message)
        case .invalid(let error):
            lastHeard = now
            logger.warning("relay sent an invalid message", metadata: ["error": "\(error)"])
        case .closed:
            signaling = nil
            switch phase {
            case .joined:
                phase = .reconnecting(since: now, announcedLost: false)
                reconnectAttempts = 0
                scheduleLostAlert()
                mediaBound = false
                emit(.alert(.interrupted))
                scheduleReconnect()
            case .connecting:
                emit(.joinFailed(reason: "the relay closed the connection before the join completed"))
                phase = .left
                stopMedia()
                finish()
            case .reconnecting:
                scheduleReconnect()
            case .idle, .left:
                break
            }
        }
    }

    /// The call counts as lost `lostAfter` into an interruption, whether the attempts so far failed or still hang.
    func scheduleLostAlert() {
        guard let bound else { return }
        lostTask?.cancel()
        lostTask = loop.scheduleTask(in: timeAmount(configuration.lostAfter)) {
            let core = bound.value
            guard case .reconnecting(let since, false) = core.phase else { return }
            core.phase = .reconnecting(since: since, announcedLost: true)
            core.emit(.alert(.lost))
        }
    }

    func scheduleReconnect() {
        guard case .reconnecting = phase, let bound else { return }
        reconnectTask?.cancel()
        reconnectTask = loop.scheduleTask(in: timeAmount(configuration.reconnectInterval)) {
            let core = bound.value
            guard case .reconnecting(_, let announcedLost) = core.phase else { return }
            // Said once per interruption: after that the status stays "reconnecting" (or "lost") until it is back.
            if core.reconnectAttempts == 0 && !announcedLost { core.emit(.alert(.reconnecting)) }
            core.reconnectAttempts += 1
            core.connect(first: false)
        }
    }

    func handle(_ message: ServerMessage) {
        switch message {
        case .joined(let room):
            let rejoin: Bool
            if case .reconnecting = phase { rejoin = true } else { rejoin = false }
            didJoin(room, rejoin: rejoin)
        case .memberJoined(let notice):
            addPeer(notice.member)
        case .memberLeft(let left):
            guard let peer = peers.removeValue(forKey: left.id) else { return }
            ownerOfBlock[peer.info.ssrcs.block] = nil
            let reason: OfflineReason = switch left.reason {
            case .removed: .removed
            case .quit: .quit
            case .timeout: .timeout
            case .dropped: .dropped
            }
            emit(.userOffline(ParticipantID(left.id), reason: reason))
        case .mute(let mute):
            guard let peer = peers[mute.id] else { return }
            if peer.info.audioMuted != mute.audio { emit(.remoteAudioMuted(ParticipantID(mute.id), mute.audio)) }
            if peer.info.videoMuted != mute.video { emit(.remoteVideoMuted(ParticipantID(mute.id), mute.video)) }
            peer.info.audioMuted = mute.audio
            peer.info.videoMuted = mute.video
        case .chat(let chat) where chat.from == 0:
            // Posted in the room's channel from outside the call (the relay names the account).
            if chat.sealed == nil { emit(.channelMessage(sender: chat.name, text: chat.text)) }
        case .chat(let chat):
            guard chat.from != joined?.you.id else { return }  // our own line, echoed
            if let text = chatText(chat) { emit(.chatMessage(from: ParticipantID(chat.from), text: text)) }
        case .stats:
            break  // Receivers measure what arrives themselves; senders' reports are informative only.
        case .role(let change):
            let newRole: Role = change.role == .audience ? .audience : .broadcaster
            peers[change.id]?.info.role = change.role
            emit(.roleChanged(ParticipantID(change.id), newRole))
        case .pong:
            break
        case .challenge(let challenge):
            answer(challenge)
        case .host(let host):
            emit(.hostChanged(ParticipantID(host.id)))
        case .hand(let member):
            emit(.handRaised(ParticipantID(member.id)))
        case .videoLayers(let demand):
            pendingLayerDemand = demand.active
            videoSender?.setActiveLayers(demand.active)
        case .dominantSpeaker(let notice):
            dominantSpeaker = notice.id == 0 ? nil : notice.id
            emit(.dominantSpeaker(dominantSpeaker.map(ParticipantID.init)))
        case .chatHistory(let history):
            emit(.earlierChat(history.lines.map { line in
                line.kind == "message" ? ChatEntry(sender: line.from, text: line.text, time: .zero, kind: .chat)
                    : ChatEntry(sender: nil, text: line.words, time: .zero, kind: .system)
            }))
        case .removed(let removal):
            // Removed by the host: the call is over, and reconnecting would only walk back in.
            emit(.removedFromRoom(removal.message))
            phase = .left
            stopMedia()
            closeDevices()
            reconnectTask?.cancel()
            lostTask?.cancel()
            bindTask?.cancel()
            keepAliveTask?.cancel()
            for task in repeating { task.cancel() }
            repeating.removeAll()
            signaling?.close()
            signaling = nil
        case .error(let error) where error.code == .passwordSetup && pendingProof != nil:
            // Our room is new: it takes the password, given as its verifier (the password itself stays here).
            sendJoin(proof: pendingProof, verifier: passwordVerifier.map { Hex.encode($0) })
        case .error(let error) where error.code == .notAllowed && askedToBroadcast:
            askedToBroadcast = false
            role = .audience
            if let id = joined?.you.id { emit(.roleChanged(ParticipantID(id), .audience)) }
            emit(.alert(.message(error.message)))
        case .error(let error):
            if case .connecting = phase {
                emit(.joinFailed(reason: error.message))
                phase = .left
                stopMedia()
                signaling?.close()
                finish()
            } else {
                logger.notice("relay refused a message", metadata: ["error": "\(error)"])
                emit(.alert(.message("Relay: \(error.message)")))
            }
        }
    }

    func didJoin(_ room: JoinedRoom, rejoin: Bool) {
        let previous = joined
        joined = room
        phase = .joined
        reconnectTask?.cancel()
        lostTask?.cancel()
        if rejoin {
            // Peers the relay still lists with the same id and SSRCs stay; the rest (everyone, after a relay
            // restart) go before the new local id is announced, since ids restart with the relay.
            for (id, peer) in peers.sorted(by: { $0.key < $1.key })
            where !room.members.contains(where: { $0.id == id && $0.ssrcs == peer.info.ssrcs }) {
                emit(.userOffline(ParticipantID(id), reason: .dropped))
            }
            peers.removeAll()
            ownerOfBlock.removeAll()
        }
        emit(.joined(localID: ParticipantID(room.you.id)))
        if !rejoin, let problem = room.accountProblem {
            emit(.alert(.message(problem)))
        } else if !rejoin, let account = room.you.account {
            emit(.notice("Joined as your account \(account) ✓ (others see it verified)"))
        }
        if rejoin { emit(.alert(.reconnected)) }
        pendingProof = nil
        // A new membership starts with the full layer of everyone: tell the relay again what we draw.
        sentTiles = nil
        tilesSentAt = nil
        sendTilesIfDue()
        // After a dropped connection the relay keeps our old self until its liveness timeout: not a participant.
        let ghost = previous.map { (id: $0.you.id, ssrcs: $0.media.ssrcs) }
        for member in room.members where !(member.id == ghost?.id && member.ssrcs == ghost?.ssrcs) {
            addPeer(member)
        }
        if room.host != 0 { emit(.hostChanged(ParticipantID(room.host))) }
        if !rejoin {
            emit(.security(CallSecurity(
                insecureTransport: configuration.insecureTransport,
                encryption: configuration.encryption?.suite.name, safetyCode: configuration.encryption?.safetyCode)))
        }
        if configuration.password != nil && !room.passwordProtected {
            emit(.alert(.message("\(room.room) has no password: anyone who knows its name can join")))
        }
        do {
            let media = configuration.mediaAddressOverride
                ?? ServerAddress(host: configuration.server.host, port: room.media.udpPort)
            relayMedia = try SocketAddress.makeAddressResolvingHost(media.host, port: media.port)
        } catch {
            emit(.alert(.message("Cannot resolve the relay's media address: \(error)")))
        }
        if previous == nil || previous?.media.ssrcs != room.media.ssrcs {
            do {
                try startMedia(ssrcs: room.media.ssrcs, participant: room.you.id)
            } catch {
                emit(.alert(.message("Media could not start: \(error)")))
            }
        }
        mediaBound = false
        bindAttempts = 0
        sendBind()
        startKeepAlive(livenessTimeout: room.livenessTimeout)
        if repeating.isEmpty { startSignalingTimers() }
    }

    func addPeer(_ member: MemberInfo) {
        guard member.id != joined?.you.id else { return }
        if let existing = peers[member.id] {
            existing.info = member
        } else {
            do {
                peers[member.id] = try PeerReceiver(info: member)
            } catch {
                logger.error("cannot receive a member's media", metadata: ["member": "\(member.id)", "error": "\(error)"])
                return
            }
        }
        ownerOfBlock[member.ssrcs.block] = member.id
        let id = ParticipantID(member.id)
        emit(.userJoined(id, name: member.label, role: member.role == .audience ? .audience : .broadcaster))
        if member.audioMuted { emit(.remoteAudioMuted(id, true)) }
        if member.videoMuted { emit(.remoteVideoMuted(id, true)) }
    }

    /// Pings the relay often enough for its liveness timeout (announced in `joined`), and drops a connection the
    /// relay has gone silent on so the reconnect begins (`KeepAliveSchedule` decides both).
    func startKeepAlive(livenessTimeout seconds: Double) {
        guard let bound else { return }
        let schedule = KeepAliveSchedule(configured: configuration.keepAliveInterval, livenessTimeout: seconds)
        keepAliveTask?.cancel()
        let period = timeAmount(schedule.interval)
        keepAliveTask = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
            let core = bound.value
            guard let signaling = core.signaling, case .joined = core.phase else { return }
            switch schedule.action(now: core.now, lastHeard: core.lastHeard) {
            case .reconnect:
                core.logger.notice(
                    "the relay went silent; reconnecting", metadata: ["after": "\(schedule.stallAfter)"])
                signaling.abort()
            case .ping:
                signaling.send(.ping(KeepAlive(token: UInt64(core.now.components.seconds))))
            }
        }
    }

    func startSignalingTimers() {
        guard let bound else { return }
        repeating.append(loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.reportStatistics()
        })
        repeating.append(loop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { _ in
            bound.value.reportLevels()
        })
    }

}
