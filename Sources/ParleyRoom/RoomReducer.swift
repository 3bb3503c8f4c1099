/// The room's one entry point: applies an input to the state and returns the work for the engine and shell.
/// Pure: no clocks, no I/O; time arrives in `.key` and `.tick` inputs.
public func reduce(_ state: inout RoomState, _ input: RoomInput) -> [RoomEffect] {
    switch input {
    case .event(let event):
        return state.apply(event)
    case .key(let key, let time):
        state.advanceClock(to: time)
        return state.handle(key)
    case .tick(let time):
        state.advanceClock(to: time)
        if state.callStartedAt != nil { state.changes.insert(.status) }
        return []
    case .container(let rect):
        if state.container != rect {
            state.container = rect
            state.normalize()
            state.changes.insert(.tiles)
        }
        return []
    }
}

// MARK: - Clock

extension RoomState {
    mutating func advanceClock(to time: Duration) {
        if time > now { now = time }
        updateFeaturedSpeaker()
        if let pending = pendingDigit, now - pending.at > settings.doubleKeyWindow {
            pendingDigit = nil
            changes.insert(.tiles)
        }
        if let notice, now >= notice.until {
            self.notice = nil
            changes.insert(.status)
        }
    }

    /// The meter's resolution: a level is drawn as one of `meterSteps + 1` fillings; only a change of step redraws.
    public static let meterSteps = 8

    /// 0…`meterSteps` for a level 0…1.
    public static func meterStep(_ level: Double) -> Int { Int((level * Double(meterSteps)).rounded()) }

    mutating func show(_ text: String) {
        notice = Notice(text: text, until: now + settings.noticeDuration)
        changes.insert(.status)
    }

    /// Adds a line to the activity log (bounded).
    mutating func record(_ text: String) {
        activity.append(ActivityEntry(at: now, text: text))
        if activity.count > Self.activityLimit { activity.removeFirst(activity.count - Self.activityLimit) }
        if rosterShown { changes.insert(.overlay) }
    }

    mutating func log(_ text: String, kind: ChatKind, sender: String? = nil) {
        chatLog.append(ChatEntry(sender: sender, text: text, time: now, kind: kind))
        changes.insert(.chat)
    }

    /// The container used for numbering and hit tests; before the shell reports one, every tile is on one page.
    var effectiveContainer: CellRect {
        container ?? CellRect(x: 0, y: 0, width: 10_000, height: 10_000)
    }

    /// The layout in the current container.
    public var currentLayout: VideoLayout { layout(in: effectiveContainer) }

    /// Re-establishes the rules after sessions, roles or the container changed: fullscreen needs 3 or more tiles
    /// and a visible participant; selection and page must still point somewhere.
    mutating func normalize() {
        let visible = visibleTiles
        if let full = fullscreen, visible.count < 3 || !visible.contains(where: { $0.id == full }) {
            fullscreen = nil
            changes.insert(.tiles)
        }
        if let chosen = selected, !visible.contains(where: { $0.id == chosen }) {
            selected = nil
            changes.insert(.tiles)
        }
        let pages = currentLayout.pageCount
        if page >= pages {
            page = max(0, pages - 1)
            changes.insert(.tiles)
        }
        updateFeaturedSpeaker()
    }

    /// Speaker view follows the dominant speaker among the peers (the local user is never featured: you know
    /// what you look like), at most once per `speakerHold`; a featured speaker who leaves the stage is replaced
    /// at once. A change held back is made by a later tick, if that speaker still holds the floor.
    mutating func updateFeaturedSpeaker() {
        let peers = stage.dropFirst()
        if let featured = featuredSpeaker, !peers.contains(where: { $0.id == featured }) {
            featuredSpeaker = nil
            featuredSince = nil
            changes.insert(.tiles)
        }
        guard let dominant = dominantSpeaker, dominant != localID, dominant != featuredSpeaker,
              peers.contains(where: { $0.id == dominant })
        else { return }
        if let since = featuredSince, now - since < Self.speakerHold { return }
        featuredSpeaker = dominant
        featuredSince = now
        changes.insert(.tiles)
    }

    func keyLabel(_ command: RoomCommand) -> String {
        settings.keymap.keys(for: command).first.map(KeyName.label) ?? command.rawValue
    }
}

