import ParleyBytes
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// Room access in the relay's state: passwords proven by challenge and response, the host, the stage, removal,
/// unique names and one encryption mode per room.
@Suite(.lane(.timing))
struct RoomAccessTests {
    static let verifier = RoomPassword.verifier(password: "open sesame", room: "standup")

    func relay(rooms: [String: ConfiguredRoom] = [:]) -> Harness {
        var harness = Harness()
        harness.state = RelayState(
            limits: SignalingLimits(livenessTimeout: .seconds(10), burst: 100, messagesPerSecond: 100),
            udpPort: 7878, roomRule: { .success($0) }, nameRule: { .success($0) }, random: SeededRandom(state: 7),
            configuredRooms: rooms, wallClock: { 0 })
        return harness
    }

    /// Asks for a challenge and answers it with `password`; returns what the relay said to the connection.
    func joinWithPassword(
        _ relay: inout Harness, _ password: String, name: String, room: String = "standup",
        on connection: ConnectionID, sendVerifier: Bool = false
    ) -> [ServerMessage] {
        guard
            case .challenge(let challenge)? = messages(to: connection, in: relay.send(.challenge, on: connection))
                .first, let nonce = Hex.decode(challenge.nonce)
        else {
            Issue.record("no challenge")
            return []
        }
        let verifier = RoomPassword.verifier(password: password, room: room)
        let proof = Hex.encode(RoomPassword.proof(verifier: verifier, challenge: nonce, room: room, name: name))
        let request = JoinRequest(
            room: room, name: name, proof: proof,
            verifier: sendVerifier ? Hex.encode(verifier) : nil)
        return messages(to: connection, in: relay.send(.join(request), on: connection))
    }

    func code(_ messages: [ServerMessage]) -> SignalingErrorCode? {
        if case .error(let error)? = messages.first { return error.code }
        return nil
    }

    func joined(_ messages: [ServerMessage]) -> JoinedRoom? {
        if case .joined(let joined)? = messages.first { return joined }
        return nil
    }

    @Test func theCreatorsPasswordGuardsTheRoom() throws {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        // Alice has a password for a room that does not exist: the relay asks for the verifier, then creates it.
        #expect(code(joinWithPassword(&relay, "open sesame", name: "alice", on: a)) == .passwordSetup)
        let created = try #require(
            joined(
                joinWithPassword(
                    &relay, "open sesame", name: "alice", on: a,
                    sendVerifier: true)))
        #expect(created.passwordProtected)
        #expect(relay.state.rooms["standup"]?.verifier == Self.verifier)

