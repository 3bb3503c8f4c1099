import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

// A room that spans nodes (`--placement spread`): each node holds the members that joined through it and learns the
// others' from the cluster's bus. A member of another node is a `Member` with `node` set (where it is): no
// connection, never timed out here (its node says when it leaves). Its SSRC block is the one its node gave it: media
// crosses nodes unchanged, end-to-end encrypted payloads included. Its id is that block's number over 4, here as on
// its node (`newMemberID`): a member has one id on every node, so a client that moves to another node finds the
// others as they were, and only members that moved are seen leaving and coming back.
//
// What each node tells the others:
//   roomOpened(R)         R got its first member here   -> nodes with members in R announce them again
//   roomMember(R, entry)  a member here joined R or changed (muted, role)
//   roomMemberLeft(R, id) a member here left R
// A node keeps the members of other nodes only for rooms with members of its own; when its last own member leaves,
// it forgets the room.
extension RelayState {
    /// What the other nodes hear of a member of this node.
    func entry(of id: UInt32, now: Duration) -> RoomMemberEntry? {
        guard let member = members[id], member.isLocal else { return nil }
        let info = member.info
        let inCall = max(.zero, now - member.joinedAt).components
        return RoomMemberEntry(
            id: id, name: info.name, broadcaster: info.role == .broadcaster, audioMuted: info.audioMuted,
            videoMuted: info.videoMuted, ssrcBlock: info.ssrcs.block, account: info.account,
            videoLayers: member.videoLayers?.map { [$0.width, $0.height] },
            inCallMilliseconds: inCall.seconds * 1000 + inCall.attoseconds / 1_000_000_000_000_000,
            credentialDigest: member.credentialDigest, replaces: member.replacesDigest, hostSince: member.hostSince,
            recording: rooms[member.room]?.recorders.contains(id) == true ? true : nil,
            recordingForbiddenBy: rooms[member.room]?.host == id ? rooms[member.room]?.recordingForbiddenBy : nil,
            joinedAt: member.joinedAtWall, terminal: info.isTerminal ? true : nil)
    }

    /// The bus event announcing a member of this node, when rooms span nodes.
    func announce(_ id: UInt32, now: Duration) -> [RelayAction] {
        guard spansNodes, let room = members[id]?.room, let entry = entry(of: id, now: now)
        else { return [] }
        return [.publish(.roomMember(room: room, member: entry))]
    }

    /// A join resuming a membership this node does not have, in a room spanning nodes: the member comes back
    /// through this node after its node died (or it lost that node). Returns its credential's digest, which goes
    /// out with its announcement (`replaces`) for the other nodes to drop its earlier self, and that earlier self
    /// when this node knows it as another node's member (it leaves, as dropped, once the join is admitted).
    func moving(_ resume: ResumeToken?, room: String, name: String) -> (digest: String?, earlier: UInt32?) {
        guard spansNodes, let resume, let credential = BindToken(hex: resume.credential) else { return (nil, nil) }
        let digest = CredentialDigest.hex(of: credential.hex)
        let earlier = rooms[room]?.members.first { id in
            guard let member = members[id], !member.isLocal else { return false }
            return member.credentialDigest == digest && member.info.name.lowercased() == name.lowercased()
        }
        return (digest, earlier)
    }

    /// A new member's id: in a room spanning nodes, its SSRC block over 4, so that every node gives the member the
    /// same id (a block is in use once per node, so is the id); otherwise, and should that id be taken (a member
    /// that joined before the node spanned rooms), the next number.
    mutating func newMemberID(block: UInt32) -> UInt32 {
        if spansNodes, block >> 2 != 0, members[block >> 2] == nil { return block >> 2 }
        while members[nextMemberID] != nil || nextMemberID == 0 { nextMemberID &+= 1 }
        defer { nextMemberID &+= 1 }
        return nextMemberID
    }

