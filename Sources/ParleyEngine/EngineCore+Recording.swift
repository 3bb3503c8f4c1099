import Foundation
import ParleyMedia
import ParleyRoom
import ParleyWire

/// Recording the call to a WebM file (`--record`, `R`): starting and stopping, telling the room, and what the media
/// paths hand the recorder. A write that fails (a full disk) stops the recording with a notice; the call goes on.
extension EngineCore {

    /// Starts recording to the configured path (or a new file next to it), unless the room forbids it.
    func startRecording() {
        guard recording.recorder == nil else { return }
        guard case .joined = phase, let room = joined else {
            emit(.alert(.message("Recording starts once the call is joined")))
            return
        }
        if let why = recording.forbidden {
            emit(.alert(.message("Not recording: recording is not allowed in \(room.room) (\(why))")))
            return
        }
        let path = RecordingPath.next(
            configured: configuration.recording.path, room: room.room,
            exists: { FileManager.default.fileExists(atPath: $0) })
        // Shared terminals are not in the WebM: each is an asciicast beside it (`recordShare`).
        let members = remote.peers.values.filter { !$0.info.isTerminal }.sorted { $0.info.id < $1.info.id }.map {
            peer in
            RecordingPlan.Member(
                id: peer.info.id, name: peer.info.label, broadcasts: peer.info.role == .broadcaster,
                sendsVideo: !peer.info.videoMuted,
                pictureSize: peer.lastFrameSize.map { RecordingPlan.VideoSize(width: $0.width, height: $0.height) })
        }
        let plan = RecordingPlan(members: members, audioPerMember: configuration.recording.audioPerMember)
        do {
            recording.recorder = try CallRecorder(path: path, plan: plan, at: now)
            recording.startedAt = now
        } catch {
            emit(.alert(.message("Not recording: \(error)")))
            return
        }
        recording.started += 1
        for peer in remote.peers.values where peer.info.isTerminal {
            if let screen = peer.share.screen { recordShare(screen, from: peer) }
        }
        // Every video track opens on a keyframe: ask each sender for one now rather than wait for the next.
        for peer in remote.peers.values where plan.tracks.contains(where: { $0.member == peer.info.id }) {
            sendKeyframeRequest(for: peer)
        }
        flushMedia()
        signalingLink.connection?.send(.recording(RecordingChange(recording: true)))
        let videos = plan.tracks.filter(\.isVideo).count
        emit(.notice("Recording to \(path): \(videos) video track\(videos == 1 ? "" : "s"), audio and chat"))
        logger.notice("recording started", metadata: ["path": "\(path)", "tracks": "\(plan.tracks.count)"])
    }

    /// Stops recording and completes the file; `problem` says why when it was not asked for.
    func stopRecording(problem: String? = nil) {
        guard let recorder = recording.recorder else { return }
        recording.recorder = nil
        let casts = recording.casts.values.map(\.path).sorted()
        for cast in recording.casts.values { cast.close() }
        recording.casts.removeAll()
        if !casts.isEmpty { emit(.notice("Shared terminals recorded beside it: " + casts.joined(separator: ", "))) }
        signalingLink.connection?.send(.recording(RecordingChange(recording: false)))
        if let problem {
            emit(.alert(.message("Recording stopped: \(problem). \(recorder.path) plays up to that point")))
            logger.warning("recording stopped", metadata: ["path": "\(recorder.path)", "problem": "\(problem)"])
            return
        }
        guard !recorder.isEmpty else {
            // Stopped before the first block arrived: no file rather than an empty one.
            try? FileManager.default.removeItem(atPath: recorder.path)
            emit(.notice("Recording stopped before anything arrived: no file written"))
            return
        }
        do {
            let (seconds, bytes) = try recorder.finish(at: now)
            let megabytes = (Double(bytes) / 1_048_576 * 10).rounded() / 10
            emit(.notice("Recording saved: \(recorder.path) (\(Int(seconds.rounded())) s, \(megabytes) MiB)"))
            logger.notice("recording saved", metadata: ["path": "\(recorder.path)", "bytes": "\(bytes)"])
        } catch {
            emit(.alert(.message("Recording stopped: \(error). \(recorder.path) plays up to that point")))
        }
    }

    /// Runs `write` on the recorder; a failure (a full disk) ends the recording, never the call.
    func record(_ write: (CallRecorder) throws -> Void) {
        guard let recorder = recording.recorder else { return }
        do {
            try write(recorder)
        } catch {
            stopRecording(problem: "\(error)")
        }
    }

