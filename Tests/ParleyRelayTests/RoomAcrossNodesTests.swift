import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// A room spanning nodes, as one node's state sees it: its own members announced on the bus, the other nodes'
/// taken in (each with the id every node gives it), and the room forgotten when its own members are gone.
@Suite(.lane(.timing))
struct RoomAcrossNodesTests {
    func spanning() -> Harness {
        var relay = Harness()
        relay.state.spansNodes = true
        return relay
    }

    func entry(_ id: UInt32, _ name: String, block: UInt32 = 0x1000_0000, muted: Bool = false) -> RoomMemberEntry {
        RoomMemberEntry(
            id: id, name: name, broadcaster: true, audioMuted: muted, videoMuted: false, ssrcBlock: block,
            videoLayers: [[640, 480], [320, 240]], inCallMilliseconds: 4_000)
    }

    func published(_ actions: [RelayAction]) -> [ClusterEvent] {
        actions.compactMap { if case .publish(let event) = $0 { event } else { nil } }
    }

    @Test func aLocalJoinOpensTheRoomAndAnnouncesTheMemberALeaveSaysSo() {
        var relay = spanning()
        let a = relay.connect(1)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "alice")), on: a)
        let events = published(actions)
        #expect(events.first == .roomOpened(room: "standup"))
        guard case .roomMember(let room, let member)? = events.dropFirst().first else {
            Issue.record("no roomMember in \(events)")
            return
        }
        #expect(room == "standup" && member.name == "alice" && member.broadcaster)
        #expect(member.ssrcBlock == relay.state.members[member.id]?.info.ssrcs.block)
        let muted = relay.send(.mute(MuteChange(audio: true, video: nil)), on: a)
        #expect(published(muted).contains { if case .roomMember(_, let m) = $0 { m.audioMuted } else { false } })
        let left = relay.send(.leave, on: a)
        #expect(published(left) == [.roomMemberLeft(room: "standup", member: member.id, reason: "quit")])
    }

    @Test func withoutSpanningNothingIsPublished() {
        var relay = Harness()
        let a = relay.connect(1)
        #expect(published(relay.send(.join(JoinRequest(room: "standup", name: "alice")), on: a)).isEmpty)
        #expect(relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero).isEmpty)
    }

    @Test func anotherNodesMemberGetsAnIdHereAndIsToldAndListed() throws {
        var relay = spanning()
        let a = relay.connect(1)
        let alice = relay.join("alice", on: a)
        let actions = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .seconds(10))
        guard case .memberJoined(let joined)? = messages(to: a, in: actions).first else {
            Issue.record("alice was not told: \(actions)")
            return
        }
        let bob = joined.member.id
        #expect(bob != alice && bob == 0x1000_0000 >> 2, "the id every node gives it: its SSRC block over 4")
        #expect(joined.member.ssrcs.block == 0x1000_0000, "the SSRC block its node gave it")
        #expect(actions.contains(.memberAdded(id: bob, room: "standup")))
        #expect(published(actions).isEmpty, "another node's member is not announced again")
        #expect(relay.state.members[bob]?.node == "b")
        #expect(
            relay.state.members[bob]?.videoLayers == [.init(width: 640, height: 480), .init(width: 320, height: 240)])
        // A later joiner here sees bob in the list, with how long he has been in the call.
        let c = relay.connect(2)
        relay.now = .seconds(12)
        let carolsAnswer = joinedAnswer(
            to: c, in: relay.send(.join(JoinRequest(room: "standup", name: "carol")), on: c))
        let listed = try #require(carolsAnswer?.members.first { $0.id == bob })
        #expect(listed.inCallFor == 6)
        // The same entry again changes nothing; muted, it is told as a mute.
        #expect(relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .seconds(13)).isEmpty)
        let mute = relay.state.remoteMember(entry(7, "bob", muted: true), room: "standup", node: "b", now: .seconds(13))
        #expect(messages(to: a, in: mute) == [.mute(MemberMute(id: bob, audio: true, video: false))])
    }

    @Test(
        "entries that do not check out are left out and counted",
        arguments: [
            (
                "a name the rules refuse",
                RoomMemberEntry(
                    id: 1, name: "bad name", broadcaster: true, audioMuted: false, videoMuted: false, ssrcBlock: 0x2000)
            ),
            (
                "SSRC block 0",
                RoomMemberEntry(
                    id: 2, name: "x", broadcaster: true, audioMuted: false, videoMuted: false, ssrcBlock: 0)
            ),
            (
                "a block not on a boundary of 4",
                RoomMemberEntry(
                    id: 3, name: "y", broadcaster: true, audioMuted: false, videoMuted: false, ssrcBlock: 0x2001)
            ),
            (
                "four video layers",
                RoomMemberEntry(
                    id: 4, name: "z", broadcaster: true, audioMuted: false, videoMuted: false, ssrcBlock: 0x2004,
                    videoLayers: [[64, 48], [64, 48], [64, 48], [64, 48]])
            ),
            (
                "a layer of 0 pixels",
                RoomMemberEntry(
                    id: 5, name: "w", broadcaster: true, audioMuted: false, videoMuted: false, ssrcBlock: 0x2008,
                    videoLayers: [[0, 48]])
            ),
        ])
    func badEntries(_ what: String, _ bad: RoomMemberEntry) {
        var relay = spanning()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        #expect(relay.state.remoteMember(bad, room: "standup", node: "b", now: .zero).isEmpty, "\(what)")
        #expect(relay.state.counters.remoteMembersRefused == 1, "\(what)")
        #expect(relay.state.rooms["standup"]?.members.count == 1, "\(what)")
    }

    @Test func aBlockInUseHereIsRefused() throws {
        var relay = spanning()
        let a = relay.connect(1)
        let alice = relay.join("alice", on: a)
        let block = try #require(relay.state.members[alice]?.info.ssrcs.block)
        #expect(relay.state.remoteMember(entry(7, "bob", block: block), room: "standup", node: "b", now: .zero).isEmpty)
        #expect(relay.state.counters.remoteMembersRefused == 1)
    }

    @Test func aRoomWithoutMembersHereTakesNobodyFromElsewhere() {
        var relay = spanning()
        #expect(relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero).isEmpty)
        #expect(relay.state.rooms.isEmpty)
    }

    @Test func theOtherNodeOpeningTheRoomHearsTheMembersHereAgain() {
        var relay = spanning()
        let a = relay.connect(1)
        let alice = relay.join("alice", on: a)
        _ = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero)
        let events = published(relay.state.roomOpenedElsewhere("standup", now: .seconds(2)))
        #expect(events.count == 1, "alice only, not bob: \(events)")
        if case .roomMember(_, let member)? = events.first { #expect(member.id == alice) }
        #expect(relay.state.roomOpenedElsewhere("elsewhere", now: .zero).isEmpty)
    }

    @Test func aMemberLeavingElsewhereOrItsNodeGoneIsToldHere() {
        var relay = spanning()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        _ = relay.state.remoteMember(entry(7, "bob", block: 0x1000_0000), room: "standup", node: "b", now: .zero)
        _ = relay.state.remoteMember(entry(8, "carol", block: 0x2000_0000), room: "standup", node: "c", now: .zero)
        _ = relay.state.remoteMember(entry(9, "dave", block: 0x3000_0000), room: "standup", node: "c", now: .zero)
        let left = relay.state.remoteMemberLeft(room: "standup", node: "b", member: 7, reason: "quit")
        #expect(
            messages(to: a, in: left).contains { if case .memberLeft(let l) = $0 { l.reason == .quit } else { false } })
        #expect(published(left).isEmpty)
        #expect(relay.state.remoteMemberLeft(room: "standup", node: "b", member: 7, reason: "quit").isEmpty, "once")
        let gone = relay.state.nodeGone("c")
        #expect(messages(to: a, in: gone).count == 2, "carol and dave dropped: \(gone)")
        #expect(relay.state.rooms["standup"]?.members.count == 1)
        // The block of a member gone may be handed out again.
        #expect(
            relay.state.remoteMember(entry(10, "erin", block: 0x2000_0000), room: "standup", node: "d", now: .zero)
                .contains { if case .memberAdded = $0 { true } else { false } })
    }

    @Test func theLastMemberHereLeavingForgetsTheRoomAndTheOthersInItSilently() {
        var relay = spanning()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        _ = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero)
        let actions = relay.send(.leave, on: a)
        #expect(relay.state.rooms["standup"] == nil)
        #expect(relay.state.members.isEmpty)
        #expect(actions.filter { if case .memberRemoved = $0 { true } else { false } }.count == 2)
        // Bob is known here again only once a member here joins the room.
        #expect(relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero).isEmpty)
    }

    /// One row: members joining through this node (name, room), other nodes' members announced (name, room), this
    /// node's members leaving, and what the node counts (members, rooms).
    struct CountRow: Sendable, CustomTestStringConvertible {
        var name: String
        var here: [(String, String)]
        var elsewhere: [(String, String)]
        var leaving: [String] = []
        var counted: (members: Int, rooms: Int)
        var testDescription: String { name }
    }

    static let countRows = [
        CountRow(name: "alone", here: [("alice", "standup")], elsewhere: [], counted: (1, 1)),
        CountRow(
            name: "one member here, one on another node", here: [("alice", "standup")],
            elsewhere: [("bob", "standup")], counted: (1, 1)),
        CountRow(
            name: "two rooms here, the others' members in both", here: [("alice", "standup"), ("carol", "board")],
            elsewhere: [("bob", "standup"), ("dave", "board"), ("erin", "board")], counted: (2, 2)),
        CountRow(
            name: "the last member here in a room leaves", here: [("alice", "standup"), ("carol", "board")],
            elsewhere: [("bob", "board")], leaving: ["carol"], counted: (1, 1)),
        CountRow(
            name: "another node's member in a room with nobody here", here: [("alice", "standup")],
            elsewhere: [("bob", "board")], counted: (1, 1)),
    ]

    /// What a node counts as its load, the same in `/metrics` and in its heartbeat (so `parley cluster status`,
    /// placement and draining): its own members, and the rooms with one of them.
    @Test(arguments: countRows)
    func aNodeCountsItsOwnMembersAndTheirRooms(_ row: CountRow) {
        var relay = spanning()
        var connections: [String: ConnectionID] = [:]
        for (index, (name, room)) in row.here.enumerated() {
            let connection = relay.connect(UInt64(index + 1))
            connections[name] = connection
            _ = relay.join(name, room: room, on: connection)
        }
        for (index, (name, room)) in row.elsewhere.enumerated() {
            let block = UInt32(index + 1) << 24
            _ = relay.state.remoteMember(
                entry(UInt32(index + 1), name, block: block), room: room, node: "b", now: .zero)
        }
        for name in row.leaving { _ = relay.send(.leave, on: connections[name]!) }
        #expect(relay.state.localMemberCount == row.counted.members)
        #expect(relay.state.localRoomCount == row.counted.rooms)
    }

    @Test func aNodeStoppingAtOnceTellsItsMembersNothingOfTheOtherNodesMembers() throws {
        var relay = spanning()
        let (a, c) = (relay.connect(1), relay.connect(2))
        _ = relay.join("alice", on: a)
        _ = relay.join("carol", on: c)
        // Bob, on another node, with the lowest id here: he stays in the call through his node.
        let added = relay.state.remoteMember(entry(7, "bob", block: 0x10), room: "standup", node: "b", now: .zero)
        let bob = try #require(added.compactMap { if case .memberAdded(let id, _) = $0 { id } else { nil } }.first)
        #expect(relay.state.members.keys.min() == bob)
        let actions = relay.state.shutDown()
        #expect(actions.contains(.close(a)) && actions.contains(.close(c)))
        for connection in [a, c] {
            #expect(
                !messages(to: connection, in: actions).contains(.memberLeft(MemberLeft(id: bob, reason: .dropped))),
                "\(messages(to: connection, in: actions))")
        }
        #expect(relay.state.members.isEmpty)
    }

    @Test func anotherNodesMemberWithoutAHostClaimNeverHostsHere() {
        var relay = spanning()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        _ = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero)
        let carol = relay.join("carol", on: b)
        #expect(relay.state.rooms["standup"]?.host == alice)
        _ = relay.send(.leave, on: a)
        #expect(relay.state.rooms["standup"]?.host == carol, "carol, not bob who came before her")
    }

    /// A member's credential on its first node, and its digest as that node announces it.
    static let credential = "00112233445566778899aabbccddeeff"
    static let digest = CredentialDigest.hex(of: credential)

    @Test func aMemberComingBackThroughThisNodeTakesItsEarlierSelfsPlace() throws {
        var relay = spanning()
        let b = relay.connect(1)
        _ = relay.join("bob", on: b)
        var earlier = entry(7, "alice")
        earlier.credentialDigest = Self.digest
        let known = relay.state.remoteMember(earlier, room: "standup", node: "a", now: .zero)
        let old = try #require(known.compactMap { if case .memberAdded(let id, _) = $0 { id } else { nil } }.first)
        // Node a died; alice's client resumes through this node with her credential from a.
        let a = relay.connect(2)
        let resume = ResumeToken(member: 7, credential: Self.credential)
        let actions = relay.send(.join(JoinRequest(room: "standup", name: "alice", resume: resume)), on: a)
        let joined = try #require(joinedAnswer(to: a, in: actions), "\(actions)")
        #expect(!joined.members.contains { $0.id == old }, "her earlier self is not listed")
        #expect(
            messages(to: b, in: actions).contains(.memberLeft(MemberLeft(id: old, reason: .dropped))),
            "bob sees her drop, then join")
        #expect(messages(to: b, in: actions).contains { if case .memberJoined = $0 { true } else { false } })
        #expect(
            published(actions).contains {
                if case .roomMember(_, let member) = $0 { member.replaces == Self.digest } else { false }
            }, "the other nodes are told whom she replaces")
        // A stranger with a wrong credential is not taken for her: the name stays taken.
        let mallory = relay.connect(3)
        let wrong = ResumeToken(member: 7, credential: "ffeeddccbbaa99887766554433221100")
        var third = entry(8, "carol", block: 0x2000_0000)
        third.credentialDigest = CredentialDigest.hex(of: "0123456789abcdef0123456789abcdef")
        _ = relay.state.remoteMember(third, room: "standup", node: "c", now: .zero)
        let refused = relay.send(.join(JoinRequest(room: "standup", name: "carol", resume: wrong)), on: mallory)
        #expect(errorAnswer(to: mallory, in: refused)?.code == .nameTaken)
    }

    @Test func anotherNodeTakingAMemberInDropsItsEarlierSelfHereWhereverItWas() throws {
        // Here alice is another node's member (a): b announces she came back through it.
        var relay = spanning()
        let c = relay.connect(1)
        _ = relay.join("carol", on: c)
        var earlier = entry(7, "alice")
        earlier.credentialDigest = Self.digest
        let old = try #require(
            relay.state.remoteMember(earlier, room: "standup", node: "a", now: .zero)
                .compactMap { if case .memberAdded(let id, _) = $0 { id } else { nil } }.first)
        var moved = entry(3, "alice", block: 0x2000_0000)
        moved.replaces = Self.digest
        let actions = relay.state.remoteMember(moved, room: "standup", node: "b", now: .seconds(1))
        #expect(messages(to: c, in: actions).first == .memberLeft(MemberLeft(id: old, reason: .dropped)))
        #expect(relay.state.rooms["standup"]?.members.count == 2, "carol and the new alice")
        #expect(relay.state.members.values.filter { $0.info.name == "alice" }.map(\.node) == ["b"])

        // Here alice was this node's own (only her connection was lost): she is closed and dropped here.
        var home = spanning()
        let d = home.connect(1)
        let dave = home.join("dave", on: d)
        let e = home.connect(2)
        let erin = home.join("erin", on: e)
        let digest = try #require(home.state.members[erin]?.credentialDigest)
        var back = entry(4, "erin", block: 0x3000_0000)
        back.replaces = digest
        let dropped = home.state.remoteMember(back, room: "standup", node: "b", now: .seconds(1))
        #expect(dropped.contains(.close(e)))
        #expect(messages(to: d, in: dropped).contains(.memberLeft(MemberLeft(id: erin, reason: .dropped))))
        #expect(home.state.members[dave] != nil && home.state.members[erin] == nil)
    }

    @Test func chatCrossesNodesBothWays() throws {
        var relay = spanning()
        let a = relay.connect(1)
        let alice = relay.join("alice", on: a)
        let added = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero)
        let bob = try #require(added.compactMap { if case .memberAdded(let id, _) = $0 { id } else { nil } }.first)
        // Alice's line goes to the other nodes.
        let said = relay.send(.chat(ChatSend(text: "hello")), on: a)
        #expect(
            published(said).contains {
                if case .roomChat("standup", alice, "hello", nil, _) = $0 { true } else { false }
            })
        // Bob's line (his id on b is 7) reaches alice from bob's id here, numbered after hers.
        let heard = relay.state.remoteChat(
            room: "standup", node: "b", member: 7, text: "hi", sealed: nil, time: 1_700_000_000_001)
        guard case .chat(let line)? = messages(to: a, in: heard).first else {
            Issue.record("alice heard nothing: \(heard)")
            return
        }
        #expect(line.from == bob && line.name == "bob" && line.text == "hi" && line.seq == 2)
        // From a member not known here, or past this node's length limit: nothing, and the latter counted.
        #expect(relay.state.remoteChat(room: "standup", node: "b", member: 8, text: "x", sealed: nil, time: 0).isEmpty)
        let long = String(repeating: "x", count: relay.state.limits.chatCharacters + 1)
        #expect(relay.state.remoteChat(room: "standup", node: "b", member: 7, text: long, sealed: nil, time: 0).isEmpty)
        #expect(relay.state.counters.remoteChatRefused == 1)
    }

    @Test func drainingMovesEachMemberToTheLeastLoadedNodeAndSendsJoinsThere() {
        var relay = spanning()
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        _ = relay.state.remoteMember(entry(7, "carol"), room: "standup", node: "c", now: .zero)
        let actions = relay.state.drain(to: [
            (node: "b", server: "b.test:7878", members: 3), (node: "c", server: "c.test:7878", members: 1),
            (node: "x", server: "", members: 0),
        ])
        // c has 1: alice goes there (2); then c 2 against b 3: bob goes to c too (3); a node without an address
        // is no target. Another node's member is not this node's to move.
        #expect(messages(to: a, in: actions) == [.move(Redirect(room: "standup", server: "c.test:7878", node: "c"))])
        #expect(messages(to: b, in: actions) == [.move(Redirect(room: "standup", server: "c.test:7878", node: "c"))])
        #expect(actions.count == 2)
        // A join now goes to the least loaded (b and c have 3 each: b by its id).
        let d = relay.connect(3)
        let joining = relay.send(.join(JoinRequest(room: "standup", name: "dave")), on: d)
        #expect(
            messages(to: d, in: joining) == [.redirect(Redirect(room: "standup", server: "b.test:7878", node: "b"))])
        #expect(joining.contains(.close(d)))

        // With no other node, members stay and a join is refused, saying why.
        var alone = spanning()
        let e = alone.connect(1)
        _ = alone.join("erin", on: e)
        #expect(alone.state.drain(to: []).isEmpty)
        let f = alone.connect(2)
        #expect(
            errorAnswer(to: f, in: alone.send(.join(JoinRequest(room: "standup", name: "frank")), on: f))?.message
                .contains("draining") == true)
    }

    @Test func anotherNodesMemberIsNeverTimedOutHere() {
        var relay = spanning()
        let a = relay.connect(1)
        _ = relay.join("alice", on: a)
        _ = relay.state.remoteMember(entry(7, "bob"), room: "standup", node: "b", now: .zero)
        for second in 1...30 {
            relay.now = .seconds(second)
            _ = relay.send(.ping(KeepAlive(token: UInt64(second))), on: a)
            _ = relay.state.tick(now: relay.now)
        }
        #expect(relay.state.rooms["standup"]?.members.count == 2)
    }
}
