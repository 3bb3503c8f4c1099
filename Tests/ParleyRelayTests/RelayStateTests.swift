import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// Deterministic generator so credentials and SSRCs are repeatable.
struct SeededRandom: RandomNumberGenerator, Sendable {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A relay state with simple name rules and helpers to drive it like the shell does.
struct Harness {
    var state = RelayState(
        limits: SignalingLimits(livenessTimeout: .seconds(10), burst: 5, messagesPerSecond: 1),
        udpPort: 7878,
        roomRule: { $0.isEmpty ? .failure(NameRejection("Room name is empty.")) : .success($0) },
        nameRule: { $0.contains(" ") ? .failure(NameRejection("Name has a space.")) : .success($0) },
        random: SeededRandom(state: 1),
        wallClock: { 1_700_000_000_000 })
    var now: Duration = .zero

    mutating func connect(_ id: UInt64) -> ConnectionID {
        state.connected(ConnectionID(id), now: now)
        return ConnectionID(id)
    }

    mutating func send(_ message: ClientMessage, on connection: ConnectionID) -> [RelayAction] {
        state.received(message.encoded(), on: connection, now: now)
    }

    /// Joins and returns the member id from the `joined` answer.
    mutating func join(_ name: String, room: String = "standup", on connection: ConnectionID) -> UInt32 {
        let actions = send(.join(JoinRequest(room: room, name: name)), on: connection)
        for case .send(.joined(let joined), _) in actions { return joined.you.id }
        Issue.record("no joined in \(actions)")
        return 0
    }
}

/// Messages sent to one connection, in order.
func messages(to connection: ConnectionID, in actions: [RelayAction]) -> [ServerMessage] {
    actions.compactMap { action in
        if case .send(let message, let targets) = action, targets.contains(connection) { return message }
        return nil
    }
}

/// The `joined` answer when it is the first message to the connection, else nil (for `#require`).
func joinedAnswer(to connection: ConnectionID, in actions: [RelayAction]) -> JoinedRoom? {
    if case .joined(let joined)? = messages(to: connection, in: actions).first { return joined }
    return nil
}

/// The error when it is the first message to the connection, else nil.
func errorAnswer(to connection: ConnectionID, in actions: [RelayAction]) -> SignalingError? {
    if case .error(let error)? = messages(to: connection, in: actions).first { return error }
    return nil
}

@Suite(.lane(.timing))
struct RelayStateTests {
    @Test func joinAnswersWithMembersAndCredentialsAndTellsTheOthers() throws {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "bob", videoMuted: true)), on: b)
        let joined = try #require(joinedAnswer(to: b, in: actions), "bob got no joined: \(actions)")
        #expect(joined.room == "standup")
        #expect(joined.members.map(\.id) == [alice])
        #expect(joined.you.videoMuted)
        #expect(joined.media.udpPort == 7878)
        #expect(joined.media.credential.count == 32)
        #expect(Set([joined.you.ssrcs.audio, joined.you.ssrcs.video, joined.you.ssrcs.videoLow]).count == 3)
        #expect(messages(to: a, in: actions) == [.memberJoined(MemberJoined(member: joined.you))])
        #expect(relay.state.rooms["standup"]?.members == [alice, joined.you.id])
    }

    @Test func aLateJoinerIsToldHowLongEachMemberHasBeenInTheRoom() throws {
        var relay = Harness()
        let alice = relay.join("alice", on: relay.connect(1))
        relay.now = .seconds(60)
        let carol = relay.join("carol", on: relay.connect(2))
        relay.now = .milliseconds(540_500)
        let b = relay.connect(3)
        let joined = try #require(
            joinedAnswer(to: b, in: relay.send(.join(JoinRequest(room: "standup", name: "bob")), on: b)))
        #expect(joined.members.map(\.id) == [alice, carol])
        #expect(joined.members.map(\.inCallFor) == [540.5, 480.5])
        #expect(joined.members.map(\.timeInCall) == [.milliseconds(540_500), .milliseconds(480_500)])
        #expect(joined.you.inCallFor == nil, "the joiner itself has just arrived")
    }

    @Test(
        "a member's time in the call is read only when plausible",
        arguments: [
            (540.5, Duration.milliseconds(540_500)), (0, .zero), (-1, nil), (.nan, nil), (.infinity, nil), (1e12, nil),
        ])
    func timeInCallBounds(seconds: Double, duration: Duration?) {
        let info = MemberInfo(
            id: 1, name: "a", role: .broadcaster, audioMuted: false, videoMuted: false,
            ssrcs: MemberSSRCs(block: 4), inCallFor: seconds)
        #expect(info.timeInCall == duration)
    }

    @Test func badNamesAreRefusedWithTheRuleMessage() {
        var relay = Harness()
        let a = relay.connect(1)
        #expect(
            messages(to: a, in: relay.send(.join(JoinRequest(room: "", name: "a")), on: a))
                == [.error(SignalingError(.badRoomName, "Room name is empty."))])
        #expect(
            messages(to: a, in: relay.send(.join(JoinRequest(room: "r", name: "a b")), on: a))
                == [.error(SignalingError(.badName, "Name has a space."))])
        #expect(relay.state.members.isEmpty)
        #expect(relay.state.counters.signalingErrors == 2)
    }

    @Test func messagesBeforeJoinAreRefused() {
        var relay = Harness()
        let a = relay.connect(1)
        #expect(
            messages(to: a, in: relay.send(.chat(ChatSend(text: "hi")), on: a))
                == [.error(SignalingError(.notJoined, "send \"join\" before \"chat\""))])
        #expect(messages(to: a, in: relay.send(.ping(KeepAlive(token: 5)), on: a)) == [.pong(KeepAlive(token: 5))])
    }

    @Test func secondJoinOnOneConnectionIsRefused() {
        var relay = Harness()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        #expect(
            messages(to: a, in: relay.send(.join(JoinRequest(room: "x", name: "a")), on: a))
                == [.error(SignalingError(.alreadyJoined, "this connection already joined a room"))])
    }

    @Test func chatGetsOneRoomOrderAndTheSenderGetsItsRefBack() {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        let first = relay.send(.chat(ChatSend(text: "one", ref: "r1")), on: a)
        relay.now += .seconds(1)
        let second = relay.send(.chat(ChatSend(text: "two")), on: b)
        #expect(
            messages(to: b, in: first) == [
                .chat(
                    ChatDelivery(
                        seq: 1, from: alice, name: "alice", text: "one",
                        time: 1_700_000_000_000))
            ])
        #expect(
            messages(to: a, in: first) == [
                .chat(
                    ChatDelivery(
                        seq: 1, from: alice, name: "alice", text: "one",
                        time: 1_700_000_000_000, ref: "r1"))
            ])
        let seqs = (messages(to: a, in: second) + messages(to: b, in: second)).compactMap { message -> UInt64? in
            if case .chat(let chat) = message { return chat.seq }
            return nil
        }
        #expect(seqs == [2, 2])
    }

    @Test("a line sent again under a reference the relay has seen is echoed to its sender only, not said twice")
    func aLineSentAgainIsNotSaidTwice() {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        _ = relay.send(.chat(ChatSend(text: "one", ref: "c1")), on: a)
        let again = relay.send(.chat(ChatSend(text: "one", ref: "c1")), on: a)
        #expect(messages(to: b, in: again).isEmpty, "bob hears it once")
        guard case .chat(let echo)? = messages(to: a, in: again).first else {
            Issue.record("no echo to alice: \(again)")
            return
        }
        #expect(echo.ref == "c1" && echo.seq == 1, "the echo settles alice's line; the room's order is unchanged")
        // Only the last 16 references are kept, and a reference longer than 32 bytes is never kept.
        for line in 2...17 {
            relay.now += .seconds(1)  // within the chat rate limit
            _ = relay.send(.chat(ChatSend(text: "line", ref: "c\(line)")), on: a)
        }
        relay.now += .seconds(1)
        #expect(messages(to: b, in: relay.send(.chat(ChatSend(text: "one", ref: "c1")), on: a)).count == 1)
        let long = String(repeating: "x", count: 33)
        relay.now += .seconds(1)
        _ = relay.send(.chat(ChatSend(text: "long", ref: long)), on: a)
        relay.now += .seconds(1)
        #expect(messages(to: b, in: relay.send(.chat(ChatSend(text: "long", ref: long)), on: a)).count == 1)
    }

    @Test func muteChangesReachTheOthersWithFullState() {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        let actions = relay.send(.mute(MuteChange(video: true)), on: a)
        #expect(messages(to: b, in: actions) == [.mute(MemberMute(id: alice, audio: false, video: true))])
        #expect(messages(to: a, in: actions).isEmpty)
        #expect(relay.state.members[alice]?.info.videoMuted == true)
    }

    @Test func leaveIsReportedAsQuitAndEmptyRoomsDisappear() {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        let bob = relay.join("bob", on: b)
        let actions = relay.send(.leave, on: a)
        // Bob is told alice quit, and that he hosts the room now.
        #expect(
            messages(to: b, in: actions) == [
                .memberLeft(MemberLeft(id: alice, reason: .quit)), .host(MemberRef(id: bob)),
            ])
        #expect(actions.contains(.close(a)))
        _ = relay.send(.leave, on: b)
        #expect(relay.state.rooms.isEmpty)
        #expect(relay.state.members[bob] == nil)
    }

    @Test func silentMembersTimeOutEvenAfterTheirConnectionDropped() {
        var relay = Harness()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        let bob = relay.join("bob", on: b)
        relay.now += .seconds(5)
        _ = relay.send(.ping(KeepAlive(token: 1)), on: b)
        #expect(relay.state.disconnected(a, now: relay.now).isEmpty, "no goodbye yet: alice may come back")
        relay.now += .seconds(5)
        #expect(relay.state.tick(now: relay.now).isEmpty, "exactly at the timeout nobody is removed")
        relay.now += .milliseconds(250)
        let actions = relay.state.tick(now: relay.now)
        #expect(
            messages(to: b, in: actions) == [
                .memberLeft(MemberLeft(id: alice, reason: .timeout)),
                .host(MemberRef(id: bob)),
            ])
        relay.now += .seconds(6)
        let later = relay.state.tick(now: relay.now)
        #expect(later.contains(.close(b)), "bob went silent too and is closed")
    }

    @Test func floodsAreDroppedWithOneNoticePerSecond() {
        var relay = Harness()
        let a = relay.connect(1)
        var notices = 0
        var pongs = 0
        for token in 0..<20 {
            for message in messages(to: a, in: relay.send(.ping(KeepAlive(token: UInt64(token))), on: a)) {
                if case .pong = message { pongs += 1 }
                if case .error(let error) = message, error.code == .rateLimited { notices += 1 }
            }
        }
        #expect(pongs == 5)
        #expect(notices == 1)
        #expect(relay.state.counters.rateLimited == 15)
        relay.now += .seconds(2)
        #expect(messages(to: a, in: relay.send(.ping(KeepAlive(token: 99)), on: a)) == [.pong(KeepAlive(token: 99))])
    }

    @Test func bindNeedsTheExactCredential() throws {
        var relay = Harness()
        let a = relay.connect(1)
        let actions = relay.send(.join(JoinRequest(room: "r", name: "alice")), on: a)
        let joined = try #require(joinedAnswer(to: a, in: actions), "no joined: \(actions)")
        let token = try #require(BindToken(hex: joined.media.credential))
        let ssrc = joined.media.ssrcs.audio
        #expect(relay.state.verifyBind(BindRequest(ssrc: ssrc, memberID: joined.you.id, token: token)) == .bound)
        var wrong = token.bytes
        wrong[15] ^= 1
        let wrongToken = try #require(BindToken(bytes: wrong))
        #expect(
            relay.state.verifyBind(BindRequest(ssrc: ssrc, memberID: joined.you.id, token: wrongToken))
                == .wrongToken)
        #expect(
            relay.state.verifyBind(BindRequest(ssrc: ssrc + 1, memberID: joined.you.id, token: token))
                == .wrongToken)
        #expect(relay.state.verifyBind(BindRequest(ssrc: ssrc, memberID: 999, token: token)) == .unknownMember)
        #expect(relay.state.counters.bindFailures == 3)
    }

    @Test(arguments: [
        ("garbage", "line 1"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n", "BUNDLE"),
    ])
    func aBrowserOfferTheRelayCannotAnswerRefusesTheJoinByName(offer: String, named: String) throws {
        var relay = Harness()
        let a = relay.connect(1)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "bea", webrtc: offer)), on: a)
        let error = try #require(errorAnswer(to: a, in: actions), "\(actions)")
        #expect(error.code == .badField)
        #expect(error.message.hasPrefix("join field \"webrtc\" is not an offer the relay can answer: "), "\(error)")
        #expect(error.message.contains(named), "\(error)")
        #expect(relay.state.members.isEmpty && relay.state.counters.signalingErrors == 1)
    }

    @Test func garbageIsAnsweredAndCounted() {
        var relay = Harness()
        let a = relay.connect(1)
        let actions = relay.state.received("{{{", on: a, now: relay.now)
        #expect(messages(to: a, in: actions) == [.error(SignalingError(.badJSON, "message is not valid JSON"))])
        #expect(relay.state.counters.signalingErrors == 1)
    }
}

