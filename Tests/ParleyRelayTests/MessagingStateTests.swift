import Foundation
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// Relay messaging's decisions, driven by hand: time, nonces and what the store answered are arguments.
@Suite("Messaging state", .lane(.timing))
struct MessagingStateTests {
    static let alice = AccountIdentity.create(name: "alice")
    static let nonce = [UInt8](repeating: 7, count: 32)

    static func card(_ identity: AccountIdentity) -> AccountCard {
        AccountCard(
            name: identity.name, signingKey: Data(identity.keys.signing).base64EncodedString(),
            agreementKey: Data(identity.keys.agreement).base64EncodedString())
    }

    static func proof(_ identity: AccountIdentity, nonce: [UInt8] = nonce) -> LoginProof {
        LoginProof(
            signature: identity.signatureText(AccountIdentity.loginMessage(name: identity.name, challenge: nonce)))
    }

    /// A state with connection `id` logged in as `name` (its channels `channels`, its backlog sent).
    static func loggedIn(
        _ names: [UInt64: String], limits: MessagingLimits = MessagingLimits(), channels: [String] = []
    ) -> MessagingState {
        var state = MessagingState(limits: limits)
        for (id, name) in names.sorted(by: { $0.key < $1.key }) {
            state.opened(id, now: .zero)
            _ = state.loggedIn(id, as: name, created: false, channels: channels, waiting: 0)
            _ = state.backlogPage([], for: id)
        }
        return state
    }

    static func message(_ sequence: Int64, to recipient: String, from sender: String = "bob") -> StoredDirectMessage {
        StoredDirectMessage(
            sequence: sequence,
            message: NewDirectMessage(
                id: "m\(sequence)", sender: sender, recipient: recipient, sealed: [1, 2, 3], receivedAt: 1_000))
    }

