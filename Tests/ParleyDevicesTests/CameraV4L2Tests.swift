#if os(Linux)
import CV4L2Shim
import Glibc
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import Testing

@testable import ParleyDevices

@Suite("V4L2 cameras through a fake driver", .lane(.blocking))
struct CameraV4L2Tests {
    static let yuyv = fourCharacterCode("YUYV")
    static let mjpg = fourCharacterCode("MJPG")
    static let h264 = fourCharacterCode("H264")

    /// A typical UVC webcam: YUYV at three sizes (720p only at 10 frames/s), MJPEG up to 1080p, H.264.
    static func webcam(_ path: String, card: String = "USB Camera") -> FakeV4L2.Device {
        FakeV4L2.Device(
            path: path, card: card,
            formats: [
                .init(
                    fourcc: yuyv,
                    sizes: [
                        .discrete(width: 640, height: 480, intervals: [(1, 30), (1, 15)]),
                        .discrete(width: 640, height: 360, intervals: [(1, 15), (1, 30)]),
                        .discrete(width: 1280, height: 720, intervals: [(1, 10)]),
                    ]),
                .init(fourcc: h264, sizes: [.discrete(width: 1920, height: 1080, intervals: [(1, 30)])]),
                .init(
                    fourcc: mjpg,
                    sizes: [
                        .discrete(width: 1280, height: 720, intervals: [(333_333, 10_000_000)]),
                        .discrete(width: 1920, height: 1080, intervals: [(1, 30)]),
                    ]),
            ])
    }