// MARK: - Engine events

extension RoomState {
    mutating func apply(_ event: RoomEvent) -> [RoomEffect] {
        var effects: [RoomEffect] = []
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

        case .joinFailed(let reason):
            connection = .failed(reason: reason)
            log("Could not join \(roomName): \(reason)", kind: .alert)
            changes.insert(.status)

        case .userJoined(let id, let name, let role):
            guard id != localID || localID == .unassigned else { break }
            let name = ChatLog.clean(name)
            if let index = index(of: id) {
                sessions[index].name = name
                sessions[index].role = role
            } else {
                var session = VideoSession(id: id, name: name, role: role)
                session.joinedAt = now
                sessions.append(session)
                log(role == .audience ? "\(name) joined the audience" : "\(name) joined", kind: .system)
                record(role == .audience ? "\(name) joined the audience" : "\(name) joined")
            }
            changes.insert(.tiles)

        case .userOffline(let id, let reason):
            guard let index = index(of: id), index > 0 else { break }
            let name = sessions[index].name
            sessions.remove(at: index)
            let text = switch reason {
            case .quit: "\(name) left"
            case .timeout: "\(name) stopped responding and was removed"
            case .dropped: "\(name) dropped out of the call"
            case .removed: "\(name) was removed by the host"
            }
            log(text, kind: .system)
            record(text)
            changes.insert(.tiles)

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

        case .chatMessage(let from, let text):
            guard from != localID, !text.allSatisfy(\.isWhitespace) else { break }
            log(text, kind: .chat, sender: session(from)?.name ?? from.description)

        case .channelMessage(let sender, let text):
            guard !text.allSatisfy(\.isWhitespace) else { break }
            log(text, kind: .chat, sender: sender)

        case .directMessage(let peer, let sender, let text):
            guard !text.allSatisfy(\.isWhitespace) else { break }
            if directPeer?.lowercased() == peer.lowercased() {
                directLog.append(ChatEntry(sender: sender, text: text, time: now,
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
            chatLog.prepend(entries + [ChatEntry(sender: nil, text: "earlier in \(roomName) above", time: now,
                                                 kind: .system)])
            changes.insert(.chat)

        case .alert(let alert):
            applyAlert(alert)

        case .microphoneLevel(let level):
            let clamped = level.map { $0.isNaN ? 0 : min(1, max(0, $0)) }
            let before = microphoneLevel.map(RoomState.meterStep)
            microphoneLevel = clamped
            if clamped.map(RoomState.meterStep) != before { changes.insert(.tiles) }

        case .notice(let text):
            guard !text.isEmpty else { break }
            show(text)

        case .cameraStopped(let text):
            log(text, kind: .alert)
            if !sessions[0].videoMuted {
                sessions[0].videoMuted = true
                changes.insert([.controls, .tiles])
            }

        case .hostChanged(let id):
            if hostID != id, let name = id == localID ? "You" : session(id)?.name {
                record("\(name) \(id == localID ? "are" : "is") the host")
            }
            hostID = id
            if id == localID {
                log("You are the host: /allow NAME lets someone broadcast, /remove NAME removes them", kind: .system)
            } else if let name = session(id)?.name {
                log("\(name) is the host", kind: .system)
            }
            changes.insert(.tiles)

        case .handRaised(let id):
            let name = session(id)?.name ?? id.description
            log("\(name) asks to broadcast: type /allow \(name) in the chat to let them", kind: .alert)

        case .security(let security):
            self.security = security
            if let mode = security.encryption, let code = security.safetyCode {
                log("End-to-end encrypted (\(mode)). Safety code \(code): compare it with the others by voice",
                    kind: .system)
            }
            changes.insert(.status)

        case .cannotDecrypt(let id, let failing):
            guard let index = index(of: id), sessions[index].cannotDecrypt != failing else { break }
            sessions[index].cannotDecrypt = failing
            if failing {
                log("Can't decrypt \(sessions[index].name): they use a different room secret", kind: .alert)
            }
            changes.insert(.tiles)

        case .removedFromRoom(let text):
            connection = .failed(reason: text)
            log(text, kind: .alert)
            changes.insert(.status)

        case .roleChanged(let id, let role):
            guard let index = index(of: id), sessions[index].role != role else { break }
            sessions[index].role = role
            let who = index == 0 ? "You are" : "\(sessions[index].name) is"
            log(role == .broadcaster ? "\(who) now broadcasting" : "\(who) now in the audience", kind: .system)
            record(role == .broadcaster ? "\(who) now broadcasting" : "\(who) now in the audience")
            changes.insert([.tiles, .controls])
        }
        normalize()
        return effects
    }

    private mutating func applyAlert(_ alert: RoomAlert) {
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
            for index in sessions.indices where index > 0 {
                sessions[index].connection = sessions[index].videoSize == nil ? .connecting : .connected
            }
            log("Reconnected", kind: .alert)
        case .lost:
            connection = .lost
            if disconnectedAt == nil { disconnectedAt = now }
            log("Connection lost", kind: .alert)
        case .message(let text):
            guard !text.isEmpty else { return }
            log(text, kind: .alert)
        }
        changes.insert([.status, .tiles])
    }

    private func index(of id: ParticipantID) -> Int? {
        sessions.firstIndex { $0.id == id }
    }
}

// MARK: - Keys

extension RoomState {
    mutating func handle(_ key: Key) -> [RoomEffect] {
        if connection == .left { return [] }
        if case .resize = key {
            changes.insert(.all)
            return []
        }
        if leavePending { return handleLeaveConfirmation(key) }
        if helpShown {
            handleHelpKey(key)
            return []
        }
        if case .mouseDoubleClick(let column, let row) = key { return doubleClick(column: column, row: row) }
        if isChatInputOpen { return handleChatKey(key) }
        switch key {
        case .mouseClick:
            return perform(.hideControls)
        case .char(let character) where ("1"..."9").contains(character):
            return pressTileNumber(Int(String(character))!)
        default:
            guard let command = settings.keymap.command(for: key) else { return [] }
            return perform(command)
        }
    }