    @Test("a login is a challenge, a proof that verifies, a binding, then the account's presence and its backlog")
    func loginSteps() throws {
        var state = MessagingState(limits: MessagingLimits())
        state.opened(1, now: .zero)
        let challenge = state.startLogin(Self.card(Self.alice), on: 1, nonce: Self.nonce)
        #expect(
            challenge == [.send(.challenge(LoginChallenge(nonce: Data(Self.nonce).base64EncodedString())), to: 1)])
        let pending = try state.checkProof(Self.proof(Self.alice), on: 1).get()
        #expect(pending.name == "alice")
        #expect(try state.checkBinding(.created, of: "alice", on: 1).get() == true)
        let actions = state.loggedIn(1, as: "alice", created: true, channels: ["team"], waiting: 3)
        #expect(
            actions == [
                .announcePresence(of: "alice"),
                .send(.loggedIn(LoggedIn(name: "alice", created: true, waiting: 3)), to: 1),
                .deliverBacklog(to: 1),
            ])
        #expect(state.onlineMembers["team"] == ["alice"])
        #expect(state.backlogDue(for: 1) == "alice")
    }

    @Test("a login is refused, saying why", arguments: ["signed another challenge", "no login first", "bad keys"])
    func loginRefusals(_ case: String) throws {
        var state = MessagingState(limits: MessagingLimits())
        state.opened(1, now: .zero)
        let expected: SignalingErrorCode
        switch `case` {
        case "signed another challenge":
            _ = state.startLogin(Self.card(Self.alice), on: 1, nonce: Self.nonce)
            let refusal = try #require(
                state.checkProof(Self.proof(Self.alice, nonce: [UInt8](repeating: 8, count: 32)), on: 1).failure)
            expected = .accountRefused
            #expect(refusal.actions.first.flatMap(Self.errorCode) == expected)
            // The challenge is used up: the right proof after a wrong one is refused too.
            #expect(state.checkProof(Self.proof(Self.alice), on: 1).failure != nil)
        case "no login first":
            let refusal = try #require(state.checkProof(Self.proof(Self.alice), on: 1).failure)
            #expect(refusal.actions.first.flatMap(Self.errorCode) == .notAllowed)
        default:
            let card = AccountCard(name: "alice", signingKey: "AAAA", agreementKey: "AAAA")
            let actions = state.startLogin(card, on: 1, nonce: Self.nonce)
            #expect(actions.first.flatMap(Self.errorCode) == .badField)
        }
    }

    @Test("the store's binding decides: another key's account and a full account are refused")
    func bindingDecides() throws {
        var limits = MessagingLimits()
        limits.connectionsPerAccount = 1
        let state = Self.loggedIn([1: "alice"], limits: limits)
        #expect(
            state.checkBinding(.belongsToOtherKeys, of: "bob", on: 2).failure?.actions.first.flatMap(Self.errorCode)
                == .accountRefused)
        #expect(
            state.checkBinding(.matches, of: "alice", on: 2).failure?.actions.first.flatMap(Self.errorCode)
                == .limitReached)
        #expect(try state.checkBinding(.matches, of: "bob", on: 2).get() == true)
    }

    @Test("requests past the burst are refused until time refills the allowance")
    func rateLimit() {
        var limits = MessagingLimits()
        limits.burst = 3
        limits.requestsPerSecond = 10
        var state = MessagingState(limits: limits)
        state.opened(1, now: .zero)
        let admitted = (0..<4).map { _ in state.admit(1, now: .zero) == nil }
        #expect(admitted == [true, true, true, false])
        #expect(state.admit(1, now: .milliseconds(50)) != nil)  // half a request refilled
        #expect(state.admit(1, now: .milliseconds(150)) == nil)
    }

    @Test("a connection with no login is closed at the login timeout, not before")
    func loginTimeout() {
        var state = MessagingState(limits: MessagingLimits())
        state.opened(1, now: .zero)
        state.opened(2, now: .seconds(5))
        #expect(state.closeStaleLogins(now: .milliseconds(9_999)).isEmpty)
        let actions = state.closeStaleLogins(now: .seconds(10))
        #expect(actions.count == 2)
        #expect(actions.last == .close(1, .policyViolation))
        #expect(state.connections.keys.sorted() == [2])
    }

    @Test("the backlog goes in acknowledged pages; live messages only after the last page, and never twice")
    func backlogThenLive() {
        var state = MessagingState(limits: MessagingLimits())
        state.opened(1, now: .zero)
        _ = state.loggedIn(1, as: "alice", created: false, channels: [], waiting: 0)
        let full = (1...Int64(maxMessagesPerPage)).map { Self.message($0, to: "alice") }
        #expect(state.backlogPage(full, for: 1).count == maxMessagesPerPage)
        #expect(state.backlogDue(for: 1) == nil)  // waits for the acknowledgement
        #expect(state.deliverLive(Self.message(500, to: "alice")).isEmpty)  // not caught up: comes in a page
        let receipt = PendingReceipt(connection: 1, sequences: full.map(\.sequence), account: "alice")
        let marked = state.receiptsMarked([receipt], .success([[]]))
        #expect(marked == [.deliverBacklog(to: 1)])
        #expect(state.backlogDue(for: 1) == "alice")
        _ = state.backlogPage([Self.message(500, to: "alice")], for: 1)
        #expect(state.backlogDue(for: 1) == nil)
        let live = Self.message(501, to: "alice")
        #expect(state.deliverLive(live).count == 1)
        #expect(state.deliverLive(live).isEmpty)
        #expect(state.deliverLive(Self.message(500, to: "alice")).isEmpty)  // still unacknowledged from the page
    }

    typealias PendingReceipt = MessagingState.PendingReceipt

    @Test("receipts are marked in chunks of about 64 messages a turn unless all are asked for")
    func receiptChunks() {
        var state = Self.loggedIn([1: "alice"])
        for index in 0..<10 {
            _ = state.queue(DeliveryReceipt(sequences: (0..<20).map { Int64(index * 20 + $0) }), from: "alice", on: 1)
        }
        state.flushScheduled = false
        let (chunk, actions) = state.takeReceipts(all: false)
        #expect(chunk.count == 4)  // 80 messages: the first receipt past 64
        #expect(actions == [.flushSoon])
        #expect(state.takeReceipts(all: true).receipts.count == 6)
        #expect(state.pendingReceipts.isEmpty)
    }

    @Test("stored sends are acknowledged and go live; a store that failed refuses each, so clients resend")
    func sendsStored() {
        var state = Self.loggedIn([1: "bob", 2: "alice"])
        state.inCluster = true
        _ = state.queue(DirectMessageSend(id: "m1", to: "alice", sealed: "AQID"), from: "bob", on: 1, exists: true)
        let (batch, messages) = state.takeSends(at: 1_000)
        #expect(messages.map(\.sealed) == [[1, 2, 3]])
        let stored = Self.message(9, to: "alice")
        let actions = state.sendsStored(batch, .success([.success((stored, true))]))
        #expect(
            actions == [
                .send(.stored(MessageStored(id: "m1", sequence: 9)), to: 1),
                .send(.message(MessagingState.delivery(stored)), to: 2),
                .publish(.messages([MessageReference(stored)])),
            ])
        let failed = state.sendsStored(batch, .failure(.unavailable("down")))
        #expect(failed.map(Self.errorCode) == [.storeUnavailable])
    }

    @Test("a send to an unknown account is refused; a known one is not looked up again")
    func unknownRecipient() {
        var state = Self.loggedIn([1: "bob"])
        let send = DirectMessageSend(id: "m1", to: "carol", sealed: "AQID")
        #expect(state.queue(send, from: "bob", on: 1, exists: false).map(Self.errorCode) == [.unknownAccount])
        #expect(state.needsLookup("carol"))
        _ = state.queue(send, from: "bob", on: 1, exists: true)
        #expect(!state.needsLookup("carol"))
    }

    @Test("the last connection closing makes an account offline: last seen written unless it is in a call")
    func closing() {
        var state = Self.loggedIn([1: "alice", 2: "alice"])
        #expect(state.closed(1, at: 5_000) == [])
        #expect(state.closed(2, at: 6_000) == [.setLastSeen("alice", at: 6_000), .announcePresence(of: "alice")])
        var inCall = Self.loggedIn([1: "bob"])
        _ = inCall.callActivity(account: "bob", member: 4, joined: true, room: "standup", at: 1)
        #expect(inCall.closed(1, at: 7_000) == [.announcePresence(of: "bob")])
        #expect(inCall.presence(of: "bob", lastSeen: 3).room == "standup")
    }

    @Test(
        "joining a channel is held to the account's and the channel's limits; a member may always join again",
        arguments: [
            (mine: 2, members: 5, member: false, refused: SignalingErrorCode?.some(.limitReached)),
            (mine: 1, members: 5, member: false, refused: .some(.limitReached)),
            (mine: 1, members: 4, member: false, refused: nil),
            (mine: 2, members: 5, member: true, refused: nil),
        ])
    func joinLimits(_ row: (mine: Int, members: Int, member: Bool, refused: SignalingErrorCode?)) {
        var limits = MessagingLimits()
        limits.channelsPerAccount = 2
        limits.membersPerChannel = 5
        var channels = (0..<row.mine).map { "c\($0)" }
        if row.member { channels[0] = "team" }
        let state = Self.loggedIn([1: "alice"], limits: limits, channels: channels)
        #expect(state.joinRefusal(of: "alice", to: "team", members: row.members)?.code == row.refused)
    }

    @Test("presence on other nodes is announced only when what watchers see changes")
    func presenceElsewhere() {
        var state = Self.loggedIn([1: "bob"])
        _ = state.watch(WatchList(names: ["carol"]), on: 1)
        let inRoom = NodePresence(messaging: true, calls: ["standup"])
        #expect(state.presenceElsewhere(of: "carol", on: "n2", inRoom) == [.announcePresence(of: "carol")])
        #expect(state.presenceElsewhere(of: "carol", on: "n3", inRoom).isEmpty)
        #expect(state.presenceElsewhere(of: "carol", on: "n2", nil).isEmpty)
        #expect(state.nodeGone("n3") == [.announcePresence(of: "carol")])
        let answer = state.presence(of: "carol", lastSeen: 42)
        #expect(!answer.online && answer.lastSeen == 42)
        #expect(state.announcements(answer) == [.send(.presence(answer), to: 1)])
    }

    static func errorCode(_ action: MessagingAction) -> SignalingErrorCode? {
        if case .send(.error(let error), _) = action { return error.code }
        return nil
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
