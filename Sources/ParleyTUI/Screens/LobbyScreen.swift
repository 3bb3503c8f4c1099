import ParleyPictures
import ParleyRoom

/// Draws the lobby form centred on the screen: fields, choices, the profile, [Settings] and [Join], and the
/// message line (errors in the error colour).
public enum LobbyScreen {
    /// Width of the label column ("Server", "Name", …).
    static let labelWidth = 10
    /// Widest the form box grows.
    static let maximumBoxWidth = 76

    /// What the Cipher row says beside the choice; short enough to fit beside the longest choice at 80 columns.
    static func cipherNote(_ cipher: LobbyCipher) -> String {
        cipher == .none ? "no key: the relay can read media and chat" : "end to end: only key holders see and hear"
    }

    /// Rows of the form inside the box, top to bottom.
    struct Geometry {
        let box: CellRect
        /// Column where field values start.
        let valueColumn: Int
        /// Width of a text field.
        let fieldWidth: Int
        /// The row of each item.
        let rows: [LobbyItem: Int]
        /// The first of the two message rows.
        let messageRow: Int
        /// The profile row.
        let profileRow: Int
        /// The two buttons, where they are drawn.
        let buttons: [(item: LobbyItem, label: String, rect: CellRect)]

        init(size: TerminalSize) {
            let width = min(maximumBoxWidth, size.columns - 4)
            let height = 17
            box = CellRect(
                x: (size.columns - width) / 2, y: max(0, (size.rows - height - 1) / 2), width: width,
                height: height)
            valueColumn = box.x + 3 + labelWidth
            fieldWidth = box.maxX - 3 - valueColumn
            let top = box.y + 2
            rows = [
                .server: top, .name: top + 1, .room: top + 2, .encryptionKey: top + 3, .cipher: top + 4,
                .role: top + 5, .settings: top + 8, .join: top + 8, .messages: top + 8,
            ]
            profileRow = top + 6
            messageRow = top + 10
            let labels = [(LobbyItem.settings, "[ Settings ]"), (.join, "[ Join ]"), (.messages, "[ Messages ]")]
            let gap = 4
            let total = labels.reduce(0) { $0 + DisplayWidth.of($1.1) } + gap * (labels.count - 1)
            var column = box.x + (box.width - total) / 2
            var buttons: [(item: LobbyItem, label: String, rect: CellRect)] = []
            for (item, label) in labels {
                let width = DisplayWidth.of(label)
                buttons.append((item, label, CellRect(x: column, y: top + 8, width: width, height: 1)))
                column += width + gap
            }
            self.buttons = buttons
        }

        /// The item drawn at a cell: a field's or choice's whole row inside the box, or a button.
        func item(atColumn column: Int, row: Int) -> LobbyItem? {
            if let button = buttons.first(where: { $0.rect.contains(column: column, row: row) }) { return button.item }
            guard column > box.x, column < box.maxX - 1 else { return nil }
            return rows.first { $0.value == row && $0.key != .settings && $0.key != .join && $0.key != .messages }?.key
        }
    }

    /// Renders the lobby for a terminal size (below 80x24, a message asking for a larger terminal).
    public static func render(_ lobby: LobbyState, size: TerminalSize, theme: Theme) -> Screen {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else {
            return TooSmallMessage.render(size: size, minimum: minimum, theme: theme)
        }
        var screen = Screen(width: size.columns, height: size.rows)
        let geometry = Geometry(size: size)
        let box = geometry.box
        screen.drawBox(
            box, style: theme.style(.tileBorder), lines: .rounded, title: "Parley · join a call",
            titleStyle: theme.style(.tileName))
        drawTextFields(lobby, geometry: geometry, into: &screen, theme: theme)
        drawChoices(lobby, geometry: geometry, into: &screen, theme: theme)
        for button in geometry.buttons {
            let focused = lobby.focus == button.item
            let rect = button.rect
            if focused { screen.write(">", column: rect.x - 1, row: rect.y, style: theme.style(.selection)) }
            screen.write(
                button.label, column: rect.x, row: rect.y, style: theme.style(focused ? .selection : .text))
        }
        if let message = lobby.message {
            let style: CellStyle
            switch message.kind {
            case .error: style = theme.style(.statusError)
            case .progress: style = theme.style(.statusWarning)
            case .info: style = theme.style(.text)
            }
            let width = box.width - 6
            for (offset, line) in DisplayWidth.wrap(message.text, width: width).prefix(3).enumerated() {
                screen.writeFitted(
                    line, column: box.x + 3, row: geometry.messageRow + offset, width: width,
                    style: style)
            }
        }
        let help =
            lobby.isJoining
            ? "Ctrl-C quits"
            : "Tab/Down next · Up previous · Space/Left/Right choose · Enter join · Esc quit"
        screen.writeCentered(
            help, row: min(screen.height - 1, box.maxY), in: screen.bounds,
            style: theme.style(.chatSystem))
        return screen
    }