        // Without a proof, with the wrong password, or with a proof made for another name: refused.
        #expect(
            code(messages(to: b, in: relay.send(.join(JoinRequest(room: "standup", name: "bob")), on: b)))
                == .passwordRequired)
        #expect(code(joinWithPassword(&relay, "open says me", name: "bob", on: b)) == .wrongPassword)
        guard case .challenge(let challenge)? = messages(to: b, in: relay.send(.challenge, on: b)).first else {
            Issue.record("no challenge")
            return
        }
        let forCarol = RoomPassword.proof(
            verifier: Self.verifier, challenge: try #require(Hex.decode(challenge.nonce)),
            room: "standup", name: "carol")
        #expect(
            code(
                messages(
                    to: b,
                    in: relay.send(
                        .join(
                            JoinRequest(
                                room: "standup", name: "bob", proof: Hex.encode(forCarol))), on: b))) == .wrongPassword)

        // The right password joins; the proof cannot be used twice (the challenge is spent).
        #expect(joined(joinWithPassword(&relay, "open sesame", name: "bob", on: b)) != nil)
        guard case .challenge(let second)? = messages(to: c, in: relay.send(.challenge, on: c)).first else {
            Issue.record("no challenge")
            return
        }
        let proof = Hex.encode(
            RoomPassword.proof(
                verifier: Self.verifier,
                challenge: try #require(Hex.decode(second.nonce)),
                room: "standup", name: "carol"))
        #expect(
            joined(
                messages(
                    to: c,
                    in: relay.send(
                        .join(JoinRequest(room: "standup", name: "carol", proof: proof)),
                        on: c))) != nil)
        let d = relay.connect(4)
        // Replayed on another connection, whose challenge (none asked) differs: refused.
        #expect(
            code(
                messages(
                    to: d,
                    in: relay.send(
                        .join(JoinRequest(room: "standup", name: "carol", proof: proof)),
                        on: d))) == .wrongPassword)
    }

    @Test func guessingClosesTheConnectionAfterFiveWrongProofs() {
        var relay = relay(rooms: [
            "vault": ConfiguredRoom(verifier: RoomPassword.verifier(password: "x", room: "vault"))
        ])
        let a = relay.connect(1)
        for attempt in 1...RelayState.maximumFailedProofs {
            let challenge = relay.send(.challenge, on: a)
            _ = challenge
            guard case .challenge(let c)? = messages(to: a, in: challenge).first, let nonce = Hex.decode(c.nonce) else {
                Issue.record("no challenge")
                return
            }
            let proof = RoomPassword.proof(
                verifier: RoomPassword.verifier(password: "guess\(attempt)", room: "vault"),
                challenge: nonce, room: "vault", name: "eve")
            let actions = relay.send(.join(JoinRequest(room: "vault", name: "eve", proof: Hex.encode(proof))), on: a)
            #expect(actions.contains(.close(a)) == (attempt == RelayState.maximumFailedProofs), "attempt \(attempt)")
        }
    }

    @Test func aConfiguredRoomNeedsItsPasswordEvenWhenEmpty() {
        var relay = relay(rooms: ["standup": ConfiguredRoom(verifier: Self.verifier, openStage: true)])
        let a = relay.connect(1)
        #expect(
            code(messages(to: a, in: relay.send(.join(JoinRequest(room: "standup", name: "alice")), on: a)))
                == .passwordRequired)
        let room = joined(joinWithPassword(&relay, "open sesame", name: "alice", on: a))
        #expect(room?.passwordProtected == true)
        #expect(room?.openStage == true)
    }

    static let nameCases: [(String, String, SignalingErrorCode?)] = [
        ("same name", "bob", .nameTaken),
        ("same name in other case", "BOB", .nameTaken),
        ("another name", "bobby", nil),
    ]

    @Test(arguments: nameCases)
    func displayNamesAreUniqueInARoom(what: String, second: String, refused: SignalingErrorCode?) {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        _ = relay.join("bob", on: a)
        let answer = messages(to: b, in: relay.send(.join(JoinRequest(room: "standup", name: second)), on: b))
        #expect(code(answer) == refused, "\(what)")
        // Another room may have its own bob.
        #expect(joined(messages(to: c, in: relay.send(.join(JoinRequest(room: "other", name: "bob")), on: c))) != nil)
    }

    @Test func aRoomKeepsOneEncryptionMode() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        let d = relay.connect(4)
        let first = joined(
            messages(
                to: a,
                in: relay.send(
                    .join(
                        JoinRequest(
                            room: "standup", name: "alice",
                            encryption: "AES-128-GCM")), on: a)))
        #expect(first?.encryption == "AES-128-GCM")
        for (connection, mode, name) in [(b, nil, "bob"), (c, "AES-256-GCM", "carol")]
            as [(ConnectionID, String?, String)]
        {
            let answer = messages(
                to: connection,
                in: relay.send(
                    .join(
                        JoinRequest(
                            room: "standup", name: name, encryption: mode)), on: connection))
            #expect(code(answer) == .encryptionMismatch, "\(name) with \(mode ?? "no encryption")")
        }
        #expect(
            joined(
                messages(
                    to: d,
                    in: relay.send(
                        .join(
                            JoinRequest(
                                room: "standup", name: "dave", encryption: "AES-128-GCM")), on: d))) != nil)
    }

    @Test func onlyTheHostLetsTheAudienceBroadcast() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        let alice = relay.join("alice", on: a)
        _ = relay.send(.join(JoinRequest(room: "standup", name: "bob", role: .audience)), on: b)
        let bob = relay.state.member(on: b)!.info.id
        _ = relay.join("carol", on: c)
        #expect(relay.state.rooms["standup"]?.host == alice)

        // Bob asks for himself: refused, and the host hears his hand go up.
        let asked = relay.send(.role(RoleRequest(role: .broadcaster)), on: b)
        #expect(code(messages(to: b, in: asked)) == .notAllowed)
        #expect(messages(to: a, in: asked) == [.hand(MemberRef(id: bob))])
        #expect(relay.state.members[bob]?.info.role == .audience)
        // Carol is not the host: she cannot allow him.
        #expect(code(messages(to: c, in: relay.send(.allow(MemberRef(id: bob)), on: c))) == .notAllowed)
        // Alice allows him: everyone hears of his new role.
        let allowed = relay.send(.allow(MemberRef(id: bob)), on: a)
        #expect(allowed.contains(.roleChanged(id: bob, role: .broadcaster)))
        #expect(messages(to: c, in: allowed) == [.role(MemberRoleChange(id: bob, role: .broadcaster))])
        // Once allowed, stepping down and back up needs nobody.
        _ = relay.send(.role(RoleRequest(role: .audience)), on: b)
        #expect(
            relay.send(.role(RoleRequest(role: .broadcaster)), on: b).contains(
                .roleChanged(id: bob, role: .broadcaster)))
    }

    @Test func theHostRemovesAMemberWhoIsToldSo() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        let alice = relay.join("alice", on: a)
        let bob = relay.join("bob", on: b)
        _ = relay.join("carol", on: c)
        #expect(code(messages(to: b, in: relay.send(.remove(MemberRef(id: alice)), on: b))) == .notAllowed)
        let actions = relay.send(.remove(MemberRef(id: bob)), on: a)
        guard case .removed(let removal)? = messages(to: b, in: actions).first else {
            Issue.record("bob was not told: \(actions)")
            return
        }
        #expect(removal.message.contains("alice") && removal.message.contains("removed you"))
        #expect(actions.contains(.close(b)))
        #expect(messages(to: c, in: actions).contains(.memberLeft(MemberLeft(id: bob, reason: .removed))))
        #expect(relay.state.members[bob] == nil)
    }

    @Test func aRemovedMemberCannotJoinAgainUntilTheHostReadmitsThem() throws {
        var relay = relay()
        let a = relay.connect(1)
        let alice = relay.join("alice", on: a)
        let bob = relay.join("bob", on: relay.connect(2))
        _ = relay.send(.remove(MemberRef(id: bob)), on: a)

        // Back under the same name (any case), on a new connection: refused, and told who decides.
        let again = relay.connect(3)
        let refusal = try #require(
            errorAnswer(to: again, in: relay.send(.join(JoinRequest(room: "standup", name: "BOB")), on: again)))
        #expect(refusal.code == .removedByHost)
        #expect(refusal.message == "alice, the host, removed you from standup; only the host can let you back in")
        #expect(relay.state.rooms["standup"]?.members == [alice])

        // Only the host readmits; a name nobody was removed under is an error that says so.
        let carol = relay.connect(4)
        _ = relay.join("carol", on: carol)
        #expect(code(messages(to: carol, in: relay.send(.readmit(Readmission(name: "bob")), on: carol))) == .notAllowed)
        #expect(
            errorAnswer(to: a, in: relay.send(.readmit(Readmission(name: "dave")), on: a))
                == SignalingError(.badField, "nobody called dave was removed from standup"))
        #expect(relay.send(.readmit(Readmission(name: "Bob")), on: a).isEmpty)
        let back = relay.connect(5)
        #expect(
            joinedAnswer(to: back, in: relay.send(.join(JoinRequest(room: "standup", name: "bob")), on: back)) != nil)
    }

    @Test func theRoomRemembersABoundedNumberOfRemovals() {
        var relay = relay()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        for index in 0..<(RelayState.Room.removedLimit + 5) {
            relay.now += .milliseconds(20)  // within alice's message rate
            let id = relay.join("m\(index)", on: relay.connect(UInt64(10 + index)))
            _ = relay.send(.remove(MemberRef(id: id)), on: a)
        }
        let removed = relay.state.rooms["standup"]?.removed ?? []
        #expect(removed.count == RelayState.Room.removedLimit)
        #expect(removed.first?.name == "m5", "the oldest removals are forgotten first")
    }

    @Test func whenTheHostLeavesTheNextMemberHosts() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let c = relay.connect(3)
        _ = relay.join("alice", on: a)
        let bob = relay.join("bob", on: b)
        _ = relay.join("carol", on: c)
        let actions = relay.send(.leave, on: a)
        #expect(messages(to: c, in: actions).contains(.host(MemberRef(id: bob))))
        #expect(relay.state.rooms["standup"]?.host == bob)
    }
}

