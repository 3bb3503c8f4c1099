import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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
        let serve =
            [
                executable, "serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning", "--insecure",
                "--max-member-kbps", "0", "--max-connections-per-address", "100000",
            ] + extraArguments
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
                    outVectors[out] = iovec(
                        iov_base: receive.vectors[index].iov_base,
                        iov_len: Int(receive.headers[index].msg_len))
                    outHeaders[out] = MultiMessageHeader(
                        msg_hdr: msghdr(
                            msg_name: UnsafeMutableRawPointer(destinations + member),
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
