/// Settings of the room core: timing, limits, layout tuning and the keymap.
public struct RoomSettings: Hashable, Sendable {
    /// Two presses of a tile number within this window fullscreen the tile.
    public var doubleKeyWindow: Duration
    /// Chat entries kept (read when the state is created).
    public var chatHistory: Int
    /// Longest chat message in UTF-8 bytes (read when the state is created).
    public var maximumChatBytes: Int
    /// How long a notice stays in the status line.
    public var noticeDuration: Duration
    /// Layout tuning (cell aspect, readable minimum tile).
    public var layout: LayoutOptions
    /// Which key runs which command.
    public var keymap: Keymap
    /// The call starts with the self view shown (`--hide-self-view` starts with it hidden; `V` toggles it).
    public var showsSelfView: Bool

    /// Defaults: 400 ms double-key window, 500 chat entries, 1000-byte messages, 3 s notices, standard keys.
    public init(
        doubleKeyWindow: Duration = .milliseconds(400), chatHistory: Int = ChatLog.defaultCapacity,
        maximumChatBytes: Int = ChatInput.defaultMaximumBytes, noticeDuration: Duration = .seconds(3),
        layout: LayoutOptions = LayoutOptions(), keymap: Keymap = .standard, showsSelfView: Bool = true
    ) {
        self.doubleKeyWindow = doubleKeyWindow
        self.chatHistory = chatHistory
        self.maximumChatBytes = maximumChatBytes
        self.noticeDuration = noticeDuration
        self.layout = layout
        self.keymap = keymap
        self.showsSelfView = showsSelfView
    }
}

/// The room's connection to the relay, as the header shows it.
public enum ConnectionState: Hashable, Sendable {
    /// Joining.
    case connecting
    /// In the room.
    case connected
    /// The connection stalled.
    case interrupted
    /// The engine is reconnecting.
    case reconnecting
    /// The connection is gone.
    case lost
    /// Joining failed, with the engine's reason.
    case failed(reason: String)
    /// The user left; the shell should close the room screen.
    case left

    /// True while chat can be sent (in the room, possibly stalled).
    public var canSend: Bool {
        switch self {
        case .connected, .interrupted, .reconnecting: return true
        case .connecting, .lost, .failed, .left: return false
        }
    }
}

/// A short message for the status line, shown until `until` on the injected clock.
public struct Notice: Hashable, Sendable {
    /// What to show.
    public var text: String
    /// When it disappears.
    public var until: Duration

    /// A notice.
    public init(text: String, until: Duration) {
        self.text = text
        self.until = until
    }
}

/// The first press of a tile number, waiting for a second press inside the double-key window.
public struct PendingDigit: Hashable, Sendable {
    /// The tile number pressed (1–9).
    public var number: Int
    /// When it was pressed.
    public var at: Duration

    /// A pending press.
    public init(number: Int, at: Duration) {
        self.number = number
        self.at = at
    }
}

/// What the last inputs changed, so the shell redraws only those parts.
public struct RoomChanges: OptionSet, Hashable, Sendable {
    /// The flag bits.
    public let rawValue: UInt8
    /// Flags from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Tiles: who is shown, where, placeholders, selection, stats.
    public static let tiles = RoomChanges(rawValue: 1 << 0)
    /// The chat pane or the chat input line.
    public static let chat = RoomChanges(rawValue: 1 << 1)
    /// The control bar.
    public static let controls = RoomChanges(rawValue: 1 << 2)
    /// The help overlay or the leave confirmation.
    public static let overlay = RoomChanges(rawValue: 1 << 3)
    /// The header and status line (connection, notice, call timer).
    public static let status = RoomChanges(rawValue: 1 << 4)
    /// Everything.
    public static let all: RoomChanges = [.tiles, .chat, .controls, .overlay, .status]
}

/// One line of the call's activity log.
public struct ActivityEntry: Hashable, Sendable {
    /// On the room's clock.
    public var at: Duration
    public var text: String

    public init(at: Duration, text: String) {
        self.at = at
        self.text = text
    }
}

