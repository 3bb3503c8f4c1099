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
        let shownBefore = state.callDuration.map { $0.components.seconds }
        state.advanceClock(to: time)
        // The header shows the call's length in whole seconds: only a new second is a change to draw.
        if let shown = state.callDuration?.components.seconds, shown != shownBefore { state.changes.insert(.status) }
        return []
    case .container(let rect):
        if state.container != rect {
            state.container = rect
            state.normalize()
            state.changes.insert(.tiles)
        }
        return []
    case .screen(let columns, let rows):
        let size = CellRect(x: 0, y: 0, width: columns, height: rows)
        if state.screen != size {
            state.screen = size
            state.helpScroll = min(state.helpScroll, state.helpLayout?.maximumScroll ?? 0)
            state.changes.insert(.overlay)
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
        let gone = sessions.filter { $0.droppedAt.map { now - $0 >= Self.reconnectWindow } ?? false }
        if !gone.isEmpty {
            sessions.removeAll { session in gone.contains { $0.id == session.id } }
            for session in gone {
                log("\(session.name) dropped out of the call", kind: .system)
                if removalsAwaitingReturn.remove(session.name.lowercased()) != nil {
                    log(
                        "\(session.name) was not removed: they did not come back (/remove them if they do)",
                        kind: .system)
                }
                record("\(session.name) dropped out of the call")
            }
            changes.insert(.tiles)
            normalize()
        }
    }

    /// A member whose connection dropped keeps their tile this long, waiting for them to come back.
    public static let reconnectWindow = Duration.seconds(15)

    /// `name` joined as `id`: when a member of that name dropped a moment ago, they are back. Their tile (its place,
    /// fullscreen and selection) goes to the new id, and any tile made for the new id meanwhile (media can overtake
    /// presence) gives way to it. Returns whether it was so.
    mutating func takeBack(_ id: ParticipantID, name: String, role: Role) -> Bool {
        guard
            let slot = sessions.firstIndex(where: {
                $0.droppedAt != nil && $0.name.lowercased() == name.lowercased()
            })
        else { return false }
        let old = sessions[slot].id
        var session = sessions[slot]
        if let early = index(of: id) {
            session.videoSize = sessions[early].videoSize
            session.media = sessions[early].media
            sessions[early].id = .unassigned
        }
        session.id = id
        session.name = name
        session.role = role
        session.droppedAt = nil
        session.connection = session.videoSize == nil ? .connecting : .connected
        sessions[slot] = session
        sessions.removeAll { !$0.isLocal && $0.id == .unassigned }
        if fullscreen == old { fullscreen = id }
        if selected == old { selected = id }
        if hostID == old { hostID = id }
        log("\(name) is back", kind: .system)
        changes.insert(.tiles)
        return true
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
