import Logging
import NIOCore
import NIOPosix
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyWire

/// The media socket: binding at the relay and the datagrams in and out.
extension EngineCore {

    /// Binds (or keeps the binding of) this member's media at the relay on the current path: every 250 ms until
    /// answered, then every 5 s. Unanswered over UDP for 2 s (`--media auto`): media moves to the signaling
    /// connection; while there, every keep-alive also probes UDP, and media moves back once UDP answers.
    func sendBind() {
        guard case .joined = phase, let room = joined, let token = BindToken(hex: room.media.credential),
            let bound
        else { return }
        // By time, not by count: a socket an error closed and reopened sends fewer binds in those 2 s.
        if media.path == .udp, !media.isBound, configuration.mediaTransport == .auto,
            let since = media.unansweredSince, now - since >= .seconds(2)
        {
            moveMedia(to: .tcp, why: "UDP to the relay got no answer in 2 s")
        }
        let request = BindRequest(ssrc: room.media.ssrcs.audio, memberID: room.you.id, token: token)
        writeMedia(request.serialized())
        if media.path == .tcp, media.isBound, configuration.mediaTransport == .auto {
            probeUDP(BindRequest(ssrc: request.ssrc, memberID: request.memberID, token: token, isProbe: true))
        }
        flushMedia()
        media.bindAttempts += 1
        media.bindsUnanswered += 1
        if !media.isBound, media.unansweredSince == nil { media.unansweredSince = now }
        // Every 250 ms until acknowledged, then every 5 s as a keep-alive for NAT bindings.
        let delay: TimeAmount = media.isBound ? .seconds(5) : .milliseconds(250)
        if !media.isBound && media.bindsUnanswered == 20 {
            let what =
                media.path == .tcp
                ? "The relay answers no media bind, over UDP or over its TLS connection: no media yet"
                : "The relay does not answer on UDP port \(room.media.udpPort): no media yet"
            emit(.alert(.message(what)))
        }
        media.bindTask?.cancel()
        media.bindTask = loop.scheduleTask(in: delay) { bound.value.sendBind() }
    }

    /// While media goes over TCP: asks the relay over UDP whether UDP gets through now (it binds nothing).
    private func probeUDP(_ probe: BindRequest) {
        guard media.udp != nil else { return reopenMediaSocket() }
        media.udpAnswered = false
        media.write(probe.serialized())
        media.udp?.flush()
    }

    /// Media goes over `path` from now on; the header and the chat say so.
    func moveMedia(to path: MediaPath, why: String) {
        guard media.path != path else { return }
        media.path = path
        media.udpAnswered = false
        media.bindsUnanswered = 0
        media.unansweredSince = nil
        media.lastHeardOverUDP = nil
        logger.notice("media path", metadata: ["path": "\(path.rawValue)", "why": "\(why)"])
        emit(.mediaOverTCP(path == .tcp))
        switch path {
        case .tcp:
            media.isBound = false
            let connection = configuration.signalingSecurity.isTLS ? "TLS connection" : "WebSocket (no TLS)"
            emit(.alert(.message("\(why): media goes over TCP, on the relay's \(connection)")))
        case .udp:
            emit(.alert(.message("UDP gets through again: media is back on UDP")))
        }
    }

    /// Sends `packets` through the pacing (sound at once, video spread at 2.5 times the uplink's estimate).
    func send(_ packets: [RTPPacket]) {
        guard canSendMedia, !packets.isEmpty else { return }
        media.pacing.enqueue(packets, audioSSRC: joined?.media.ssrcs.audio)
        releasePaced()
    }

    /// Sends what the pacing lets out now, each packet stamped with the next transport-wide sequence number and
    /// sealed for the room as it leaves, and remembered for the uplink's estimate; then waits for the next.
    func releasePaced() {
        let at = now.milliseconds
        let leaving = media.pacing.release(at: at, estimate: media.uplink.target)
        if !leaving.isEmpty, canSendMedia {
            for plain in leaving {
                var stamped = plain
                let sequence = media.uplink.history.next()
                stamped.header.headerExtension = TransportSequence.stamp(
                    sequence, onto: plain.header.headerExtension)
                guard let packet = sealed(stamped) else { continue }
                let bytes = packet.serialized()
                media.uplink.noteSent(sequence, size: bytes.count, at: at)
                media.bytesSent += bytes.count
                writeMedia(bytes)
            }
            flushMedia()
        }
        guard media.pacingTask == nil, let next = media.pacing.nextRelease(after: at), let bound else { return }
        let delay = TimeAmount.microseconds(Int64(max(500, (next - at) * 1_000)))
        media.pacingTask = loop.scheduleTask(in: delay) {
            bound.value.media.pacingTask = nil
            bound.value.releasePaced()
        }
    }

