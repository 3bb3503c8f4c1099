import NIOCore
import ParleyDevices
import ParleyMedia
import ParleyRoom
import ParleyWire

// Real microphones, speakers and cameras in a call. Device threads never touch the engine's state: they hop onto
// the engine's event loop with each block (microphone), each request for a block (speaker) or a failure.
//
// Trouble is a notice, never the end of the call: a device that fails to open or stops mid-call is replaced once by
// the system's default device, and if that fails too the call goes on without it (silence sent, nothing played,
// camera off), each step said in the chat pane.

extension EngineCore {
    // MARK: Watching

    /// Starts following the sound server's devices (once per call): a device plugged in or out and a new default
    /// are said in the chat pane. Streams opened on the default move with it by the server's own rule.
    func watchDevices() {
        guard sound.deviceWatch == nil, let bound else { return }
        sound.knownDevices = (
            (try? devices.audio.inputDevices()) ?? [], (try? devices.audio.outputDevices()) ?? []
        )
        sound.deviceWatch = devices.audio.watchDevices { microphones, speakers in
            bound.eventLoop.execute { bound.value.devicesChanged(microphones: microphones, speakers: speakers) }
        }
    }

    func devicesChanged(microphones: [AudioDeviceInfo], speakers: [AudioDeviceInfo]) {
        guard sound.deviceWatch != nil, let known = sound.knownDevices else { return }
        sound.knownDevices = (microphones, speakers)
        for notice in AudioDeviceChanges.notices(from: known, to: (microphones, speakers)) {
            emit(.alert(.message(notice)))
            logger.info("sound devices changed", metadata: ["change": "\(notice)"])
        }
    }

    // MARK: Microphone

    /// Opens the named (nil: default) microphone; on failure falls back to the default once, then to silence.
    func openMicrophone(named name: String?, after notice: String? = nil) {
        guard let bound else { return }
        let stream: any AudioInputStream
        do {
            stream = try devices.audio.openInput(
                named: name, sampleRate: DeviceAudioFormat.sampleRate, channels: DeviceAudioFormat.channels,
                framesPerBlock: DeviceAudioFormat.framesPerBlock)
        } catch {
            let what = name.map { "Microphone \($0)" } ?? "The default microphone"
            if name != nil, sound.microphoneFailures == 0 {
                sound.microphoneFailures += 1
                openMicrophone(named: nil, after: "\(what): \(error); using the default microphone")
            } else {
                emit(.alert(.message("\(what): \(error); sending silence (pick another with --mic or in settings)")))
            }
            return
        }
        if let notice { emit(.alert(.message(notice))) }
        sound.microphoneName = stream.deviceName
        if configuration.echoCancellation, sound.echoCanceller == nil {
            do {
                sound.echoCanceller = try EchoCanceller(
                    sampleRate: DeviceAudioFormat.sampleRate, frameSamples: DeviceAudioFormat.framesPerBlock)
            } catch {
                emit(.alert(.message("Echo cancellation is unavailable: \(error)")))
            }
        }
        sound.microphoneSilence.microphoneChanged()
        sound.microphoneGaps.restart()
        sound.microphoneLatency = stream.latency
        let capture = MicrophoneCapture(
            stream: stream, sampleRate: DeviceAudioFormat.sampleRate,
            framesPerBlock: DeviceAudioFormat.framesPerBlock,
            onBlock: { frame in bound.eventLoop.execute { bound.value.captured(frame) } },
            onFailure: { error in bound.eventLoop.execute { bound.value.microphoneFailed(error) } })
        sound.microphone = capture
        capture.start()
        watchDevices()
        logger.info("microphone open", metadata: ["device": "\(sound.microphoneName ?? "")"])
    }

    /// One block from the real microphone: echo and noise removed, checked for digital silence, encoded, sent.
    func captured(_ frame: AudioFrame) {
        guard sound.microphone != nil, let sender = ownAudio.sender else { return }
        sound.microphoneGaps.arrived(at: now)
        if sound.microphoneSilence.block(
            at: now, silent: frame.samples.allSatisfy { $0 == 0 }, muted: controls.microphoneMuted)
        {
            emit(.alert(.message("Your microphone is silent: pick another with --mic or in settings")))
        }
        var cleaned = frame
        if let echoCanceller = sound.echoCanceller {
            do {
                cleaned.samples = try echoCanceller.capture(frame.samples)
            } catch {
                // A block the canceller cannot take (it names why) goes out unprocessed rather than not at all.
                logger.warning("echo cancellation skipped a block", metadata: ["error": "\(error)"])
            }
        }
        do {
            if let packet = try sender.send(cleaned, sending: sendsMedia && !controls.microphoneMuted) {
                send([packet])
            }
        } catch {
            logger.warning("audio encoding failed", metadata: ["error": "\(error)"])
        }
    }

