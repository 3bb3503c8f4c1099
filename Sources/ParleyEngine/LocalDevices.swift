import Foundation
import ParleyDevices
import ParleyMedia

/// The device layers a call opens its microphone, speaker and cameras through. Production uses the system's
/// (PortAudio, V4L2); tests inject layers whose devices fail on cue.
public struct MediaDevices: Sendable {
    /// Microphones and speakers.
    public var audio: any AudioDeviceLayer
    /// Cameras.
    public var cameras: any CameraDeviceLayer

    /// Layers as given.
    public init(audio: any AudioDeviceLayer, cameras: any CameraDeviceLayer) {
        self.audio = audio
        self.cameras = cameras
    }

    /// The machine's real devices: sound through the PulseAudio (or PipeWire) server when one answers, else
    /// PortAudio. `PARLEY_SOUND=portaudio` keeps PortAudio even with a server.
    public static var system: MediaDevices { MediaDevices(audio: systemAudioLayer, cameras: systemCameras()) }

    /// Chosen once per process (the PulseAudio layer reconnects by itself when its server restarts).
    private static let systemAudioLayer = systemAudio()

    /// The sound layer `system` uses.
    public static func systemAudio() -> any AudioDeviceLayer {
        #if os(Linux)
        if ProcessInfo.processInfo.environment["PARLEY_SOUND"] != "portaudio",
            let pulse = PulseAudioLayer.connectIfRunning()
        {
            return pulse
        }
        #endif
        return PortAudioLayer()
    }
}

extension CallConfiguration {
    /// The configuration with "every camera" replaced by the cameras found, and with a fallback wherever a real
    /// device was asked for and none exists: a synthetic voice for a missing microphone, no playback for a missing
    /// speaker, the camera off (the synthetic picture one `v` away) for a missing camera. The fallbacks are said in
    /// one notice (a machine without sound and camera would otherwise fill the chat before the call begins).
    public func resolvingDevices(_ devices: MediaDevices) -> (configuration: CallConfiguration, notices: [String]) {
        var resolved = self
        var missing: [(device: String, fallback: String)] = []
        if case .microphone = audioSource {
            let found = (try? devices.audio.inputDevices()) ?? []
            if found.isEmpty {
                resolved.audioSource = .synthetic
                missing.append(("microphone", "the others hear a synthetic voice"))
            }
        }
        if case .speaker = audioSink {
            let found = (try? devices.audio.outputDevices()) ?? []
            if found.isEmpty {
                resolved.audioSink = .none
                missing.append(("speaker", "call audio is not played"))
            }
        }
        let wantsCamera = videoSources.contains {
            switch $0 {
            case .camera, .allCameras: true
            case .synthetic, .file: false
            }
        }
        if wantsCamera {
            var cameraError: String?
            let cameras: [CameraInfo]
            do {
                cameras = try devices.cameras.cameras()
            } catch {
                cameras = []
                cameraError = "\(error)"
            }
            var sources: [VideoSourceChoice] = []
            for choice in videoSources {
                if case .allCameras = choice {
                    sources += cameras.map { .camera($0.name) }
                } else {
                    sources.append(choice)
                }
            }
            let hasCamera = sources.contains { if case .camera = $0 { true } else { false } }
            if !hasCamera {
                resolved.cameraOff = true
                missing.append(
                    (
                        "camera",
                        "your camera is off (\(cameraError ?? "no video devices")); turning it on sends a synthetic "
                            + "picture"
                    ))
            }
            if !sources.contains(where: { $0 == .synthetic }) { sources.append(.synthetic) }
            resolved.videoSources = sources
        }
        guard !missing.isEmpty else { return (resolved, []) }
        let devices = missing.map(\.device)
        let named =
            devices.count == 1 ? devices[0] : devices.dropLast().joined(separator: ", ") + " or " + devices.last!
        return (
            resolved,
            ["No \(named) found: " + missing.map(\.fallback).joined(separator: "; ") + " (see `parley devices`)"]
        )
    }
}

/// Blocks of Parley's audio: 20 ms at 48 kHz, mono.
enum DeviceAudioFormat {
    static let sampleRate = 48_000
    static let channels = 1
    static let framesPerBlock = 960
}