/// Everything the renderer needs to draw the room, changed only by ``reduce(_:_:)``.
public struct RoomState: Hashable, Sendable {
    /// Timing, limits, layout tuning and keys.
    public var settings: RoomSettings
    /// The room's name.
    public internal(set) var roomName: String
    /// Participants, local first, then remote in join order.
    public internal(set) var sessions: [VideoSession]
    /// The fullscreen participant, if any (only with 3 or more tiles).
    public internal(set) var fullscreen: ParticipantID? {
        didSet { if fullscreen != oldValue { sharePan = SharePan() } }
    }
    /// The page of tiles shown (0-based; clamp with ``layout(in:)``).
    public internal(set) var page: Int
    /// The tile last addressed by number (highlighted; the fullscreen command acts on it).
    public internal(set) var selected: ParticipantID?
    /// The control bar and chat pane are hidden (the reference's "flow views").
    public internal(set) var flowViewsHidden: Bool
    /// The chat input line is open and receives the keys.
    public internal(set) var isChatInputOpen: Bool
    /// The chat line being typed (kept as a draft when the input closes with Esc).
    public internal(set) var chatInput: ChatInput
    /// Chat, alerts and notices, oldest first.
    public internal(set) var chatLog: ChatLog
    /// The account whose direct conversation the chat pane shows instead of the room's chat; nil for the room.
    public internal(set) var directPeer: String?
    /// The last account the chat pane showed (what the `dm` key switches back to).
    public internal(set) var lastDirectPeer: String?
    /// The direct conversation shown, oldest first.
    public internal(set) var directLog: ChatLog
    /// Direct messages that arrived while the pane showed something else.
    public internal(set) var directUnread: Int
    /// Chat lines that arrived while the chat pane was hidden (the header shows the count until it is shown again).
    public internal(set) var unseenChat = 0
    /// The room's meeting link (parley://HOST:PORT/ROOM), set by the shell that knows the relay.
    public var inviteLink: String?
    /// The meeting link's web form (https://HOST:PORT/ROOM): the relay's page for a guest without Parley.
    public var webLink: String?
    /// The next `l` copies the web link (each press alternates between the two links).
    public internal(set) var inviteCopiesWebNext = false
    /// The member gave the keys back to the call while let type in a shared terminal (`shareKeysToggle`).
    public internal(set) var shareKeysToCall = false
    /// How far a fullscreen shared terminal larger than its tile is panned (arrow keys), in its cells.
    public internal(set) var sharePan = SharePan()
    /// The command that shares a terminal into this call (`parley share ROOM --server HOST:PORT`), shown by `S`.
    public var shareCommand: String?
    /// Said once in the chat when the join's member list is in (after its host notice), so it is the newest line as
    /// the call starts: the demo's "what to try first". Set by the shell.
    public var greeting: String?
    /// The roster overlay is on.
    public internal(set) var rosterShown = false
    /// The relay's dominant speaker (whoever holds the floor), nil before anybody spoke.
    public internal(set) var dominantSpeaker: ParticipantID?
    /// Speaker view is on: the featured speaker large, the others in the strip.
    public internal(set) var speakerView = false
    /// The user hid the self view (`V`, or `--hide-self-view`): the camera still sends.
    public internal(set) var selfViewOff: Bool
    /// Who speaker view shows large: the dominant speaker when it is a peer, changed at most every
    /// `RoomState.speakerHold`; nil before anybody spoke.
    public internal(set) var featuredSpeaker: ParticipantID?
    /// When the featured speaker last changed.
    public internal(set) var featuredSince: Duration?
    /// Joins, leaves, role and host changes with their times, oldest first (at most `activityLimit`).
    public internal(set) var activity: [ActivityEntry] = []
    /// Entries the activity log keeps (the oldest go).
    public static let activityLimit = 200
    /// When the connection was last lost (nil while connected): the member list is as of then.
    public internal(set) var disconnectedAt: Duration?
    /// The stats overlay is on.
    public internal(set) var statsShown: Bool
    /// The help overlay is on (it captures keys).
    public internal(set) var helpShown: Bool
    /// The help overlay's first row shown (it scrolls when it is taller than the screen).
    public internal(set) var helpScroll = 0
    /// "Leave the call?" is waiting for y/Enter or n/Esc.
    public internal(set) var leavePending: Bool
    /// The connection to the relay.
    public internal(set) var connection: ConnectionState
    /// When the call started (on the injected clock), once joined.
    public internal(set) var callStartedAt: Duration?
    /// The latest time seen in a key or tick input.
    public internal(set) var now: Duration
    /// Call audio is played.
    public internal(set) var speakerEnabled: Bool
    /// The video filter is on.
    public internal(set) var filterEnabled: Bool
    /// The status-line notice, if one is showing.
    public internal(set) var notice: Notice?
    /// The local microphone's level for the own tile's meter, 0…1; nil when there is no real microphone.
    public internal(set) var microphoneLevel: Double?
    /// How the call is protected, as the engine reported it.
    public internal(set) var security = CallSecurity()
    /// Media goes over the relay's TLS connection (UDP did not get through): the header says so.
    public internal(set) var mediaOverTCP = false
    /// Members recording the call, in the order they started (the header shows ● REC with their names).
    public internal(set) var recorders: [Recorder] = []
    /// Whether this member records the call (as the relay announced it).
    public var isRecording: Bool { recorders.contains { $0.id == localID } }
    /// Nil while members may record; otherwise why not ("alice forbade it").
    public internal(set) var recordingForbidden: String?
    /// The room's host, once the relay said who it is.
    public internal(set) var hostID: ParticipantID?
    /// The host's name, when known.
    public var hostName: String? { hostID.flatMap { id in sessions.first { $0.id == id }?.name } }
    /// A first tile-number press waiting for its second.
    public internal(set) var pendingDigit: PendingDigit?
    /// Members the host removed while they were reconnecting (lowercased names): the removal is sent once they are
    /// back under their new id, since the one the host saw is gone with their old connection. At most one per
    /// session; forgotten when the member drops out for good.
    public internal(set) var removalsAwaitingReturn: Set<String> = []
    /// Where the video tiles are on screen, as last reported by the shell.
    public internal(set) var container: CellRect?
    /// The whole screen, as last reported by the shell.
    public internal(set) var screen: CellRect?
    /// The help overlay laid out for the screen, once its size is known.
    public var helpLayout: HelpLayout? {
        screen.map { HelpOverlay.layout(keymap: settings.keymap, columns: $0.width, rows: $0.height) }
    }
    /// What changed since the shell last called ``takeChanges()``.
    public internal(set) var changes: RoomChanges

