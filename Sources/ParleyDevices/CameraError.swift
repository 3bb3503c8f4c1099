#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a camera could not be listed, opened or read; each message names the camera and what to do.
public enum CameraError: Error, Equatable, CustomStringConvertible {
    /// No camera is connected (or none that can capture video).
    case noCamera
    /// `--camera` named a camera that is not there.
    case unknownCamera(name: String, available: [String])
    /// Another program is using the camera (EBUSY).
    case busy(name: String)
    /// The device node exists but this user may not open it (EACCES/EPERM).
    case permissionDenied(path: String)
    /// The camera offers nothing Parley can convert (`offered` lists what it does offer).
    case noUsableFormat(name: String, offered: [String])
    /// The camera went away (unplugged) while open (ENODEV and friends).
    case disconnected(name: String)
    /// The camera is open but has delivered nothing for `seconds` seconds.
    case stalled(name: String, seconds: Int)
    /// One frame could not be used: truncated or garbage JPEG, a buffer shorter than its size needs.
    case badFrame(reason: String)
    /// A system call failed for another reason: which camera, which call, and the errno text.
    case failed(name: String, call: String, reason: String)

    public var description: String {
        switch self {
        case .noCamera:
            return "no camera found (no /dev/video* device that can capture video)"
        case .unknownCamera(let name, let available):
            let list =
                available.isEmpty
                ? "there are none" : "available: " + available.map { "\"\($0)\"" }.joined(separator: ", ")
            return "no camera called \"\(name)\" (\(list))"
        case .busy(let name):
            return "camera \"\(name)\" is in use by another program"
        case .permissionDenied(let path):
            return "no permission to open \(path) (add your user to the 'video' group)"
        case .noUsableFormat(let name, let offered):
            let list = offered.isEmpty ? "nothing" : offered.joined(separator: ", ")
            return "camera \"\(name)\" offers no format Parley can use (YUYV, NV12, I420 or MJPEG); it offers \(list)"
        case .disconnected(let name):
            return "camera \"\(name)\" was disconnected"
        case .stalled(let name, let seconds):
            return "camera \"\(name)\" has delivered no picture for \(seconds) s"
        case .badFrame(let reason):
            return "bad camera frame: \(reason)"
        case .failed(let name, let call, let reason):
            return "camera \"\(name)\": \(call) failed: \(reason)"
        }
    }

    /// The error for a failed system call on camera `name` at `path`: busy, permission and unplug get their own case.
    static func from(errno code: Int32, call: String, name: String, path: String) -> CameraError {
        switch code {
        case EBUSY: return .busy(name: name)
        case EACCES, EPERM: return .permissionDenied(path: path)
        case ENODEV, ENXIO, ENOENT: return .disconnected(name: name)
        default: return .failed(name: name, call: call, reason: errnoText(code))
        }
    }

    /// `strerror` text for an errno value, with the number.
    static func errnoText(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }
}
