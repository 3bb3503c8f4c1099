import ParleyBus
import ParleyStore
import ParleyWire

// One host for a room that spans nodes, and the host's commands reaching members wherever they joined.
//
// Nodes do not vote: a member that becomes the host on its node claims the role with the time it did
// (`hostSince`, ms since 1970, carried in its bus entry), and every node gives the role to the oldest claim it knows
// (ties: the lower node id, then the lower member id there). Every node of the room sees the same claims, so they
// settle on the same host within one bus delivery. A claim is kept after it loses: when the host leaves, the next
// oldest claim hosts, and a room left with no claim gets one from each node's first member (the oldest again wins).
//
//   a: alice claims at t0 ──roomMember(hostSince t0)──► b: carol claimed at t1 > t0 → b's host is alice
//   b: carol's entry (t1) ─────────────────────────────► a: alice stays host
//
// The host's commands about a member of another node travel as `roomControl` events; each node checks that the
// member saying them is the host it sees. A removal is remembered by every node; the host's node also removes again
// anyone who comes back through a node that had not heard of it yet.
extension RelayState {
    /// An event of the cluster's bus from `node`, for the rooms here.
    public mutating func clusterEvent(_ event: ClusterEvent, from node: String, now: Duration) -> [RelayAction] {
        switch event {
        case .roomMember(let room, let member): remoteMember(member, room: room, node: node, now: now)
        case .roomMemberLeft(let room, let member, let reason):
            remoteMemberLeft(room: room, node: node, member: member, reason: reason)
        case .roomOpened(let room): roomOpenedElsewhere(room, now: now)
        case .roomChat(let room, let member, let text, let sealed, let time):
            remoteChat(room: room, node: node, member: member, text: text, sealed: sealed, time: time)
        case .roomControl(let room, let member, let control):
            remoteControl(control, room: room, node: node, member: member)
        case .nodeGone(let gone): nodeGone(gone)
        default: []
        }
    }

    /// Makes `id` the host of `room` here; in a room spanning nodes, a member of this node that never claimed the
    /// role claims it now.
    mutating func makeHost(_ id: UInt32, of room: String) {
        rooms[room]?.host = id
        if spansNodes, let member = members[id], member.isLocal, member.hostSince == nil {
            let since = wallClock()
            members[id]?.hostSince = since
        }
    }

    /// The member whose claim hosts `room`: the oldest, then the lower node id, then the lower member id there.
    func oldestHostClaim(in room: String) -> UInt32? {
        (rooms[room]?.members ?? []).compactMap { id -> (since: Int64, node: String, origin: UInt32, id: UInt32)? in
            guard let member = members[id], let since = member.hostSince else { return nil }
            return (since, member.node ?? nodeID, member.originID ?? id, id)
        }.min { ($0.since, $0.node, $0.origin) < ($1.since, $1.node, $1.origin) }?.id
    }

    /// After the claims in `room` changed (a member with one came or went): the oldest claim hosts, and the members
    /// here are told when that changes. With no claim left, this node's first member claims (and is announced).
    mutating func settleClusterHost(of room: String, now: Duration) -> [RelayAction] {
        guard spansNodes, rooms[room] != nil, returningHosts[room] == nil else { return [] }
        var actions: [RelayAction] = []
        var winner = oldestHostClaim(in: room)
        if winner == nil, let first = rooms[room]?.members.first(where: { members[$0]?.isLocal == true }) {
            makeHost(first, of: room)
            actions += announce(first, now: now)
            winner = first
        }
        guard let winner, winner != rooms[room]?.host else { return actions }
        rooms[room]?.host = winner
        return actions + [.send(.host(MemberRef(id: winner)), to: connections(in: room, except: nil))]
    }