    /// Starts a probe when the uplink's estimate holds the camera under what it would send and the link has been
    /// calm (over UDP only: over TCP the connection finds its own rate).
    func probeUplinkIfDue() {
        guard media.path == .udp, canSendMedia else { return }
        let wanted = controls.cameraOff || ownVideo.layerDemand?.contains(true) == false ? 0 : media.uplink.limits.start
        guard let cluster = media.uplink.startProbe(at: now.milliseconds, wanted: wanted) else { return }
        logger.debug("probing the uplink", metadata: ["rate": "\(Int(cluster.rate / 1_000)) kbit/s"])
        sendProbePadding()
    }

    /// Sends the padding a probe owes now, then comes back every 5 ms until the probe ends.
    func sendProbePadding() {
        let at = now.milliseconds
        guard let ssrc = joined?.media.ssrcs.audio, media.path == .udp, canSendMedia,
            let cluster = media.uplink.probe.cluster, at < cluster.endsAt
        else { return }
        var owed = media.uplink.probe.paddingOwed(at: at)
        var count = 0
        while owed >= ProbePadding.smallest, count < 16 {
            let sequence = media.uplink.history.next()
            media.probeSequence &+= 1
            let bytes = ProbePadding.packet(
                ssrc: ssrc, sequenceNumber: media.probeSequence, transportSequence: sequence, size: owed
            ).serialized()
            media.uplink.noteSent(sequence, size: bytes.count, at: at)
            writeMedia(bytes)
            owed -= bytes.count
            count += 1
        }
        if count > 0 { flushMedia() }
        guard let bound else { return }
        loop.scheduleTask(in: .milliseconds(5)) { bound.value.sendProbePadding() }
    }

    func sendRaw(_ bytes: [UInt8]) {
        writeMedia(bytes)
    }

    /// Whether media can leave now: the socket open and the relay's address known, or the signaling connection up.
    var canSendMedia: Bool {
        switch media.path {
        case .udp: media.canSend
        case .tcp: signalingLink.connection != nil
        }
    }

    /// Queues one datagram on the current path (sent at `flushMedia`); over TCP, one the connection has no room
    /// for is dropped and counted (the NACKs and keyframe requests that repair a lost UDP packet repair it too).
    func writeMedia(_ bytes: [UInt8]) {
        switch media.path {
        case .udp:
            media.write(bytes)
        case .tcp:
            if signalingLink.connection?.queueMedia(bytes) == false { media.backedUp += 1 }
        }
    }

    /// Sends what `writeMedia` queued.
    func flushMedia() {
        media.udp?.flush()
        if media.path == .tcp { signalingLink.connection?.flush() }
    }

    /// The media socket was closed by an error (NIO closes a UDP socket on a send error such as a firewall's
    /// EPERM): it is opened again a second later and the media bound again, so the call goes on.
    func mediaSocketClosed(_ channel: any Channel) {
        guard let udp = media.udp, udp === channel, !media.closingSocket else { return }
        media.udp = nil
        media.socketReopens += 1
        logger.warning(
            "media socket closed by an error: opening it again", metadata: ["reopens": "\(media.socketReopens)"])
        guard let bound else { return }
        media.bindTask?.cancel()
        media.bindTask = loop.scheduleTask(in: .seconds(1)) { bound.value.reopenMediaSocket() }
    }

    /// Opens a new media socket in place of one an error closed, then binds (or probes) on it.
    func reopenMediaSocket() {
        guard media.udp == nil, !media.closingSocket, let bound else { return }
        openMediaSocket().whenComplete { result in
            let core = bound.value
            guard case .success(let channel) = result, !core.media.closingSocket else {
                if case .failure(let error) = result {
                    core.logger.warning("media socket cannot open again", metadata: ["error": "\(error)"])
                }
                return
            }
            core.adoptMediaSocket(channel)
            if core.media.path == .udp { core.media.isBound = false }
            core.sendBind()
        }
    }

    /// `channel` is the media socket from now on; an error that closes it opens another.
    func adoptMediaSocket(_ channel: any Channel) {
        media.udp = channel
        guard let bound else { return }
        channel.closeFuture.whenComplete { _ in bound.value.mediaSocketClosed(channel) }
    }

    /// One datagram from the media socket. Only the relay's media address may speak to us: anyone else who reaches
    /// the port (a stranger spraying packets, a peer trying to bypass the relay) is dropped and counted.
    func receive(_ datagram: ByteBuffer, from sender: SocketAddress) {
        guard let relay = media.relay, sender == relay else {
            media.datagramsFromStrangers += 1
            return
        }
        media.lastHeardOverUDP = now
        receiveMedia(Array(datagram.readableBytesView), overUDP: true)
    }

