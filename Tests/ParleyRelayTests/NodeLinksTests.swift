import ParleyTestLanes
import Testing

@testable import ParleyRelay

/// What a node keeps about the members that joined through the cluster's other nodes.
@Suite(.lane(.timing)) struct NodeLinksTests {
    @Test("a room's media goes to a node while one of its members is in the room, and the last to leave says so")
    func theLastMemberOfANodeToLeaveARoomNamesIt() {
        var links = NodeLinks()
        links.memberJoined(10, through: "b", in: "standup")
        links.memberJoined(11, through: "b", in: "standup")
        links.memberJoined(12, through: "c", in: "standup")
        links.memberJoined(13, through: "b", in: "retro")
        #expect(links.roomNodes == ["standup": ["b": 2, "c": 1], "retro": ["b": 1]])
        #expect(links.remoteNodes[11] == "b")

        let steps: [(member: UInt32, room: String, emptied: String?)] = [
            (10, "standup", nil),  // another member of b stays
            (20, "standup", nil),  // a member of this node: nothing kept about it
            (11, "standup", "b"),  // b's last member in the room
            (13, "retro", "b"),  // and in the other room
            (12, "standup", "c"),
            (12, "standup", nil),  // gone already
        ]
        for step in steps {
            #expect(links.memberLeft(step.member, from: step.room) == step.emptied, "member \(step.member)")
        }
        #expect(links.roomNodes.isEmpty && links.remoteNodes.isEmpty)
    }

    @Test func theCountsGoIntoTheRelaysCounters() {
        var links = NodeLinks()
        links.trunkPacketsSent = 3
        links.trunkPacketsWithheld = 2
        links.trunkControlRefused = 1
        var counters = RelayCounters()
        links.count(into: &counters, now: .zero)
        #expect(counters.trunkPacketsSent == 3 && counters.trunkPacketsWithheld == 2)
        #expect(counters.trunkControlRefused == 1 && counters.trunksUp == 0)
    }
}