    @Test("enumeration: capture devices only, formats with their best rates, duplicate names made unique")
    func enumeration() throws {
        var metadata = Self.webcam("/dev/video1")
        metadata.capabilities = 0x0080_0000 | UInt32(V4L2_CAP_STREAMING)  // V4L2_CAP_META_CAPTURE
        var output = Self.webcam("/dev/video4", card: "Loopback out")
        output.capabilities = UInt32(V4L2_CAP_VIDEO_OUTPUT) | UInt32(V4L2_CAP_STREAMING)
        var noStreaming = Self.webcam("/dev/video5", card: "Read-only")
        noStreaming.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_READWRITE)
        let fake = FakeV4L2(
            [Self.webcam("/dev/video0"), metadata, Self.webcam("/dev/video2"), output, noStreaming],
            extraNodes: ["/dev/video3"])
        let cameras = try V4L2Cameras(system: fake).cameras()
        let offered = [
            CameraFormat(pixelFormat: .yuyv, width: 640, height: 480, fps: 30),
            CameraFormat(pixelFormat: .yuyv, width: 640, height: 360, fps: 30),
            CameraFormat(pixelFormat: .yuyv, width: 1280, height: 720, fps: 10),
            CameraFormat(pixelFormat: .mjpeg, width: 1280, height: 720, fps: 30),
            CameraFormat(pixelFormat: .mjpeg, width: 1920, height: 1080, fps: 30),
        ]
        #expect(
            cameras == [
                CameraInfo(name: "USB Camera", path: "/dev/video0", formats: offered, otherPixelFormats: ["H264"]),
                CameraInfo(
                    name: "USB Camera #2", path: "/dev/video2", formats: offered, otherPixelFormats: ["H264"]),
            ])
        #expect(fake.openDescriptors == 0)
    }

    @Test("a stepwise range offers the common sizes inside it and its largest")
    func stepwise() throws {
        var device = FakeV4L2.Device(path: "/dev/video0")
        device.formats = [
            .init(
                fourcc: fourCharacterCode("NV12"),
                sizes: [
                    .stepwise(
                        minWidth: 320, maxWidth: 1000, stepWidth: 16, minHeight: 240, maxHeight: 800, stepHeight: 8)
                ])
        ]
        let camera = try #require(try V4L2Cameras(system: FakeV4L2([device])).cameras().first)
        #expect(
            camera.formats.map { "\($0.width)x\($0.height)" } == ["320x240", "640x360", "640x480", "1000x800"])
        // 960x540 is inside the range but off its grid: 540 - 240 is not a multiple of the 8-row step.
        #expect(camera.formats.allSatisfy { $0.pixelFormat == .nv12 && $0.fps == 0 })
    }

    @Test("no nodes: an empty list, and selecting one says there is no camera")
    func noCamera() throws {
        let cameras = try V4L2Cameras(system: FakeV4L2([])).cameras()
        #expect(cameras.isEmpty)
        #expect(throws: CameraError.noCamera) {
            try CameraSource(named: nil, layer: V4L2Cameras(system: FakeV4L2([])), width: 64, height: 48, fps: 30)
        }
    }

    @Test("permission denied on every node is the error; on one node among usable ones it is skipped")
    func permission() throws {
        var denied = Self.webcam("/dev/video0")
        denied.openError = EACCES
        #expect(throws: CameraError.permissionDenied(path: "/dev/video0")) {
            try V4L2Cameras(system: FakeV4L2([denied])).cameras()
        }
        let mixed = try V4L2Cameras(system: FakeV4L2([denied, Self.webcam("/dev/video2")])).cameras()
        #expect(mixed.map(\.path) == ["/dev/video2"])
    }

    struct OpenFailure: CustomTestStringConvertible, Sendable {
        var name: String
        var change: @Sendable (inout FakeV4L2.Device) -> Void
        var error: CameraError
        var testDescription: String { name }
    }

    @Test(
        "open errors name the camera and release everything",
        arguments: [
            OpenFailure(
                name: "open: EBUSY", change: { $0.openError = EBUSY }, error: .busy(name: "USB Camera")),
            OpenFailure(
                name: "open: EACCES", change: { $0.openError = EACCES },
                error: .permissionDenied(path: "/dev/video0")),
            OpenFailure(
                name: "open: gone (ENOENT)", change: { $0.openError = ENOENT },
                error: .disconnected(name: "USB Camera")),
            OpenFailure(
                name: "S_FMT: EBUSY (another program streams)", change: { $0.failing[parley_VIDIOC_S_FMT] = EBUSY },
                error: .busy(name: "USB Camera")),
            OpenFailure(
                name: "REQBUFS: EBUSY", change: { $0.failing[parley_VIDIOC_REQBUFS] = EBUSY },
                error: .busy(name: "USB Camera")),
            OpenFailure(
                name: "S_FMT: the driver substitutes another pixel format",
                change: { $0.substitutedFourcc = fourCharacterCode("GREY") },
                error: .failed(
                    name: "USB Camera", call: "VIDIOC_S_FMT", reason: "asked for YUYV, the driver chose GREY")),
            OpenFailure(
                name: "S_FMT: the driver answers 0x0", change: { $0.adjustedSize = (0, 0) },
                error: .failed(
                    name: "USB Camera", call: "VIDIOC_S_FMT", reason: "the driver chose an unusable size 0x0")),
            OpenFailure(
                name: "REQBUFS: one buffer granted", change: { $0.grantedBuffers = 1 },
                error: .failed(
                    name: "USB Camera", call: "VIDIOC_REQBUFS",
                    reason: "the driver granted 1 buffers (2 to 32 are usable)")),
            OpenFailure(
                name: "QUERYBUF: EINVAL", change: { $0.failing[parley_VIDIOC_QUERYBUF] = EINVAL },
                error: .failed(name: "USB Camera", call: "VIDIOC_QUERYBUF", reason: "Invalid argument (errno 22)")),
            OpenFailure(
                name: "STREAMON: no USB bandwidth", change: { $0.failing[parley_VIDIOC_STREAMON] = ENOSPC },
                error: .failed(
                    name: "USB Camera", call: "VIDIOC_STREAMON",
                    reason:
                        "not enough USB bandwidth for YUYV 640x360@30 (try a smaller size, MJPEG, or another USB port)"
                )),
            OpenFailure(
                name: "STREAMON: unplugged", change: { $0.failing[parley_VIDIOC_STREAMON] = ENODEV },
                error: .disconnected(name: "USB Camera")),
        ])
    func openFailures(_ row: OpenFailure) throws {
        let camera = CameraInfo(
            name: "USB Camera", path: "/dev/video0",
            formats: [CameraFormat(pixelFormat: .yuyv, width: 640, height: 360, fps: 30)])
        var device = Self.webcam("/dev/video0")
        row.change(&device)
        let fake = FakeV4L2([device])
        #expect(throws: row.error) { try V4L2Cameras(system: fake).open(camera, format: camera.formats[0]) }
        #expect(fake.openDescriptors == 0)
        #expect(fake.liveMappings == 0)
    }

    static let format = CameraFormat(pixelFormat: .yuyv, width: 4, height: 2, fps: 30)
    static let camera = CameraInfo(name: "USB Camera", path: "/dev/video0", formats: [format])
    static let frameBytes: [UInt8] = [10, 100, 20, 200, 30, 102, 40, 202, 50, 110, 60, 210, 70, 113, 80, 213]

    @Test("capture: settings reach the driver, frames come out byte for byte, close releases everything")
    func capture() throws {
        var device = Self.webcam("/dev/video0")
        device.bytesPerLine = 8
        device.deliveries = [.frame(Self.frameBytes), .frame(Array(Self.frameBytes.reversed()))]
        let fake = FakeV4L2([device])
        let stream = try V4L2Cameras(system: fake).open(Self.camera, format: Self.format)
        #expect(fake.settings == ["S_FMT YUYV 4x2", "S_PARM 1/30"])
        let first = try #require(try stream.nextFrame(timeout: .milliseconds(50)))
        #expect(first.bytes == Self.frameBytes && first.bytesPerLine == 8 && first.format == Self.format)
        #expect(first.timestampMicros == 7_001_000)
        let second = try #require(try stream.nextFrame(timeout: .milliseconds(50)))
        #expect(second.bytes == Self.frameBytes.reversed())
        // No frame left: nothing, at once with no time to wait (the fake's poll blocks only for a timeout it is given).
        #expect(try stream.nextFrame(timeout: .zero) == nil)
        stream.close()
        stream.close()
        #expect(fake.log.suffix(2) == ["STREAMOFF", "close"])
        #expect(fake.openDescriptors == 0 && fake.liveMappings == 0)
        #expect(throws: CameraError.failed(name: "USB Camera", call: "read", reason: "the camera was closed")) {
            try stream.nextFrame(timeout: .zero)
        }
    }

    @Test("the driver's size wins when it adjusts the request")
    func adjustedSize() throws {
        var device = Self.webcam("/dev/video0")
        device.adjustedSize = (640, 480)
        let stream = try V4L2Cameras(system: FakeV4L2([device])).open(
            Self.camera, format: CameraFormat(pixelFormat: .yuyv, width: 1280, height: 720, fps: 30))
        #expect(stream.format == CameraFormat(pixelFormat: .yuyv, width: 640, height: 480, fps: 30))
    }

    struct CaptureFailure: CustomTestStringConvertible, Sendable {
        var name: String
        var delivery: FakeV4L2.Delivery
        var error: CameraError
        var testDescription: String { name }
    }

    @Test(
        "capture errors mid-stream",
        arguments: [
            CaptureFailure(
                name: "unplugged (ENODEV)", delivery: .error(ENODEV), error: .disconnected(name: "USB Camera")),
            CaptureFailure(
                name: "damaged frame", delivery: .damaged,
                error: .badFrame(reason: "the driver marked a frame as damaged")),
            CaptureFailure(
                name: "I/O error on one frame", delivery: .error(EIO),
                error: .badFrame(reason: "the driver reported an I/O error for a frame")),
            CaptureFailure(
                name: "frame larger than its buffer", delivery: .frame([UInt8](repeating: 1, count: 70000)),
                error: .badFrame(reason: "the driver said a frame used 70000 bytes of a 65536-byte buffer")),
            CaptureFailure(
                name: "other errno", delivery: .error(EINVAL),
                error: .failed(name: "USB Camera", call: "VIDIOC_DQBUF", reason: "Invalid argument (errno 22)")),
        ])
    func captureFailures(_ row: CaptureFailure) throws {
        var device = Self.webcam("/dev/video0")
        device.deliveries = [.frame(Self.frameBytes), row.delivery]
        let fake = FakeV4L2([device])
        let stream = try V4L2Cameras(system: fake).open(Self.camera, format: Self.format)
        #expect(try stream.nextFrame(timeout: .milliseconds(50))?.bytes == Self.frameBytes)
        #expect(throws: row.error) { try stream.nextFrame(timeout: .milliseconds(50)) }
        stream.close()
        #expect(fake.openDescriptors == 0 && fake.liveMappings == 0)
    }

    @Test("a real camera source over the fake driver: chosen format, converted frames, unplug reported once")
    func sourceOverDriver() async throws {
        var device = FakeV4L2.Device(path: "/dev/video0", card: "USB Camera")
        device.formats = [.init(fourcc: Self.yuyv, sizes: [.discrete(width: 64, height: 48, intervals: [(1, 30)])])]
        let reference = CameraFixtures.reference
        device.deliveries = [.frame(CameraFixtures.yuyv(reference, bytesPerLine: 128)), .error(ENODEV)]
        let fake = FakeV4L2([device])
        let failures = FailureLog()
        let source = try CameraSource(
            named: "/dev/video0", layer: V4L2Cameras(system: fake), width: 32, height: 24, fps: 30,
            onFailure: failures.record)
        #expect(source.format == CameraFormat(pixelFormat: .yuyv, width: 64, height: 48, fps: 30))
        try await waitUntil("the unplug reported", timeout: .seconds(5), every: .milliseconds(5)) {
            failures.all.count == 1
        }
        #expect(failures.all == [.disconnected(name: "USB Camera")])
        #expect(source.framesCaptured == 1)
        #expect(throws: CameraError.disconnected(name: "USB Camera")) { try source.nextFrame() }
        source.stop()
        #expect(fake.openDescriptors == 0 && fake.liveMappings == 0)
    }
}
#endif

