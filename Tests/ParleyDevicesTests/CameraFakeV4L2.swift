#if os(Linux)
import CV4L2Shim
import Foundation
import Glibc
import Synchronization

@testable import ParleyDevices

/// A fake V4L2 driver behind `V4L2System`: answers the ioctls Parley makes from a description of each device, hands
/// out real memory for mmap, and logs what was called, so tests can check enumeration, every error path and that
/// every descriptor and mapping is released.
final class FakeV4L2: V4L2System, @unchecked Sendable {
    enum Size {
        case discrete(width: Int, height: Int, intervals: [(numerator: UInt32, denominator: UInt32)])
        case stepwise(minWidth: Int, maxWidth: Int, stepWidth: Int, minHeight: Int, maxHeight: Int, stepHeight: Int)
    }

    struct Format {
        var fourcc: UInt32
        var sizes: [Size]
    }

    /// What DQBUF hands out next.
    enum Delivery {
        case frame([UInt8])
        case damaged
        case error(Int32)
    }

    struct Device {
        var path: String
        var card = "Fake Camera"
        var capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
        var formats: [Format] = []
        var openError: Int32?
        /// Errno returned by one ioctl (by request code).
        var failing: [UInt: Int32] = [:]
        /// The size S_FMT answers with, when the driver adjusts.
        var adjustedSize: (width: Int, height: Int)?
        /// The pixel format S_FMT answers with, when the driver substitutes one.
        var substitutedFourcc: UInt32?
        var bytesPerLine: UInt32?
        var grantedBuffers: UInt32 = 4
        var bufferLength = 65536
        var deliveries: [Delivery] = []
    }

    private struct State {
        var devices: [Device]
        var extraNodes: [String]
        var openFiles: [Int32: Int] = [:]  // fd → device index
        var nextFd: Int32 = 100
        var mappings: [UnsafeMutableRawPointer: Int] = [:]
        var buffers: [Int: UnsafeMutableRawPointer] = [:]  // offset → mapping
        var queued: [UInt32] = []
        var delivered = 0
        var log: [String] = []
    }

    private let state: Mutex<State>

    init(_ devices: [Device], extraNodes: [String] = []) {
        state = Mutex(State(devices: devices, extraNodes: extraNodes))
    }

    var log: [String] { state.withLock { $0.log } }
    var openDescriptors: Int { state.withLock { $0.openFiles.count } }
    var liveMappings: Int { state.withLock { $0.mappings.count } }
    /// S_FMT and S_PARM as the driver saw them: "S_FMT YUYV 640x360", "S_PARM 1/30".
    var settings: [String] { log.filter { $0.hasPrefix("S_") } }

    func deviceNodes() -> [String] {
        state.withLock { state in (state.devices.map(\.path) + state.extraNodes).sorted() }
    }

    func open(_ path: String) -> Result<Int32, V4L2Errno> {
        state.withLock { state in
            guard let index = state.devices.firstIndex(where: { $0.path == path }) else {
                if state.extraNodes.contains(path) {
                    // A node that opens but is not a V4L2 device (QUERYCAP fails): index -1.
                    let fd = state.nextFd
                    state.nextFd += 1
                    state.openFiles[fd] = -1
                    state.log.append("open \(path)")
                    return .success(fd)
                }
                return .failure(V4L2Errno(code: ENOENT))
            }
            if let code = state.devices[index].openError { return .failure(V4L2Errno(code: code)) }
            let fd = state.nextFd
            state.nextFd += 1
            state.openFiles[fd] = index
            state.log.append("open \(path)")
            return .success(fd)
        }
    }

    func close(_ fd: Int32) {
        state.withLock { state in
            precondition(state.openFiles.removeValue(forKey: fd) != nil, "closed fd \(fd) twice")
            state.log.append("close")
        }
    }

    func poll(_ fd: Int32, timeoutMillis: Int32) -> Result<Bool, V4L2Errno> {
        let ready = state.withLock { state in
            guard let index = state.openFiles[fd], index >= 0 else { return true }
            return state.delivered < state.devices[index].deliveries.count
        }
        // Device simulation: poll(2) blocks while no frame is ready, here for at most 5 ms of the timeout. Only
        // `CameraSource`'s own capture thread passes a timeout; tests that read a stream themselves pass zero.
        if !ready && timeoutMillis > 0 { usleep(UInt32(min(timeoutMillis, 5)) * 1000) }
        return .success(ready)
    }

    func map(_ fd: Int32, length: Int, offset: Int) -> Result<UnsafeMutableRawPointer, V4L2Errno> {
        state.withLock { state in
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
            state.mappings[pointer] = length
            state.buffers[offset] = pointer
            return .success(pointer)
        }
    }

