import ParleyBus
import ParleyBytes
import ParleySecurity
import ParleyStore
import ParleyWebRTC
import ParleyWire

/// Joining a room: admission, passwords and accounts, resuming after a reconnect, and leaving.
extension RelayState {
    mutating func admit(
        _ request: JoinRequest, room: String, name: String, on connection: ConnectionID,
        replacing earlier: UInt32? = nil
    ) -> (actions: [RelayAction], newRoom: Room?) {
        let existing = rooms[room]
        let configured = configuredRooms[room]
        var newRoom: Room?
        if let verifier = existing?.verifier ?? configured?.verifier {
            guard let proofText = request.proof else {
                counters.signalingErrors += 1
                return (refuse(.passwordRequired, "\(room) needs its password", connection), nil)
            }
            let challenge = connections[connection]?.challenge
            connections[connection]?.challenge = nil  // one proof per challenge: a captured proof is worth nothing
            guard let challenge, let proof = Hex.decode(proofText),
                RoomPassword.isValid(proof: proof, verifier: verifier, challenge: challenge, room: room, name: name)
            else {
                counters.signalingErrors += 1
                connections[connection]?.failedProofs += 1
                var actions = refuse(.wrongPassword, "wrong password for \(room)", connection)
                if (connections[connection]?.failedProofs ?? 0) >= Self.maximumFailedProofs {
                    actions =
                        refuse(
                            .wrongPassword,
                            "wrong password for \(room) \(Self.maximumFailedProofs) times; "
                                + "closing the connection", connection) + [.close(connection)]
                }
                return (actions, nil)
            }
        } else if existing == nil, request.proof != nil {
            // The joiner has a password for a room that does not exist yet: it becomes the room's password.
            guard let text = request.verifier else {
                counters.signalingErrors += 1
                return (
                    refuse(.passwordSetup, "\(room) is new: send the password verifier to create it", connection),
                    nil
                )
            }
            guard let verifier = Hex.decode(text), verifier.count == 32 else {
                counters.signalingErrors += 1
                return (refuse(.badField, "join field \"verifier\" must be 64 hex digits", connection), nil)
            }
            newRoom = Room(name: room, verifier: verifier)
        }
        if let existing {
            guard existing.encryption == request.encryption else {
                counters.signalingErrors += 1
                let message =
                    switch (existing.encryption, request.encryption) {
                    case (let mode?, nil): "\(room) is end-to-end encrypted (\(mode)): join with the room's secret"
                    case (nil, _): "\(room) is not end-to-end encrypted: join without a secret"
                    case (let mode?, let asked?): "\(room) is end-to-end encrypted with \(mode), not \(asked)"
                    }
                return (refuse(.encryptionMismatch, message, connection), nil)
            }
            // A person and the terminal they share have one name; two of either kind do not.
            let taken = existing.members.contains {
                $0 != earlier && members[$0]?.info.name.lowercased() == name.lowercased()
                    && (members[$0]?.info.kind ?? .person) == request.kind
            }
            guard !taken else {
                counters.signalingErrors += 1
                let message =
                    request.kind == .terminal
                    ? "\(name) already shares a terminal in \(room); one share a name"
                    : "someone in \(room) is already called \(name); pick another name"
                return (refuse(.nameTaken, message, connection), nil)
            }
        } else {
            var created = newRoom ?? Room(name: room, verifier: configured?.verifier)
            created.openStage = configured?.openStage ?? false
            created.recordingForbiddenByOperator = configured?.recording == false
            created.encryption = request.encryption
            newRoom = created
        }
        return ([], newRoom)
    }

    /// A join that claims an account: parked until the shell checked the signature (`accountChecked`).
    mutating func claimAccount(_ claim: AccountClaim, request: JoinRequest, on connection: ConnectionID)
        -> [RelayAction]
    {
        guard let challenge = connections[connection]?.challenge else {
            counters.signalingErrors += 1
            return refuse(.badField, "ask for a \"challenge\" first: a join as an account signs it", connection)
        }
        guard case .success = nameRule(claim.name), let signature = AccountKeys.signature(base64: claim.signature)
        else {
            counters.signalingErrors += 1
            return refuse(
                .badField,
                "join field \"account\" needs a valid account name and a base64 Ed25519 "
                    + "signature (64 bytes)", connection)
        }
        connections[connection]?.pendingJoin = request
        let message = AccountIdentity.joinMessage(
            account: claim.name, room: request.room, name: request.name,
            challenge: challenge)
        return [.checkAccount(connection, account: claim.name, message: message, signature: Array(signature))]
    }

