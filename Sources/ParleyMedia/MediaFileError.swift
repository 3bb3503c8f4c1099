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
        case .io(let path, let operation, let reason): return "cannot \(operation) \(path): \(reason)"
        case .y4m(let text): return "Y4M: \(text)"
        case .wav(let text): return "WAV: \(text)"
        case .unsupportedFrame(let text): return text
        }
    }
}
