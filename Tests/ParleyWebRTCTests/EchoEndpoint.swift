import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ParleyWire

@testable import ParleyWebRTC

/// The far end of the Chromium transport test: one HTTP listener (the page, its offer, its reports) and one UDP port
/// running a `BrowserTransport` for the page's connection, both on one event loop. It answers the offer as the relay
/// does (ICE-lite, DTLS-SRTP, BUNDLE), counts what arrives decrypted and sends the camera's middle simulcast layer
/// back on the answer's own SSRC, so the page decodes its own pictures only if every layer works both ways.
final class EchoEndpoint: @unchecked Sendable {
    /// What the endpoint saw, read by the test while it runs.
    struct Seen: Sendable {
        var offerError: String?
        var connected = false
        var audioPackets = 0
        var videoPacketsByRID: [String: Int] = [:]
        var rtcpPackets = 0
        var dropped: [String: Int] = [:]
        var echoed = 0
        var keyframeRequests = 0
        var refusals: [String] = []
        var reports: [[String: String]] = []
        var failure: String?
    }

    static let echoSSRC: UInt32 = 0x5041_524C
    /// The layer sent back: the smallest, which Chromium keeps sending at any estimate (with no congestion feedback
    /// from this endpoint its estimate stays low and it pauses the larger layers).
    static let echoedRID = "q"
    /// The SSRCs the browser's media is given, as a member's.
    static let member = MemberSSRCs(block: 0x1000)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let seen = NIOLockedValueBox(Seen())
    private(set) var httpPort = 0
    private(set) var udpPort = 0
    private var http: (any Channel)?
    private var udp: (any Channel)?
    private let identity: DTLSIdentity
    private let started = ContinuousClock.now
    private let page: String

    // Confined to the event loop.
    private var transport: BrowserTransport?
    private var ingress: BrowserIngress?

    init(page: String) throws {
        self.page = page
        identity = try DTLSIdentity()
    }

    var now: Duration { started.duration(to: .now) }

