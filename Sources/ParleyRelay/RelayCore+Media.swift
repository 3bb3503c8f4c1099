import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// Media through the relay: binds, RTP forwarding with simulcast layers, RTCP and the dominant speaker.
extension RelayCore {

    /// Carries out what a change of layers asks for: keyframe requests (throttled) and demands to senders.
    func performLayerEffects(_ effects: [LayerForwarding.Effect]) {
        for effect in effects {
            switch effect {
            case .requestKeyframe(let sender, let layer):
                guard let route = media.route(of: sender),
                    let (member, bytes) = media.keyframeRequest(for: route.ssrcs.videoLayer(layer), at: now)
                else { continue }
                send(bytes, toMember: member)
            case .demand(let sender, let active):
                // Another node's member: what the receivers here need of it goes to its node.
                if let node = links.remoteNodes[sender] {
                    if let block = media.route(of: sender)?.ssrcs.block {
                        sendLayerNeeds([TrunkLayerNeeds.Entry(block: block, active: active)], to: node)
                    }
                    continue
                }
                guard let connection = state.members[sender]?.connection else { continue }
                perform([.send(.videoLayers(VideoLayerDemand(active: active)), to: [connection])])
            case .held(let receiver, let notice):
                guard let connection = state.members[receiver]?.connection else { continue }
                perform([.send(.videoHeld(notice), to: [connection])])
            }
        }
    }

    /// One decision per room; a new dominant speaker is announced to the room.
    func decideSpeakers() {
        let at = now
        for room in Array(speakers.keys) {
            guard let dominant = speakers[room]?.decide(at: at) else { continue }
            layers.setDominant(dominant, in: room)
            perform([
                .send(
                    .dominantSpeaker(DominantSpeakerNotice(id: dominant)),
                    to: state.connections(in: room, except: nil))
            ])
        }
    }

    // MARK: - Media

    /// One datagram from the media socket. The RTP path is a header peek, one lookup, and a write per destination
    /// sharing the received buffer; only video packets are copied, into the retransmission buffer.
    func handleDatagram(_ envelope: AddressedEnvelope<ByteBuffer>) {
        let data = envelope.data
        let remote = envelope.remoteAddress
        if !browsers.isEmpty, let first = data.getInteger(at: data.readerIndex, as: UInt8.self),
            browsers.claims(firstByte: first, from: remote)
        {
            perform(browsers.receive(Array(data.readableBytesView), from: remote, at: now))
            return
        }
        switch data.withUnsafeReadableBytes({ MediaPacketKind.classify($0) }) {
        case .unknown:
            media.count(.notMedia)
        case .rtp:
            forwardRTP(data, from: remote)
        case .rtcp:
            if data.withUnsafeReadableBytes({ Bind.isBindPacket($0) }) {
                bind(data, from: remote)
            } else {
                handleRTCP(data, from: remote)
            }
        }
    }

    /// The header of an RTP packet, whether it starts a VP8 keyframe, and its audio level; nil (counted) when it
    /// is malformed or a keyframe declares a picture beyond the largest profile.
    func parseRTP(_ data: ByteBuffer) -> ParsedRTP? {
        let parsed = data.withUnsafeReadableBytes { raw -> (ParsedRTP, allowed: Bool)? in
            guard let header = try? RTPHeaderView(parsing: raw) else { return nil }
            let sequence = TransportSequence.read(packet: raw, header: header)
            let payload = UnsafeRawBufferPointer(rebasing: raw[header.payloadRange])
            // A shared terminal's frames are framed as VP8's are (`ShareFrame`): the same keyframe bit.
            guard header.payloadType == MediaPayloadType.vp8 || header.payloadType == MediaPayloadType.share else {
                let level = AudioLevelIndication(packet: raw, header: header)
                return (ParsedRTP(header: header, keyframe: false, level: level, transportSequence: sequence), true)
            }
            let keyframe = VP8PayloadDescriptor.startsKeyframe(payload)
            let allowed = !keyframe || VP8PayloadDescriptor.keyframeSize(payload).map(VP8Limits.allows) ?? true
            return (ParsedRTP(header: header, keyframe: keyframe, level: nil, transportSequence: sequence), allowed)
        }
        guard let (packet, allowed) = parsed else {
            media.count(.malformed)
            return nil
        }
        guard allowed else {
            media.count(.oversizedKeyframe)
            return nil
        }
        return packet
    }

