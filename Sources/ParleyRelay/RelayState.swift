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
}

/// Checks a room or display name; returns the cleaned name or a sentence saying what is wrong.
public typealias NameRule = @Sendable (String) -> Result<String, NameRejection>

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
    }

    /// One room: members in join order and the chat sequence.
    public struct Room: Sendable, Equatable {
        public var name: String
        public var members: [UInt32] = []
        public var chatSequence: UInt64 = 0
    }

    private struct Connection {
        var member: UInt32?
        var tokens: Double
        var lastRefill: Duration
        var lastRateLimitNotice: Duration?
    }

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
    private var nextMemberID: UInt32 = 1
    private var ssrcs = SSRCAllocator()
    /// What was refused so far.
    public var counters = RelayCounters()

    /// An empty relay. `random` makes credentials and SSRCs and `wallClock` (milliseconds since the Unix epoch)
    /// stamps chat lines; inject fixed ones in tests.
    public init(limits: SignalingLimits = SignalingLimits(), udpPort: Int, roomRule: @escaping NameRule,
                nameRule: @escaping NameRule, random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
                wallClock: @escaping @Sendable () -> Int64)
    {
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

    /// A new WebSocket connection opened.
    public mutating func connected(_ connection: ConnectionID, now: Duration) {
        connections[connection] = Connection(member: nil, tokens: limits.burst, lastRefill: now)
    }

    /// A connection closed. A member who said goodbye is already gone; one who did not lingers until the liveness
    /// timeout (so a client that comes back quickly could resume) and is then reported as `timeout`.
    public mutating func disconnected(_ connection: ConnectionID, now: Duration) -> [RelayAction] {
        guard let state = connections.removeValue(forKey: connection), let id = state.member else { return [] }
        if members[id]?.connection == connection { members[id]?.connection = nil }
        return []
    }

    /// A frame that is not a text message (binary) or exceeded the size cap arrived.
    public mutating func refusedFrame(_ connection: ConnectionID, reason: String) -> [RelayAction] {
        counters.refusedFrames += 1
        return [.send(.error(SignalingError(.badJSON, reason)), to: [connection])]
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

    /// Removes members whose signaling has been silent past the liveness timeout.
    public mutating func tick(now: Duration) -> [RelayAction] {
        let expired = members.values
            .filter { now - $0.lastSeen > limits.livenessTimeout }
            .sorted { $0.info.id < $1.info.id }
        var actions: [RelayAction] = []
        for member in expired {
            if let connection = member.connection {
                connections[connection]?.member = nil
                actions.append(.close(connection))
            }
            actions += remove(member.info.id, reason: .timeout)
        }
        return actions
    }

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
            return join(request, on: connection, now: now)
        case .ping(let token):
            return [.send(.pong(token), to: [connection])]
        default:
            break
        }
        guard let id, let member = members[id] else {
            counters.signalingErrors += 1
            return [.send(.error(SignalingError(.notJoined, "send \"join\" before \"\(message.type)\"")),
                          to: [connection])]
        }
        switch message {
        case .join, .ping:
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
            rooms[member.room]?.chatSequence += 1
            let sequence = rooms[member.room]?.chatSequence ?? 0
            var delivery = ChatDelivery(seq: sequence, from: id, name: member.info.name, text: chat.text,
                                        time: wallClock())
            var actions: [RelayAction] = [.send(.chat(delivery), to: connections(in: member.room, except: id))]
            delivery.ref = chat.ref
            actions.append(.send(.chat(delivery), to: [connection]))
            return actions
        case .stats(let stats):
            return [.send(.stats(MemberStats(id: id, stats: stats)), to: connections(in: member.room, except: id))]
        case .role(let request):
            members[id]?.info.role = request.role
            return [.roleChanged(id: id, role: request.role), .send(.role(MemberRoleChange(id: id, role: request.role)),
                          to: connections(in: member.room, except: nil))]
        }
    }

    private mutating func join(_ request: JoinRequest, on connection: ConnectionID, now: Duration) -> [RelayAction] {
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
        let id = nextMemberID
        nextMemberID &+= 1
        let ssrcs = self.ssrcs.allocate(using: &random)
        var tokenBytes = [UInt8](repeating: 0, count: BindToken.length)
        for index in tokenBytes.indices { tokenBytes[index] = UInt8.random(in: 0...255, using: &random) }
        let credential = BindToken(bytes: tokenBytes)!
        let info = MemberInfo(id: id, name: name, role: request.role, audioMuted: request.audioMuted,
                              videoMuted: request.videoMuted, ssrcs: ssrcs)
        let others = connections(in: room, except: nil)
        let existing = (rooms[room]?.members ?? []).compactMap { members[$0]?.info }
        members[id] = Member(info: info, room: room, connection: connection, credential: credential, lastSeen: now)
        rooms[room, default: Room(name: room)].members.append(id)
        connections[connection]?.member = id
        let joined = JoinedRoom(
            room: room, you: info, members: existing,
            media: MediaGrant(udpPort: udpPort, credential: credential.hex, ssrcs: ssrcs),
            livenessTimeout: Double(limits.livenessTimeout.components.seconds)
                + Double(limits.livenessTimeout.components.attoseconds) / 1e18)
        return [
            .memberAdded(id: id, room: room),
            .send(.joined(joined), to: [connection]),
            .send(.memberJoined(MemberJoined(member: info)), to: others),
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
        let others = (rooms[room]?.members ?? []).filter { $0 != token.member }.compactMap { members[$0]?.info }
        let joined = JoinedRoom(
            room: room, you: member.info, members: others,
            media: MediaGrant(udpPort: udpPort, credential: member.credential.hex, ssrcs: member.info.ssrcs),
            livenessTimeout: Double(limits.livenessTimeout.components.seconds)
                + Double(limits.livenessTimeout.components.attoseconds) / 1e18)
        actions.append(.send(.joined(joined), to: [connection]))
        if changedMute {
            actions.append(.send(.mute(MemberMute(id: token.member, audio: request.audioMuted,
                                                  video: request.videoMuted)),
                                 to: connections(in: room, except: token.member)))
        }
        return actions
    }

    private mutating func remove(_ id: UInt32, reason: LeaveReason) -> [RelayAction] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        ssrcs.release(member.info.ssrcs)
        rooms[member.room]?.members.removeAll { $0 == id }
        if rooms[member.room]?.members.isEmpty ?? false { rooms[member.room] = nil }
        return [
            .memberRemoved(id: id, room: member.room),
            .send(.memberLeft(MemberLeft(id: id, reason: reason)), to: connections(in: member.room, except: id)),
        ]
    }

    private func connections(in room: String, except excluded: UInt32?) -> [ConnectionID] {
        (rooms[room]?.members ?? []).compactMap { id in
            id == excluded ? nil : members[id]?.connection
        }
    }
}
