import NIOCore
import NIOWebSocket
import ParleyWire

/// The relay's TCP connections against their limit: how many are open, how many were refused for it, and the refusal's
/// log line, held to one a minute.
struct ConnectionAdmission {
    /// What `admit` decided.
    enum Decision: Equatable {
        case admitted
        /// Refused; `heldBack` is set when a log line is due now (the refusals it held back since the last one).
        case refused(heldBack: Int?)
    }

    private(set) var open = 0
    private(set) var refused = 0
    private var refusedLog = LogThrottle<String>(capacity: 1)

    /// One more connection, unless `limit` are open.
    mutating func admit(limit: Int, now: Duration) -> Decision {
        guard open < limit else {
            refused += 1
            return .refused(heldBack: refusedLog.admit("full", at: now))
        }
        open += 1
        return .admitted
    }

    /// An admitted connection closed.
    mutating func closed() { open = max(0, open - 1) }
}

/// Video packets the relay keeps for resending when a receiver reports them lost, and what it resent from them or
/// asked their senders for.
struct Retransmission {
    var buffer: RetransmissionBuffer<ByteBuffer>
    /// Packets resent from the buffer.
    private(set) var resent = 0
    /// NACKs passed on to a stream's sender for packets the buffer did not hold.
    private(set) var nacksForwarded = 0

    init(retention: Duration) {
        buffer = RetransmissionBuffer(retention: retention)
    }

    /// Of `sequenceNumbers` of `ssrc`: the packets held (counted as resent), and the numbers not held.
    mutating func answer(ssrc: UInt32, _ sequenceNumbers: [UInt16], at now: Duration) -> (
        held: [ByteBuffer], missing: [UInt16]
    ) {
        var held: [ByteBuffer] = []
        var missing: [UInt16] = []
        for sequenceNumber in sequenceNumbers {
            if let packet = buffer.packet(ssrc: ssrc, sequenceNumber: sequenceNumber, at: now) {
                held.append(packet)
            } else {
                missing.append(sequenceNumber)
            }
        }
        resent += held.count
        return (held, missing)
    }

    /// A NACK for what the buffer did not hold went to the stream's sender.
    mutating func nackForwarded() { nacksForwarded += 1 }
}

/// The media socket's way out: the lists a fan-out fills (kept to spare an allocation per packet), the packets
/// written, and refused binds logged at most once a window per source. A member whose media goes over its TCP
/// connection (UDP did not get through) has a stand-in address (`streams`), written to as WebSocket binary frames; a
/// browser member has one too (`browsers`), written to through its slots and SRTP.
struct MediaOutput {
    let udp: any Channel
    var destinations: [SocketAddress] = []
    var layerDestinations: [(member: UInt32, address: SocketAddress)] = []
    /// Packets written to members and other nodes.
    var forwarded = 0
    var refusedBinds: LogThrottle<String>
    var streams = MediaStreams()
    /// The browser members: their stand-in addresses lead to their WebRTC transports.
    let browsers: BrowserMembers

    init(udp: any Channel, refusedBindLogWindow: Duration, browsers: BrowserMembers) {
        self.browsers = browsers
        self.udp = udp
        refusedBinds = LogThrottle(window: refusedBindLogWindow)
    }

    /// Queues `data` for `address` (sent at the next flush); for a stand-in address, on its TCP connection unless
    /// that is backed up (the packet is then dropped and counted: a TCP queue must not grow into seconds of delay).
    mutating func write(_ data: ByteBuffer, to address: SocketAddress) {
        if case .unixDomainSocket = address {
            if browsers.isStandIn(address) {
                guard let (datagram, target) = browsers.egress(data, to: address, at: browsers.now) else { return }
                udp.write(AddressedEnvelope(remoteAddress: target, data: datagram), promise: nil)
            } else {
                streams.write(data, to: address)
            }
        } else {
            udp.write(AddressedEnvelope(remoteAddress: address, data: data), promise: nil)
        }
    }

    /// RTP packets and their bytes written to each member bound here (wrapping, as `ForwardedCount` carries them),
    /// so it can tell loss on its downlink from loss upstream. Bounded by the members; a member's goes when it does.
    private(set) var sentTo: [UInt32: (packets: UInt32, bytes: UInt32)] = [:]

    /// Video for receivers whose downlink is limited, waiting to leave at their pace.
    var pacing = ReceiverPacing<ByteBuffer>()

    /// Queues an RTP packet for `member` at `address`, counted for its `ForwardedCount`; video for a member whose
    /// downlink is limited waits for its pace (`pacing`, counted when it leaves), unless it is `urgent`: sound, and
    /// resends (a repair held back is a repair too late: after a move, the resends of the seconds lost filled the
    /// pace's 400 ms and were dropped, freezing the picture they were to mend).
    mutating func writeRTP(_ data: ByteBuffer, to member: UInt32, at address: SocketAddress, urgent: Bool = false) {
        if !urgent, !pacing.isEmpty, pacing.paces(member) {
            pacing.enqueue(data, size: data.readableBytes, for: member)
            return
        }
        write(data, to: address)
        Self.add(data.readableBytes, to: &sentTo[member, default: (0, 0)])  // one lookup a write: the hot path
    }

    /// Writes `packets` for `member` now at its address (the one it has now: it may have moved while they waited),
    /// counted.
    mutating func writePaced(_ packets: [ByteBuffer], to member: UInt32, at address: SocketAddress) {
        for packet in packets {
            write(packet, to: address)
            Self.add(packet.readableBytes, to: &sentTo[member, default: (0, 0)])
        }
    }

