import ParleySecurity
import ParleyStore
import ParleyWebRTC
import ParleyWire

/// The relay's signaling state: rooms, members, credentials, liveness. A value type changed by one method per input;
/// each returns the actions for the shell (NIO handlers) to carry out.
public struct RelayState: Sendable {
    /// One member as the relay knows it.
    public struct Member: Sendable, Equatable {
        public var info: MemberInfo
        public var room: String
        /// The signaling connection, nil once it closed without a goodbye (the member lingers until timeout).
        public var connection: ConnectionID?
        /// The per-join UDP credential.
        public var credential: BindToken
        /// When the member last said anything on signaling.
        public var lastSeen: Duration
        /// The video bitrate its profile sends (kbit/s), as declared at join; nil if not declared.
        public var videoKbps: Int? = nil
        /// Its account keeps the room out of its presence.
        public var hidesRoom = false
        /// The video layers it declared at join, largest first; nil for one of unknown size.
        public var videoLayers: [VideoLayerSize]? = nil
        /// It asked for the count of what is sent to it (`ForwardedCount`), for its downlink estimate.
        public var downlinkCounts = false
        /// The references of its last chat lines (at most `recentChatReferences`, each at most 32 bytes): a line
        /// sent again after a reconnect that had got through is echoed to it, not said twice.
        public var recentChatRefs: [String] = []
        /// Typing messages for a shared terminal in the current second, and when that second began.
        public var typingCount = 0
        public var typingSince: Duration = .zero
        /// When it joined the room (a resume keeps it).
        public var joinedAt: Duration = .zero
        /// SHA-256 of its media credential, kept for the room's host record (`RoomHostRecord`).
        public var credentialDigest = ""
        /// The node it joined through, when that is another node of the cluster (nil: here).
        public var node: String? = nil
        /// Its id on that node.
        public var originID: UInt32? = nil
        /// When it claimed the room's host role (ms since 1970), in a room spanning nodes; nil if it never did.
        public var hostSince: Int64? = nil
        /// When it joined (ms since 1970), as its node says.
        public var joinedAtWall: Int64 = 0
        /// The credential digest of its earlier self, when it came back through a node other than its first (its
        /// node died or drained): a late entry of that earlier self is known as the same member.
        public var replacesDigest: String? = nil
        /// What its browser offered, when it joined from a browser (its media goes over WebRTC, not a bind).
        public var browserOffer: BrowserOffer? = nil

        /// Whether it joined through this node.
        public var isLocal: Bool { node == nil }
    }

    /// One room: members in join order, the chat sequence, and who may do what.
    public struct Room: Sendable, Equatable {
        public var name: String
        public var members: [UInt32] = []
        public var chatSequence: UInt64 = 0
        /// The password verifier (`RoomPassword.verifier`), nil for a room anyone may join.
        public var verifier: [UInt8]?
        /// The host: the first member, then the next in join order.
        public var host: UInt32?
        /// Whether audience members may start broadcasting on their own.
        public var openStage = false
        /// The end-to-end encryption mode its members use, nil for none.
        public var encryption: String?
        /// Members who may broadcast without asking (joined as broadcasters, or allowed by the host).
        public var mayBroadcast: Set<UInt32> = []
        /// Who the host removed, by lowercased display name and by account: refused until readmitted, for as long
        /// as the room lives (at most `removedLimit`; the oldest removal is forgotten first).
        public var removed: [RemovedMember] = []
        /// Removals a room remembers.
        public static let removedLimit = 256
        /// Since when the room waits for the host it had before the relay restarted (nobody hosts meanwhile).
        public var awaitingHostSince: Duration?
        /// Whether the rooms file forbids recording (the host cannot lift it).
        public var recordingForbiddenByOperator = false
        /// Who forbade recording with `/norecord` (the host's name), nil while the host allows it.
        public var recordingForbiddenBy: String?
        /// Members recording the call, in the order they started.
        public var recorders: [UInt32] = []

        /// Whether members may record the room.
        public var recordingAllowed: Bool { !recordingForbiddenByOperator && recordingForbiddenBy == nil }

        /// Remembers a removal, replacing an earlier one of the same name or account; past `removedLimit` the
        /// oldest is forgotten.
        mutating func remember(_ removal: RemovedMember) {
            removed.removeAll { $0.name == removal.name || ($0.account != nil && $0.account == removal.account) }
            if removed.count >= Self.removedLimit { removed.removeFirst() }
            removed.append(removal)
        }

        /// The removal a join by `name` (and `account`, when verified) falls under, if any.
        public func removal(name: String, account: String?) -> RemovedMember? {
            removed.first { entry in
                entry.name == name.lowercased() || (account != nil && entry.account == account?.lowercased())
            }
        }
        /// Whether its chat may be kept: only a room anyone may join and the relay can read.
        public var isOpen: Bool { verifier == nil && encryption == nil }
    }

    /// A member the host removed from a room: the name and account to refuse, and who removed them.
    public struct RemovedMember: Sendable, Equatable {
        /// The display name, lowercased.
        public var name: String
        /// The verified account, lowercased; nil for a guest.
        public var account: String?
        /// The host who removed them (display name).
        public var by: String
    }