    /// The microphone stopped mid-call: the default microphone once, then silence.
    func microphoneFailed(_ error: AudioDeviceError) {
        guard let failed = sound.microphone else { return }
        failed.stop()
        sound.microphone = nil
        emit(.microphoneLevel(nil))
        ownAudio.meterReported = nil
        let name = sound.microphoneName ?? "the microphone"
        sound.microphoneFailures += 1
        if sound.microphoneFailures == 1 {
            openMicrophone(
                named: nil, after: "Microphone \(name) stopped (\(error)): switched to the default microphone")
        } else {
            emit(
                .alert(
                    .message(
                        "Microphone \(name) stopped (\(error)): sending silence (pick another with --mic or in settings)"
                    )))
        }
    }

    // MARK: Speaker

    /// Opens the named (nil: default) speaker; on failure the default once, then no playback.
    func openSpeaker(named name: String?, after notice: String? = nil) {
        guard let bound else { return }
        let stream: any AudioOutputStream
        do {
            stream = try devices.audio.openOutput(
                named: name, sampleRate: DeviceAudioFormat.sampleRate, channels: DeviceAudioFormat.channels,
                framesPerBlock: DeviceAudioFormat.framesPerBlock)
        } catch {
            let what = name.map { "Speaker \($0)" } ?? "The default speaker"
            if name != nil, sound.speakerFailures == 0 {
                sound.speakerFailures += 1
                openSpeaker(named: nil, after: "\(what): \(error); using the default speaker")
            } else {
                emit(.alert(.message("\(what): \(error); call audio is not played (pick another with --speaker)")))
            }
            return
        }
        if let notice { emit(.alert(.message(notice))) }
        sound.speakerName = stream.deviceName
        // A device that says when it has room gets each block mixed just then (waited for up to half a block, which
        // its buffer still covers); otherwise blocks are mixed one write ahead and queued.
        let justInTime = stream.tellsWhenWritable
        let playout = SpeakerPlayout(
            stream: stream, sampleRate: DeviceAudioFormat.sampleRate,
            framesPerBlock: DeviceAudioFormat.framesPerBlock, prebufferBlocks: justInTime ? 1 : 2, maxQueuedBlocks: 8,
            justInTime: justInTime ? .milliseconds(10) : nil,
            onDemand: { bound.eventLoop.execute { bound.value.speakerDemand() } },
            onFailure: { error in bound.eventLoop.execute { bound.value.speakerFailed(error) } })
        sound.speaker = playout
        playout.start()
        watchDevices()
        logger.info("speaker open", metadata: ["device": "\(sound.speakerName ?? "")"])
    }

    /// The speaker took a block: mix the next one from the peers' jitter buffers (play-out paced by the device).
    func speakerDemand() {
        guard let speaker = sound.speaker else { return }
        let samples =
            configuration.decodesAudio
            ? mixBlock() : [Int16](repeating: 0, count: DeviceAudioFormat.framesPerBlock)
        sound.echoCanceller?.playback(samples)
        speaker.enqueue(AudioFrame(samples: samples))
    }

    /// The speaker stopped mid-call: the default speaker once, then no playback.
    func speakerFailed(_ error: AudioDeviceError) {
        guard let failed = sound.speaker else { return }
        failed.stop()
        sound.speaker = nil
        let name = sound.speakerName ?? "the speaker"
        sound.speakerFailures += 1
        if sound.speakerFailures == 1 {
            openSpeaker(named: nil, after: "Speaker \(name) stopped (\(error)): switched to the default speaker")
        } else {
            emit(.alert(.message("Speaker \(name) stopped (\(error)): call audio is not played")))
        }
    }

    // MARK: Camera

    /// A video source over the named camera at the profile's size (the nearest format it offers, scaled).
    func openCamera(named name: String) throws -> any VideoSource {
        guard let bound else { throw CallSetupError("the engine is not running") }
        let profile = configuration.profile
        return try CameraSource(
            named: name, layer: devices.cameras, width: profile.width, height: profile.height, fps: profile.fps,
            onFailure: { error in bound.eventLoop.execute { bound.value.cameraFailed(name, error) } })
    }

    /// A camera stopped mid-call: the next camera if there is one, else the camera goes off.
    func cameraFailed(_ name: String, _ error: CameraError) {
        guard let bound else { return }
        onVideoThread { sender in
            guard let next = sender.removeSource(named: name) else { return }
            bound.eventLoop.execute { bound.value.cameraReplaced(name, error, by: next) }
        }
    }

    /// The video thread took a failed camera out: say what is shown instead, or turn the camera off.
    func cameraReplaced(_ name: String, _ error: CameraError, by next: (name: String, isCamera: Bool)) {
        if next.isCamera {
            emit(.alert(.message("Camera \(name) stopped (\(error)): switched to \(next.name)")))
        } else if !controls.cameraOff {
            controls.cameraOff = true
            signalingLink.connection?.send(.mute(MuteChange(video: true)))
            emit(.cameraStopped("Camera \(name) stopped (\(error)): your camera is off"))
        }
    }

    /// `c`: the next source, and a notice naming it.
    func switchCamera() {
        guard let bound else { return }
        onVideoThread { sender in
            let notice: String
            if sender.sourceCount > 1 {
                sender.switchSource()
                notice = "Camera: \(sender.currentSourceName)"
            } else {
                notice = "Only one camera: \(sender.currentSourceName)"
            }
            bound.eventLoop.execute { bound.value.emit(.notice(notice)) }
        }
    }
}
