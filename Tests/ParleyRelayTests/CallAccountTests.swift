import ParleyBytes
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// Accounts in calls, in the relay's state: a join that claims an account waits for the shell's check, and the
/// answer decides whether the member is shown verified, joins as a guest told why, or is refused; open rooms'
/// chat and activity go to the shell to keep, sealed and password rooms' never do.
@Suite(.lane(.timing))
struct CallAccountTests {
    func relay(keepsChat: Bool = true) -> Harness {
        var harness = Harness()
        harness.state.keepsChat = keepsChat
        return harness
    }

    /// Asks for a challenge and sends a join signed by `identity` (as `claimed`); returns the relay's actions.
    func joinAsAccount(
        _ relay: inout Harness, _ identity: AccountIdentity, claimed: String? = nil, name: String,
        room: String = "standup", hideRoom: Bool = false, on connection: ConnectionID
    ) -> [RelayAction] {
        guard
            case .challenge(let challenge)? = messages(to: connection, in: relay.send(.challenge, on: connection))
                .first, let nonce = Hex.decode(challenge.nonce)
        else {
            Issue.record("no challenge")
            return []
        }
        let account = claimed ?? identity.name
        let signature = identity.signatureText(
            AccountIdentity.joinMessage(account: account, room: room, name: name, challenge: nonce))
        return relay.send(
            .join(
                JoinRequest(
                    room: room, name: name, account: AccountClaim(name: account, signature: signature),
                    hideRoom: hideRoom)), on: connection)
    }

    func errorCode(_ messages: [ServerMessage]) -> SignalingErrorCode? {
        if case .error(let error)? = messages.first { return error.code }
        return nil
    }

    func check(in actions: [RelayAction]) -> (account: String, message: [UInt8], signature: [UInt8])? {
        for case .checkAccount(_, let account, let message, let signature) in actions {
            return (account, message, signature)
        }
        return nil
    }

    @Test func aSignedJoinWaitsForTheCheckAndAVerifiedAccountIsShownToEveryone() {
        var relay = relay()
        let alice = AccountIdentity.create(name: "alice")
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("bob", on: b)
        let asked = joinAsAccount(&relay, alice, name: "Ally", on: a)
        guard let check = check(in: asked) else {
            Issue.record("the join waits for the account check: \(asked)")
            return
        }
        #expect(messages(to: a, in: asked).isEmpty, "nothing is answered before the check")
        // The shell verifies with the account's keys, as the messaging service does.
        #expect(alice.keys.verifies(check.signature, of: check.message))
        // A second join while the first is checked is refused.
        #expect(
            errorCode(messages(to: a, in: relay.send(.join(JoinRequest(room: "standup", name: "x")), on: a)))
                == .alreadyJoined)