    /// One media datagram from the relay, over UDP or over the signaling connection.
    func receiveMedia(_ bytes: [UInt8], overUDP: Bool) {
        switch MediaPacketKind.classify(bytes) {
        case .unknown:
            return
        case .rtp:
            reports.arrived.packets += 1
            reports.arrived.bytes += bytes.count
            reports.arrivedFromRelay += bytes.count
            receiveRTP(bytes)
        case .rtcp:
            reports.arrivedFromRelay += bytes.count
            if Bind.isBindPacket(bytes) {
                guard let ack = try? BindAcknowledgement(parsing: bytes), ack.memberID == joined?.you.id else { return }
                bindAnswered(ack.status, overUDP: overUDP)
                return
            }
            guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
            for packet in packets { receive(packet) }
        }
    }

    /// Bound on UDP, and nothing from the relay over it for 2 s (a network that started dropping UDP, an address
    /// that changed): bind again, which moves media to TCP if UDP stays silent. Called from the audio tick.
    func checkUDPSilence() {
        guard media.path == .udp, media.isBound, let last = media.lastHeardOverUDP, now - last > .seconds(2) else {
            return
        }
        media.isBound = false
        media.bindsUnanswered = 0
        media.unansweredSince = nil
        media.lastHeardOverUDP = now
        sendBind()
    }

    /// An answer to a bind: on the path media takes, the binding; over UDP while media goes over TCP, the answer
    /// to a probe (then a real bind goes over UDP) or to that bind (media moves back to UDP).
    private func bindAnswered(_ status: BindStatus, overUDP: Bool) {
        switch (media.path, overUDP) {
        case (.tcp, true):
            guard status == .bound else { return }
            if media.udpAnswered {
                moveMedia(to: .udp, why: "UDP answered")
                media.lastHeardOverUDP = now
            } else if let room = joined, let token = BindToken(hex: room.media.credential) {
                media.udpAnswered = true
                media.write(BindRequest(ssrc: room.media.ssrcs.audio, memberID: room.you.id, token: token).serialized())
                media.udp?.flush()
            }
        case (.udp, false):
            return  // an answer to a bind sent over TCP before media moved back
        default:
            media.bindsUnanswered = 0
            media.unansweredSince = nil
            mediaBindAnswered(status)
        }
    }

    /// A media packet of a member: audio to its jitter buffer, video to the layer's, a completed frame decoded.
    private func receiveRTP(_ bytes: [UInt8]) {
        guard let header = try? RTPHeaderView(parsing: bytes),
            let peer = remote.peer(sending: header.ssrc),
            let received = try? RTPPacket(parsing: bytes), let packet = opened(received, from: peer)
        else { return }
        if header.ssrc == peer.info.ssrcs.audio {
            guard configuration.decodesAudio else { return }
            peer.audioPacketsReceived += 1
            peer.audioArrivals.arrived(at: now)
            _ = peer.audio.insert(packet, at: now)
        } else if peer.info.ssrcs.layerIndex(of: header.ssrc) != nil {
            peer.countVideo(bytes: packet.payload.count)
            guard configuration.decodesVideo else { return }
            guard peer.acceptsVideo(packet) else {
                if peer.wantsKeyframe { sendKeyframeRequest(for: peer) }
                return
            }
            let at = now
            _ = peer.videoBuffer.insert(packet, at: at)
            // The marker ends a frame: decode it now rather than at the next tick (lower latency, fewer wake-ups).
            if packet.header.marker {
                pollVideo(peer, at: at)
                flushMedia()
            }
        }
    }

    /// The relay answered our media bind: once bound, every sender is asked for a keyframe and the bind is kept
    /// alive every 5 s.
    private func mediaBindAnswered(_ status: BindStatus) {
        switch status {
        case .bound:
            guard !media.isBound else { return }
            media.isBound = true
            // The relay's counts of what it sent count from this binding on (what went to an old address is no
            // loss on this link).
            reports.lastCount = nil
            onVideoThread { $0.requestKeyframe() }
            shareFullScreenRequested()
            // Ask every sender for a fresh keyframe so video shows without waiting for the next one.
            for peer in remote.peers.values { sendKeyframeRequest(for: peer) }
            if recording.awaitsMedia {
                recording.awaitsMedia = false
                startRecording()
            }
            media.bindTask?.cancel()
            if let bound {
                media.bindTask = loop.scheduleTask(in: .seconds(5)) { bound.value.sendBind() }
            }
        case .unknownMember, .wrongToken:
            logger.warning("relay refused the media bind", metadata: ["status": "\(status)"])
        }
    }

