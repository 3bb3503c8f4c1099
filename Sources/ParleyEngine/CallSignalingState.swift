import ParleyBytes
import ParleyRoom
import ParleySecurity
import ParleyWire

// Why the shape: the engine core used to decide and act in one breath (set the phase, schedule a NIO task, emit an
// event), so its reconnect timings could only be tested over real sockets with real waits. Here every decision is a
// value change given "now", and what to do about it comes back as actions; `EngineCore` only carries them out.

/// The call's signaling decisions: joining with a password proof and an account claim, resuming the membership after
/// a lost connection, reconnect attempts and what the user is told meanwhile, keep-alives and stall detection. Each
/// input takes `now` and returns the actions for the engine core to carry out, in order; it owns no connection,
/// timer or socket.
struct CallSignalingState {
    /// Where the call stands.
    enum Phase: Equatable, Sendable {
        case idle
        case connecting
        case joined
        case reconnecting(since: Duration, announcedLost: Bool)
        case left
    }

    /// The one-shot timers the state asks for; a pending one is replaced by the next of its kind.
    enum Timer: Equatable, Sendable {
        /// The next reconnect attempt.
        case reconnect
        /// The moment an interruption counts as a lost call.
        case lost
    }

    /// What a join proves and asks for; the engine core adds its role, mute state and video layers.
    struct JoinCredentials: Equatable, Sendable {
        /// The membership to take back after a dropped connection.
        var resume: ResumeToken?
        /// The room password's proof over this connection's challenge.
        var proof: String?
        /// The password verifier, for a room this join creates.
        var verifier: String?
        /// The account claimed, signed over this connection's challenge.
        var account: AccountClaim?
    }

    /// What the engine core does next.
    enum Action: Equatable, Sendable {
        /// Open the audio output and the media socket, then report `mediaSocketOpened` or `mediaSocketFailed`.
        case prepareMedia
        /// Open a signaling connection, then report `connectionOpened(first:now:)` or `connectionFailed`.
        case openConnection(first: Bool)
        /// Send on the signaling connection.
        case send(ClientMessage)
        /// Send a join with these credentials.
        case sendJoin(JoinCredentials)
        /// Report to the room.
        case emit(RoomEvent)
        /// Call `timerFired(_:now:)` at this time, replacing a pending timer of the kind.
        case schedule(Timer, at: Duration)
        /// Forget a pending timer.
        case cancel(Timer)
        /// Close the signaling connection and forget it.
        case closeConnection
        /// The room lives on another node: close this connection and join there (`first` as the join it answers).
        case follow(Redirect, first: Bool)
        /// The relay went silent for `silence`: drop the connection without a goodbye (its close starts the
        /// reconnect).
        case dropStalledConnection(silence: Duration)
        /// The relay refused a message (logged; the alert comes as its own action).
        case noteRefusal(SignalingError)
        /// About the room's members, chat or media: the engine core's bookkeeping, no signaling decision.
        case roomMessage(ServerMessage)
        /// A membership after a drop: the peers this answer does not list with the same id and SSRCs went away.
        /// `resumed` (the same id and media credential as before) keeps the others' receivers as they were, so their
        /// pictures, buffers and counters carry on; a new membership (the relay restarted) starts them again.
        case dropStalePeers(JoinedRoom, resumed: Bool)
        /// Tell the relay again which tile sizes we draw (a new membership starts with everyone's full layer).
        case resendTiles
        /// Send again the chat lines the relay has not echoed (written into a connection that died).
        case resendChat
        /// Receive these members' media.
        case addMembers([MemberInfo])
        /// Bind the media socket for this membership, restarting the local media first when its SSRCs are new.
        case bindMedia(JoinedRoom, restartMedia: Bool)
        /// The media binding is gone with the connection.
        case unbindMedia
        /// Call `keepAliveTick(now:)` at this interval, replacing the previous keep-alive timer.
        case startKeepAlive(every: Duration)
        /// Start the once-a-call statistics and level reports.
        case startReporting
        /// The local role is now this one.
        case setLocalRole(Role)
        /// Stop capturing, encoding and sending.
        case stopMedia
        /// Close the microphone, speaker and camera.
        case closeDevices
        /// Cancel every engine timer (reconnect, lost, bind, keep-alive, reports).
        case stopTimers
        /// Close the media socket.
        case closeMediaSocket
        /// Finish the event stream.
        case finish
    }

