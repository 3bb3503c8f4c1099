// MARK: - Engine events

extension RoomState {
    /// Applies an event from the engine; returns what the engine must do in answer.
    mutating func apply(_ event: RoomEvent) -> [RoomEffect] {
        var effects: [RoomEffect] = []
        switch event {
        case .joined, .joinFailed, .userJoined, .userOffline, .sharesTerminal, .shareController:
            applyMembers(event, effects: &effects)
        case .firstLocalFrame, .firstRemoteFrame, .remoteVideoMuted, .remoteAudioMuted, .remoteStats, .localStats,
            .dominantSpeaker, .audioLevel, .microphoneLevel, .cameraStopped, .cannotDecrypt:
            applyMedia(event, effects: &effects)
        case .chatMessage, .channelMessage, .directMessage, .directConversation, .directProblem, .earlierChat, .notice,
            .alert:
            applyChat(event)
        case .hostChanged, .roleChanged, .removedFromRoom, .recording, .recordingRule, .handRaised, .security,
            .mediaOverTCP:
            applyRoles(event)
        }
        normalize()
        return effects
    }

    /// Joining, and members arriving and leaving.
    private mutating func applyMembers(_ event: RoomEvent, effects: inout [RoomEffect]) {
        switch event {
        case .joined(let localID):
            sessions[0].id = localID
            sessions[0].connection = .connected
            sessions.removeAll { !$0.isLocal && $0.id == localID }
            connection = .connected
            disconnectedAt = nil
            if callStartedAt == nil { callStartedAt = now }
            if sessions[0].joinedAt == nil {
                sessions[0].joinedAt = now
                record("You joined \(roomName) as \(localSession.name)")
            }
            log("You joined \(roomName) as \(localSession.name)", kind: .system)
            changes.insert([.status, .tiles])

        case .sharesTerminal(let id, let owner):
            guard let index = index(of: id), index > 0 else { break }
            sessions[index].sharedBy = ChatLog.clean(owner)
            changes.insert(.tiles)

        case .shareController(let id, let controller):
            guard let index = index(of: id), index > 0, sessions[index].controlledBy != controller else { break }
            sessions[index].controlledBy = controller
            let terminal = sessions[index].name
            if let controller, controller == localID {
                shareKeysToCall = false
                log(
                    "You can type in \(terminal): show it large (its number twice) and type; Ctrl-] gives your keys "
                        + "back to the call", kind: .system)
            } else if let controller, let name = sessions.first(where: { $0.id == controller })?.name {
                log("\(name) can type in \(terminal)", kind: .system)
            } else {
                log("Nobody can type in \(terminal) now", kind: .system)
            }
            changes.insert(.tiles)

        case .joinFailed(let reason):
            connection = .failed(reason: reason)
            log("Could not join \(roomName): \(reason)", kind: .alert)
            changes.insert(.status)

        case .userJoined(let id, let name, let role, let inCallFor):
            guard id != localID || localID == .unassigned else { break }
            let name = ChatLog.clean(name)
            // The relay's count of how long each member has been there, not when this client first saw them.
            let joinedAt = inCallFor.map { now - $0 }
            if takeBack(id, name: name, role: role) {
                if removalsAwaitingReturn.remove(name.lowercased()) != nil, hostID == localID {
                    log("You removed \(name) from the room", kind: .system)
                    effects.append(.removeParticipant(id))
                }
                break
            }
            if let index = index(of: id) {
                sessions[index].name = name
                sessions[index].role = role
                if let joinedAt { sessions[index].joinedAt = joinedAt }
            } else {
                var session = VideoSession(id: id, name: name, role: role)
                session.joinedAt = joinedAt ?? now
                sessions.append(session)
                log(role == .audience ? "\(name) joined the audience" : "\(name) joined", kind: .system)
                record(role == .audience ? "\(name) joined the audience" : "\(name) joined")
            }
            changes.insert(.tiles)

        case .userOffline(let id, let reason):
            guard let index = index(of: id), index > 0 else { break }
            let name = sessions[index].name
            if recorders.contains(where: { $0.id == id }) {
                recorders.removeAll { $0.id == id }
                changes.insert([.status, .controls])
            }
            if reason == .dropped {
                // Most likely back in a moment through another relay: the tile waits for them.
                sessions[index].droppedAt = now
                sessions[index].connection = .reconnecting
                sessions[index].videoSize = nil
                sessions[index].speakingLevel = 0
                log("\(name) lost the connection: reconnecting…", kind: .system)
                changes.insert(.tiles)
                break
            }
            sessions.remove(at: index)
            let text =
                switch reason {
                case .quit: "\(name) left"
                case .timeout: "\(name) stopped responding and was removed"
                case .dropped: "\(name) dropped out of the call"
                case .removed: "\(name) was removed by the host"
                }
            log(text, kind: .system)
            record(text)
            changes.insert(.tiles)

        default:
            break
        }
    }

