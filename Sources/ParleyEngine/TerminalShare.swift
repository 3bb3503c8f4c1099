import Foundation
import NIOCore
import ParleyRoom
import ParleyWire
import Synchronization

/// A terminal shared into the call in place of a camera (`parley share`): the sharer's emulator publishes each new
/// screen here, and the engine sends numbered updates from it, at most 30 a second, with a full screen whenever a
/// viewer asks (a keyframe request). Typing a controller sends is handed to `onInput`. Thread-safe.
public final class TerminalShareFeed: Sendable {
    private struct State {
        var screen: TerminalScreen?
        var session = ShareSession()
        var wake: (@Sendable () -> Void)?
        var input: [UInt8] = []
        var inputDropped = 0
        var controller: String?
    }

    /// Typing held for the program at most; a controller typing faster than it reads loses the rest (counted).
    public static let maxPendingInput = 4_096

    private let state = Mutex(State())

    public init() {}

    /// The shared program's screen now; the engine is woken to send what changed.
    public func publish(_ screen: TerminalScreen) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.screen != screen else { return nil }
            state.screen = screen
            return state.wake
        }
        wake?()
    }

    /// The screen last published.
    public var screen: TerminalScreen? { state.withLock { $0.screen } }

    /// The update to send at `milliseconds` (the engine's clock), nil when nothing changed; `pending` when changes
    /// wait for the rate limit (the caller comes back).
    func update(at milliseconds: Double) -> (update: ShareUpdate?, pending: Bool) {
        state.withLock { state in
            guard let screen = state.screen else { return (nil, false) }
            let update = state.session.update(for: screen, at: milliseconds)
            return (update, update == nil && (state.session.sent != screen || state.session.wantsFullScreen))
        }
    }

    func requestFullScreen() { state.withLock { $0.session.requestFullScreen() } }

    /// Keys the member let type sent, for the program.
    func type(_ bytes: [UInt8]) {
        state.withLock { state in
            let room = max(0, Self.maxPendingInput - state.input.count)
            state.input += bytes.prefix(room)
            state.inputDropped += max(0, bytes.count - room)
        }
    }

    /// The typing waiting for the program, taken.
    public func takeInput() -> [UInt8] {
        state.withLock { state in
            defer { state.input.removeAll(keepingCapacity: true) }
            return state.input
        }
    }

    /// Who may type in the terminal now (their name), nil for nobody.
    public var controller: String? { state.withLock { $0.controller } }

    func setController(_ name: String?) { state.withLock { $0.controller = name } }

    func setWake(_ wake: (@Sendable () -> Void)?) { state.withLock { $0.wake = wake } }
}

/// This member's shared terminal on its way out: updates framed (`ShareFrame`) and packetized as video on the
/// member's video SSRC.
struct OwnShare {
    let feed: TerminalShareFeed
    var payloader: VP8Payloader
    var packetizer: RTPPacketizer
    let startedAt: Duration
    /// A send held back by the rate limit is due.
    var retryScheduled = false
    /// The member let type in the terminal, if any.
    var controller: UInt32?
    var updatesSent = 0
    var fullScreensSent = 0
    var bytesSent = 0
}

extension EngineCore {
    /// Starts sending the shared terminal on the member's video SSRC.
    func startShare(_ feed: TerminalShareFeed, ssrcs: MemberSSRCs) throws {
        ownShare = OwnShare(
            feed: feed,
            payloader: try VP8Payloader(initialPictureID: UInt16.random(in: 0...0x7FFF, using: &random)),
            packetizer: RTPPacketizer(
                ssrc: ssrcs.video, payloadType: MediaPayloadType.share, clockRate: MediaClockRate.video,
                initialSequenceNumber: UInt16.random(in: 0...UInt16.max, using: &random),
                initialTimestamp: UInt32.random(in: 0...UInt32.max, using: &random)),
            startedAt: now)
        feed.requestFullScreen()
        guard let bound else { return }
        let loop = self.loop
        feed.setWake { loop.execute { bound.value.shareTick() } }
    }