    let configuration: CallConfiguration
    private(set) var phase = Phase.idle
    /// The current (or, while reconnecting, the last) membership.
    private(set) var room: JoinedRoom?
    /// When the relay last said anything on signaling (pongs included).
    private(set) var lastHeard: Duration = .zero
    /// Attempts in the current interruption.
    private(set) var reconnectAttempts = 0
    /// Memberships taken again after a dropped connection, in this call.
    private(set) var rejoins = 0
    /// The keep-alive schedule of the current membership.
    private(set) var keepAlive: KeepAliveSchedule?
    /// Whether the join being negotiated is the first of this call (not a resume after a drop).
    private var joiningFirst = true
    /// Redirects answered since the last join that succeeded (a second in a row fails the join).
    private var redirectsInARow = 0
    /// The proof sent with the pending join (a new room asks for the verifier next, with the same proof).
    private var pendingProof: String?
    /// The account claim sent with the pending join (signed over its challenge).
    private var pendingClaim: AccountClaim?
    /// A broadcaster request the host has not granted yet: refused, the local role goes back to audience.
    private var askedToBroadcast = false
    /// The password verifier, derived once (a deliberately slow key derivation).
    private lazy var passwordVerifier: [UInt8]? = configuration.password.map {
        RoomPassword.verifier(password: $0, room: roomName)
    }

    /// A call not started yet.
    init(configuration: CallConfiguration) {
        self.configuration = configuration
    }

    /// The room and display name as the relay checks them (its proof covers the cleaned names).
    var roomName: String { (try? RoomName.validate(configuration.room)) ?? configuration.room }
    var displayName: String { (try? DisplayName.validate(configuration.name)) ?? configuration.name }

    // MARK: - Inputs

    /// The user starts the call.
    mutating func start() -> [Action] {
        guard case .idle = phase else { return [] }
        phase = .connecting
        return [.prepareMedia]
    }

    /// The media socket is open: connect.
    mutating func mediaSocketOpened() -> [Action] {
        [.openConnection(first: true)]
    }

    /// The media socket could not be opened: the call ends before it began.
    mutating func mediaSocketFailed(_ reason: String) -> [Action] {
        phase = .left
        return [.emit(.joinFailed(reason: "cannot open a UDP socket: \(reason)")), .finish]
    }

    /// A signaling connection asked for by `openConnection(first:)` opened (the engine holds it now).
    mutating func connectionOpened(first: Bool, now: Duration) -> [Action] {
        if case .left = phase { return [.closeConnection] }
        lastHeard = now
        joiningFirst = first
        pendingProof = nil
        // A password or an account is proven against a fresh challenge; without either the join goes at once.
        if configuration.password != nil || configuration.account != nil { return [.send(.challenge)] }
        return [.sendJoin(credentials(proof: nil, verifier: nil))]
    }

    /// A signaling connection could not be opened. A relay showing another certificate than the pinned one
    /// (`certificateChanged`) is not retried, mid-call either.
    mutating func connectionFailed(first: Bool, certificateChanged: Bool, reason: String, now: Duration) -> [Action] {
        if case .left = phase { return [] }
        guard first || certificateChanged else { return scheduleReconnect(now: now) }
        phase = .left
        return [.emit(.joinFailed(reason: reason)), .stopMedia, .finish, .closeMediaSocket]
    }

    /// The signaling connection closed (the relay closed it, the network dropped it, or we dropped it).
    mutating func connectionClosed(now: Duration) -> [Action] {
        switch phase {
        case .joined:
            phase = .reconnecting(since: now, announcedLost: false)
            reconnectAttempts = 0
            // The call counts as lost `lostAfter` into an interruption, whether the attempts so far failed or hang.
            // The first attempt goes almost at once (a relay that was killed is often already back, or another of
            // the cluster's nodes takes the member); the next ones wait `reconnectInterval` each.
            return [
                .schedule(.lost, at: now + configuration.lostAfter), .unbindMedia, .emit(.alert(.interrupted)),
                .schedule(.reconnect, at: now + min(configuration.reconnectInterval, Self.firstReconnectDelay)),
            ]
        case .connecting:
            phase = .left
            return [
                .emit(.joinFailed(reason: "the relay closed the connection before the join completed")),
                .stopMedia, .finish,
            ]
        case .reconnecting:
            return scheduleReconnect(now: now)
        case .idle, .left:
            return []
        }
    }

