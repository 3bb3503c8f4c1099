import Foundation
import ParleyEngine
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Faults a relay meets in daily use, on the real `parley serve` process.
@Suite(.serialized, .lane(.processes))
struct RelayFaultTests {
    /// The video packets `bot`'s statistics file says it received from its peers so far.
    static func videoReceived(_ statsFile: String) -> Int {
        guard let stats = try? CallStatisticsFile(path: statsFile).read() else { return 0 }
        return stats.peers.map(\.videoPackets).reduce(0, +)
    }

    /// CPU seconds (user + system) a process has used, from /proc; nil when they cannot be read (a zero would let
    /// the "not spinning" check pass without measuring anything).
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("--max-connections above what ulimit -n allows is held to the budget, and the relay says so and serves")
    func maxConnectionsIsHeldToTheDescriptorBudget() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let relay = try BackgroundProcess(
            "/bin/sh",
            [
                "-c", "ulimit -n 1024 && exec '\(parley)' serve --port 0 --insecure --max-connections 5000",
            ])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        #expect(
            relay.output.contains(
                "--max-connections 5000 is more than 1024 file descriptors allow (ulimit -n): holding at most 960"),
            "\(relay.output)")
    }

    /// How long the full relay is watched: its CPU use and alice's packets over this window are the measurement.
    static let fullWindow = Duration.seconds(3)

    @Test(
        "at its file descriptor budget the relay refuses new connections with one log line, never spins, keeps its call, recovers"
    )
    func outOfFileDescriptors() async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = NSTemporaryDirectory() + "parley-fds-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // 40 descriptors: the relay keeps half for itself and holds at most 20 connections.
        let relay = try BackgroundProcess(
            "/bin/sh",
            [
                "-c", "ulimit -n 40 && exec '\(parley)' serve --port 0 --insecure --max-connections-per-address 1000",
            ])
        defer { relay.stop() }
        try await relay.output(containing: "listening on", within: .seconds(10))
        let port = try #require(relay.output.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) })
        func bot(_ name: String, _ extra: [String]) throws -> BackgroundProcess {
            try BackgroundProcess(
                parley,
                [
                    "bot", "fds", "--server", "127.0.0.1:\(port)", "--insecure", "--name", name,
                    "--no-decode",
                ] + extra)
        }
        let alice = try bot("alice", ["--stats-file", folder + "/alice.json"])
        defer { alice.stop() }
        let bob = try bot("bob", [])
        defer { bob.stop() }
        try await poll("alice receiving bob's video before the flood", timeout: .seconds(10), every: .milliseconds(100))
        {
            Self.videoReceived(folder + "/alice.json")
        } until: {
            $0 > 20
        }

        // 80 connections that never join: the relay keeps 18 (with the two members, its 20) and refuses the rest.
        var flood: [Int32] = []
        defer { for socket in flood { close(socket) } }
        for _ in 0..<80 {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port)!).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            #expect(connected == 0, "connect: \(String(cString: strerror(errno)))")
            flood.append(socket)
        }
        try await relay.output(
            containing: "refusing new connections: the relay holds 20 connections, its limit", within: .seconds(10))
        let refused = try bot("dave", ["--duration", "2"])
        #expect(await refused.exitStatus(within: .seconds(20)) == 1, "a join while full fails:\n\(refused.output)")
        #expect(
            refused.output.contains("closed the connection without answering: the relay may be full"),
            "\(refused.output)")

        // The call goes on, and the relay waits instead of spinning on the listening socket.
        let before = Self.videoReceived(folder + "/alice.json")
        let cpuBefore = try #require(Self.cpuSeconds(relay.pid), "the relay's CPU time cannot be read")
        let windowStart = ContinuousClock.now
        try await Task.sleep(for: Self.fullWindow)
        // Over the window as it was (a test task may wake late): the same rates as 30 packets and 1.5 s in 3 s.
        let window = ContinuousClock.now - windowStart
        let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        let cpu =
            (try #require(Self.cpuSeconds(relay.pid), "the relay's CPU time cannot be read") - cpuBefore) / seconds
        let after = Self.videoReceived(folder + "/alice.json")
        #expect(
            Double(after - before) >= 10 * seconds,
            "alice kept receiving bob's video: \(after - before) packets in \(seconds) s")
        #expect(cpu < 0.5, "the relay used \(Int(cpu * 100)) % of a core while full")
        let lines = relay.output.components(separatedBy: "\n").filter { $0.contains("refusing new connections") }
        #expect(lines.count == 1, "one log line a minute, not one per attempt:\n\(lines.joined(separator: "\n"))")
        #expect(!relay.output.contains("[ParleyRelay]"), "plain log lines:\n\(relay.output)")

        // Descriptors free again: a new member gets in.
        for socket in flood { close(socket) }
        flood = []
        let carol = try bot("carol", ["--duration", "2"])
        #expect(
            await carol.exitStatus(within: .seconds(20)) == 0, "carol joins once descriptors are free:\n\(carol.output)"
        )
    }
}
