import ParleySecurity
import ParleyWire

// Why: the host role used to go to whoever joined a room first. After a relay restart every member rejoins afresh,
// so the role went to whoever reconnected first, and the real host could no longer /allow or /remove. The relay now
// keeps, per room, who hosts it (a digest of the host's media credential, which its client presents as `resume`
// when it comes back, and its verified account) and gives the role back to that member after a restart.

/// Who hosts a room, as kept across relay restarts.
public struct RoomHostRecord: Codable, Sendable, Equatable {
    /// SHA-256 (hex) of the host's media credential (`CredentialDigest`).
    public var credentialDigest: String
    /// The host's verified account, lowercased; nil for a guest.
    public var account: String?

    /// A record.
    public init(credentialDigest: String, account: String?) {
        self.credentialDigest = credentialDigest
        self.account = account
    }

    /// Whether a join presenting `resume` (its old membership) as `account` is this host coming back.
    func matches(resume: ResumeToken?, account: String?) -> Bool {
        if let resume, CredentialDigest.hex(of: resume.credential) == credentialDigest { return true }
        if let kept = self.account, let account, kept == account.lowercased() { return true }
        return false
    }
}

extension RelayState {
    /// How long a room waits, after a restart, for its host to come back before the first member present takes
    /// the role.
    public static let hostReturnWindow = Duration.seconds(30)

    /// Every room's host as it should be kept: the hosts of the rooms open now, and the hosts awaited since the
    /// restart who have not come back yet.
    public var roomHosts: [String: RoomHostRecord] {
        var records = returningHosts
        for (name, room) in rooms {
            guard let host = room.host, let member = members[host] else { continue }
            records[name] = RoomHostRecord(
                credentialDigest: member.credentialDigest, account: member.info.account?.lowercased())
        }
        return records
    }

    /// Hosts kept by the relay before its restart, awaited in their rooms (at most `limits.rooms` are taken).
    public mutating func awaitHosts(_ records: [String: RoomHostRecord]) {
        returningHosts = Dictionary(
            uniqueKeysWithValues: records.sorted { $0.key < $1.key }.prefix(limits.rooms).map { ($0.key, $0.value) })
    }

    /// Decides the host when `id` has just joined `room`: the awaited host takes the role back (the others are
    /// told); while a host is awaited nobody else gets it; otherwise the first member hosts, and so does a host
    /// that moved here from another node of the cluster (its earlier self left without handing the role on; the
    /// others are told).
    mutating func settleHost(
        joined id: UInt32, room: String, resume: ResumeToken?, account: String?, others: [ConnectionID], now: Duration
    ) -> [RelayAction] {
        // A shared terminal never hosts: it cannot answer a hand raised or remove anyone.
        guard members[id]?.info.isTerminal != true else { return [] }
        guard let awaited = returningHosts[room] else {
            guard rooms[room]?.host == nil else { return [] }
            makeHost(id, of: room)
            return others.isEmpty ? [] : [.send(.host(MemberRef(id: id)), to: others)]
        }
        guard awaited.matches(resume: resume, account: account) else {
            if rooms[room]?.awaitingHostSince == nil { rooms[room]?.awaitingHostSince = now }
            return []
        }
        returningHosts[room] = nil
        makeHost(id, of: room)
        rooms[room]?.awaitingHostSince = nil
        return others.isEmpty ? [] : [.send(.host(MemberRef(id: id)), to: others)]
    }

    /// Rooms whose awaited host did not come back within `hostReturnWindow`: the first member present hosts. A room
    /// nobody came back to in that window after the start (`now` counts from it) is forgotten, so it is neither
    /// awaited nor written to the hosts file again.
    mutating func giveUpAwaitedHosts(now: Duration) -> [RelayAction] {
        if now >= Self.hostReturnWindow, !returningHosts.isEmpty {
            returningHosts = returningHosts.filter { rooms[$0.key] != nil }
        }
        var actions: [RelayAction] = []
        for (name, room) in rooms {
            guard let since = room.awaitingHostSince, now - since >= Self.hostReturnWindow else { continue }
            rooms[name]?.awaitingHostSince = nil
            returningHosts[name] = nil
            if spansNodes {
                actions += settleClusterHost(of: name, now: now)
                continue
            }
            guard let first = room.members.first(where: { members[$0]?.isLocal == true }) else { continue }
            makeHost(first, of: name)
            actions.append(.send(.host(MemberRef(id: first)), to: connections(in: name, except: nil)))
        }
        return actions
    }
}
