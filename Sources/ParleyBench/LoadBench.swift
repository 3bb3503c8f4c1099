import Foundation
import ParleyRelay
import ParleyWire
import Synchronization

/// `parley-bench load`: one `parley serve` under a day's load and under attack, on loopback.
///
/// - Soak: light members (real RTP at a call's rates: 1212-byte VP8 packets and 100-byte Opus packets, 60 a second
///   each, about 315 kbit/s) in rooms of ten, all sending, for minutes: forwarded packets a second, the relay's CPU,
///   the forwarding delay (send to receive, both in this process), and the relay's memory after warm-up and at the end.
/// - Churn: thousands of join-send-leave cycles beside a steady pair; the relay's memory before and after.
/// - Hostile: a 3-party call while idle WebSockets, a spray of bad media binds and garbage datagrams arrive; the
///   call's loss, the relay's memory and CPU, and how long a new member's join takes.
public enum LoadBench {
    /// What to run; `fromEnvironment` shortens it for a quick look.
    public struct Settings: Sendable {
        public var soak: Duration = .seconds(600)
        public var warmUp: Duration = .seconds(60)
        public var rooms = 20
        public var membersPerRoom = 10
        /// RTP packets one member sends a second (half VP8, half Opus).
        public var packetsPerSecond = 60.0
        public var churnCycles = 2000
        public var hostile: Duration = .seconds(60)
        public var idleWebSockets = 10_000
        public var garbagePerSecond = 50_000
        public var badBindsPerSecond = 2_000

        public init() {}

        /// PARLEY_LOAD_SOAK_SECONDS, PARLEY_LOAD_CHURN, PARLEY_LOAD_HOSTILE_SECONDS, and the attack's
        /// PARLEY_LOAD_IDLE, PARLEY_LOAD_GARBAGE, PARLEY_LOAD_BAD_BINDS override the defaults.
        public static func fromEnvironment() -> Settings {
            var settings = Settings()
            let environment = ProcessInfo.processInfo.environment
            if let text = environment["PARLEY_LOAD_SOAK_SECONDS"], let value = Int(text), value >= 10 {
                settings.soak = .seconds(value)
                settings.warmUp = .seconds(min(60, value / 5))
            }
            if let text = environment["PARLEY_LOAD_CHURN"], let value = Int(text), value >= 200 {
                settings.churnCycles = value
            }
            if let text = environment["PARLEY_LOAD_HOSTILE_SECONDS"], let value = Int(text), value >= 5 {
                settings.hostile = .seconds(value)
            }
            for (name, keyPath) in [
                ("PARLEY_LOAD_IDLE", \Settings.idleWebSockets),
                ("PARLEY_LOAD_GARBAGE", \Settings.garbagePerSecond),
                ("PARLEY_LOAD_BAD_BINDS", \Settings.badBindsPerSecond),
            ] {
                if let text = environment[name], let value = Int(text), value >= 0 {
                    settings[keyPath: keyPath] = value
                }
            }
            return settings
        }
    }

    /// Runs the three phases, each on a fresh relay.
    public static func run(
        executable: String, settings: Settings = .fromEnvironment(),
        log: @escaping @Sendable (String) -> Void
    ) throws -> [BenchTable] {
        DescriptorBudget.raiseSoftLimit()
        return [
            try soak(executable: executable, settings: settings, log: log),
            try churn(executable: executable, settings: settings, log: log),
            try hostile(executable: executable, settings: settings, log: log),
        ]
    }

    // MARK: - Soak

