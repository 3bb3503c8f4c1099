import CWebMShim

#if canImport(Glibc)
import Glibc
#endif

/// Why a WebM file could not be written, with the path and what to do.
public enum WebMError: Error, Equatable, CustomStringConvertible {
    /// The file could not be created.
    case cannotCreate(path: String, reason: String)
    /// The disk is full (or the file-size limit reached): nothing more can be written.
    case diskFull(path: String, bytes: UInt64)
    /// Another write error from the operating system.
    case writeFailed(path: String, reason: String)
    /// libwebm refused a track or a frame (a bug in the caller: a timestamp going backwards, a track added late).
    case muxerRefused(path: String, what: String)

    public var description: String {
        switch self {
        case .cannotCreate(let path, let reason): "cannot create \(path): \(reason)"
        case .diskFull(let path, let bytes): "the disk is full: \(path) stopped at \(bytes) bytes"
        case .writeFailed(let path, let reason): "writing \(path) failed: \(reason)"
        case .muxerRefused(let path, let what): "libwebm refused \(what) in \(path)"
        }
    }
}

/// One WebM (Matroska) file being written by libwebm's muxer: the only owner of its C context, freed in `deinit`.
/// Tracks are added before the first frame. Not thread-safe: one owner calls it.
public final class WebMFile {
    /// Where the file is.
    public let path: String
    private let context: OpaquePointer
    private var finished = false

    /// Creates (truncates) the file.
    public init(path: String) throws(WebMError) {
        _ = Self.fileSizeLimitIsAFullDisk
        var error: Int32 = 0
        guard let context = parley_webm_open(path, &error) else {
            throw .cannotCreate(path: path, reason: String(cString: strerror(error)))
        }
        self.path = path
        self.context = context
    }

    deinit { parley_webm_close(context) }

    /// A file-size limit (`ulimit -f`) reached must read as a full disk (EFBIG), not end the program with SIGXFSZ.
    private static let fileSizeLimitIsAFullDisk: Void = { _ = signal(SIGXFSZ, SIG_IGN) }()

    /// Adds a VP8 track of the given (first) picture size; returns its number.
    public func addVideoTrack(name: String, width: Int, height: Int) throws(WebMError) -> UInt64 {
        let number = parley_webm_add_video_track(context, Int32(width), Int32(height), name)
        guard number > 0 else { throw .muxerRefused(path: path, what: "video track \(name)") }
        return number
    }

    /// Sets a video track's picture size in the header, which is written with the first frame: only before it.
    public func setVideoSize(track: UInt64, width: Int, height: Int) throws(WebMError) {
        guard parley_webm_set_video_size(context, track, Int32(clamping: width), Int32(clamping: height)) == 0 else {
            throw .muxerRefused(path: path, what: "the size \(width)x\(height) of track \(track)")
        }
    }

    /// Adds an Opus track (48 kHz); returns its number.
    public func addOpusTrack(name: String, channels: Int, preSkip: Int) throws(WebMError) -> UInt64 {
        let head = OpusHead.bytes(channels: channels, preSkip: preSkip)
        let delay = UInt64(preSkip) * 1_000_000_000 / 48_000
        let number = parley_webm_add_audio_track(context, 48_000, Int32(channels), head, head.count, delay, name)
        guard number > 0 else { throw .muxerRefused(path: path, what: "audio track \(name)") }
        return number
    }

    /// Adds a WebVTT subtitle track (`D_WEBVTT/SUBTITLES`); returns its number.
    public func addSubtitleTrack(name: String) throws(WebMError) -> UInt64 {
        let number = parley_webm_add_subtitle_track(context, name)
        guard number > 0 else { throw .muxerRefused(path: path, what: "subtitle track \(name)") }
        return number
    }

    /// Writes one frame (VP8 or Opus) at `nanoseconds` from the start.
    public func writeFrame(_ data: [UInt8], track: UInt64, at nanoseconds: UInt64, isKey: Bool) throws(WebMError) {
        let status = parley_webm_write_frame(context, track, data, data.count, nanoseconds, isKey ? 1 : 0)
        try check(status, "a frame of track \(track) at \(nanoseconds) ns")
    }

    /// Writes one block with a duration (a WebVTT cue).
    public func writeBlock(
        _ data: [UInt8], track: UInt64, at nanoseconds: UInt64, duration: UInt64
    ) throws(WebMError) {
        let status = parley_webm_write_block(context, track, data, data.count, nanoseconds, duration)
        try check(status, "a block of track \(track) at \(nanoseconds) ns")
    }

    /// Ends the cluster, rewrites the header's duration and hands every buffered byte to the kernel: a kill after
    /// this loses nothing written so far.
    public func checkpoint(durationMilliseconds: Double) throws(WebMError) {
        try check(parley_webm_checkpoint(context, durationMilliseconds), "a checkpoint")
    }

    /// Writes the cues, sizes and duration: the file is complete. Nothing can be written after it.
    public func finish(durationMilliseconds: Double) throws(WebMError) {
        guard !finished else { return }
        finished = true
        try check(parley_webm_finish(context, durationMilliseconds), "the file's end")
    }

    /// Bytes in the file so far.
    public var size: UInt64 { parley_webm_size(context) }

    /// Tests: writes past `bytes` fail with ENOSPC, as on a full disk.
    public func failWrites(after bytes: UInt64) { parley_webm_fail_after(context, bytes) }

    private func check(_ status: Int32, _ what: @autoclosure () -> String) throws(WebMError) {
        guard status != 0 else { return }
        let error = parley_webm_error(context)
        switch error {
        case 0: throw .muxerRefused(path: path, what: what())
        case ENOSPC, EFBIG, EDQUOT: throw .diskFull(path: path, bytes: size)
        default: throw .writeFailed(path: path, reason: String(cString: strerror(error)))
        }
    }
}

/// The Opus identification header (RFC 7845 section 5.1) that Matroska keeps as the track's CodecPrivate.
public enum OpusHead {
    /// `OpusHead`, version 1, the channel count, the pre-skip, 48 kHz input, 0 dB gain, mapping family 0.
    public static func bytes(channels: Int, preSkip: Int, inputRate: UInt32 = 48_000) -> [UInt8] {
        var bytes = Array("OpusHead".utf8)
        bytes.append(1)
        bytes.append(UInt8(clamping: channels))
        bytes += [UInt8(preSkip & 0xFF), UInt8((preSkip >> 8) & 0xFF)]
        bytes += [0, 8, 16, 24].map { UInt8((inputRate >> UInt32($0)) & 0xFF) }
        bytes += [0, 0, 0]
        return bytes
    }
}

/// A chat line as a WebVTT cue in WebM (the WebM project's "WebVTT in WebM": the block holds the cue identifier,
/// a line of settings and the payload, each ended by a line feed).
public enum WebVTTCue {
    /// The block for one chat line: identifier `chat-SEQ`, no settings, `sender: text` as the payload (what players
    /// show; a `<v>` voice span would be dropped by most). `&`, `<` and `>` are escaped so no text reads as a tag or
    /// as `-->`; line breaks and other control characters become spaces (a cue is one line here).
    public static func block(sequence: UInt64, sender: String, text: String) -> [UInt8] {
        Array("chat-\(sequence)\n\n\(escape(sender)): \(escape(text))".utf8)
    }

    /// Text with the characters WebVTT reserves escaped and control characters replaced by spaces.
    public static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default:
                if scalar.properties.generalCategory == .control {
                    out += " "
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