    /// Pictures, mutes, statistics, speaking and decryption.
    private mutating func applyMedia(_ event: RoomEvent, effects: inout [RoomEffect]) {
        switch event {
        case .firstLocalFrame(let size):
            sessions[0].videoSize = size
            sessions[0].media.resolution = size
            changes.insert(.tiles)

        case .firstRemoteFrame(let id, let size):
            // Media can overtake presence: keep the frame under a provisional name until userJoined arrives.
            guard id != localID else { break }
            let slot: Int
            if let existing = index(of: id) {
                slot = existing
            } else {
                sessions.append(VideoSession(id: id, name: id.description))
                slot = sessions.count - 1
            }
            sessions[slot].videoSize = size
            sessions[slot].media.resolution = size
            sessions[slot].connection = .connected
            changes.insert(.tiles)

        case .remoteVideoMuted(let id, let muted):
            guard let index = index(of: id), index > 0, sessions[index].videoMuted != muted else { break }
            sessions[index].videoMuted = muted
            if !muted { effects.append(.requestKeyframe(id)) }
            changes.insert(.tiles)

        case .remoteAudioMuted(let id, let muted):
            guard let index = index(of: id), index > 0 else { break }
            sessions[index].audioMuted = muted
            changes.insert(.tiles)

        case .remoteStats(let id, let info):
            guard let index = index(of: id), index > 0 else { break }
            sessions[index].media = info
            if statsShown { changes.insert(.tiles) }

        case .localStats(let info):
            sessions[0].media = info
            if statsShown { changes.insert(.tiles) }

        case .dominantSpeaker(let id):
            guard dominantSpeaker != id else { break }
            dominantSpeaker = id
            changes.insert(.tiles)

        case .audioLevel(let id, let level):
            guard let index = index(of: id) else { break }
            let wasSpeaking = sessions[index].isSpeaking
            sessions[index].speakingLevel = min(1, max(0, level.isNaN ? 0 : level))
            if sessions[index].isSpeaking != wasSpeaking { changes.insert(.tiles) }

        case .microphoneLevel(let level):
            let clamped = level.map { $0.isNaN ? 0 : min(1, max(0, $0)) }
            let before = microphoneLevel.map(RoomState.meterStep)
            microphoneLevel = clamped
            if clamped.map(RoomState.meterStep) != before { changes.insert(.tiles) }

        case .cameraStopped(let text):
            log(text, kind: .alert)
            if !sessions[0].videoMuted {
                sessions[0].videoMuted = true
                changes.insert([.controls, .tiles])
            }

        case .cannotDecrypt(let id, let failing):
            guard let index = index(of: id), sessions[index].cannotDecrypt != failing else { break }
            sessions[index].cannotDecrypt = failing
            if failing {
                log("Can't decrypt \(sessions[index].name): they use a different room secret", kind: .alert)
            }
            changes.insert(.tiles)

        default:
            break
        }
    }

    /// The room's chat, direct messages, notices and connection alerts.
    private mutating func applyChat(_ event: RoomEvent) {
        switch event {
        case .chatMessage(let from, let text):
            guard from != localID, !text.allSatisfy(\.isWhitespace) else { break }
            log(text, kind: .chat, sender: session(from)?.name ?? from.description)
            countUnseenChat()

        case .channelMessage(let sender, let text):
            guard !text.allSatisfy(\.isWhitespace) else { break }
            log(text, kind: .chat, sender: sender)
            countUnseenChat()

        case .directMessage(let peer, let sender, let text):
            guard !text.allSatisfy(\.isWhitespace) else { break }
            if directPeer?.lowercased() == peer.lowercased() {
                directLog.append(
                    ChatEntry(
                        sender: sender, text: text, time: now,
                        kind: sender.lowercased() == peer.lowercased() ? .chat : .own))
                changes.insert(.chat)
            } else if sender.lowercased() == peer.lowercased() {
                directUnread += 1
                lastDirectPeer = peer
                show("Message from \(peer): press \(keyLabel(.direct)) to read and answer")
                changes.insert(.chat)
            }

        case .directConversation(let peer, let entries):
            guard directPeer?.lowercased() == peer.lowercased() else { break }
            directLog = ChatLog(capacity: settings.chatHistory)
            for entry in entries { directLog.append(entry) }
            if entries.isEmpty {
                directLog.append(ChatEntry(sender: nil, text: "No messages with \(peer) yet", time: now, kind: .system))
            }
            changes.insert(.chat)

        case .directProblem(let text):
            if directPeer != nil {
                directLog.append(ChatEntry(sender: nil, text: text, time: now, kind: .alert))
                changes.insert(.chat)
            } else {
                show(text)
            }

        case .earlierChat(let entries):
            guard !entries.isEmpty else { break }
            chatLog.prepend(
                entries + [
                    ChatEntry(
                        sender: nil, text: "earlier in \(roomName) above", time: now,
                        kind: .system)
                ])
            changes.insert(.chat)

        case .notice(let text):
            guard !text.isEmpty else { break }
            show(text)

        case .alert(let alert):
            applyAlert(alert)

        default:
            break
        }
    }