    static func soak(executable: String, settings: Settings, log: @escaping @Sendable (String) -> Void) throws
        -> BenchTable
    {
        log("load: soak, \(settings.rooms) rooms × \(settings.membersPerRoom), \(seconds(settings.soak)) s")
        let relay = try RelayProcess(executable: executable, cpu: nil)
        defer { relay.stop() }
        var signaling: [SignalingSocket] = []
        var members: [LoadMember] = []
        for room in 0..<settings.rooms {
            for index in 0..<settings.membersPerRoom {
                let (socket, member) = try join(
                    relay, room: "soak\(room)", name: "m\(room)x\(index)",
                    fanOut: settings.membersPerRoom - 1)
                signaling.append(socket)
                members.append(member)
            }
        }
        let counters = LoadCounters()
        let delays = DelayHistogram()
        let receiver = LoadReceiver(sockets: members.map(\.media.descriptor), counters: counters, delays: delays)
        let receiving = receiver.start(cpu: nil)
        defer {
            receiver.stop()
            receiving.wait()
        }
        let generator = LoadGenerator(
            members: members, packetsPerSecond: settings.packetsPerSecond,
            counters: counters, duration: settings.soak)
        let generating = generator.start(cpu: nil)
        wait(settings.warmUp, keepingAlive: signaling)
        let warmRSS = residentKilobytes(pid: relay.process.processIdentifier)
        let startCounters = counters.snapshot()
        let startDelays = delays.snapshot()
        let startCPU = relay.cpuSeconds()
        let startWall = ContinuousClock.now
        var peakRSS = warmRSS
        while ContinuousClock.now - startWall < settings.soak - settings.warmUp - .seconds(2) {
            wait(.seconds(10), keepingAlive: signaling)
            let rss = residentKilobytes(pid: relay.process.processIdentifier)
            peakRSS = max(peakRSS, rss)
            let now = counters.snapshot()
            log(
                "  soak \(Int(seconds(ContinuousClock.now - startWall))) s: relay \(rss / 1024) MiB, "
                    + "\(now.received - startCounters.received) delivered")
        }
        let endCounters = counters.snapshot()
        let endDelays = delays.snapshot()
        let wall = seconds(ContinuousClock.now - startWall)
        let cpu = (relay.cpuSeconds() - startCPU) / wall
        let endRSS = residentKilobytes(pid: relay.process.processIdentifier)
        generating.wait()
        for socket in signaling { socket.leave() }

        let delivered = Double(endCounters.received - startCounters.received) / wall
        let expected = endCounters.expected - startCounters.expected
        let loss =
            expected > 0 ? max(0, 1 - Double(endCounters.received - startCounters.received) / Double(expected)) : 0
        let window = DelayHistogram.difference(endDelays, startDelays)
        let growth = warmRSS > 0 ? Double(endRSS - warmRSS) / Double(warmRSS) * 100 : .nan
        var table = BenchTable(
            title: "Relay soak: \(members.count) members sending in \(settings.rooms) rooms of "
                + "\(settings.membersPerRoom), \(Int(seconds(settings.soak))) s on loopback",
            columns: ["Measure", "Value", "Goal"])
        table.add(["Members / rooms", "\(members.count) / \(settings.rooms)", "≥ 200 / ≥ 20"])
        table.add([
            "Sent (all members)",
            "\(formatted(Double(endCounters.sent - startCounters.sent) / wall, decimals: 0)) pkt/s", "",
        ])
        table.add(["Forwarded (delivered)", "\(formatted(delivered, decimals: 0)) pkt/s", ""])
        table.add(["Loss", "\(formatted(loss * 100, decimals: 3)) %", ""])
        table.add(["Relay CPU (one core = 100 %)", "\(formatted(cpu * 100, decimals: 1)) %", ""])
        table.add([
            "Forwarding delay p50 / p99 / max bucket",
            "\(DelayHistogram.describe(window, 0.5)) / \(DelayHistogram.describe(window, 0.99)) / "
                + DelayHistogram.describe(window, 1.0), "",
        ])
        table.add([
            "Relay RSS after \(Int(seconds(settings.warmUp))) s warm-up",
            "\(formatted(Double(warmRSS) / 1024, decimals: 1)) MiB", "",
        ])
        table.add([
            "Relay RSS at the end (peak)",
            "\(formatted(Double(endRSS) / 1024, decimals: 1)) MiB "
                + "(\(formatted(Double(peakRSS) / 1024, decimals: 1)))", "",
        ])
        table.add([
            "RSS growth after warm-up", "\(formatted(growth, decimals: 2)) %",
            "≤ 5 %: " + (growth <= 5 ? "met" : "NOT met"),
        ])
        table.notes = [
            "Each member: one WebSocket (joined) and one UDP socket (bound with its credential), sending "
                + "\(Int(settings.packetsPerSecond)) RTP packets a second (1212-byte VP8 and 100-byte Opus alternating, "
                + "real sequence numbers and timestamps), about 315 kbit/s; every member receives the other "
                + "\(settings.membersPerRoom - 1). Generator and receiver are two threads of this process, the relay "
                + "is `parley serve --insecure` (plain WebSocket: this measures forwarding, not TLS).",
            "Delay: the send time is written into each packet's last 8 bytes; the receiver thread reads it on "
                + "arrival, so the figure includes both kernels' loopback and this process's scheduling "
                + "(10 µs buckets). Figures are over the window after warm-up; RSS from /proc/PID/status.",
        ]
        return table
    }

