import ParleyBus
import ParleyBytes
import ParleySecurity
import ParleyStore
import ParleyWire

/// What a member's signaling messages do to the relay: chat, media changes, roles and the host's commands.
extension RelayState {

    mutating func handle(
        _ message: ClientMessage, on connection: ConnectionID, member id: UInt32?,
        now: Duration
    ) -> [RelayAction] {
        switch message {
        case .join(let request):
            return handleJoin(request, on: connection, member: id, now: now)
        case .ping(let token):
            return [.send(.pong(token), to: [connection])]
        case .challenge:
            return challenge(connection)
        default:
            break
        }
        guard let id, let member = members[id] else {
            counters.signalingErrors += 1
            return [
                .send(
                    .error(SignalingError(.notJoined, "send \"join\" before \"\(message.type)\"")),
                    to: [connection])
            ]
        }
        switch message {
        case .join, .ping, .challenge:
            return []
        case .leave:
            connections[connection]?.member = nil
            return remove(id, reason: .quit) + [.close(connection)]
        case .mute(let change):
            members[id]?.info.audioMuted = change.audio ?? member.info.audioMuted
            members[id]?.info.videoMuted = change.video ?? member.info.videoMuted
            let info = members[id]!.info
            return [
                .send(
                    .mute(MemberMute(id: id, audio: info.audioMuted, video: info.videoMuted)),
                    to: connections(in: member.room, except: id))
            ] + announce(id, now: now)
        case .chat(let chat):
            return say(chat, from: member, id: id, on: connection)
        case .stats(let stats):
            return [.send(.stats(MemberStats(id: id, stats: stats)), to: connections(in: member.room, except: id))]
        case .tiles(let report):
            return [.tiles(id: id, report)]
        case .videoSending(let sending):
            return [.videoSending(id: id, sending)]
        case .role(let request):
            return askForRole(request, of: member, id: id, on: connection)
        case .allow(let target):
            return allow(target, by: member, id: id, on: connection)
        case .remove(let target):
            return hostRemoves(target, by: member, id: id, on: connection)
        case .readmit(let readmission):
            return readmit(readmission, by: member, id: id, on: connection)
        case .recording(let change):
            return recording(change.recording, by: id, on: connection)
        case .recordingPolicy(let policy):
            return setRecordingPolicy(policy.allowed, by: id, on: connection)
        case .control(var grant):
            guard let terminal = terminalConnection(grant.terminal, in: member.room)
            else { return refusedShare(grant.terminal, connection) }
            grant.from = id
            return [.send(.control(grant), to: [terminal])]
        case .typing(var typing):
            guard let terminal = terminalConnection(typing.terminal, in: member.room)
            else { return refusedShare(typing.terminal, connection) }
            // Typing is bounded in rate as in size: what comes beyond the limit in a second is dropped.
            if now - member.typingSince >= .seconds(1) {
                members[id]?.typingSince = now
                members[id]?.typingCount = 0
            }
            members[id]?.typingCount += 1
            guard (members[id]?.typingCount ?? 0) <= Self.typingPerSecond else {
                counters.typingDropped += 1
                return []
            }
            typing.from = id
            return [.send(.typing(typing), to: [terminal])]
        case .controller(var change):
            guard member.info.isTerminal else {
                counters.signalingErrors += 1
                return refuse(.badField, "only a shared terminal says who types in it", connection)
            }
            change.terminal = id
            return [.send(.controller(change), to: connections(in: member.room, except: id))]
        }
    }

    /// Typing messages a member may send a second; beyond it they are dropped (and counted).
    static let typingPerSecond = 100

    /// The connection of shared terminal `terminal` in `room`, here; nil when there is none.
    private func terminalConnection(_ terminal: UInt32, in room: String) -> ConnectionID? {
        guard let target = members[terminal], target.room == room, target.info.isTerminal else { return nil }
        return target.connection
    }

    private mutating func refusedShare(_ terminal: UInt32, _ connection: ConnectionID) -> [RelayAction] {
        counters.signalingErrors += 1
        return refuse(.badField, "member \(terminal) is not a shared terminal in this room (here)", connection)
    }

