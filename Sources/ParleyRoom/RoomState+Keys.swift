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
        if let typed = typeIntoShare(key) { return typed }
        if panShare(key) { return [] }
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

    mutating func handleLeaveConfirmation(_ key: Key) -> [RoomEffect] {
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

    mutating func handleHelpKey(_ key: Key) {
        let page = max(1, (helpLayout?.visibleRows ?? 10) - 1)
        let scrolled: Int? =
            switch key {
            case .down, .char("j"): helpScroll + 1
            case .up, .char("k"): helpScroll - 1
            case .pageDown, .char(" "): helpScroll + page
            case .pageUp: helpScroll - page
            case .home: 0
            case .end: Int.max
            default: nil
            }
        if let scrolled {
            let clamped = max(0, min(scrolled, helpLayout?.maximumScroll ?? 0))
            if clamped != helpScroll {
                helpScroll = clamped
                changes.insert(.overlay)
            }
            return
        }
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

    mutating func handleChatKey(_ key: Key) -> [RoomEffect] {
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

    mutating func sendChatLine() -> [RoomEffect] {
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
        // Enter sends and closes the line, as a call's chat field does: the next key is a hotkey again, never
        // silently typed into the chat.
        isChatInputOpen = false
        changes.insert([.chat, .controls])
        if let name = ChatCommand.named(in: text) {
            switch ChatCommand(rawValue: name) {
            case .dm, .room: return directCommand(text)
            case .allow, .remove, .norecord: return hostCommand(text)
            case .control: return controlCommand(text)
            case nil:
                show("\(name) is not a chat command. \(ChatCommand.summary)")
                return []
            }
        }
        if let peer = directPeer {
            directLog.append(ChatEntry(sender: localSession.name, text: text, time: now, kind: .own))
            return [.sendDirect(to: peer, text: text)]
        }
        log(text, kind: .own, sender: localSession.name)
        return [.sendChat(text)]
    }

    /// `/dm NAME [text]` shows (and messages) an account in the chat pane; `/room` goes back to the room's chat.
    mutating func directCommand(_ text: String) -> [RoomEffect] {
        let words = text.split(separator: " ", maxSplits: 2).map(String.init)
        if words[0] == "/room" {
            return showDirect(nil)
        }
        guard words[0] == "/dm", words.count >= 2 else {
            show(
                "Direct messages: \(ChatCommand.dm.usage): \(ChatCommand.dm.help); \(ChatCommand.room.usage) goes back")
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
    mutating func hostCommand(_ text: String) -> [RoomEffect] {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        let usage = ChatCommand.hostUsage
        if words[0] == "/norecord" {
            let argument = words.count == 2 ? words[1].trimmingBlanks() : ""
            guard argument.isEmpty || argument == "off" else {
                show(usage)
                return []
            }
            guard hostID == localID else {
                show("Only the host can forbid or allow recording\(hostName.map { "; the host is \($0)" } ?? "")")
                return []
            }
            return [.setRecordingAllowed(argument == "off")]
        }
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
            if words[0] == "/allow" {
                // Not here: someone removed, who may join again (the relay says so if nobody was removed so).
                log("You let \(name) back into the room", kind: .system)
                return [.readmit(String(name))]
            }
            show("Nobody called \(name) is in the room")
            return []
        }
        if words[0] == "/allow" {
            log("You let \(peer.name) broadcast", kind: .system)
            return [.allowBroadcast(peer.id)]
        }
        if peer.droppedAt != nil {
            // Their connection is gone (a relay restart, a network change): the id on their tile is gone with it.
            removalsAwaitingReturn.insert(peer.name.lowercased())
            log("\(peer.name) is reconnecting: they will be removed as soon as they are back", kind: .system)
            return []
        }
        log("You removed \(peer.name) from the room", kind: .system)
        return [.removeParticipant(peer.id)]
    }

    /// `/control NAME` lets NAME type in the terminal this member shares; `/control off` lets nobody.
    mutating func controlCommand(_ text: String) -> [RoomEffect] {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard words.count == 2 else {
            show("\(ChatCommand.control.usage): \(ChatCommand.control.help)")
            return []
        }
        let me = Self.plainName(localSession.name)
        guard let terminal = peers.first(where: { $0.isTerminal && $0.sharedBy?.lowercased() == me.lowercased() })
        else {
            show("You share no terminal in this call: run \(shareCommand ?? "parley share") in another terminal first")
            return []
        }
        let name = String(words[1].trimmingBlanks())
        if name.lowercased() == "off" {
            return [.grantControl(terminal: terminal.id, to: nil)]
        }
        guard
            let member = peers.first(where: {
                !$0.isTerminal && Self.plainName($0.name).lowercased() == name.lowercased()
            })
        else {
            show("Nobody called \(name) is in the call")
            return []
        }
        return [.grantControl(terminal: terminal.id, to: member.id)]
    }

    /// A name without the ✓ of a verified account ("bob ✓" is bob).
    static func plainName(_ label: String) -> String {
        String(label.prefix { $0 != " " })
    }

    mutating func pressTileNumber(_ number: Int) -> [RoomEffect] {
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

    mutating func doubleClick(column: Int, row: Int) -> [RoomEffect] {
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

    mutating func toggleFullscreen(_ id: ParticipantID) -> [RoomEffect] {
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

extension RoomState {
    /// Columns an arrow key moves a panned share.
    static let sharePanColumns = 8

    /// Arrow keys, Home and End pan a shared terminal shown fullscreen that is larger than its tile; true when the
    /// key did (or would, at an edge).
    mutating func panShare(_ key: Key) -> Bool {
        guard let large = largeShare, let session = sessions.first(where: { $0.id == large }),
            let size = session.videoSize, let container
        else { return false }
        // The tile's inside (its border left out), as the layout draws it.
        guard let tile = layout(in: container).tiles.last(where: { $0.id == large })?.rect else { return false }
        let bordered = tile.width >= 6 && tile.height >= 3
        let width = max(1, tile.width - (bordered ? 2 : 0))
        let height = max(1, tile.height - (bordered ? 2 : 0))
        let maxColumn = max(0, size.width - width)
        let maxRow = max(0, size.height - height)
        var pan = sharePan
        switch key {
        case .left: pan.column -= Self.sharePanColumns
        case .right: pan.column += Self.sharePanColumns
        case .up: pan.row -= 1
        case .down: pan.row += 1
        case .pageUp: pan.row -= height
        case .pageDown: pan.row += height
        case .home: pan = SharePan()
        case .end: pan = SharePan(column: maxColumn, row: maxRow)
        default: return false
        }
        pan.column = max(0, min(pan.column, maxColumn))
        pan.row = max(0, min(pan.row, maxRow))
        if pan != sharePan {
            sharePan = pan
            changes.insert(.tiles)
        }
        return true
    }
}

extension RoomState {
    /// The key that gives the keys back to the call while typing in a shared terminal, and takes them again.
    public static let shareKeysToggle = Key.control("]")

    /// The shared terminal this member's keys go to now: one they were let type in, shown large, unless they gave
    /// the keys back to the call (`shareKeysToggle`).
    public var typingInto: ParticipantID? {
        guard let large = largeShare, !shareKeysToCall,
            sessions.first(where: { $0.id == large })?.controlledBy == localID
        else { return nil }
        return large
    }

    /// While typing in a shared terminal every key goes to it, but `shareKeysToggle`, which gives them back.
    mutating func typeIntoShare(_ key: Key) -> [RoomEffect]? {
        if key == Self.shareKeysToggle, let large = largeShare,
            sessions.first(where: { $0.id == large })?.controlledBy == localID
        {
            shareKeysToCall.toggle()
            show(
                shareKeysToCall
                    ? "Your keys go to the call; Ctrl-] types in the terminal again"
                    : "Your keys go to the shared terminal; Ctrl-] gives them back to the call")
            changes.insert(.tiles)
            return []
        }
        guard let terminal = typingInto, let bytes = TerminalKeys.bytes(for: key) else { return nil }
        return [.typeIntoShare(terminal, bytes)]
    }
}

/// The bytes a terminal sends for a key (xterm's), as a shared terminal's program reads them.
public enum TerminalKeys {
    public static func bytes(for key: Key) -> [UInt8]? {
        switch key {
        case .char(let character): return Array(String(character).utf8)
        case .enter: return [0x0D]
        case .escape: return [0x1B]
        case .tab: return [0x09]
        case .backspace: return [0x7F]
        case .delete: return Array("\u{1B}[3~".utf8)
        case .up: return Array("\u{1B}[A".utf8)
        case .down: return Array("\u{1B}[B".utf8)
        case .right: return Array("\u{1B}[C".utf8)
        case .left: return Array("\u{1B}[D".utf8)
        case .home: return Array("\u{1B}[H".utf8)
        case .end: return Array("\u{1B}[F".utf8)
        case .pageUp: return Array("\u{1B}[5~".utf8)
        case .pageDown: return Array("\u{1B}[6~".utf8)
        case .function(let number):
            let codes = [
                1: "OP", 2: "OQ", 3: "OR", 4: "OS", 5: "[15~", 6: "[17~", 7: "[18~", 8: "[19~", 9: "[20~",
                10: "[21~", 11: "[23~", 12: "[24~",
            ]
            return codes[number].map { Array(("\u{1B}" + $0).utf8) }
        case .control(let letter):
            guard let ascii = letter.lowercased().unicodeScalars.first?.value,
                (0x61...0x7A).contains(ascii) || letter == "]"
            else { return nil }
            return letter == "]" ? [0x1D] : [UInt8(ascii - 0x60)]
        case .mouseClick, .mouseDoubleClick, .resize: return nil
        }
    }
}