    /// A timer asked for with `schedule` went off.
    mutating func timerFired(_ timer: Timer, now: Duration) -> [Action] {
        switch timer {
        case .reconnect:
            guard case .reconnecting(_, let announcedLost) = phase else { return [] }
            // Said once per interruption: after that the status stays "reconnecting" (or "lost") until it is back.
            var actions: [Action] = reconnectAttempts == 0 && !announcedLost ? [.emit(.alert(.reconnecting))] : []
            reconnectAttempts += 1
            actions.append(.openConnection(first: false))
            return actions
        case .lost:
            guard case .reconnecting(let since, false) = phase else { return [] }
            phase = .reconnecting(since: since, announcedLost: true)
            return [.emit(.alert(.lost))]
        }
    }

    /// The keep-alive timer ticked with a connection open: ping, or drop a connection the relay went silent on.
    mutating func keepAliveTick(now: Duration) -> [Action] {
        guard case .joined = phase, let keepAlive else { return [] }
        switch keepAlive.action(now: now, lastHeard: lastHeard) {
        case .reconnect:
            return [.dropStalledConnection(silence: keepAlive.stallAfter)]
        case .ping:
            return [.send(.ping(KeepAlive(token: UInt64(now.components.seconds))))]
        }
    }

    /// The relay sent something it could not parse: still a sign of life.
    mutating func receivedInvalid(now: Duration) -> [Action] {
        lastHeard = now
        return []
    }

    /// The relay sent a message.
    mutating func received(_ message: ServerMessage, now: Duration) -> [Action] {
        lastHeard = now
        switch message {
        case .joined(let room):
            return joined(room)
        case .challenge(let challenge):
            return answer(challenge)
        case .pong:
            return []
        case .redirect(let redirect):
            switch phase {
            case .connecting, .reconnecting: break
            case .idle, .joined, .left: return []  // Only a join is redirected.
            }
            redirectsInARow += 1
            // A node that sends the join on to a node that sends it on again: the cluster disagrees with itself.
            guard redirectsInARow <= 1 else {
                if case .reconnecting = phase { return [.closeConnection] }
                phase = .left
                return [
                    .emit(
                        .joinFailed(
                            reason:
                                "redirected twice (last to \(redirect.server)): the relays of the cluster disagree where \(redirect.room) lives"
                        )),
                    .stopMedia, .closeConnection, .finish,
                ]
            }
            return [.follow(redirect, first: joiningFirst)]
        case .move(let move):
            // The node is draining: resume through the node it names, as after a lost connection but at once.
            guard case .joined = phase else { return [] }
            phase = .reconnecting(since: now, announcedLost: false)
            reconnectAttempts = 0
            return [
                .emit(.alert(.message("relay node \(move.node) is draining: moving to \(move.server)"))),
                .unbindMedia, .schedule(.lost, at: now + configuration.lostAfter), .follow(move, first: false),
            ]
        case .removed(let removal):
            // Removed by the host: the call is over, and reconnecting would only walk back in.
            phase = .left
            return [
                .emit(.removedFromRoom(removal.message)), .stopMedia, .closeDevices, .stopTimers,
                .closeConnection, .finish, .closeMediaSocket,
            ]
        case .error(let error) where error.code == .passwordSetup && pendingProof != nil:
            // Our room is new: it takes the password, given as its verifier (the password itself stays here).
            return [.sendJoin(credentials(proof: pendingProof, verifier: passwordVerifier.map { Hex.encode($0) }))]
        case .error(let error) where error.code == .notAllowed && askedToBroadcast:
            askedToBroadcast = false
            var actions: [Action] = [.setLocalRole(.audience)]
            if let id = room?.you.id { actions.append(.emit(.roleChanged(ParticipantID(id), .audience))) }
            return actions + [.emit(.alert(.message(error.message)))]
        case .error(let error):
            guard case .connecting = phase else {
                return [.noteRefusal(error), .emit(.alert(.message("Relay: \(error.message)")))]
            }
            phase = .left
            return [.emit(.joinFailed(reason: error.message)), .stopMedia, .closeConnection, .finish]
        default:
            return [.roomMessage(message)]
        }
    }

    /// The user asked for a role (a broadcaster request the relay refuses puts the local role back).
    mutating func requestedRole(_ role: Role) {
        askedToBroadcast = role == .broadcaster
    }

