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
}
