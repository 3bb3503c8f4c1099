import Foundation
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import Synchronization
import Testing

@testable import ParleyDevices

/// Records `onFailure` calls from the capture thread.
final class FailureLog: Sendable {
    private let errors = Mutex<[CameraError]>([])
    var all: [CameraError] { errors.withLock { $0 } }
    var record: @Sendable (CameraError) -> Void { { error in self.errors.withLock { $0.append(error) } } }
}

/// A scripted camera stream: hands out its script in order, then nothing (waiting out each timeout).
final class ScriptedStream: CameraStream, @unchecked Sendable {
    enum Step {
        case frame(RawCameraFrame)
        case error(CameraError)
        /// The read takes this long (a camera warming up), then returns nothing.
        case pause(Duration)
    }

    let format: CameraFormat
    private let script = Mutex<[Step]>([])
    private let closedFlag = Mutex(false)
    var closed: Bool { closedFlag.withLock { $0 } }

    init(format: CameraFormat, script: [Step]) {
        self.format = format
        self.script.withLock { $0 = script }
    }

    func nextFrame(timeout: Duration) throws(CameraError) -> RawCameraFrame? {
        let step: Step? = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        switch step {
        case .frame(let frame): return frame
        case .error(let error): throw error
        case .pause(let duration):
            Self.sleep(duration)
            return nil
        case nil:
            Self.sleep(timeout)
            return nil
        }
    }

    func close() { closedFlag.withLock { $0 = true } }

    /// Device simulation: a camera read blocks like V4L2's poll, on `CameraSource`'s own capture thread (the only
    /// caller of `nextFrame(timeout:)` here), never on a test's.
    private static func sleep(_ duration: Duration) {
        Thread.sleep(
            forTimeInterval: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}

@Suite("Camera source", .lane(.blocking))
struct CameraSourceTests {
    static let format = CameraFormat(pixelFormat: .yuyv, width: 64, height: 48, fps: 30)

    /// A stall timeout no test run reaches, for the tests that are not about stalls: their camera gives its script and
    /// then nothing, and a test task woken late (a build beside the tests holds the runtime's threads) must read what
    /// it waited for before the source calls that silence a stall.
    static let noStall = Duration.seconds(120)

    static func yuyvFrame(_ picture: VideoFrame) -> RawCameraFrame {
        RawCameraFrame(format: format, bytesPerLine: 128, bytes: CameraFixtures.yuyv(picture, bytesPerLine: 128))
    }

    @Test("frames are converted, scaled to the profile and stamped with media time")
    func convertsAndScales() async throws {
        let reference = CameraFixtures.reference
        let stream = ScriptedStream(format: Self.format, script: [.frame(Self.yuyvFrame(reference))])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 32, height: 24, fps: 25, stallTimeout: Self.noStall)
        try await waitUntil("the first frame", timeout: .seconds(5), every: .milliseconds(5)) { source.hasFrame }
        var expected = reference.scaled(width: 32, height: 24)
        expected.timestampMicros = 0
        #expect(try source.nextFrame() == expected)
        expected.timestampMicros = 40_000
        #expect(try source.nextFrame() == expected)  // the newest again, one interval later
        #expect(source.frameIntervalMicros == 40_000)
        source.stop()
        #expect(stream.closed)
    }

    @Test("a 4:3 camera in a 16:9 profile is cropped, not squashed")
    func aspect() async throws {
        let reference = CameraFixtures.reference
        let stream = ScriptedStream(format: Self.format, script: [.frame(Self.yuyvFrame(reference))])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 32, height: 18, fps: 30, stallTimeout: Self.noStall)
        try await waitUntil("the first frame", timeout: .seconds(5), every: .milliseconds(5)) { source.hasFrame }
        let expected = CameraFrameConverter.cropToAspect(reference, width: 32, height: 18).scaled(width: 32, height: 18)
        #expect(try source.nextFrame().y == expected.y)
        #expect(CameraFrameConverter.cropToAspect(reference, width: 32, height: 18).height == 36)
    }

