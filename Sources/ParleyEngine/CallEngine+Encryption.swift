import ParleyRoom
import ParleySecurity
import ParleyWire

// End-to-end encryption of media and chat (SFrame, RFC 9605, per RTP payload). What stays in the clear, and why:
//
//   RTP header (12 bytes)           clear: the relay routes by SSRC, answers NACKs by sequence number
//   VP8 payload descriptor          clear: needed to reassemble frames; says nothing about the picture
//   first VP8 byte of a frame       clear: the keyframe bit, so the relay can satisfy keyframe requests
//   everything else                 SFrame: header || AES-GCM ciphertext || 16-byte tag
//
// The clear parts and the RTP header are the SFrame metadata, so they are authenticated: a relay that relabels a
// packet (another SSRC, timestamp or sequence number) makes it fail to decrypt rather than play in the wrong place.

/// After this many packets in a row from one peer fail to decrypt, its tile says it uses another secret.
let undecryptableAfter = 8

extension EngineCore {
    /// The packet with its payload sealed for the room; unchanged without encryption.
    func sealed(_ packet: RTPPacket) -> RTPPacket? {
        guard let sealer = media.sealer else { return packet }
        let (clear, stream) = clearPrefix(of: packet)
        var sealedPacket = packet
        do {
            let metadata = RTPPacket(header: packet.header, payload: []).serialized() + packet.payload[..<clear]
            let body = try sealer.seal(Array(packet.payload[clear...]), stream: stream, metadata: metadata)
            sealedPacket.payload = Array(packet.payload[..<clear]) + body
        } catch {
            logger.error("could not encrypt a packet; not sending it", metadata: ["error": "\(error)"])
            return nil
        }
        return sealedPacket
    }

    /// The packet with its payload opened; nil (counted against the peer) when it does not decrypt.
    func opened(_ packet: RTPPacket, from peer: PeerReceiver) -> RTPPacket? {
        guard remote.opener != nil else { return packet }
        let (clear, _) = clearPrefix(of: packet)
        let metadata = RTPPacket(header: packet.header, payload: []).serialized() + packet.payload[..<clear]
        do {
            let plain = try remote.opener!.open(Array(packet.payload[clear...]), metadata: metadata).plaintext
            var openedPacket = packet
            openedPacket.payload = Array(packet.payload[..<clear]) + plain
            decrypted(from: peer)
            return openedPacket
        } catch {
            switch error {
            case .replayedCounter, .counterTooOld:
                break  // a duplicate (a relay retransmission that crossed the original): not the secret's fault
            default:
                failedToDecrypt(from: peer)
            }
            return nil
        }
    }

    /// A chat line as the relay should carry it: sealed when the call is encrypted.
    func chatMessage(_ text: String) -> ChatSend {
        guard let sealer = media.sealer else { return ChatSend(text: text) }
        do {
            return ChatSend(text: "", sealed: try sealer.sealChat(text))
        } catch {
            logger.error("could not encrypt a chat line", metadata: ["error": "\(error)"])
            return ChatSend(text: "", sealed: "")  // refused by the relay, never sent in the clear
        }
    }

    /// The text of a delivered chat line, nil when it cannot be read (and the peer is flagged).
    func chatText(_ delivery: ChatDelivery) -> String? {
        guard remote.opener != nil else {
            // An encrypted room never carries plain text; a plain room never sealed lines.
            return delivery.sealed == nil ? delivery.text : nil
        }
        guard let sealed = delivery.sealed else {
            emit(.alert(.message("\(delivery.name) sent a chat line without encryption; it was not shown")))
            return nil
        }
        do {
            let text = try remote.opener!.openChat(sealed)
            if let peer = remote.peers[delivery.from] { decrypted(from: peer) }
            return text
        } catch {
            if let peer = remote.peers[delivery.from] {
                peer.decryptFailuresInARow = undecryptableAfter - 1
                failedToDecrypt(from: peer)
            }
            return nil
        }
    }

    /// How many leading payload bytes stay clear, and which of the sender's streams the packet belongs to.
    private func clearPrefix(of packet: RTPPacket) -> (Int, EncryptedStream) {
        // A shared terminal's frames are framed as VP8's, their flags byte where VP8 has its keyframe bit.
        let framed =
            packet.header.payloadType == MediaPayloadType.vp8 || packet.header.payloadType == MediaPayloadType.share
        guard framed else { return (0, .audio) }
        guard let (descriptor, offset) = try? VP8PayloadDescriptor.parse(packet.payload) else {
            return (0, .video)
        }
        return (min(packet.payload.count, offset + (descriptor.startsFrame ? 1 : 0)), .video)
    }

    private func decrypted(from peer: PeerReceiver) {
        peer.decryptFailuresInARow = 0
        if peer.cannotDecrypt {
            peer.cannotDecrypt = false
            emit(.cannotDecrypt(peer.participant, false))
        }
    }

    private func failedToDecrypt(from peer: PeerReceiver) {
        peer.decryptFailures += 1
        peer.decryptFailuresInARow += 1
        if peer.decryptFailuresInARow >= undecryptableAfter && !peer.cannotDecrypt {
            peer.cannotDecrypt = true
            emit(.cannotDecrypt(peer.participant, true))
        }
    }
}

extension CallConfiguration {
    /// Signaling is plain `ws://` (`--insecure`): the header says so.
    public var insecureTransport: Bool {
        if case .insecure = signalingSecurity { return true }
        return false
    }
}