    /// The shell's answer to `checkAccount`: the parked join goes ahead (as the account when verified) or is refused.
    public mutating func accountChecked(_ connection: ConnectionID, _ check: AccountCheck, now: Duration)
        -> [RelayAction]
    {
        guard let request = connections[connection]?.pendingJoin else { return [] }
        connections[connection]?.pendingJoin = nil
        switch check {
        case .refused(let reason):
            counters.signalingErrors += 1
            return refuse(.accountRefused, reason, connection)
        case .verified(let account):
            return join(request, on: connection, now: now, account: account)
        case .unverified(let reason):
            return join(request, on: connection, now: now, accountProblem: reason)
        }
    }

    /// The shell's answer to `placeRoom`: the parked join goes ahead here, or the joiner is told where the room
    /// lives and let go.
    public mutating func roomPlaced(_ connection: ConnectionID, _ placement: RoomPlacement, now: Duration)
        -> [RelayAction]
    {
        guard let request = connections[connection]?.pendingJoin else { return [] }
        connections[connection]?.pendingJoin = nil
        switch placement {
        case .here:
            if let claim = request.account { return claimAccount(claim, request: request, on: connection) }
            return join(request, on: connection, now: now)
        case .elsewhere(let server, let node):
            counters.redirects += 1
            return [
                .send(.redirect(Redirect(room: request.room, server: server, node: node)), to: [connection]),
                .close(connection),
            ]
        }
    }

    /// A chat line posted in the channel of `room` from outside the call (a messaging client): shown to everyone
    /// in the call, from no member (id 0), under `from` (the account, marked verified).
    public mutating func channelLine(room: String, from: String, text: String, time: Int64) -> [RelayAction] {
        guard rooms[room]?.isOpen == true else { return [] }
        rooms[room]?.chatSequence += 1
        let delivery = ChatDelivery(
            seq: rooms[room]?.chatSequence ?? 0, from: 0,
            name: MemberInfo.label(name: from, account: from), text: text, time: time)
        return [.send(.chat(delivery), to: connections(in: room, except: nil))]
    }