    /// The user leaves the call.
    mutating func leave() -> [Action] {
        // Devices close also after a failed join (already left): the speaker was opened before the relay answered.
        if case .left = phase { return [.closeDevices] }
        phase = .left
        return [.closeDevices, .stopMedia, .stopTimers, .send(.leave), .closeConnection, .finish, .closeMediaSocket]
    }

    /// How long the first reconnect attempt after a lost connection waits.
    static let firstReconnectDelay: Duration = .milliseconds(100)

    // MARK: - Decisions

    private mutating func scheduleReconnect(now: Duration) -> [Action] {
        guard case .reconnecting = phase else { return [] }
        return [.schedule(.reconnect, at: now + configuration.reconnectInterval)]
    }

    private func credentials(proof: String?, verifier: String?) -> JoinCredentials {
        // After a drop, ask for the old membership back so the others never see us leave and rejoin.
        let resume = joiningFirst ? nil : room.map { ResumeToken(member: $0.you.id, credential: $0.media.credential) }
        return JoinCredentials(resume: resume, proof: proof, verifier: verifier, account: pendingClaim)
    }

    private mutating func answer(_ challenge: AccessChallenge) -> [Action] {
        guard let nonce = Hex.decode(challenge.nonce) else { return [] }
        if let account = configuration.account {
            let message = AccountIdentity.joinMessage(
                account: account.name, room: configuration.room,
                name: configuration.name, challenge: nonce)
            pendingClaim = AccountClaim(name: account.name, signature: account.signatureText(message))
        }
        var proof: String?
        if let verifier = passwordVerifier {
            proof = Hex.encode(
                RoomPassword.proof(
                    verifier: verifier, challenge: nonce, room: roomName,
                    name: displayName))
        }
        pendingProof = proof
        return [.sendJoin(credentials(proof: proof, verifier: nil))]
    }

    private mutating func joined(_ room: JoinedRoom) -> [Action] {
        redirectsInARow = 0
        let rejoin: Bool
        if case .reconnecting = phase { rejoin = true } else { rejoin = false }
        let previous = self.room
        self.room = room
        phase = .joined
        var actions: [Action] = [.cancel(.reconnect), .cancel(.lost)]
        // Peers the relay still lists with the same id and SSRCs stay; the rest (everyone, after a relay restart) go
        // before the new local id is announced, since ids restart with the relay.
        if rejoin {
            rejoins += 1
            let resumed = previous?.you.id == room.you.id && previous?.media.credential == room.media.credential
            actions.append(.dropStalePeers(room, resumed: resumed))
        }
        // How the call is protected is said before it is said to be joined: drawn between the two, the header read
        // "connected" for a frame without its INSECURE.
        if !rejoin {
            actions.append(
                .emit(
                    .security(
                        CallSecurity(
                            insecureTransport: configuration.insecureTransport,
                            encryption: configuration.encryption?.suite.name,
                            safetyCode: configuration.encryption?.safetyCode))))
        }
        actions.append(.emit(.joined(localID: ParticipantID(room.you.id))))
        if !rejoin, let problem = room.accountProblem {
            actions.append(.emit(.alert(.message(problem))))
        } else if !rejoin, let account = room.you.account {
            actions.append(.emit(.notice("Joined as your account \(account) ✓ (others see it verified)")))
        }
        if rejoin { actions.append(.emit(.alert(.reconnected))) }
        pendingProof = nil
        actions.append(.resendTiles)
        actions.append(.resendChat)
        // After a dropped connection the relay keeps our old self until its liveness timeout: not a participant.
        let ghost = previous.map { (id: $0.you.id, ssrcs: $0.media.ssrcs) }
        actions.append(.addMembers(room.members.filter { !($0.id == ghost?.id && $0.ssrcs == ghost?.ssrcs) }))
        // Said even when nobody hosts (0: the relay awaits the host it had before a restart): member ids start again
        // after a restart, so a host id kept from before could now name someone else.
        actions.append(.emit(.hostChanged(ParticipantID(room.host))))
        if configuration.password != nil && !room.passwordProtected {
            actions.append(.emit(.alert(.message("\(room.room) has no password: anyone who knows its name can join"))))
        }
        actions.append(.bindMedia(room, restartMedia: previous == nil || previous?.media.ssrcs != room.media.ssrcs))
        let schedule = KeepAliveSchedule(
            configured: configuration.keepAliveInterval,
            livenessTimeout: room.livenessTimeout)
        keepAlive = schedule
        actions.append(.startKeepAlive(every: schedule.interval))
        if previous == nil { actions.append(.startReporting) }
        return actions
    }
}