    /// A room about to be joined: the local session (id unassigned until ``RoomEvent/joined(localID:)``).
    public init(
        roomName: String, localName: String, role: Role = .broadcaster, microphoneMuted: Bool = false,
        cameraEnabled: Bool = true, settings: RoomSettings = RoomSettings()
    ) {
        self.settings = settings
        self.roomName = roomName
        self.sessions = [
            VideoSession(
                id: .unassigned, name: localName, role: role, isLocal: true, audioMuted: microphoneMuted,
                videoMuted: !cameraEnabled)
        ]
        fullscreen = nil
        page = 0
        selected = nil
        flowViewsHidden = false
        isChatInputOpen = false
        chatInput = ChatInput(maximumBytes: settings.maximumChatBytes)
        chatLog = ChatLog(capacity: settings.chatHistory)
        directPeer = nil
        lastDirectPeer = nil
        directLog = ChatLog(capacity: settings.chatHistory)
        directUnread = 0
        statsShown = false
        selfViewOff = !settings.showsSelfView
        helpShown = false
        leavePending = false
        connection = .connecting
        callStartedAt = nil
        now = .zero
        speakerEnabled = true
        filterEnabled = false
        notice = nil
        pendingDigit = nil
        container = nil
        changes = .all
    }

    /// What the chat pane shows: the room's chat, or the direct conversation picked.
    public var shownChat: ChatLog { directPeer == nil ? chatLog : directLog }