@Suite(.lane(.timing))
struct RelayResumeTests {
    /// Alice and Bob in "standup"; returns Alice's joined answer.
    func twoMembers(_ relay: inout Harness) -> JoinedRoom? {
        let a = relay.connect(1)
        let b = relay.connect(2)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "alice")), on: a)
        _ = relay.join("bob", on: b)
        for case .send(.joined(let joined), _) in actions { return joined }
        return nil
    }

    @Test func aDroppedMemberResumesWithoutTheOthersNoticing() throws {
        var relay = Harness()
        let alice = try #require(twoMembers(&relay))
        _ = relay.state.disconnected(ConnectionID(1), now: relay.now)
        relay.now += .seconds(3)
        let again = relay.connect(3)
        let token = ResumeToken(member: alice.you.id, credential: alice.media.credential)
        let actions = relay.send(
            .join(
                JoinRequest(
                    room: "standup", name: "alice", audioMuted: true,
                    resume: token)), on: again)
        let joined = try #require(joinedAnswer(to: again, in: actions), "no joined: \(actions)")
        #expect(joined.you.id == alice.you.id)
        #expect(joined.media == alice.media, "same SSRCs and credential: media keeps flowing")
        #expect(joined.members.map(\.name) == ["bob"])
        #expect(
            messages(to: ConnectionID(2), in: actions)
                == [.mute(MemberMute(id: alice.you.id, audio: true, video: false))],
            "bob hears only the changed mute, no leave or join")
        #expect(relay.state.rooms["standup"]?.members.count == 2)
        relay.now += .seconds(8)
        #expect(
            !relay.state.tick(now: relay.now).contains(.memberRemoved(id: alice.you.id, room: "standup")),
            "the resumed member counts as alive from the resume on")
    }

    @Test func aLateOrWrongResumeJoinsAfresh() throws {
        var relay = Harness()
        let alice = try #require(twoMembers(&relay))
        // A wrong credential cannot take over alice's membership: the join is a fresh one, which under her name is
        // refused while she is in the room, and under another name gets a membership of its own.
        let wrong = ResumeToken(member: alice.you.id, credential: String(repeating: "0", count: 32))
        let c = relay.connect(3)
        let refused = relay.send(.join(JoinRequest(room: "standup", name: "alice", resume: wrong)), on: c)
        #expect(errorAnswer(to: c, in: refused)?.code == .nameTaken, "\(refused)")
        let d = relay.connect(4)
        let other = relay.send(.join(JoinRequest(room: "standup", name: "mallory", resume: wrong)), on: d)
        let joined = try #require(joinedAnswer(to: d, in: other), "a wrong resume is a fresh join: \(other)")
        #expect(joined.you.id != alice.you.id, "a wrong credential cannot take over someone's membership")
        #expect(relay.state.members[alice.you.id]?.connection == ConnectionID(1), "alice keeps her membership")

        // The right credential in another room: a fresh join there.
        let token = ResumeToken(member: alice.you.id, credential: alice.media.credential)
        let e = relay.connect(5)
        let moved = relay.send(.join(JoinRequest(room: "other", name: "alice", resume: token)), on: e)
        let second = try #require(joinedAnswer(to: e, in: moved), "a resume elsewhere is a fresh join: \(moved)")
        #expect(second.you.id != alice.you.id, "a resume only works in the same room")

        // The right credential after alice timed out: her membership is gone, so a fresh join under her name.
        _ = relay.state.disconnected(ConnectionID(1), now: relay.now)
        relay.now += .milliseconds(10_250)
        #expect(relay.state.tick(now: relay.now).contains(.memberRemoved(id: alice.you.id, room: "standup")))
        let f = relay.connect(6)
        let late = relay.send(.join(JoinRequest(room: "standup", name: "alice", resume: token)), on: f)
        let third = try #require(joinedAnswer(to: f, in: late), "a late resume is a fresh join: \(late)")
        #expect(third.you.id != alice.you.id && third.media != alice.media, "a new membership after the timeout")
    }

    @Test func theOldConnectionClosingLaterDoesNotDetachTheResumedOne() throws {
        var relay = Harness()
        let alice = try #require(twoMembers(&relay))
        let again = relay.connect(3)
        let token = ResumeToken(member: alice.you.id, credential: alice.media.credential)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "alice", resume: token)), on: again)
        #expect(actions.contains(.close(ConnectionID(1))), "the half-open old connection is closed")
        _ = relay.state.disconnected(ConnectionID(1), now: relay.now)
        #expect(relay.state.members[alice.you.id]?.connection == again)
    }
}
