import Foundation
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The host role across a relay restart: it goes back to whoever held it, not to whoever reconnects first.
@Suite(.lane(.timing))
struct RoomHostRestartTests {
    /// Alice hosts "standup" with bob in it; returns the relay's kept hosts and each one's resume token.
    func before() throws -> (hosts: [String: RoomHostRecord], alice: ResumeToken, bob: ResumeToken) {
        var relay = Harness()
        // Someone in another room first: the restarted relay below draws the same (seeded) credentials again, and
        // alice's old one must not be handed to a newcomer there.
        _ = relay.join("zoe", room: "lobby", on: relay.connect(9))
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = try #require(
            joinedAnswer(to: a, in: relay.send(.join(JoinRequest(room: "standup", name: "alice")), on: a)))
        let bob = try #require(
            joinedAnswer(to: b, in: relay.send(.join(JoinRequest(room: "standup", name: "bob")), on: b)))
        #expect(relay.state.rooms["standup"]?.host == alice.you.id)
        return (
            relay.state.roomHosts, ResumeToken(member: alice.you.id, credential: alice.media.credential),
            ResumeToken(member: bob.you.id, credential: bob.media.credential)
        )
    }

    @Test func theHostTakesTheRoleBackWhoeverReconnectsFirst() throws {
        let (hosts, aliceToken, bobToken) = try before()
        #expect(hosts.count == 2 && hosts["standup"]?.account == nil)

        var restarted = Harness()
        restarted.state.awaitHosts(hosts)
        let b = restarted.connect(1)
        let bob = try #require(
            joinedAnswer(
                to: b, in: restarted.send(.join(JoinRequest(room: "standup", name: "bob", resume: bobToken)), on: b)))
        #expect(bob.host == 0, "nobody hosts while alice is awaited")
        #expect(restarted.state.rooms["standup"]?.host == nil)
        #expect(restarted.state.roomHosts == hosts, "a second restart still awaits alice")

        restarted.now = .seconds(3)
        let a = restarted.connect(2)
        let actions = restarted.send(.join(JoinRequest(room: "standup", name: "alice", resume: aliceToken)), on: a)
        let alice = try #require(joinedAnswer(to: a, in: actions))
        #expect(alice.host == alice.you.id)
        #expect(messages(to: b, in: actions).contains(.host(MemberRef(id: alice.you.id))), "bob is told")
        #expect(restarted.state.returningHosts["standup"] == nil)
        #expect(
            restarted.state.roomHosts["standup"]?.credentialDigest
                == restarted.state.members[alice.you.id]?.credentialDigest,
            "the record follows alice's new membership")
    }

    @Test func anotherMemberHostsWhenTheHostDoesNotComeBackInTime() throws {
        let (hosts, _, _) = try before()
        var restarted = Harness()
        restarted.state.awaitHosts(hosts)
        let b = restarted.connect(1)
        let bob = restarted.join("bob", on: b)
        restarted.now = RelayState.hostReturnWindow - .milliseconds(1)
        _ = restarted.send(.ping(KeepAlive(token: 1)), on: b)
        #expect(restarted.state.tick(now: restarted.now).isEmpty)
        restarted.now = RelayState.hostReturnWindow
        _ = restarted.send(.ping(KeepAlive(token: 2)), on: b)
        let actions = restarted.state.tick(now: restarted.now)
        #expect(messages(to: b, in: actions) == [.host(MemberRef(id: bob))])
        #expect(restarted.state.rooms["standup"]?.host == bob)
        #expect(restarted.state.returningHosts["standup"] == nil)
    }

    @Test func aRoomNobodyComesBackToIsForgottenAfterTheWindow() {
        var restarted = Harness()
        restarted.state.awaitHosts(["gone": RoomHostRecord(credentialDigest: "00", account: nil)])
        #expect(restarted.state.tick(now: RelayState.hostReturnWindow - .milliseconds(1)).isEmpty)
        #expect(restarted.state.roomHosts.keys.sorted() == ["gone"], "still awaited inside the window")
        #expect(restarted.state.tick(now: RelayState.hostReturnWindow).isEmpty)
        #expect(restarted.state.roomHosts.isEmpty, "forgotten: not written to the file again")
    }

    @Test func aVerifiedAccountTakesItsRoleBackWithoutItsOldCredential() throws {
        var restarted = Harness()
        restarted.state.awaitHosts(["standup": RoomHostRecord(credentialDigest: "00", account: "alice")])
        let b = restarted.connect(1)
        _ = restarted.join("bob", on: b)
        let a = restarted.connect(2)
        let actions = restarted.state.join(
            JoinRequest(room: "standup", name: "Alice"), on: a, now: .zero, account: "Alice")
        let alice = try #require(joinedAnswer(to: a, in: actions))
        #expect(alice.host == alice.you.id)
    }

    @Test func theKeptHostsSurviveTheFileAndGarbageIsAClearError() throws {
        let folder = NSTemporaryDirectory() + "parley-hosts-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = RoomHostsFile(path: folder + "/room-hosts.json")
        #expect(try file.load().isEmpty, "no file yet: nothing awaited")
        let records = [
            "standup": RoomHostRecord(credentialDigest: "ab", account: "alice"),
            "board": RoomHostRecord(credentialDigest: "cd", account: nil),
        ]
        try file.save(records)
        #expect(try file.load() == records)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        try "{\"version\":1,\"rooms\":[1]}".write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect(throws: RoomHostsFile.Problem.self) { try file.load() }
        try "{\"version\":7,\"rooms\":{}}".write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect {
            try file.load()
        } throws: { error in
            "\(error)".contains("is version 7; this relay reads version 1")
        }
    }
}
