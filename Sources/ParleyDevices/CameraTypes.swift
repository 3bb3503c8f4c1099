import ParleyMedia

/// The camera pixel formats Parley can use: three raw YUV layouts converted directly, and Motion-JPEG decoded with
/// libturbojpeg.
public enum CameraPixelFormat: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Packed YUV 4:2:2, `Y0 U Y1 V` per two pixels (V4L2 `YUYV`).
    case yuyv
    /// A luma plane then one interleaved `U V` plane at half size (V4L2 `NV12`).
    case nv12
    /// Three planes, Y then U then V, chroma at half size (V4L2 `YU12`).
    case i420
    /// One JPEG picture per frame (V4L2 `MJPG`, also `JPEG`).
    case mjpeg

    /// The V4L2 four-character code (little-endian, as `v4l2_fourcc` builds it).
    public var fourcc: UInt32 {
        switch self {
        case .yuyv: return fourCharacterCode("YUYV")
        case .nv12: return fourCharacterCode("NV12")
        case .i420: return fourCharacterCode("YU12")
        case .mjpeg: return fourCharacterCode("MJPG")
        }
    }

    /// The format for a V4L2 four-character code, or nil when Parley cannot use it.
    public init?(fourcc: UInt32) {
        switch fourcc {
        case fourCharacterCode("YUYV"): self = .yuyv
        case fourCharacterCode("NV12"): self = .nv12
        case fourCharacterCode("YU12"): self = .i420
        case fourCharacterCode("MJPG"), fourCharacterCode("JPEG"): self = .mjpeg
        default: return nil
        }
    }

    /// True when frames need a JPEG decode rather than a copy.
    public var isCompressed: Bool { self == .mjpeg }

    public var description: String {
        switch self {
        case .yuyv: return "YUYV"
        case .nv12: return "NV12"
        case .i420: return "I420"
        case .mjpeg: return "MJPEG"
        }
    }
}

/// The four-character code of a 4-letter ASCII string, first letter in the lowest byte.
public func fourCharacterCode(_ text: StaticString) -> UInt32 {
    precondition(text.utf8CodeUnitCount == 4, "a fourcc has four characters")
    let bytes = UnsafeBufferPointer(start: text.utf8Start, count: 4)
    return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
}

/// The printable text of a four-character code (`"H264"`), with `?` for bytes that are not printable ASCII.
public func fourCharacterText(_ code: UInt32) -> String {
    let scalars = (0..<4).map { index -> Character in
        let byte = UInt8(truncatingIfNeeded: code >> (8 * UInt32(index)))
        return (0x20..<0x7F).contains(byte) ? Character(UnicodeScalar(byte)) : "?"
    }
    return String(scalars).trimmingSuffix(" ")
}

extension String {
    fileprivate func trimmingSuffix(_ character: Character) -> String {
        var result = self
        while result.last == character { result.removeLast() }
        return result
    }
}

/// One way a camera can deliver pictures: a pixel format at one size, with the highest frame rate offered there.
public struct CameraFormat: Sendable, Hashable, CustomStringConvertible {
    /// How the bytes of a frame are laid out.
    public var pixelFormat: CameraPixelFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Highest frame rate the camera offers at this size, in frames per second; 0 when the driver did not say.
    public var fps: Int

    /// A format; `fps` 0 means the driver did not say.
    public init(pixelFormat: CameraPixelFormat, width: Int, height: Int, fps: Int) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.fps = fps
    }

    public var description: String {
        "\(pixelFormat) \(width)x\(height)" + (fps > 0 ? "@\(fps)" : "")
    }
}

/// A camera found on this computer.
public struct CameraInfo: Sendable, Hashable {
    /// The name `--camera` accepts: the driver's card name, with ` #2`, ` #3`... added when two cameras share one.
    public var name: String
    /// The device node, e.g. `/dev/video0` (`--camera` accepts it too).
    public var path: String
    /// The formats Parley can use, in the order the driver listed them.
    public var formats: [CameraFormat]
    /// Four-character codes of the pixel formats the camera offers that Parley cannot use (e.g. `H264`).
    public var otherPixelFormats: [String]