    /// Feedback about our own streams (keyframe requests, NACKs, loss reports) and members' sender reports; feedback
    /// naming a stream that is not ours is dropped and counted.
    private func receive(_ packet: RTCPPacket) {
        switch packet {
        case .pictureLossIndication(let pli):
            guard let layer = joined?.media.ssrcs.layerIndex(of: pli.mediaSSRC) else {
                media.forgedFeedbackDropped += 1
                return
            }
            ownVideo.keyframeRequestsReceived += 1
            guard ownShare == nil else { return shareFullScreenRequested() }
            onVideoThread { $0.requestKeyframe(layer: layer) }
        case .nack(let nack):
            guard joined?.media.ssrcs.layerIndex(of: nack.mediaSSRC) != nil else {
                media.forgedFeedbackDropped += 1
                return
            }
            resend(nack)
        case .receiverReport(let report):
            // The relay passes on only the blocks about our own streams; the audio one steers FEC.
            for block in report.reports where block.ssrc == joined?.media.ssrcs.audio {
                if let percent = ownAudio.lossPlan.record(
                    reporter: report.ssrc, fractionLost: block.fractionLost, at: now)
                {
                    ownAudio.sender?.planForLoss(percent: percent)
                    logger.debug("audio FEC plans for loss", metadata: ["percent": "\(percent)"])
                }
            }
        case .other(let raw)
        where raw.packetType == RTCPPacketType.transportFeedback && raw.count == TransportFeedback.format:
            guard let feedback = try? TransportFeedback(raw), feedback.mediaSSRC == joined?.media.ssrcs.audio else {
                media.forgedFeedbackDropped += 1
                return
            }
            media.feedbackReceived += 1
            let estimate = media.uplink.feedback(feedback, at: now.milliseconds)
            probeUplinkIfDue()
            if let sending = ownVideo.uplinkLayers.update(
                estimate: estimate, loss: media.uplink.loss, demand: ownVideo.layerDemand, at: now)
            {
                // The layers the uplink no longer carries (or carries again): the relay told, the encoder below.
                signalingLink.connection?.send(.videoSending(VideoSending(active: sending)))
                logger.info(
                    "video layers within the uplink",
                    metadata: ["sending": "\(sending)", "estimate": "\(Int(estimate / 1_000)) kbit/s"])
            }
            let encoded = runLayers()
            if let setting = ownVideo.rate.update(
                estimate: estimate, loss: media.uplink.loss, active: encoded, largestLayer: ownVideo.largestSent)
            {
                let size = ownVideo.rate.fullLayerSize
                onVideoThread {
                    $0.steer(fullLayerKbps: setting.fullLayerKbps, size: size, largestLayer: setting.largestLayer)
                }
            }
        case .application(let app) where app.name == ForwardedCount.name:
            guard let count = ForwardedCount(app), count.mediaSSRC == joined?.media.ssrcs.audio else {
                media.forgedFeedbackDropped += 1
                return
            }
            downlinkCounted(count)
        case .application(let app) where app.name == SendTimeMark.name:
            guard let mark = SendTimeMark(app), mark.mediaSSRC == joined?.media.ssrcs.audio else {
                media.forgedFeedbackDropped += 1
                return
            }
            downlinkMarked(mark)
        case .senderReport(let report):
            guard let peer = remote.peer(sending: report.ssrc) else {
                media.forgedFeedbackDropped += 1
                return
            }
            if report.ssrc == peer.info.ssrcs.audio {
                peer.audio.recordSenderReport(ntpTimestamp: report.ntpTimestamp, arrival: now)
            } else if report.ssrc == peer.videoSSRC {
                peer.videoBuffer.recordSenderReport(ntpTimestamp: report.ntpTimestamp, arrival: now)
            }
        default:
            return
        }
    }
}

/// Hands the media socket's datagrams to the engine core.
final class ClientMediaHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let core: NIOLoopBound<EngineCore>

    init(core: NIOLoopBound<EngineCore>) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        core.value.receive(envelope.data, from: envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors (relay restarting) must not close the media socket.
    }
}

/// Digital silence as a microphone.
final class SilenceSource: AudioSource {
    let sampleRate = 48_000
    let channels = 1
    var timestamp: Int64 = 0

    func nextFrame(samplesPerChannel: Int) -> AudioFrame {
        defer { timestamp += Int64(samplesPerChannel) * 1_000_000 / 48_000 }
        return AudioFrame(samples: [Int16](repeating: 0, count: samplesPerChannel), timestampMicros: timestamp)
    }
}

func timeAmount(_ duration: Duration) -> TimeAmount {
    let parts = duration.components
    return .nanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
}

extension Int {
    /// This value moved into `range`.
    func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