    /// A join: refused on a connection that joined or is being checked, placed first in a cluster that places rooms,
    /// checked against its account's claim when it makes one.
    private mutating func handleJoin(
        _ request: JoinRequest, on connection: ConnectionID, member id: UInt32?, now: Duration
    ) -> [RelayAction] {
        guard id == nil else {
            counters.signalingErrors += 1
            return [
                .send(
                    .error(SignalingError(.alreadyJoined, "this connection already joined a room")),
                    to: [connection])
            ]
        }
        guard connections[connection]?.pendingJoin == nil else {
            counters.signalingErrors += 1
            return refuse(
                .alreadyJoined, "a join is being checked on this connection; wait for its answer",
                connection)
        }
        // In a cluster a room lives on one node: a room not open here is placed first (it may live elsewhere).
        if placesRooms, case .success(let room) = roomRule(request.room), rooms[room] == nil {
            connections[connection]?.pendingJoin = request
            return [.placeRoom(connection, room: room)]
        }
        if let claim = request.account { return claimAccount(claim, request: request, on: connection) }
        return join(request, on: connection, now: now)
    }

    /// A fresh nonce for the connection to sign (an account's proof).
    private mutating func challenge(_ connection: ConnectionID) -> [RelayAction] {
        var nonce = [UInt8](repeating: 0, count: 32)
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &random) }
        connections[connection]?.challenge = nonce
        return [.send(.challenge(AccessChallenge(nonce: Hex.encode(nonce))), to: [connection])]
    }

    /// Chat references remembered per member.
    static let recentChatReferences = 16

    /// A chat line within the relay's limits goes to the room (and the other nodes, and the room's channel).
    private mutating func say(
        _ chat: ChatSend, from member: Member, id: UInt32, on connection: ConnectionID
    ) -> [RelayAction] {
        let sealedLimit = sealedChatLimit
        guard chat.text.count <= limits.chatCharacters, (chat.sealed?.count ?? 0) <= sealedLimit else {
            counters.signalingErrors += 1
            let length =
                chat.sealed.map { "\($0.count) sealed characters (limit \(sealedLimit))" }
                ?? "\(chat.text.count) characters"
            return [
                .send(
                    .error(
                        SignalingError(
                            .badField,
                            """
                            chat line has \(length); this relay's limit is \(limits.chatCharacters) characters \
                            (--max-chat-characters)
                            """)), to: [connection])
            ]
        }
        if let ref = chat.ref, member.recentChatRefs.contains(ref) {
            // Sent again after a reconnect, but it had got through: echoed to the sender only, not said twice.
            var echo = ChatDelivery(
                seq: rooms[member.room]?.chatSequence ?? 0, from: id, name: member.info.label, text: chat.text,
                time: wallClock(), sealed: chat.sealed)
            echo.ref = ref
            return [.send(.chat(echo), to: [connection])]
        }
        if let ref = chat.ref, ref.utf8.count <= 32 {
            members[id]?.recentChatRefs.append(ref)
            if (members[id]?.recentChatRefs.count ?? 0) > Self.recentChatReferences {
                members[id]?.recentChatRefs.removeFirst()
            }
        }
        rooms[member.room]?.chatSequence += 1
        let sequence = rooms[member.room]?.chatSequence ?? 0
        var delivery = ChatDelivery(
            seq: sequence, from: id, name: member.info.label, text: chat.text,
            time: wallClock(), sealed: chat.sealed)
        var actions: [RelayAction] = [.send(.chat(delivery), to: connections(in: member.room, except: id))]
        delivery.ref = chat.ref
        actions.append(.send(.chat(delivery), to: [connection]))
        if spansNodes {
            actions.append(
                .publish(
                    .roomChat(
                        room: member.room, member: id, text: chat.text, sealed: chat.sealed, time: delivery.time)))
        }
        if keepsChat, chat.sealed == nil, rooms[member.room]?.isOpen == true {
            actions.append(
                .roomChat(
                    room: member.room, id: "call-\(id)-\(sequence)-\(delivery.time)",
                    sender: CallActivity.sender(name: member.info.name, account: member.info.account),
                    text: chat.text, time: delivery.time))
        }
        return actions
    }

    /// A role change; nobody promotes themselves in a room with a host: the host is asked instead.
    private mutating func askForRole(
        _ request: RoleRequest, of member: Member, id: UInt32, on connection: ConnectionID
    ) -> [RelayAction] {
        if request.role == .broadcaster, member.info.role == .audience, let room = rooms[member.room],
            !(room.openStage || room.host == id || room.mayBroadcast.contains(id))
        {
            // Nobody promotes themselves: the host is asked, and decides with `allow`.
            counters.signalingErrors += 1
            let hostName = room.host.flatMap { members[$0]?.info.name } ?? "the host"
            var actions: [RelayAction] = [
                .send(
                    .error(
                        SignalingError(
                            .notAllowed,
                            "only the host can let you broadcast in \(member.room); \(hostName) has been asked"
                        )), to: [connection])
            ]
            if let host = room.host, let hostConnection = members[host]?.connection {
                actions.append(.send(.hand(MemberRef(id: id)), to: [hostConnection]))
            } else if spansNodes, let host = room.host, members[host]?.isLocal == false {
                actions.append(.publish(.roomControl(room: member.room, member: id, control: .hand)))
            }
            return actions
        }
        return setRole(request.role, of: id)
    }

    /// The host lets a member broadcast.
    private mutating func allow(
        _ target: MemberRef, by member: Member, id: UInt32, on connection: ConnectionID
    ) -> [RelayAction] {
        guard let room = rooms[member.room], room.host == id else { return notHost(connection, "allow") }
        guard let other = members[target.id], other.room == member.room else {
            return unknownMember(target.id, in: member.room, connection)
        }
        rooms[member.room]?.mayBroadcast.insert(target.id)
        if let node = other.node, let origin = other.originID {
            // Its own node changes its role, and announces it.
            return [
                .publish(
                    .roomControl(room: member.room, member: id, control: .allow(node: node, member: origin)))
            ]
        }
        return other.info.role == .audience ? setRole(.broadcaster, of: target.id) : []
    }

    /// The host removes a member, remembered by name so they cannot come back.
    private mutating func hostRemoves(
        _ target: MemberRef, by member: Member, id: UInt32, on connection: ConnectionID
    ) -> [RelayAction] {
        guard let room = rooms[member.room], room.host == id else { return notHost(connection, "remove") }
        guard target.id != id, let other = members[target.id], other.room == member.room else {
            return unknownMember(target.id, in: member.room, connection)
        }
        let removal = RemovedMember(
            name: other.info.name.lowercased(), account: other.info.account?.lowercased(), by: member.info.name)
        rooms[member.room]?.remember(removal)
        guard spansNodes else { return removeByHost(target.id, hostName: member.info.name) }
        // Every node remembers the removal; the member's own node closes its connection (and says it left).
        let control = RoomControl.remove(
            node: other.node ?? nodeID, member: other.originID ?? target.id, name: removal.name,
            account: removal.account)
        let published: [RelayAction] = [.publish(.roomControl(room: member.room, member: id, control: control))]
        return other.isLocal ? published + removeByHost(target.id, hostName: member.info.name) : published
    }

    /// The host lets a removed name back in.
    private mutating func readmit(
        _ readmission: Readmission, by member: Member, id: UInt32, on connection: ConnectionID
    ) -> [RelayAction] {
        guard let room = rooms[member.room], room.host == id else { return notHost(connection, "readmit") }
        let name = readmission.name.lowercased()
        let before = room.removed.count
        rooms[member.room]?.removed.removeAll { $0.name == name || $0.account == name }
        guard (rooms[member.room]?.removed.count ?? 0) < before else {
            counters.signalingErrors += 1
            return refuse(
                .badField, "nobody called \(readmission.name) was removed from \(member.room)", connection)
        }
        return spansNodes
            ? [.publish(.roomControl(room: member.room, member: id, control: .readmit(name: name)))] : []
    }

    /// A member starts or stops recording: everyone in the room (the member included) is told, with whether the
    /// room is end-to-end encrypted (the file is then that member's decrypted view). Refused where recording is
    /// forbidden, with who forbade it.
    mutating func recording(_ recording: Bool, by id: UInt32, on connection: ConnectionID) -> [RelayAction] {
        guard let member = members[id], let room = rooms[member.room] else { return [] }
        if recording, !room.recordingAllowed {
            counters.signalingErrors += 1
            return refuse(.notAllowed, Self.recordingForbidden(room), connection)
        }
        rooms[member.room]?.recorders.removeAll { $0 == id }
        if recording { rooms[member.room]?.recorders.append(id) }
        let notice = RecordingNotice(
            id: id, name: member.info.label, recording: recording, encrypted: room.encryption != nil ? true : nil)
        return [.send(.recording(notice), to: connections(in: member.room, except: nil))]
            + announce(id, now: member.lastSeen)
    }

    /// The host allows or forbids recording (`/norecord`); everyone is told. Members recording stop on their own
    /// when told it is forbidden (the relay cannot stop a file on someone's disk).
    mutating func setRecordingPolicy(_ allowed: Bool, by id: UInt32, on connection: ConnectionID) -> [RelayAction] {
        guard let member = members[id], let room = rooms[member.room] else { return [] }
        guard room.host == id else {
            counters.signalingErrors += 1
            return refuse(.notAllowed, "only the room's host can allow or forbid recording", connection)
        }
        if allowed, room.recordingForbiddenByOperator {
            counters.signalingErrors += 1
            return refuse(.notAllowed, Self.recordingForbidden(room), connection)
        }
        rooms[member.room]?.recordingForbiddenBy = allowed ? nil : member.info.name
        return [
            .send(
                .recordingPolicy(RecordingPolicy(allowed: allowed, by: member.info.name)),
                to: connections(in: member.room, except: nil))
        ] + announce(id, now: member.lastSeen)
    }

    /// The refusal of a recording in `room`.
    static func recordingForbidden(_ room: Room) -> String {
        "recording is not allowed in \(room.name): \(recordingForbiddenReason(room))"
    }

    /// Who forbids recording in `room`.
    static func recordingForbiddenReason(_ room: Room) -> String {
        room.recordingForbiddenByOperator
            ? "the relay's rooms file forbids it" : "\(room.recordingForbiddenBy ?? "the host") forbade it"
    }

    mutating func setRole(_ role: MemberRole, of id: UInt32) -> [RelayAction] {
        guard let member = members[id] else { return [] }
        members[id]?.info.role = role
        if role == .broadcaster { rooms[member.room]?.mayBroadcast.insert(id) }
        return [
            .roleChanged(id: id, role: role),
            .send(
                .role(MemberRoleChange(id: id, role: role)),
                to: connections(in: member.room, except: nil)),
        ] + announce(id, now: member.lastSeen)
    }

    mutating func notHost(_ connection: ConnectionID, _ what: String) -> [RelayAction] {
        counters.signalingErrors += 1
        return [
            .send(.error(SignalingError(.notAllowed, "only the room's host can \(what) members")), to: [connection])
        ]
    }

    mutating func unknownMember(_ id: UInt32, in room: String, _ connection: ConnectionID) -> [RelayAction] {
        counters.signalingErrors += 1
        return [.send(.error(SignalingError(.badField, "member \(id) is not in \(room)")), to: [connection])]
    }

    func refuse(_ code: SignalingErrorCode, _ message: String, _ connection: ConnectionID) -> [RelayAction] {
        [.send(.error(SignalingError(code, message)), to: [connection])]
    }

    /// Checks the password, the encryption mode and the name against the room; nil when the join may go ahead,
    /// otherwise the refusal. A new room takes the joiner's verifier and mode.
    /// Why `room` cannot take another member (the relay's room limit for a new room, the room's member limit), or nil.
    /// The longest sealed chat line: its text is unreadable here, so its base64 length bounds it (4/3 of the bytes,
    /// plus the SFrame header and tag, for 4-byte characters at most).
    var sealedChatLimit: Int { (limits.chatCharacters * 4 + 64) * 4 / 3 + 4 }

    func roomLimit(_ room: String) -> String? {
        if let existing = rooms[room] {
            guard existing.members.count < limits.membersPerRoom else {
                return "room \(room) is full: \(limits.membersPerRoom) members is its limit (--max-members)"
            }
            return nil
        }
        guard rooms.count < limits.rooms else {
            return "the relay holds \(limits.rooms) rooms, its limit (--max-rooms); join an existing room or try later"
        }
        return nil
    }

}
