import Foundation
import Logging
import ParleyBus
import ParleyMedia
import ParleyRoom
import ParleyStore
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// A wall clock the test sets (ms since 1970).
final class TestWallClock: Sendable {
    let milliseconds = Mutex<Int64>(1_700_000_000_000)
    func advance(_ by: Int64) { milliseconds.withLock { $0 += by } }
}

/// Several nodes' states whose bus is a queue: every event one publishes reaches each other node, in order, until
/// none is left. What each node's members were told is kept per node.
struct NodesOnABus {
    var nodes: [String: Harness] = [:]
    let clock = TestWallClock()

    init(_ ids: [String]) {
        for id in ids {
            var node = Harness()
            let clock = self.clock
            node.state = RelayState(
                limits: node.state.limits, udpPort: 7878,
                roomRule: { $0.isEmpty ? .failure(NameRejection("Room name is empty.")) : .success($0) },
                nameRule: { $0.contains(" ") ? .failure(NameRejection("Name has a space.")) : .success($0) },
                random: SeededRandom(state: UInt64(id.unicodeScalars.first!.value)),
                wallClock: { clock.milliseconds.withLock { $0 } })
            node.state.spansNodes = true
            node.state.nodeID = id
            nodes[id] = node
        }
    }

    /// Carries what `actions` (of `node`) publish to the other nodes, and what those publish in turn; returns every
    /// action, by node, the first ones included.
    mutating func deliver(_ actions: [RelayAction], from node: String) -> [String: [RelayAction]] {
        var all: [String: [RelayAction]] = [node: actions]
        var queue: [(ClusterEvent, String)] = actions.compactMap {
            if case .publish(let event) = $0 { (event, node) } else { nil }
        }
        while !queue.isEmpty {
            let (event, from) = queue.removeFirst()
            for id in nodes.keys.sorted() where id != from {
                let done = nodes[id]!.state.clusterEvent(event, from: from, now: nodes[id]!.now)
                all[id, default: []] += done
                queue += done.compactMap { if case .publish(let event) = $0 { (event, id) } else { nil } }
            }
        }
        return all
    }

    /// `message` said on connection `connection` of `node`, and what followed on every node.
    mutating func send(_ message: ClientMessage, on connection: ConnectionID, at node: String)
        -> [String: [RelayAction]]
    {
        deliver(nodes[node]!.send(message, on: connection), from: node)
    }

    /// Connects `connection` on `node` and joins `name`; returns its id there.
    mutating func join(
        _ name: String, at node: String, on connection: UInt64, role: MemberRole = .broadcaster
    ) -> UInt32 {
        let id = nodes[node]!.connect(connection)
        let actions = send(.join(JoinRequest(room: "standup", name: name, role: role)), on: id, at: node)
        for case .send(.joined(let joined), _) in actions[node] ?? [] { return joined.you.id }
        Issue.record("no joined for \(name) in \(actions[node] ?? [])")
        return 0
    }

    /// The id `node` gives the member called `name`.
    func id(of name: String, at node: String) -> UInt32? {
        nodes[node]!.state.members.first { $0.value.info.name == name }?.key
    }

    /// Who hosts the room on `node`, by name.
    func host(at node: String) -> String? {
        nodes[node]!.state.rooms["standup"]?.host.flatMap { nodes[node]!.state.members[$0]?.info.name }
    }
}

/// One host for a room across nodes, and the host's commands (`/allow`, `/remove`, `/readmit`, `/norecord`)
/// and everyone's recording reaching members wherever they joined.
@Suite(.lane(.timing))
struct RolesAcrossNodesTests {
    @Test(
        "every command travels the bus and back unchanged",
        arguments: [
            RoomControl.allow(node: "a", member: 7), .remove(node: "b", member: 9, name: "carol", account: "c@x"),
            .remove(node: "b", member: 9, name: "carol", account: nil), .readmit(name: "carol"), .hand,
        ])
    func aCommandRoundTrips(_ control: RoomControl) throws {
        let event = ClusterEvent.roomControl(room: "standup", member: 3, control: control)
        #expect(try JSONDecoder().decode(ClusterEvent.self, from: JSONEncoder().encode(event)) == event)
    }