    /// Sends what changed on the shared screen, or comes back when the rate limit lets it.
    func shareTick() {
        guard var share = ownShare, sendsMedia else { return }
        let (update, pending) = share.feed.update(at: now.milliseconds)
        if let update {
            let frame = ShareFrame.encode(update)
            do {
                let payloads = try share.payloader.payloads(for: frame)
                let packets = share.packetizer.packetize(payloads, at: now - share.startedAt, markLast: true)
                let at = now
                for packet in packets { ownVideo.resends.sent(packet, at: at) }
                share.updatesSent += 1
                if update.kind == .fullScreen { share.fullScreensSent += 1 }
                share.bytesSent += frame.count
                ownShare = share
                send(packets)
            } catch {
                logger.error("could not packetize a share update", metadata: ["error": "\(error)"])
            }
        }
        guard pending, !share.retryScheduled, let bound else { return }
        ownShare?.retryScheduled = true
        loop.scheduleTask(in: .milliseconds(Int64(1_000 / ShareSession.maxUpdatesPerSecond) + 1)) {
            bound.value.ownShare?.retryScheduled = false
            bound.value.shareTick()
        }
    }

    /// A viewer needs the whole screen (it joined, or lost an update).
    func shareFullScreenRequested() {
        guard let share = ownShare else { return }
        share.feed.requestFullScreen()
        shareTick()
    }

    /// A complete frame of a peer's shared terminal: applied to its screen and shown; one that does not apply asks
    /// for a full screen.
    func receiveShareFrame(_ frame: VP8Frame, from peer: PeerReceiver, at: Duration) {
        guard let screen = peer.share.receive(frame.data) else {
            peer.decodeErrors += 1
            peer.videoBuffer.decoderNeedsKeyframe()
            return
        }
        peer.countShareFrame(at: at)
        let size = VideoSize(width: screen.columns, height: screen.rows)
        if !peer.sawFirstFrame || peer.lastFrameSize != size {
            peer.sawFirstFrame = true
            emit(.firstRemoteFrame(peer.participant, size: size))
        }
        peer.lastFrameSize = size
        videoSink?.deliver(screen, from: peer.participant)
        if recording.recorder != nil { recordShare(screen, from: peer) }
    }
}

extension EngineCore {
    /// The sharer gives typing to a member, or takes it back: only a grant from the person this terminal belongs to
    /// (same name, same account, not a terminal) counts; the room is told who may type.
    func controlGranted(_ grant: ControlGrant) {
        guard let share = ownShare, let you = joined?.you, grant.terminal == you.id, let from = grant.from,
            let sharer = remote.peers[from]?.info, !sharer.isTerminal,
            sharer.name.lowercased() == you.name.lowercased(), sharer.account == you.account
        else {
            logger.notice(
                "a grant of typing not from this terminal's sharer was ignored",
                metadata: ["from": "\(grant.from ?? 0)"])
            return
        }
        let controller = grant.to == 0 ? nil : remote.peers[grant.to]?.info
        guard grant.to == 0 || controller.map({ !$0.isTerminal }) == true else { return }
        setShareController(controller, share: share)
    }

    func setShareController(_ member: MemberInfo?, share: OwnShare) {
        ownShare?.controller = member?.id
        share.feed.setController(member?.label)
        signalingLink.connection?.send(.controller(ControllerChange(controller: member?.id ?? 0)))
        logger.info("typing in the shared terminal", metadata: ["controller": "\(member?.label ?? "nobody")"])
    }

    /// Keys for this shared terminal: kept for the program when they come from the member let type.
    func typed(_ typing: TerminalTyping) {
        guard let share = ownShare, let controller = share.controller, typing.from == controller else { return }
        let text: String?
        if let sealed = typing.sealed {
            text = try? remote.opener?.openChat(sealed)
        } else {
            text = remote.opener == nil ? typing.keys : nil  // an encrypted room never takes plain keys
        }
        guard let text, let data = Data(base64Encoded: text), data.count <= TerminalTyping.maxKeyBytes else { return }
        share.feed.type(Array(data))
    }

    /// A member left: if they were the one typing, nobody is now.
    func shareMemberLeft(_ id: UInt32) {
        guard let share = ownShare, share.controller == id else { return }
        setShareController(nil, share: share)
    }

    /// Keys this member typed for a shared terminal it was let type in, sealed in an encrypted room.
    func typeIntoShare(_ terminal: ParticipantID, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let chunk = bytes[offset..<min(bytes.count, offset + TerminalTyping.maxKeyBytes)]
            offset += chunk.count
            let text = Data(chunk).base64EncodedString()
            var typing = TerminalTyping(terminal: terminal.rawValue, keys: text)
            if let sealer = media.sealer {
                guard let sealed = try? sealer.sealChat(text) else { return }
                typing = TerminalTyping(terminal: terminal.rawValue, keys: "", sealed: sealed)
            }
            signalingLink.connection?.send(.typing(typing))
        }
    }
}
