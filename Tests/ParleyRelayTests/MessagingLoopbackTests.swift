import Foundation
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// A messaging client for tests: an account identity on a real WebSocket to `/parley/messages`.
final class TestMessenger: Sendable {
    let identity: AccountIdentity
    let connection: SignalingConnection
    private let box: Box

    private final class Box: Sendable {
        let events = Mutex<[MessagingEvent]>([])
        let closed = Mutex(false)
    }

    private init(identity: AccountIdentity, connection: SignalingConnection, box: Box) {
        self.identity = identity
        self.connection = connection
        self.box = box
    }

    static func connect(_ identity: AccountIdentity, port: Int) async throws -> TestMessenger {
        let box = Box()
        let connection = try await SignalingConnection.connect(
            to: ServerAddress(host: "127.0.0.1", port: port), path: MessagingService.path,
            on: RelayLoopbackTests.group.next()
        ) { text in
            guard let text else { return box.closed.withLock { $0 = true } }
            if let event = try? MessagingEvent.decode(text) { box.events.withLock { $0.append(event) } }
        }.get()
        return TestMessenger(identity: identity, connection: connection, box: box)
    }

    /// Connects and logs in (whatever the answer: a test that cares checks `login()` itself).
    static func loggedIn(_ identity: AccountIdentity, port: Int) async throws -> TestMessenger {
        let messenger = try await connect(identity, port: port)
        _ = try await messenger.login()
        return messenger
    }

    var events: [MessagingEvent] { box.events.withLock { $0 } }
    var isClosed: Bool { box.closed.withLock { $0 } }
    var errors: [SignalingError] { events.compactMap { if case .error(let e) = $0 { e } else { nil } } }

    func send(_ request: MessagingRequest) { connection.sendRawText(request.encoded()) }

