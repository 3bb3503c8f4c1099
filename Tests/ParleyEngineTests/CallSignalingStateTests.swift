import ParleyBytes
import ParleyRoom
import ParleySecurity
import ParleyWire
import Testing

@testable import ParleyEngine

/// The call's signaling decisions on a manual clock: each row feeds inputs at given milliseconds, the harness fires
/// the timers the state asked for (reconnect, lost, keep-alive) when the clock passes them, and the row expects every
/// action with its time. Defaults: reconnect every 1 s, lost after 10 s, keep-alive 2 s (a 10 s liveness timeout).
struct CallSignalingStateTests {
    typealias Action = CallSignalingState.Action

    /// One input of a row.
    enum Input: Sendable {
        case start
        case socketOpened
        case opened(first: Bool)
        case failed(first: Bool, certificateChanged: Bool)
        case closed
        case message(ServerMessage)
        case requestRole(Role)
        case leave
    }

    /// An action the state returned, and when (ms).
    struct Seen: Equatable, CustomStringConvertible {
        var at: Int64
        var action: Action
        var description: String { "\(at) ms: \(action)" }
    }

    /// A row: its name, the password configured, the inputs at their times, how long the clock runs, and what the
    /// state does (every action but the timer bookkeeping, which shows as the timers' later effects).
    struct Row: Sendable {
        var name: String
        var password: String? = nil
        var inputs: [(at: Int64, input: Input)]
        var until: Int64
        var expected: [(at: Int64, action: Action)]
    }

    // MARK: - Fixtures

    static let credential = String(repeating: "ab", count: 16)
    static let bob = MemberInfo(
        id: 2, name: "bob", role: .broadcaster, audioMuted: false, videoMuted: false,
        ssrcs: MemberSSRCs(block: 8))
    static let alice = room(id: 1, block: 4, members: [bob])
    static let security = Action.emit(.security(CallSecurity(insecureTransport: true)))
    static let nonce = [UInt8](repeating: 7, count: 32)
    static let secondNonce = [UInt8](repeating: 9, count: 32)
    static let verifier = RoomPassword.verifier(password: "hunter2", room: "standup")
    static func proof(_ nonce: [UInt8]) -> String {
        Hex.encode(RoomPassword.proof(verifier: verifier, challenge: nonce, room: "standup", name: "alice"))
    }
    static let resume = ResumeToken(member: 1, credential: credential)

    static func room(id: UInt32, block: UInt32, members: [MemberInfo] = [], passwordProtected: Bool = false)
        -> JoinedRoom
    {
        JoinedRoom(
            room: "standup",
            you: MemberInfo(
                id: id, name: "alice", role: .broadcaster, audioMuted: false, videoMuted: false,
                ssrcs: MemberSSRCs(block: block)),
            members: members,
            media: MediaGrant(udpPort: 7000, credential: credential, ssrcs: MemberSSRCs(block: block)),
            livenessTimeout: 10, passwordProtected: passwordProtected)
    }

    /// What the first `joined` of a call does (no host, no password, plain `ws://`). The host is said even when
    /// nobody hosts (0).
    static func firstJoin(_ room: JoinedRoom) -> [Action] {
        [
            security, .emit(.joined(localID: ParticipantID(room.you.id))), .resendTiles, .resendChat,
            .addMembers(room.members),
            .emit(.hostChanged(ParticipantID(room.host))),
            .bindMedia(room, restartMedia: true), .startReporting,
        ]
    }

    /// What a `joined` after a drop does: stale peers go (the rest keep their receivers when `resumed`), then the
    /// local id and "reconnected".
    static func rejoin(_ room: JoinedRoom, members: [MemberInfo], resumed: Bool, restartMedia: Bool) -> [Action] {
        [
            .dropStalePeers(room, resumed: resumed), .emit(.joined(localID: ParticipantID(room.you.id))),
            .emit(.alert(.reconnected)),
            .resendTiles, .resendChat, .addMembers(members), .emit(.hostChanged(ParticipantID(room.host))),
            .bindMedia(room, restartMedia: restartMedia),
        ]
    }

