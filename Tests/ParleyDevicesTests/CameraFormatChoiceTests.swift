import ParleyTestLanes
import Testing

@testable import ParleyDevices

@Suite("Camera format choice, names and messages", .lane(.blocking))
struct CameraFormatChoiceTests {
    static func format(_ layout: CameraPixelFormat, _ width: Int, _ height: Int, _ fps: Int) -> CameraFormat {
        CameraFormat(pixelFormat: layout, width: width, height: height, fps: fps)
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var offered: [CameraFormat]
        var width = 640
        var height = 360
        var fps = 30
        var chosen: CameraFormat
        var testDescription: String { name }
    }

    @Test(
        "best format for the profile",
        arguments: [
            Row(
                name: "exact size: raw beats MJPEG at the same rate",
                offered: [format(.mjpeg, 640, 360, 30), format(.yuyv, 640, 360, 30), format(.yuyv, 1280, 720, 10)],
                chosen: format(.yuyv, 640, 360, 30)),
            Row(
                name: "exact size: MJPEG when only it reaches the rate",
                offered: [format(.yuyv, 1280, 720, 10), format(.mjpeg, 1280, 720, 30)], width: 1280, height: 720,
                chosen: format(.mjpeg, 1280, 720, 30)),
            Row(
                name: "raw layouts ranked I420, NV12, YUYV",
                offered: [format(.yuyv, 640, 360, 30), format(.nv12, 640, 360, 30), format(.i420, 640, 360, 30)],
                chosen: format(.i420, 640, 360, 30)),
            Row(
                name: "no exact size: the smallest that covers the profile",
                offered: [
                    format(.yuyv, 320, 240, 30), format(.yuyv, 1920, 1080, 30), format(.yuyv, 800, 600, 30),
                    format(.yuyv, 1280, 720, 30),
                ],
                chosen: format(.yuyv, 800, 600, 30)),
            Row(
                name: "a size covering only one direction does not count",
                offered: [format(.yuyv, 1024, 300, 30), format(.yuyv, 1280, 720, 30)],
                chosen: format(.yuyv, 1280, 720, 30)),
            Row(
                name: "nothing covers the profile: the largest",
                offered: [format(.yuyv, 320, 240, 30), format(.yuyv, 352, 288, 30), format(.yuyv, 160, 120, 30)],
                chosen: format(.yuyv, 352, 288, 30)),
            Row(
                name: "only MJPEG",
                offered: [format(.mjpeg, 1280, 720, 30), format(.mjpeg, 640, 480, 30)],
                chosen: format(.mjpeg, 640, 480, 30)),
            Row(
                name: "an unknown rate ranks below one that meets the profile",
                offered: [format(.yuyv, 640, 360, 0), format(.mjpeg, 640, 360, 30)],
                chosen: format(.mjpeg, 640, 360, 30)),
            Row(
                name: "an unknown rate ranks above a known lower one",
                offered: [format(.nv12, 640, 360, 15), format(.yuyv, 640, 360, 0)],
                chosen: format(.yuyv, 640, 360, 0)),
            Row(
                name: "all too slow: raw first, still at the exact size",
                offered: [format(.mjpeg, 640, 360, 20), format(.yuyv, 640, 360, 10), format(.yuyv, 1920, 1080, 30)],
                chosen: format(.yuyv, 640, 360, 10)),
            Row(
                name: "zero sizes from a confused driver are ignored",
                offered: [format(.yuyv, 0, 0, 30), format(.yuyv, 320, 240, 30)],
                chosen: format(.yuyv, 320, 240, 30)),
        ])
    func choice(_ row: Row) throws {
        let camera = CameraInfo(name: "Cam", path: "/dev/video0", formats: row.offered)
        #expect(try chooseCameraFormat(for: camera, width: row.width, height: row.height, fps: row.fps) == row.chosen)
    }

    @Test(
        "nothing usable names what was offered",
        arguments: [
            (
                CameraInfo(name: "Cam", path: "/dev/video0", formats: [], otherPixelFormats: ["H264", "GREY"]),
                CameraError.noUsableFormat(name: "Cam", offered: ["H264", "GREY"])
            ),
            (CameraInfo(name: "Cam", path: "/dev/video0", formats: []), .noUsableFormat(name: "Cam", offered: [])),
        ])
    func nothingUsable(_ camera: CameraInfo, _ error: CameraError) {
        #expect(throws: error) { try chooseCameraFormat(for: camera, width: 640, height: 360, fps: 30) }
    }