        let actions = relay.state.accountChecked(a, .verified("alice"), now: relay.now)
        guard case .joined(let joined)? = messages(to: a, in: actions).first else {
            Issue.record("no joined: \(actions)")
            return
        }
        #expect(joined.you.account == "alice" && joined.you.label == "Ally ✓alice" && joined.accountProblem == nil)
        #expect(joined.chatKept == true)
        guard case .memberJoined(let seen)? = messages(to: b, in: actions).first else {
            Issue.record("bob was not told")
            return
        }
        #expect(seen.member.account == "alice", "others see the account verified")
        let activity = actions.compactMap { if case .callActivity(let a) = $0 { a } else { nil } }.first
        #expect(
            activity?.joined == true && activity?.member.account == "alice" && activity?.members == 2
                && activity?.kept == true && activity?.connection == a && activity?.sender == "alice")
    }

    @Test(arguments: [
        (AccountCheck.unverified("this relay has no account alice"), "this relay has no account alice"),
        (AccountCheck.refused("the account alice did not sign this join"), nil),
    ])
    func anUncheckedAccountJoinsAsAGuestAndAForgedOneIsRefused(check: AccountCheck, problem: String?) {
        var relay = relay()
        let a = relay.connect(1)
        _ = joinAsAccount(&relay, .create(name: "alice"), name: "alice", on: a)
        let answer = messages(to: a, in: relay.state.accountChecked(a, check, now: relay.now))
        switch answer.first {
        case .joined(let joined)?:
            #expect(problem != nil, "a forged claim must not join")
            #expect(joined.you.account == nil && joined.accountProblem == problem && joined.you.label == "alice")
        case .error(let error)?:
            #expect(problem == nil && error.code == .accountRefused && error.message.contains("did not sign"))
        default:
            Issue.record("no answer: \(answer)")
        }
    }

    @Test func aClaimNeedsAChallengeAndASignatureOfTheRightShape() {
        var relay = relay()
        let a = relay.connect(1)
        let claim = AccountClaim(name: "alice", signature: String(repeating: "A", count: 88))
        let noChallenge = messages(
            to: a,
            in: relay.send(
                .join(
                    JoinRequest(
                        room: "standup", name: "alice",
                        account: claim)), on: a))
        #expect(
            noChallenge.first.map { if case .error(let e) = $0 { e.message } else { "" } }?.contains("challenge")
                == true)
        _ = relay.send(.challenge, on: a)
        for signature in ["not base64!", "AAAA", String(repeating: "A", count: 4000)] {
            let bad = AccountClaim(name: "alice", signature: signature)
            let answer = messages(
                to: a,
                in: relay.send(
                    .join(JoinRequest(room: "standup", name: "alice", account: bad)),
                    on: a))
            #expect(errorCode(answer) == .badField, "\(signature)")
        }
    }

    @Test func openRoomsChatIsKeptWithTheSenderSealedAndPasswordRoomsAreNot() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("carol", on: a)
        let kept = relay.send(.chat(ChatSend(text: "hello")), on: a)
        let stored = kept.compactMap {
            if case .roomChat(let room, _, let sender, let text, _) = $0 { (room, sender, text) } else { nil }
        }
        #expect(
            stored.count == 1 && stored.first?.0 == "standup" && stored.first?.1 == "carol (guest)"
                && stored.first?.2 == "hello")

        // An encrypted room: the relay cannot read it, so nothing is kept and no history is promised.
        let answer = relay.send(.join(JoinRequest(room: "secret", name: "dave", encryption: "AES-128-GCM")), on: b)
        guard case .joined(let joined)? = messages(to: b, in: answer).first else {
            Issue.record("no joined")
            return
        }
        #expect(joined.chatKept == nil)
        let sealed = relay.send(.chat(ChatSend(text: "", sealed: "AAAA")), on: b)
        #expect(!sealed.contains { if case .roomChat = $0 { true } else { false } })
        #expect(
            answer.contains { if case .callActivity(let a) = $0 { !a.kept && a.hidesRoom } else { false } },
            "an encrypted room is neither kept nor named in presence")

        // A relay without a store keeps nothing.
        var plain = self.relay(keepsChat: false)
        let c = plain.connect(3)
        _ = plain.join("erin", on: c)
        #expect(
            !plain.send(.chat(ChatSend(text: "hi")), on: c).contains { if case .roomChat = $0 { true } else { false } })
    }

    @Test func aChannelPostFromOutsideShowsInTheCallFromNoMember() {
        var relay = relay()
        let a = relay.connect(1)
        _ = relay.join("carol", on: a)
        let actions = relay.state.channelLine(room: "standup", from: "bob", text: "running late", time: 5)
        guard case .chat(let chat)? = messages(to: a, in: actions).first else {
            Issue.record("no chat: \(actions)")
            return
        }
        #expect(chat.from == 0 && chat.name == "bob ✓" && chat.text == "running late")
        #expect(relay.state.channelLine(room: "nobody-here", from: "bob", text: "x", time: 5).isEmpty)
    }

    @Test func leavingTellsTheShellWithTheCountLeft() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("carol", on: a)
        _ = relay.join("dave", on: b)
        let actions = relay.send(.leave, on: b)
        let left = actions.compactMap { if case .callActivity(let a) = $0 { a } else { nil } }.first
        #expect(
            left?.joined == false && left?.members == 1 && left?.member.name == "dave" && left?.sender == "dave (guest)"
        )
    }
}