    // MARK: - Churn

    static func churn(executable: String, settings: Settings, log: @escaping @Sendable (String) -> Void) throws
        -> BenchTable
    {
        log("load: churn, \(settings.churnCycles) join-send-leave cycles")
        let relay = try RelayProcess(executable: executable, cpu: nil)
        defer { relay.stop() }
        var steady: [SignalingSocket] = []
        var pair: [LoadMember] = []
        for index in 0..<2 {
            let (socket, member) = try join(relay, room: "churn", name: "steady\(index)", fanOut: 1)
            steady.append(socket)
            pair.append(member)
        }
        let counters = LoadCounters()
        let receiver = LoadReceiver(sockets: pair.map(\.media.descriptor), counters: counters)
        let receiving = receiver.start(cpu: nil)
        defer {
            receiver.stop()
            receiving.wait()
        }
        let warmUpCycles = max(100, settings.churnCycles / 10)
        let totalCycles = warmUpCycles + settings.churnCycles
        let generator = LoadGenerator(
            members: pair, packetsPerSecond: settings.packetsPerSecond, counters: counters,
            duration: .seconds(3600))
        let generating = generator.start(cpu: nil)
        defer {
            generator.stop()
            generating.wait()
        }
        let packet = RTPPacket(
            header: RTPHeader(
                marker: true, payloadType: MediaPayloadType.opus, sequenceNumber: 1, timestamp: 960,
                ssrc: 0), payload: [0x78] + [UInt8](repeating: 0x33, count: 87)
        ).serialized()
        var baseline = 0
        let started = ContinuousClock.now
        var measuredStart = started
        for cycle in 0..<totalCycles {
            if cycle == warmUpCycles {
                baseline = residentKilobytes(pid: relay.process.processIdentifier)
                measuredStart = ContinuousClock.now
            }
            let (socket, member) = try join(relay, room: "churn", name: "visitor\(cycle)", fanOut: 2)
            // Twenty packets on each of its streams (audio and video), then goodbye.
            for ssrc in [member.ssrcs.audio, member.ssrcs.video] {
                for sequence in 0..<20 {
                    var bytes = packet
                    bytes.replaceSubrange(2..<4, with: [UInt8(sequence >> 8), UInt8(sequence & 0xFF)])
                    bytes.replaceSubrange(8..<12, with: withUnsafeBytes(of: ssrc.bigEndian, Array.init))
                    _ = bytes.withUnsafeBytes { send(member.media.descriptor, $0.baseAddress, $0.count, 0) }
                }
            }
            socket.leave()
            if cycle % 200 == 0 {
                for socket in steady { socket.keepAlive() }
                if cycle % 1000 == 0 { log("  churn cycle \(cycle)") }
            }
        }
        // Let the relay notice the last leaves and free what they held.
        wait(.seconds(3), keepingAlive: steady)
        let end = residentKilobytes(pid: relay.process.processIdentifier)
        let wall = seconds(ContinuousClock.now - measuredStart)
        let growth = baseline > 0 ? Double(end - baseline) / Double(baseline) * 100 : .nan
        for socket in steady { socket.leave() }
        var table = BenchTable(
            title: "Relay churn: \(settings.churnCycles) join-send-leave cycles beside a steady pair",
            columns: ["Measure", "Value", "Goal"])
        table.add(["Cycles measured (after \(warmUpCycles) warm-up cycles)", "\(settings.churnCycles)", "≥ 2000"])
        table.add(["Cycle rate", "\(formatted(Double(settings.churnCycles) / (wall - 3), decimals: 0)) /s", ""])
        table.add(["Relay RSS after warm-up", "\(formatted(Double(baseline) / 1024, decimals: 1)) MiB", ""])
        table.add(["Relay RSS after the cycles", "\(formatted(Double(end) / 1024, decimals: 1)) MiB", ""])
        table.add(["RSS growth", "\(formatted(growth, decimals: 2)) %", "≤ 5 %: " + (growth <= 5 ? "met" : "NOT met")])
        table.notes = [
            "A cycle: a new WebSocket joins room `churn` (the steady pair in it, each sending "
                + "\(Int(settings.packetsPerSecond)) RTP packets a second throughout), binds its UDP socket, sends 20 RTP "
                + "packets on its audio and 20 on its video stream (the relay forwards them and keeps them for "
                + "retransmission), says goodbye and closes. One cycle after the other from this process."
        ]
        return table
    }