    /// The host, roles, removal, recording, raised hands and the call's security.
    private mutating func applyRoles(_ event: RoomEvent) {
        switch event {
        case .hostChanged(let id):
            if hostID != id, let name = id == localID ? "You" : session(id)?.name {
                record("\(name) \(id == localID ? "are" : "is") the host")
            }
            hostID = id == .unassigned ? nil : id
            if id == .unassigned {
                // Nobody hosts for now (the relay awaits the host it had before it restarted).
            } else if id == localID {
                log("You are the host: /allow NAME lets someone broadcast, /remove NAME removes them", kind: .system)
            } else if let name = session(id)?.name {
                log("\(name) is the host", kind: .system)
            }
            // The join's host notice comes after the members already there: the greeting is the newest line.
            if let greeting, connection == .connected {
                self.greeting = nil
                log(greeting, kind: .alert)
            }
            changes.insert(.tiles)

        case .roleChanged(let id, let role):
            guard let index = index(of: id), sessions[index].role != role else { break }
            sessions[index].role = role
            let who = index == 0 ? "You are" : "\(sessions[index].name) is"
            log(role == .broadcaster ? "\(who) now broadcasting" : "\(who) now in the audience", kind: .system)
            record(role == .broadcaster ? "\(who) now broadcasting" : "\(who) now in the audience")
            changes.insert([.tiles, .controls])

        case .removedFromRoom(let text):
            connection = .failed(reason: text)
            log(text, kind: .alert)
            changes.insert(.status)

        case .recording(let id, let name, let active, let encrypted):
            recorders.removeAll { $0.id == id }
            if active { recorders.append(Recorder(id: id, name: name, encrypted: encrypted)) }
            let text = Self.recordingText(who: id == localID ? nil : name, active: active, encrypted: encrypted)
            log(text, kind: id == localID ? .system : .alert)
            record(text)
            changes.insert([.status, .controls])

        case .recordingRule(let forbidden, let by):
            let before = recordingForbidden
            recordingForbidden = forbidden
            guard before != forbidden, let by else { break }
            let text = forbidden == nil ? "\(by) allows recording again" : "\(by) forbade recording in this room"
            log(text, kind: .system)
            record(text)

        case .handRaised(let id):
            let name = session(id)?.name ?? id.description
            log("\(name) asks to broadcast: type /allow \(name) in the chat to let them", kind: .alert)

        case .security(let security):
            self.security = security
            if let mode = security.encryption, let code = security.safetyCode {
                log(
                    "End-to-end encrypted (\(mode)). Safety code \(code): compare it with the others by voice",
                    kind: .system)
            }
            changes.insert(.status)

        case .mediaOverTCP(let overTCP):
            mediaOverTCP = overTCP
            changes.insert(.status)

        default:
            break
        }
    }

    mutating func applyAlert(_ alert: RoomAlert) {
        switch alert {
        case .interrupted:
            connection = .interrupted
            if disconnectedAt == nil { disconnectedAt = now }
            for index in sessions.indices where index > 0 { sessions[index].connection = .reconnecting }
            log("Connection interrupted", kind: .alert)
            record("Connection interrupted")
        case .reconnecting:
            connection = .reconnecting
            log("Reconnecting…", kind: .alert)
        case .reconnected:
            connection = .connected
            disconnectedAt = nil
            record("Reconnected")
            for index in sessions.indices where index > 0 && sessions[index].droppedAt == nil {
                sessions[index].connection = sessions[index].videoSize == nil ? .connecting : .connected
            }
            log("Reconnected", kind: .alert)
        case .lost:
            connection = .lost
            if disconnectedAt == nil { disconnectedAt = now }
            // The engine goes on trying: a long interruption is not a failure until it gives up, so it is said as
            // such, and "Reconnected" follows when it is back.
            log("Still reconnecting: the relay has not answered for a while", kind: .alert)
        case .message(let text):
            guard !text.isEmpty else { return }
            log(text, kind: .alert)
        }
        changes.insert([.status, .tiles])
    }

    /// A chat line arrived: with the chat pane hidden, the header counts it (nothing else would show it).
    mutating func countUnseenChat() {
        guard flowViewsHidden, !isChatInputOpen else { return }
        unseenChat += 1
        changes.insert(.status)
    }

    func index(of id: ParticipantID) -> Int? {
        sessions.firstIndex { $0.id == id }
    }
}

extension RoomState {
    /// The chat and activity line for a recording starting or stopping (`who` nil: this member).
    public static func recordingText(who: String?, active: Bool, encrypted: Bool) -> String {
        let subject = who ?? "You"
        guard active else { return "\(subject) stopped recording" }
        let view = who == nil ? "your" : "their"
        return "\(subject) started recording the call"
            + (encrypted ? " (\(view) decrypted view of this end-to-end encrypted room)" : "")
    }
}
