import NIOCore
import ParleyWebRTC
import ParleyWire

/// Browser members (docs/browser.md): their transports set up at join, their datagrams, their receive slots kept
/// to the room's members, and their leaving.
extension RelayCore {
    /// Carries out what the browsers' transports led to.
    func perform(_ outcomes: [BrowserMembers.Outcome]) {
        for outcome in outcomes {
            switch outcome {
            case .send(let bytes, let address):
                output.udp.write(
                    AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)), promise: nil)
            case .connected(let member, let standIn):
                logger.info("browser media connected", metadata: ["member": "\(member)"])
                media.bind(member: member, to: standIn)
                requestFirstKeyframes(for: member)
            case .rtp(let packet, let standIn):
                handleDatagram(AddressedEnvelope(remoteAddress: standIn, data: ByteBuffer(bytes: packet)))
            case .arrived(let member, let sequence):
                uplinks.received(sequence, from: member, at: now)
            case .rtcp(let compound, let standIn):
                handleRTCP(ByteBuffer(bytes: compound), from: standIn)
            case .failed(let member, let reason):
                dropBrowser(member, reason: "your browser's media connection failed: \(reason)")
            }
        }
    }

    /// A browser member came into `room`: its transport set up (the answer goes in its `joined`), the room's others
    /// put in its slots; and in every other browser's page in the room, the newcomer.
    func browserMemberAdded(_ id: UInt32, _ member: RelayState.Member, in room: String) {
        let others = (state.rooms[room]?.members ?? []).filter { $0 != id }
        if member.isLocal, let offer = member.browserOffer {
            let host = member.connection.flatMap { signalingChannels.byID[$0]?.localAddress?.ipAddress } ?? "127.0.0.1"
            do {
                _ = try browsers.add(
                    member: id, offer: offer, ssrcs: member.info.ssrcs, host: host, udpPort: state.udpPort, now: now)
                for peer in others {
                    guard let block = state.members[peer]?.info.ssrcs.block else { continue }
                    browsers.show(peer, block: block, to: id)
                }
            } catch {
                browserSetupFailures[id] = "\(error)"
            }
        }
        for other in others where browsers.browsers[other] != nil {
            if browsers.show(id, block: member.info.ssrcs.block, to: other) { sendSlots(to: other) }
        }
    }

    /// A member left `room`: out of every browser's slots there (a peer waiting for one gets it); a browser's own
    /// transport closed.
    func browserMemberRemoved(_ id: UInt32, from room: String) {
        perform(browsers.remove(id))
        browserSetupFailures[id] = nil
        for other in browsers.browsers.keys.sorted() where browsers.hide(id, from: other) {
            for peer in browsers.waiting(for: other) {
                guard let block = state.members[peer]?.info.ssrcs.block else { continue }
                browsers.unqueue(peer, of: other)
                browsers.show(peer, block: block, to: other)
            }
            sendSlots(to: other)
        }
    }

    /// A browser member's `joined`: sent with the relay's SDP answer and followed by its slots; or, when its
    /// transport could not be set up, an error instead and the member let go. False for a Parley client's.
    func browserJoined(_ joined: JoinedRoom, on targets: [ConnectionID]) -> Bool {
        let id = joined.you.id
        if let reason = browserSetupFailures.removeValue(forKey: id) {
            dropBrowser(id, reason: "the relay could not set up your browser's media: \(reason)")
            return true
        }
        guard let browser = browsers.browsers[id] else { return false }
        var answered = joined
        answered.media.webrtc = browser.answer
        send(.joined(answered), to: targets)
        sendSlots(to: id)
        return true
    }

    /// Tells a browser member which peer each of its slots carries.
    func sendSlots(to member: UInt32) {
        guard let connection = state.members[member]?.connection, let slots = browsers.slots(of: member) else { return }
        send(.slots(slots), to: [connection])
    }

    /// A browser member whose transport failed: told why, its connection closed, and it leaves the room (after the
    /// actions under way, so the others hear of it joining before they hear of it leaving).
    func dropBrowser(_ member: UInt32, reason: String) {
        logger.notice("browser member dropped", metadata: ["member": "\(member)", "reason": "\(reason)"])
        if let connection = state.members[member]?.connection {
            perform([.send(.error(SignalingError(.mediaFailed, reason)), to: [connection]), .close(connection)])
        }
        let core = NIOLoopBound(self, eventLoop: loop)
        loop.execute {
            let core = core.value
            core.perform(core.state.remove(member, reason: .dropped))
        }
    }
}
