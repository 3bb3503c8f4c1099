import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Calls and messaging together, through a real relay with its SQLite store, real call engines (real codecs) and
/// real messaging clients on loopback: a verified account in a call, "in a call" presence, and the room's chat kept
/// as the room's channel (history for whoever joins later, posts from outside shown in the call).
@Suite(.serialized, .lane(.timing))
struct CallChannelLoopbackTests {
    let folder = NSTemporaryDirectory() + "parley-call-channel-\(UUID().uuidString)"

    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func startRelay() async throws -> Relay {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger())
        configuration.messageStore = try SQLiteMessageStore(path: folder + "/messages.sqlite")
        return try await Relay.start(configuration)
    }

    func engine(_ name: String, relay: Relay, account: AccountIdentity? = nil, hideRoom: Bool = false)
        throws -> (CallEngine, EventLog, Task<Void, Never>)
    {
        var settings = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), room: "standup", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150), showsSelfView: false,
            logger: quietLogger())
        settings.account = account
        settings.hideRoom = hideRoom
        let engine = try CallEngine(settings)
        let log = EventLog()
        let task = log.consume(engine)
        engine.start()
        return (engine, log, task)
    }

    func messaging(_ identity: AccountIdentity, _ relay: Relay, heard: ChannelLoopbackTests.Heard = .init())
        async throws -> MessagingClient
    {
        try await MessagingClient.connect(
            to: ServerAddress(host: "127.0.0.1", port: relay.signalingPort), security: .insecure, identity: identity,
            loop: RelayLoopbackTests.group.next()
        ) { event in heard.events.withLock { $0.append(event) } }
    }

    func joined(_ log: EventLog) -> Bool { log.all.contains { if case .joined = $0 { true } else { false } } }

    @Test func aVerifiedAccountInACallItsPresenceAndTheRoomsKeptChat() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = AccountIdentity.create(name: "alice")
        let bob = AccountIdentity.create(name: "bob")
        // Both accounts exist on the relay (first login binds the keys); bob watches alice's presence.
        let aliceMessages = try await messaging(alice, relay)
        await aliceMessages.close()
        let bobHeard = ChannelLoopbackTests.Heard()
        let bobMessages = try await messaging(bob, relay, heard: bobHeard)
        bobMessages.watch(["alice"])
        _ = try await bobMessages.join(channel: "standup")

        // A guest starts the call and says something before alice arrives.
        let (carol, carolLog, carolTask) = try engine("carol", relay: relay)
        #expect(await eventually { joined(carolLog) })
        carol.perform(.sendChat("agenda: demo first"))
        #expect(
            await eventually { bobHeard.posts.contains { $0.text == "agenda: demo first" } },
            "a channel member online sees the call's chat live")
        #expect(bobHeard.posts.first { $0.text == "agenda: demo first" }?.from == "carol (guest)")

        // Alice joins as her account: everyone sees it verified, and her presence says where she is.
        let (aliceCall, aliceLog, aliceTask) = try engine("alice", relay: relay, account: alice)
        #expect(await eventually { joined(aliceLog) })
        #expect(
            await eventually {
                carolLog.all.contains {
                    if case .userJoined(_, let name, _, _) = $0 { name == "alice ✓" } else { false }
                }
            }, "carol sees alice verified")
        #expect(
            await eventually {
                bobHeard.presence.contains { $0.name == "alice" && $0.inCall == true && $0.room == "standup" }
            })
        let asked = try await bobMessages.presence(of: "alice")
        #expect(asked.online && asked.inCall == true && asked.state == "in a call (standup)")

        // What was said before alice joined reaches her as the room's history, activity lines included.
        let earlier = await eventually {
            aliceLog.all.contains { event in
                guard case .earlierChat(let entries) = event else { return false }
                return entries.contains { $0.text == "agenda: demo first" && $0.sender == "carol (guest)" }
                    && entries.contains { $0.kind == .system && $0.text.hasPrefix("carol (guest) joined the call") }
            }
        }
        #expect(earlier, "\(aliceLog.all.filter { if case .earlierChat = $0 { true } else { false } })")

        // A post in the room's channel from outside the call shows in it, under the verified account.
        _ = try await bobMessages.post("joining in 5", in: "standup")
        #expect(
            await eventually {
                aliceLog.all.contains(.channelMessage(sender: "bob ✓", text: "joining in 5"))
                    && carolLog.all.contains(.channelMessage(sender: "bob ✓", text: "joining in 5"))
            })

        // Alice leaves: her presence goes back to plain offline with a last-seen time; the history keeps it all.
        await aliceCall.leave()
        #expect(
            await eventually {
                bobHeard.presence.last.map { $0.name == "alice" && !$0.online && $0.lastSeen != nil } == true
            })
        let history = try await bobMessages.channelHistory("standup").reversed().map { MessagingClient.text(of: $0) }
        #expect(history.contains("agenda: demo first") && history.contains("joining in 5"))
        #expect(history.contains { $0.hasPrefix("alice joined the call (2 in the call)") })
        #expect(history.contains { $0.hasPrefix("alice left the call (1 in the call)") })

        await carol.leave()
        await bobMessages.close()
        carolTask.cancel()
        aliceTask.cancel()
        await relay.shutdown()
    }

    @Test func aHiddenRoomAForgedAccountAndAnUnknownOne() async throws {
        let relay = try await startRelay()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = AccountIdentity.create(name: "alice")
        let bob = AccountIdentity.create(name: "bob")
        await (try await messaging(alice, relay)).close()
        let bobMessages = try await messaging(bob, relay)

        // Hidden: "in a call", no room.
        let (hidden, hiddenLog, hiddenTask) = try engine("alice", relay: relay, account: alice, hideRoom: true)
        #expect(await eventually { joined(hiddenLog) })
        let presence = try await bobMessages.presence(of: "alice")
        #expect(presence.inCall == true && presence.room == nil && presence.state == "in a call")
        await hidden.leave()
        hiddenTask.cancel()

        // Someone with other keys claiming alice is refused; an account this relay never saw joins as a guest, told.
        let (_, forgedLog, forgedTask) = try engine("mallory", relay: relay, account: .create(name: "alice"))
        #expect(
            await eventually {
                forgedLog.all.contains {
                    if case .joinFailed(let reason) = $0 { reason.contains("did not sign") } else { false }
                }
            })
        let (stranger, strangerLog, strangerTask) = try engine("dan", relay: relay, account: .create(name: "dan"))
        #expect(
            await eventually {
                joined(strangerLog)
                    && strangerLog.all.contains {
                        if case .alert(.message(let text)) = $0 { text.contains("no account dan") } else { false }
                    }
            })
        await stranger.leave()
        await bobMessages.close()
        forgedTask.cancel()
        strangerTask.cancel()
        await relay.shutdown()
    }
}