    @Test func theOldestClaimHostsOnEveryNodeAndTheNextOldestWhenItLeaves() throws {
        var cluster = NodesOnABus(["a", "b"])
        _ = cluster.join("alice", at: "a", on: 1)
        _ = cluster.join("bob", at: "a", on: 2)
        cluster.clock.advance(5_000)
        // Carol opens the room on b, where nobody is yet: she hosts there until alice's older claim arrives.
        _ = cluster.join("carol", at: "b", on: 1)
        #expect(cluster.host(at: "a") == "alice")
        #expect(cluster.host(at: "b") == "alice")
        let aliceOnB = try #require(cluster.id(of: "alice", at: "b"))
        #expect(cluster.nodes["b"]!.state.members[aliceOnB]?.hostSince == 1_700_000_000_000)

        // Alice leaves: carol's claim is the oldest left, on both nodes; bob on a is told.
        let left = cluster.send(.leave, on: ConnectionID(1), at: "a")
        let carolOnA = try #require(cluster.id(of: "carol", at: "a"))
        let carolOnB = try #require(cluster.id(of: "carol", at: "b"))
        #expect(cluster.host(at: "a") == "carol" && cluster.host(at: "b") == "carol")
        #expect(messages(to: ConnectionID(2), in: left["a"] ?? []).contains(.host(MemberRef(id: carolOnA))))
        #expect(messages(to: ConnectionID(1), in: left["b"] ?? []).contains(.host(MemberRef(id: carolOnB))))

        // Carol leaves too: nobody claims any more; bob, the first member left, claims and hosts everywhere.
        cluster.clock.advance(1_000)
        let dave = cluster.join("dave", at: "b", on: 2)
        _ = cluster.send(.leave, on: ConnectionID(1), at: "b")
        #expect(cluster.host(at: "a") == "bob" && cluster.host(at: "b") == "bob")
        #expect(cluster.nodes["b"]!.state.rooms["standup"]?.host != dave)
    }

    @Test func aMemberHasOneIdOnEveryNode() throws {
        var cluster = NodesOnABus(["a", "b", "c"])
        let alice = cluster.join("alice", at: "a", on: 1)
        let carol = cluster.join("carol", at: "b", on: 1)
        let dave = cluster.join("dave", at: "c", on: 1)
        // A client that moves to another node finds the others under the ids it knew them by.
        for (name, id) in [("alice", alice), ("carol", carol), ("dave", dave)] {
            #expect(["a", "b", "c"].map { cluster.id(of: name, at: $0) } == [id, id, id], "\(name)")
        }
    }

    /// Node a is killed with alice and bob on it; one of them comes back through b (its next relay) before anyone
    /// found a dead (3 s). Carol opened the room on b, dave on c, each claiming the host role after alice.
    @Test(
        "a member coming back through another node brings its host claim: the host stays the host",
        arguments: [("alice", "the host"), ("bob", "a member who never hosted")])
    func aMemberMovingKeepsItsHostClaim(_ mover: String, _ what: String) throws {
        var cluster = NodesOnABus(["a", "b", "c"])
        let alice = cluster.join("alice", at: "a", on: 1)
        let bob = cluster.join("bob", at: "a", on: 2)
        cluster.clock.advance(1_000)
        _ = cluster.join("carol", at: "b", on: 1)
        cluster.clock.advance(1_000)
        _ = cluster.join("dave", at: "c", on: 1)
        #expect(["a", "b", "c"].map { cluster.host(at: $0) } == ["alice", "alice", "alice"])
        let earlier = try #require(cluster.nodes["a"]!.state.members[mover == "alice" ? alice : bob])

        cluster.nodes["a"] = nil  // kill -9: a says nothing more
        cluster.clock.advance(150)
        let back = cluster.nodes["b"]!.connect(2)
        let resume = ResumeToken(member: earlier.info.id, credential: earlier.credential.hex)
        let moved = cluster.send(.join(JoinRequest(room: "standup", name: mover, resume: resume)), on: back, at: "b")
        let answer = try #require(joinedAnswer(to: back, in: moved["b"] ?? []), "\(what)")
        #expect(["b", "c"].map { cluster.host(at: $0) } == ["alice", "alice"], "\(what)")
        let aliceOnB = try #require(cluster.id(of: "alice", at: "b"))
        #expect(answer.host == aliceOnB, "\(what): the joined answer names the host")
        // Carol (b) and dave (c) are never told anyone but alice hosts.
        for (node, told) in [("b", ConnectionID(1)), ("c", ConnectionID(1))] {
            let hosts = messages(to: told, in: moved[node] ?? []).compactMap {
                if case .host(let host) = $0 { host.id } else { nil }
            }
            #expect(hosts.allSatisfy { $0 == cluster.id(of: "alice", at: node) }, "\(what), at \(node): \(hosts)")
        }
        // Once a is found dead, its members still there leave: a host who came back stays; one who did not hands
        // the role to the next oldest claim (carol's).
        for node in ["b", "c"] {
            _ = cluster.deliver(cluster.nodes[node]!.state.nodeGone("a"), from: node)
        }
        let next = mover == "alice" ? "alice" : "carol"
        #expect(["b", "c"].map { cluster.host(at: $0) } == [next, next], "\(what)")
    }

