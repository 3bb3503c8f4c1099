import NIOCore
import ParleyWebRTC
import ParleyWire

/// The relay's browser members (docs/browser.md): each one's WebRTC transport on the relay's UDP port (ICE-lite,
/// DTLS-SRTP), the ingress that makes its packets a member's, and its receive slots, the transceivers its page
/// offered to receive on, each carrying one peer at a time.
///
/// A browser member has a stand-in address, a Unix socket path no datagram comes from (as a member whose media goes
/// over TCP has): the media router binds the member to it once DTLS is up, the packets it decrypts re-enter the
/// forwarding path from it, and what the router writes to it comes here to be put on a slot, protected and sent.
///
/// Not Sendable: it owns OpenSSL and libsrtp2 state. The relay's event loop makes every call.
final class BrowserMembers {
    /// One receive slot pair of a page: an audio and a video transceiver showing one peer.
    struct SlotPair {
        var audioMid: String?
        var videoMid: String?
        var audio: BrowserSlot?
        var video: BrowserSlot?
        /// The peer in the pair, nil while it is free.
        var member: UInt32?
        /// That peer's SSRC block.
        var block: UInt32?
    }

    /// One browser member.
    struct Browser {
        let member: UInt32
        let ufrag: String
        let standIn: SocketAddress
        var ingress: BrowserIngress
        var pairs: [SlotPair]
        /// Room members that have no pair (the page offered fewer than the room has peers).
        var unseen: [UInt32] = []
        /// The relay's SDP answer, sent in `joined`.
        let answer: String
        var connected = false
        /// The UDP address media goes to, and the same as NIO's, made again only when it changes.
        var mediaAddress: TransportAddress?
        var mediaSocket: SocketAddress?
        /// The browser's microphone SSRC from its offer, named in the feedback it is sent.
        let audioSSRC: UInt32?
        /// Whether its offer has no transport-wide sequence numbers: it is sent a REMB instead of their feedback.
        let needsEstimate: Bool
        var lastEstimateAt: Duration?
    }

    /// What a datagram or a tick led to, for the relay core to carry out.
    enum Outcome {
        /// Send these bytes on the UDP socket.
        case send([UInt8], to: SocketAddress)
        /// The member's DTLS handshake finished: bind it to its stand-in address.
        case connected(member: UInt32, standIn: SocketAddress)
        /// An RTP packet as the member's own, from its stand-in address.
        case rtp([UInt8], standIn: SocketAddress)
        /// A packet of the member's that is not forwarded (RTX, padding) arrived: its transport-wide sequence number,
        /// for the member's uplink feedback.
        case arrived(member: UInt32, transportSequence: UInt16)
        /// An RTCP compound in the relay's terms (the member's SSRC, the sources' SSRCs), from its stand-in.
        case rtcp([UInt8], standIn: SocketAddress)
        /// The member's transport failed: it leaves the call, told why.
        case failed(member: UInt32, reason: String)
    }

    /// The bit rate the relay gives a browser without transport-wide feedback as its estimate (REMB), enough for its
    /// three layers at 640x360.
    static let estimateBitsPerSecond = 2_500_000
    /// How often the estimate is sent.
    static let estimateInterval: Duration = .milliseconds(500)

    let port: BrowserPort
    private var identity: DTLSIdentity?
    private(set) var browsers: [UInt32: Browser] = [:]
    private var byStandIn: [SocketAddress: UInt32] = [:]
    private var byUfrag: [String: UInt32] = [:]
    /// Datagrams and packets refused, by reason (a handful of kinds: the reasons' cases, without their values).
    private(set) var refused: [String: Int] = [:]
    /// The browsers' checked addresses, as `refreshCheckedSockets` made them.
    private var checkedSockets: Set<SocketAddress> = []

    private let epoch: ContinuousClock.Instant
    private var limits = DTLSEndpoint.Limits()

    /// Browsers on a port holding at most `limit`, their times counted from `epoch` (the relay core's), each DTLS
    /// handshake allowed `handshake`.
    init(epoch: ContinuousClock.Instant, handshake: Duration = .seconds(10), limit: Int = 1_000) {
        self.epoch = epoch
        limits.handshake = handshake
        port = BrowserPort(limit: limit)
    }