    /// Drops the earlier self (here or another node's) of a member that came back through `node`, without handing
    /// the host role on: the member's entry carries its claim.
    mutating func dropEarlierSelf(_ digest: String, room: String, node: String) -> [RelayAction] {
        guard
            let earlier = rooms[room]?.members.first(where: { id in
                members[id].map { $0.credentialDigest == digest && $0.node != node } ?? false
            }), let member = members[earlier]
        else { return [] }
        var actions: [RelayAction] = []
        if let connection = member.connection {
            connections[connection]?.member = nil
            actions.append(.close(connection))
        }
        return actions + remove(earlier, reason: .dropped, handingOnHost: false)
    }

    /// Whether `room` has members that joined through this node.
    func hasLocalMembers(_ room: String) -> Bool {
        rooms[room]?.members.contains { members[$0]?.isLocal == true } ?? false
    }

    /// A member of `node` joined `room` or changed. Taken only while the room has members here; a new one is told
    /// to them (`memberJoined`), a change of mute or role likewise. An entry that does not check out (a bad name,
    /// an SSRC block in use here, a full room) is left out and counted. An entry replacing a member's earlier self
    /// (it came back through `node`) drops that self first, and the host role is settled once the entry is in: a
    /// host that moved is still the host, and nobody here is told otherwise meanwhile.
    public mutating func remoteMember(_ entry: RoomMemberEntry, room: String, node: String, now: Duration)
        -> [RelayAction]
    {
        guard spansNodes else { return [] }
        let dropped = entry.replaces.map { dropEarlierSelf($0, room: room, node: node) } ?? []
        let taken = takeIn(entry, room: room, node: node, now: now)
        return dropped.isEmpty ? taken : dropped + taken + settleClusterHost(of: room, now: now)
    }

    /// `remoteMember` once any earlier self of the member is gone.
    mutating func takeIn(_ entry: RoomMemberEntry, room: String, node: String, now: Duration) -> [RelayAction] {
        var actions: [RelayAction] = []
        guard hasLocalMembers(room) else { return actions }
        let key = RemoteMemberKey(node: node, id: entry.id)
        let role: MemberRole = entry.broadcaster ? .broadcaster : .audience
        if let id = remoteIDs[key], var member = members[id] {
            if member.info.audioMuted != entry.audioMuted || member.info.videoMuted != entry.videoMuted {
                member.info.audioMuted = entry.audioMuted
                member.info.videoMuted = entry.videoMuted
                actions.append(
                    .send(
                        .mute(MemberMute(id: id, audio: entry.audioMuted, video: entry.videoMuted)),
                        to: connections(in: room, except: nil)))
            }
            let claimed = member.hostSince != entry.hostSince
            member.hostSince = entry.hostSince
            members[id] = member
            if member.info.role != role { actions += setRole(role, of: id) }
            if claimed { actions += settleClusterHost(of: room, now: now) }
            return actions + takeRecording(of: id, from: entry)
        }
        guard case .success(let name) = nameRule(entry.name), entry.ssrcBlock != 0, entry.ssrcBlock & 3 == 0,
            (entry.videoLayers?.count ?? 0) <= maxVideoLayers,
            entry.videoLayers?.allSatisfy({ $0.count == 2 && $0.allSatisfy { (1...4096).contains($0) } }) ?? true
        else {
            counters.remoteMembersRefused += 1
            return actions
        }
        let joinedAtWall = entry.joinedAt ?? (wallClock() - entry.inCallMilliseconds)
        let kind: MemberKind = entry.terminal == true ? .terminal : .person
        if let same = rooms[room]?.members.first(where: {
            members[$0]?.info.name.lowercased() == name.lowercased() && (members[$0]?.info.kind ?? .person) == kind
        }),
            let mine = members[same]
        {
            // Its earlier self, announced by a node that had not yet heard it moved here (or to another node):
            // the member moved, and is known here already.
            if let digest = entry.credentialDigest, !digest.isEmpty,
                digest == mine.credentialDigest || digest == mine.replacesDigest
            {
                return actions
            }
            // Two nodes gave one name at once: the earlier join keeps it (ties: the lower node id), as every node
            // decides alike. The later one is not taken here; its own node tells it why and removes it.
            guard (joinedAtWall, node) < (mine.joinedAtWall, mine.node ?? nodeID) else {
                counters.remoteMembersRefused += 1
                return actions
            }
            actions += mine.isLocal ? yieldName(of: same) : remove(same, reason: .dropped)
            guard hasLocalMembers(room) else { return actions }
        }
        guard roomLimit(room) == nil, ssrcs.claim(MemberSSRCs(block: entry.ssrcBlock)) else {
            counters.remoteMembersRefused += 1
            return actions
        }
        let id = newMemberID(block: entry.ssrcBlock)
        let info = MemberInfo(
            id: id, name: name, role: role, audioMuted: entry.audioMuted, videoMuted: entry.videoMuted,
            ssrcs: MemberSSRCs(block: entry.ssrcBlock), account: entry.account, kind: kind)
        let others = connections(in: room, except: nil)
        members[id] = Member(
            info: info, room: room, connection: nil, credential: BindToken(bytes: [UInt8](repeating: 0, count: 16))!,
            lastSeen: now, hidesRoom: true,
            videoLayers: entry.videoLayers?.map { VideoLayerSize(width: $0[0], height: $0[1]) },
            joinedAt: now - .milliseconds(max(0, entry.inCallMilliseconds)),
            credentialDigest: entry.credentialDigest ?? "", node: node, originID: entry.id,
            hostSince: entry.hostSince, joinedAtWall: joinedAtWall, replacesDigest: entry.replaces)
        remoteIDs[key] = id
        rooms[room]?.members.append(id)
        if role == .broadcaster { rooms[room]?.mayBroadcast.insert(id) }
        actions += [.memberAdded(id: id, room: room), .send(.memberJoined(MemberJoined(member: info)), to: others)]
        if entry.hostSince != nil { actions += settleClusterHost(of: room, now: now) }
        return actions + takeRecording(of: id, from: entry) + removeAgainIfRemoved(id, room: room)
    }

