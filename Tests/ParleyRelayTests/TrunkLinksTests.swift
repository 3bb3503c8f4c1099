import ParleySecurity
import ParleyStore
import ParleyTestLanes
import Testing

@testable import ParleyRelay

/// The trunks between nodes as one node keeps them: hellos due, accepted, answered; media and control only from a
/// node that proved the cluster secret, from where it proved it.
@Suite(.lane(.timing))
struct TrunkLinksTests {
    static let secret = try! ClusterSecret(bytes: Array("0123456789abcdef0123456789abcdef".utf8))
    static let wall: Int64 = 1_790_000_000_000

    func links(_ id: String, _ secret: ClusterSecret = secret) throws -> TrunkLinks<String> {
        TrunkLinks(gate: try TrunkGate(nodeID: id, boot: Self.wall, secret: secret))
    }

    func nonce(_ seed: UInt8) -> () -> [UInt8] { { [UInt8](repeating: seed, count: 16) } }

    /// a and b, each told of the other by the registry, say hello; each accepts the other's and answers.
    func connected() throws -> (TrunkLinks<String>, TrunkLinks<String>) {
        var a = try links("a")
        var b = try links("b")
        a.setPeers([(node: "b", address: "B")])
        b.setPeers([(node: "a", address: "A")])
        let toB = a.dueHellos(now: .zero, wallClock: Self.wall, nonce: nonce(1))
        #expect(toB.map(\.0) == ["B"])
        guard case .hello("a", let answer, true) = b.receive(toB[0].1, from: "A", now: .zero, wallClock: Self.wall)
        else {
            Issue.record("b did not accept a's hello")
            return (a, b)
        }
        #expect(a.receive(answer, from: "B", now: .zero, wallClock: Self.wall) == .answered(node: "b", cameUp: true))
        return (a, b)
    }

    @Test func helloAndAnswerBringTheTrunkUpBothWays() throws {
        let (a, b) = try connected()
        #expect(a.upNodes(at: .seconds(1)) == ["b"] && b.upNodes(at: .seconds(1)) == ["a"])
        // A keepalive's answer while up does not bring it up again.
        var later = a
        let keepalive = later.dueHellos(now: .seconds(3), wallClock: Self.wall, nonce: nonce(11))
        var answering = b
        guard
            case .hello("a", let answer, false) = answering.receive(
                keepalive[0].1, from: "A", now: .seconds(3), wallClock: Self.wall)
        else {
            Issue.record("keepalive not accepted as such")
            return
        }
        #expect(
            later.receive(answer, from: "B", now: .seconds(3), wallClock: Self.wall)
                == .answered(node: "b", cameUp: false))
        #expect(a.address(of: "b") == "B" && b.address(of: "a") == "A")
        #expect(a.refused.isEmpty && b.refused.isEmpty)
    }

    @Test func mediaAndControlOnlyFromTheProvenAddress() throws {
        var (a, b) = try connected()
        let media = TrunkPacket.media([0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0])
        #expect(a.receive(media, from: "B", now: .seconds(1), wallClock: Self.wall) == .media(node: "b"))
        #expect(a.receive(media, from: "X", now: .seconds(1), wallClock: Self.wall) == .refused(.unboundSource))
        var gateB = b.gate
        let control = try gateB.control(Array("layers".utf8))
        #expect(a.receive(control, from: "X", now: .seconds(1), wallClock: Self.wall) == .refused(.unboundSource))
        guard case .control(let accepted) = a.receive(control, from: "B", now: .seconds(1), wallClock: Self.wall)
        else {
            Issue.record("control from b refused")
            return
        }
        #expect(accepted.from == "b" && accepted.payload == Array("layers".utf8))
        #expect(a.refused == [.unboundSource: 2])
        _ = b
    }

    @Test(
        "a stranger is refused and counted, and gets no answer",
        arguments: [
            ("another secret", "forged"), ("a replayed hello", "replayed"), ("a hello for c", "wrong_recipient"),
            ("an old hello", "out_of_time"), ("garbage", "malformed"),
        ])
    func strangers(_ name: String, _ reason: String) throws {
        var b = try links("b")
        let other = try ClusterSecret(bytes: Array("fedcba9876543210fedcba9876543210".utf8))
        let gate = try TrunkGate(nodeID: "a", boot: 0, secret: Self.secret)
        var datagram: [UInt8]
        var now = Self.wall
        switch name {
        case "another secret":
            datagram = try TrunkGate(nodeID: "a", boot: 0, secret: other).hello(to: "b", now: now, nonce: nonce(2)())
        case "a replayed hello":
            datagram = gate.hello(to: "b", now: now, nonce: nonce(3)())
            _ = b.receive(datagram, from: "A", now: .zero, wallClock: now)
        case "a hello for c":
            datagram = gate.hello(to: "c", now: now, nonce: nonce(4)())
        case "an old hello":
            datagram = gate.hello(to: "b", now: now, nonce: nonce(5)())
            now += 60_000
        default:
            datagram = [0x50, 0x54, 1, 1, 0, 0]
        }
        let received = b.receive(datagram, from: "X", now: .seconds(1), wallClock: now)
        #expect(received == .refused(TrunkRefusedReason(rawValue: reason)!), "\(name)")
        #expect(b.refused[TrunkRefusedReason(rawValue: reason)!] == 1)
    }

    @Test func hellosAreRetriedWhileDownKeptAliveWhileUpAndASilentNodeIsDown() throws {
        var (a, _) = try connected()
        // Up since 0 s (b answered): the next hello is a keepalive at 3 s.
        #expect(a.dueHellos(now: .milliseconds(2_900), wallClock: Self.wall, nonce: nonce(6)).isEmpty)
        #expect(a.dueHellos(now: .seconds(3), wallClock: Self.wall, nonce: nonce(7)).count == 1)
        // Nothing heard from b since 0 s: down at 10 s, and hellos every second from then.
        #expect(a.upNodes(at: .milliseconds(9_999)) == ["b"])
        #expect(a.upNodes(at: .seconds(10)).isEmpty)
        #expect(a.dueHellos(now: .seconds(10), wallClock: Self.wall, nonce: nonce(8)).count == 1)
        #expect(a.dueHellos(now: .milliseconds(10_500), wallClock: Self.wall, nonce: nonce(9)).isEmpty)
        #expect(a.dueHellos(now: .seconds(11), wallClock: Self.wall, nonce: nonce(10)).count == 1)
    }

    @Test func aNodeGoneFromTheRegistryIsForgotten() throws {
        var (a, _) = try connected()
        a.setPeers([])
        #expect(a.upNodes(at: .seconds(1)).isEmpty)
        let media = TrunkPacket.media([0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0])
        #expect(a.receive(media, from: "B", now: .seconds(1), wallClock: Self.wall) == .refused(.unboundSource))
        // A node's own id in the registry's list is not a peer.
        a.setPeers([(node: "a", address: "A")])
        #expect(a.links.isEmpty)
    }
}