    private mutating func handleLeaveConfirmation(_ key: Key) -> [RoomEffect] {
        switch key {
        case .char("y"), .char("Y"), .enter, .control("c"), .control("C"):
            leavePending = false
            isChatInputOpen = false
            connection = .left
            changes.insert(.all)
            return [.leave]
        case .char("n"), .char("N"), .escape:
            leavePending = false
            changes.insert(.overlay)
            return []
        default:
            return []
        }
    }

    private mutating func handleHelpKey(_ key: Key) {
        switch key {
        case .escape, .enter, .char("q"), .mouseClick, .mouseDoubleClick:
            helpShown = false
        default:
            switch settings.keymap.command(for: key) {
            case .help:
                helpShown = false
            case .leave:
                // Ctrl-C (or a rebound leave key) still reaches the leave question from the help screen.
                helpShown = false
                leavePending = true
            default:
                break
            }
        }
        if !helpShown { changes.insert(.overlay) }
    }

    private mutating func handleChatKey(_ key: Key) -> [RoomEffect] {
        var edited = true
        switch key {
        case .char(let character):
            if !chatInput.insert(character) {
                edited = false
                if !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                    show("Messages are limited to \(chatInput.maximumBytes) bytes")
                }
            }
        case .backspace: edited = chatInput.deleteBackward()
        case .delete: edited = chatInput.deleteForward()
        case .left: edited = chatInput.moveLeft()
        case .right: edited = chatInput.moveRight()
        case .home, .control("a"): edited = chatInput.moveToStart()
        case .end, .control("e"): edited = chatInput.moveToEnd()
        case .control("w"): edited = chatInput.deleteWordBackward()
        case .control("u"): chatInput.clear()
        case .escape:
            isChatInputOpen = false
            changes.insert(.controls)
        case .control("c"):
            chatInput.clear()
            isChatInputOpen = false
            changes.insert(.controls)
        case .enter:
            return sendChatLine()
        default:
            edited = false
        }
        if edited { changes.insert(.chat) }
        return []
    }

