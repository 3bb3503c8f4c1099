import NIOCore
import ParleyRoom
import ParleyWire

/// The camera's capture and VP8 encode, on a thread of their own. They take milliseconds a frame (drawing the
/// synthetic picture alone took 3.5 ms at 640x360 here, a third of the media loop's time with the encode) and used
/// to run on the media loop, which also mixes each 20 ms speaker block just in time: a block asked for during a
/// frame came late and the speaker played silence instead (69 such clicks in the 30 s sound call test on an idle
/// machine). Work is queued to the thread in order; what comes back to the media loop are values.
final class VideoSenderThread: Sendable {
    /// Read only on its loop (the box checks); the hand-over wrapper is what crossed to it once.
    private let sender: NIOLoopBoundBox<HandOver>
    private struct HandOver: @unchecked Sendable { let sender: VideoSender }

    /// Moves `sender` onto `loop`; from then on it is touched only there. The caller made it (and its sources) for
    /// this and keeps no reference: the compiler cannot see that through the engine's own methods that built the
    /// sources, hence the one unchecked hand-over.
    init(_ sender: VideoSender, loop: any EventLoop) {
        self.sender = NIOLoopBoundBox.makeBoxSendingValue(HandOver(sender: sender), eventLoop: loop)
    }

    /// Runs `body` on the video thread, after everything queued before it.
    func run(_ body: @escaping @Sendable (VideoSender) -> Void) {
        let sender = self.sender
        sender.eventLoop.execute { body(sender.value.sender) }
    }
}

/// The video sender's counters and report state after its latest frame or command, as the media loop sees them.
struct VideoSenderSnapshot: Sendable {
    var framesSent = 0
    var framesCaptured = 0
    var keyframesSent = 0
    var packetsSent = 0
    var bytesSent = 0
    var cameraFramesSent = 0
    var framesSentPerLayer: [Int] = []
    var activeLayers: [Bool] = []
    var layerSizes: [VideoLayerSize] = []
    /// The packetizers of the layers being sent, and the media time they stand at: what a sender report needs.
    var sentLayers: [RTPPacketizer] = []
    var mediaTime: Duration = .zero

    /// A sender report for each layer being sent.
    func senderReports(ntpTimestamp: UInt64) -> [SenderReport] {
        sentLayers.map { $0.senderReport(ntpTimestamp: ntpTimestamp, mediaTime: mediaTime) }
    }
}

/// What one video tick produced on the video thread.
struct CapturedVideoFrame: Sendable {
    /// Bumped for each sender: a result of a sender replaced since (a rejoin) is ignored.
    var generation: Int
    var size: VideoSize?
    var packets: [RTPPacket] = []
    var failure: String?
    var snapshot: VideoSenderSnapshot
}
