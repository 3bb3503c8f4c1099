import Foundation
import Logging
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Channels, the conversation list, receipts and watched presence through a real relay and the real client.
@Suite(.lane(.timing)) struct ChannelLoopbackTests {
    let folder = NSTemporaryDirectory() + "parley-channels-\(UUID().uuidString)"

    /// Everything a client heard live.
    final class Heard: Sendable {
        let events = Mutex<[MessagingEvent]>([])
        var posts: [ChannelPostDelivery] {
            events.withLock { $0 }.compactMap { if case .channelPost(let p) = $0 { p } else { nil } }
        }
        var receipts: [MessageReceipt] {
            events.withLock { $0 }.compactMap { if case .receipt(let r) = $0 { r } else { nil } }
        }
        var presence: [PresenceAnswer] {
            events.withLock { $0 }.compactMap { if case .presence(let p) = $0 { p } else { nil } }
        }
    }

    func startRelay() async throws -> Relay {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger)
        configuration.messageStore = try SQLiteMessageStore(path: folder + "/messages.sqlite")
        return try await Relay.start(configuration)
    }

    func client(_ identity: AccountIdentity, _ relay: Relay, _ heard: Heard = Heard()) async throws -> MessagingClient {
        try await MessagingClient.connect(
            to: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), security: .insecure, identity: identity,
            loop: RelayLoopbackTests.group.next()
        ) { event in heard.events.withLock { $0.append(event) } }
    }

    @Test func aLiveRecipientAcknowledgingWhileMessagesPourInGetsEachOnceInOrder() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = AccountIdentity.create(name: "alice")
        let bob = AccountIdentity.create(name: "bob")
        let bobHeard = Heard()
        let sender = try await client(alice, relay)
        let recipient = try await client(bob, relay, bobHeard)
        func received() -> [DirectMessageDelivery] {
            bobHeard.events.withLock { $0 }.compactMap { if case .message(let m) = $0 { m } else { nil } }
        }
        let sealed = DirectMessageSeal.seal("hi", from: alice, to: "bob", keys: bob.keys, id: "x")
        var acknowledged = 0
        for index in 0..<150 {
            sender.post(id: "m\(index)", to: "bob", sealed: sealed)
            if index % 10 == 9 {
                // Bob acknowledges what he has while more are on their way (a receipt must not bring them twice).
                let got = received()
                recipient.acknowledge(got[acknowledged...].map(\.sequence))
                acknowledged = got.count
                try await Task.sleep(for: .milliseconds(3))
            }
        }
        #expect(await eventually { received().count >= 150 })
        try await Task.sleep(for: .milliseconds(300))
        let all = received()
        #expect(all.count == 150 && Set(all.map(\.id)).count == 150, "\(all.count) deliveries")
        #expect(all.map(\.sequence) == all.map(\.sequence).sorted())
        await sender.close()
        await recipient.close()
        await relay.shutdown()
    }

    @Test func membersSeeEachOthersLinesLiveAndTheHistoryKeepsThemWithWhoJoinedAndLeft() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let aliceHeard = Heard()
        let bobHeard = Heard()
        let alice = try await client(.create(name: "alice"), relay, aliceHeard)
        let bob = try await client(.create(name: "bob"), relay, bobHeard)
        #expect(try await alice.join(channel: "design team").count == 1)
        #expect(try await bob.join(channel: "design team").count == 2)
        let joined = await eventually { aliceHeard.posts.contains { $0.kind == "joined" && $0.from == "bob" } }
        #expect(joined, "alice sees bob join live, with the count")
        #expect(aliceHeard.posts.last?.members == 2)

        _ = try await alice.post("mockups are up", in: "design team", id: "p-1")
        let live = await eventually { bobHeard.posts.contains { $0.text == "mockups are up" && $0.from == "alice" } }
        #expect(live)
        // A retry is never a duplicate.
        let retry = try await alice.post("mockups are up", in: "design team", id: "p-1")
        try await Task.sleep(for: .milliseconds(100))
        #expect(bobHeard.posts.filter { $0.text == "mockups are up" }.count == 1)

        let members = try await bob.members(of: "design team")
        #expect(members.count == 2 && members.names == ["alice", "bob"] && members.member)
        #expect(try await alice.leave(channel: "design team").count == 1)
        let left = await eventually { bobHeard.posts.contains { $0.kind == "left" && $0.from == "alice" } }
        #expect(left)

        let history = try await bob.channelHistory("design team")
        #expect(
            history.map { MessagingClient.text(of: $0) }.reversed()
                == ["alice joined (1 member)", "bob joined (2 members)", "mockups are up", "alice left (1 member)"])
        #expect(history.contains { $0.sequence == retry.sequence })

        // No longer a member: alice can neither post nor read it.
        do {
            _ = try await alice.post("still here?", in: "design team")
            Issue.record("a non-member posted")
        } catch let error as MessagingClientError {
            #expect(error.code == .notAllowed && error.description.contains("join it first"), "\(error)")
        }
        await alice.close()
        await bob.close()
        await relay.shutdown()
    }

    @Test func badChannelNamesAndOversizedLinesAreRefusedByName() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = try await client(.create(name: "alice"), relay)
        do {
            _ = try await alice.join(channel: "tëam/1")
            Issue.record("a bad channel name was taken")
        } catch let error as MessagingClientError {
            #expect(error.code == .badRoomName && error.description.contains("(e.g. tam1)"), "\(error)")
        }
        let messenger = try await TestMessenger.connect(.create(name: "bob"), port: relay.signalingPort)
        _ = try await messenger.login()
        messenger.send(
            .channelPost(ChannelPostSend(channel: "team", id: "x", text: String(repeating: "a", count: 2001))))
        let error = try await messenger.wait(for: "too large") { if case .error(let e) = $0 { e } else { nil } }
        #expect(error.code == .tooLarge && error.message.contains("2000"), "\(error)")
        await alice.close()
        await relay.shutdown()
    }

    @Test func theSenderHearsDeliveredThenReadAndTheListCountsUnread() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let aliceHeard = Heard()
        let alice = try await client(.create(name: "alice"), relay, aliceHeard)
        let bobIdentity = AccountIdentity.create(name: "bob")
        let bobFirst = try await client(bobIdentity, relay)
        await bobFirst.close()
        let offline = await eventually { relay.messaging?.onlineAccounts == ["alice"] }
        #expect(offline)
        alice.watch(["bob"])
        let watched = await eventually { aliceHeard.presence.last?.online == false }
        #expect(watched, "the current state comes at once")

        var sent: [MessageStored] = []
        for index in 1...3 { sent.append(try await alice.send("note \(index)", to: "bob")) }
        _ = try await alice.join(channel: "team")
        _ = try await alice.post("hello team", in: "team")

        let bob = try await client(bobIdentity, relay)
        let online = await eventually { aliceHeard.presence.last?.online == true }
        #expect(online, "alice hears bob come online")
        let waiting = try await bob.receiveWaiting()
        #expect(waiting.map(\.text) == ["note 1", "note 2", "note 3"])
        let delivered = await eventually {
            Set(aliceHeard.receipts.filter { !$0.read && $0.by == "bob" }.flatMap(\.sequences))
                == Set(sent.map(\.sequence))
        }
        #expect(delivered, "delivered receipts: \(aliceHeard.receipts)")
        _ = try await bob.join(channel: "team")
        _ = try await alice.post("welcome bob", in: "team")

        var list = try await bob.conversations()
        #expect(list.map(\.kind) == [.channel, .direct] && list.map(\.name) == ["team", "alice"])
        #expect(list[0].unread == 1 && list[0].lastText == "welcome bob" && list[0].lastFrom == "alice")
        #expect(list[1].unread == 3 && list[1].lastText == "note 3", "the last direct message is opened")

        bob.markRead("alice", through: waiting[1].sequence)
        let read = await eventually {
            aliceHeard.receipts.contains { $0.read && $0.sequences == [sent[0].sequence, sent[1].sequence] }
        }
        #expect(read, "read receipts: \(aliceHeard.receipts)")
        let posts = try await bob.channelHistory("team", limit: 1)
        bob.markChannelRead("team", through: posts[0].sequence)
        list = try await bob.conversations()
        #expect(list.map(\.unread) == [0, 1])

        await bob.close()
        let gone = await eventually { aliceHeard.presence.last.map { !$0.online && $0.lastSeen != nil } ?? false }
        #expect(gone, "alice hears bob go offline, with the time")
        await alice.close()
        await relay.shutdown()
    }
}
