import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Forwarding rate of the relay on loopback: the real `parley serve` in its own process, real joins over WebSocket,
/// real binds, then raw UDP members sending VP8- and Opus-sized RTP and counting what the relay delivers to them.
/// A plain recvmmsg → sendmmsg forwarder with a static routing table, run on the same load in the same run, is the
/// reference: the kernel's share of the work, which no user-space relay can go below.
public enum RelayBench {
    /// Rooms and members of one measured layout.
    public struct Layout: Sendable {
        /// Shown in the table.
        public var name: String
        /// Rooms.
        public var rooms: Int
        /// Members per room.
        public var membersPerRoom: Int
        /// Members per room that send media (the first ones); all members receive.
        public var sendersPerRoom: Int

        /// A layout.
        public init(name: String, rooms: Int, membersPerRoom: Int, sendersPerRoom: Int) {
            self.name = name
            self.rooms = rooms
            self.membersPerRoom = membersPerRoom
            self.sendersPerRoom = sendersPerRoom
        }

        /// Deliveries per sent packet: every other member of the sender's room.
        var fanOut: Int { membersPerRoom - 1 }
    }

    /// What to measure.
    public struct Settings: Sendable {
        /// Layouts, each on a fresh relay.
        public var layouts: [Layout]
        /// Offered forwarding rates (deliveries per second the senders ask for), one step each.
        public var offeredRates: [Int]
        /// Load before each measured window, not counted.
        public var warmUp: Duration
        /// Measured window of each step.
        public var window: Duration

        /// Defaults: 4 rooms × 4 members all sending, and 1 room × 10 with 2 senders; four rates; 1 s + 2 s steps.
        public init(
            layouts: [Layout] = [
                Layout(name: "4 rooms × 4, all send", rooms: 4, membersPerRoom: 4, sendersPerRoom: 4),
                Layout(name: "1 room × 10, 2 send", rooms: 1, membersPerRoom: 10, sendersPerRoom: 2),
            ],
            offeredRates: [Int] = [50_000, 100_000, 150_000, 200_000],
            warmUp: Duration = .seconds(1), window: Duration = .seconds(2)
        ) {
            self.layouts = layouts
            self.offeredRates = offeredRates
            self.warmUp = warmUp
            self.window = window
        }
    }

    /// Runs every layout at every rate against `parley serve` (started from `executable`) and the reference
    /// forwarder; returns the table.
    public static func run(
        executable: String, settings: Settings = Settings(),
        log: @Sendable (String) -> Void
    ) throws -> BenchTable {
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        // Two cores: the forwarder under test gets the last one, the load generator (sender and receiver threads,
        // and this thread) the first, so neither starves the other. Other processes on the machine still share both.
        let pinning = cores >= 2 ? CPUPinning(forwarder: cores - 1, generator: 0) : nil
        var measured: [(layout: String, parley: [StepResult], reference: [StepResult])] = []
        for layout in settings.layouts {
            var steps: [ForwarderKind: [StepResult]] = [:]
            for forwarder in [ForwarderKind.parley, .reference] {
                log("relay bench: \(forwarder.label), \(layout.name)")
                steps[forwarder] = try measure(
                    forwarder, layout: layout, settings: settings, pinning: pinning,
                    executable: executable, log: log)
            }
            measured.append((layout.name, steps[.parley] ?? [], steps[.reference] ?? []))
        }
        var table = Self.table(measured)
        table.notes =
            [
                "Each step: \(seconds(settings.warmUp)) s warm-up, then a \(seconds(settings.window)) s window; "
                    + "delivered = RTP packets the members' sockets received from the forwarder (one per "
                    + "destination); loss % = 1 − received ÷ (sent × fan-out) over the step and a 300 ms drain.",
                "CPU % = the forwarder's user + system time over the window ÷ wall time (100 % = one core), from "
                    + "the scheduler's runtime of every thread (/proc/PID/task/*/schedstat for `parley serve`, the "
                    + "thread CPU clock for the reference); pkt/s per core = delivered ÷ CPU fraction. Waiting % = "
                    + "time runnable while another process had its CPU (schedstat run-queue wait) ÷ wall time: when "
                    + "high, the delivered rate measures the machine's other load, not the forwarder.",
                (pinning.map {
                    "Pinned: forwarder on CPU \($0.forwarder), load generator (1 sender + 1 receiver thread, "
                        + "sendmmsg/recvmmsg) on CPU \($0.generator). "
                } ?? "One core: nothing pinned, so these figures understate the relay. ")
                    + "On loopback a datagram's kernel receive path runs in the sender's context: the forwarder's "
                    + "CPU includes delivering to its receivers but not its own input.",
                "Raw: a recvmmsg(64) → sendmmsg forwarder in Swift with a static port → room table, no signaling, "
                    + "bind checks or retransmission buffer, the relay's socket buffer size.",
            ] + summary(measured)
        return table
    }