    /// The relay core's time now.
    var now: Duration { ContinuousClock.now - epoch }

    var isEmpty: Bool { browsers.isEmpty }

    /// Whether `address` is a browser member's stand-in.
    func isStandIn(_ address: SocketAddress) -> Bool { byStandIn[address] != nil }

    /// Whether a datagram from `remote` starting with `firstByte` is for the browsers: STUN and DTLS always (a
    /// Parley client sends neither), SRTP from an address a browser's checks made known.
    func claims(firstByte: UInt8, from remote: SocketAddress) -> Bool {
        guard !browsers.isEmpty else { return false }
        return firstByte < 64 || checkedSockets.contains(remote)
    }

    /// The port's checked addresses as NIO's (at most 16 a browser), made again after each STUN datagram and each
    /// removal: the test every datagram takes while a browser is in a call, without making a `TransportAddress`.
    private func refreshCheckedSockets() {
        checkedSockets = Set(
            port.owners.keys.compactMap { try? SocketAddress(ipAddress: $0.hostText, port: Int($0.port)) })
    }

    /// A browser member joining with `offer`: its transport, ingress and slots; the relay's SDP answer. `host` is the
    /// address the browser reached the relay at (its WebSocket's), `udpPort` the relay's media port.
    func add(
        member: UInt32, offer: BrowserOffer, ssrcs: MemberSSRCs, host: String, udpPort: Int, now: Duration
    ) throws -> String {
        let identity = try self.identity ?? DTLSIdentity()
        self.identity = identity
        guard let fingerprint = DTLSFingerprint(offer.fingerprint) else {
            throw BrowserMemberError.noFingerprint
        }
        let ice = ICELiteAgent(
            localUfrag: Self.randomToken(8), localPassword: Self.randomToken(24), remoteUfrag: offer.iceUfrag)
        let transport = try BrowserTransport(
            ice: ice, identity: identity, remoteFingerprint: fingerprint, limits: limits, now: now)
        // What the page receives on: its recvonly sections, audio and video paired in the offer's order.
        let receiving = offer.media.filter { $0.isAccepted && $0.direction.receives && !$0.direction.sends }
        let audio = receiving.filter { $0.kind == .audio }
        let video = receiving.filter { $0.kind == .video }
        var pairs: [SlotPair] = []
        var choices: [String: MediaChoice] = [:]
        var used: Set<UInt32> = []
        func newSSRC() -> UInt32 {
            while true {
                let ssrc = UInt32.random(in: 1...UInt32.max)
                if used.insert(ssrc).inserted { return ssrc }
            }
        }
        for index in 0..<max(audio.count, video.count) {
            var pair = SlotPair()
            let cname = "parley-slot-\(index)"
            let stream = "slot\(index)"
            if index < audio.count, let mid = audio[index].mid, let codec = audio[index].codec {
                let ssrc = newSSRC()
                pair.audioMid = mid
                pair.audio = BrowserSlot(ssrc: ssrc, payloadType: codec.rtpMap.payloadType, clockRate: 48_000)
                choices[mid] = MediaChoice(
                    receive: false,
                    send: RelaySource(
                        ssrc: ssrc, cname: cname, msid: MediaStreamID(stream: stream, track: "audio\(index)")))
            }
            if index < video.count, let mid = video[index].mid, let codec = video[index].codec {
                let ssrc = newSSRC()
                pair.videoMid = mid
                pair.video = BrowserSlot(ssrc: ssrc, payloadType: codec.rtpMap.payloadType, clockRate: 90_000)
                choices[mid] = MediaChoice(
                    receive: false,
                    send: RelaySource(
                        ssrc: ssrc, rtxSSRC: codec.rtxPayloadType == nil ? nil : newSSRC(), cname: cname,
                        msid: MediaStreamID(stream: stream, track: "video\(index)")))
            }
            pairs.append(pair)
        }
        for media in offer.media where media.isAccepted && media.direction.sends {
            if let mid = media.mid { choices[mid] = MediaChoice(receive: true) }
        }
        let parameters = AnswerParameters(
            iceUfrag: ice.localUfrag, icePwd: ice.localPassword, fingerprint: identity.fingerprint.attribute,
            address: host, port: UInt16(clamping: udpPort), sessionID: UInt64.random(in: 1...UInt64(Int64.max)),
            choices: choices)
        let answer = try offer.answer(with: parameters).description
        try port.add(transport)
        // A path of 30-odd bytes is far under the 107 a Unix socket address holds: this cannot throw.
        let standIn = try SocketAddress(unixDomainSocketPath: "/parley/browser/\(member)")
        let sending = offer.media.filter { $0.isAccepted && $0.direction.sends }
        browsers[member] = Browser(
            member: member, ufrag: ice.localUfrag, standIn: standIn,
            ingress: BrowserIngress(offer: offer, member: ssrcs), pairs: pairs, answer: answer,
            audioSSRC: sending.first { $0.kind == .audio }?.ssrcs.first,
            needsEstimate: !sending.contains { $0.extensionIDs[BrowserIngress.transportSequenceURI] != nil })
        byStandIn[standIn] = member
        byUfrag[ice.localUfrag] = member
        return answer
    }