    /// Start, socket and connection open, the join sent and answered with `alice` at 20 ms.
    static let joinAt20: [(at: Int64, input: Input)] = [
        (0, .start), (0, .socketOpened), (10, .opened(first: true)), (20, .message(.joined(alice))),
    ]
    static let joinedAt20: [(at: Int64, action: Action)] =
        [(0, .prepareMedia), (0, .openConnection(first: true)), (10, .sendJoin(.init()))]
        + firstJoin(alice).map { (20, $0) }

    static func ping(_ seconds: UInt64) -> Action { .send(.ping(KeepAlive(token: seconds))) }

    // MARK: - Rows

    static let rows: [Row] = [
        Row(
            name: "first join, then a ping every keep-alive interval while the relay answers",
            inputs: joinAt20 + [
                (2_500, .message(.pong(KeepAlive(token: 2)))), (6_500, .message(.pong(KeepAlive(token: 6)))),
            ],
            until: 8_100,
            expected: joinedAt20 + [(2_020, ping(2)), (4_020, ping(4)), (6_020, ping(6)), (8_020, ping(8))]),
        Row(
            name: "a drop, then the membership resumed within the window: no 'lost', pings start again",
            inputs: joinAt20 + [
                (1_000, .closed), (2_100, .opened(first: false)), (2_200, .message(.joined(alice))),
                (4_300, .message(.pong(KeepAlive(token: 4)))), (8_300, .message(.pong(KeepAlive(token: 8)))),
            ],
            until: 12_000,
            expected: joinedAt20 + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (2_100, .sendJoin(.init(resume: resume))),
            ] + rejoin(alice, members: [bob], resumed: true, restartMedia: false).map { (2_200, $0) } + [
                (4_200, ping(4)), (6_200, ping(6)), (8_200, ping(8)), (10_200, ping(10)),
            ]),
        Row(
            name:
                "the first attempt 100 ms after the drop, then one interval after each failure; 'reconnecting' once; 'lost' 10 s in while one hangs",
            inputs: joinAt20 + [
                (1_000, .closed), (2_050, .failed(first: false, certificateChanged: false)),
                (3_100, .failed(first: false, certificateChanged: false)),
                (11_200, .opened(first: false)), (11_300, .message(.joined(alice))),
            ],
            until: 11_400,
            expected: joinedAt20 + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (3_050, .openConnection(first: false)), (4_100, .openConnection(first: false)),
                (11_000, .emit(.alert(.lost))), (11_200, .sendJoin(.init(resume: resume))),
            ] + rejoin(alice, members: [bob], resumed: true, restartMedia: false).map { (11_300, $0) }),
        Row(
            name: "resume refused (the relay forgot us): a fresh membership, media restarted, the ghost not a peer",
            inputs: joinAt20 + [
                (1_000, .closed), (2_100, .opened(first: false)),
                (2_200, .message(.joined(room(id: 5, block: 20, members: [bob, alice.you])))),
            ],
            until: 2_300,
            expected: joinedAt20 + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (2_100, .sendJoin(.init(resume: resume))),
            ]
                + rejoin(
                    room(id: 5, block: 20, members: [bob, alice.you]), members: [bob], resumed: false,
                    restartMedia: true
                )
                .map { (2_200, $0) }),
        Row(
            name: "password: a proof over the challenge, the verifier when the room is new, a fresh proof on resume",
            password: "hunter2",
            inputs: [
                (0, .start), (0, .socketOpened), (10, .opened(first: true)),
                (20, .message(.challenge(AccessChallenge(nonce: Hex.encode(nonce))))),
                (30, .message(.error(SignalingError(.passwordSetup, "new room: send the verifier")))),
                (40, .message(.joined(room(id: 1, block: 4, passwordProtected: true)))),
                (1_000, .closed), (2_100, .opened(first: false)),
                (2_110, .message(.challenge(AccessChallenge(nonce: Hex.encode(secondNonce))))),
            ],
            until: 2_200,
            expected: [
                (0, .prepareMedia), (0, .openConnection(first: true)), (10, .send(.challenge)),
                (20, .sendJoin(.init(proof: proof(nonce)))),
                (30, .sendJoin(.init(proof: proof(nonce), verifier: Hex.encode(verifier)))),
            ] + firstJoin(room(id: 1, block: 4, passwordProtected: true)).map { (40, $0) } + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (2_100, .send(.challenge)), (2_110, .sendJoin(.init(resume: resume, proof: proof(secondNonce)))),
            ]),
        Row(
            name: "password on a room that has none: joined, with a warning",
            password: "hunter2",
            inputs: [
                (0, .start), (0, .socketOpened), (10, .opened(first: true)),
                (20, .message(.challenge(AccessChallenge(nonce: Hex.encode(nonce))))),
                (30, .message(.joined(alice))),
            ],
            until: 100,
            expected: [
                (0, .prepareMedia), (0, .openConnection(first: true)), (10, .send(.challenge)),
                (20, .sendJoin(.init(proof: proof(nonce)))),
                (30, security), (30, .emit(.joined(localID: ParticipantID(1)))), (30, .resendTiles), (30, .resendChat),
                (30, .addMembers([bob])), (30, .emit(.hostChanged(ParticipantID(0)))),
                (30, .emit(.alert(.message("standup has no password: anyone who knows its name can join")))),
                (30, .bindMedia(alice, restartMedia: true)), (30, .startReporting),
            ]),
        Row(
            name: "a wrong password ends the first join",
            password: "hunter2",
            inputs: [
                (0, .start), (0, .socketOpened), (10, .opened(first: true)),
                (20, .message(.challenge(AccessChallenge(nonce: Hex.encode(nonce))))),
                (30, .message(.error(SignalingError(.wrongPassword, "wrong password for standup")))),
            ],
            until: 5_000,
            expected: [
                (0, .prepareMedia), (0, .openConnection(first: true)), (10, .send(.challenge)),
                (20, .sendJoin(.init(proof: proof(nonce)))),
                (30, .emit(.joinFailed(reason: "wrong password for standup"))), (30, .stopMedia),
                (30, .closeConnection), (30, .finish),
            ]),
        Row(
            name: "leave while reconnecting: goodbye, no more attempts or alerts, a late connection is closed",
            inputs: joinAt20 + [(1_000, .closed), (1_500, .leave), (2_100, .opened(first: false))],
            until: 12_000,
            expected: joinedAt20 + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (1_500, .closeDevices), (1_500, .stopMedia), (1_500, .stopTimers), (1_500, .send(.leave)),
                (1_500, .closeConnection), (1_500, .finish), (1_500, .closeMediaSocket),
                (2_100, .closeConnection),
            ]),
        Row(
            name: "stall: silent past three keep-alive intervals, the connection is dropped and the reconnect begins",
            inputs: joinAt20,
            until: 9_100,
            expected: joinedAt20 + [
                (2_020, ping(2)), (4_020, ping(4)), (6_020, ping(6)),
                (8_020, .dropStalledConnection(silence: .seconds(6))), (8_020, .unbindMedia),
                (8_020, .emit(.alert(.interrupted))),
                (8_120, .emit(.alert(.reconnecting))), (8_120, .openConnection(first: false)),
            ]),
        Row(
            name: "the relay closes before the join completes: the call fails, no reconnect",
            inputs: [(0, .start), (0, .socketOpened), (10, .opened(first: true)), (15, .closed)],
            until: 5_000,
            expected: [
                (0, .prepareMedia), (0, .openConnection(first: true)), (10, .sendJoin(.init())),
                (15, .emit(.joinFailed(reason: "the relay closed the connection before the join completed"))),
                (15, .stopMedia), (15, .finish),
            ]),
        Row(
            name: "the first connection fails: the call fails",
            inputs: [(0, .start), (0, .socketOpened), (10, .failed(first: true, certificateChanged: false))],
            until: 5_000,
            expected: [
                (0, .prepareMedia), (0, .openConnection(first: true)),
                (10, .emit(.joinFailed(reason: "connection refused"))), (10, .stopMedia), (10, .finish),
                (10, .closeMediaSocket),
            ]),
        Row(
            name: "a changed certificate mid-call is not retried",
            inputs: joinAt20 + [(1_000, .closed), (2_050, .failed(first: false, certificateChanged: true))],
            until: 15_000,
            expected: joinedAt20 + [
                (1_000, .unbindMedia), (1_000, .emit(.alert(.interrupted))),
                (1_100, .emit(.alert(.reconnecting))), (1_100, .openConnection(first: false)),
                (2_050, .emit(.joinFailed(reason: "connection refused"))), (2_050, .stopMedia), (2_050, .finish),
                (2_050, .closeMediaSocket),
            ]),
        Row(
            name: "a broadcaster request refused puts the local role back; other refusals are alerts",
            inputs: joinAt20 + [
                (100, .requestRole(.broadcaster)), (200, .message(.error(SignalingError(.notAllowed, "ask the host")))),
                (300, .message(.error(SignalingError(.notAllowed, "not now")))),
            ],
            until: 400,
            expected: joinedAt20 + [
                (200, .setLocalRole(.audience)), (200, .emit(.roleChanged(ParticipantID(1), .audience))),
                (200, .emit(.alert(.message("ask the host")))),
                (300, .noteRefusal(SignalingError(.notAllowed, "not now"))),
                (300, .emit(.alert(.message("Relay: not now")))),
            ]),
        Row(
            name: "removed by the host: the call ends without reconnecting",
            inputs: joinAt20 + [
                (500, .message(.removed(Removal(by: "bob", message: "bob removed you")))), (600, .closed),
            ],
            until: 15_000,
            expected: joinedAt20 + [
                (500, .emit(.removedFromRoom("bob removed you"))), (500, .stopMedia), (500, .closeDevices),
                (500, .stopTimers), (500, .closeConnection), (500, .finish), (500, .closeMediaSocket),
            ]),
        Row(
            name: "room messages pass to the engine's bookkeeping",
            inputs: joinAt20 + [(100, .message(.memberJoined(MemberJoined(member: bob))))],
            until: 200,
            expected: joinedAt20 + [(100, .roomMessage(.memberJoined(MemberJoined(member: bob))))]),
        Row(
            name: "a draining node says move: resumed at once through the node named, without a drop first",
            inputs: joinAt20
                + [
                    (1_000, .message(.move(Redirect(room: "standup", server: "b.test:7878", node: "b")))),
                    (1_050, .opened(first: false)), (1_100, .message(.joined(alice))),
                    // Told to move again while moving: nothing more.
                    (1_060, .message(.move(Redirect(room: "standup", server: "c.test:7878", node: "c")))),
                ].sorted { $0.at < $1.at },
            until: 1_200,
            expected: joinedAt20 + [
                (1_000, .emit(.alert(.message("relay node b is draining: moving to b.test:7878")))),
                (1_000, .unbindMedia),
                (1_000, .follow(Redirect(room: "standup", server: "b.test:7878", node: "b"), first: false)),
                (1_050, .sendJoin(.init(resume: resume))),
            ] + rejoin(alice, members: [bob], resumed: true, restartMedia: false).map { (1_100, $0) }),
    ]

    @Test(arguments: rows.indices)
    func row(_ index: Int) {
        let row = Self.rows[index]
        var configuration = CallConfiguration(server: ServerAddress(host: "relay.test"), room: "standup", name: "alice")
        configuration.password = row.password
        var harness = Harness(state: CallSignalingState(configuration: configuration))
        for (at, input) in row.inputs { harness.feed(input, at: .milliseconds(at)) }
        harness.run(until: .milliseconds(row.until))
        let expected = row.expected.map { Seen(at: $0.at, action: $0.action) }
        #expect(harness.seen == expected, "\(row.name)")
        for (index, pair) in zip(harness.seen, expected).enumerated() where pair.0 != pair.1 {
            Issue.record("\(row.name): first difference at action \(index): \(pair.0) instead of \(pair.1)")
            break
        }
    }

    /// An account's claim is signed over each connection's challenge and sent with the join.
    @Test func accountClaim() {
        let account = AccountIdentity.create(name: "alice")
        var configuration = CallConfiguration(server: ServerAddress(host: "relay.test"), room: "standup", name: "alice")
        configuration.account = account
        var state = CallSignalingState(configuration: configuration)
        _ = state.start()
        #expect(state.connectionOpened(first: true, now: .zero) == [.send(.challenge)])
        let actions = state.received(.challenge(AccessChallenge(nonce: Hex.encode(Self.nonce))), now: .zero)
        let message = AccountIdentity.joinMessage(
            account: "alice", room: "standup", name: "alice",
            challenge: Self.nonce)
        #expect(
            actions == [
                .sendJoin(
                    .init(
                        account: AccountClaim(
                            name: "alice",
                            signature: account.signatureText(message))))
            ])
    }
}

