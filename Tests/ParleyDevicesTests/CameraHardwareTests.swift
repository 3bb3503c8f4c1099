#if os(Linux)
import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

@testable import ParleyDevices

/// Opt-in: captures from a real camera where one exists. Build machines have no /dev/video* (and cannot load
/// v4l2loopback), so there Swift Testing reports this test as skipped with the reason below; the fake driver in
/// CameraV4L2Tests covers the same code paths everywhere.
@Suite("Real camera", .lane(.blocking))
struct CameraHardwareTests {
    @Test(
        "captures a frame from /dev/video0",
        .enabled(if: FileManager.default.fileExists(atPath: "/dev/video0"), "no /dev/video0 on this machine"))
    func captureFromVideo0() async throws {
        let cameras = try V4L2Cameras().cameras()
        let camera = try #require(cameras.first { $0.path == "/dev/video0" }, "video0 is not a capture camera")
        let source = try CameraSource(named: camera.path, width: 640, height: 360, fps: 30)
        defer { source.stop() }
        try await waitUntil("the first frame", timeout: .seconds(5), every: .milliseconds(5)) { source.hasFrame }
        let frame = try source.nextFrame()
        #expect(frame.width == 640 && frame.height == 360)
        #expect(source.framesCaptured >= 1)
    }
}
#endif
