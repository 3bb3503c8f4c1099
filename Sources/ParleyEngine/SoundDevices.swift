import ParleyDevices
import ParleyMedia

/// The call's real microphone and speaker while they are open, and what the engine keeps about them: their names
/// and the device lists as last seen (to say what changed), the echo canceller between them, how the microphone's
/// blocks arrive, and how often each failed. Changed on the engine's loop only.
struct SoundDevices {
    /// The real microphone while one is open: it paces sending (the 20 ms timer only paces other sources).
    var microphone: MicrophoneCapture?
    var microphoneName: String?
    /// How often the open microphone hands audio over, when its layer can tell.
    var microphoneLatency: Duration?
    /// The real speaker while one is open: it asks for each block (play-out paced by the device's clock).
    var speaker: SpeakerPlayout?
    var speakerName: String?
    /// Speaker underruns as last written to the log (each change is logged once, at the statistics tick).
    var speakerUnderrunsLogged = (mixLate: 0, device: 0)
    /// The sound server's device watch while real devices are open.
    var deviceWatch: (any AudioDeviceWatch)?
    /// The device lists as last seen, to say what changed.
    var knownDevices: (microphones: [AudioDeviceInfo], speakers: [AudioDeviceInfo])?
    var echoCanceller: EchoCanceller?
    /// When an unmuted microphone delivering only zeros is worth a notice.
    var microphoneSilence = MicrophoneSilenceWatch()
    /// When the microphone's blocks reached the engine's loop.
    var microphoneGaps = ArrivalGaps(limit: AudioSender.frameDuration * 2)
    /// Times the microphone and the speaker failed mid-call (the first failure falls back to the default device).
    var microphoneFailures = 0
    var speakerFailures = 0
    /// How the engine loop's thread got scheduled (`AudioThreadPriority.raiseCurrentThreadNice`).
    var mediaThread: AudioThreadScheduling?
    /// How the process's session group got weighted (`AudioThreadPriority.raiseSessionGroup`), put back on leaving.
    var sessionGroup: AudioThreadScheduling?
}