    /// This node's member `id` gave its name to another node's member that joined a moment earlier: refused as a
    /// join taking a name in use would be, its connection closed, gone from the room.
    mutating func yieldName(of id: UInt32) -> [RelayAction] {
        guard let member = members[id] else { return [] }
        counters.signalingErrors += 1
        let message =
            "someone in \(member.room) is already called \(member.info.name) (they joined through another relay "
            + "a moment before you); pick another name"
        return closeAndRemove(id, telling: .error(SignalingError(.nameTaken, message)), reason: .dropped)
    }

    /// The member with id `member` on `node` left `room`.
    public mutating func remoteMemberLeft(room: String, node: String, member: UInt32, reason: String)
        -> [RelayAction]
    {
        guard let id = remoteIDs[RemoteMemberKey(node: node, id: member)], members[id]?.room == room else {
            return []
        }
        return remove(id, reason: LeaveReason(rawValue: reason) ?? .dropped)
    }

    /// A chat line of `node`'s member `member` in `room`: said to the members here, numbered in this node's order,
    /// from that member's id here. A line from a member not known here, or over this node's limits, is dropped and
    /// counted.
    public mutating func remoteChat(
        room: String, node: String, member: UInt32, text: String, sealed: String?, time: Int64
    ) -> [RelayAction] {
        guard let id = remoteIDs[RemoteMemberKey(node: node, id: member)], let sender = members[id],
            sender.room == room
        else { return [] }
        guard text.count <= limits.chatCharacters, (sealed?.count ?? 0) <= sealedChatLimit else {
            counters.remoteChatRefused += 1
            return []
        }
        rooms[room]?.chatSequence += 1
        let delivery = ChatDelivery(
            seq: rooms[room]?.chatSequence ?? 0, from: id, name: sender.info.label, text: text, time: time,
            sealed: sealed)
        return [.send(.chat(delivery), to: connections(in: room, except: nil))]
    }

