#if os(Linux)
import CV4L2Shim
import Glibc

/// A V4L2 camera that is streaming into memory-mapped driver buffers. Frames are copied out and the buffer handed
/// straight back, so the driver always has buffers to fill. Used from one thread; `close` (or `deinit`) stops it.
final class V4L2CameraStream: CameraStream {
    /// Buffers requested from the driver.
    static let bufferCount: UInt32 = 4

    private let system: any V4L2System
    private let fd: Int32
    private let camera: CameraInfo
    private(set) var format: CameraFormat
    private var bytesPerLine = 0
    private var buffers: [(pointer: UnsafeMutableRawPointer, length: Int)] = []
    private var streaming = false
    private var closed = false

    init(system: any V4L2System, fd: Int32, camera: CameraInfo, format: CameraFormat) {
        self.system = system
        self.fd = fd
        self.camera = camera
        self.format = format
    }

    deinit { close() }

    private func failure(_ code: Int32, _ call: String) -> CameraError {
        CameraError.from(errno: code, call: call, name: camera.name, path: camera.path)
    }

    /// S_FMT, S_PARM, REQBUFS, QUERYBUF + mmap + QBUF for each buffer, STREAMON.
    func start() throws(CameraError) {
        var setting = v4l2_format()
        setting.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        setting.fmt.pix.width = UInt32(format.width)
        setting.fmt.pix.height = UInt32(format.height)
        setting.fmt.pix.pixelformat = format.pixelFormat.fourcc
        setting.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        var code = system.call(fd, parley_VIDIOC_S_FMT, &setting)
        guard code == 0 else { throw failure(code, "VIDIOC_S_FMT") }
        let chosen = setting.fmt.pix
        guard
            chosen.pixelformat == format.pixelFormat.fourcc
                || CameraPixelFormat(fourcc: chosen.pixelformat) == format.pixelFormat
        else {
            throw .failed(
                name: camera.name, call: "VIDIOC_S_FMT",
                reason: "asked for \(format.pixelFormat), the driver chose \(fourCharacterText(chosen.pixelformat))"
            )
        }
        guard (1...PixelFormatConversion.maximumWidth).contains(Int(chosen.width)),
            (1...PixelFormatConversion.maximumHeight).contains(Int(chosen.height))
        else {
            throw .failed(
                name: camera.name, call: "VIDIOC_S_FMT",
                reason: "the driver chose an unusable size \(chosen.width)x\(chosen.height)")
        }
        format.width = Int(chosen.width)
        format.height = Int(chosen.height)
        bytesPerLine = Int(chosen.bytesperline)

        if format.fps > 0 {
            // Not every driver lets the rate be set; the camera then runs at its own rate, which is fine.
            var parameters = v4l2_streamparm()
            parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            parameters.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(format.fps))
            _ = system.call(fd, parley_VIDIOC_S_PARM, &parameters)
        }

        var request = v4l2_requestbuffers()
        request.count = Self.bufferCount
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        code = system.call(fd, parley_VIDIOC_REQBUFS, &request)
        guard code == 0 else { throw failure(code, "VIDIOC_REQBUFS") }
        guard request.count >= 2, request.count <= 32 else {
            throw .failed(
                name: camera.name, call: "VIDIOC_REQBUFS",
                reason: "the driver granted \(request.count) buffers (2 to 32 are usable)")
        }
        for index in 0..<request.count {
            var buffer = v4l2_buffer()
            buffer.index = index
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            code = system.call(fd, parley_VIDIOC_QUERYBUF, &buffer)
            guard code == 0 else { throw failure(code, "VIDIOC_QUERYBUF") }
            let length = Int(buffer.length)
            switch system.map(fd, length: length, offset: Int(buffer.m.offset)) {
            case .success(let pointer): buffers.append((pointer, length))
            case .failure(let error): throw failure(error.code, "mmap")
            }
            code = system.call(fd, parley_VIDIOC_QBUF, &buffer)
            guard code == 0 else { throw failure(code, "VIDIOC_QBUF") }
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        code = system.call(fd, parley_VIDIOC_STREAMON, &type)
        guard code == 0 else {
            if code == ENOSPC {
                throw .failed(
                    name: camera.name, call: "VIDIOC_STREAMON",
                    reason:
                        "not enough USB bandwidth for \(format) (try a smaller size, MJPEG, or another USB port)")
            }
            throw failure(code, "VIDIOC_STREAMON")
        }
        streaming = true
    }

    func nextFrame(timeout: Duration) throws(CameraError) -> RawCameraFrame? {
        guard !closed else { throw .failed(name: camera.name, call: "read", reason: "the camera was closed") }
        let parts = timeout.components
        let millis = max(0, min(Int64(Int32.max), parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000))
        switch system.poll(fd, timeoutMillis: Int32(millis)) {
        case .failure(let error): throw failure(error.code, "poll")
        case .success(false): return nil
        case .success(true): break
        }
        var buffer = v4l2_buffer()
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        let code = system.call(fd, parley_VIDIOC_DQBUF, &buffer)
        if code == EAGAIN { return nil }
        if code == EIO { throw .badFrame(reason: "the driver reported an I/O error for a frame") }
        guard code == 0 else { throw failure(code, "VIDIOC_DQBUF") }
        guard Int(buffer.index) < buffers.count else {
            throw .failed(
                name: camera.name, call: "VIDIOC_DQBUF",
                reason: "the driver returned buffer \(buffer.index) of \(buffers.count)")
        }
        let mapped = buffers[Int(buffer.index)]
        let used = Int(buffer.bytesused)
        let damaged = buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0
        let bytes =
            used <= mapped.length && !damaged
            ? [UInt8](UnsafeRawBufferPointer(start: mapped.pointer, count: used)) : []
        let timestamp = Int64(buffer.timestamp.tv_sec) * 1_000_000 + Int64(buffer.timestamp.tv_usec)
        // Hand the buffer back before converting, so the driver never runs dry.
        let requeue = system.call(fd, parley_VIDIOC_QBUF, &buffer)
        guard requeue == 0 else { throw failure(requeue, "VIDIOC_QBUF") }
        if damaged { throw .badFrame(reason: "the driver marked a frame as damaged") }
        guard used <= mapped.length else {
            throw .badFrame(reason: "the driver said a frame used \(used) bytes of a \(mapped.length)-byte buffer")
        }
        return RawCameraFrame(format: format, bytesPerLine: bytesPerLine, bytes: bytes, timestampMicros: timestamp)
    }

    func close() {
        guard !closed else { return }
        closed = true
        if streaming {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = system.call(fd, parley_VIDIOC_STREAMOFF, &type)
            streaming = false
        }
        for buffer in buffers { system.unmap(buffer.pointer, length: buffer.length) }
        buffers = []
        system.close(fd)
    }
}
#endif