#if os(Linux)
import CV4L2Shim

@Suite("V4L2 system calls on this machine", .lane(.blocking))
struct CameraV4L2SystemTests {
    /// The request codes the shim exports, against the values the kernel headers give on 64-bit Linux
    /// (`_IOR('V', 0, struct v4l2_capability)` = 0x80685600, and so on), so a swapped or mistyped export shows.
    @Test(
        "request codes",
        arguments: [
            ("QUERYCAP", parley_VIDIOC_QUERYCAP, UInt(0x8068_5600)),
            ("ENUM_FMT", parley_VIDIOC_ENUM_FMT, 0xC040_5602),
            ("S_FMT", parley_VIDIOC_S_FMT, 0xC0D0_5605),
            ("REQBUFS", parley_VIDIOC_REQBUFS, 0xC014_5608),
            ("QUERYBUF", parley_VIDIOC_QUERYBUF, 0xC058_5609),
            ("QBUF", parley_VIDIOC_QBUF, 0xC058_560F),
            ("DQBUF", parley_VIDIOC_DQBUF, 0xC058_5611),
            ("STREAMON", parley_VIDIOC_STREAMON, 0x4004_5612),
            ("STREAMOFF", parley_VIDIOC_STREAMOFF, 0x4004_5613),
            ("S_PARM", parley_VIDIOC_S_PARM, 0xC0CC_5616),
            ("ENUM_FRAMESIZES", parley_VIDIOC_ENUM_FRAMESIZES, 0xC02C_564A),
            ("ENUM_FRAMEINTERVALS", parley_VIDIOC_ENUM_FRAMEINTERVALS, 0xC034_564B),
        ])
    func requestCodes(_ name: String, _ exported: UInt, _ expected: UInt) {
        #expect(exported == expected, "VIDIOC_\(name)")
    }

    @Test("the real layer on a node that is not a camera: open works, QUERYCAP says ENOTTY, a missing node ENOENT")
    func realCalls() throws {
        let system = LinuxV4L2System()
        let fd = try system.open("/dev/null").get()
        defer { system.close(fd) }
        var capability = v4l2_capability()
        #expect(system.call(fd, parley_VIDIOC_QUERYCAP, &capability) == ENOTTY)
        #expect(try system.poll(fd, timeoutMillis: 0).get() == true)
        #expect(throws: V4L2Errno(code: ENOENT)) { try system.open("/dev/parley-no-such-video").get() }
        #expect(system.deviceNodes().allSatisfy { $0.hasPrefix("/dev/video") })
    }
}
#endif
