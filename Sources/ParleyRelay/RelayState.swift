import ParleySecurity
import ParleyWire

/// Identifies one signaling connection (one WebSocket) for the lifetime of the relay.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The raw number, counting up from 1.
    public let rawValue: UInt64

    /// A connection id.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "c\(rawValue)" }
}

/// What the relay shell must do after the state changed. The state never touches a socket itself.
public enum RelayAction: Equatable, Sendable {
    /// Send one message to each of these connections (encoded once).
    case send(ServerMessage, to: [ConnectionID])
    /// Close this connection (after anything sent before it).
    case close(ConnectionID)
    /// A member left the room: forget its media routes.
    case memberRemoved(id: UInt32, room: String)
    /// A member joined a room: it may now bind its UDP address.
    case memberAdded(id: UInt32, room: String)
    /// A member switched role (audience members may not send media).
    case roleChanged(id: UInt32, role: MemberRole)
    /// Check an account a join claims: does `signature` verify `message` with the account's keys? The answer goes
    /// back through `accountChecked`.
    case checkAccount(ConnectionID, account: String, message: [UInt8], signature: [UInt8])
    /// A plain chat line said in a room whose chat is kept: store it in the room's channel. `sender` is the account,
    /// or a guest's display name followed by " (guest)".
    case roomChat(room: String, id: String, sender: String, text: String, time: Int64)
    /// Someone joined (or left) a call: the account's presence, and the room's kept history when `kept`. `connection`
    /// (on a join) is where the history before the join goes.
    case callActivity(CallActivity)
    /// A member reported the size it draws each peer at: its simulcast layers may change.
    case tiles(id: UInt32, TileReport)
}

/// Checks a room or display name; returns the cleaned name or a sentence saying what is wrong.
public typealias NameRule = @Sendable (String) -> Result<String, NameRejection>

/// Someone joining or leaving a call, as the shell tells presence and the room's channel.
public struct CallActivity: Sendable, Equatable {
    public var room: String
    public var member: MemberInfo
    /// Joined (true) or left.
    public var joined: Bool
    /// Members in the call after it.
    public var members: Int
    /// The account hides which room it is in.
    public var hidesRoom: Bool
    /// The room's chat is kept (an open room on a relay with a store).
    public var kept: Bool
    /// The joiner's connection, for the history before it joined.
    public var connection: ConnectionID?
    /// The name the room's channel keeps for the member: its account, or its display name marked as a guest's.
    public var sender: String { Self.sender(name: member.name, account: member.account) }

    /// The kept name for a display name and verified account.
    public static func sender(name: String, account: String?) -> String { account ?? "\(name) (guest)" }
}

/// What the relay found when it checked the account a join claimed.
public enum AccountCheck: Sendable, Equatable {
    /// The signature verified with the account's keys: the member is shown as that account.
    case verified(String)
    /// The relay could not check (no such account here, no accounts at all): the member joins as a guest, told why.
    case unverified(String)
    /// The signature does not verify: whoever sent it is not the account, and the join is refused.
    case refused(String)
}

/// A rejected name and why.
public struct NameRejection: Error, Equatable, Sendable {
    /// What to tell the user.
    public var message: String

    /// A rejection with its message.
    public init(_ message: String) { self.message = message }
}

/// Tunable limits of the relay's signaling.
public struct SignalingLimits: Sendable, Equatable {
    /// Seconds of signaling silence after which a member is removed with reason `timeout`.
    public var livenessTimeout: Duration = .seconds(10)
    /// Messages a connection may send in a burst.
    public var burst: Double = 40
    /// Messages per second a connection may sustain.
    public var messagesPerSecond: Double = 20
    /// A WebSocket that has not joined a room this long after it opened is closed (`--join-timeout`).
    public var joinTimeout: Duration = .seconds(10)
    /// Open signaling connections one source address may hold (`--max-connections-per-address`).
    public var connectionsPerAddress = 16
    /// TCP connections the relay holds in all, joined or not (`--max-connections`; `parley serve` lowers it to
    /// what its file descriptors allow, see ``DescriptorBudget``). Past it a new connection is closed at once.
    public var connections = 100_000
    /// Rooms the relay holds at once (`--max-rooms`).
    public var rooms = 1000
    /// Members one room may hold (`--max-members`).
    public var membersPerRoom = 50
    /// Bytes one signaling message may have (`--max-message-bytes`; at most the protocol's 16 KiB).
    public var messageBytes = maxSignalingMessageBytes
    /// Characters one chat line may have (`--max-chat-characters`; at most the protocol's 2000; a sealed line may
    /// carry the same text with its encryption overhead).
    public var chatCharacters = maxChatCharacters