    struct Connection {
        var member: UInt32?
        /// Where it comes from (an IP address), for the per-address connection limit.
        var source: String?
        /// When it opened, for the join timeout.
        var openedAt: Duration = .zero
        /// True once it joined a room (a member who later leaves is not timed out for not joining).
        var everJoined = false
        var tokens: Double
        var lastRefill: Duration
        var lastRateLimitNotice: Duration?
        /// The challenge handed out for the next password proof (one use).
        var challenge: [UInt8]?
        /// Wrong password proofs so far; the connection closes at `maximumFailedProofs`.
        var failedProofs = 0
        /// A join waiting for its account to be checked.
        var pendingJoin: JoinRequest?
    }

    /// Wrong password proofs a connection may send before the relay closes it.
    public static let maximumFailedProofs = 5

    /// Limits in force.
    public let limits: SignalingLimits
    /// The relay's UDP port, handed to members in `joined`.
    public let udpPort: Int
    let roomRule: NameRule
    let nameRule: NameRule
    var random: any RandomNumberGenerator & Sendable
    let wallClock: @Sendable () -> Int64

    /// Rooms by name; a room exists while it has members.
    public internal(set) var rooms: [String: Room] = [:]
    /// Members by id.
    public internal(set) var members: [UInt32: Member] = [:]
    var connections: [ConnectionID: Connection] = [:]
    /// Open connections per source address, kept beside `connections` so the per-address limit costs one lookup.
    var connectionsFromSource: [String: Int] = [:]
    var nextMemberID: UInt32 = 1
    var ssrcs = SSRCAllocator()
    /// Rooms set up by the relay's operator (the rooms file): their password and stage apply whenever they are used.
    public var configuredRooms: [String: ConfiguredRoom]
    /// What was refused so far.
    public var counters = RelayCounters()
    /// Whether the relay keeps open rooms' chat (it has a message store).
    public var keepsChat = false
    /// The relay is a node of a cluster that places rooms: a join for a room not open here asks where it lives.
    public var placesRooms = false
    /// Rooms span the cluster's nodes (`--placement spread`): members joining, changing and leaving here are
    /// published for the other nodes (`.publish`), and theirs are taken in (`remoteMember`).
    public var spansNodes = false
    /// This node's id in the cluster (the tie-break between equal host claims).
    public var nodeID = ""
    /// Members of other nodes by (node, their id there), to their id here.
    var remoteIDs: [RemoteMemberKey: UInt32] = [:]
    /// The node drains: it takes no new members (`drain(to:)`).
    public internal(set) var draining = false
    /// Where a join reaching a draining node is sent.
    var drainTarget: (node: String, server: String)?
    /// Hosts from before a restart, by room, until they come back or `hostReturnWindow` passes.
    public internal(set) var returningHosts: [String: RoomHostRecord] = [:]

    /// An empty relay. `random` makes credentials and SSRCs and `wallClock` (milliseconds since the Unix epoch)
    /// stamps chat lines; inject fixed ones in tests.
    public init(
        limits: SignalingLimits = SignalingLimits(), udpPort: Int, roomRule: @escaping NameRule,
        nameRule: @escaping NameRule, random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        configuredRooms: [String: ConfiguredRoom] = [:], wallClock: @escaping @Sendable () -> Int64
    ) {
        self.configuredRooms = configuredRooms
        self.wallClock = wallClock
        self.limits = limits
        self.udpPort = udpPort
        self.roomRule = roomRule
        self.nameRule = nameRule
        self.random = random
    }

    /// The member behind a connection, if it joined.
    public func member(on connection: ConnectionID) -> Member? {
        connections[connection]?.member.flatMap { members[$0] }
    }

    /// A new WebSocket connection opened from `source` (an IP address, nil when unknown). Past the per-address
    /// limit it is told why and closed.
    @discardableResult
    public mutating func connected(_ connection: ConnectionID, from source: String? = nil, now: Duration)
        -> [RelayAction]
    {
        if let source, connectionsFromSource[source, default: 0] >= limits.connectionsPerAddress {
            counters.limitsReached += 1
            return [
                .send(
                    .error(
                        SignalingError(
                            .limitReached,
                            """
                            too many connections from \(source): \(limits.connectionsPerAddress) is the limit per address \
                            (--max-connections-per-address)
                            """)), to: [connection]),
                .close(connection),
            ]
        }
        connections[connection] = Connection(
            member: nil, source: source, openedAt: now, tokens: limits.burst,
            lastRefill: now)
        if let source { connectionsFromSource[source, default: 0] += 1 }
        return []
    }

    /// Forgets a connection, and its place in its source's count.
    mutating func dropConnection(_ connection: ConnectionID) -> Connection? {
        guard let state = connections.removeValue(forKey: connection) else { return nil }
        if let source = state.source {
            connectionsFromSource[source, default: 1] -= 1
            if connectionsFromSource[source] == 0 { connectionsFromSource[source] = nil }
        }
        return state
    }

