/// One button of the control bar, generated from the command table.
public struct ControlItem: Hashable, Sendable {
    /// The command the button runs.
    public var command: RoomCommand
    /// The button's label.
    public var label: String
    /// The first key bound to the command ("m"), or "—" when none.
    public var key: String
    /// On/off state for toggles (mic on, camera on, …); nil for plain actions.
    public var isOn: Bool?
    /// False when the command cannot run right now (e.g. switching cameras with the camera off).
    public var isEnabled: Bool

    /// A control-bar button.
    public init(command: RoomCommand, label: String, key: String, isOn: Bool?, isEnabled: Bool) {
        self.command = command
        self.label = label
        self.key = key
        self.isOn = isOn
        self.isEnabled = isEnabled
    }
}

/// The control bar: the table's bar commands with their keys and current state.
public enum ControlBar {
    /// The buttons for `state`, in table order. The audience sends nothing, so it gets no microphone, camera or
    /// filter buttons (only "Live", to ask to broadcast).
    public static func items(for state: RoomState) -> [ControlItem] {
        let sendsNothing: Set<RoomCommand> = [.microphone, .camera, .switchCamera, .filter]
        return RoomCommand.allCases.filter {
            $0.isInControlBar && !(state.localRole == .audience && sendsNothing.contains($0))
        }.map { command in
            let keys = state.settings.keymap.keys(for: command)
            return ControlItem(
                command: command, label: command.label, key: keys.first.map(KeyName.label) ?? "—",
                isOn: isOn(command, state), isEnabled: isEnabled(command, state))
        }
    }

    /// Whether a toggle command is on in `state`; nil for commands that are not toggles.
    public static func isOn(_ command: RoomCommand, _ state: RoomState) -> Bool? {
        switch command {
        case .microphone: return !state.microphoneMuted
        case .camera: return state.cameraEnabled
        case .speaker: return state.speakerEnabled
        case .filter: return state.filterEnabled
        case .broadcast: return state.localRole == .broadcaster
        case .chat: return state.isChatInputOpen
        case .hideControls: return state.flowViewsHidden
        case .fullscreen: return state.fullscreen != nil
        case .stats: return state.statsShown
        case .help: return state.helpShown
        case .direct: return state.directPeer != nil
        case .roster: return state.rosterShown
        case .speakerView: return state.speakerView
        case .selfView: return !state.selfViewOff
        case .record: return state.isRecording
        case .switchCamera, .grid, .nextPage, .previousPage, .leave, .messages, .invite, .share: return nil
        }
    }

    /// Whether a command can run now in `state`.
    public static func isEnabled(_ command: RoomCommand, _ state: RoomState) -> Bool {
        switch command {
        case .microphone, .camera: return state.localRole == .broadcaster
        case .switchCamera: return state.localRole == .broadcaster && state.cameraEnabled
        case .fullscreen: return state.fullscreen != nil || state.visibleTiles.count >= 3
        case .nextPage, .previousPage: return state.currentLayout.pageCount > 1
        default: return true
        }
    }
}

/// One line of the help overlay: the keys and what they do.
public struct HelpLine: Hashable, Sendable {
    /// The keys, e.g. "t/Enter".
    public var keys: String
    /// What they do.
    public var text: String

    /// A help line.
    public init(keys: String, text: String) {
        self.keys = keys
        self.text = text
    }
}

/// The help overlay, generated from the command table plus the fixed keys (tile numbers, mouse, chat editing) and
/// the chat line's command table.
public enum HelpOverlay {
    /// Every line of help for `keymap`: one per command, then the fixed keys, then the chat commands.
    public static func lines(keymap: Keymap = .standard) -> [HelpLine] {
        RoomCommand.allCases.map { HelpLine(keys: keymap.keyLabels(for: $0), text: $0.help) } + [
            HelpLine(keys: "1–9", text: "Select a tile; press twice quickly to fullscreen it, twice again to return"),
            HelpLine(keys: "Double-click", text: "Fullscreen the clicked tile; double-click again to return"),
            HelpLine(keys: "Click", text: "Hide or show the control bar and chat pane"),
            HelpLine(keys: "In chat", text: "Enter sends, Esc closes, Ctrl-U clears, Ctrl-W deletes a word"),
            HelpLine(keys: "Leaving", text: "y or Enter confirms, n or Esc stays"),
            HelpLine(keys: "In this help", text: "↑ ↓ PgUp PgDn Home End scroll, Esc closes"),
            HelpLine(keys: "", text: ""),
            HelpLine(keys: "", text: "Typed in the chat line (t):"),
        ] + ChatCommand.allCases.map { HelpLine(keys: $0.usage, text: $0.help) }
    }

    /// The overlay laid out for a screen of `columns` × `rows` cells: its lines wrapped to the box, and how many
    /// of them the box shows at once (the rest scroll).
    public static func layout(keymap: Keymap = .standard, columns: Int, rows: Int) -> HelpLayout {
        let lines = lines(keymap: keymap)
        let keysWidth = min(16, lines.map { TextWidth.cells($0.keys) }.max() ?? 0)
        let textNeeded = lines.map { TextWidth.cells($0.text) }.max() ?? 0
        // Border, one space, keys, two spaces, text, one space, border.
        let boxWidth = max(0, min(columns - 2, keysWidth + textNeeded + 6))
        let textWidth = max(1, boxWidth - keysWidth - 6)
        var wrapped: [HelpLine] = []
        for line in lines {
            for (index, piece) in TextWidth.wrap(line.text, width: textWidth).enumerated() {
                wrapped.append(HelpLine(keys: index == 0 ? line.keys : "", text: piece))
            }
        }
        return HelpLayout(
            rows: wrapped, keysWidth: keysWidth, textWidth: textWidth, boxWidth: boxWidth,
            visibleRows: max(1, min(wrapped.count, rows - 2)))
    }
}

/// The help overlay on one screen: rows after wrapping and how many fit.
public struct HelpLayout: Hashable, Sendable {
    /// Every row, keys on the first row of each line.
    public var rows: [HelpLine]
    /// Cells for the keys column.
    public var keysWidth: Int
    /// Cells for the text column.
    public var textWidth: Int
    /// The box's width, borders included.
    public var boxWidth: Int
    /// Rows the box shows at once.
    public var visibleRows: Int

    /// The largest scroll offset: the last row at the box's bottom.
    public var maximumScroll: Int { max(0, rows.count - visibleRows) }
}