    /// The chat pane's title: "Chat", "Chat · 2 new DMs", "DM · bob".
    public var chatTitle: String {
        let unread = directUnread > 0 ? " · \(directUnread) new DM\(directUnread == 1 ? "" : "s")" : ""
        guard let directPeer else { return "Chat" + unread }
        return "DM · \(directPeer)" + unread
    }

    /// The local user's session (always first).
    public var localSession: VideoSession { sessions[0] }
    /// The local user's id (``ParticipantID/unassigned`` before the join).
    public var localID: ParticipantID { sessions[0].id }
    /// The microphone is muted.
    public var microphoneMuted: Bool { sessions[0].audioMuted }
    /// The camera is sending.
    public var cameraEnabled: Bool { !sessions[0].videoMuted }
    /// The local user's role.
    public var localRole: Role { sessions[0].role }
    /// The remote participants in join order.
    public var peers: ArraySlice<VideoSession> { sessions.dropFirst() }

    /// Sessions with a tile: the local user and every remote broadcaster (the audience only watches).
    public var stage: [VideoSession] {
        sessions.enumerated().filter { $0.offset == 0 || $0.element.role == .broadcaster }.map(\.element)
    }

    /// The self view is hidden: by the user, as an audience member, or with exactly one peer while the camera is
    /// off.
    public var selfViewHidden: Bool {
        selfViewOff || localRole == .audience || (stage.count == 2 && localSession.videoMuted)
    }

    /// Tiles that can be shown, in numbering order: self (unless hidden), then broadcasting peers.
    public var visibleTiles: [VideoSession] {
        selfViewHidden ? Array(stage.dropFirst()) : stage
    }

    /// The session with an id.
    public func session(_ id: ParticipantID) -> VideoSession? {
        sessions.first { $0.id == id }
    }

    /// How long the call has lasted, once joined.
    public var callDuration: Duration? {
        callStartedAt.map { now - $0 }
    }

    /// Speaker view changes the large tile no more often than this, however fast the floor changes hands.
    public static let speakerHold = Duration.seconds(2)

    /// The participant shown large: the fullscreen choice, else in speaker view the featured speaker (or the first
    /// peer while nobody has spoken).
    public var largeTile: ParticipantID? {
        if let fullscreen { return fullscreen }
        guard speakerView else { return nil }
        return featuredSpeaker ?? stage.dropFirst().first?.id
    }

    /// The shared terminal shown large (fullscreen, featured, or the one other tile of a two-tile call): shown at
    /// its size, panned by the arrow keys when larger than its tile.
    public var largeShare: ParticipantID? {
        let stage = self.stage
        guard let id = largeTile ?? (stage.count == 2 ? stage[1].id : nil),
            sessions.first(where: { $0.id == id })?.isTerminal == true
        else { return nil }
        return id
    }

    /// Lays the tiles out in `container` with this state's self view, fullscreen participant and page.
    public func layout(in container: CellRect) -> VideoLayout {
        let stage = self.stage
        let selfTile = selfViewHidden ? nil : TileSource(id: stage[0].id, videoSize: stage[0].videoSize)
        let peers = stage.dropFirst().map { TileSource(id: $0.id, videoSize: $0.videoSize) }
        // A shared terminal with nobody else: large beside a strip, not under the self view's inset (it would hide
        // the terminal's top right, where a prompt's clock or a status line is).
        let share = largeShare
        return VideoViewLayouter.layout(
            self: selfTile, peers: peers, full: largeTile ?? share, page: page, in: container,
            options: settings.layout, fullBesideSelf: share != nil)
    }

    /// Returns what changed since the last call and clears it.
    public mutating func takeChanges() -> RoomChanges {
        defer { changes = [] }
        return changes
    }
}

/// A member recording the call.
public struct Recorder: Hashable, Sendable {
    /// Who.
    public var id: ParticipantID
    /// Their name when they started.
    public var name: String
    /// The room is end-to-end encrypted: the file is their decrypted view.
    public var encrypted: Bool
}

/// How far a shared terminal shown fullscreen is panned: the cell of it at the tile's top left.
public struct SharePan: Hashable, Sendable {
    public var column = 0
    public var row = 0

    public init(column: Int = 0, row: Int = 0) {
        self.column = column
        self.row = row
    }
}