    /// A camera description.
    public init(name: String, path: String, formats: [CameraFormat], otherPixelFormats: [String] = []) {
        self.name = name
        self.path = path
        self.formats = formats
        self.otherPixelFormats = otherPixelFormats
    }

    /// What the camera offers, for error messages: usable formats first, then the others' codes.
    public var offeredDescription: [String] {
        formats.map(\.description) + otherPixelFormats
    }
}

/// One frame as the camera delivered it, before conversion.
public struct RawCameraFrame: Sendable {
    /// The format the stream was set to (an MJPEG picture carries its own size, checked when decoding).
    public var format: CameraFormat
    /// Bytes per row of the first plane (YUYV, NV12, I420); 0 means tightly packed. Ignored for MJPEG.
    public var bytesPerLine: Int
    /// The frame's bytes, exactly as many as the driver said it used.
    public var bytes: [UInt8]
    /// Capture time in microseconds on the driver's clock (monotonic on Linux); only differences are meaningful.
    public var timestampMicros: Int64

    /// A frame as delivered.
    public init(format: CameraFormat, bytesPerLine: Int = 0, bytes: [UInt8], timestampMicros: Int64 = 0) {
        self.format = format
        self.bytesPerLine = bytesPerLine
        self.bytes = bytes
        self.timestampMicros = timestampMicros
    }
}

/// Where cameras come from: V4L2 in production, a fake in narrow unit tests.
public protocol CameraDeviceLayer: Sendable {
    /// The capture-capable cameras present now (empty when there are none).
    func cameras() throws(CameraError) -> [CameraInfo]
    /// Starts capturing from `camera` in `format` (one of `camera.formats`).
    func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream
}

/// A camera that is capturing. Used from one thread at a time.
public protocol CameraStream: AnyObject {
    /// The format actually negotiated (the driver may have adjusted the size).
    var format: CameraFormat { get }
    /// Waits up to `timeout` for the next frame; nil when none arrived in time.
    func nextFrame(timeout: Duration) throws(CameraError) -> RawCameraFrame?
    /// Stops capturing and releases the device; safe to call twice.
    func close()
}

/// Picks the camera `--camera` named: by its exact name, or by its device path; nil `name` picks the first camera.
public func selectCamera(_ name: String?, from cameras: [CameraInfo]) throws(CameraError) -> CameraInfo {
    guard let first = cameras.first else { throw .noCamera }
    guard let name else { return first }
    if let match = cameras.first(where: { $0.name == name || $0.path == name }) { return match }
    throw .unknownCamera(name: name, available: cameras.map(\.name))
}

/// Makes card names unique in order: the second camera called `Webcam` becomes `Webcam #2`.
func uniqueCameraNames(_ names: [String]) -> [String] {
    var seen: [String: Int] = [:]
    var taken = Set(names)
    return names.map { name in
        let count = (seen[name] ?? 0) + 1
        seen[name] = count
        if count == 1 { return name }
        var suffix = count
        var candidate = "\(name) #\(suffix)"
        while taken.contains(candidate) {
            suffix += 1
            candidate = "\(name) #\(suffix)"
        }
        taken.insert(candidate)
        return candidate
    }
}

/// This computer's cameras: V4L2 on Linux. Elsewhere there is no camera backend yet, so the list is empty and
/// opening one says there is no camera.
public func systemCameras() -> any CameraDeviceLayer {
    #if os(Linux)
    return V4L2Cameras()
    #else
    return NoCameras()
    #endif
}

/// A device layer with no cameras (platforms without a camera backend).
public struct NoCameras: CameraDeviceLayer {
    /// The empty layer.
    public init() {}
    /// Always empty.
    public func cameras() throws(CameraError) -> [CameraInfo] { [] }
    /// Always `noCamera`.
    public func open(_ camera: CameraInfo, format: CameraFormat) throws(CameraError) -> any CameraStream {
        throw .noCamera
    }
}
