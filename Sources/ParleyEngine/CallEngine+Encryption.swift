import ParleyRoom
import ParleySecurity
import ParleyWire

// End-to-end encryption of media and chat (SFrame, RFC 9605). Camera video and sound are sealed a whole frame at a
// time, so that a browser guest's encoded-frame transform seals and opens exactly the same bytes (ParleySecurity's
// SealedFrame.swift says what of a VP8 frame stays clear: the keyframe bit, and a keyframe's size); the video sender
// seals each encoded frame before it is packetized, and a peer's frame is opened after its jitter buffer completed it.
// A shared terminal's updates (native clients only) are sealed per RTP payload as before:
//
//   RTP header (12 bytes)           clear: the relay routes by SSRC, answers NACKs by sequence number
//   VP8-style payload descriptor    clear: needed to reassemble frames
//   first byte of a frame           clear: the keyframe flag, so the relay can satisfy keyframe requests
//   everything else                 SFrame: header || AES-GCM ciphertext || 16-byte tag, the clear parts its metadata

/// After this many packets in a row from one peer fail to decrypt, its tile says it uses another secret.
let undecryptableAfter = 8

extension EngineCore {
    /// The packet as it leaves for an encrypted room: sound sealed whole, a shared terminal's payload sealed per
    /// packet, camera video as it is (its frames were sealed before packetizing); unchanged without encryption.
    func sealed(_ packet: RTPPacket) -> RTPPacket? {
        guard let sealer = media.sealer, packet.header.payloadType != MediaPayloadType.vp8 else { return packet }
        var sealedPacket = packet
        do {
            if packet.header.payloadType == MediaPayloadType.share {
                let clear = clearPrefix(ofShare: packet)
                let metadata = RTPPacket(header: packet.header, payload: []).serialized() + packet.payload[..<clear]
                let body = try sealer.seal(Array(packet.payload[clear...]), stream: .video, metadata: metadata)
                sealedPacket.payload = Array(packet.payload[..<clear]) + body
            } else {
                sealedPacket.payload = try sealer.sealAudioFrame(packet.payload)
            }
        } catch {
            logger.error("could not encrypt a packet; not sending it", metadata: ["error": "\(error)"])
            return nil
        }
        return sealedPacket
    }

    /// The packet with its payload opened (camera video passes: its frames are opened whole); nil (counted against
    /// the peer) when it does not decrypt.
    func opened(_ packet: RTPPacket, from peer: PeerReceiver) -> RTPPacket? {
        guard remote.opener != nil, packet.header.payloadType != MediaPayloadType.vp8 else { return packet }
        var openedPacket = packet
        do throws(SFrameError) {
            if packet.header.payloadType == MediaPayloadType.share {
                let clear = clearPrefix(ofShare: packet)
                let metadata = RTPPacket(header: packet.header, payload: []).serialized() + packet.payload[..<clear]
                let plain = try remote.opener!.open(Array(packet.payload[clear...]), metadata: metadata).plaintext
                openedPacket.payload = Array(packet.payload[..<clear]) + plain
            } else {
                openedPacket.payload = try remote.opener!.openAudioFrame(packet.payload)
            }
        } catch {
            notOpened(error, from: peer)
            return nil
        }
        decrypted(from: peer)
        return openedPacket
    }

    /// A peer's completed VP8 frame, opened; nil (counted against the peer, a keyframe asked for) when it does not
    /// decrypt.
    func opened(_ frame: VP8Frame, from peer: PeerReceiver) -> VP8Frame? {
        guard remote.opener != nil else { return frame }
        do throws(SFrameError) {
            var openedFrame = frame
            openedFrame.data = try remote.opener!.openVideoFrame(frame.data)
            decrypted(from: peer)
            return openedFrame
        } catch {
            notOpened(error, from: peer)
            peer.videoBuffer.decoderNeedsKeyframe()
            return nil
        }
    }

    private func notOpened(_ error: SFrameError, from peer: PeerReceiver) {
        switch error {
        case .replayedCounter, .counterTooOld:
            break  // a duplicate (a relay retransmission that crossed the original): not the secret's fault
        default:
            failedToDecrypt(from: peer)
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

    /// How many leading bytes of a shared terminal's payload stay clear: its descriptor, and a frame's first byte.
    private func clearPrefix(ofShare packet: RTPPacket) -> Int {
        guard let (descriptor, offset) = try? VP8PayloadDescriptor.parse(packet.payload) else { return 0 }
        return min(packet.payload.count, offset + (descriptor.startsFrame ? 1 : 0))
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