    private static func add(_ bytes: Int, to count: inout (packets: UInt32, bytes: UInt32)) {
        count.packets &+= 1
        count.bytes &+= UInt32(truncatingIfNeeded: bytes)
    }

    /// A member gone: its count and its paced video forgotten.
    mutating func forget(_ member: UInt32) {
        sentTo[member] = nil
        pacing.forget(member)
    }

    /// Queues an RTP packet for every member in `layerDestinations`, counted as forwarded and for each member.
    mutating func sendRTPToDestinations(_ data: ByteBuffer) {
        for (member, address) in layerDestinations { writeRTP(data, to: member, at: address, urgent: true) }
        forwarded += layerDestinations.count
    }

    /// Queues `data` for every address in `destinations`, counted as forwarded.
    mutating func sendToDestinations(_ data: ByteBuffer) {
        for address in destinations { write(data, to: address) }
        forwarded += destinations.count
    }

    /// Sends what was queued on the UDP socket and on the TCP connections written to since the last flush.
    mutating func flush() {
        udp.flush()
        streams.flush()
    }
}

/// Media over members' signaling connections (docs/network.md, "When UDP is blocked"): each connection that carries
/// a media frame gets a stand-in address, a Unix socket path no UDP datagram can come from, so the router proves,
/// binds and forwards to it like any other address.
struct MediaStreams {
    /// The largest media datagram a binary frame may carry (an RTP packet is at most about 1,300 bytes).
    static let maxDatagramBytes = 2_048
    private var addresses: [ConnectionID: SocketAddress] = [:]
    private var channels: [SocketAddress: any Channel] = [:]
    private var unflushed: [any Channel] = []
    /// Media datagrams taken from members' TCP connections, written to them, and not written (backed up).
    private(set) var packetsIn = 0
    private(set) var packetsOut = 0
    private(set) var packetsDropped = 0

    /// Connections that carried media and are open.
    var count: Int { addresses.count }

    /// A media datagram arrived on connection `id` (counted): the connection's stand-in address, made the first time
    /// it carries media.
    mutating func received(on id: ConnectionID, channel: any Channel) -> SocketAddress {
        packetsIn += 1
        if let address = addresses[id] { return address }
        // A path of 30-odd bytes is far under the 107 a Unix socket address holds: this cannot throw.
        let address = try! SocketAddress(unixDomainSocketPath: "/parley/media-over-tcp/\(id)")
        addresses[id] = address
        channels[address] = channel
        return address
    }

    /// Connection `id` closed: its address leads nowhere from now on.
    mutating func remove(_ id: ConnectionID) {
        guard let address = addresses.removeValue(forKey: id) else { return }
        channels[address] = nil
    }

    /// Queues `data` on the connection of `address`; dropped (counted) while the connection is past NIO's
    /// high-water mark (64 KiB, about half a second of a 1 Mbit/s call): a TCP queue must not grow into delay.
    mutating func write(_ data: ByteBuffer, to address: SocketAddress) {
        guard let channel = channels[address], channel.isActive else { return }
        guard channel.isWritable else {
            packetsDropped += 1
            return
        }
        channel.write(WebSocketFrame(fin: true, opcode: .binary, data: data), promise: nil)
        packetsOut += 1
        if !unflushed.contains(where: { $0 === channel }) { unflushed.append(channel) }
    }

    mutating func flush() {
        guard !unflushed.isEmpty else { return }
        for channel in unflushed { channel.flush() }
        unflushed.removeAll(keepingCapacity: true)
    }
}

/// The signaling connections' channels, by the id each got when it opened.
struct SignalingChannels {
    private(set) var byID: [ConnectionID: any Channel] = [:]
    private var next: UInt64 = 1

    /// Keeps `channel` under a new id.
    mutating func add(_ channel: any Channel) -> ConnectionID {
        let id = ConnectionID(next)
        next += 1
        byID[id] = channel
        return id
    }

    /// The channel of `id`, forgotten.
    mutating func remove(_ id: ConnectionID) -> (any Channel)? {
        byID.removeValue(forKey: id)
    }
}

/// Transport-wide feedback for each member's uplink (the member → relay leg): the arrival of every packet a member
/// sends, by its transport-wide sequence number, reported back to it every `FeedbackRecorder.interval` so its
/// estimate can follow its link. Bounded by the members bound here; a member's recorder goes when it leaves.
struct UplinkFeedback {
    private var recorders: [UInt32: FeedbackRecorder] = [:]
    /// Feedback packets sent.
    private(set) var sent = 0

    /// Packet `sequence` of `member` arrived at `now`.
    mutating func received(_ sequence: UInt16, from member: UInt32, at now: Duration) {
        recorders[member, default: FeedbackRecorder()].received(sequence, at: now.milliseconds)
    }

    /// The feedback due to each member with arrivals since its last (`mediaSSRC` names the member's stream block).
    mutating func due(mediaSSRC: (UInt32) -> UInt32?) -> [(member: UInt32, feedback: TransportFeedback)] {
        var due: [(member: UInt32, feedback: TransportFeedback)] = []
        for member in recorders.keys.sorted() {
            guard let ssrc = mediaSSRC(member),
                let feedback = recorders[member]?.feedback(senderSSRC: 0, mediaSSRC: ssrc)
            else { continue }
            due.append((member, feedback))
        }
        sent += due.count
        return due
    }

    /// A member gone: its arrivals forgotten.
    mutating func forget(_ member: UInt32) {
        recorders[member] = nil
    }
}