/// Carries out the state's timer actions on a manual clock and records everything else with its time.
private struct Harness {
    typealias Action = CallSignalingState.Action
    var state: CallSignalingState
    var now: Duration = .zero
    var timers: [CallSignalingState.Timer: Duration] = [:]
    var keepAlive: (every: Duration, next: Duration)?
    var connected = false
    var seen: [CallSignalingStateTests.Seen] = []

    init(state: CallSignalingState) { self.state = state }

    /// Runs the clock to `at`, then gives the state the input.
    mutating func feed(_ input: CallSignalingStateTests.Input, at time: Duration) {
        run(until: time)
        switch input {
        case .start: apply(state.start())
        case .socketOpened: apply(state.mediaSocketOpened())
        case .opened(let first):
            connected = true
            apply(state.connectionOpened(first: first, now: now))
        case .failed(let first, let certificateChanged):
            apply(
                state.connectionFailed(
                    first: first, certificateChanged: certificateChanged,
                    reason: "connection refused", now: now))
        case .closed:
            connected = false
            apply(state.connectionClosed(now: now))
        case .message(let message): apply(state.received(message, now: now))
        case .requestRole(let role): state.requestedRole(role)
        case .leave: apply(state.leave())
        }
    }

    /// Moves the clock to `end`, firing the timers and keep-alive ticks due on the way in time order (a tick with
    /// no connection open does nothing, as in the engine).
    mutating func run(until end: Duration) {
        while true {
            let timer = timers.min { $0.value < $1.value }
            guard let next = [timer?.value, keepAlive?.next].compactMap({ $0 }).min(), next <= end else { break }
            now = next
            if let timer, timer.value == next {
                timers[timer.key] = nil
                apply(state.timerFired(timer.key, now: now))
            } else if let tick = keepAlive {
                keepAlive?.next = next + tick.every
                if connected { apply(state.keepAliveTick(now: now)) }
            }
        }
        now = end
    }

    mutating func apply(_ actions: [Action]) {
        var dropped = false
        for action in actions {
            switch action {
            case .schedule(let timer, let at): timers[timer] = at
            case .cancel(let timer): timers[timer] = nil
            case .startKeepAlive(let every): keepAlive = (every, now + every)
            case .stopTimers:
                timers.removeAll()
                keepAlive = nil
            case .closeConnection: connected = false
            case .dropStalledConnection: dropped = true
            default: break
            }
            switch action {
            case .schedule, .cancel, .startKeepAlive: break  // Seen through what fires later.
            default: seen.append(.init(at: Int64(now / .milliseconds(1)), action: action))
            }
        }
        // A dropped connection reports its close, as the real one does.
        if dropped && connected {
            connected = false
            apply(state.connectionClosed(now: now))
        }
    }
}