    /// Server, name, room and key, each labelled and shown through its window (the key as stars).
    private static func drawTextFields(
        _ lobby: LobbyState, geometry: Geometry, into screen: inout Screen, theme: Theme
    ) {
        let textFields: [(LobbyItem, String, InputLine, String)] = [
            (.server, "Server", lobby.server, lobby.server.text), (.name, "Name", lobby.name, lobby.name.text),
            (.room, "Room", lobby.room, lobby.room.text),
            (
                .encryptionKey, "Key", lobby.encryptionKey,
                String(repeating: "*", count: lobby.encryptionKey.text.count)
            ),
        ]
        for (item, label, line, text) in textFields {
            let row = geometry.rows[item]!
            drawLabel(label, item: item, lobby: lobby, row: row, geometry: geometry, into: &screen, theme: theme)
            let window = FieldWindow(text: text, cursor: line.cursor, width: geometry.fieldWidth)
            let field = CellRect(x: geometry.valueColumn, y: row, width: geometry.fieldWidth, height: 1)
            screen.fill(field, style: theme.style(.chatInput))
            screen.write(window.text, column: field.x, row: row, style: theme.style(.chatInput), clip: field)
        }
    }

    /// Cipher and role, each with a note on what it means, and the video profile.
    private static func drawChoices(
        _ lobby: LobbyState, geometry: Geometry, into screen: inout Screen, theme: Theme
    ) {
        let box = geometry.box
        let note = theme.style(.placeholder)
        let cipherRow = geometry.rows[.cipher]!
        drawLabel(
            "Cipher", item: .cipher, lobby: lobby, row: cipherRow, geometry: geometry, into: &screen,
            theme: theme)
        var end = drawChoice(
            lobby.cipher.label, focused: lobby.focus == .cipher, column: geometry.valueColumn,
            row: cipherRow, into: &screen, theme: theme)
        let cipherNote = LobbyScreen.cipherNote(lobby.cipher)
        screen.writeFitted(
            cipherNote, column: end + 2, row: cipherRow, width: box.maxX - 2 - (end + 2), style: note)

        let roleRow = geometry.rows[.role]!
        drawLabel("Role", item: .role, lobby: lobby, row: roleRow, geometry: geometry, into: &screen, theme: theme)
        end = drawChoice(
            lobby.role.rawValue, focused: lobby.focus == .role, column: geometry.valueColumn,
            row: roleRow, into: &screen, theme: theme)
        let roleNote = lobby.role == .audience ? "watch only: no camera or microphone" : "camera and microphone on"
        screen.writeFitted(roleNote, column: end + 2, row: roleRow, width: box.maxX - 2 - (end + 2), style: note)

        screen.write("Video", column: box.x + 3, row: geometry.profileRow, style: theme.style(.text))
        screen.writeFitted(
            "\(lobby.profile.name), \(lobby.profile.fps) fps, \(lobby.profile.bitrateKbps) kbit/s",
            column: geometry.valueColumn, row: geometry.profileRow, width: geometry.fieldWidth,
            style: theme.style(.text))
    }

    /// Where the shell should show the text cursor: in the focused text field, unless joining.
    public static func cursor(_ lobby: LobbyState, size: TerminalSize) -> CursorPosition? {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else { return nil }
        guard lobby.focus.isTextField, !lobby.isJoining else { return nil }
        let geometry = Geometry(size: size)
        let line: InputLine
        switch lobby.focus {
        case .server: line = lobby.server
        case .name: line = lobby.name
        case .room: line = lobby.room
        default: line = lobby.encryptionKey
        }
        // The key is shown masked, one star per character, so the same window fits both.
        let text = lobby.focus == .encryptionKey ? String(repeating: "*", count: line.text.count) : line.text
        let window = FieldWindow(text: text, cursor: line.cursor, width: geometry.fieldWidth)
        return CursorPosition(column: geometry.valueColumn + window.cursorColumn, row: geometry.rows[lobby.focus]!)
    }

    /// A mouse click at a cell: focuses the field, choice or button there; a click on a choice also steps it and a
    /// click on a button presses it. Clicks elsewhere, and while joining, do nothing.
    public static func click(
        _ lobby: inout LobbyState, column: Int, row: Int, size: TerminalSize
    ) -> LobbyAction? {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows, !lobby.isJoining else { return nil }
        guard let item = Geometry(size: size).item(atColumn: column, row: row) else { return nil }
        lobby.focus = item
        switch item {
        case .cipher, .role, .settings, .join, .messages: return reduce(&lobby, .char(" "))
        case .server, .name, .room, .encryptionKey: return nil
        }
    }

    /// "> Server" when focused, "! Name" when the message is about it, in the selection or error colour.
    static func drawLabel(
        _ label: String, item: LobbyItem, lobby: LobbyState, row: Int, geometry: Geometry, into screen: inout Screen,
        theme: Theme
    ) {
        let column = geometry.box.x + 1
        let flagged = lobby.message?.kind == .error && lobby.message?.item == item
        if lobby.focus == item {
            screen.write(">", column: column, row: row, style: theme.style(.selection))
        } else if flagged {
            screen.write("!", column: column, row: row, style: theme.style(.statusError))
        }
        let style =
            flagged
            ? theme.style(.statusError)
            : lobby.focus == item
                ? theme.style(.tileName)
                : theme.style(.text)
        screen.write(label, column: column + 2, row: row, style: style)
    }

    /// "< none >" with the arrows saying Left/Right change it; returns the column after it.
    static func drawChoice(
        _ value: String, focused: Bool, column: Int, row: Int, into screen: inout Screen, theme: Theme
    ) -> Int {
        screen.write("< \(value) >", column: column, row: row, style: theme.style(focused ? .selection : .text))
    }
}