    /// The steps side by side: one row per layout and offered rate, each figure as `parley serve / raw`.
    static func table(_ measured: [(layout: String, parley: [StepResult], reference: [StepResult])]) -> BenchTable {
        var table = BenchTable(
            title: "Relay forwarding on loopback, parley serve / the raw forwarder: delivered RTP packets, mixed "
                + "1212/100-byte datagrams",
            columns: [
                "layout", "offered pkt/s", "delivered pkt/s", "Mbit/s", "forwarder CPU %", "forwarder waiting %",
                "pkt/s per core", "loss %", "load gen CPU %",
            ])
        for (layout, parley, reference) in measured {
            for (index, ours) in parley.enumerated() {
                let theirs = reference.indices.contains(index) ? reference[index] : nil
                func pair(_ value: (StepResult) -> Double, decimals: Int) -> String {
                    formatted(value(ours), decimals: decimals) + " / "
                        + (theirs.map { formatted(value($0), decimals: decimals) } ?? "n/a")
                }
                table.add([
                    layout, pair(\.offered, decimals: 0), pair(\.delivered, decimals: 0),
                    pair(\.megabits, decimals: 0), pair({ $0.forwarderCPU * 100 }, decimals: 1),
                    pair({ $0.forwarderWait * 100 }, decimals: 0), pair(\.perCore, decimals: 0),
                    pair({ $0.loss * 100 }, decimals: 2), pair({ $0.generatorCPU * 100 }, decimals: 0),
                ])
            }
        }
        return table
    }

    /// Per layout, the median packets per core of both forwarders and the highest rate `parley serve` delivered
    /// under 1 % loss; then the goal, at least 100,000 packets a core for every layout.
    static func summary(_ measured: [(layout: String, parley: [StepResult], reference: [StepResult])]) -> [String] {
        var lines: [String] = []
        var medians: [Double] = []
        for (layout, parley, reference) in measured {
            guard let ours = Sample.median(parley.map(\.perCore)) else { continue }
            medians.append(ours)
            var line = "\(layout): parley serve \(formatted(ours, decimals: 0)) pkt/s per core (median of the steps)"
            if let theirs = Sample.median(reference.map(\.perCore)) {
                line += ", raw \(formatted(theirs, decimals: 0)) (\(formatted(ours / theirs, decimals: 2))x)"
            }
            let best = parley.filter { $0.loss < 0.01 }.map(\.delivered).max()
            lines.append(
                line + "; highest delivered under 1 % loss: "
                    + (best.map { formatted($0, decimals: 0) + " pkt/s" } ?? "none") + ".")
        }
        if !medians.isEmpty {
            lines.append(
                goalNote(
                    "≥ 100000 pkt/s per core, every layout", met: medians.allSatisfy { $0 >= 100_000 },
                    medians.map { formatted($0, decimals: 0) }.joined(separator: " and ")))
        }
        return lines
    }

    // MARK: - Steps

    enum ForwarderKind {
        case parley, reference

        var label: String {
            switch self {
            case .parley: "parley serve"
            case .reference: "reference raw forwarder"
            }
        }
    }

    struct StepResult {
        var offered: Double
        var delivered: Double
        var megabits: Double
        var forwarderCPU: Double
        var forwarderWait: Double
        var perCore: Double
        var loss: Double
        var generatorCPU: Double
    }