    @Test("nextFrame never waits for the camera: black until the first frame arrives")
    func neverBlocks() async throws {
        // The camera needs a second before its first frame; a source that waited for it would return that frame.
        let stream = ScriptedStream(
            format: Self.format, script: [.pause(.seconds(1)), .frame(Self.yuyvFrame(CameraFixtures.reference))])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 64, height: 48, fps: 30, stallTimeout: Self.noStall)
        let clock = ContinuousClock()
        var frames: [VideoFrame] = []
        let elapsed = try clock.measure { for _ in 0..<100 { frames.append(try source.nextFrame()) } }
        #expect(elapsed < .milliseconds(500))
        #expect(frames.first == VideoFrame(width: 64, height: 48, fillY: 16))
        #expect(frames.last == VideoFrame(width: 64, height: 48, fillY: 16, timestampMicros: 99 * 33_333))
        try await waitUntil("the first frame", timeout: .seconds(5), every: .milliseconds(5)) { source.hasFrame }
        #expect(try source.nextFrame().y == CameraFixtures.reference.y)
        source.stop()
    }

    @Test("a capture error stops the thread, is reported once, and nextFrame throws it")
    func failureOnce() async throws {
        let failures = FailureLog()
        let stream = ScriptedStream(
            format: Self.format,
            script: [
                .frame(Self.yuyvFrame(CameraFixtures.reference)), .error(.disconnected(name: "Cam")),
                .error(.disconnected(name: "Cam")),
            ])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 32, height: 24, fps: 30, onFailure: failures.record)
        try await waitUntil("the stream closed", timeout: .seconds(5), every: .milliseconds(5)) { stream.closed }
        #expect(failures.all == [.disconnected(name: "Cam")])
        #expect(throws: CameraError.disconnected(name: "Cam")) { try source.nextFrame() }
        #expect(throws: CameraError.disconnected(name: "Cam")) { try source.nextFrame() }
        #expect(failures.all.count == 1)
    }

    @Test("single bad frames are skipped and counted; the last good frame stays")
    func badFramesSkipped() async throws {
        let failures = FailureLog()
        let garbage = RawCameraFrame(
            format: CameraFormat(pixelFormat: .mjpeg, width: 64, height: 48, fps: 30), bytes: [0xFF, 0xD8, 1, 2, 3])
        let short = RawCameraFrame(format: Self.format, bytes: [1, 2, 3])
        let stream = ScriptedStream(
            format: Self.format,
            script: [
                .frame(Self.yuyvFrame(CameraFixtures.reference)), .frame(garbage), .frame(short),
                .error(.badFrame(reason: "the driver marked a frame as damaged")),
            ])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 64, height: 48, fps: 30, stallTimeout: Self.noStall,
            onFailure: failures.record)
        try await waitUntil("3 bad frames counted", timeout: .seconds(5), every: .milliseconds(5)) {
            source.badFrames == 3
        }
        #expect(failures.all.isEmpty)
        #expect(try source.nextFrame() == CameraFixtures.reference)
        source.stop()
    }

    @Test("a run of bad frames counts as a failure")
    func badFrameRun() async throws {
        let failures = FailureLog()
        let short = RawCameraFrame(format: Self.format, bytes: [1, 2, 3])
        let stream = ScriptedStream(
            format: Self.format, script: Array(repeating: .frame(short), count: CameraSource.badFrameLimit + 5))
        let source = CameraSource(
            stream: stream, name: "Cam", width: 64, height: 48, fps: 30, onFailure: failures.record)
        try await waitUntil("a failure reported", timeout: .seconds(5), every: .milliseconds(5)) {
            !failures.all.isEmpty
        }
        let error = CameraError.badFrame(reason: "YUYV buffer holds 3 bytes, 64x48 needs 6144")
        #expect(failures.all == [error])
        #expect(source.badFrames == CameraSource.badFrameLimit)
        #expect(throws: error) { try source.nextFrame() }
    }

    @Test("a camera that delivers nothing for the stall timeout is reported")
    func stall() async throws {
        let failures = FailureLog()
        let stream = ScriptedStream(format: Self.format, script: [])
        let source = CameraSource(
            stream: stream, name: "Cam", width: 16, height: 16, fps: 30, stallTimeout: .milliseconds(300),
            onFailure: failures.record)
        try await waitUntil("a failure reported", timeout: .seconds(5), every: .milliseconds(5)) {
            !failures.all.isEmpty
        }
        #expect(failures.all == [.stalled(name: "Cam", seconds: 0)])
        #expect(throws: CameraError.stalled(name: "Cam", seconds: 0)) { try source.nextFrame() }
    }

    /// A device layer with one camera that offers only H.264: the source cannot start, and says why.
    struct H264Only: CameraDeviceLayer {
        func cameras() throws(CameraError) -> [CameraInfo] {
            [CameraInfo(name: "H264 Cam", path: "/dev/video0", formats: [], otherPixelFormats: ["H264"])]
        }
        func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
            throw .failed(name: camera.name, call: "open", reason: "must not be reached")
        }
    }

    @Test("starting by name through a device layer: unknown names and unusable cameras are errors")
    func startErrors() {
        #expect(throws: CameraError.unknownCamera(name: "Other", available: ["H264 Cam"])) {
            try CameraSource(named: "Other", layer: H264Only(), width: 64, height: 48, fps: 30)
        }
        #expect(throws: CameraError.noUsableFormat(name: "H264 Cam", offered: ["H264"])) {
            try CameraSource(named: nil, layer: H264Only(), width: 64, height: 48, fps: 30)
        }
        #expect(throws: CameraError.noCamera) {
            try CameraSource(named: nil, layer: NoCameras(), width: 64, height: 48, fps: 30)
        }
    }
}