    static let cameras = [
        CameraInfo(name: "Integrated Camera", path: "/dev/video0", formats: []),
        CameraInfo(name: "USB Camera", path: "/dev/video2", formats: []),
    ]

    @Test(
        "--camera picks by name or path",
        arguments: [
            (String?.none, "/dev/video0"), ("USB Camera", "/dev/video2"), ("/dev/video2", "/dev/video2"),
            ("Integrated Camera", "/dev/video0"),
        ])
    func select(_ name: String?, _ path: String) throws {
        #expect(try selectCamera(name, from: Self.cameras).path == path)
    }

    @Test("--camera errors")
    func selectErrors() {
        #expect(throws: CameraError.unknownCamera(name: "usb camera", available: ["Integrated Camera", "USB Camera"])) {
            try selectCamera("usb camera", from: Self.cameras)
        }
        #expect(throws: CameraError.noCamera) { try selectCamera(nil, from: []) }
        #expect(throws: CameraError.noCamera) { try selectCamera("USB Camera", from: []) }
    }

    @Test(
        "card names made unique in order",
        arguments: [
            (["A", "B"], ["A", "B"]),
            (["Cam", "Cam", "Cam"], ["Cam", "Cam #2", "Cam #3"]),
            (["Cam", "Cam #2", "Cam"], ["Cam", "Cam #2", "Cam #3"]),
        ])
    func uniqueNames(_ names: [String], _ expected: [String]) {
        #expect(uniqueCameraNames(names) == expected)
    }

    @Test(
        "messages a user reads",
        arguments: [
            (CameraError.noCamera, "no camera found (no /dev/video* device that can capture video)"),
            (.unknownCamera(name: "x", available: ["A", "B"]), "no camera called \"x\" (available: \"A\", \"B\")"),
            (.unknownCamera(name: "x", available: []), "no camera called \"x\" (there are none)"),
            (.busy(name: "A"), "camera \"A\" is in use by another program"),
            (
                .permissionDenied(path: "/dev/video0"),
                "no permission to open /dev/video0 (add your user to the 'video' group)"
            ),
            (
                .noUsableFormat(name: "A", offered: ["H264"]),
                "camera \"A\" offers no format Parley can use (YUYV, NV12, I420 or MJPEG); it offers H264"
            ),
            (.disconnected(name: "A"), "camera \"A\" was disconnected"),
            (.stalled(name: "A", seconds: 5), "camera \"A\" has delivered no picture for 5 s"),
            (.badFrame(reason: "why"), "bad camera frame: why"),
            (
                .failed(name: "A", call: "VIDIOC_S_FMT", reason: "Invalid argument (errno 22)"),
                "camera \"A\": VIDIOC_S_FMT failed: Invalid argument (errno 22)"
            ),
        ])
    func messages(_ error: CameraError, _ text: String) {
        #expect(error.description == text)
    }

    @Test("errno values map to their own cases")
    func errnoMapping() {
        func map(_ code: Int32) -> CameraError {
            CameraError.from(errno: code, call: "open", name: "A", path: "/dev/video0")
        }
        #expect(map(16) == .busy(name: "A"))  // EBUSY
        #expect(map(13) == .permissionDenied(path: "/dev/video0"))  // EACCES
        #expect(map(19) == .disconnected(name: "A"))  // ENODEV
        #expect(map(22) == .failed(name: "A", call: "open", reason: "Invalid argument (errno 22)"))  // EINVAL
    }

    @Test("crop to the profile's aspect keeps the centre on even pixels")
    func crop() {
        // 8x4 picture whose luma is its column number; a 1:1 profile keeps columns 2...5.
        let y = (0..<4).flatMap { _ in (0..<8).map { UInt8($0) } }
        let u = (0..<2).flatMap { _ in (0..<4).map { UInt8(100 + $0) } }
        let frame = VideoFrameHelper.make(width: 8, height: 4, y: y, u: u)
        let cropped = CameraFrameConverter.cropToAspect(frame, width: 10, height: 10)
        #expect(cropped.width == 4 && cropped.height == 4)
        #expect(cropped.y == (0..<4).flatMap { _ in [2, 3, 4, 5] })
        #expect(cropped.u == [101, 102, 101, 102])
        #expect(CameraFrameConverter.cropToAspect(frame, width: 16, height: 8) == frame)
    }
}