    private mutating func sendChatLine() -> [RoomEffect] {
        if chatInput.isBlank {
            chatInput.clear()
            isChatInputOpen = false
            changes.insert([.chat, .controls])
            return []
        }
        guard connection.canSend else {
            show("Not connected: the message is kept, press Enter again once connected")
            return []
        }
        let text = String(chatInput.text.trimmingBlanks())
        chatInput.clear()
        if text.hasPrefix("/dm") || text == "/room" { return directCommand(text) }
        if text.hasPrefix("/") { return hostCommand(text) }
        if let peer = directPeer {
            directLog.append(ChatEntry(sender: localSession.name, text: text, time: now, kind: .own))
            return [.sendDirect(to: peer, text: text)]
        }
        log(text, kind: .own, sender: localSession.name)
        return [.sendChat(text)]
    }

    /// `/dm NAME [text]` shows (and messages) an account in the chat pane; `/room` goes back to the room's chat.
    private mutating func directCommand(_ text: String) -> [RoomEffect] {
        let words = text.split(separator: " ", maxSplits: 2).map(String.init)
        if words[0] == "/room" {
            return showDirect(nil)
        }
        guard words[0] == "/dm", words.count >= 2 else {
            show("Direct messages: /dm NAME shows them, /dm NAME text sends one, /room goes back")
            return []
        }
        var effects = showDirect(words[1])
        if words.count == 3, !words[2].allSatisfy(\.isWhitespace) {
            directLog.append(ChatEntry(sender: localSession.name, text: words[2], time: now, kind: .own))
            effects.append(.sendDirect(to: words[1], text: words[2]))
        }
        return effects
    }

    /// Shows the direct conversation with `peer` in the chat pane (nil: the room's chat).
    mutating func showDirect(_ peer: String?) -> [RoomEffect] {
        changes.insert([.chat, .controls])
        directPeer = peer
        guard let peer else { return [] }
        lastDirectPeer = peer
        directUnread = 0
        directLog = ChatLog(capacity: settings.chatHistory)
        directLog.append(ChatEntry(sender: nil, text: "Loading messages with \(peer)…", time: now, kind: .system))
        return [.openDirect(peer)]
    }

    /// `/allow NAME` and `/remove NAME`, the host's commands typed in the chat line.
    private mutating func hostCommand(_ text: String) -> [RoomEffect] {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        let usage = "Host commands: /allow NAME (let them broadcast), /remove NAME (remove them from the room)"
        guard words.count == 2, ["/allow", "/remove"].contains(words[0]) else {
            show(usage)
            return []
        }
        guard hostID == localID else {
            show("Only the host can \(words[0].dropFirst()) members\(hostName.map { "; the host is \($0)" } ?? "")")
            return []
        }
        let name = words[1].trimmingBlanks()
        guard let peer = peers.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            show("Nobody called \(name) is in the room")
            return []
        }
        if words[0] == "/allow" {
            log("You let \(peer.name) broadcast", kind: .system)
            return [.allowBroadcast(peer.id)]
        }
        log("You removed \(peer.name) from the room", kind: .system)
        return [.removeParticipant(peer.id)]
    }

    private mutating func pressTileNumber(_ number: Int) -> [RoomEffect] {
        guard let id = currentLayout.participant(numbered: number) else {
            pendingDigit = nil
            show("No tile \(number) on this page")
            return []
        }
        if let pending = pendingDigit, pending.number == number, now - pending.at <= settings.doubleKeyWindow {
            pendingDigit = nil
            return toggleFullscreen(id)
        }
        pendingDigit = PendingDigit(number: number, at: now)
        selected = id
        changes.insert(.tiles)
        return []
    }

    private mutating func doubleClick(column: Int, row: Int) -> [RoomEffect] {
        pendingDigit = nil
        if fullscreen != nil {
            fullscreen = nil
            changes.insert(.tiles)
            return []
        }
        guard let id = currentLayout.participant(atColumn: column, row: row) else { return [] }
        selected = id
        return toggleFullscreen(id)
    }

    private mutating func toggleFullscreen(_ id: ParticipantID) -> [RoomEffect] {
        changes.insert(.tiles)
        if fullscreen == id {
            fullscreen = nil
            return []
        }
        guard visibleTiles.count >= 3 else {
            show("Fullscreen needs 3 or more people on screen")
            return []
        }
        guard visibleTiles.contains(where: { $0.id == id }) else { return [] }
        fullscreen = id
        return []
    }
}

// MARK: - Commands

