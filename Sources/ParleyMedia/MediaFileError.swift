/// Why a Y4M or WAV file could not be read or written; each case says what was wrong and where.
public enum MediaFileError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened, read or written (`errno` text included).
    case io(path: String, operation: String, reason: String)
    /// The Y4M header or a frame header is malformed.
    case y4m(String)
    /// The WAV header or chunk layout is malformed or unsupported.
    case wav(String)
    /// A sink was handed a frame it cannot store (e.g. a size change in a Y4M file).
    case unsupportedFrame(String)

    public var description: String {
        switch self {
        case let .io(path, operation, reason): return "cannot \(operation) \(path): \(reason)"
        case let .y4m(text): return "Y4M: \(text)"
        case let .wav(text): return "WAV: \(text)"
        case let .unsupportedFrame(text): return text
        }
    }
}
