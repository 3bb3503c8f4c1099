// MARK: - Commands

extension RoomState {
    /// Runs one command of the table; keys have already been mapped.
    mutating func perform(_ command: RoomCommand) -> [RoomEffect] {
        switch command {
        case .microphone, .camera, .switchCamera, .speaker, .filter, .broadcast, .record:
            return performDevices(command)
        case .direct, .messages, .invite, .chat, .hideControls, .stats, .roster, .help, .leave, .share:
            return performPanels(command)
        case .fullscreen, .grid, .nextPage, .previousPage, .speakerView, .selfView:
            return performLayout(command)
        }
    }

    /// Microphone, camera, speaker, picture filter, broadcasting and recording.
    private mutating func performDevices(_ command: RoomCommand) -> [RoomEffect] {
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
            show(filterEnabled ? "Sepia filter on: everyone sees your picture in sepia" : "Sepia filter off")
            changes.insert([.controls, .tiles])
            return [.setFilter(filterEnabled)]

        case .broadcast:
            let role: Role = localRole == .broadcaster ? .audience : .broadcaster
            sessions[0].role = role
            log(role == .broadcaster ? "You are now broadcasting" : "You are now in the audience", kind: .system)
            changes.insert([.controls, .tiles])
            normalize()
            return [.setRole(role)]

        case .record:
            if !isRecording, let why = recordingForbidden {
                show("Recording is not allowed in this room: \(why)")
                return []
            }
            return [.setRecording(!isRecording)]

        default:
            return []
        }
    }

    /// The chat, messages, invitation, statistics, roster and help panels, the control bar, and leaving.
    private mutating func performPanels(_ command: RoomCommand) -> [RoomEffect] {
        switch command {
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
            // Pressed again, `l` copies the web form: a link for someone without Parley, whose browser joins.
            guard let webLink, inviteCopiesWebNext else {
                log("Invite: \(inviteLink) (copied to the clipboard where the terminal allows it)", kind: .system)
                if let webLink { log("From a browser: \(webLink) (l again copies it)", kind: .system) }
                inviteCopiesWebNext = webLink != nil
                show("Copied \(inviteLink)" + (webLink == nil ? "" : " (l again: the browser link)"))
                return [.copyToClipboard(inviteLink)]
            }
            inviteCopiesWebNext = false
            log("From a browser: \(webLink) (copied; it opens the room's page on the relay)", kind: .system)
            show("Copied \(webLink) (for a browser)")
            return [.copyToClipboard(webLink)]

        case .chat:
            isChatInputOpen = true
            flowViewsHidden = false
            unseenChat = 0
            pendingDigit = nil
            changes.insert([.chat, .controls])
            return []

        case .hideControls:
            // Like the reference, hiding is ignored while a chat line is being typed.
            guard !isChatInputOpen else { return [] }
            flowViewsHidden.toggle()
            if !flowViewsHidden { unseenChat = 0 }
            changes.insert(.all)
            return []

        case .stats:
            statsShown.toggle()
            changes.insert(.tiles)
            return []

        case .share:
            let sharing = sessions.filter(\.isTerminal)
            if sharing.isEmpty {
                log("Nobody shares a terminal in this call", kind: .system)
            } else {
                for terminal in sharing {
                    let number = stage.firstIndex { $0.id == terminal.id }.map { " (tile \($0 + 1))" } ?? ""
                    log("\(terminal.sharedBy ?? terminal.name) shares a terminal\(number)", kind: .system)
                }
            }
            log(
                "To share yours, run in another terminal: \(shareCommand ?? "parley share ROOM --server HOST:PORT") "
                    + "(or add -- COMMAND); leaving its shell ends the share", kind: .system)
            show(sharing.isEmpty ? "Nobody shares a terminal: see the chat for how" : "See the chat pane")
            return []

        case .roster:
            rosterShown.toggle()
            changes.insert([.overlay, .tiles])
            return []

        case .help:
            helpShown = true
            helpScroll = 0
            changes.insert(.overlay)
            return []

        case .leave:
            leavePending = true
            changes.insert(.overlay)
            return []

        default:
            return []
        }
    }

    /// Fullscreen, the grid, pages, the speaker view and the self view.
    private mutating func performLayout(_ command: RoomCommand) -> [RoomEffect] {
        switch command {
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

        case .speakerView:
            speakerView.toggle()
            fullscreen = nil
            page = 0
            show(speakerView ? "Speaker view: whoever is talking is shown large" : "Grid view")
            changes.insert([.tiles, .controls])
            return []

        case .selfView:
            selfViewOff.toggle()
            pendingDigit = nil
            normalize()
            show(selfViewOff ? "Self view hidden: the others still see your camera" : "Self view shown")
            changes.insert(.tiles)
            return []

        default:
            return []
        }
    }

    mutating func requireBroadcaster(for action: String) -> Bool {
        guard localRole == .audience else { return true }
        show("You are in the audience: press \(keyLabel(.broadcast)) to broadcast, then \(action)")
        return false
    }
}