    /// `room` got its first member on another node: this node's members in it are announced again, so the new
    /// node learns them.
    public func roomOpenedElsewhere(_ room: String, now: Duration) -> [RelayAction] {
        guard spansNodes else { return [] }
        return (rooms[room]?.members ?? []).flatMap { announce($0, now: now) }
    }

    /// This node (re)started listening on the bus, or began spanning rooms: what it published before, the others
    /// heard, but what they said meanwhile (NOTIFY is not kept for a node that is not listening) it missed. Each
    /// room with members here is opened again (the others announce their members in it again) and its members
    /// here are announced again.
    public func rejoinBus(now: Duration) -> [RelayAction] {
        guard spansNodes else { return [] }
        return rooms.keys.sorted().filter(hasLocalMembers).flatMap { room in
            [.publish(.roomOpened(room: room))] + roomOpenedElsewhere(room, now: now)
        }
    }

    /// `node` is gone (found dead, or it left): its members leave every room here, as dropped.
    public mutating func nodeGone(_ node: String) -> [RelayAction] {
        remoteIDs.filter { $0.key.node == node }.values.sorted().flatMap { remove($0, reason: .dropped) }
    }

    /// After a member of this node left `room`: with none of its own left, the room is forgotten here (the other
    /// nodes' members in it too, told to nobody).
    mutating func closeIfOnlyRemote(_ room: String) -> [RelayAction] {
        guard let ids = rooms[room]?.members, !ids.isEmpty, !hasLocalMembers(room) else { return [] }
        var actions: [RelayAction] = []
        for id in ids {
            guard let member = members.removeValue(forKey: id) else { continue }
            ssrcs.release(member.info.ssrcs)
            if let node = member.node, let origin = member.originID {
                remoteIDs[RemoteMemberKey(node: node, id: origin)] = nil
            }
            actions.append(.memberRemoved(id: id, room: room))
        }
        rooms[room] = nil
        return actions
    }

    // MARK: - Draining

    /// The node drains (SIGTERM, `parley cluster drain`): each member here is told to move to one of `targets`
    /// (the other live nodes: node id, client address, members there), the least loaded first, counting the
    /// members sent to each; from now on a join is sent to the least loaded. With no target, members stay and joins
    /// are refused, saying so.
    public mutating func drain(to targets: [(node: String, server: String, members: Int)]) -> [RelayAction] {
        draining = true
        var load = targets.filter { !$0.server.isEmpty }
        var actions: [RelayAction] = []
        for id in members.keys.sorted() {
            guard let member = members[id], member.isLocal, let connection = member.connection,
                let least = load.indices.min(by: {
                    (load[$0].members, load[$0].node) < (load[$1].members, load[$1].node)
                })
            else { continue }
            load[least].members += 1
            actions.append(
                .send(
                    .move(Redirect(room: member.room, server: load[least].server, node: load[least].node)),
                    to: [connection]))
        }
        drainTarget = load.min { ($0.members, $0.node) < ($1.members, $1.node) }.map { ($0.node, $0.server) }
        return actions
    }

    /// A join reaching a draining node: sent to the least loaded other node, or refused when there is none.
    mutating func refuseWhileDraining(_ request: JoinRequest, on connection: ConnectionID) -> [RelayAction] {
        guard let target = drainTarget else {
            counters.signalingErrors += 1
            return refuse(.limitReached, "this relay is draining (shutting down): join through another", connection)
        }
        counters.redirects += 1
        return [
            .send(.redirect(Redirect(room: request.room, server: target.server, node: target.node)), to: [connection]),
            .close(connection),
        ]
    }

    /// Members that joined through this node: its members, as it counts them everywhere (`/metrics`, its heartbeat
    /// to the cluster's registry and so `parley cluster status`, least-loaded placement and draining). Another node's
    /// member counts on its own node only.
    public var localMemberCount: Int { members.values.count(where: \.isLocal) }

    /// Rooms with at least one member that joined through this node, counted as `localMemberCount`.
    public var localRoomCount: Int { rooms.keys.count(where: hasLocalMembers) }
}