    func start() async throws {
        let udp = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.pipeline.addHandler(UDPHandler(endpoint: self)) }
            .bind(host: "127.0.0.1", port: 0).get()
        self.udp = udp
        udpPort = udp.localAddress?.port ?? 0
        let http = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(HTTPHandler(endpoint: self))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.http = http
        httpPort = http.localAddress?.port ?? 0
        udp.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(50), delay: .milliseconds(50)) { _ in
            guard let transport = self.transport else { return }
            self.handle(transport.tick(at: self.now))
        }
    }

    func stop() async {
        try? await udp?.close()
        try? await http?.close()
        try? await group.shutdownGracefully()
    }

    /// The answer to the page's offer, made on the event loop.
    func answer(_ text: String) -> (HTTPResponseStatus, String) {
        do {
            let description = try SessionDescription(parsing: text)
            let offer = try BrowserOffer(description)
            guard let fingerprint = DTLSFingerprint(offer.fingerprint) else {
                throw EchoFailure(what: "no sha-256 fingerprint in \(offer.fingerprint)")
            }
            let ice = ICELiteAgent(
                localUfrag: "echo" + String(UInt32.random(in: 0...UInt32.max), radix: 36),
                localPassword: String((0..<24).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }),
                remoteUfrag: offer.iceUfrag)
            transport = try BrowserTransport(
                ice: ice, identity: identity, remoteFingerprint: fingerprint, now: now)
            ingress = BrowserIngress(offer: offer, member: Self.member)
            var choices: [String: MediaChoice] = [:]
            for media in offer.media {
                guard let mid = media.mid else { continue }
                guard media.kind == .video else {
                    choices[mid] = MediaChoice(receive: true)
                    continue
                }
                choices[mid] = MediaChoice(
                    receive: true,
                    send: RelaySource(
                        ssrc: Self.echoSSRC, cname: "echo", msid: MediaStreamID(stream: "echo", track: "camera")))
            }
            let parameters = AnswerParameters(
                iceUfrag: ice.localUfrag, icePwd: ice.localPassword,
                fingerprint: identity.fingerprint.attribute, address: "127.0.0.1", port: UInt16(udpPort),
                sessionID: UInt64.random(in: 1...UInt64(Int64.max)), choices: choices)
            return (.ok, try offer.answer(with: parameters).description)
        } catch {
            seen.withLockedValue { $0.offerError = "\(error)" }
            return (.badRequest, "\(error)")
        }
    }

    func received(_ datagram: [UInt8], from address: SocketAddress) {
        guard let transport, let source = TransportAddress(address) else { return }
        handle(transport.receive(datagram, from: source, at: now))
    }

    private func handle(_ events: [BrowserTransport.Event]) {
        for event in events {
            switch event {
            case .send(let bytes, let address): send(bytes, to: address)
            case .connected: seen.withLockedValue { $0.connected = true }
            case .rtp(let bytes): rtp(bytes)
            case .rtcp(let bytes): rtcp(bytes)
            case .refused(let error):
                seen.withLockedValue { if $0.refusals.count < 50 { $0.refusals.append("\(error)") } }
            case .failed(let error): seen.withLockedValue { $0.failure = "\(error)" }
            }
        }
    }

    /// Makes the browser's packet a member's (`BrowserIngress`, as the relay will), counts it by what it became, and
    /// sends the echoed layer back on the answer's SSRC.
    private func rtp(_ bytes: [UInt8]) {
        guard var ingress else { return }
        let outcome = ingress.receive(bytes)
        self.ingress = ingress
        guard case .forward(let forwarded) = outcome, var packet = try? RTPPacket(parsing: forwarded) else {
            if case .dropped(let reason) = outcome {
                seen.withLockedValue { if $0.dropped.count < 20 { $0.dropped["\(reason)", default: 0] += 1 } }
            }
            return
        }
        if packet.header.ssrc == Self.member.audio {
            seen.withLockedValue { $0.audioPackets += 1 }
            return
        }
        guard let layer = Self.member.layerIndex(of: packet.header.ssrc) else { return }
        let rid = BrowserIngress.layerRIDs[layer]
        seen.withLockedValue { $0.videoPacketsByRID[rid, default: 0] += 1 }
        guard rid == Self.echoedRID else { return }
        packet.header.ssrc = Self.echoSSRC
        guard let transport, let (protected, address) = try? transport.protectRTP(packet.serialized()) else { return }
        send(protected, to: address)
        seen.withLockedValue { $0.echoed += 1 }
    }

    /// Counts the browser's RTCP and passes its keyframe requests for the echo to the layer echoed.
    private func rtcp(_ bytes: [UInt8]) {
        seen.withLockedValue { $0.rtcpPackets += 1 }
        guard let packets = try? RTCPPacket.parseCompound(bytes),
            packets.contains(where: {
                if case .pictureLossIndication(let pli) = $0 { return pli.mediaSSRC == Self.echoSSRC }
                return false
            }),
            let source = ingress?.layers.first(where: { BrowserIngress.layerRIDs[$0.value] == Self.echoedRID })?.key
        else { return }
        let request = RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: source))
        guard let transport, let (protected, address) = try? transport.protectRTCP(request.serialized()) else { return }
        send(protected, to: address)
        seen.withLockedValue { $0.keyframeRequests += 1 }
    }

    private func send(_ bytes: [UInt8], to address: TransportAddress) {
        guard let udp, let remote = try? SocketAddress(ipAddress: address.hostText, port: Int(address.port)) else {
            return
        }
        var buffer = udp.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        udp.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: buffer), promise: nil)
    }

    func report(_ body: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return }
        let fields = object.mapValues { "\($0)" }
        seen.withLockedValue { seen in
            seen.reports.append(fields)
            if seen.reports.count > 20 { seen.reports.removeFirst() }
        }
    }

    func pageResponse(_ path: String) -> (HTTPResponseStatus, String, String) {
        guard path == "/", let text = try? String(contentsOfFile: page, encoding: .utf8) else {
            return (.notFound, "text/plain", "not found")
        }
        return (.ok, "text/html; charset=utf-8", text)
    }
}

extension TransportAddress {
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

    var hostText: String {
        isIPv6 ? String(description.dropFirst().prefix { $0 != "]" }) : host.map(String.init).joined(separator: ".")
    }
}

private final class UDPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let endpoint: EchoEndpoint
    init(endpoint: EchoEndpoint) { self.endpoint = endpoint }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        endpoint.received(Array(envelope.data.readableBytesView), from: envelope.remoteAddress)
    }
}

private final class HTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let endpoint: EchoEndpoint
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    init(endpoint: EchoEndpoint) { self.endpoint = endpoint }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            guard body.count < 256 * 1024 else { return }
            body += buffer.readableBytesView
        case .end:
            guard let head else { return }
            let (status, type, text): (HTTPResponseStatus, String, String)
            switch (head.method, head.uri) {
            case (.POST, "/offer"):
                let (answerStatus, answer) = endpoint.answer(String(decoding: body, as: UTF8.self))
                (status, type, text) = (answerStatus, "application/sdp", answer)
            case (.POST, "/report"):
                endpoint.report(body)
                (status, type, text) = (.ok, "text/plain", "ok")
            default: (status, type, text) = endpoint.pageResponse(head.uri)
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: "\(text.utf8.count)")
            headers.add(name: "Connection", value: "close")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            let channel = context.channel
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
