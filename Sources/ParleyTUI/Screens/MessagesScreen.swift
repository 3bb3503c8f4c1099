import Foundation
import ParleyPictures
import ParleyRoom

/// Draws the messages screen: the conversation list on the left (newest first, unread counts, presence), the open
/// conversation on the right (newest at the bottom, the own messages' delivery state), a notice line, the input
/// line and the keys.
public enum MessagesScreen {
    /// Width of the list pane.
    static func listWidth(_ size: TerminalSize) -> Int { min(36, max(24, size.columns / 3)) }

    /// The keys, as the help line shows them (Esc as it goes from where the screen was opened).
    public static func help(_ escape: MessagesState.EscapeGoesTo) -> String {
        "Up/Down choose · Enter open or send · /dm NAME · /join CHANNEL · /leave · PgUp older · \(escape.rawValue)"
    }

    /// Renders the screen (below 80x24, a message asking for a larger terminal). `timeZone` formats the times.
    public static func render(
        _ state: MessagesState, size: TerminalSize, theme: Theme,
        timeZone: TimeZone = .current
    ) -> Screen {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else {
            return TooSmallMessage.render(size: size, minimum: minimum, theme: theme)
        }
        var screen = Screen(width: size.columns, height: size.rows)
        let header = CellRect(x: 0, y: 0, width: size.columns, height: 1)
        screen.fill(header, style: theme.style(.header))
        let status = state.connection ?? "online"
        let right = DisplayWidth.of(status)
        screen.writeFitted(
            " Parley · messages · \(state.account)", column: 0, row: 0,
            width: size.columns - right - 2, style: theme.style(.header))
        screen.write(status, column: size.columns - right - 1, row: 0, style: theme.style(.header))

        let paneHeight = size.rows - 4
        let listRect = CellRect(x: 0, y: 1, width: listWidth(size), height: paneHeight)
        let talkRect = CellRect(
            x: listRect.maxX, y: 1, width: size.columns - listRect.width,
            height: paneHeight)
        drawList(state, in: listRect, into: &screen, theme: theme, timeZone: timeZone)
        drawConversation(state, in: talkRect, into: &screen, theme: theme, timeZone: timeZone)

        let noticeRow = size.rows - 3
        if let notice = state.notice {
            screen.writeFitted(
                notice.text, column: 1, row: noticeRow, width: size.columns - 2,
                style: theme.style(notice.isError ? .statusError : .chatSystem))
        }
        let inputRow = size.rows - 2
        let prompt = state.open.map { "\($0) > " } ?? "> "
        let promptEnd = screen.write(prompt, column: 1, row: inputRow, style: theme.style(.chatOwn))
        let field = CellRect(x: promptEnd, y: inputRow, width: size.columns - promptEnd - 1, height: 1)
        screen.fill(field, style: theme.style(.chatInput))
        let window = FieldWindow(text: state.input.text, cursor: state.input.cursor, width: field.width)
        screen.write(window.text, column: field.x, row: inputRow, style: theme.style(.chatInput), clip: field)
        screen.writeCentered(help(state.escape), row: size.rows - 1, in: screen.bounds, style: theme.style(.chatSystem))
        return screen
    }

    /// Where the text cursor goes: in the input line.
    public static func cursor(_ state: MessagesState, size: TerminalSize) -> CursorPosition? {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else { return nil }
        let prompt = state.open.map { "\($0) > " } ?? "> "
        let column = 1 + DisplayWidth.of(prompt)
        let window = FieldWindow(text: state.input.text, cursor: state.input.cursor, width: size.columns - column - 1)
        return CursorPosition(column: column + window.cursorColumn, row: size.rows - 2)
    }

    static func drawList(
        _ state: MessagesState, in rect: CellRect, into screen: inout Screen, theme: Theme,
        timeZone: TimeZone
    ) {
        screen.drawBox(
            rect, style: theme.style(.tileBorder), lines: .rounded, title: "Conversations",
            titleStyle: theme.style(.tileName))
        let inner = rect.inset(by: 1)
        guard !state.conversations.isEmpty else {
            for (offset, line) in DisplayWidth.wrap("None yet: /dm NAME or /join CHANNEL", width: inner.width - 1)
                .prefix(inner.height).enumerated()
            {
                screen.write(line, column: inner.x + 1, row: inner.y + offset, style: theme.style(.placeholder))
            }
            return
        }
        // Two rows an entry; the window scrolls to keep the highlighted one visible.
        let visible = max(1, inner.height / 2)
        let first = min(max(0, state.selected - visible + 1), max(0, state.conversations.count - visible))
        for (offset, entry) in state.conversations.dropFirst(first).prefix(visible).enumerated() {
            let index = first + offset
            let row = inner.y + offset * 2
            let highlighted = index == state.selected
            let open = entry.key == state.open
            let nameStyle = theme.style(highlighted ? .selection : open ? .tileName : .text)
            let time = entry.lastAt > 0 ? clock(entry.lastAt, timeZone: timeZone) : ""
            var name = entry.key.description
            if entry.key.kind == .direct, let online = entry.online {
                name += entry.call != nil ? " ◉" : online ? " ●" : " ○"
            }
            if let members = entry.members, entry.key.kind == .channel { name += " (\(members))" }
            let unread = entry.unread > 0 ? " [\(entry.unread)]" : ""
            let tail = unread + (time.isEmpty ? "" : " " + time)
            let tailWidth = DisplayWidth.of(tail)
            screen.write(highlighted ? ">" : " ", column: inner.x, row: row, style: theme.style(.selection))
            screen.writeFitted(
                name, column: inner.x + 1, row: row, width: inner.width - 1 - tailWidth,
                style: nameStyle)
            if entry.unread > 0 {
                screen.write(unread, column: inner.maxX - tailWidth, row: row, style: theme.style(.chatAlert))
            }
            if !time.isEmpty {
                screen.write(
                    " " + time, column: inner.maxX - DisplayWidth.of(time) - 1, row: row,
                    style: theme.style(.chatTimestamp))
            }
            if row + 1 < inner.maxY, let text = entry.lastText {
                let from = entry.lastFrom.map { $0 == state.account ? "you: " : "\($0): " } ?? ""
                screen.writeFitted(
                    from + text, column: inner.x + 2, row: row + 1, width: inner.width - 2,
                    style: theme.style(.placeholder))
            }
        }
    }

