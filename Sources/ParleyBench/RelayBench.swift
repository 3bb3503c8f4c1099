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
    public static func run(executable: String, settings: Settings = Settings(),
                           log: @Sendable (String) -> Void) throws -> BenchTable {
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        // Two cores: the forwarder under test gets the last one, the load generator (sender and receiver threads,
        // and this thread) the first, so neither starves the other. Other processes on the machine still share both.
        let pinning = cores >= 2 ? CPUPinning(forwarder: cores - 1, generator: 0) : nil
        var table = BenchTable(
            title: "Relay forwarding on loopback (delivered RTP packets, mixed 1212/100-byte datagrams)",
            columns: ["forwarder", "layout", "offered pkt/s", "delivered pkt/s", "Mbit/s", "forwarder CPU %",
                      "forwarder waiting %", "pkt/s per core", "loss %", "load gen CPU %"])
        var best: [String: Double] = [:]
        var perCore: [String: [Double]] = [:]
        for layout in settings.layouts {
            for forwarder in [ForwarderKind.parley, .reference] {
                log("relay bench: \(forwarder.label), \(layout.name)")
                let rows = try measure(forwarder, layout: layout, settings: settings, pinning: pinning,
                                       executable: executable, log: log)
                for row in rows {
                    table.add([forwarder.label, layout.name, formatted(row.offered, decimals: 0),
                               formatted(row.delivered, decimals: 0), formatted(row.megabits, decimals: 0),
                               formatted(row.forwarderCPU * 100, decimals: 1),
                               formatted(row.forwarderWait * 100, decimals: 0), formatted(row.perCore, decimals: 0),
                               formatted(row.loss * 100, decimals: 2), formatted(row.generatorCPU * 100, decimals: 0)])
                    let key = "\(forwarder.label)|\(layout.name)"
                    if row.perCore.isFinite { perCore[key, default: []].append(row.perCore) }
                    if row.loss < 0.01, row.delivered > best[key] ?? 0 { best[key] = row.delivered }
                }
            }
        }
        table.notes = [
            "Each step: \(seconds(settings.warmUp)) s warm-up, then a \(seconds(settings.window)) s window; "
                + "delivered = RTP packets the members' sockets received from the forwarder (one per destination).",
            "forwarder CPU % = its user+sys CPU time over the window ÷ wall time (100 % = one core), from the "
                + "scheduler's runtime of every thread (/proc/PID/task/*/schedstat for `parley serve`, the thread CPU "
                + "clock for the reference). pkt/s per core = delivered ÷ CPU fraction.",
            "forwarder waiting % = time it was runnable but another process had its CPU (schedstat run-queue wait) "
                + "÷ wall time: when high, the delivered rate measures the machine's other load, not the forwarder.",
            "loss % = 1 − received ÷ (sent × fan-out) over the whole step including a 300 ms drain.",
            pinning.map { "Pinned: forwarder on CPU \($0.forwarder), load generator (1 sender + 1 receiver thread, "
                + "sendmmsg/recvmmsg) on CPU \($0.generator)." } ?? "One core: nothing pinned; generator and "
                + "forwarder share it, so these figures understate the relay.",
            "On loopback the kernel's receive path of a datagram (IP/UDP input, socket enqueue) runs in the sender's "
                + "context: the forwarder's CPU includes delivering to its receivers but not its own input path.",
            "Reference: a raw recvmmsg(64) → sendmmsg forwarder in Swift with a static port → room table, no "
                + "signaling, no bind checks, no retransmission buffer, same socket buffer size as the relay.",
        ]
        func median(_ values: [Double]) -> Double? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
        }
        for layout in settings.layouts {
            let parleyKey = "\(ForwarderKind.parley.label)|\(layout.name)"
            let referenceKey = "\(ForwarderKind.reference.label)|\(layout.name)"
            guard let parley = median(perCore[parleyKey] ?? []) else { continue }
            var line = "\(layout.name): parley serve \(formatted(parley, decimals: 0)) pkt/s per core (median of the "
                + "steps)"
            if let reference = median(perCore[referenceKey] ?? []) {
                line += ", reference \(formatted(reference, decimals: 0)) (parley ÷ reference = "
                    + "\(formatted(parley / reference, decimals: 2)))"
            }
            line += "; goal ≥ 100000 per core " + (parley >= 100_000 ? "met" : "NOT met")
            line += "; highest delivered under 1 % loss: "
                + (best[parleyKey].map { formatted($0, decimals: 0) + " pkt/s" } ?? "none") + "."
            table.notes.append(line)
        }
        return table
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

    private static func measure(_ kind: ForwarderKind, layout: Layout, settings: Settings, pinning: CPUPinning?,
                                executable: String, log: @Sendable (String) -> Void) throws -> [StepResult] {
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
                        joined.append(LoadMember(media: media, ssrcs: grant.media.ssrcs, room: room,
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
                    made.append(LoadMember(media: media, ssrcs: MemberSSRCs(block: block), room: room,
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
            let generator = LoadGenerator(members: senders, packetsPerSecond: perSender, counters: counters,
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
            log("  offered \(offered): delivered \(formatted(delivered, decimals: 0)) pkt/s, CPU "
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

/// The GNU-only batch socket calls and CPU affinity, which Swift's Glibc module does not import (they need
/// _GNU_SOURCE): looked up in the C library at run time, with `mmsghdr` declared below with the same layout.
enum BatchIO {
    typealias Receive = @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<timespec>?)
        -> Int32
    typealias Send = @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32
    typealias Affinity = @convention(c) (Int32, Int, UnsafeRawPointer?) -> Int32

    /// MSG_WAITFORONE: block for the first datagram only.
    static let waitForOne: Int32 = 0x10000

    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(address, to: type)
    }

    private static let receiveFunction = symbol("recvmmsg", as: Receive.self)
    private static let sendFunction = symbol("sendmmsg", as: Send.self)
    private static let affinityFunction = symbol("sched_setaffinity", as: Affinity.self)
    private static let threadIDFunction = symbol("gettid", as: (@convention(c) () -> Int32).self)

    /// The calling thread's kernel id (for /proc/self/task/ID).
    static func threadID() -> Int32 { threadIDFunction() }

    static func recvmmsg(_ descriptor: Int32, _ headers: UnsafeMutablePointer<MultiMessageHeader>, _ count: UInt32,
                         _ flags: Int32, _ timeout: UnsafeMutablePointer<timespec>?) -> Int32 {
        receiveFunction(descriptor, UnsafeMutableRawPointer(headers), count, flags, timeout)
    }

    static func sendmmsg(_ descriptor: Int32, _ headers: UnsafeMutablePointer<MultiMessageHeader>, _ count: UInt32,
                         _ flags: Int32) -> Int32 {
        sendFunction(descriptor, UnsafeMutableRawPointer(headers), count, flags)
    }

    static func setAffinity(_ thread: Int32, _ size: Int, _ mask: [UInt8]) -> Int32 {
        mask.withUnsafeBytes { affinityFunction(thread, size, $0.baseAddress) }
    }
}

/// `struct mmsghdr` of <sys/socket.h>: a msghdr and the byte count the call filled in (64 bytes on 64-bit Linux).
struct MultiMessageHeader {
    var msg_hdr: msghdr
    var msg_len: UInt32
}

/// Which CPUs the forwarder and the load generator run on.
struct CPUPinning {
    var forwarder: Int
    var generator: Int
}

/// Errors setting up the relay benchmark; each names the step that failed.
public enum RelayBenchError: Error, CustomStringConvertible {
    /// `parley serve` did not start or did not say where it listens.
    case relayDidNotStart(String)
    /// A socket call failed.
    case socket(call: String, errno: Int32)
    /// The relay refused or did not answer the join.
    case joinFailed(String)
    /// The relay did not acknowledge a media bind.
    case bindFailed(String)

    public var description: String {
        switch self {
        case .relayDidNotStart(let detail): "parley serve did not start: \(detail)"
        case .socket(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        case .joinFailed(let detail): "join failed: \(detail)"
        case .bindFailed(let detail): "media bind failed: \(detail)"
        }
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Pins the calling thread to one CPU; false when the kernel refuses.
@discardableResult
func pinCurrentThread(to cpu: Int) -> Bool {
    // cpu_set_t is 1024 bits.
    var set = [UInt8](repeating: 0, count: 128)
    guard cpu < 1024 else { return false }
    set[cpu / 8] |= UInt8(1 << (cpu % 8))
    return BatchIO.setAffinity(0, set.count, set) == 0
}

/// CPU seconds (user + sys) of this process so far, exited threads included.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// (run, wait) seconds of every thread of a process so far, from the scheduler: time on a CPU (user + sys) and time
/// runnable but waiting for one.
func processSchedulerSeconds(pid: Int32) -> (run: Double, wait: Double) {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var total = (run: 0.0, wait: 0.0)
    for task in tasks {
        let times = threadSchedulerSeconds(path: "/proc/\(pid)/task/\(task)/schedstat")
        total.run += times.run
        total.wait += times.wait
    }
    return total
}

/// (run, wait) seconds of one thread from its schedstat file.
func threadSchedulerSeconds(path: String) -> (run: Double, wait: Double) {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
    let fields = text.split(separator: " ").prefix(2).compactMap { UInt64($0) }
    guard fields.count == 2 else { return (0, 0) }
    return (Double(fields[0]) / 1e9, Double(fields[1]) / 1e9)
}

// MARK: - Forwarders under test

/// A forwarder whose CPU time can be read.
protocol MeasuredForwarder {
    /// CPU seconds used so far.
    func cpuSeconds() -> Double
    /// Seconds spent runnable but waiting for a CPU so far (other processes had it).
    func waitSeconds() -> Double
    /// The part of `cpuSeconds()` spent inside this process (to subtract from the generator's CPU).
    func inProcessCPUSeconds() -> Double
    /// Stops it.
    func stop()
}

/// `parley serve` in its own process, on a free port, pinned to one CPU with taskset when asked.
final class RelayProcess: MeasuredForwarder {
    let process = Process()
    let signalingPort: Int
    let mediaPort: Int

    init(executable: String, cpu: Int?, extraArguments: [String] = []) throws {
        // Its light clients speak plain WebSocket: this measures forwarding, not TLS.
        // Each light sender sends far more than one member's media allowance: the cap is off for this measurement.
        let serve = [executable, "serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning", "--insecure",
                     "--max-member-kbps", "0", "--max-connections-per-address", "100000"] + extraArguments
        if let cpu, FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset") {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            process.arguments = ["-c", "\(cpu)"] + serve
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = Array(serve.dropFirst())
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw RelayBenchError.relayDidNotStart("\(executable): \(error)")
        }
        // "parley relay listening on 127.0.0.1:PORT (signaling ws, INSECURE: no TLS, media udp PORT)"
        var text = ""
        let deadline = ContinuousClock.now + .seconds(10)
        while !text.contains(")\n") && ContinuousClock.now < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        func number(after marker: String) -> Int? {
            guard let range = text.range(of: marker) else { return nil }
            return Int(text[range.upperBound...].prefix { $0.isNumber })
        }
        guard text.contains("listening"), let signaling = number(after: "127.0.0.1:"),
              let media = number(after: "media udp ")
        else {
            process.terminate()
            throw RelayBenchError.relayDidNotStart("expected a \"listening\" line, got \"\(text)\"")
        }
        signalingPort = signaling
        mediaPort = media
    }

    func cpuSeconds() -> Double { processSchedulerSeconds(pid: process.processIdentifier).run }

    func waitSeconds() -> Double { processSchedulerSeconds(pid: process.processIdentifier).wait }

    func inProcessCPUSeconds() -> Double { 0 }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}

/// The reference: a blocking recvmmsg → sendmmsg loop on its own thread. Routes by the sender's port to the other
/// members of its room; the table is fixed before the thread starts.
final class RawForwarder: MeasuredForwarder, @unchecked Sendable {
    // @unchecked: the routing table and buffers are written before the thread starts and afterwards touched only by
    // that thread; `running` and `thread` are atomics.
    let descriptor: Int32
    let port: Int
    private let roomOfPort: [UInt16: Int]
    private let destinations: UnsafeMutablePointer<sockaddr_in>
    private let roomMembers: [[Int]]
    private let running = Atomic<Bool>(true)
    private let threadID = Atomic<UInt>(0)
    private let kernelThreadID = Atomic<Int32>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(rooms: [[Int]], cpu: Int?) throws {
        // The relay's receive queue size (Relay.swift asks for 2 MB), so both forwarders ride out the same stalls.
        let socket = try UDPSocketFactory.make(receiveBuffer: 2 << 20)
        descriptor = socket.descriptor
        port = socket.port
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let all = rooms.flatMap { $0 }
        destinations = .allocate(capacity: max(1, all.count))
        var roomOfPort: [UInt16: Int] = [:]
        var roomMembers: [[Int]] = []
        var index = 0
        for (room, ports) in rooms.enumerated() {
            var list: [Int] = []
            for port in ports {
                destinations[index] = loopbackAddress(port: port)
                roomOfPort[UInt16(port)] = room
                list.append(index)
                index += 1
            }
            roomMembers.append(list)
        }
        self.roomOfPort = roomOfPort
        self.roomMembers = roomMembers
        let thread = Thread { [self] in
            if let cpu { pinCurrentThread(to: cpu) }
            kernelThreadID.store(BatchIO.threadID(), ordering: .releasing)
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            loop()
            finished.signal()
        }
        thread.start()
        while threadID.load(ordering: .acquiring) == 0 { usleep(1000) }
    }

    deinit {
        destinations.deallocate()
        close(descriptor)
    }

    func cpuSeconds() -> Double {
        var clock = clockid_t()
        guard pthread_getcpuclockid(pthread_t(threadID.load(ordering: .acquiring)), &clock) == 0 else { return 0 }
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    func inProcessCPUSeconds() -> Double { cpuSeconds() }

    func waitSeconds() -> Double {
        threadSchedulerSeconds(path: "/proc/self/task/\(kernelThreadID.load(ordering: .acquiring))/schedstat").wait
    }

    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }

    private func loop() {
        let batch = 64
        let maxFanOut = roomMembers.map(\.count).max() ?? 1
        let receive = DatagramBatch(count: batch, size: 2048)
        let names = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: batch)
        let outHeaders = UnsafeMutablePointer<MultiMessageHeader>.allocate(capacity: batch * maxFanOut)
        let outVectors = UnsafeMutablePointer<iovec>.allocate(capacity: batch * maxFanOut)
        defer {
            names.deallocate()
            outHeaders.deallocate()
            outVectors.deallocate()
        }
        for index in 0..<batch {
            receive.headers[index].msg_hdr.msg_name = UnsafeMutableRawPointer(names + index)
        }
        while running.load(ordering: .relaxed) {
            for index in 0..<batch {
                receive.headers[index].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                receive.vectors[index].iov_len = receive.size
            }
            let count = Int(BatchIO.recvmmsg(descriptor, receive.headers, UInt32(batch), BatchIO.waitForOne, nil))
            guard count > 0 else { continue }
            var out = 0
            for index in 0..<count {
                let source = UInt16(bigEndian: names[index].sin_port)
                guard let room = roomOfPort[source] else { continue }
                for member in roomMembers[room] where UInt16(bigEndian: destinations[member].sin_port) != source {
                    outVectors[out] = iovec(iov_base: receive.vectors[index].iov_base,
                                            iov_len: Int(receive.headers[index].msg_len))
                    outHeaders[out] = MultiMessageHeader(
                        msg_hdr: msghdr(msg_name: UnsafeMutableRawPointer(destinations + member),
                                        msg_namelen: socklen_t(MemoryLayout<sockaddr_in>.size),
                                        msg_iov: outVectors + out, msg_iovlen: 1, msg_control: nil,
                                        msg_controllen: 0, msg_flags: 0),
                        msg_len: 0)
                    out += 1
                }
            }
            var sent = 0
            while sent < out {
                let done = BatchIO.sendmmsg(descriptor, outHeaders + sent, UInt32(out - sent), 0)
                if done <= 0 { break }
                sent += Int(done)
            }
        }
    }
}

// MARK: - Members

/// One member's media socket with what it sends.
struct LoadMember {
    var media: MediaSocket
    var ssrcs: MemberSSRCs
    var room: Int
    var sends: Bool
    var fanOut: Int
}

/// The 127.0.0.1 address of a port.
func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

enum UDPSocketFactory {
    /// A UDP socket bound to a free port on 127.0.0.1.
    static func make(receiveBuffer: Int?) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw RelayBenchError.socket(call: "socket", errno: errno) }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw RelayBenchError.socket(call: "bind", errno: code)
        }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            _ = $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }
}

/// A member's UDP socket on 127.0.0.1, connected to the forwarder (so plain send/recv talk to it only), with a
/// 4 MB receive buffer so the generator's own socket is not where packets are lost.
final class MediaSocket: @unchecked Sendable {
    // @unchecked: a file descriptor; the generator thread sends on it, the receiver thread receives.
    let descriptor: Int32
    let port: Int

    init(connectingTo port: Int?) throws {
        (descriptor, self.port) = try UDPSocketFactory.make(receiveBuffer: 4 << 20)
        if let port { connect(to: port) }
    }

    deinit { close(descriptor) }

    func connect(to port: Int) {
        var address = loopbackAddress(port: port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Proves the member's identity to the relay (bind request, every 250 ms until acknowledged, at most 5 s).
    func bind(_ grant: JoinedRoom) throws {
        guard let token = BindToken(hex: grant.media.credential) else {
            throw RelayBenchError.bindFailed("credential \"\(grant.media.credential)\" is not 32 hex digits")
        }
        let request = BindRequest(ssrc: grant.media.ssrcs.audio, memberID: grant.you.id, token: token).serialized()
        var buffer = [UInt8](repeating: 0, count: 2048)
        for _ in 0..<20 {
            _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let deadline = ContinuousClock.now + .milliseconds(250)
            while ContinuousClock.now < deadline, poll(&poller, 1, 50) >= 0 {
                guard poller.revents & Int16(POLLIN) != 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0, Bind.isBindPacket(Array(buffer[0..<count])),
                      let ack = try? BindAcknowledgement(parsing: Array(buffer[0..<count]))
                else { continue }
                guard ack.status == .bound else { throw RelayBenchError.bindFailed("relay answered \(ack.status)") }
                return
            }
        }
        throw RelayBenchError.bindFailed("no acknowledgement from UDP port \(grant.media.udpPort) within 5 s")
    }
}

/// Totals shared by the generator and receiver threads.
final class LoadCounters: Sendable {
    let sent = Atomic<Int>(0)
    /// Deliveries the sent packets should cause (sent × fan-out).
    let expected = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let receivedBytes = Atomic<Int>(0)

    struct Snapshot {
        var sent: Int
        var expected: Int
        var received: Int
        var receivedBytes: Int
    }

    func snapshot() -> Snapshot {
        Snapshot(sent: sent.load(ordering: .relaxed), expected: expected.load(ordering: .relaxed),
                 received: received.load(ordering: .relaxed), receivedBytes: receivedBytes.load(ordering: .relaxed))
    }
}

/// `count` datagram buffers of `size` bytes with their iovecs and mmsghdrs, for recvmmsg/sendmmsg.
final class DatagramBatch {
    let count: Int
    let size: Int
    let storage: UnsafeMutableRawPointer
    let vectors: UnsafeMutablePointer<iovec>
    let headers: UnsafeMutablePointer<MultiMessageHeader>

    init(count: Int, size: Int) {
        precondition(MemoryLayout<MultiMessageHeader>.stride == MemoryLayout<msghdr>.stride + 8,
                     "MultiMessageHeader must have the C layout of struct mmsghdr")
        self.count = count
        self.size = size
        storage = .allocate(byteCount: count * size, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: count * size)
        vectors = .allocate(capacity: count)
        headers = .allocate(capacity: count)
        for index in 0..<count {
            vectors[index] = iovec(iov_base: storage + index * size, iov_len: size)
            headers[index] = MultiMessageHeader(
                msg_hdr: msghdr(msg_name: nil, msg_namelen: 0, msg_iov: vectors + index, msg_iovlen: 1,
                                msg_control: nil, msg_controllen: 0, msg_flags: 0),
                msg_len: 0)
        }
    }

    deinit {
        storage.deallocate()
        vectors.deallocate()
        headers.deallocate()
    }
}

/// Sends real RTP from every sending member at a paced rate: VP8 packets of 1212 bytes (12-byte header, 4-byte
/// payload descriptor, VP8 data; frames of three packets, S = 1 on the first, marker on the last) alternating with
/// 100-byte Opus packets, each stream with its own rising sequence number and timestamp. sendmmsg per member per tick.
final class LoadGenerator: @unchecked Sendable {
    // @unchecked: owned by the generator thread once started; the caller only waits on `finished`.
    private let members: [LoadMember]
    private let rate: Double
    private let counters: LoadCounters
    private let duration: Duration
    private let finished = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(true)

    static let videoSize = 1212
    static let audioSize = 100

    init(members: [LoadMember], packetsPerSecond: Double, counters: LoadCounters, duration: Duration) {
        self.members = members
        rate = packetsPerSecond
        self.counters = counters
        self.duration = duration
    }

    /// Starts the thread; `wait()` on the result returns when the duration is over.
    func start(cpu: Int?) -> DispatchSemaphore {
        let thread = Thread { [self] in
            if let cpu { pinCurrentThread(to: cpu) }
            run()
            finished.signal()
        }
        thread.start()
        return finished
    }

    /// Ends the sending before the duration is over; `wait()` on `start`'s result returns soon after.
    func stop() { running.store(false, ordering: .relaxed) }

    private struct Stream {
        var batch: DatagramBatch
        var audioSequence: UInt16 = 0
        var videoSequence: UInt16 = 0
        var audioTimestamp: UInt32 = 0
        var videoTimestamp: UInt32 = 0
        var pictureID: UInt16 = 0
        var index = 0
        var sent = 0
    }

    private func run() {
        let batchSize = 64
        let video = RTPPacket(
            header: RTPHeader(marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: 0, timestamp: 0,
                              ssrc: 0),
            payload: [0x90, 0x80, 0x80, 0x00, 0x31] + [UInt8](repeating: 0x5A, count: Self.videoSize - 12 - 5))
            .serialized()
        let audio = RTPPacket(
            header: RTPHeader(marker: false, payloadType: MediaPayloadType.opus, sequenceNumber: 0, timestamp: 0,
                              ssrc: 0),
            payload: [0x78] + [UInt8](repeating: 0x33, count: Self.audioSize - 12 - 1)).serialized()
        var streams = members.map { _ in Stream(batch: DatagramBatch(count: batchSize, size: Self.videoSize)) }
        let clock = ContinuousClock()
        let start = clock.now
        while true {
            let elapsed = clock.now - start
            if elapsed >= duration || !running.load(ordering: .relaxed) { break }
            let due = Int(rate * seconds(elapsed))
            for (slot, member) in members.enumerated() {
                // Never burst more than 20 ms of packets after a stall: those are simply not sent (counted by the
                // caller from the totals).
                if due - streams[slot].sent > max(batchSize, Int(rate * 0.02)) {
                    streams[slot].sent = due - Int(rate * 0.02)
                }
                while streams[slot].sent < due {
                    let count = min(batchSize, due - streams[slot].sent)
                    fill(&streams[slot], count: count, member: member, video: video, audio: audio)
                    let done = Int(BatchIO.sendmmsg(member.media.descriptor, streams[slot].batch.headers, UInt32(count),
                                            Int32(MSG_DONTWAIT)))
                    if done <= 0 { break }
                    streams[slot].sent += done
                    counters.sent.add(done, ordering: .relaxed)
                    counters.expected.add(done * member.fanOut, ordering: .relaxed)
                    if done < count { break }
                }
            }
            usleep(250)
        }
    }

    private func fill(_ stream: inout Stream, count: Int, member: LoadMember, video: [UInt8], audio: [UInt8]) {
        for slot in 0..<count {
            let base = stream.batch.storage + slot * stream.batch.size
            let packetIndex = stream.index + slot
            if packetIndex % 2 == 0 {
                video.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                let inFrame = (packetIndex / 2) % 3
                if inFrame == 0 {
                    stream.pictureID = (stream.pictureID &+ 1) & 0x7FFF
                    stream.videoTimestamp &+= 3000
                }
                store(UInt16(inFrame == 0 ? 0x90 : 0x80), at: base + 12, bytes: 1)
                store(UInt16(0x8000 | stream.pictureID), at: base + 14, bytes: 2)
                if inFrame == 2 {
                    base.storeBytes(of: UInt8(0x80 | MediaPayloadType.vp8), toByteOffset: 1, as: UInt8.self)
                }
                store(stream.videoSequence, at: base + 2, bytes: 2)
                store32(stream.videoTimestamp, at: base + 4)
                store32(member.ssrcs.video, at: base + 8)
                stream.videoSequence &+= 1
                stream.batch.vectors[slot].iov_len = video.count
            } else {
                audio.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                store(stream.audioSequence, at: base + 2, bytes: 2)
                store32(stream.audioTimestamp, at: base + 4)
                store32(member.ssrcs.audio, at: base + 8)
                stream.audioSequence &+= 1
                stream.audioTimestamp &+= 960
                stream.batch.vectors[slot].iov_len = audio.count
            }
        }
        // The send time in the last 8 bytes (opaque VP8/Opus data to the relay), for receivers measuring delay.
        let now = monotonicNanoseconds()
        for slot in 0..<count {
            let base = stream.batch.storage + slot * stream.batch.size
            base.storeBytes(of: now, toByteOffset: stream.batch.vectors[slot].iov_len - 8, as: UInt64.self)
        }
        stream.index += count
    }

    private func store(_ value: UInt16, at pointer: UnsafeMutableRawPointer, bytes: Int) {
        if bytes == 1 {
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: value), as: UInt8.self)
        } else {
            pointer.storeBytes(of: value.bigEndian, as: UInt16.self)
        }
    }

    private func store32(_ value: UInt32, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt32.self)
    }
}

/// Receives on every member socket (poll, then recvmmsg until empty) and counts RTP packets and bytes.
final class LoadReceiver: @unchecked Sendable {
    // @unchecked: buffers are used only by the receiver thread; `running` is atomic.
    private let sockets: [Int32]
    private let counters: LoadCounters
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    private let delays: DelayHistogram?

    /// A receiver; with `delays`, each packet's forwarding delay (its send time, in its last 8 bytes) is recorded.
    init(sockets: [Int32], counters: LoadCounters, delays: DelayHistogram? = nil) {
        self.sockets = sockets
        self.counters = counters
        self.delays = delays
    }

    /// Starts the thread; `wait()` on the result after `stop()`.
    func start(cpu: Int?) -> DispatchSemaphore {
        let thread = Thread { [self] in
            if let cpu { pinCurrentThread(to: cpu) }
            run()
            finished.signal()
        }
        thread.start()
        return finished
    }

    func stop() { running.store(false, ordering: .relaxed) }

    private func run() {
        let batch = DatagramBatch(count: 64, size: 2048)
        var pollers = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while running.load(ordering: .relaxed) {
            guard poll(&pollers, nfds_t(pollers.count), 50) > 0 else { continue }
            for index in pollers.indices where pollers[index].revents & Int16(POLLIN) != 0 {
                while true {
                    let count = Int(BatchIO.recvmmsg(pollers[index].fd, batch.headers, UInt32(batch.count),
                                             Int32(MSG_DONTWAIT), nil))
                    guard count > 0 else { break }
                    var packets = 0
                    var bytes = 0
                    let now = delays == nil ? 0 : monotonicNanoseconds()
                    var delayBuckets: [Int] = []
                    for slot in 0..<count {
                        let length = Int(batch.headers[slot].msg_len)
                        let second = batch.storage.load(fromByteOffset: slot * batch.size + 1, as: UInt8.self)
                        // RTP only: RTCP (second byte 192…223) and bind answers are not forwarded media.
                        if length >= 12, !(192...223).contains(second) {
                            packets += 1
                            bytes += length
                            if delays != nil, length >= 20 {
                                let sent = batch.storage.loadUnaligned(
                                    fromByteOffset: slot * batch.size + length - 8, as: UInt64.self)
                                if sent <= now { delayBuckets.append(DelayHistogram.bucket(nanoseconds: now - sent)) }
                            }
                        }
                    }
                    if let delays, !delayBuckets.isEmpty { delays.add(delayBuckets) }
                    counters.received.add(packets, ordering: .relaxed)
                    counters.receivedBytes.add(bytes, ordering: .relaxed)
                    if count < batch.count { break }
                }
            }
        }
    }
}

// MARK: - Signaling

/// A blocking WebSocket client on 127.0.0.1, just enough to join a room and stay alive: the handshake, masked text
/// frames out, unmasked text frames in.
final class SignalingSocket {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    private var lastKeepAlive = ContinuousClock.now

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RelayBenchError.socket(call: "socket", errno: errno) }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw RelayBenchError.socket(call: "connect to signaling port \(port)", errno: code)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // "parley-bench-key" in base64: any 16 bytes do.
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: cGFybGV5LWJlbmNoLWtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8))
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = findSubsequence(terminator, in: pending) {
                let head = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                guard head.hasPrefix("HTTP/1.1 101") else {
                    throw RelayBenchError.joinFailed("WebSocket upgrade refused: \(head.prefix(80))")
                }
                return
            }
            try readMore()
        }
    }

    deinit { Glibc.close(descriptor) }

    /// Joins `room` (as a broadcaster unless `role` says otherwise) and returns the relay's answer.
    func join(room: String, name: String, role: MemberRole = .broadcaster) throws -> JoinedRoom {
        try send(.join(JoinRequest(room: room, name: name, role: role)))
        while true {
            switch try receive() {
            case .joined(let joined): return joined
            case .error(let error): throw RelayBenchError.joinFailed("relay answered \(error)")
            default: continue
            }
        }
    }

    /// A ping every 2 s keeps the member inside the relay's 10 s liveness timeout.
    func keepAlive() {
        guard ContinuousClock.now - lastKeepAlive >= .seconds(2) else { return }
        lastKeepAlive = ContinuousClock.now
        try? send(.ping(KeepAlive(token: 1)))
    }

    /// Reads and drops whatever the relay sent since (roster changes, pongs) without waiting, so a member that never
    /// reads does not fill its socket's buffer over a long run.
    func discardIncoming() {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        pending.removeAll()
    }

    /// Says goodbye and closes the TCP connection for writing.
    func leave() {
        try? send(.leave)
        shutdown(descriptor, Int32(SHUT_WR))
    }

    private func send(_ message: ClientMessage) throws {
        let payload = Array(message.encoded().utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
        try write(frame)
    }

    private func receive() throws -> ServerMessage {
        while true {
            try fill(2)
            let opcode = pending[0] & 0x0F
            var length = Int(pending[1] & 0x7F)
            var offset = 2
            if length == 126 {
                try fill(4)
                length = Int(pending[2]) << 8 | Int(pending[3])
                offset = 4
            } else if length == 127 {
                try fill(10)
                length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
                offset = 10
            }
            try fill(offset + length)
            let payload = Array(pending[offset..<(offset + length)])
            pending.removeFirst(offset + length)
            switch opcode {
            case 1:
                do {
                    return try ServerMessage.decode(String(decoding: payload, as: UTF8.self))
                } catch {
                    throw RelayBenchError.joinFailed("unreadable relay message: \(error)")
                }
            case 8:
                throw RelayBenchError.joinFailed("the relay closed the WebSocket")
            default:
                continue
            }
        }
    }

    private func fill(_ count: Int) throws {
        while pending.count < count { try readMore() }
    }

    private func readMore() throws {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw RelayBenchError.joinFailed(count == 0 ? "the relay closed the connection" : "no answer within 5 s")
        }
        pending += buffer[0..<count]
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard written > 0 else { throw RelayBenchError.socket(call: "send on signaling", errno: errno) }
            offset += written
        }
    }
}

private func findSubsequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for start in 0...(haystack.count - needle.count)
    where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return start
    }
    return nil
}