    @Test func aNodeThatWasNotListeningLearnsTheRoomOnceItListens() throws {
        var cluster = NodesOnABus(["a", "b"])
        _ = cluster.join("alice", at: "a", on: 1)
        // Bob joins b before b listens on the bus: a hears him, but what a says back (alice) never reaches b.
        let onB = cluster.nodes["b"]!.connect(1)
        let bobJoins = cluster.nodes["b"]!.send(.join(JoinRequest(room: "standup", name: "bob")), on: onB)
        for case .publish(let event) in bobJoins {
            _ = cluster.nodes["a"]!.state.clusterEvent(event, from: "b", now: .zero)
        }
        #expect(cluster.id(of: "bob", at: "a") != nil)
        #expect(cluster.id(of: "alice", at: "b") == nil)
        // Listening now, b opens its rooms again: a announces alice again, and b's members hear of her.
        let rejoined = cluster.deliver(cluster.nodes["b"]!.state.rejoinBus(now: .zero), from: "b")
        let aliceOnB = try #require(cluster.id(of: "alice", at: "b"))
        #expect(
            messages(to: onB, in: rejoined["b"] ?? []).contains {
                if case .memberJoined(let joined) = $0 { joined.member.id == aliceOnB } else { false }
            })
        #expect(cluster.host(at: "b") == "alice")
        // A node with no member of its own in a room says nothing of it.
        #expect(NodesOnABus(["c"]).nodes["c"]!.state.rejoinBus(now: .zero).isEmpty)
    }

    @Test func oneNameTakenThroughTwoNodesAtOnceStaysWithTheEarlierJoin() throws {
        var cluster = NodesOnABus(["a", "b"])
        _ = cluster.join("carol", at: "a", on: 9)
        _ = cluster.join("dave", at: "b", on: 9)
        // Alice joins through b, and 3 ms later someone else calls themselves Alice through a, before either node
        // has heard of the other's.
        let onB = cluster.nodes["b"]!.connect(1)
        let first = cluster.nodes["b"]!.send(.join(JoinRequest(room: "standup", name: "alice")), on: onB)
        cluster.clock.advance(3)
        let onA = cluster.nodes["a"]!.connect(1)
        let second = cluster.nodes["a"]!.send(.join(JoinRequest(room: "standup", name: "Alice")), on: onA)
        #expect(joinedAnswer(to: onA, in: second) != nil && joinedAnswer(to: onB, in: first) != nil)
        _ = cluster.deliver(second, from: "a")
        #expect(cluster.nodes["b"]!.state.counters.remoteMembersRefused == 1, "b does not take the later one")
        let heard = cluster.deliver(first, from: "b")
        let told = messages(to: onA, in: heard["a"] ?? [])
        #expect(
            told.contains { if case .error(let error) = $0 { error.code == .nameTaken } else { false } }, "\(told)")
        #expect(heard["a"]?.contains(.close(onA)) == true)
        for node in ["a", "b"] {
            let named = cluster.nodes[node]!.state.members.values.filter { $0.info.name.lowercased() == "alice" }
            #expect(named.count == 1 && named.first?.node == (node == "a" ? "b" : nil), "\(node): \(named)")
        }
    }

    /// A member moving from a to b (its node drains): a, answering b's opening of the room, announces the member's
    /// earlier self once more before it hears of the move. That late entry must not take the name from the member
    /// (b) nor replace it (c).
    @Test func aMemberThatMovedKeepsItsNameWhenItsEarlierSelfIsAnnouncedLate() throws {
        var cluster = NodesOnABus(["a", "b", "c"])
        let onA = cluster.nodes["a"]!.connect(1)
        let answer = cluster.send(.join(JoinRequest(room: "standup", name: "alice")), on: onA, at: "a")
        let joined = try #require(joinedAnswer(to: onA, in: answer["a"] ?? []))
        _ = cluster.join("bob", at: "c", on: 1)
        cluster.clock.advance(1_000)
        let onB = cluster.nodes["b"]!.connect(1)
        let resume = ResumeToken(member: joined.you.id, credential: joined.media.credential)
        let moved = cluster.send(
            .join(JoinRequest(room: "standup", name: "alice", resume: resume)), on: onB, at: "b")
        #expect(joinedAnswer(to: onB, in: moved["b"] ?? []) != nil)
        #expect(
            !messages(to: onB, in: moved["b"] ?? []).contains { if case .error = $0 { true } else { false } },
            "\(messages(to: onB, in: moved["b"] ?? []))")
        #expect(moved["b"]?.contains(.close(onB)) == false)
        #expect(moved["a"]?.contains(.close(onA)) == true, "a closes the earlier self")
        let atC = cluster.nodes["c"]!.state.members.values.filter { $0.info.name == "alice" }
        #expect(atC.count == 1 && atC.first?.node == "b", "\(atC)")
    }

    @Test func equalClaimsGoToTheLowerNodeId() {
        var cluster = NodesOnABus(["a", "b"])
        // Both open the room in the same millisecond, before either has heard of the other.
        let onB = cluster.nodes["b"]!.connect(1)
        let bobJoins = cluster.nodes["b"]!.send(.join(JoinRequest(room: "standup", name: "bob")), on: onB)
        let onA = cluster.nodes["a"]!.connect(1)
        let aliceJoins = cluster.nodes["a"]!.send(.join(JoinRequest(room: "standup", name: "alice")), on: onA)
        _ = cluster.deliver(bobJoins, from: "b")
        _ = cluster.deliver(aliceJoins, from: "a")
        #expect(cluster.host(at: "a") == "alice" && cluster.host(at: "b") == "alice")
    }

    @Test func theHostAllowsAndHearsHandsOfMembersOnAnotherNode() throws {
        var cluster = NodesOnABus(["a", "b"])
        _ = cluster.join("alice", at: "a", on: 1)
        let bob = cluster.join("bob", at: "b", on: 1, role: .audience)
        let bobOnA = try #require(cluster.id(of: "bob", at: "a"))

        // Bob raises his hand on b: refused there, and alice, on a, hears it.
        let asked = cluster.send(.role(RoleRequest(role: .broadcaster)), on: ConnectionID(1), at: "b")
        #expect(messages(to: ConnectionID(1), in: asked["a"] ?? []) == [.hand(MemberRef(id: bobOnA))])
        #expect(cluster.nodes["b"]!.state.members[bob]?.info.role == .audience)

        // Alice allows him: his node changes his role, and alice hears it from there.
        let allowed = cluster.send(.allow(MemberRef(id: bobOnA)), on: ConnectionID(1), at: "a")
        #expect(cluster.nodes["b"]!.state.members[bob]?.info.role == .broadcaster)
        #expect(
            messages(to: ConnectionID(1), in: allowed["b"] ?? []).contains(
                .role(MemberRoleChange(id: bob, role: .broadcaster))))
        #expect(
            messages(to: ConnectionID(1), in: allowed["a"] ?? []).contains(
                .role(MemberRoleChange(id: bobOnA, role: .broadcaster))))
    }

    @Test func aRemovalHoldsOnEveryNodeUntilTheHostReadmits() throws {
        var cluster = NodesOnABus(["a", "b", "c"])
        _ = cluster.join("alice", at: "a", on: 1)
        _ = cluster.join("carol", at: "b", on: 1)
        _ = cluster.join("erin", at: "b", on: 2)
        let carolOnA = try #require(cluster.id(of: "carol", at: "a"))

        let removed = cluster.send(.remove(MemberRef(id: carolOnA)), on: ConnectionID(1), at: "a")
        let toCarol = messages(to: ConnectionID(1), in: removed["b"] ?? [])
        #expect(toCarol.contains { if case .removed(let removal) = $0 { removal.by == "alice" } else { false } })
        #expect(removed["b"]?.contains(.close(ConnectionID(1))) == true)
        #expect(
            messages(to: ConnectionID(1), in: removed["a"] ?? []).contains(
                .memberLeft(MemberLeft(id: carolOnA, reason: .removed))))
        #expect(cluster.id(of: "carol", at: "a") == nil && cluster.id(of: "carol", at: "b") == nil)

        // Back through b: refused there at once.
        let again = cluster.nodes["b"]!.connect(3)
        let refused = cluster.send(.join(JoinRequest(room: "standup", name: "carol")), on: again, at: "b")
        #expect(errorAnswer(to: again, in: refused["b"] ?? [])?.code == .removedByHost)
        // Through c, which had no member in the room when she was removed: in for a moment, then removed again.
        let throughC = cluster.nodes["c"]!.connect(1)
        let sneaked = cluster.send(.join(JoinRequest(room: "standup", name: "carol")), on: throughC, at: "c")
        #expect(sneaked["c"]?.contains(.close(throughC)) == true)
        #expect(cluster.id(of: "carol", at: "a") == nil && cluster.id(of: "carol", at: "c") == nil)

        // Alice lets her back: every node forgets the removal.
        _ = cluster.send(.readmit(Readmission(name: "Carol")), on: ConnectionID(1), at: "a")
        let back = cluster.nodes["b"]!.connect(4)
        let readmitted = cluster.send(.join(JoinRequest(room: "standup", name: "carol")), on: back, at: "b")
        #expect(joinedAnswer(to: back, in: readmitted["b"] ?? []) != nil)
        #expect(cluster.id(of: "carol", at: "a") != nil)
    }

    @Test func aCommandFromSomeoneWhoIsNotTheHostIsRefusedAndCounted() throws {
        var cluster = NodesOnABus(["a", "b"])
        _ = cluster.join("alice", at: "a", on: 1)
        let carol = cluster.join("carol", at: "b", on: 1)
        let alice = try #require(cluster.id(of: "alice", at: "a"))
        // As if b let carol remove alice: a sees alice as the host, not carol.
        let forged = ClusterEvent.roomControl(
            room: "standup", member: carol,
            control: .remove(node: "a", member: alice, name: "alice", account: nil))
        #expect(cluster.deliver([.publish(forged)], from: "b")["a"]?.isEmpty == true)
        #expect(cluster.nodes["a"]!.state.counters.remoteControlsRefused == 1)
        #expect(cluster.id(of: "alice", at: "a") == alice)
        // Carol cannot say it on b either: she is not the host there.
        let tried = cluster.send(
            .remove(MemberRef(id: try #require(cluster.id(of: "alice", at: "b")))), on: .init(1), at: "b")
        #expect(errorAnswer(to: ConnectionID(1), in: tried["b"] ?? [])?.code == .notAllowed)
    }

    @Test func recordingAndTheHostsRuleOnItHoldOnEveryNode() throws {
        var cluster = NodesOnABus(["a", "b", "c"])
        _ = cluster.join("alice", at: "a", on: 1)
        let carol = cluster.join("carol", at: "b", on: 1)
        let carolOnA = try #require(cluster.id(of: "carol", at: "a"))

        // Alice forbids recording: carol, on b, is told, and cannot start.
        let forbade = cluster.send(
            .recordingPolicy(RecordingPolicy(allowed: false)), on: ConnectionID(1), at: "a")
        #expect(
            messages(to: ConnectionID(1), in: forbade["b"] ?? []) == [
                .recordingPolicy(RecordingPolicy(allowed: false, by: "alice"))
            ])
        let tried = cluster.send(.recording(RecordingChange(recording: true)), on: ConnectionID(1), at: "b")
        #expect(errorAnswer(to: ConnectionID(1), in: tried["b"] ?? [])?.code == .notAllowed)
        // A node opening the room later learns the rule from the host's entry.
        let late = cluster.nodes["c"]!.connect(1)
        let joined = cluster.send(.join(JoinRequest(room: "standup", name: "dave")), on: late, at: "c")
        #expect(
            messages(to: late, in: joined["c"] ?? []).contains(
                .recordingPolicy(RecordingPolicy(allowed: false, by: "alice"))))

        // Allowed again, carol records: alice sees it, and a member joining on c later is told in its answer.
        _ = cluster.send(.recordingPolicy(RecordingPolicy(allowed: true)), on: ConnectionID(1), at: "a")
        let started = cluster.send(.recording(RecordingChange(recording: true)), on: ConnectionID(1), at: "b")
        #expect(
            messages(to: ConnectionID(1), in: started["a"] ?? []) == [
                .recording(RecordingNotice(id: carolOnA, name: "carol", recording: true))
            ])
        #expect(cluster.nodes["b"]!.state.rooms["standup"]?.recorders == [carol])
        let erin = cluster.nodes["c"]!.connect(2)
        let erinJoins = cluster.send(.join(JoinRequest(room: "standup", name: "erin")), on: erin, at: "c")
        let carolOnC = try #require(cluster.id(of: "carol", at: "c"))
        #expect(joinedAnswer(to: erin, in: erinJoins["c"] ?? [])?.recorders == [carolOnC])
    }
}

