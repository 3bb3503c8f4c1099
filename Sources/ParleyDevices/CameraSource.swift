import Dispatch
import Foundation
import ParleyMedia
import Synchronization

/// A real camera as a `VideoSource`: a capture thread reads the camera, converts each frame to I420 at the profile
/// size (`CameraFrameConverter`) and keeps only the newest; `nextFrame()` never blocks and returns that newest frame
/// (or the previous one again when the camera has not delivered since, or black before the first frame).
///
/// A capture error (unplugged, no picture for `stallTimeout`, too many bad frames in a row) stops the thread; it is
/// reported once through `onFailure` and from then on `nextFrame()` throws it, so the caller can switch sources and
/// say why.
/// Single bad frames (a damaged JPEG) are skipped and counted.
public final class CameraSource: VideoSource {
    /// Bad frames in a row after which the camera counts as failed.
    public static let badFrameLimit = 30
    /// How long the capture thread waits in one read, so `stop()` is answered promptly.
    static let readTimeout = Duration.milliseconds(100)

    /// The camera's name, for notices.
    public let name: String
    /// The format the camera is capturing in (as negotiated).
    public let format: CameraFormat
    /// Width of the frames produced (the profile's).
    public let width: Int
    /// Height of the frames produced (the profile's).
    public let height: Int
    /// Media time between frames in microseconds.
    public let frameIntervalMicros: Int64

    private let loop: CaptureLoop
    private var frameIndex: Int64 = 0
    private let black: VideoFrame

    /// Finds the camera `name` (or the first one when nil) through `layer`, chooses its best format for the profile
    /// and starts capturing. Throws `noCamera`, `unknownCamera`, `noUsableFormat`, `busy`, `permissionDenied`...
    public convenience init(
        named name: String?, layer: any CameraDeviceLayer = systemCameras(), width: Int, height: Int, fps: Int,
        stallTimeout: Duration = .seconds(5), onFailure: @escaping @Sendable (CameraError) -> Void = { _ in }
    ) throws(CameraError) {
        let camera = try selectCamera(name, from: layer.cameras())
        let format = try chooseCameraFormat(for: camera, width: width, height: height, fps: fps)
        let stream = try layer.open(camera, format: format)
        self.init(
            stream: stream, name: camera.name, width: width, height: height, fps: fps, stallTimeout: stallTimeout,
            onFailure: onFailure)
    }

    /// Starts capturing from an open stream, producing `width`x`height` frames at a nominal `fps`. The source owns
    /// the stream from now on and closes it when stopped. `onFailure` runs once, on the capture thread.
    public init(
        stream: any CameraStream, name: String, width: Int, height: Int, fps: Int,
        stallTimeout: Duration = .seconds(5), onFailure: @escaping @Sendable (CameraError) -> Void = { _ in }
    ) {
        precondition(width > 0 && height > 0 && fps > 0, "profile size and rate must be positive")
        self.name = name
        self.format = stream.format
        self.width = width
        self.height = height
        self.frameIntervalMicros = 1_000_000 / Int64(fps)
        self.black = VideoFrame(width: width, height: height, fillY: 16)
        loop = CaptureLoop(
            name: name, stream: stream, converter: CameraFrameConverter(width: width, height: height),
            stallTimeout: stallTimeout, onFailure: onFailure)
        loop.start(name: "camera \(name)")
    }

    deinit { loop.stop() }

    /// The newest frame, stamped with this call's media time (frame index times the interval). Never blocks.
    public func nextFrame() throws -> VideoFrame {
        let (latest, failure) = loop.state.withLock { ($0.latest, $0.failure) }
        if let failure { throw failure }
        var frame = latest ?? black
        frame.timestampMicros = frameIndex * frameIntervalMicros
        frameIndex += 1
        return frame
    }

    /// Frames converted so far.
    public var framesCaptured: Int { loop.state.withLock { $0.captured } }
    /// Frames skipped because they could not be read.
    public var badFrames: Int { loop.state.withLock { $0.bad } }
    /// True once a frame has arrived.
    public var hasFrame: Bool { loop.state.withLock { $0.latest != nil } }

    /// Stops capturing and closes the camera (waits for the capture thread, at most about one read timeout).
    public func stop() { loop.stop() }
}

/// The capture thread's side. The stream and converter are touched only by the capture thread once it has started
/// (and by `stop()` after it has finished), which is why this is `@unchecked Sendable`; shared results go through
/// `state`.
private final class CaptureLoop: @unchecked Sendable {
    struct State {
        var latest: VideoFrame?
        var failure: CameraError?
        var captured = 0
        var bad = 0
        var stopRequested = false
        var running = false
    }

    let state = Mutex(State())
    private let name: String
    private let stream: any CameraStream
    private let stallTimeout: Duration
    private let converter: CameraFrameConverter
    private let onFailure: @Sendable (CameraError) -> Void
    private let finished = DispatchSemaphore(value: 0)

    init(
        name: String, stream: any CameraStream, converter: CameraFrameConverter, stallTimeout: Duration,
        onFailure: @escaping @Sendable (CameraError) -> Void
    ) {
        self.name = name
        self.stream = stream
        self.stallTimeout = stallTimeout
        self.converter = converter
        self.onFailure = onFailure
    }

    func start(name: String) {
        state.withLock { $0.running = true }
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    private func run() {
        var badInARow = 0
        let clock = ContinuousClock()
        var lastDelivery = clock.now
        while !state.withLock({ $0.stopRequested }) {
            do throws(CameraError) {
                guard let raw = try stream.nextFrame(timeout: CameraSource.readTimeout) else {
                    if lastDelivery.duration(to: clock.now) >= stallTimeout {
                        throw CameraError.stalled(name: name, seconds: Int(stallTimeout.components.seconds))
                    }
                    continue
                }
                lastDelivery = clock.now
                let frame = try converter.convert(raw)
                badInARow = 0
                state.withLock {
                    $0.latest = frame
                    $0.captured += 1
                }
            } catch {
                if case .badFrame = error {
                    badInARow += 1
                    state.withLock { $0.bad += 1 }
                    if badInARow < CameraSource.badFrameLimit { continue }
                }
                state.withLock { $0.failure = error }
                onFailure(error)
                break
            }
        }
        stream.close()
        finished.signal()
    }

    /// Asks the thread to stop and waits for it; safe to call more than once.
    func stop() {
        let wasRunning = state.withLock { state in
            defer { state.running = false }
            state.stopRequested = true
            return state.running
        }
        if wasRunning { finished.wait() }
    }
}
