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

    func sendBind() {
        guard case .joined = phase, let room = joined, let token = BindToken(hex: room.media.credential),
            let bound
        else { return }
        let request = BindRequest(ssrc: room.media.ssrcs.audio, memberID: room.you.id, token: token)
        sendRaw(request.serialized())
        media.udp?.flush()
        media.bindAttempts += 1
        // Every 250 ms until acknowledged, then every 5 s as a keep-alive for NAT bindings.
        let delay: TimeAmount = media.isBound ? .seconds(5) : .milliseconds(250)
        if !media.isBound && media.bindAttempts == 20 {
            emit(.alert(.message("The relay does not answer on UDP port \(room.media.udpPort): no media yet")))
        }
        media.bindTask?.cancel()
        media.bindTask = loop.scheduleTask(in: delay) { bound.value.sendBind() }
    }

    /// Sends `packets`, each stamped with the next transport-wide sequence number and sealed for the room; each is
    /// remembered for the uplink's estimate.
    func send(_ packets: [RTPPacket]) {
        guard media.canSend, !packets.isEmpty else { return }
        let at = now.milliseconds
        for plain in packets {
            var stamped = plain
            let sequence = media.uplink.history.next()
            stamped.header.headerExtension = TransportSequence.stamp(sequence, onto: plain.header.headerExtension)
            guard let packet = sealed(stamped) else { continue }
            let bytes = packet.serialized()
            media.uplink.history.sent(sequence, size: bytes.count, at: at)
            media.write(bytes)
        }
        media.udp?.flush()
    }

    func sendRaw(_ bytes: [UInt8]) {
        media.write(bytes)
    }

    /// One datagram from the media socket. Only the relay's media address may speak to us: anyone else who reaches
    /// the port (a stranger spraying packets, a peer trying to bypass the relay) is dropped and counted.
    func receive(_ datagram: ByteBuffer, from sender: SocketAddress) {
        guard let relay = media.relay, sender == relay else {
            media.datagramsFromStrangers += 1
            return
        }
        let bytes = Array(datagram.readableBytesView)
        switch MediaPacketKind.classify(bytes) {
        case .unknown:
            return
        case .rtp:
            receiveRTP(bytes)
        case .rtcp:
            if Bind.isBindPacket(bytes) {
                guard let ack = try? BindAcknowledgement(parsing: bytes), ack.memberID == joined?.you.id else { return }
                mediaBindAnswered(ack.status)
                return
            }
            guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
            for packet in packets { receive(packet) }
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
                media.udp?.flush()
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
            onVideoThread { $0.requestKeyframe() }
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
            if let setting = ownVideo.rate.update(
                estimate: estimate, loss: media.uplink.loss, active: ownVideo.sent.activeLayers)
            {
                let size = ownVideo.rate.fullLayerSize
                onVideoThread { $0.steer(fullLayerKbps: setting.fullLayerKbps, size: size) }
            }
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