    /// A browser member gone: its transport closed (close_notify sent) and forgotten.
    func remove(_ member: UInt32) -> [Outcome] {
        guard let browser = browsers.removeValue(forKey: member) else { return [] }
        byStandIn[browser.standIn] = nil
        byUfrag[browser.ufrag] = nil
        guard let transport = port.remove(browser.ufrag) else { return [] }
        refreshCheckedSockets()
        return outcomes(transport.close(), of: member, at: now)
    }

    /// The slots of `member`'s page as the page is told them.
    func slots(of member: UInt32) -> BrowserSlots? {
        guard let browser = browsers[member] else { return nil }
        return BrowserSlots(
            slots: browser.pairs.compactMap { pair in
                pair.member.map { BrowserSlots.Slot(member: $0, audio: pair.audioMid, video: pair.videoMid) }
            },
            unseen: browser.unseen)
    }

    /// Puts `peer` (SSRC block `block`) in a free slot pair of `member`'s page; false when it was there already.
    @discardableResult
    func show(_ peer: UInt32, block: UInt32, to member: UInt32) -> Bool {
        guard var browser = browsers[member], peer != member,
            !browser.pairs.contains(where: { $0.member == peer }), !browser.unseen.contains(peer)
        else { return false }
        if let free = browser.pairs.firstIndex(where: { $0.member == nil }) {
            browser.pairs[free].member = peer
            browser.pairs[free].block = block
            browser.pairs[free].audio?.carry(block)
            browser.pairs[free].video?.carry(nil)  // the first video packet of the peer's names the layer
        } else {
            browser.unseen.append(peer)
        }
        browsers[member] = browser
        return true
    }

    /// Takes `peer` out of `member`'s page; a peer waiting for a pair gets the one freed. False when it was not there.
    @discardableResult
    func hide(_ peer: UInt32, from member: UInt32) -> Bool {
        guard var browser = browsers[member] else { return false }
        if let index = browser.pairs.firstIndex(where: { $0.member == peer }) {
            browser.pairs[index].member = nil
            browser.pairs[index].block = nil
            browser.pairs[index].audio?.carry(nil)
            browser.pairs[index].video?.carry(nil)
            browsers[member] = browser
            return true
        }
        guard let waiting = browser.unseen.firstIndex(of: peer) else { return false }
        browser.unseen.remove(at: waiting)
        browsers[member] = browser
        return true
    }

    /// Peers waiting for a pair of `member`'s page, to show now that one is free.
    func waiting(for member: UInt32) -> [UInt32] {
        guard let browser = browsers[member], browser.pairs.contains(where: { $0.member == nil }) else { return [] }
        return browser.unseen
    }

    /// Takes `peer` off the waiting list of `member` (to show it again).
    func unqueue(_ peer: UInt32, of member: UInt32) {
        browsers[member]?.unseen.removeAll { $0 == peer }
    }