    func forwardRTP(_ data: ByteBuffer, from remote: SocketAddress) {
        guard let packet = parseRTP(data), let route = media.sender(ssrc: packet.header.ssrc, from: remote) else {
            return
        }
        let header = packet.header
        guard route.role == .broadcaster else {
            media.count(.audienceSending)
            return
        }
        guard media.admitMedia(from: route.member, bytes: data.readableBytes, at: now) else { return }
        if let sequence = packet.transportSequence { uplinks.received(sequence, from: route.member, at: now) }
        // A probe's padding is for the feedback alone.
        if header.payloadType == MediaPayloadType.probe { return }
        // One copy to each other node with members in the room, whatever their number there; of video, only the
        // layers some member there needs.
        if header.ssrc == route.ssrcs.audio {
            sendToNodes(data, of: route.room)
        } else {
            sendToNodes(data, of: route.room, layer: (route.ssrcs.layerIndex(of: header.ssrc) ?? 0, route.member))
        }
        fanOut(data, header: header, keyframe: packet.keyframe, level: packet.level, route: route)
    }

    /// Forwards a sender's packet to the room's members bound here, each getting the layer its tile needs.
    func fanOut(
        _ data: ByteBuffer, header: RTPHeaderView, keyframe: Bool, level: AudioLevelIndication?,
        route: MediaRouter<SocketAddress>.Route
    ) {
        if header.ssrc != route.ssrcs.audio {
            // A copy, so the stored packet does not pin the whole receive batch buffer for the retention window.
            var copy = output.udp.allocator.buffer(capacity: data.readableBytes)
            copy.writeImmutableBuffer(data)
            retransmission.buffer.store(copy, ssrc: header.ssrc, sequenceNumber: header.sequenceNumber, at: now)
            if keyframe { media.keyframeForwarded(ssrc: header.ssrc) }
            // Each receiver gets the one layer of this sender its tile needs.
            let layer = route.ssrcs.layerIndex(of: header.ssrc) ?? 0
            layers.count(bytes: data.readableBytes, layer: layer, from: route.member)
            media.destinations(from: route.member, in: route.room, into: &output.layerDestinations)
            var count = 0
            for (member, address) in output.layerDestinations
            where layers.forwards(layer: layer, startsKeyframe: keyframe, from: route.member, to: member) {
                output.writeRTP(data, to: member, at: address)
                count += 1
            }
            output.forwarded += count
            if layers.hasSwitches { performLayerEffects(layers.takeDemandChanges()) }
            return
        }
        if let level {
            speakers[route.room, default: DominantSpeakerDetector()].record(level, from: route.member, at: now)
        }
        media.destinations(from: route.member, in: route.room, into: &output.layerDestinations)
        output.sendRTPToDestinations(data)
    }

    func bind(_ data: ByteBuffer, from remote: SocketAddress) {
        guard let request = try? BindRequest(parsing: Array(data.readableBytesView)) else {
            media.count(.malformed)
            return
        }
        let status = state.verifyBind(request)
        if status == .bound, request.isProbe {
            // Answered, nothing bound: the member's media stays where it is until it binds here.
        } else if status == .bound {
            let isNew = media.route(of: request.memberID)?.address != remote
            if isNew {
                logger.info("media bound", metadata: ["member": "\(request.memberID)", "address": "\(remote)"])
            }
            media.bind(member: request.memberID, to: remote)
            if isNew { requestFirstKeyframes(for: request.memberID) }
        } else {
            media.count(.badBind)
            // A spray of bad binds must not flood the log: one line per source address a minute, with a count.
            let source = remote.ipAddress ?? "\(remote)"
            if let heldBack = output.refusedBinds.admit(source, at: now) {
                logger.notice(
                    "bind refused",
                    metadata: [
                        "member": "\(request.memberID)", "status": "\(status)", "source": "\(source)",
                        "held_back": "\(heldBack)",
                    ])
            }
        }
        let ack = BindAcknowledgement(ssrc: request.ssrc, memberID: request.memberID, status: status).serialized()
        output.write(ByteBuffer(bytes: ack), to: remote)
    }

