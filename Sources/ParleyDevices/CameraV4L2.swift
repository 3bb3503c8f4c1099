#if os(Linux)
import CV4L2Shim
import Glibc

/// Cameras through Video4Linux2: `/dev/video*` nodes that can capture video by streaming, their formats from
/// `VIDIOC_ENUM_FMT` / `ENUM_FRAMESIZES` / `ENUM_FRAMEINTERVALS`, and capture through memory-mapped buffers.
public struct V4L2Cameras: CameraDeviceLayer {
    /// Upper bound on the entries read from each driver enumeration (formats, sizes, intervals).
    static let maximumEntries = 64
    /// Sizes tried within a stepwise or continuous range, besides its largest.
    static let commonSizes = [(320, 240), (640, 360), (640, 480), (960, 540), (1280, 720), (1920, 1080)]

    let system: any V4L2System

    /// The cameras of this computer.
    public init() { self.init(system: LinuxV4L2System()) }

    /// Cameras behind another system-call layer (a fake driver in tests).
    init(system: any V4L2System) { self.system = system }

    /// Every capture-capable camera. Nodes that are not V4L2 devices, metadata nodes and output-only devices are
    /// skipped; when nothing could be listed because a node could not be opened for lack of permission, that is the
    /// error (so the user learns about the `video` group rather than "no camera").
    public func cameras() throws(CameraError) -> [CameraInfo] {
        var found: [CameraInfo] = []
        var deniedPath: String?
        for path in system.deviceNodes() {
            switch system.open(path) {
            case .failure(let error):
                if error.code == EACCES || error.code == EPERM, deniedPath == nil { deniedPath = path }
            case .success(let fd):
                if let camera = describe(fd: fd, path: path) { found.append(camera) }
                system.close(fd)
            }
        }
        if found.isEmpty, let deniedPath { throw .permissionDenied(path: deniedPath) }
        let names = uniqueCameraNames(found.map(\.name))
        for index in found.indices { found[index].name = names[index] }
        return found
    }

    /// The camera at an open node, or nil when it is not a video capture device with streaming I/O.
    private func describe(fd: Int32, path: String) -> CameraInfo? {
        var capability = v4l2_capability()
        guard system.call(fd, parley_VIDIOC_QUERYCAP, &capability) == 0 else { return nil }
        let capabilities =
            capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
            ? capability.device_caps : capability.capabilities
        let needed = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
        guard capabilities & needed == needed else { return nil }
        let card = withUnsafeBytes(of: capability.card) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }.trimmingCharacters(in: " ")
        var formats: [CameraFormat] = []
        var others: [String] = []
        for index in 0..<Self.maximumEntries {
            var description = v4l2_fmtdesc()
            description.index = UInt32(index)
            description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard system.call(fd, parley_VIDIOC_ENUM_FMT, &description) == 0 else { break }
            guard let pixelFormat = CameraPixelFormat(fourcc: description.pixelformat) else {
                let text = fourCharacterText(description.pixelformat)
                if !others.contains(text) { others.append(text) }
                continue
            }
            for (width, height) in frameSizes(fd: fd, fourcc: description.pixelformat) {
                let format = CameraFormat(
                    pixelFormat: pixelFormat, width: width, height: height,
                    fps: bestRate(fd: fd, fourcc: description.pixelformat, width: width, height: height))
                if !formats.contains(format) { formats.append(format) }
            }
        }
        return CameraInfo(
            name: card.isEmpty ? "Camera" : card, path: path, formats: formats, otherPixelFormats: others)
    }

    /// Sizes offered for one pixel format: every discrete size, or for a range its largest plus common sizes inside.
    private func frameSizes(fd: Int32, fourcc: UInt32) -> [(Int, Int)] {
        var sizes: [(Int, Int)] = []
        for index in 0..<Self.maximumEntries {
            var size = v4l2_frmsizeenum()
            size.index = UInt32(index)
            size.pixel_format = fourcc
            guard system.call(fd, parley_VIDIOC_ENUM_FRAMESIZES, &size) == 0 else { break }
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                sizes.append((Int(size.discrete.width), Int(size.discrete.height)))
                continue
            }
            let range = size.stepwise
            let stepX = max(1, Int(range.step_width))
            let stepY = max(1, Int(range.step_height))
            for (width, height) in Self.commonSizes
            where (Int(range.min_width)...Int(max(range.min_width, range.max_width))).contains(width)
                && (Int(range.min_height)...Int(max(range.min_height, range.max_height))).contains(height)
                && (width - Int(range.min_width)) % stepX == 0 && (height - Int(range.min_height)) % stepY == 0
            {
                sizes.append((width, height))
            }
            sizes.append((Int(range.max_width), Int(range.max_height)))
            break  // A range is the only entry.
        }
        return sizes.filter {
            (1...PixelFormatConversion.maximumWidth).contains($0.0)
                && (1...PixelFormatConversion.maximumHeight).contains($0.1)
        }
    }

    /// The highest whole frame rate offered at one size; 0 when the driver does not list intervals.
    private func bestRate(fd: Int32, fourcc: UInt32, width: Int, height: Int) -> Int {
        var best = 0
        for index in 0..<Self.maximumEntries {
            var interval = v4l2_frmivalenum()
            interval.index = UInt32(index)
            interval.pixel_format = fourcc
            interval.width = UInt32(width)
            interval.height = UInt32(height)
            guard system.call(fd, parley_VIDIOC_ENUM_FRAMEINTERVALS, &interval) == 0 else { break }
            let fraction =
                interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue ? interval.discrete : interval.stepwise.min
            if fraction.numerator > 0 {
                best = max(best, Int((Double(fraction.denominator) / Double(fraction.numerator)).rounded()))
            }
            if interval.type != V4L2_FRMIVAL_TYPE_DISCRETE.rawValue { break }
        }
        return min(best, 1000)
    }

    /// Opens `camera`, sets `format` (the driver may adjust the size: the stream's `format` says what it chose),
    /// asks for the frame rate, and starts streaming into memory-mapped buffers.
    public func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
        let fd: Int32
        switch system.open(camera.path) {
        case .success(let opened): fd = opened
        case .failure(let error):
            throw CameraError.from(errno: error.code, call: "open", name: camera.name, path: camera.path)
        }
        let stream = V4L2CameraStream(system: system, fd: fd, camera: camera, format: format)
        do {
            try stream.start()
        } catch {
            stream.close()
            throw error
        }
        return stream
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}
#endif