    /// Default limits.
    public init(livenessTimeout: Duration = .seconds(10), burst: Double = 40, messagesPerSecond: Double = 20) {
        self.livenessTimeout = livenessTimeout
        self.burst = burst
        self.messagesPerSecond = messagesPerSecond
    }
}

/// Counts of what the relay refused, for logs, tests and `parley serve`'s exit summary.
public struct RelayCounters: Sendable, Equatable {
    /// Signaling messages that failed to parse or were not allowed.
    public var signalingErrors = 0
    /// Signaling messages dropped by the rate limit.
    public var rateLimited = 0
    /// Signaling frames refused for size or kind (binary, oversized).
    public var refusedFrames = 0
    /// RTP/RTCP packets forwarded (one per destination).
    public var packetsForwarded = 0
    /// RTP/RTCP packets dropped: unknown or unproven source, garbage, audience sending media.
    public var packetsDropped = 0
    /// UDP bind attempts with a wrong credential or unknown member.
    public var bindFailures = 0
    /// Keyframe requests swallowed by the 500 ms throttle.
    public var keyframeRequestsThrottled = 0
    /// NACKed packets answered from the relay's retransmission buffer.
    public var retransmissionsServed = 0
    /// NACKs passed on to a stream's sender for packets the relay never got (lost on the sender's uplink).
    public var nacksForwardedToSenders = 0
    /// RTCP compounds dropped because a packet in them named another member's SSRC as its sender.
    public var forgedFeedback = 0
    /// NACKs, PLIs and report blocks dropped because they were about a stream of another room.
    public var crossRoomFeedback = 0
    /// VP8 keyframes dropped because they declared a picture beyond the largest profile (`VP8Limits`).
    public var oversizedKeyframes = 0
    /// Packets dropped because they used the reserved fourth SSRC of their member's block.
    public var unallottedSSRC = 0
    /// Streams held in the retransmission buffer now (none outlives its member).
    public var retainedStreams = 0
    /// Packets held for retransmission now (at most about the window plus a second of each stream).
    public var retainedPackets = 0
    /// Packets released from the retransmission buffer for being past its window, since the relay started.
    public var releasedPackets = 0
    /// Connections closed for not joining within the join timeout.
    public var joinTimeouts = 0
    /// Connections, joins and media refused because a limit (connections per address, rooms, members per room,
    /// a member's media rate) was reached.
    public var limitsReached = 0
    /// Connections refused because the relay held its most connections (`--max-connections`).
    public var refusedFull = 0