    // MARK: - From browsers

    /// One datagram the relay's UDP port received that `claims` gave to the browsers.
    func receive(_ datagram: [UInt8], from remote: SocketAddress, at now: Duration) -> [Outcome] {
        guard let source = TransportAddress(remote) else { return [] }
        let (ufrag, events) = port.receive(datagram, from: source, at: now)
        if DatagramKind(datagram) == .stun { refreshCheckedSockets() }
        guard let ufrag, let member = byUfrag[ufrag] else {
            for case .refused(let error) in events { count(error) }
            return []
        }
        return outcomes(events, of: member, at: now)
    }

    /// Every browser's timers: DTLS retransmissions and deadline, consent; and the estimate each is due.
    func tick(at now: Duration) -> [Outcome] {
        var result: [Outcome] = []
        for (ufrag, events) in port.tick(at: now) {
            guard let member = byUfrag[ufrag] else { continue }
            result += outcomes(events, of: member, at: now)
        }
        for member in browsers.keys.sorted() {
            guard var browser = browsers[member], browser.connected, browser.needsEstimate else { continue }
            if let last = browser.lastEstimateAt, now - last < Self.estimateInterval { continue }
            browser.lastEstimateAt = now
            browsers[member] = browser
            let ssrcs = Array(browser.ingress.layers.keys.sorted())
            guard !ssrcs.isEmpty else { continue }
            result += protectRTCP(Self.estimate(ssrcs), of: member)
        }
        return result
    }

    private func outcomes(_ events: [BrowserTransport.Event], of member: UInt32, at now: Duration) -> [Outcome] {
        var result: [Outcome] = []
        for event in events {
            switch event {
            case .send(let bytes, let address):
                guard let socket = socketAddress(address, of: member) else { continue }
                result.append(.send(bytes, to: socket))
            case .connected:
                guard let browser = browsers[member] else { continue }
                browsers[member]?.connected = true
                result.append(.connected(member: member, standIn: browser.standIn))
            case .rtp(let bytes):
                guard var browser = browsers[member] else { continue }
                let outcome = browser.ingress.receive(bytes, at: now)
                browsers[member] = browser
                switch outcome {
                case .forward(let packet):
                    result.append(.rtp(packet, standIn: browser.standIn))
                case .dropped(let reason):
                    count(reason)
                    if let sequence = browser.ingress.arrivalSequence(bytes) {
                        result.append(.arrived(member: member, transportSequence: sequence))
                    }
                }
            case .rtcp(let bytes):
                if let compound = inbound(rtcp: bytes, of: member), let browser = browsers[member] {
                    result.append(.rtcp(compound, standIn: browser.standIn))
                }
            case .refused(let error): count(error)
            case .failed(let error): result.append(.failed(member: member, reason: "\(error)"))
            }
        }
        return result
    }