    mutating func join(
        _ request: JoinRequest, on connection: ConnectionID, now: Duration,
        account: String? = nil, accountProblem: String? = nil
    ) -> [RelayAction] {
        let room: String
        switch roomRule(request.room) {
        case .success(let cleaned): room = cleaned
        case .failure(let rejection):
            counters.signalingErrors += 1
            return [.send(.error(SignalingError(.badRoomName, rejection.message)), to: [connection])]
        }
        let name: String
        switch nameRule(request.name) {
        case .success(let cleaned): name = cleaned
        case .failure(let rejection):
            counters.signalingErrors += 1
            return [.send(.error(SignalingError(.badName, rejection.message)), to: [connection])]
        }
        // A browser's offer is read before anything else is decided: one the relay cannot answer refuses the join.
        var browserOffer: BrowserOffer?
        if let sdp = request.webrtc {
            do {
                browserOffer = try BrowserOffer(SessionDescription(parsing: sdp))
            } catch {
                counters.signalingErrors += 1
                return refuse(
                    .badField, "join field \"webrtc\" is not an offer the relay can answer: \(error)", connection)
            }
        }
        // A browser comes back with a new offer, so as a new member: only a Parley client resumes.
        if browserOffer == nil, let resume = request.resume,
            let actions = self.resume(
                resume, room: room, request: request,
                on: connection, now: now)
        {
            return actions
        }
        if draining { return refuseWhileDraining(request, on: connection) }
        let moved = moving(request.resume, room: room, name: name)
        if let removal = rooms[room]?.removal(name: name, account: account) {
            counters.signalingErrors += 1
            return refuse(
                .removedByHost,
                "\(removal.by), the host, removed you from \(room); only the host can let you back in", connection)
        }
        if let full = roomLimit(room) {
            counters.limitsReached += 1
            return [.send(.error(SignalingError(.limitReached, full)), to: [connection])]
        }
        let admission = admit(request, room: room, name: name, on: connection, replacing: moved.earlier)
        guard admission.actions.isEmpty else { return admission.actions }
        // Its earlier self leaves, but its host claim stays with the member: a host that moved here is still the
        // host (`settleHost` gives the role back below, before anyone else is told they host).
        let claim = moved.earlier.flatMap { members[$0]?.hostSince }
        let moveActions = moved.earlier.map { remove($0, reason: .dropped, handingOnHost: false) } ?? []
        connections[connection]?.everJoined = true
        if let newRoom = admission.newRoom { rooms[room] = newRoom }
        let ssrcs = self.ssrcs.allocate(using: &random)
        let id = newMemberID(block: ssrcs.block)
        var tokenBytes = [UInt8](repeating: 0, count: BindToken.length)
        for index in tokenBytes.indices { tokenBytes[index] = UInt8.random(in: 0...255, using: &random) }
        let credential = BindToken(bytes: tokenBytes)!
        let info = MemberInfo(
            id: id, name: name, role: request.role, audioMuted: request.audioMuted,
            videoMuted: request.videoMuted, ssrcs: ssrcs, account: account, kind: request.kind)
        let others = connections(in: room, except: nil)
        let existing = inCall(rooms[room]?.members ?? [], now: now)
        // A room with a password or end-to-end encryption is never named in presence (its name is part of what keeps
        // it private), and its chat is never kept.
        let isOpen = rooms[room]?.isOpen == true
        let hidesRoom = request.hideRoom || !isOpen
        members[id] = Member(
            info: info, room: room, connection: connection, credential: credential, lastSeen: now,
            videoKbps: request.videoKbps, hidesRoom: hidesRoom, videoLayers: request.videoLayers, joinedAt: now,
            credentialDigest: CredentialDigest.hex(of: credential.hex), hostSince: claim, joinedAtWall: wallClock(),
            replacesDigest: moved.digest)
        members[id]?.downlinkCounts = request.downlinkCounts
        members[id]?.browserOffer = browserOffer
        rooms[room, default: Room(name: room)].members.append(id)
        let hostActions = settleHost(
            joined: id, room: room, resume: request.resume, account: account, others: others, now: now)
        if request.role == .broadcaster { rooms[room]?.mayBroadcast.insert(id) }
        connections[connection]?.member = id
        var joined = joinedMessage(room: room, you: info, others: existing, credential: credential)
        joined.accountProblem = accountProblem
        let opened: [RelayAction] = spansNodes && admission.newRoom != nil ? [.publish(.roomOpened(room: room))] : []
        return moveActions + opened + announce(id, now: now)
            + [.memberAdded(id: id, room: room)] + Self.answer(joined, to: connection) + [
                .send(.memberJoined(MemberJoined(member: info)), to: others),
                .callActivity(
                    CallActivity(
                        room: room, member: info, joined: true, members: rooms[room]?.members.count ?? 1,
                        hidesRoom: hidesRoom, kept: keepsChat && isOpen, connection: connection)),
            ] + hostActions
    }

    /// Takes back a membership whose connection dropped: same id, SSRCs, credential and media binding, nothing
    /// told to the others (for them the member never left). Nil when there is nothing to resume (it timed out, the
    /// relay restarted, the credential or room does not match): the caller then joins afresh.
    mutating func resume(
        _ token: ResumeToken, room: String, request: JoinRequest, on connection: ConnectionID,
        now: Duration
    ) -> [RelayAction]? {
        guard var member = members[token.member], member.room == room,
            let credential = BindToken(hex: token.credential), member.credential.matches(credential)
        else { return nil }
        var actions: [RelayAction] = []
        if let old = member.connection, old != connection {
            // A half-open old connection (the client saw it fail first): it no longer speaks for the member.
            connections[old]?.member = nil
            actions.append(.close(old))
        }
        member.connection = connection
        member.lastSeen = now
        let changedMute = member.info.audioMuted != request.audioMuted || member.info.videoMuted != request.videoMuted
        member.info.audioMuted = request.audioMuted
        member.info.videoMuted = request.videoMuted
        members[token.member] = member
        connections[connection]?.member = token.member
        connections[connection]?.everJoined = true
        let others = inCall((rooms[room]?.members ?? []).filter { $0 != token.member }, now: now)
        let joined = joinedMessage(room: room, you: member.info, others: others, credential: member.credential)
        actions += Self.answer(joined, to: connection)
        if changedMute {
            actions.append(
                .send(
                    .mute(
                        MemberMute(
                            id: token.member, audio: request.audioMuted,
                            video: request.videoMuted)),
                    to: connections(in: room, except: token.member)))
            actions += announce(token.member, now: now)
        }
        return actions
    }