    // MARK: - Hostile

    static func hostile(executable: String, settings: Settings, log: @escaping @Sendable (String) -> Void) throws
        -> BenchTable
    {
        log("load: hostile, \(seconds(settings.hostile)) s")
        let relay = try RelayProcess(executable: executable, cpu: nil)
        defer { relay.stop() }
        var call: [SignalingSocket] = []
        var members: [LoadMember] = []
        for index in 0..<3 {
            let (socket, member) = try join(relay, room: "call", name: "caller\(index)", fanOut: 2)
            call.append(socket)
            members.append(member)
        }
        let counters = LoadCounters()
        let receiver = LoadReceiver(sockets: members.map(\.media.descriptor), counters: counters)
        let receiving = receiver.start(cpu: nil)
        defer {
            receiver.stop()
            receiving.wait()
        }
        let quiet = residentKilobytes(pid: relay.process.processIdentifier)
        let attack = HostileTraffic(
            signalingPort: relay.signalingPort, mediaPort: relay.mediaPort,
            idleWebSockets: settings.idleWebSockets,
            garbagePerSecond: settings.garbagePerSecond,
            badBindsPerSecond: settings.badBindsPerSecond)
        attack.start()
        // The attack builds up before the call is measured.
        wait(.seconds(5), keepingAlive: call)
        let generator = LoadGenerator(
            members: members, packetsPerSecond: settings.packetsPerSecond,
            counters: counters, duration: settings.hostile)
        let startCounters = counters.snapshot()
        let startCPU = relay.cpuSeconds()
        let startWall = ContinuousClock.now
        let startWait = relay.waitSeconds()
        let startOwn = ownCPUSeconds()
        let startAttack = attack.counts()
        let generating = generator.start(cpu: nil)
        var joinTimes: [Double] = []
        var joinFailures: [String] = []
        var peakRSS = quiet
        // RSS through the attack, to tell a plateau (bounded) from a climb (a leak under attack).
        var rssSamples: [(at: Double, kilobytes: Int)] = []
        var idleSeen: [Int] = []
        while ContinuousClock.now - startWall < settings.hostile {
            wait(.seconds(2), keepingAlive: call)
            let before = ContinuousClock.now
            do {
                let socket = try SignalingSocket(port: relay.signalingPort)
                _ = try socket.join(room: "newcomer\(joinTimes.count)", name: "newcomer")
                joinTimes.append(seconds(ContinuousClock.now - before))
                socket.leave()
            } catch {
                joinFailures.append("\(error)")
            }
            let rss = residentKilobytes(pid: relay.process.processIdentifier)
            peakRSS = max(peakRSS, rss)
            rssSamples.append((at: seconds(ContinuousClock.now - startWall), kilobytes: rss))
            idleSeen.append(attack.counts().open)
        }
        generating.wait()
        wait(.milliseconds(500), keepingAlive: call)
        let endCounters = counters.snapshot()
        let endAttack = attack.counts()
        let wall = seconds(ContinuousClock.now - startWall)
        let cpu = (relay.cpuSeconds() - startCPU) / wall
        let waiting = (relay.waitSeconds() - startWait) / wall
        let own = (ownCPUSeconds() - startOwn) / wall
        attack.stop()
        wait(.seconds(12), keepingAlive: call)
        let after = residentKilobytes(pid: relay.process.processIdentifier)
        for socket in call { socket.leave() }

        // Bounded: the highest RSS of the attack's second half at most 5 % above the highest of its first half.
        let half = wall / 2
        let firstHalf: [Int] = rssSamples.filter { $0.at <= half }.map { $0.kilobytes }
        let secondHalf: [Int] = rssSamples.filter { $0.at > half }.map { $0.kilobytes }
        let firstHalfPeak: Int = firstHalf.max() ?? quiet
        let secondHalfPeak: Int = secondHalf.max() ?? firstHalfPeak
        let attackGrowth: Double =
            firstHalfPeak > 0 ? Double(secondHalfPeak - firstHalfPeak) / Double(firstHalfPeak) * 100 : .nan
        let firstHalfMiB = formatted(Double(firstHalfPeak) / 1024, decimals: 1)
        let secondHalfMiB = formatted(Double(secondHalfPeak) / 1024, decimals: 1)
        let expected = endCounters.expected - startCounters.expected
        let loss =
            expected > 0 ? max(0, 1 - Double(endCounters.received - startCounters.received) / Double(expected)) : 1
        let slowest = joinTimes.max() ?? .nan
        var table = BenchTable(
            title: "Relay under attack: a 3-party call beside idle WebSockets, bad binds and garbage datagrams, "
                + "\(Int(seconds(settings.hostile))) s",
            columns: ["Measure", "Value", "Goal"])
        table.add([
            "Idle WebSockets held open (median of samples)",
            "\(idleSeen.sorted()[idleSeen.count / 2]) (target \(settings.idleWebSockets); opened "
                + "\(endAttack.opened - startAttack.opened), closed by the relay "
                + "\(endAttack.closedByRelay - startAttack.closedByRelay))", "10,000",
        ])
        table.add([
            "Garbage datagrams", "\(formatted(Double(endAttack.garbage - startAttack.garbage) / wall, decimals: 0)) /s",
            "50,000 /s",
        ])
        table.add([
            "Bad bind requests",
            "\(formatted(Double(endAttack.badBinds - startAttack.badBinds) / wall, decimals: 0)) /s", "",
        ])
        table.add([
            "The call's loss (3 members, \(Int(settings.packetsPerSecond)) pkt/s each)",
            "\(formatted(loss * 100, decimals: 3)) %", "< 1 %: " + (loss < 0.01 ? "met" : "NOT met"),
        ])
        table.add([
            "A new member's join (connect, upgrade, joined), slowest of \(joinTimes.count)",
            "\(formatted(slowest * 1000, decimals: 0)) ms"
                + (joinFailures.isEmpty ? "" : "; \(joinFailures.count) failed: \(joinFailures[0])"),
            "< 1 s: " + (slowest < 1 && joinFailures.isEmpty ? "met" : "NOT met"),
        ])
        table.add([
            "Relay CPU / waiting for a core (one core = 100 %)",
            "\(formatted(cpu * 100, decimals: 1)) % / \(formatted(waiting * 100, decimals: 1)) %", "",
        ])
        table.add(["This process (attacker and call) CPU", "\(formatted(own * 100, decimals: 1)) %", ""])
        table.add([
            "Relay RSS before / peak / 12 s after",
            "\(formatted(Double(quiet) / 1024, decimals: 1)) / "
                + "\(formatted(Double(peakRSS) / 1024, decimals: 1)) / \(formatted(Double(after) / 1024, decimals: 1)) MiB",
            "",
        ])
        table.add([
            "Relay RSS peak, attack's first half → second half",
            "\(firstHalfMiB) → \(secondHalfMiB) MiB (\(formatted(attackGrowth, decimals: 1)) %)",
            "bounded, growth ≤ 5 %: " + (attackGrowth <= 5 ? "met" : "NOT met"),
        ])
        table.notes = [
            "Idle WebSockets: upgraded, never joined; the relay closes each after its 10 s join timeout and the "
                + "attacker opens another at once, so about a thousand handshakes a second arrive throughout. They "
                + "come from one address: the relay runs with --max-connections-per-address 100000 here (the "
                + "default, 16, would refuse all but 16 of them at once, which is the point of that limit).",
            "Bad binds: well-formed bind requests with wrong member ids and tokens from 64 source ports. Garbage: "
                + "random bytes, 1 to 1400 long, from 16 source ports. All on loopback from this process, beside the "
                + "call's generator and receiver threads; 2 cores in all.",
        ]
        return table
    }

