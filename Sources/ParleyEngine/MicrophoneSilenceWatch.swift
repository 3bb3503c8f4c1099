// A microphone that opens fine but delivers only zeros (a hardware mute switch, a dead headset, a sound server
// routing nothing) looks like a working call to its user while the others hear nothing. A live microphone's samples
// are never all zero for long, even in a quiet room, so seconds of all-zero blocks point at the device. The user is
// told once a call; muting, sound, or another microphone start the watch over.

/// Decides when an unmuted microphone delivering digital silence is worth a notice. A value type given "now" with
/// each block; the engine core owns it and says the notice.
struct MicrophoneSilenceWatch: Sendable {
    /// How long an unmuted microphone delivers only all-zero blocks before the user is told.
    static let noticeAfter: Duration = .seconds(5)

    /// When the current run of silent, unmuted blocks began; nil while there is sound or the microphone is muted.
    private(set) var silentSince: Duration?
    /// Whether the notice was given: once a call, even across microphones.
    private(set) var reported = false

    /// One block from the microphone at `now`: `silent` when every sample is zero. True when the user is to be told
    /// now (the first time a run of silence reaches `noticeAfter`).
    mutating func block(at now: Duration, silent: Bool, muted: Bool) -> Bool {
        guard silent, !muted else {
            silentSince = nil
            return false
        }
        let since = silentSince ?? now
        silentSince = since
        guard !reported, now - since >= Self.noticeAfter else { return false }
        reported = true
        return true
    }

    /// Another microphone was opened: its silence counts from its own first block.
    mutating func microphoneChanged() {
        silentSince = nil
    }
}