    /// `member` can receive from now on (its first bind, or a new address): every camera it gets is asked for a
    /// keyframe at once, so its pictures start without waiting out the keyframe throttle, which another member's
    /// request (a joiner a moment before) may have just started. A keyframe already on its way is not asked again;
    /// a member rebinding again within the interval goes through the throttle.
    func requestFirstKeyframes(for member: UInt32) {
        let at = now
        let first = media.mediaStarted(member: member, at: at)
        for (sender, layer) in layers.layersReceived(by: member) {
            guard state.members[sender]?.info.role == .broadcaster, let route = media.route(of: sender),
                let (owner, bytes) = media.keyframeRequest(for: route.ssrcs.videoLayer(layer), first: first, at: at)
            else { continue }
            send(bytes, toMember: owner)
        }
    }

    func handleRTCP(_ data: ByteBuffer, from remote: SocketAddress) {
        guard let packets = try? data.withUnsafeReadableBytes({ try RTCPPacket.parseCompound($0) }),
            let senderSSRC = packets.lazy.compactMap(\.senderSSRC).first
        else {
            media.count(.malformed)
            return
        }
        guard let route = media.sender(ssrc: senderSSRC, from: remote) else { return }
        let at = now
        for case .application(let app) in packets where app.name == ProbeRequest.name {
            probeDownlink(app, of: route, at: at)
        }
        // A keyframe request names the layer the receiver last saw; it is for the layer it gets or waits for.
        let requests = packets.compactMap { packet -> RTCPPacket? in
            guard case .pictureLossIndication(var pli) = packet, let owner = media.owner(of: pli.mediaSSRC),
                owner != route.member, let ownerRoute = media.route(of: owner),
                ownerRoute.ssrcs.layerIndex(of: pli.mediaSSRC) != nil
            else { return packet }
            guard let layer = layers.keyframeLayer(of: owner, for: route.member) else { return nil }
            pli.mediaSSRC = ownerRoute.ssrcs.videoLayer(layer)
            return .pictureLossIndication(pli)
        }
        for action in media.feedback(requests, from: route, at: at) {
            switch action {
            case .forwardToRoom:
                sendToNodes(data, of: route.room)
                media.destinations(from: route.member, in: route.room, into: &output.destinations)
                output.sendToDestinations(data)
            case .sendToMember(let member, let bytes):
                send(bytes, toMember: member)
            case .retransmit(let ssrc, let sequenceNumbers):
                answerNACK(ssrc: ssrc, sequenceNumbers, from: route.member, senderSSRC: route.ssrcs.audio) {
                    output.writeRTP($0, to: route.member, at: remote, urgent: true)
                }
            }
        }
    }

    /// Resends through `resend` what the retransmission buffer holds of `ssrc`'s lost packets; the rest was lost
    /// before the relay, and only the stream's owner can resend it (to the whole room): it gets a NACK for them.
    func answerNACK(
        ssrc: UInt32, _ sequenceNumbers: [UInt16], from requester: UInt32?, senderSSRC: UInt32,
        resend: (ByteBuffer) -> Void
    ) {
        let (held, missing) = retransmission.answer(ssrc: ssrc, sequenceNumbers, at: now)
        for packet in held { resend(packet) }
        if !missing.isEmpty, let owner = media.owner(of: ssrc), owner != requester {
            let nack = GenericNACK(senderSSRC: senderSSRC, mediaSSRC: ssrc, lost: missing)
            send(RTCPPacket.nack(nack).serialized(), toMember: owner)
            retransmission.nackForwarded()
        }
    }

    func send(_ bytes: [UInt8], toMember member: UInt32) {
        if let node = links.remoteNodes[member] {
            sendToNode(ByteBuffer(bytes: bytes), node: node)
            return
        }
        guard let address = media.route(of: member)?.address else { return }
        output.write(ByteBuffer(bytes: bytes), to: address)
        output.forwarded += 1
    }

    /// Each member bound here that asked (`JoinRequest.downlinkCounts`) is told how many RTP packets it was sent so
    /// far (`ForwardedCount`), behind them on the same path: its downlink estimate compares that with what arrived.
    func sendForwardedCounts() {
        for (member, sent) in output.sentTo where state.members[member]?.downlinkCounts == true {
            guard let route = media.route(of: member), let address = route.address else { continue }
            let count = ForwardedCount(mediaSSRC: route.ssrcs.audio, packets: sent.packets, bytes: sent.bytes)
            output.write(ByteBuffer(bytes: count.rtcpPacket.serialized()), to: address)
        }
    }