    /// What the relay said about the room's recordings when this member joined, and `--record`'s start.
    func recordingJoined(_ room: JoinedRoom) {
        recording.forbidden = room.recordingForbidden
        emit(.recordingRule(forbidden: room.recordingForbidden, by: nil))
        let encrypted = room.encryption != nil
        for id in room.recorders ?? [] {
            guard let member = room.members.first(where: { $0.id == id }) else { continue }
            emit(.recording(ParticipantID(id), name: member.label, active: true, encrypted: encrypted))
        }
        if configuration.recording.startsAtJoin, recording.started == 0 {
            if media.isBound { startRecording() } else { recording.awaitsMedia = true }
        } else if recording.recorder != nil {
            // Back after a reconnection: the room hears again that this member records.
            signalingLink.connection?.send(.recording(RecordingChange(recording: true)))
        }
    }

    /// A member who joins while this one records has no video track (Matroska lists tracks before the first frame):
    /// say so, once, rather than leave them silently out of the picture.
    func recordingMet(_ member: MemberInfo) {
        // A shared terminal is recorded in a file of its own from its first screen on.
        guard let recorder = recording.recorder, member.role == .broadcaster, !member.isTerminal,
            !recorder.videoMembers.contains(member.id)
        else { return }
        emit(
            .notice(
                "\(member.label) joined after the recording started: their picture is not in it "
                    + "(R twice starts a new file with everyone)"))
    }

    /// A member started or stopped recording (the relay's notice).
    func recordingNotice(_ notice: RecordingNotice) {
        emit(
            .recording(
                ParticipantID(notice.id), name: notice.name, active: notice.recording,
                encrypted: notice.encrypted ?? false))
    }

    /// The host allowed or forbade recording: a recording here stops when it is forbidden.
    func recordingPolicyChanged(_ policy: RecordingPolicy) {
        let by = policy.by ?? "the host"
        recording.forbidden = policy.allowed ? nil : "\(by) forbade it"
        emit(.recordingRule(forbidden: recording.forbidden, by: by))
        if !policy.allowed, recording.recorder != nil {
            stopRecording()
            emit(.alert(.message("\(by), the host, forbade recording: your recording stopped and was saved")))
        }
    }

    /// The recorder's once-a-second checkpoint; a sender whose track still waits for a keyframe (the request at
    /// the start was lost, or a frame did not decode) is asked again, rather than waiting for its next one.
    func recordingTick() {
        guard let recorder = recording.recorder else { return }
        var checkpointed = false
        record { checkpointed = try $0.tick(at: now) }
        guard checkpointed else { return }
        for member in recorder.videoMembers where recorder.waitsForKeyframe(member) {
            if let peer = remote.peers[member] { sendKeyframeRequest(for: peer) }
        }
    }
}

extension RecordingPlan.Track {
    /// The member a track belongs to, nil for the mix and the chat.
    var member: UInt32? {
        switch self {
        case .video(let member, _, _), .memberAudio(let member, _): member
        case .mixedAudio, .chat: nil
        }
    }

    var isVideo: Bool {
        if case .video = self { return true }
        return false
    }
}

/// Where a recording goes: the configured path (without one, `parley-ROOM-YYYYMMDD-HHMMSS.webm` in the current
/// folder), or when that file exists `NAME-2.webm`, `NAME-3.webm`…: a recording never overwrites a file (a second
/// `R`, a second call from the lobby, yesterday's recording).
public enum RecordingPath {
    /// The path of the next recording, given which files exist.
    public static func next(
        configured: String?, room: String, date: Date = Date(), exists: (String) -> Bool
    ) -> String {
        let base = configured ?? defaultName(room: room, date: date)
        guard exists(base) else { return base }
        let stem = base.lowercased().hasSuffix(".webm") ? String(base.dropLast(5)) : base
        var number = 2
        while exists("\(stem)-\(number).webm") { number += 1 }
        return "\(stem)-\(number).webm"
    }

    /// `parley-ROOM-YYYYMMDD-HHMMSS.webm`, the room's characters other than letters, digits, `-` and `_` as `_`.
    public static func defaultName(room: String, date: Date) -> String {
        let safe = String(room.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "parley-\(safe)-\(parts.year ?? 0)\(two(parts.month))\(two(parts.day))-"
            + "\(two(parts.hour))\(two(parts.minute))\(two(parts.second)).webm"
    }
}

extension EngineCore {
    /// A shared terminal's screen, applied: into the recording's asciicast for it (made at its first screen).
    func recordShare(_ screen: TerminalScreen, from peer: PeerReceiver) {
        guard let recorder = recording.recorder else { return }
        let seconds =
            Double((now - recording.startedAt).components.seconds)
            + Double((now - recording.startedAt).components.attoseconds) / 1e18
        do {
            if recording.casts[peer.info.id] == nil {
                recording.casts[peer.info.id] = try ShareCast(
                    recording: recorder.path, name: peer.info.name, screen: screen,
                    startedAt: Date().timeIntervalSince1970 - seconds)
            }
            try recording.casts[peer.info.id]?.record(screen, at: seconds)
        } catch {
            recording.casts[peer.info.id]?.close()
            recording.casts[peer.info.id] = nil
            emit(.alert(.message("\(peer.info.label) is no longer recorded: \(error)")))
        }
    }
}
