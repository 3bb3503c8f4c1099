import ParleyPictures
import ParleyRoom

/// Draws the chat pane (title, newest lines that fit, the input line) into the regions of a `RoomScreenLayout`.
///
/// Alerts fill their row in the alert colour, system lines are dim, sender names take the participant's colour
/// (their place in the session list; people who left get a colour from their name), and the user's own lines use
/// the own-message colour.
enum ChatPaneView {
    /// "> " before the text being typed.
    static let prompt = "> "
    /// Cells the prompt takes.
    static let promptWidth = 2

    /// The visible part of the chat input for a row `width` cells wide (prompt included).
    static func inputWindow(_ input: ChatInput, width: Int) -> FieldWindow {
        FieldWindow(text: input.text, cursor: input.cursor, width: max(1, width - promptWidth))
    }

    static func draw(
        state: RoomState, layout: RoomScreenLayout, into screen: inout Screen, theme: Theme,
        wrapped: inout ChatPaneLines
    ) {
        guard let pane = layout.chatPane, let lines = layout.chatLines, let placement = layout.chatPlacement else {
            return
        }
        let border = theme.style(.tileBorder)
        let title = theme.style(.tileName)
        let hintStyle = theme.style(.chatSystem)
        let hint: String
        if state.isChatInputOpen {
            hint = "Enter sends, Esc closes"
        } else if let key = state.settings.keymap.keys(for: .chat).first {
            hint = "\(KeyName.label(key)) to type"
        } else {
            hint = ""
        }
        switch placement {
        case .bottom:
            screen.drawHorizontalLine(column: pane.x, row: pane.y, length: pane.width, style: border)
            screen.write(" \(state.chatTitle) ", column: pane.x + 1, row: pane.y, style: title)
            if !hint.isEmpty {
                let text = " " + hint + " "
                screen.write(
                    text, column: pane.maxX - 1 - DisplayWidth.of(text), row: pane.y, style: hintStyle)
            }
        case .right:
            screen.drawVerticalLine(column: pane.x, row: pane.y, length: pane.height, style: border)
            let end = screen.write(state.chatTitle, column: pane.x + 2, row: pane.y, style: title)
            if !hint.isEmpty {
                let room = pane.maxX - 1 - (end + 2)
                if room >= DisplayWidth.of(hint) {
                    screen.write(
                        hint, column: pane.maxX - 1 - DisplayWidth.of(hint), row: pane.y, style: hintStyle)
                }
            }
        }

        drawHistory(state: state, into: &screen, in: lines, theme: theme, wrapped: &wrapped)
        if let input = layout.chatInput {
            drawInput(state.chatInput, into: &screen, in: input, theme: theme)
        }
    }

    static func drawHistory(
        state: RoomState, into screen: inout Screen, in rect: CellRect, theme: Theme,
        wrapped: inout ChatPaneLines
    ) {
        guard !rect.isEmpty else { return }
        let paneLines = wrapped.lines(of: state.shownChat, width: rect.width, height: rect.height)
        guard !paneLines.isEmpty else {
            screen.write("No messages yet", column: rect.x, row: rect.y, style: theme.style(.placeholder))
            return
        }
        // Newest at the bottom, like every chat.
        let top = rect.maxY - paneLines.count
        var colorByName: [String: Int] = [:]
        for (index, session) in state.sessions.enumerated() where colorByName[session.name] == nil {
            colorByName[session.name] = index
        }
        for (offset, line) in paneLines.enumerated() {
            let row = top + offset
            switch line.kind {
            case .alert:
                let style = theme.style(.chatAlert)
                screen.fill(CellRect(x: rect.x, y: row, width: rect.width, height: 1), style: style)
                screen.writeFitted(line.text, column: rect.x, row: row, width: rect.width, style: style)
            case .system:
                screen.writeFitted(
                    line.text, column: rect.x, row: row, width: rect.width, style: theme.style(.chatSystem))
            case .chat, .own:
                let textStyle = theme.style(line.kind == .own ? .chatOwn : .chatText)
                var runs = [StyledRun(line.text, textStyle)]
                if line.isFirstLine, let colon = line.text.firstRange(of: ": ") {
                    let sender = String(line.text[..<colon.lowerBound])
                    let index = line.kind == .own ? 0 : colorByName[sender] ?? stableIndex(sender)
                    runs = [
                        StyledRun(sender, textStyle.overlaid(with: theme.participantStyle(index))),
                        StyledRun(String(line.text[colon.lowerBound...]), textStyle),
                    ]
                }
                screen.write(runs, column: rect.x, row: row, width: rect.width)
            }
        }
    }

    /// The input row: prompt and the part of the line around the cursor, on the input colour.
    static func drawInput(_ input: ChatInput, into screen: inout Screen, in rect: CellRect, theme: Theme) {
        let style = theme.style(.chatInput)
        screen.fill(rect, style: style)
        let window = inputWindow(input, width: rect.width)
        screen.write(
            [StyledRun(prompt, style), StyledRun(window.text, style)], column: rect.x, row: rect.y,
            width: rect.width)
    }

    /// A colour index for a sender no longer in the room, the same on every render (FNV-1a of the name).
    static func stableIndex(_ name: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        return Int(hash % 997)
    }
}

/// The chat pane's wrapped lines as last drawn: a frame whose chat and pane size are unchanged (nearly every video
/// frame) reuses them instead of wrapping the log again.
struct ChatPaneLines: Sendable {
    private var log: ChatLog?
    private var width = 0, height = 0
    private var lines: [ChatPaneLine] = []

    /// `log.paneLines(width:height:)`, from the last call's result when nothing changed.
    mutating func lines(of log: ChatLog, width: Int, height: Int) -> [ChatPaneLine] {
        if width != self.width || height != self.height || self.log != log {
            lines = log.paneLines(width: width, height: height)
            self.log = log
            self.width = width
            self.height = height
        }
        return lines
    }
}