    /// What a remote member's entry says of recording: whether it records (told here when that changes), and, when it
    /// hosts the room, whether recording is forbidden (the host's rule holds on every node).
    mutating func takeRecording(of id: UInt32, from entry: RoomMemberEntry) -> [RelayAction] {
        guard let member = members[id], let room = rooms[member.room] else { return [] }
        var actions: [RelayAction] = []
        let recording = entry.recording == true
        if room.recorders.contains(id) != recording {
            rooms[member.room]?.recorders.removeAll { $0 == id }
            if recording { rooms[member.room]?.recorders.append(id) }
            let notice = RecordingNotice(
                id: id, name: member.info.label, recording: recording, encrypted: room.encryption != nil ? true : nil)
            actions.append(.send(.recording(notice), to: connections(in: member.room, except: nil)))
        }
        if room.host == id, !room.recordingForbiddenByOperator, room.recordingForbiddenBy != entry.recordingForbiddenBy
        {
            rooms[member.room]?.recordingForbiddenBy = entry.recordingForbiddenBy
            let policy = RecordingPolicy(
                allowed: entry.recordingForbiddenBy == nil, by: entry.recordingForbiddenBy ?? member.info.name)
            actions.append(.send(.recordingPolicy(policy), to: connections(in: member.room, except: nil)))
        }
        return actions
    }

    /// A member of another node was just taken into `room`: when the host is here and that name or account was
    /// removed, it is removed again (its node had not heard of the removal).
    func removeAgainIfRemoved(_ id: UInt32, room: String) -> [RelayAction] {
        guard let member = members[id], let node = member.node, let origin = member.originID,
            let host = rooms[room]?.host, members[host]?.isLocal == true,
            let removal = rooms[room]?.removal(name: member.info.name, account: member.info.account)
        else { return [] }
        return [
            .publish(
                .roomControl(
                    room: room, member: host,
                    control: .remove(
                        node: node, member: origin, name: removal.name, account: member.info.account?.lowercased())))
        ]
    }

    /// The host's command (or a raised hand) said on `node` by its member `member` (its id there).
    public mutating func remoteControl(_ control: RoomControl, room: String, node: String, member: UInt32)
        -> [RelayAction]
    {
        guard spansNodes, let actor = remoteIDs[RemoteMemberKey(node: node, id: member)],
            let sender = members[actor], sender.room == room
        else { return [] }
        if case .hand = control {
            guard let host = rooms[room]?.host, let connection = members[host]?.connection else { return [] }
            return [.send(.hand(MemberRef(id: actor)), to: [connection])]
        }
        guard rooms[room]?.host == actor else {
            counters.remoteControlsRefused += 1
            return []
        }
        switch control {
        case .allow(let targetNode, let target):
            guard targetNode == nodeID, let other = members[target], other.isLocal, other.room == room else {
                return []
            }
            rooms[room]?.mayBroadcast.insert(target)
            return other.info.role == .audience ? setRole(.broadcaster, of: target) : []
        case .remove(let targetNode, let target, let name, let account):
            rooms[room]?.remember(RemovedMember(name: name, account: account, by: sender.info.name))
            guard targetNode == nodeID, let other = members[target], other.isLocal, other.room == room else {
                return []
            }
            return removeByHost(target, hostName: sender.info.name)
        case .readmit(let name):
            rooms[room]?.removed.removeAll { $0.name == name || $0.account == name }
            return []
        case .hand:
            return []
        }
    }

    /// The host (`hostName`) removes `target`, a member of this node: told so, its connection closed, and gone from
    /// the room.
    mutating func removeByHost(_ target: UInt32, hostName: String) -> [RelayAction] {
        guard let other = members[target] else { return [] }
        let removal = Removal(by: hostName, message: "\(hostName), the host, removed you from \(other.room)")
        return closeAndRemove(target, telling: .removed(removal), reason: .removed)
    }

    /// This node's member `id` is told `message`, its connection closed, and it leaves its room for `reason`.
    mutating func closeAndRemove(_ id: UInt32, telling message: ServerMessage, reason: LeaveReason) -> [RelayAction] {
        var actions: [RelayAction] = []
        if let connection = members[id]?.connection {
            connections[connection]?.member = nil
            actions += [.send(message, to: [connection]), .close(connection)]
        }
        return actions + remove(id, reason: reason)
    }
}
