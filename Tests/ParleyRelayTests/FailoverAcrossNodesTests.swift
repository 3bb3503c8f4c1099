import Logging
import ParleyMedia
import ParleyRoom
import ParleyTestLanes
import ParleyTestSupport
import ParleyWire
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// A node of the cluster dies under a call (issue 49): two relays in this process, real engines, and the room screen
/// each member would show (the reducer fed every event its engine reported).
@Suite(.serialized, .lane(.processes))
struct FailoverAcrossNodesTests {
    func configuration(_ name: String, servers: [Int]) -> CallConfiguration {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: servers[0]), room: "failover", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 10, bitrateKbps: 150), audioSource: .synthetic,
            showsSelfView: false, logger: logger)
        configuration.fallbackServers = servers.dropFirst().map { ServerAddress(host: "127.0.0.1", port: $0) }
        configuration.reconnectInterval = .milliseconds(250)
        return configuration
    }

    /// The room as a member's screen shows it: the reducer fed every event its engine reported so far.
    final class Screen {
        private var state: RoomState
        private let log: EventLog
        private var fed = 0

        init(_ name: String, _ log: EventLog) {
            state = RoomState(roomName: "failover", localName: name)
            self.log = log
        }

        /// The room after the events that arrived since the last look.
        var now: RoomState {
            let events = log.all
            for event in events.dropFirst(fed) { _ = reduce(&state, .event(event)) }
            fed = events.count
            return state
        }
    }

    /// ca joins first through node 0 (then 1), cb through node 1 (then 0); node 0 dies without a word to the
    /// cluster, as under `kill -9`. ca comes back through node 1 still the host, and nobody saw cb move: cb never did.
    @Test func aHostWhoseNodeDiesIsBackThroughAnotherStillTheHostAndOnlyItIsSeenMoving() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let cluster = try await InProcessCluster.start(nodes: 2, logger: logger)
        try await cluster.connect()
        let ports = cluster.relays.map(\.signalingPort)
        // ca reaches node 0 through a proxy, so that node 0 can vanish for ca as a killed process does: the
        // connection drops, and nobody answers there again.
        let proxy = try await TCPRecorder.start(targetPort: ports[0])
        let ca = try CallEngine(configuration("ca", servers: [proxy.port, ports[1]]))
        let cb = try CallEngine(configuration("cb", servers: [ports[1], ports[0]]))
        let logs = [EventLog(), EventLog()]
        let tasks = [logs[0].consume(ca), logs[1].consume(cb)]
        let screens = [Screen("ca", logs[0]), Screen("cb", logs[1])]
        ca.start()
        #expect(await eventually { logs[0].all.contains { if case .joined = $0 { true } else { false } } })
        cb.start()
        let settled = await eventually(within: .seconds(10)) {
            let (atA, atB) = (screens[0].now, screens[1].now)
            return atA.hostName == "ca" && atB.hostName == "ca" && atA.sessions.count == 2 && atB.sessions.count == 2
        }
        #expect(settled, "ca, first in, hosts on both nodes")
        // cb opened the room on node 1 and hosted there until node 0's older claim (ca's) arrived: what each saw
        // from here on is what the failover told them.
        let before = (screens[0].now.chatLog.entries.count, screens[1].now.chatLog.entries.count)

        // kill -9 of node 0, as ca and node 1 see it: node 0 says nothing more to the cluster (it is found dead
        // only after 3 s of silence), and ca's connection to it drops.
        cluster.buses[0].connect([])
        await proxy.stop()
        // Until cb's chat says ca is back, cb may simply not have heard yet (ca's new join and cb's news of it
        // travel separately): wait for that too, not only for ca.
        let back = await eventually(within: .seconds(10)) {
            let (atA, atB) = (screens[0].now, screens[1].now)
            return atA.connection == .connected && atA.disconnectedAt == nil && atA.hostID == atA.localID
                && atB.hostName == "ca" && atB.sessions.allSatisfy { $0.connection != .reconnecting }
                && logs[0].all.contains(.alert(.reconnected))
                && atB.chatLog.entries.dropFirst(before.1).contains { $0.text == "ca is back" }
        }
        let (atA, atB) = (screens[0].now, screens[1].now)
        let seenByA = atA.chatLog.entries.dropFirst(before.0).map(\.text)
        #expect(back, "ca back through node 1: \(seenByA)")
        #expect(atA.hostID == atA.localID, "ca is still the host: \(seenByA)")
        #expect(!seenByA.contains { $0.hasPrefix("cb ") }, "cb never moved: ca is told nothing of cb: \(seenByA)")
        #expect(atA.sessions.map(\.name) == ["ca", "cb"])
        // cb saw ca move, and back, and ca still hosting.
        let seenByB = atB.chatLog.entries.dropFirst(before.1).map(\.text)
        #expect(
            seenByB.contains("ca lost the connection: reconnecting…") && seenByB.contains("ca is back"), "\(seenByB)")
        #expect(!seenByB.contains { $0.hasPrefix("You are the host") }, "\(seenByB)")
        #expect(atB.hostName == "ca", "\(seenByB)")

        for engine in [ca, cb] { await engine.leave() }
        for task in tasks { task.cancel() }
        await cluster.shutdown()
    }
}