    /// All zero.
    public init() {}
}

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
        /// Whether its chat may be kept: only a room anyone may join and the relay can read.
        public var isOpen: Bool { verifier == nil && encryption == nil }
    }

    private struct Connection {
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
    private let roomRule: NameRule
    private let nameRule: NameRule
    private var random: any RandomNumberGenerator & Sendable
    private let wallClock: @Sendable () -> Int64

    /// Rooms by name; a room exists while it has members.
    public private(set) var rooms: [String: Room] = [:]
    /// Members by id.
    public private(set) var members: [UInt32: Member] = [:]
    private var connections: [ConnectionID: Connection] = [:]
    /// Open connections per source address, kept beside `connections` so the per-address limit costs one lookup.
    private var connectionsFromSource: [String: Int] = [:]
    private var nextMemberID: UInt32 = 1
    private var ssrcs = SSRCAllocator()
    /// Rooms set up by the relay's operator (the rooms file): their password and stage apply whenever they are used.
    public let configuredRooms: [String: ConfiguredRoom]
    /// What was refused so far.
    public var counters = RelayCounters()
    /// Whether the relay keeps open rooms' chat (it has a message store).
    public var keepsChat = false

    /// An empty relay. `random` makes credentials and SSRCs and `wallClock` (milliseconds since the Unix epoch)
    /// stamps chat lines; inject fixed ones in tests.
    public init(limits: SignalingLimits = SignalingLimits(), udpPort: Int, roomRule: @escaping NameRule,
                nameRule: @escaping NameRule, random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
                configuredRooms: [String: ConfiguredRoom] = [:], wallClock: @escaping @Sendable () -> Int64)
    {
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
    public mutating func connected(_ connection: ConnectionID, from source: String? = nil, now: Duration) -> [RelayAction] {
        if let source, connectionsFromSource[source, default: 0] >= limits.connectionsPerAddress {
            counters.limitsReached += 1
            return [
                .send(.error(SignalingError(.limitReached, """
                    too many connections from \(source): \(limits.connectionsPerAddress) is the limit per address \
                    (--max-connections-per-address)
                    """)), to: [connection]),
                .close(connection),
            ]
        }
        connections[connection] = Connection(member: nil, source: source, openedAt: now, tokens: limits.burst,
                                             lastRefill: now)
        if let source { connectionsFromSource[source, default: 0] += 1 }
        return []
    }

    /// Forgets a connection, and its place in its source's count.
    private mutating func dropConnection(_ connection: ConnectionID) -> Connection? {
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
    public mutating func refusedFrame(_ connection: ConnectionID, reason: String,
                                      code: SignalingErrorCode = .badJSON) -> [RelayAction] {
        counters.refusedFrames += 1
        return [.send(.error(SignalingError(code, reason)), to: [connection])]
    }

    /// One text message arrived on a connection.
    public mutating func received(_ text: String, on connection: ConnectionID, now: Duration) -> [RelayAction] {
        guard var state = connections[connection] else { return [] }
        // Token bucket: floods are dropped (and counted) before any parsing work.
        let elapsed = Double((now - state.lastRefill).components.attoseconds) / 1e18
            + Double((now - state.lastRefill).components.seconds)
        state.tokens = min(limits.burst, state.tokens + max(0, elapsed) * limits.messagesPerSecond)
        state.lastRefill = now
        guard state.tokens >= 1 else {
            counters.rateLimited += 1
            var actions: [RelayAction] = []
            if state.lastRateLimitNotice.map({ now - $0 >= .seconds(1) }) ?? true {
                state.lastRateLimitNotice = now
                actions.append(.send(.error(SignalingError(
                    .rateLimited, "too many messages; the limit is \(Int(limits.messagesPerSecond)) per second"
                )), to: [connection]))
            }
            connections[connection] = state
            return actions
        }
        state.tokens -= 1
        connections[connection] = state

        guard text.utf8.count <= limits.messageBytes else {
            counters.signalingErrors += 1
            return [.send(.error(SignalingError(.tooLarge, """
                message is \(text.utf8.count) bytes; this relay's limit is \(limits.messageBytes) (--max-message-bytes)
                """)), to: [connection])]
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
            .filter { now - $0.lastSeen > limits.livenessTimeout }
            .sorted { $0.info.id < $1.info.id }
        var actions: [RelayAction] = []
        let idle = connections.filter { !$0.value.everJoined && now - $0.value.openedAt > limits.joinTimeout }
        // At most `joinTimeoutClosesPerTick` a tick, oldest first: thousands of idle connections opened together
        // (a flood) would otherwise all be closed in one turn of the event loop and stall the media behind it.
        for connection in idle.keys.sorted(by: { $0.rawValue < $1.rawValue }).prefix(Self.joinTimeoutClosesPerTick) {
            counters.joinTimeouts += 1
            _ = dropConnection(connection)
            actions += [
                .send(.error(SignalingError(
                    .limitReached, "no join within \(limits.joinTimeout.spokenSeconds) of connecting (the join timeout)")),
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
        return actions
    }

    /// Connections closed for the join timeout in one tick (4 ticks a second).
    public static let joinTimeoutClosesPerTick = 250

    /// Drops every member (relay shutting down) and says so to each.
    public mutating func shutDown() -> [RelayAction] {
        var actions: [RelayAction] = []
        for id in members.keys.sorted() {
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

    // MARK: - Messages

    private mutating func handle(_ message: ClientMessage, on connection: ConnectionID, member id: UInt32?,
                                 now: Duration) -> [RelayAction] {
        switch message {
        case .join(let request):
            guard id == nil else {
                counters.signalingErrors += 1
                return [.send(.error(SignalingError(.alreadyJoined, "this connection already joined a room")),
                              to: [connection])]
            }
            guard connections[connection]?.pendingJoin == nil else {
                counters.signalingErrors += 1
                return refuse(.alreadyJoined, "a join is being checked on this connection; wait for its answer",
                              connection)
            }
            if let claim = request.account { return claimAccount(claim, request: request, on: connection) }
            return join(request, on: connection, now: now)
        case .ping(let token):
            return [.send(.pong(token), to: [connection])]
        case .challenge:
            var nonce = [UInt8](repeating: 0, count: 32)
            for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &random) }
            connections[connection]?.challenge = nonce
            return [.send(.challenge(AccessChallenge(nonce: Hex.encode(nonce))), to: [connection])]
        default:
            break
        }
        guard let id, let member = members[id] else {
            counters.signalingErrors += 1
            return [.send(.error(SignalingError(.notJoined, "send \"join\" before \"\(message.type)\"")),
                          to: [connection])]
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
            return [.send(.mute(MemberMute(id: id, audio: info.audioMuted, video: info.videoMuted)),
                          to: connections(in: member.room, except: id))]
        case .chat(let chat):
            // A sealed line's text is unreadable here; its base64 length bounds it (4/3 of the bytes, plus the
            // SFrame header and tag, for 4-byte characters at most).
            let sealedLimit = (limits.chatCharacters * 4 + 64) * 4 / 3 + 4
            guard chat.text.count <= limits.chatCharacters, (chat.sealed?.count ?? 0) <= sealedLimit else {
                counters.signalingErrors += 1
                let length = chat.sealed.map { "\($0.count) sealed characters (limit \(sealedLimit))" }
                    ?? "\(chat.text.count) characters"
                return [.send(.error(SignalingError(.badField, """
                    chat line has \(length); this relay's limit is \(limits.chatCharacters) characters \
                    (--max-chat-characters)
                    """)), to: [connection])]
            }
            rooms[member.room]?.chatSequence += 1
            let sequence = rooms[member.room]?.chatSequence ?? 0
            var delivery = ChatDelivery(seq: sequence, from: id, name: member.info.label, text: chat.text,
                                        time: wallClock(), sealed: chat.sealed)
            var actions: [RelayAction] = [.send(.chat(delivery), to: connections(in: member.room, except: id))]
            delivery.ref = chat.ref
            actions.append(.send(.chat(delivery), to: [connection]))
            if keepsChat, chat.sealed == nil, rooms[member.room]?.isOpen == true {
                actions.append(.roomChat(
                    room: member.room, id: "call-\(id)-\(sequence)-\(delivery.time)",
                    sender: CallActivity.sender(name: member.info.name, account: member.info.account),
                    text: chat.text, time: delivery.time))
            }
            return actions
        case .stats(let stats):
            return [.send(.stats(MemberStats(id: id, stats: stats)), to: connections(in: member.room, except: id))]
        case .tiles(let report):
            return [.tiles(id: id, report)]
        case .role(let request):
            if request.role == .broadcaster, member.info.role == .audience, let room = rooms[member.room],
               !(room.openStage || room.host == id || room.mayBroadcast.contains(id)) {
                // Nobody promotes themselves: the host is asked, and decides with `allow`.
                counters.signalingErrors += 1
                let hostName = room.host.flatMap { members[$0]?.info.name } ?? "the host"
                var actions: [RelayAction] = [.send(.error(SignalingError(
                    .notAllowed, "only the host can let you broadcast in \(member.room); \(hostName) has been asked"
                )), to: [connection])]
                if let host = room.host, let hostConnection = members[host]?.connection {
                    actions.append(.send(.hand(MemberRef(id: id)), to: [hostConnection]))
                }
                return actions
            }
            return setRole(request.role, of: id)
        case .allow(let target):
            guard let room = rooms[member.room], room.host == id else { return notHost(connection, "allow") }
            guard let other = members[target.id], other.room == member.room else {
                return unknownMember(target.id, in: member.room, connection)
            }
            rooms[member.room]?.mayBroadcast.insert(target.id)
            return other.info.role == .audience ? setRole(.broadcaster, of: target.id) : []
        case .remove(let target):
            guard let room = rooms[member.room], room.host == id else { return notHost(connection, "remove") }
            guard target.id != id, let other = members[target.id], other.room == member.room else {
                return unknownMember(target.id, in: member.room, connection)
            }
            var actions: [RelayAction] = []
            if let targetConnection = other.connection {
                connections[targetConnection]?.member = nil
                actions.append(.send(.removed(Removal(
                    by: member.info.name, message: "\(member.info.name), the host, removed you from \(member.room)")),
                                     to: [targetConnection]))
                actions.append(.close(targetConnection))
            }
            return actions + remove(target.id, reason: .removed)
        }
    }

    private mutating func setRole(_ role: MemberRole, of id: UInt32) -> [RelayAction] {
        guard let member = members[id] else { return [] }
        members[id]?.info.role = role
        if role == .broadcaster { rooms[member.room]?.mayBroadcast.insert(id) }
        return [.roleChanged(id: id, role: role), .send(.role(MemberRoleChange(id: id, role: role)),
                                                         to: connections(in: member.room, except: nil))]
    }

    private mutating func notHost(_ connection: ConnectionID, _ what: String) -> [RelayAction] {
        counters.signalingErrors += 1
        return [.send(.error(SignalingError(.notAllowed, "only the room's host can \(what) members")), to: [connection])]
    }

    private mutating func unknownMember(_ id: UInt32, in room: String, _ connection: ConnectionID) -> [RelayAction] {
        counters.signalingErrors += 1
        return [.send(.error(SignalingError(.badField, "member \(id) is not in \(room)")), to: [connection])]
    }

    private func refuse(_ code: SignalingErrorCode, _ message: String, _ connection: ConnectionID) -> [RelayAction] {
        [.send(.error(SignalingError(code, message)), to: [connection])]
    }

    /// Checks the password, the encryption mode and the name against the room; nil when the join may go ahead,
    /// otherwise the refusal. A new room takes the joiner's verifier and mode.
    /// Why `room` cannot take another member (the relay's room limit for a new room, the room's member limit), or nil.
    private func roomLimit(_ room: String) -> String? {
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

    private mutating func admit(_ request: JoinRequest, room: String, name: String, on connection: ConnectionID)
        -> (actions: [RelayAction], newRoom: Room?)
    {
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
                    actions = refuse(.wrongPassword, "wrong password for \(room) \(Self.maximumFailedProofs) times; "
                                        + "closing the connection", connection) + [.close(connection)]
                }
                return (actions, nil)
            }
        } else if existing == nil, request.proof != nil {
            // The joiner has a password for a room that does not exist yet: it becomes the room's password.
            guard let text = request.verifier else {
                counters.signalingErrors += 1
                return (refuse(.passwordSetup, "\(room) is new: send the password verifier to create it", connection),
                        nil)
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
                let message = switch (existing.encryption, request.encryption) {
                case (let mode?, nil): "\(room) is end-to-end encrypted (\(mode)): join with the room's secret"
                case (nil, _): "\(room) is not end-to-end encrypted: join without a secret"
                case (let mode?, let asked?): "\(room) is end-to-end encrypted with \(mode), not \(asked)"
                }
                return (refuse(.encryptionMismatch, message, connection), nil)
            }
            let taken = existing.members.contains { members[$0]?.info.name.lowercased() == name.lowercased() }
            guard !taken else {
                counters.signalingErrors += 1
                return (refuse(.nameTaken, "someone in \(room) is already called \(name); pick another name",
                               connection), nil)
            }
        } else {
            var created = newRoom ?? Room(name: room, verifier: configured?.verifier)
            created.openStage = configured?.openStage ?? false
            created.encryption = request.encryption
            newRoom = created
        }
        return ([], newRoom)
    }

    /// A join that claims an account: parked until the shell checked the signature (`accountChecked`).
    private mutating func claimAccount(_ claim: AccountClaim, request: JoinRequest, on connection: ConnectionID)
        -> [RelayAction]
    {
        guard let challenge = connections[connection]?.challenge else {
            counters.signalingErrors += 1
            return refuse(.badField, "ask for a \"challenge\" first: a join as an account signs it", connection)
        }
        guard case .success = nameRule(claim.name), let signature = AccountKeys.signature(base64: claim.signature)
        else {
            counters.signalingErrors += 1
            return refuse(.badField, "join field \"account\" needs a valid account name and a base64 Ed25519 "
                            + "signature (64 bytes)", connection)
        }
        connections[connection]?.pendingJoin = request
        let message = AccountIdentity.joinMessage(account: claim.name, room: request.room, name: request.name,
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

    /// A chat line posted in the channel of `room` from outside the call (a messaging client): shown to everyone
    /// in the call, from no member (id 0), under `from` (the account, marked verified).
    public mutating func channelLine(room: String, from: String, text: String, time: Int64) -> [RelayAction] {
        guard rooms[room]?.isOpen == true else { return [] }
        rooms[room]?.chatSequence += 1
        let delivery = ChatDelivery(seq: rooms[room]?.chatSequence ?? 0, from: 0,
                                    name: MemberInfo.label(name: from, account: from), text: text, time: time)
        return [.send(.chat(delivery), to: connections(in: room, except: nil))]
    }

    private mutating func join(_ request: JoinRequest, on connection: ConnectionID, now: Duration,
                               account: String? = nil, accountProblem: String? = nil) -> [RelayAction] {
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
        if let resume = request.resume, let actions = self.resume(resume, room: room, request: request,
                                                                  on: connection, now: now) {
            return actions
        }
        if let full = roomLimit(room) {
            counters.limitsReached += 1
            return [.send(.error(SignalingError(.limitReached, full)), to: [connection])]
        }
        let admission = admit(request, room: room, name: name, on: connection)
        guard admission.actions.isEmpty else { return admission.actions }
        connections[connection]?.everJoined = true
        if let newRoom = admission.newRoom { rooms[room] = newRoom }
        let id = nextMemberID
        nextMemberID &+= 1
        let ssrcs = self.ssrcs.allocate(using: &random)
        var tokenBytes = [UInt8](repeating: 0, count: BindToken.length)
        for index in tokenBytes.indices { tokenBytes[index] = UInt8.random(in: 0...255, using: &random) }
        let credential = BindToken(bytes: tokenBytes)!
        let info = MemberInfo(id: id, name: name, role: request.role, audioMuted: request.audioMuted,
                              videoMuted: request.videoMuted, ssrcs: ssrcs, account: account)
        let others = connections(in: room, except: nil)
        let existing = (rooms[room]?.members ?? []).compactMap { members[$0]?.info }
        // A room with a password or end-to-end encryption is never named in presence (its name is part of what keeps
        // it private), and its chat is never kept.
        let isOpen = rooms[room]?.isOpen == true
        let hidesRoom = request.hideRoom || !isOpen
        members[id] = Member(info: info, room: room, connection: connection, credential: credential, lastSeen: now,
                             videoKbps: request.videoKbps, hidesRoom: hidesRoom, videoLayers: request.videoLayers)
        rooms[room, default: Room(name: room)].members.append(id)
        if rooms[room]?.host == nil { rooms[room]?.host = id }
        if request.role == .broadcaster { rooms[room]?.mayBroadcast.insert(id) }
        connections[connection]?.member = id
        var joined = joinedMessage(room: room, you: info, others: existing, credential: credential)
        joined.accountProblem = accountProblem
        return [
            .memberAdded(id: id, room: room),
            .send(.joined(joined), to: [connection]),
            .send(.memberJoined(MemberJoined(member: info)), to: others),
            .callActivity(CallActivity(room: room, member: info, joined: true, members: rooms[room]?.members.count ?? 1,
                                       hidesRoom: hidesRoom, kept: keepsChat && isOpen, connection: connection)),
        ]
    }

    /// Takes back a membership whose connection dropped: same id, SSRCs, credential and media binding, nothing
    /// told to the others (for them the member never left). Nil when there is nothing to resume (it timed out, the
    /// relay restarted, the credential or room does not match): the caller then joins afresh.
    private mutating func resume(_ token: ResumeToken, room: String, request: JoinRequest, on connection: ConnectionID,
                                 now: Duration) -> [RelayAction]? {
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
        let others = (rooms[room]?.members ?? []).filter { $0 != token.member }.compactMap { members[$0]?.info }
        let joined = joinedMessage(room: room, you: member.info, others: others, credential: member.credential)
        actions.append(.send(.joined(joined), to: [connection]))
        if changedMute {
            actions.append(.send(.mute(MemberMute(id: token.member, audio: request.audioMuted,
                                                  video: request.videoMuted)),
                                 to: connections(in: room, except: token.member)))
        }
        return actions
    }

    private func joinedMessage(room: String, you: MemberInfo, others: [MemberInfo], credential: BindToken)
        -> JoinedRoom
    {
        let settings = rooms[room]
        return JoinedRoom(
            room: room, you: you, members: others,
            media: MediaGrant(udpPort: udpPort, credential: credential.hex, ssrcs: you.ssrcs),
            livenessTimeout: Double(limits.livenessTimeout.components.seconds)
                + Double(limits.livenessTimeout.components.attoseconds) / 1e18,
            host: settings?.host ?? you.id, passwordProtected: settings?.verifier != nil,
            openStage: settings?.openStage ?? false, encryption: settings?.encryption,
            chatKept: keepsChat && settings?.isOpen == true ? true : nil)
    }

    private mutating func remove(_ id: UInt32, reason: LeaveReason) -> [RelayAction] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        ssrcs.release(member.info.ssrcs)
        rooms[member.room]?.members.removeAll { $0 == id }
        rooms[member.room]?.mayBroadcast.remove(id)
        var actions: [RelayAction] = [
            .memberRemoved(id: id, room: member.room),
            .send(.memberLeft(MemberLeft(id: id, reason: reason)), to: connections(in: member.room, except: id)),
            .callActivity(CallActivity(room: member.room, member: member.info, joined: false,
                                       members: rooms[member.room]?.members.count ?? 0, hidesRoom: member.hidesRoom,
                                       kept: keepsChat && rooms[member.room]?.isOpen == true)),
        ]
        if rooms[member.room]?.members.isEmpty ?? false {
            rooms[member.room] = nil
        } else if rooms[member.room]?.host == id, let next = rooms[member.room]?.members.first {
            rooms[member.room]?.host = next
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

/// A room set up in the relay's rooms file.
public struct ConfiguredRoom: Sendable, Equatable {
    /// The password verifier, nil for a room without a password.
    public var verifier: [UInt8]?
    /// Whether audience members may start broadcasting without the host.
    public var openStage: Bool

    /// A configured room.
    public init(verifier: [UInt8]? = nil, openStage: Bool = false) {
        self.verifier = verifier
        self.openStage = openStage
    }
}