/// The same through three relays in this process and real engines: the host's commands reach members on other
/// nodes, whose engines see them as in a call on one relay.
@Suite(.serialized, .lane(.processes))
struct HostAcrossNodesCallTests {
    func configuration(_ name: String, port: Int, role: Role) -> CallConfiguration {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "spread", name: name, role: role,
            profile: VideoProfile(width: 160, height: 120, fps: 10, bitrateKbps: 150),
            audioSource: role == .broadcaster ? .synthetic : .silence, showsSelfView: false, logger: logger)
    }

    @Test func theHostOnOneNodeHearsAHandAllowsItAndRemovesAMemberOnAnother() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let cluster = try await InProcessCluster.start(nodes: 3, logger: logger)
        try await cluster.connect()
        let alice = try CallEngine(configuration("alice", port: cluster.relays[0].signalingPort, role: .broadcaster))
        let bob = try CallEngine(configuration("bob", port: cluster.relays[1].signalingPort, role: .audience))
        let carol = try CallEngine(configuration("carol", port: cluster.relays[2].signalingPort, role: .broadcaster))
        let logs = [EventLog(), EventLog(), EventLog()]
        var tasks: [Task<Void, Never>] = []
        for (engine, log) in zip([alice, bob, carol], logs) {
            tasks.append(log.consume(engine))
            engine.start()
            try await Task.sleep(for: .milliseconds(200))
        }
        func id(of name: String, at engine: CallEngine) async -> ParticipantID? {
            await engine.statistics().peers.first { $0.value.name == name }.map { ParticipantID($0.key) }
        }
        func lastHost(_ log: EventLog) -> ParticipantID? {
            log.all.compactMap { if case .hostChanged(let id) = $0 { id } else { nil } }.last
        }
        let everyoneSeesAlice = await eventually(within: .seconds(10)) {
            guard let atBob = await id(of: "alice", at: bob), let atCarol = await id(of: "alice", at: carol),
                await id(of: "bob", at: alice) != nil, await id(of: "carol", at: alice) != nil
            else { return false }
            return lastHost(logs[1]) == atBob && lastHost(logs[2]) == atCarol
        }
        #expect(everyoneSeesAlice, "bob and carol, on nodes 1 and 2, see alice (node 0, first in) as the host")
        let bobAtAlice = try #require(await id(of: "bob", at: alice))
        let carolAtAlice = try #require(await id(of: "carol", at: alice))

        bob.perform(.setRole(.broadcaster))
        let hand = await eventually { logs[0].all.contains(.handRaised(bobAtAlice)) }
        #expect(hand, "alice hears bob's hand, raised on node 1")
        alice.perform(.allowBroadcast(bobAtAlice))
        let allowed = await eventually { logs[0].all.contains(.roleChanged(bobAtAlice, .broadcaster)) }
        #expect(allowed, "bob's node makes him a broadcaster when alice allows him, and alice hears it")
        alice.perform(.removeParticipant(carolAtAlice))
        let removed = await eventually {
            logs[2].all.contains { if case .removedFromRoom = $0 { true } else { false } }
        }
        #expect(removed, "carol, on node 2, is removed by alice on node 0")
        let gone = await eventually {
            let atAlice = await id(of: "carol", at: alice)
            let atBob = await id(of: "carol", at: bob)
            return atAlice == nil && atBob == nil
        }
        #expect(gone, "carol is gone from the room on every node")

        for engine in [alice, bob, carol] { await engine.leave() }
        for task in tasks { task.cancel() }
        await cluster.shutdown()
    }
}