    private static func measure(
        _ kind: ForwarderKind, layout: Layout, settings: Settings, pinning: CPUPinning?,
        executable: String, log: @Sendable (String) -> Void
    ) throws -> [StepResult] {
        let forwarder: any MeasuredForwarder
        let members: [LoadMember]
        var signaling: [SignalingSocket] = []
        switch kind {
        case .parley:
            let relay = try RelayProcess(executable: executable, cpu: pinning?.forwarder)
            forwarder = relay
            var joined: [LoadMember] = []
            do {
                for room in 0..<layout.rooms {
                    for index in 0..<layout.membersPerRoom {
                        let socket = try SignalingSocket(port: relay.signalingPort)
                        let grant = try socket.join(room: "bench\(room)", name: "load\(room)x\(index)")
                        signaling.append(socket)
                        let media = try MediaSocket(connectingTo: grant.media.udpPort)
                        try media.bind(grant)
                        joined.append(
                            LoadMember(
                                media: media, ssrcs: grant.media.ssrcs, room: room,
                                sends: index < layout.sendersPerRoom, fanOut: layout.fanOut))
                    }
                }
            } catch {
                relay.stop()
                throw error
            }
            members = joined
        case .reference:
            var sockets: [[MediaSocket]] = []
            for _ in 0..<layout.rooms {
                sockets.append(try (0..<layout.membersPerRoom).map { _ in try MediaSocket(connectingTo: nil) })
            }
            let raw = try RawForwarder(rooms: sockets.map { $0.map(\.port) }, cpu: pinning?.forwarder)
            forwarder = raw
            var made: [LoadMember] = []
            for (room, list) in sockets.enumerated() {
                for (index, media) in list.enumerated() {
                    media.connect(to: raw.port)
                    let block = UInt32(0x1000 + (room * layout.membersPerRoom + index) * 4)
                    made.append(
                        LoadMember(
                            media: media, ssrcs: MemberSSRCs(block: block), room: room,
                            sends: index < layout.sendersPerRoom, fanOut: layout.fanOut))
                }
            }
            members = made
        }
        defer {
            forwarder.stop()
            // Receive-only members are otherwise released (and their sockets closed) after the last use below.
            withExtendedLifetime(members) {}
        }

        let counters = LoadCounters()
        let receiver = LoadReceiver(sockets: members.map(\.media.descriptor), counters: counters)
        let receiving = receiver.start(cpu: pinning?.generator)
        defer {
            receiver.stop()
            receiving.wait()
        }
        let senders = members.filter(\.sends)
        let deliveriesPerRound = senders.reduce(0) { $0 + $1.fanOut }
        var results: [StepResult] = []
        for offered in settings.offeredRates {
            let perSender = Double(offered) / Double(deliveriesPerRound)
            let before = counters.snapshot()
            let generator = LoadGenerator(
                members: senders, packetsPerSecond: perSender, counters: counters,
                duration: settings.warmUp + settings.window + .milliseconds(100))
            let generating = generator.start(cpu: pinning?.generator)
            sleep(settings.warmUp, keepingAlive: signaling)
            let startCounters = counters.snapshot()
            let startCPU = forwarder.cpuSeconds()
            let startWait = forwarder.waitSeconds()
            let startSelf = ownCPUSeconds() - forwarder.inProcessCPUSeconds()
            let startWall = ContinuousClock.now
            sleep(settings.window, keepingAlive: signaling)
            let endCounters = counters.snapshot()
            let endCPU = forwarder.cpuSeconds()
            let endWait = forwarder.waitSeconds()
            let endSelf = ownCPUSeconds() - forwarder.inProcessCPUSeconds()
            let wall = seconds(ContinuousClock.now - startWall)
            generating.wait()
            sleep(.milliseconds(300), keepingAlive: signaling)
            let after = counters.snapshot()

            let delivered = Double(endCounters.received - startCounters.received) / wall
            let cpu = (endCPU - startCPU) / wall
            let expected = after.expected - before.expected
            let result = StepResult(
                offered: Double(endCounters.expected - startCounters.expected) / wall,
                delivered: delivered,
                megabits: Double(endCounters.receivedBytes - startCounters.receivedBytes) * 8 / 1e6 / wall,
                forwarderCPU: cpu, forwarderWait: (endWait - startWait) / wall,
                perCore: cpu > 0 ? delivered / cpu : .nan,
                loss: expected > 0 ? max(0, 1 - Double(after.received - before.received) / Double(expected)) : 0,
                generatorCPU: (endSelf - startSelf) / wall)
            log(
                "  offered \(offered): delivered \(formatted(delivered, decimals: 0)) pkt/s, CPU "
                    + "\(formatted(cpu * 100, decimals: 1)) %, "
                    + "waiting \(formatted(result.forwarderWait * 100, decimals: 0)) %, "
                    + "loss \(formatted(result.loss * 100, decimals: 2)) %")
            results.append(result)
        }
        for socket in signaling { socket.leave() }
        return results
    }

    private static func sleep(_ duration: Duration, keepingAlive sockets: [SignalingSocket]) {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            for socket in sockets { socket.keepAlive() }
            let left = end - ContinuousClock.now
            Thread.sleep(forTimeInterval: max(0, min(0.25, seconds(left))))
        }
    }
}