extension RoomState {
    /// Runs one command of the table; keys have already been mapped.
    mutating func perform(_ command: RoomCommand) -> [RoomEffect] {
        switch command {
        case .microphone:
            guard requireBroadcaster(for: "use the microphone") else { return [] }
            sessions[0].audioMuted.toggle()
            changes.insert([.controls, .tiles])
            return [.setMicrophoneMuted(sessions[0].audioMuted)]

        case .camera:
            guard requireBroadcaster(for: "use the camera") else { return [] }
            sessions[0].videoMuted.toggle()
            changes.insert([.controls, .tiles])
            normalize()
            return [.setCameraEnabled(!sessions[0].videoMuted)]

        case .switchCamera:
            guard requireBroadcaster(for: "switch cameras") else { return [] }
            guard cameraEnabled else {
                show("Camera is off: press \(keyLabel(.camera)) to turn it on first")
                return []
            }
            return [.switchCamera]

        case .speaker:
            speakerEnabled.toggle()
            changes.insert(.controls)
            return [.setSpeakerEnabled(speakerEnabled)]

        case .filter:
            filterEnabled.toggle()
            changes.insert([.controls, .tiles])
            return [.setFilter(filterEnabled)]

        case .broadcast:
            let role: Role = localRole == .broadcaster ? .audience : .broadcaster
            sessions[0].role = role
            log(role == .broadcaster ? "You are now broadcasting" : "You are now in the audience", kind: .system)
            changes.insert([.controls, .tiles])
            normalize()
            return [.setRole(role)]

        case .direct:
            if directPeer != nil { return showDirect(nil) }
            guard let peer = lastDirectPeer else {
                show("No direct messages yet: type /dm NAME in the chat line (\(keyLabel(.chat)) opens it)")
                return []
            }
            return showDirect(peer)

        case .messages:
            pendingDigit = nil
            return [.openMessages]

        case .invite:
            guard let inviteLink else {
                show("No meeting link for this call")
                return []
            }
            log("Invite: \(inviteLink) (copied to the clipboard where the terminal allows it)", kind: .system)
            show("Copied \(inviteLink)")
            return [.copyToClipboard(inviteLink)]

        case .chat:
            isChatInputOpen = true
            flowViewsHidden = false
            pendingDigit = nil
            changes.insert([.chat, .controls])
            return []

        case .hideControls:
            // Like the reference, hiding is ignored while a chat line is being typed.
            guard !isChatInputOpen else { return [] }
            flowViewsHidden.toggle()
            changes.insert(.all)
            return []

        case .fullscreen:
            if fullscreen != nil {
                fullscreen = nil
                changes.insert(.tiles)
                return []
            }
            guard let selected else {
                show("Press a tile's number first (twice quickly to fullscreen it)")
                return []
            }
            return toggleFullscreen(selected)

        case .grid:
            if fullscreen != nil {
                fullscreen = nil
                changes.insert(.tiles)
            } else if speakerView {
                speakerView = false
                changes.insert([.tiles, .controls])
            } else if rosterShown {
                rosterShown = false
                changes.insert([.overlay, .tiles])
            } else if statsShown {
                statsShown = false
                changes.insert(.tiles)
            }
            pendingDigit = nil
            return []

        case .nextPage, .previousPage:
            let pages = currentLayout.pageCount
            guard pages > 1 else {
                show("All tiles fit on one page")
                return []
            }
            let step = command == .nextPage ? 1 : pages - 1
            page = (min(page, pages - 1) + step) % pages
            pendingDigit = nil
            changes.insert(.tiles)
            return []

        case .stats:
            statsShown.toggle()
            changes.insert(.tiles)
            return []

        case .roster:
            rosterShown.toggle()
            changes.insert([.overlay, .tiles])
            return []

        case .speakerView:
            speakerView.toggle()
            fullscreen = nil
            page = 0
            show(speakerView ? "Speaker view: whoever is talking is shown large" : "Grid view")
            changes.insert([.tiles, .controls])
            return []

        case .help:
            helpShown = true
            changes.insert(.overlay)
            return []

        case .leave:
            leavePending = true
            changes.insert(.overlay)
            return []
        }
    }

    private mutating func requireBroadcaster(for action: String) -> Bool {
        guard localRole == .audience else { return true }
        show("You are in the audience: press \(keyLabel(.broadcast)) to broadcast, then \(action)")
        return false
    }
}
