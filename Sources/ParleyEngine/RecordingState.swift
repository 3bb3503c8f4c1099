import Foundation
import ParleyWire

/// This member's recording as the engine keeps it: the file being written, the room's rule, how many were started,
/// and whether `--record` waits for the media socket. Changed on the engine's loop only.
struct RecordingState {
    /// The recording being written, if any.
    var recorder: CallRecorder?
    /// Why the room forbids recording, nil while it allows it.
    var forbidden: String?
    /// Recordings this call started.
    var started = 0
    /// `--record` waits for the media socket to be bound: its tracks then open on keyframes asked for at once, not
    /// a bind's round trips later.
    var awaitsMedia = false
    /// When the recording being written started (the engine's clock): its shared terminals' casts count from it.
    var startedAt: Duration = .zero
    /// The shared terminals in the recording, one asciicast each, by member.
    var casts: [UInt32: ShareCast] = [:]
}

/// One shared terminal of a recording, written as an asciicast v2 file beside the WebM: the screen as the viewer
/// had it when the terminal first showed in the recording, then every change, on the WebM's timeline.
final class ShareCast {
    let path: String
    private let file: FileHandle
    private var writer: AsciicastWriter
    private var last: TerminalScreen?
    private var sequence: UInt32 = 0

    /// Creates the file (`CALL-NAME-terminal.cast` beside `CALL.webm`).
    init(recording: String, name: String, screen: TerminalScreen, startedAt wallSeconds: Double) throws {
        let base = recording.hasSuffix(".webm") ? String(recording.dropLast(5)) : recording
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
        path = base + "-" + safe + "-terminal.cast"
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CallSetupError("cannot create \(path)")
        }
        file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        writer = AsciicastWriter(columns: screen.columns, rows: screen.rows)
        try write(writer.header(startedAt: wallSeconds, title: name + "'s terminal"))
    }

    /// The screen at `seconds` into the recording: what changed since the last one written.
    func record(_ screen: TerminalScreen, at seconds: Double) throws {
        if let last, last.rows != screen.rows || last.columns != screen.columns {
            writer = AsciicastWriter(columns: screen.columns, rows: screen.rows)
            try write(writer.resize(columns: screen.columns, rows: screen.rows, at: seconds))
        }
        sequence &+= 1
        let update = ShareUpdate.between(last, screen, sequence: sequence)
        guard update.kind == .fullScreen || !update.spans.isEmpty || last?.cursor != screen.cursor else { return }
        try write(writer.event(update, at: max(0, seconds)))
        last = screen
    }

    func close() { try? file.close() }

    private func write(_ text: String) throws { try file.write(contentsOf: Data(text.utf8)) }
}