    func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) {
        let address = Int(bitPattern: pointer)
        let known = state.withLock { state in
            state.mappings.removeValue(forKey: UnsafeMutableRawPointer(bitPattern: address)!) == length
        }
        precondition(known, "unmapped an unknown buffer")
        pointer.deallocate()
    }

    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        state.withLock { state in
            guard let index = state.openFiles[fd] else { return EBADF }
            guard index >= 0 else { return ENOTTY }
            let device = state.devices[index]
            if let code = device.failing[request] { return code }
            switch request {
            case parley_VIDIOC_QUERYCAP:
                let capability = argument.assumingMemoryBound(to: v4l2_capability.self)
                withUnsafeMutableBytes(of: &capability.pointee.card) { card in
                    for (offset, byte) in device.card.utf8.prefix(31).enumerated() { card[offset] = byte }
                }
                capability.pointee.capabilities = device.capabilities | UInt32(V4L2_CAP_DEVICE_CAPS)
                capability.pointee.device_caps = device.capabilities
                return 0
            case parley_VIDIOC_ENUM_FMT:
                let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
                let formatIndex = Int(description.pointee.index)
                guard formatIndex < device.formats.count else { return EINVAL }
                description.pointee.pixelformat = device.formats[formatIndex].fourcc
                return 0
            case parley_VIDIOC_ENUM_FRAMESIZES:
                let size = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
                guard let format = device.formats.first(where: { $0.fourcc == size.pointee.pixel_format }),
                    Int(size.pointee.index) < format.sizes.count
                else { return EINVAL }
                switch format.sizes[Int(size.pointee.index)] {
                case .discrete(let width, let height, _):
                    size.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
                    size.pointee.discrete = v4l2_frmsize_discrete(width: UInt32(width), height: UInt32(height))
                case .stepwise(
                    let minWidth, let maxWidth, let stepWidth, let minHeight, let maxHeight, let stepHeight):
                    size.pointee.type = V4L2_FRMSIZE_TYPE_STEPWISE.rawValue
                    size.pointee.stepwise = v4l2_frmsize_stepwise(
                        min_width: UInt32(minWidth), max_width: UInt32(maxWidth), step_width: UInt32(stepWidth),
                        min_height: UInt32(minHeight), max_height: UInt32(maxHeight),
                        step_height: UInt32(stepHeight))
                }
                return 0
            case parley_VIDIOC_ENUM_FRAMEINTERVALS:
                let interval = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
                guard let format = device.formats.first(where: { $0.fourcc == interval.pointee.pixel_format })
                else {
                    return EINVAL
                }
                for case .discrete(let width, let height, let intervals) in format.sizes
                where width == Int(interval.pointee.width) && height == Int(interval.pointee.height) {
                    guard Int(interval.pointee.index) < intervals.count else { return EINVAL }
                    let fraction = intervals[Int(interval.pointee.index)]
                    interval.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
                    interval.pointee.discrete = v4l2_fract(
                        numerator: fraction.numerator, denominator: fraction.denominator)
                    return 0
                }
                return EINVAL
            case parley_VIDIOC_S_FMT:
                let format = argument.assumingMemoryBound(to: v4l2_format.self)
                let asked = format.pointee.fmt.pix
                state.log.append("S_FMT \(fourCharacterText(asked.pixelformat)) \(asked.width)x\(asked.height)")
                if let size = device.adjustedSize {
                    format.pointee.fmt.pix.width = UInt32(size.width)
                    format.pointee.fmt.pix.height = UInt32(size.height)
                }
                if let fourcc = device.substitutedFourcc { format.pointee.fmt.pix.pixelformat = fourcc }
                format.pointee.fmt.pix.bytesperline = device.bytesPerLine ?? 0
                return 0
            case parley_VIDIOC_S_PARM:
                let parameters = argument.assumingMemoryBound(to: v4l2_streamparm.self)
                let time = parameters.pointee.parm.capture.timeperframe
                state.log.append("S_PARM \(time.numerator)/\(time.denominator)")
                return 0
            case parley_VIDIOC_REQBUFS:
                let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
                guard request.pointee.memory == V4L2_MEMORY_MMAP.rawValue else { return EINVAL }
                request.pointee.count = device.grantedBuffers
                return 0
            case parley_VIDIOC_QUERYBUF:
                let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
                buffer.pointee.length = UInt32(device.bufferLength)
                buffer.pointee.m.offset = buffer.pointee.index * 0x10000
                return 0
            case parley_VIDIOC_QBUF:
                state.queued.append(argument.assumingMemoryBound(to: v4l2_buffer.self).pointee.index)
                return 0
            case parley_VIDIOC_DQBUF:
                guard state.delivered < device.deliveries.count else { return EAGAIN }
                let delivery = device.deliveries[state.delivered]
                state.delivered += 1
                let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
                switch delivery {
                case .error(let code):
                    return code
                case .damaged, .frame:
                    guard !state.queued.isEmpty else { return EINVAL }
                    let bufferIndex = state.queued.removeFirst()
                    buffer.pointee.index = bufferIndex
                    buffer.pointee.timestamp = timeval(tv_sec: 7, tv_usec: state.delivered * 1000)
                    if case .frame(let bytes) = delivery {
                        let target = state.buffers[Int(bufferIndex) * 0x10000]!
                        bytes.withUnsafeBytes {
                            target.copyMemory(from: $0.baseAddress!, byteCount: min($0.count, device.bufferLength))
                        }
                        buffer.pointee.bytesused = UInt32(bytes.count)
                    } else {
                        buffer.pointee.flags = UInt32(V4L2_BUF_FLAG_ERROR)
                    }
                    return 0
                }
            case parley_VIDIOC_STREAMON:
                state.log.append("STREAMON")
                return 0
            case parley_VIDIOC_STREAMOFF:
                state.log.append("STREAMOFF")
                return 0
            default:
                return ENOTTY
            }
        }
    }

    deinit {
        state.withLock { state in
            for (pointer, _) in state.mappings { pointer.deallocate() }
        }
    }
}
#endif