    /// The browser's RTCP in the relay's terms: its keyframe requests and NACKs about a slot become the member's
    /// about the stream the slot carries (with the source's sequence numbers); the rest (reports, its estimate) is
    /// the browser's own business. Nil when nothing is left.
    private func inbound(rtcp bytes: [UInt8], of member: UInt32) -> [UInt8]? {
        guard let browser = browsers[member], let packets = try? RTCPPacket.parseCompound(bytes) else { return nil }
        let sender = browser.ingress.member.audio
        var mapped: [RTCPPacket] = []
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli):
                guard let slot = videoSlot(pli.mediaSSRC, in: browser), let source = slot.source else { continue }
                mapped.append(.pictureLossIndication(PictureLossIndication(senderSSRC: sender, mediaSSRC: source)))
            case .nack(let nack):
                guard let slot = videoSlot(nack.mediaSSRC, in: browser), let source = slot.source else { continue }
                let lost = nack.lostSequenceNumbers.compactMap { slot.sourceSequence(of: $0) }
                guard !lost.isEmpty else { continue }
                mapped.append(.nack(GenericNACK(senderSSRC: sender, mediaSSRC: source, lost: lost)))
            default: continue
            }
        }
        return mapped.isEmpty ? nil : RTCPPacket.serializeCompound(mapped)
    }

    private func videoSlot(_ ssrc: UInt32, in browser: Browser) -> BrowserSlot? {
        browser.pairs.lazy.compactMap(\.video).first { $0.ssrc == ssrc }
    }

    // MARK: - To browsers

    /// What the relay wrote to a browser member's stand-in, as the datagram to send: RTP put on the slot pair of its
    /// sender and protected, RTCP about the member's own streams (keyframe requests, NACKs, transport-wide feedback)
    /// given the browser's SSRCs.
    /// Nil for what the browser has no use for (a stream it has no slot for, Parley's own feedback).
    func egress(_ data: ByteBuffer, to standIn: SocketAddress, at now: Duration) -> (ByteBuffer, SocketAddress)? {
        guard let member = byStandIn[standIn],
            let bytes = data.getBytes(at: data.readerIndex, length: data.readableBytes)
        else { return nil }
        let sent: [Outcome]
        switch data.withUnsafeReadableBytes({ MediaPacketKind.classify($0) }) {
        case .rtcp: sent = outbound(rtcp: bytes, of: member)
        case .rtp: sent = outbound(rtp: bytes, of: member, at: now)
        case .unknown: return nil
        }
        guard case .send(let protected, let address)? = sent.first else { return nil }
        return (ByteBuffer(bytes: protected), address)
    }

    private func outbound(rtp bytes: [UInt8], of member: UInt32, at now: Duration) -> [Outcome] {
        guard var browser = browsers[member], var packet = try? RTPPacket(parsing: bytes) else { return [] }
        let ssrc = packet.header.ssrc
        let block = ssrc & ~3
        guard let index = browser.pairs.firstIndex(where: { $0.block == block }) else { return [] }
        packet.header.headerExtension = nil  // Parley's extension ids mean other things to Chrome
        let rewritten: RTPPacket?
        if ssrc == block {
            guard packet.header.payloadType == MediaPayloadType.opus else { return [] }
            rewritten = browser.pairs[index].audio?.rewrite(packet, at: now)
        } else {
            guard packet.header.payloadType == MediaPayloadType.vp8, browser.pairs[index].video != nil else {
                return []
            }
            // A new layer of the sender starts at a keyframe (the relay's layer forwarding sees to it): the slot
            // carries it from there, numbered on.
            if browser.pairs[index].video?.source != ssrc { browser.pairs[index].video?.carry(ssrc) }
            rewritten = browser.pairs[index].video?.rewrite(packet, at: now)
        }
        browsers[member] = browser  // the slot moved on whether or not the packet goes
        guard let rewritten else { return [] }
        return protectRTP(rewritten.serialized(), of: member)
    }

    private func outbound(rtcp bytes: [UInt8], of member: UInt32) -> [Outcome] {
        guard let browser = browsers[member], let packets = try? RTCPPacket.parseCompound(bytes) else { return [] }
        var mapped: [RTCPPacket] = []
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli):
                guard let ssrc = browserSSRC(of: pli.mediaSSRC, in: browser) else { continue }
                mapped.append(.pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: ssrc)))
            case .nack(let nack):
                guard let ssrc = browserSSRC(of: nack.mediaSSRC, in: browser) else { continue }
                mapped.append(.nack(GenericNACK(senderSSRC: 1, mediaSSRC: ssrc, items: nack.items)))
            case .other(var raw)
            where raw.packetType == RTCPPacketType.transportFeedback && raw.count == 15 && raw.body.count >= 8:
                // The relay's transport-wide feedback on what arrived from the browser: its sequence numbers are the
                // browser's own (`BrowserIngress` kept them); the media SSRC becomes one of the browser's.
                guard let ssrc = browser.audioSSRC ?? browser.ingress.layers.keys.min() else { continue }
                raw.body.replaceSubrange(4..<8, with: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) })
                mapped.append(.other(raw))
            default: continue
            }
        }
        guard !mapped.isEmpty else { return [] }
        return protectRTCP(RTCPPacket.serializeCompound(mapped), of: member)
    }

    /// The browser's own SSRC for the member's video layer `ssrc`.
    private func browserSSRC(of ssrc: UInt32, in browser: Browser) -> UInt32? {
        guard let layer = browser.ingress.member.layerIndex(of: ssrc) else { return nil }
        return browser.ingress.layers.first { $0.value == layer }?.key
    }

    private func protectRTP(_ packet: [UInt8], of member: UInt32) -> [Outcome] {
        protect(packet, of: member) { try $0.protectRTP($1) }
    }

    private func protectRTCP(_ packet: [UInt8], of member: UInt32) -> [Outcome] {
        protect(packet, of: member) { try $0.protectRTCP($1) }
    }

    /// `packet` protected by the member's transport, to send to its media address; nothing before the handshake, and
    /// nothing (counted) when protecting fails.
    private func protect(
        _ packet: [UInt8], of member: UInt32,
        _ body: (BrowserTransport, [UInt8]) throws -> ([UInt8], TransportAddress)?
    ) -> [Outcome] {
        guard let browser = browsers[member], let transport = port.transports[browser.ufrag] else { return [] }
        do {
            guard let (protected, address) = try body(transport, packet),
                let socket = socketAddress(address, of: member)
            else { return [] }
            return [.send(protected, to: socket)]
        } catch {
            count(error)
            return []
        }
    }

    /// NIO's address for `address`, made once per change of the browser's media address.
    private func socketAddress(_ address: TransportAddress, of member: UInt32) -> SocketAddress? {
        if let browser = browsers[member], browser.mediaAddress == address, let socket = browser.mediaSocket {
            return socket
        }
        guard let socket = try? SocketAddress(ipAddress: address.hostText, port: Int(address.port)) else { return nil }
        browsers[member]?.mediaAddress = address
        browsers[member]?.mediaSocket = socket
        return socket
    }

    private func count(_ error: any Error) {
        let kind = String(describing: error).prefix { $0 != "(" && $0 != ":" }
        refused[String(kind.prefix(40)), default: 0] += 1
        if refused.count > 64 { refused = ["other": refused.values.reduce(0, +)] }
    }

    /// A receiver estimate (REMB, draft-alvestrand-rmcat-remb-03) of `estimateBitsPerSecond` for `ssrcs`.
    static func estimate(_ ssrcs: [UInt32]) -> [UInt8] {
        var mantissa = UInt32(estimateBitsPerSecond)
        var exponent: UInt32 = 0
        while mantissa >= 1 << 18 {
            mantissa >>= 1
            exponent += 1
        }
        var body: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 0] + Array("REMB".utf8)
        body.append(UInt8(min(ssrcs.count, 255)))
        body.append(UInt8(exponent << 2 | (mantissa >> 16)))
        body.append(UInt8(truncatingIfNeeded: mantissa >> 8))
        body.append(UInt8(truncatingIfNeeded: mantissa))
        for ssrc in ssrcs.prefix(255) {
            body += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) }
        }
        return RTCPPacket.serializeCompound([
            .other(RTCPRawPacket(packetType: RTCPPacketType.payloadFeedback, count: 15, body: body))
        ])
    }

    private static func randomToken(_ count: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }
}

/// Why a browser could not join.
enum BrowserMemberError: Error, CustomStringConvertible {
    case noFingerprint

    var description: String { "the offer's fingerprint is not a sha-256 one the relay can check" }
}

extension TransportAddress {
    /// The address of an IPv4 or IPv6 socket address; nil for a Unix socket.
    init?(_ address: SocketAddress) {
        guard let port = address.port else { return nil }
        switch address {
        case .v4(let v4):
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            self.init(host: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }, port: UInt16(port))
        case .v6(let v6):
            var address = v6.address.sin6_addr
            self.init(host: withUnsafeBytes(of: &address) { Array($0) }, port: UInt16(port))
        default: return nil
        }
    }

    /// The host as text NIO reads (no brackets, no port).
    var hostText: String {
        isIPv6 ? String(description.dropFirst().prefix { $0 != "]" }) : host.map(String.init).joined(separator: ".")
    }
}