    func wait<T>(for what: String, within window: Duration = .seconds(5), _ match: (MessagingEvent) -> T?) async throws
        -> T
    {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline {
            if let found = events.lazy.compactMap(match).first { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        // Errors are spelled out: a timeout after one usually means the relay said why.
        throw TestTimeout(what: what, seen: events.map { if case .error(let e) = $0 { "error \(e)" } else { $0.type } })
    }

    /// Logs in as `name` (default: the identity's own) with this identity's keys, answering the challenge.
    func login(as name: String? = nil) async throws -> MessagingEvent {
        let keys = identity.keys
        let name = name ?? identity.name
        let before = events.count
        send(
            .login(
                AccountCard(
                    name: name, signingKey: Data(keys.signing).base64EncodedString(),
                    agreementKey: Data(keys.agreement).base64EncodedString())))
        let challenge = try await wait(for: "challenge") { if case .challenge(let c) = $0 { c } else { nil } }
        let nonce = Array(Data(base64Encoded: challenge.nonce) ?? Data())
        let signature = identity.sign(AccountIdentity.loginMessage(name: name, challenge: nonce))
        send(.proof(LoginProof(signature: Data(signature).base64EncodedString())))
        return try await wait(for: "login answer") { _ in
            events.dropFirst(before).first { event in
                switch event {
                case .loggedIn, .error: true
                default: false
                }
            }
        }
    }

    /// Seals `text` to `recipient` (its keys looked up on the relay) and sends it under `id`; returns what was sent.
    @discardableResult
    func sendMessage(_ text: String, to recipient: String, id: String) async throws -> DirectMessageSend {
        // Keys are looked up once per recipient, as a client caches them.
        if !events.contains(where: { if case .keys(let keys) = $0 { keys.name == recipient } else { false } }) {
            send(.keys(AccountRef(name: recipient)))
        }
        let answer = try await wait(for: "keys of \(recipient)") {
            if case .keys(let keys) = $0, keys.name == recipient { keys } else { nil }
        }
        let keys = try AccountKeys(
            signing: Array(Data(base64Encoded: answer.signingKey)!),
            agreement: Array(Data(base64Encoded: answer.agreementKey)!))
        let sealed = DirectMessageSeal.seal(text, from: identity, to: recipient, keys: keys, id: id)
        let message = DirectMessageSend(id: id, to: recipient, sealed: Data(sealed).base64EncodedString())
        send(.send(message))
        return message
    }

    /// Stored acknowledgements so far, by id.
    var stored: [MessageStored] { events.compactMap { if case .stored(let s) = $0 { s } else { nil } } }

    /// The messages received so far from `sender`, opened, in arrival order.
    func messages(from sender: TestMessenger) -> [(sequence: Int64, id: String, text: String)] {
        events.compactMap { event in
            guard case .message(let delivery) = event, delivery.from == sender.identity.name,
                delivery.to == identity.name
            else { return nil }
            let sealed = Array(Data(base64Encoded: delivery.sealed) ?? Data())
            let text =
                (try? DirectMessageSeal.open(
                    sealed, by: identity, from: delivery.from,
                    senderKeys: sender.identity.keys, id: delivery.id))
                ?? "<does not open>"
            return (delivery.sequence, delivery.id, text)
        }
    }
}

@Suite(.lane(.timing)) struct MessagingLoopbackTests {
    let folder = NSTemporaryDirectory() + "parley-messaging-\(UUID().uuidString)"

    func startRelay() async throws -> Relay {
        try await startMessagingRelay(in: folder)
    }

    @Test func aMessageIsStoredThenDeliveredLiveSealedAndARetryIsNoDuplicate() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Each connection logs in as soon as it is open: an idle one meets the relay's login timeout (10 s) on a
        // loaded machine.
        let alice = try await TestMessenger.connect(.create(name: "alice"), port: relay.signalingPort)
        #expect(try await alice.login() == .loggedIn(LoggedIn(name: "alice", created: true, waiting: 0)))
        let bob = try await TestMessenger.connect(.create(name: "bob"), port: relay.signalingPort)
        #expect(try await bob.login() == .loggedIn(LoggedIn(name: "bob", created: true, waiting: 0)))

        let sent = try await alice.sendMessage("see you at ten", to: "bob", id: "a-1")
        let stored = try await alice.wait(for: "stored") {
            $0 == .stored(MessageStored(id: "a-1", sequence: 1)) ? true : nil
        }
        #expect(stored)
        _ = try await bob.wait(for: "the message") { if case .message = $0 { true } else { nil } }
        #expect(bob.messages(from: alice).map(\.text) == ["see you at ten"])
        let kept =
            try Data(contentsOf: URL(fileURLWithPath: folder + "/messages.sqlite"))
            + ((try? Data(contentsOf: URL(fileURLWithPath: folder + "/messages.sqlite-wal"))) ?? Data())
        #expect(!kept.contains(Data("see you at ten".utf8)), "the relay keeps only ciphertext")

        // A retry after a lost acknowledgement: acknowledged again with the same sequence, nothing new for bob.
        alice.send(.send(sent))
        let acknowledged = await eventually { alice.stored.count == 2 }
        #expect(acknowledged && alice.stored.allSatisfy { $0 == MessageStored(id: "a-1", sequence: 1) })
        bob.send(.ping(KeepAlive(token: 9)))
        _ = try await bob.wait(for: "pong") { if case .pong = $0 { true } else { nil } }
        #expect(bob.messages(from: alice).count == 1, "a retry is never a duplicate")
        await relay.shutdown()
    }

    @Test func messagesToAnOfflineAccountWaitAndArriveInOrderAtItsNextLogin() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await TestMessenger.connect(.create(name: "alice"), port: relay.signalingPort)
        _ = try await alice.login()
        let carolIdentity = AccountIdentity.create(name: "carol")
        let carolFirst = try await TestMessenger.connect(carolIdentity, port: relay.signalingPort)
        _ = try await carolFirst.login()
        carolFirst.connection.close()
        let offline = await eventually { relay.messaging?.onlineAccounts == ["alice"] }
        #expect(offline)
        alice.send(.presence(AccountRef(name: "carol")))
        let presence = try await alice.wait(for: "presence") { if case .presence(let p) = $0 { p } else { nil } }
        #expect(!presence.online && presence.lastSeen != nil, "\(presence)")

        for index in 1...250 { try await alice.sendMessage("note \(index)", to: "carol", id: "n\(index)") }
        let allStored = await eventually { alice.stored.count == 250 }
        #expect(allStored)

        let carol = try await TestMessenger.connect(carolIdentity, port: relay.signalingPort)
        #expect(try await carol.login() == .loggedIn(LoggedIn(name: "carol", created: false, waiting: 250)))
        // The first page (200) comes at once; the rest only after carol acknowledged it.
        let firstPage = await eventually { carol.messages(from: alice).count == 200 }
        #expect(firstPage)
        try await Task.sleep(for: .milliseconds(200))
        #expect(carol.messages(from: alice).count == 200, "the next page waits for the receipt")
        carol.send(.received(DeliveryReceipt(sequences: carol.messages(from: alice).map(\.sequence))))
        let all = await eventually { carol.messages(from: alice).count == 250 }
        #expect(all)
        #expect(carol.messages(from: alice).map(\.text) == (1...250).map { "note \($0)" }, "every one, in order, once")
        carol.send(.received(DeliveryReceipt(sequences: carol.messages(from: alice).suffix(50).map(\.sequence))))

        // History pages backwards, both directions of the conversation.
        alice.send(.history(HistoryQuery(peer: "carol", before: nil, limit: 3)))
        _ = try await alice.wait(for: "history end") { if case .historyEnd(let end) = $0 { end } else { nil } }
        let page = alice.events.compactMap { if case .message(let m) = $0 { m } else { nil } }
        #expect(page.map(\.id) == ["n250", "n249", "n248"] && page.allSatisfy(\.delivered))

        let again = try await TestMessenger.connect(carolIdentity, port: relay.signalingPort)
        #expect(try await again.login() == .loggedIn(LoggedIn(name: "carol", created: false, waiting: 0)))
        await relay.shutdown()
    }

