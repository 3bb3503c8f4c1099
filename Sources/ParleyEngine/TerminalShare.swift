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
    }

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

    /// The update to send at `milliseconds` (the engine's clock), nil when nothing changed; `retryIn` is set when
    /// changes wait for the rate limit.
    func update(at milliseconds: Double) -> (update: ShareUpdate?, pending: Bool) {
        state.withLock { state in
            guard let screen = state.screen else { return (nil, false) }
            let update = state.session.update(for: screen, at: milliseconds)
            return (update, update == nil && (state.session.sent != screen || state.session.wantsFullScreen))
        }
    }

    func requestFullScreen() { state.withLock { $0.session.requestFullScreen() } }

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
    }
}