    /// Each member bound here that asked for counts and was sent media since its last mark gets one now: the relay's
    /// send time, behind that media on the same path (`SendTimeMark`), for its downlink's delay trend.
    func sendSendTimeMarks() {
        let sentAt = UInt64(max(0, now / .microseconds(1)))
        for member in downlinks.due(sentTo: output.sentTo, asked: { state.members[$0]?.downlinkCounts == true }) {
            guard let route = media.route(of: member), let address = route.address else { continue }
            let mark = SendTimeMark(mediaSSRC: route.ssrcs.audio, sentAt: sentAt)
            output.write(ByteBuffer(bytes: mark.rtcpPacket.serialized()), to: address)
        }
    }

    /// A member's request for a probe of its downlink (`ProbeRequest`): padded marks paced over 150 ms, every 5 ms
    /// while any probe is under way. A request naming another SSRC, or asked within a second of the last, is dropped
    /// and counted.
    func probeDownlink(_ app: ApplicationPacket, of route: MediaRouter<SocketAddress>.Route, at now: Duration) {
        guard let request = ProbeRequest(app), request.ssrc == route.ssrcs.audio else {
            media.count(.malformed)
            return
        }
        guard downlinks.request(request, from: route.member, at: now) else {
            media.count(.probeRefused)
            return
        }
        sendProbeMarks()
        guard probePacing == nil else { return }
        let core = NIOLoopBound(self, eventLoop: loop)
        probePacing = loop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .milliseconds(5)) { _ in
            core.value.sendProbeMarks()
        }
    }

    /// A receiver's downlink estimate (kbit/s, nil: no limit) paces the video sent to it (`ReceiverPacing`); the 5 ms
    /// release runs while any receiver is paced.
    func paceDownlink(of member: UInt32, kbps: Int?) {
        let waiting = output.pacing.setDownlink(kbps, of: member)
        if !waiting.isEmpty, let address = media.route(of: member)?.address {
            output.writePaced(waiting, to: member, at: address)
            output.flush()
        }
        if output.pacing.isEmpty {
            receiverPacing?.cancel()
            receiverPacing = nil
        } else if receiverPacing == nil {
            let core = NIOLoopBound(self, eventLoop: loop)
            receiverPacing = loop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .milliseconds(5)) { _ in
                core.value.releasePaced()
            }
        }
    }

    /// The paced video that may leave now.
    func releasePaced() {
        let released = output.pacing.release(at: now.milliseconds)
        for (member, packets) in released {
            guard let address = media.route(of: member)?.address else { continue }
            output.writePaced(packets, to: member, at: address)
        }
        if !released.isEmpty { output.flush() }
    }

    /// The probe marks due now; the pacing stops when no probe is under way.
    func sendProbeMarks() {
        for (member, marks) in downlinks.owed(at: now) {
            guard let address = media.route(of: member)?.address else { continue }
            for mark in marks { output.write(ByteBuffer(bytes: mark.rtcpPacket.serialized()), to: address) }
        }
        output.flush()
        if downlinks.probes.isEmpty {
            probePacing?.cancel()
            probePacing = nil
        }
    }

    /// Each member's transport-wide feedback about what arrived from it since the last, about its audio stream.
    func sendUplinkFeedback() {
        let due = uplinks.due { media.route(of: $0)?.ssrcs.audio }
        for (member, feedback) in due {
            guard let raw = try? feedback.raw(), let address = media.route(of: member)?.address else { continue }
            output.write(ByteBuffer(bytes: RTCPPacket.serializeCompound([.other(raw)])), to: address)
        }
    }
}

/// What the forwarding path reads of an RTP packet, in one pass over its bytes.
struct ParsedRTP {
    var header: RTPHeaderView
    /// It starts a VP8 keyframe.
    var keyframe: Bool
    /// Its audio level (RFC 6464), when it carries one.
    var level: AudioLevelIndication?
    /// Its sender's transport-wide sequence number, when it carries one.
    var transportSequence: UInt16?
}