    static func drawConversation(
        _ state: MessagesState, in rect: CellRect, into screen: inout Screen,
        theme: Theme, timeZone: TimeZone
    ) {
        guard let open = state.open else {
            screen.drawBox(rect, style: theme.style(.tileBorder), lines: .rounded)
            screen.writeCentered(
                "Choose a conversation and press Enter", row: rect.y + rect.height / 2,
                in: rect.inset(by: 1), style: theme.style(.placeholder))
            return
        }
        var title = open.description
        if let entry = state.entry(open) {
            if open.kind == .channel, let members = entry.members { title += " · \(members) members" }
            if open.kind == .direct, let online = entry.online {
                title += " · " + (entry.call ?? (online ? "online" : "offline"))
            }
        }
        screen.drawBox(
            rect, style: theme.style(.tileBorderFocused), lines: .rounded, title: title,
            titleStyle: theme.style(.tileName))
        let inner = CellRect(x: rect.x + 2, y: rect.y + 1, width: rect.width - 4, height: rect.height - 2)
        var rows: [[StyledRun]] = []
        let lines = state.lines[open] ?? []
        // Only the newest lines can show: wrap from the end until the pane is full.
        for line in lines.reversed() {
            let time = clock(line.sentAt, timeZone: timeZone)
            var wrappedRows: [[StyledRun]] = []
            if line.isActivity {
                for part in DisplayWidth.wrap("\(time) -- \(line.text)", width: inner.width) {
                    wrappedRows.append([StyledRun(part, theme.style(.chatSystem))])
                }
            } else {
                let own = line.from == state.account
                let mark = progressMark(line.progress)
                let prefix = "\(time) \(own ? "you" : line.from): "
                let body = DisplayWidth.wrap(prefix + line.text + mark, width: inner.width)
                for (index, part) in body.enumerated() {
                    if index == 0, part.hasPrefix(prefix) {
                        wrappedRows.append([
                            StyledRun(time + " ", theme.style(.chatTimestamp)),
                            StyledRun((own ? "you" : line.from) + ": ", theme.style(own ? .chatOwn : .tileName)),
                            StyledRun(String(part.dropFirst(prefix.count)), theme.style(.chatText)),
                        ])
                    } else {
                        wrappedRows.append([StyledRun(part, theme.style(.chatText))])
                    }
                }
                if case .failed = line.progress, let last = wrappedRows.indices.last {
                    wrappedRows[last] = wrappedRows[last].map { StyledRun($0.text, theme.style(.statusError)) }
                }
            }
            rows.insert(contentsOf: wrappedRows, at: 0)
            if rows.count >= inner.height { break }
        }
        if lines.isEmpty {
            screen.writeCentered(
                open.kind == .channel ? "No messages in \(open) yet" : "No messages with \(open.name) yet",
                row: inner.y + inner.height / 2, in: inner, style: theme.style(.placeholder))
            return
        }
        let shown = rows.suffix(inner.height)
        let top = inner.maxY - shown.count
        for (offset, runs) in shown.enumerated() {
            screen.write(runs, column: inner.x, row: top + offset, width: inner.width)
        }
    }

    /// " ✓" stored, " ✓✓" delivered, " ✓✓ read", " (sending)", " ✗ not sent".
    static func progressMark(_ progress: MessageLine.Progress?) -> String {
        switch progress {
        case nil: ""
        case .sending: " (sending)"
        case .stored: " ✓"
        case .delivered: " ✓✓"
        case .read: " ✓✓ read"
        case .failed: " ✗ not sent"
        }
    }

    /// "21:40" for today's times, "11-23 21:40" for older ones.
    static func clock(_ milliseconds: Int64, timeZone: TimeZone, now: Date = Date()) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let formatter = DateFormatter()
        formatter.timeZone = timeZone
        formatter.dateFormat = calendar.isDate(date, inSameDayAs: now) ? "HH:mm" : "MM-dd HH:mm"
        return formatter.string(from: date)
    }
}