    /// A connection closed. A member who said goodbye is already gone; one who did not lingers until the liveness
    /// timeout (so a client that comes back quickly could resume) and is then reported as `timeout`.
    public mutating func disconnected(_ connection: ConnectionID, now: Duration) -> [RelayAction] {
        guard let state = dropConnection(connection), let id = state.member else { return [] }
        if members[id]?.connection == connection { members[id]?.connection = nil }
        return []
    }

    /// A frame that is not a text message (binary) or exceeded the size cap arrived.
    public mutating func refusedFrame(
        _ connection: ConnectionID, reason: String,
        code: SignalingErrorCode = .badJSON
    ) -> [RelayAction] {
        counters.refusedFrames += 1
        return [.send(.error(SignalingError(code, reason)), to: [connection])]
    }

    /// One text message arrived on a connection.
    public mutating func received(_ text: String, on connection: ConnectionID, now: Duration) -> [RelayAction] {
        guard var state = connections[connection] else { return [] }
        // Token bucket: floods are dropped (and counted) before any parsing work.
        let elapsed = (now - state.lastRefill).inSeconds
        state.tokens = min(limits.burst, state.tokens + max(0, elapsed) * limits.messagesPerSecond)
        state.lastRefill = now
        guard state.tokens >= 1 else {
            counters.rateLimited += 1
            var actions: [RelayAction] = []
            if state.lastRateLimitNotice.map({ now - $0 >= .seconds(1) }) ?? true {
                state.lastRateLimitNotice = now
                actions.append(
                    .send(
                        .error(
                            SignalingError(
                                .rateLimited,
                                "too many messages; the limit is \(Int(limits.messagesPerSecond)) per second"
                            )), to: [connection]))
            }
            connections[connection] = state
            return actions
        }
        state.tokens -= 1
        connections[connection] = state

        guard text.utf8.count <= limits.messageBytes else {
            counters.signalingErrors += 1
            return [
                .send(
                    .error(
                        SignalingError(
                            .tooLarge,
                            """
                            message is \(text.utf8.count) bytes; this relay's limit is \(limits.messageBytes) (--max-message-bytes)
                            """)), to: [connection])
            ]
        }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(text)
        } catch {
            counters.signalingErrors += 1
            return [.send(.error(error), to: [connection])]
        }
        if let id = state.member { members[id]?.lastSeen = now }
        return handle(message, on: connection, member: state.member, now: now)
    }

    /// Removes members whose signaling has been silent past the liveness timeout, and closes connections that
    /// never joined within the join timeout.
    public mutating func tick(now: Duration) -> [RelayAction] {
        let expired = members.values
            .filter { $0.isLocal && now - $0.lastSeen > limits.livenessTimeout }
            .sorted { $0.info.id < $1.info.id }
        var actions: [RelayAction] = []
        let idle = connections.filter { !$0.value.everJoined && now - $0.value.openedAt > limits.joinTimeout }
        // At most `joinTimeoutClosesPerTick` a tick, oldest first: thousands of idle connections opened together
        // (a flood) would otherwise all be closed in one turn of the event loop and stall the media behind it.
        for connection in idle.keys.sorted(by: { $0.rawValue < $1.rawValue }).prefix(Self.joinTimeoutClosesPerTick) {
            counters.joinTimeouts += 1
            _ = dropConnection(connection)
            actions += [
                .send(
                    .error(
                        SignalingError(
                            .limitReached,
                            "no join within \(limits.joinTimeout.spokenSeconds) of connecting (the join timeout)")),
                    to: [connection]),
                .close(connection),
            ]
        }
        for member in expired {
            if let connection = member.connection {
                connections[connection]?.member = nil
                actions.append(.close(connection))
            }
            actions += remove(member.info.id, reason: .timeout)
        }
        return actions + giveUpAwaitedHosts(now: now)
    }

    /// Connections closed for the join timeout in one tick (4 ticks a second).
    public static let joinTimeoutClosesPerTick = 250

    /// Drops every member (relay shutting down) and says so to each. This node's members go first: the other nodes'
    /// members, who stay in their calls through their own nodes, go once nobody here is left to be told they left.
    public mutating func shutDown() -> [RelayAction] {
        var actions: [RelayAction] = []
        let ids = members.keys.sorted()
        for id in ids.filter({ members[$0]?.isLocal == true }) + ids.filter({ members[$0]?.isLocal == false }) {
            if let connection = members[id]?.connection { actions.append(.close(connection)) }
            actions += remove(id, reason: .dropped)
        }
        return actions
    }

    /// Checks a UDP bind request: the member exists and the token matches (in constant time). Counts failures.
    public mutating func verifyBind(_ request: BindRequest) -> BindStatus {
        guard let member = members[request.memberID] else {
            counters.bindFailures += 1
            return .unknownMember
        }
        guard member.credential.matches(request.token), request.ssrc == member.info.ssrcs.audio else {
            counters.bindFailures += 1
            return .wrongToken
        }
        return .bound
    }

}