    /// The `joined` answer, in messages a client reads: a large room's member list would pass the signaling size
    /// limit (16 KiB: about 80 members), so `joined` lists as many as fit and a `memberJoined` follows for each of the
    /// others.
    static func answer(_ joined: JoinedRoom, to connection: ConnectionID) -> [RelayAction] {
        func fits(_ count: Int) -> Bool {
            var part = joined
            part.members = Array(joined.members.prefix(count))
            return ServerMessage.joined(part).encoded().utf8.count <= maxSignalingMessageBytes
        }
        guard !fits(joined.members.count) else { return [.send(.joined(joined), to: [connection])] }
        var low = 0
        var high = joined.members.count
        while low < high {
            let middle = (low + high + 1) / 2
            if fits(middle) { low = middle } else { high = middle - 1 }
        }
        var first = joined
        first.members = Array(joined.members.prefix(low))
        return [.send(.joined(first), to: [connection])]
            + joined.members.dropFirst(low).map { .send(.memberJoined(MemberJoined(member: $0)), to: [connection]) }
    }

    /// These members as `joined` lists them: each with how long it has been in the room.
    func inCall(_ ids: [UInt32], now: Duration) -> [MemberInfo] {
        ids.compactMap { id in
            guard let member = members[id] else { return nil }
            var info = member.info
            info.inCallFor = max(.zero, now - member.joinedAt).inSeconds
            return info
        }
    }

    func joinedMessage(room: String, you: MemberInfo, others: [MemberInfo], credential: BindToken)
        -> JoinedRoom
    {
        let settings = rooms[room]
        return JoinedRoom(
            room: room, you: you, members: others,
            media: MediaGrant(udpPort: udpPort, credential: credential.hex, ssrcs: you.ssrcs),
            livenessTimeout: limits.livenessTimeout.inSeconds,
            host: settings?.host ?? 0, passwordProtected: settings?.verifier != nil,
            openStage: settings?.openStage ?? false, encryption: settings?.encryption,
            chatKept: keepsChat && settings?.isOpen == true ? true : nil,
            recordingForbidden: settings.flatMap { $0.recordingAllowed ? nil : Self.recordingForbiddenReason($0) },
            recorders: settings.map(\.recorders).flatMap { $0.isEmpty ? nil : $0 })
    }

    /// `id` leaves its room for `reason`. In a room spanning nodes the host role is then settled again, unless
    /// `handingOnHost` is false: the member's earlier self leaving as it comes back through another node, with its
    /// claim (the caller settles the role once the member is in again).
    mutating func remove(_ id: UInt32, reason: LeaveReason, handingOnHost: Bool = true) -> [RelayAction] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        ssrcs.release(member.info.ssrcs)
        rooms[member.room]?.members.removeAll { $0 == id }
        rooms[member.room]?.mayBroadcast.remove(id)
        rooms[member.room]?.recorders.removeAll { $0 == id }
        var actions: [RelayAction] = [
            .memberRemoved(id: id, room: member.room),
            .send(.memberLeft(MemberLeft(id: id, reason: reason)), to: connections(in: member.room, except: id)),
        ]
        if let node = member.node, let origin = member.originID {
            // Another node's member: its own node keeps its presence and the room's channel.
            remoteIDs[RemoteMemberKey(node: node, id: origin)] = nil
        } else {
            actions.append(
                .callActivity(
                    CallActivity(
                        room: member.room, member: member.info, joined: false,
                        members: rooms[member.room]?.members.count ?? 0, hidesRoom: member.hidesRoom,
                        kept: keepsChat && rooms[member.room]?.isOpen == true)))
            if spansNodes {
                actions.append(.publish(.roomMemberLeft(room: member.room, member: id, reason: reason.rawValue)))
            }
            actions += closeIfOnlyRemote(member.room)
        }
        if rooms[member.room]?.members.isEmpty ?? false {
            rooms[member.room] = nil
            if placesRooms { actions.append(.roomClosed(member.room)) }
        } else if spansNodes {
            if rooms[member.room]?.host == id { rooms[member.room]?.host = nil }
            if handingOnHost, member.hostSince != nil || rooms[member.room]?.host == nil {
                actions += settleClusterHost(of: member.room, now: member.lastSeen)
            }
        } else if rooms[member.room]?.host == id, let next = rooms[member.room]?.members.first {
            makeHost(next, of: member.room)
            actions.append(.send(.host(MemberRef(id: next)), to: connections(in: member.room, except: nil)))
        }
        return actions
    }

    /// The signaling connections of a room's members, but `excluded`.
    public func connections(in room: String, except excluded: UInt32?) -> [ConnectionID] {
        (rooms[room]?.members ?? []).compactMap { id in
            id == excluded ? nil : members[id]?.connection
        }
    }
}