    @Test func refusalsNameWhatWasWrong() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await TestMessenger.connect(.create(name: "alice"), port: relay.signalingPort)
        alice.send(.keys(AccountRef(name: "bob")))
        _ = try await alice.wait(for: "not logged in") { $0.errorCode == .notLoggedIn ? true : nil }
        _ = try await alice.login()

        let impostor = try await TestMessenger.connect(.create(name: "alice"), port: relay.signalingPort)
        guard case .error(let refused) = try await impostor.login() else {
            Issue.record("an impostor logged in")
            return
        }
        #expect(refused.code == .accountRefused && refused.message.contains("belongs to another key"), "\(refused)")

        let badName = try await TestMessenger.connect(.create(name: "x"), port: relay.signalingPort)
        let keys = badName.identity.keys
        badName.send(
            .login(
                AccountCard(
                    name: "two words", signingKey: Data(keys.signing).base64EncodedString(),
                    agreementKey: Data(keys.agreement).base64EncodedString())))
        let nameError = try await badName.wait(for: "bad name") { if case .error(let e) = $0 { e } else { nil } }
        #expect(nameError.code == .badName && nameError.message.contains("two_words"), "\(nameError)")

        let forged = try await TestMessenger.connect(.create(name: "dave"), port: relay.signalingPort)
        let daveKeys = forged.identity.keys
        forged.send(
            .login(
                AccountCard(
                    name: "dave", signingKey: Data(daveKeys.signing).base64EncodedString(),
                    agreementKey: Data(daveKeys.agreement).base64EncodedString())))
        _ = try await forged.wait(for: "challenge") { if case .challenge = $0 { true } else { nil } }
        forged.send(.proof(LoginProof(signature: Data(repeating: 1, count: 64).base64EncodedString())))
        let proofError = try await forged.wait(for: "bad proof") { if case .error(let e) = $0 { e } else { nil } }
        #expect(proofError.code == .accountRefused && proofError.message.contains("does not verify"))

        alice.connection.sendRawTextBytes([0x7B, 0xFF, 0xFE, 0x7D])
        let notText = try await alice.wait(for: "not UTF-8") { $0.errorCode == .badJSON ? $0 : nil }
        #expect("\(notText)".contains("not valid UTF-8"))
        alice.send(.send(DirectMessageSend(id: "x", to: "nobody", sealed: Data([1, 2, 3]).base64EncodedString())))
        _ = try await alice.wait(for: "unknown account") { $0.errorCode == .unknownAccount ? true : nil }
        alice.send(
            .send(
                DirectMessageSend(
                    id: "x", to: "alice", sealed: Data(count: maxSealedMessageBytes + 1).base64EncodedString())))
        let tooLarge = try await alice.wait(for: "too large") { $0.errorCode == .tooLarge ? $0 : nil }
        #expect("\(tooLarge)".contains("the limit is \(maxSealedMessageBytes)"))
        await relay.shutdown()
    }
}

extension MessagingEvent {
    /// The error code, if this is an error.
    var errorCode: SignalingErrorCode? { if case .error(let error) = self { error.code } else { nil } }
}