    // MARK: - Helpers

    /// Joins `room` as `name` and binds a media socket.
    static func join(_ relay: RelayProcess, room: String, name: String, fanOut: Int) throws
        -> (SignalingSocket, LoadMember)
    {
        let socket = try SignalingSocket(port: relay.signalingPort)
        let grant = try socket.join(room: room, name: name)
        let media = try MediaSocket(connectingTo: grant.media.udpPort)
        try media.bind(grant)
        return (socket, LoadMember(media: media, ssrcs: grant.media.ssrcs, room: 0, sends: true, fanOut: fanOut))
    }

    /// Sleeps while keeping the members' signaling alive.
    static func wait(_ duration: Duration, keepingAlive sockets: [SignalingSocket]) {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            for socket in sockets { socket.keepAlive() }
            Thread.sleep(forTimeInterval: max(0, min(0.25, seconds(end - ContinuousClock.now))))
        }
    }
}

/// Resident memory of a process in KiB (VmRSS of /proc/PID/status), 0 when unreadable.
func residentKilobytes(pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every thread and process of this machine.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Forwarding delays in 10 µs buckets up to 100 ms, and one bucket beyond.
final class DelayHistogram: Sendable {
    static let bucketNanoseconds: UInt64 = 10_000
    static let buckets = 10_001
    private let counts = Mutex<[Int]>([Int](repeating: 0, count: DelayHistogram.buckets))

    static func bucket(nanoseconds: UInt64) -> Int { Int(min(nanoseconds / bucketNanoseconds, UInt64(buckets - 1))) }

    func add(_ buckets: [Int]) {
        counts.withLock { counts in for bucket in buckets { counts[bucket] += 1 } }
    }

    func snapshot() -> [Int] { counts.withLock { $0 } }

    static func difference(_ later: [Int], _ earlier: [Int]) -> [Int] { zip(later, earlier).map { $0 - $1 } }

    /// The `quantile` (0…1) of `counts` as text: "0.42 ms", or "> 100 ms".
    static func describe(_ counts: [Int], _ quantile: Double) -> String {
        let total = counts.reduce(0, +)
        guard total > 0 else { return "no samples" }
        let target = max(1, Int((Double(total) * quantile).rounded(.up)))
        var seen = 0
        for (bucket, count) in counts.enumerated() {
            seen += count
            if seen >= target {
                if bucket == buckets - 1 { return "> 100 ms" }
                return formatted(Double(bucket + 1) * Double(bucketNanoseconds) / 1e6, decimals: 2) + " ms"
            }
        }
        return "> 100 ms"
    }
}

/// The attacker: keeps `idleWebSockets` upgraded WebSockets open that never join (reopening what the relay closes),
/// sprays bad bind requests and garbage datagrams at the media port. Three threads until `stop()`.
final class HostileTraffic: @unchecked Sendable {
    // @unchecked: each thread owns its sockets; shared state is atomic.
    struct Counts {
        var open: Int
        var opened: Int
        var closedByRelay: Int
        var garbage: Int
        var badBinds: Int
    }

    private let signalingPort: Int
    private let mediaPort: Int
    private let idleTarget: Int
    private let garbageRate: Int
    private let bindRate: Int
    private let running = Atomic<Bool>(true)
    private let open = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)
    private let closedByRelay = Atomic<Int>(0)
    private let garbage = Atomic<Int>(0)
    private let badBinds = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(signalingPort: Int, mediaPort: Int, idleWebSockets: Int, garbagePerSecond: Int, badBindsPerSecond: Int) {
        self.signalingPort = signalingPort
        self.mediaPort = mediaPort
        idleTarget = idleWebSockets
        garbageRate = garbagePerSecond
        bindRate = badBindsPerSecond
    }

    func start() {
        for body in [idleSockets, garbageDatagrams, badBindSpray] {
            Thread { [self] in
                body()
                finished.signal()
            }.start()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        for _ in 0..<3 { finished.wait() }
    }

    func counts() -> Counts {
        Counts(
            open: open.load(ordering: .relaxed), opened: opened.load(ordering: .relaxed),
            closedByRelay: closedByRelay.load(ordering: .relaxed), garbage: garbage.load(ordering: .relaxed),
            badBinds: badBinds.load(ordering: .relaxed))
    }

    /// Opens non-blocking connections with the upgrade request until `idleTarget` are open; a connection the relay
    /// closes is replaced. At most 500 new ones a tick, so the relay's accept queue is never simply overrun.
    private func idleSockets() {
        let request = Array(
            ("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(signalingPort)\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: cGFybGV5LWJlbmNoLWtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                .utf8)
        var sockets: [pollfd] = []
        var unsent: Set<Int32> = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .relaxed) {
            var made = 0
            while sockets.count < idleTarget, made < 500 {
                let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                guard descriptor >= 0 else { break }
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                var address = loopbackAddress(port: signalingPort)
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                sockets.append(pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0))
                unsent.insert(descriptor)
                made += 1
                opened.add(1, ordering: .relaxed)
            }
            open.store(sockets.count, ordering: .relaxed)
            guard poll(&sockets, nfds_t(sockets.count), 20) > 0 else { continue }
            var index = 0
            while index < sockets.count {
                let entry = sockets[index]
                if entry.revents & Int16(POLLOUT) != 0, unsent.contains(entry.fd) {
                    _ = request.withUnsafeBytes { send(entry.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    unsent.remove(entry.fd)
                    sockets[index].events = Int16(POLLIN)
                }
                if entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    let count = buffer.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 && !(count < 0 && errno == EAGAIN) {
                        close(entry.fd)
                        unsent.remove(entry.fd)
                        sockets.swapAt(index, sockets.count - 1)
                        sockets.removeLast()
                        closedByRelay.add(1, ordering: .relaxed)
                        continue
                    }
                }
                sockets[index].revents = 0
                index += 1
            }
        }
        for entry in sockets { close(entry.fd) }
        open.store(0, ordering: .relaxed)
    }

    /// Random datagrams at `garbageRate` a second from 16 sockets, in batches.
    private func garbageDatagrams() {
        let sockets = (0..<16).compactMap { _ in try? MediaSocket(connectingTo: mediaPort) }
        let batch = DatagramBatch(count: 64, size: 1400)
        var generator = SystemRandomNumberGenerator()
        for offset in stride(from: 0, to: 64 * 1400, by: 8) {
            batch.storage.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
        }
        let clock = ContinuousClock()
        let start = clock.now
        var sent = 0
        var turn = 0
        while running.load(ordering: .relaxed) {
            let due = Int(Double(garbageRate) * seconds(clock.now - start))
            if due - sent > garbageRate / 10 { sent = due - garbageRate / 10 }
            while sent < due {
                let count = min(64, due - sent)
                for slot in 0..<count {
                    batch.vectors[slot].iov_len = Int.random(in: 1...1400, using: &generator)
                    // Now and then a datagram that looks like RTP or RTCP at first glance.
                    if slot % 8 == 0 {
                        batch.storage.storeBytes(of: UInt8(0x80), toByteOffset: slot * 1400, as: UInt8.self)
                    }
                }
                let done = Int(
                    BatchIO.sendmmsg(
                        sockets[turn % sockets.count].descriptor, batch.headers,
                        UInt32(count), Int32(MSG_DONTWAIT)))
                turn += 1
                if done <= 0 { break }
                sent += done
                garbage.add(done, ordering: .relaxed)
            }
            usleep(500)
        }
    }

    /// Bind requests with made-up member ids and tokens, from 64 sockets, at `bindRate` a second.
    private func badBindSpray() {
        let sockets = (0..<64).compactMap { _ in try? MediaSocket(connectingTo: mediaPort) }
        var generator = SystemRandomNumberGenerator()
        let clock = ContinuousClock()
        let start = clock.now
        var sent = 0
        while running.load(ordering: .relaxed) {
            let due = Int(Double(bindRate) * seconds(clock.now - start))
            while sent < due {
                let token = BindToken(
                    hex: String(
                        format: "%016llx%016llx", generator.next() as UInt64,
                        generator.next() as UInt64))!
                let request = BindRequest(
                    ssrc: UInt32.random(in: 0...UInt32.max, using: &generator),
                    memberID: UInt32.random(in: 1...5000, using: &generator), token: token
                )
                .serialized()
                let socket = sockets[sent % sockets.count]
                _ = request.withUnsafeBytes { send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                sent += 1
                badBinds.add(1, ordering: .relaxed)
            }
            // Answers (refusals) are read and dropped so the sockets' buffers never fill.
            var scratch = [UInt8](repeating: 0, count: 256)
            for socket in sockets {
                while scratch.withUnsafeMutableBytes({
                    recv(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                }) > 0 {}
            }
            usleep(2000)
        }
    }
}