/// The operator's rooms file.
@Suite(.lane(.timing))
struct RoomsFileTests {
    @Test func roomsWithPasswordsVerifiersAndStages() throws {
        let verifier = String(repeating: "ab", count: 32)
        let rooms = try RoomsFile.parse(
            """
            # rooms known before anyone joins
            standup password=open-sesame stage=open
            town-hall verifier=\(verifier)   # a stored verifier, not the password

            lobby
            board record=no
            """)
        #expect(
            rooms["standup"]
                == ConfiguredRoom(
                    verifier: RoomPassword.verifier(password: "open-sesame", room: "standup"), openStage: true))
        #expect(rooms["town-hall"] == ConfiguredRoom(verifier: [UInt8](repeating: 0xAB, count: 32)))
        #expect(rooms["lobby"] == ConfiguredRoom())
        #expect(rooms["board"] == ConfiguredRoom(recording: false))
    }

    static let bad: [(String, String)] = [
        ("standup stage=sometimes", #"rooms file line 1: stage is "open" or "host", not "sometimes""#),
        (
            "standup colour=blue",
            #"rooms file line 1: unknown setting "colour"; expected password, verifier, stage or record"#
        ),
        (
            "standup password",
            #"rooms file line 1: "password" is not a setting; write password=TEXT, verifier=HEX, stage=open|host "#
                + "or record=yes|no"
        ),
        ("standup record=maybe", #"rooms file line 1: record is "yes" or "no", not "maybe""#),
        ("standup verifier=12", "rooms file line 1: verifier must be 64 hex digits"),
        ("standup password=a password=b", "rooms file line 1: give a password or a verifier, once"),
        ("a\nb\na", "rooms file line 3: room a is listed twice"),
    ]

    @Test(arguments: bad)
    func badLinesNameTheLineAndTheProblem(text: String, message: String) {
        #expect(throws: RoomsFileError(message)) { try RoomsFile.parse(text) }
    }
}