@Suite(.lane(.timing)) struct MessagingLoginTimeoutTests {
    let folder = NSTemporaryDirectory() + "parley-messaging-timeout-\(UUID().uuidString)"

    @Test func aConnectionThatNeverLogsInIsToldWhyAndClosedWhileOneThatDidStays() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Long enough for alice's login on a machine busy with every other suite; the idle one waits it out.
        let relay = try await startMessagingRelay(in: folder) { $0.messaging.loginTimeout = .seconds(3) }
        let alice = try await TestMessenger.loggedIn(.create(name: "alice"), port: relay.signalingPort)
        let idle = try await TestMessenger.connect(.create(name: "idle"), port: relay.signalingPort)
        // The relay looks for stale logins once a second.
        let told = try await idle.wait(for: "the login timeout", within: .seconds(15)) {
            $0.errorCode == .notLoggedIn ? $0 : nil
        }
        #expect("\(told)".contains("no login within") && "\(told)".contains("login timeout"), "\(told)")
        let closed = await eventually { idle.isClosed }
        #expect(closed, "the idle connection is closed")
        // The one that logged in long before is still served.
        alice.send(.presence(AccountRef(name: "alice")))
        let presence = try await alice.wait(for: "presence") { if case .presence(let p) = $0 { p } else { nil } }
        #expect(presence.online && !alice.isClosed)
        await relay.shutdown()
    }
}

@Suite(.lane(.timing)) struct MessagingReadOnlyStoreTests {
    let folder = NSTemporaryDirectory() + "parley-messaging-read-only-\(UUID().uuidString)"

    @Test func aReadOnlyStoreStillDeliversWhatItHoldsAndRefusesNewMessagesByName() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let aliceIdentity = AccountIdentity.create(name: "alice")
        let bobIdentity = AccountIdentity.create(name: "bob")
        // A relay that could write: both accounts exist, one message waits for bob.
        let writable = try await startMessagingRelay(in: folder)
        let bobFirst = try await TestMessenger.loggedIn(bobIdentity, port: writable.signalingPort)
        bobFirst.connection.close()
        let alice = try await TestMessenger.loggedIn(aliceIdentity, port: writable.signalingPort)
        try await alice.sendMessage("still there?", to: "bob", id: "r-1")
        _ = try await alice.wait(for: "stored") { if case .stored = $0 { true } else { nil } }
        await writable.shutdown()

        // The same store opened read-only (a disk remounted read-only, say).
        let relay = try await startMessagingRelay(in: folder, readOnly: true)
        let bob = try await TestMessenger.connect(bobIdentity, port: relay.signalingPort)
        guard case .loggedIn(let loggedIn) = try await bob.login() else {
            Issue.record("bob could not log in to a read-only store: \(bob.events)")
            return
        }
        #expect(loggedIn.waiting == 1)
        let delivered = try await bob.wait(for: "the waiting message") {
            if case .message(let m) = $0 { m } else { nil }
        }
        #expect(delivered.id == "r-1")
        try await bob.sendMessage("yes", to: "alice", id: "r-2")
        let refused = try await bob.wait(for: "store-failed") { $0.errorCode == .storeFailed ? $0 : nil }
        #expect("\(refused)".contains("the message store is read-only"), "\(refused)")
        #expect(!bob.stored.contains { $0.id == "r-2" }, "a refused message is not acknowledged")
        await relay.shutdown()
    }
}

@Suite(.lane(.timing)) struct MessagingStoreTroubleTests {
    let folder = NSTemporaryDirectory() + "parley-messaging-full-\(UUID().uuidString)"

    @Test func aFullStoreRefusesSendsWithItsReasonAcknowledgesNothingAndKeepsWhatItHas() async throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let relay = try await startMessagingRelay(in: folder, storeBytes: 160 * 1024)
        let alice = try await TestMessenger.loggedIn(.create(name: "alice"), port: relay.signalingPort)
        let bobIdentity = AccountIdentity.create(name: "bob")
        let bob = try await TestMessenger.loggedIn(bobIdentity, port: relay.signalingPort)
        bob.connection.close()
        let long = String(repeating: "x", count: 3000)
        var sent = 0
        while sent < 100, alice.errors.isEmpty {
            try await alice.sendMessage(long, to: "bob", id: "m\(sent)")
            sent += 1
            _ = try await alice.wait(for: "answer to m\(sent - 1)") { event -> Bool? in
                switch event {
                case .stored(let s) where s.id == "m\(sent - 1)": true
                case .error: true
                default: nil
                }
            }
        }
        let refusal = try #require(alice.errors.first, "the store never filled")
        #expect(refusal.code == .storeFailed && refusal.message.contains("the message store is full"), "\(refusal)")
        let acknowledged = alice.stored.map(\.id)
        #expect(
            acknowledged.count == sent - 1 && !acknowledged.contains("m\(sent - 1)"),
            "the refused one is not acknowledged")

        // Everything acknowledged before is still there for bob.
        let again = try await TestMessenger.connect(bobIdentity, port: relay.signalingPort)
        guard case .loggedIn(let loggedIn) = try await again.login() else {
            Issue.record("bob could not log in to a full store")
            return
        }
        #expect(loggedIn.waiting == acknowledged.count)
        await relay.shutdown()
    }
}
