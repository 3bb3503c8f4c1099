import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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
        Snapshot(
            sent: sent.load(ordering: .relaxed), expected: expected.load(ordering: .relaxed),
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
        precondition(
            MemoryLayout<MultiMessageHeader>.stride == MemoryLayout<msghdr>.stride + 8,
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
                msg_hdr: msghdr(
                    msg_name: nil, msg_namelen: 0, msg_iov: vectors + index, msg_iovlen: 1,
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
            header: RTPHeader(
                marker: false, payloadType: MediaPayloadType.vp8, sequenceNumber: 0, timestamp: 0,
                ssrc: 0),
            payload: [0x90, 0x80, 0x80, 0x00, 0x31] + [UInt8](repeating: 0x5A, count: Self.videoSize - 12 - 5)
        )
        .serialized()
        let audio = RTPPacket(
            header: RTPHeader(
                marker: false, payloadType: MediaPayloadType.opus, sequenceNumber: 0, timestamp: 0,
                ssrc: 0),
            payload: [0x78] + [UInt8](repeating: 0x33, count: Self.audioSize - 12 - 1)
        ).serialized()
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
                    let done = Int(
                        BatchIO.sendmmsg(
                            member.media.descriptor, streams[slot].batch.headers, UInt32(count),
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
                    let count = Int(
                        BatchIO.recvmmsg(
                            pollers[index].fd, batch.headers, UInt32(batch.count),
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
