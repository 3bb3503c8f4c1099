import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleyWire

/// The call screen: header, video tiles, chat pane and input, control bar, notices and overlays, drawn from a
/// `RoomState` and the latest decoded frame of each participant. Pure apart from the video renderer's scratch
/// tables, which it keeps between frames (hold one `RoomScreen` per render loop).
public struct RoomScreen: Sendable {
    /// Colours by role for the terminal's depth.
    public var theme: Theme
    var videoRenderer: VideoCellRenderer
    var chatLines = ChatPaneLines()
    /// The tiles the last `render` drew (empty when the terminal was too small for the call screen).
    public private(set) var drawnLayout = VideoLayout.empty

    /// A room screen for a theme; video uses the colour mode that suits the theme's depth unless told otherwise,
    /// in half blocks unless told otherwise, or as `PixelTile`s for the terminal to draw in pixels.
    public init(
        theme: Theme, videoMode: VideoColorMode? = nil, cells: PictureCells = .halfBlocks,
        pixels: Bool = false
    ) {
        self.theme = theme
        videoRenderer = VideoCellRenderer(
            mode: videoMode ?? VideoColorMode(depth: theme.depth), cells: cells,
            pixels: pixels)
    }

    /// Draws video in `mode` and `cells` from now on (the terminal's choice changed after a re-attach); nothing
    /// when they are what it draws already.
    public mutating func followPicture(mode: VideoColorMode, cells: PictureCells) {
        guard mode != videoRenderer.mode || cells != videoRenderer.cells else { return }
        videoRenderer = VideoCellRenderer(mode: mode, cells: cells, pixels: videoRenderer.pixels)
    }

    /// The block characters video is drawn with (half blocks in shade mode).
    public var pictureCells: PictureCells { videoRenderer.mode == .shades ? .halfBlocks : videoRenderer.cells }

    /// Renders the room for a terminal size. `frames` holds each participant's latest decoded picture; a tile
    /// whose session shows video but has no frame yet shows "waiting for video…".
    public mutating func render(
        state: RoomState, frames: [ParticipantID: VideoFrame], screens: [ParticipantID: TerminalScreen] = [:],
        size: TerminalSize
    ) -> Screen {
        let layout = RoomScreenLayout(size: size, state: state)
        if layout.isTooSmall {
            drawnLayout = .empty
            return TooSmallMessage.render(
                size: size, minimum: RoomScreenLayout.minimumSize, theme: theme,
                extra: state.leavePending ? [Self.leaveQuestion] : [])
        }
        var screen = Screen(width: size.columns, height: size.rows)
        let videoLayout = state.layout(in: layout.video)
        drawnLayout = videoLayout
        drawHeader(state: state, videoLayout: videoLayout, into: &screen, in: layout.header)
        drawVideo(
            state: state, videoLayout: videoLayout, frames: frames, screens: screens, into: &screen, in: layout.video)
        ChatPaneView.draw(state: state, layout: layout, into: &screen, theme: theme, wrapped: &chatLines)
        if let bar = layout.controlBar {
            ControlBarView.draw(state: state, into: &screen, in: bar, theme: theme)
        }
        if let notice = state.notice {
            drawNotice(notice.text, into: &screen, in: layout.video)
        }
        if state.rosterShown, !state.helpShown { drawRoster(state, into: &screen) }
        if state.helpShown { drawHelp(state, into: &screen) }
        if state.leavePending { drawLeaveQuestion(into: &screen) }
        return screen
    }

    /// Renders with a fresh video renderer (handy in tests; a render loop keeps one `RoomScreen` instead).
    public static func render(
        state: RoomState, frames: [ParticipantID: VideoFrame], screens: [ParticipantID: TerminalScreen] = [:],
        size: TerminalSize, theme: Theme
    ) -> Screen {
        var screen = RoomScreen(theme: theme)
        return screen.render(state: state, frames: frames, screens: screens, size: size)
    }

    /// Where the shell should show the text cursor: in the chat input while it is open and no overlay covers it.
    public static func cursor(state: RoomState, size: TerminalSize) -> CursorPosition? {
        guard state.isChatInputOpen, !state.helpShown, !state.leavePending else { return nil }
        let layout = RoomScreenLayout(size: size, state: state)
        guard let input = layout.chatInput else { return nil }
        let window = ChatPaneView.inputWindow(state.chatInput, width: input.width)
        return CursorPosition(column: input.x + ChatPaneView.promptWidth + window.cursorColumn, row: input.y)
    }

    /// The leave confirmation's question.
    static let leaveQuestion = "Leave the call? y/n"

    // MARK: - Header

    /// "mm:ss" below an hour, "h:mm:ss" from an hour on.
    public static func callTime(_ duration: Duration) -> String {
        let total = max(0, Int(duration.components.seconds))
        let hours = total / 3600
        let minutes = (total / 60) % 60
        let seconds = total % 60
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(seconds))" : "\(two(minutes)):\(two(seconds))"
    }

    /// "● REC alice, you" while anyone records the call; nil otherwise.
    static func recordingLabel(_ state: RoomState) -> String? {
        guard !state.recorders.isEmpty else { return nil }
        return "● REC " + state.recorders.map { $0.id == state.localID ? "you" : $0.name }.joined(separator: ", ")
    }

    /// The words and colour role for the room's connection in the header.
    static func connectionLabel(_ connection: ConnectionState) -> (text: String, role: ColorRole?) {
        switch connection {
        case .connecting: return ("connecting…", .statusWarning)
        case .connected: return ("connected", nil)
        case .interrupted: return ("interrupted", .statusWarning)
        case .reconnecting: return ("reconnecting…", .statusWarning)
        case .lost: return ("still reconnecting…", .statusError)
        case .failed: return ("join failed", .statusError)
        case .left: return ("left", nil)
        }
    }

    func drawHeader(state: RoomState, videoLayout: VideoLayout, into screen: inout Screen, in rect: CellRect) {
        let base = theme.style(.header)
        screen.fill(rect, style: base)
        let separator = StyledRun(" · ", base)
        let count = state.sessions.count
        var people = count == 1 ? "1 person" : "\(count) people"
        if let lost = state.disconnectedAt {
            // Nobody can be told who came or went while the relay is out of reach: the count is as of then.
            people += " as of \(Self.callTime(state.now - lost)) ago"
        }
        var after: [StyledRun] = []
        if let recording = Self.recordingLabel(state) {
            after += [separator, StyledRun(recording, base.overlaid(with: theme.style(.statusError)))]
        }
        after += [separator, StyledRun(people, base)]
        let connection = Self.connectionLabel(state.connection)
        after += [
            separator, StyledRun(connection.text, connection.role.map { base.overlaid(with: theme.style($0)) } ?? base),
        ]
        if let duration = state.callDuration {
            after += [separator, StyledRun(Self.callTime(duration), base)]
        }
        if state.unseenChat > 0 {
            let key = state.settings.keymap.keys(for: .hideControls).first.map { ", " + KeyName.label($0) + " shows" }
            let text = "\(state.unseenChat) new in chat" + (key ?? "")
            after += [separator, StyledRun(text, base.overlaid(with: theme.style(.statusWarning)))]
        }
        if state.localRole == .audience {
            after += [separator, StyledRun("audience", base.overlaid(with: theme.style(.statusWarning)))]
        }
        if let code = state.security.safetyCode {
            after += [separator, StyledRun("🔒 " + code, base)]
        }
        if state.security.insecureTransport {
            after += [separator, StyledRun("INSECURE", base.overlaid(with: theme.style(.statusError)))]
        }
        if state.mediaOverTCP {
            after += [separator, StyledRun("media over TCP", base.overlaid(with: theme.style(.statusWarning)))]
        }

        var right: [StyledRun] = []
        if videoLayout.fullscreen != nil, state.largeTile != nil, let key = state.settings.keymap.keys(for: .grid).first
        {
            right += [StyledRun(KeyName.label(key) + " grid", base), separator]
        }
        if videoLayout.pageCount > 1 {
            right += [StyledRun("page \(videoLayout.page + 1)/\(videoLayout.pageCount)", base), separator]
        }
        if let key = state.settings.keymap.keys(for: .help).first {
            right.append(StyledRun(KeyName.label(key) + " help", base))
        }
        right.append(StyledRun(" ", base))

        let afterWidth = ControlBarView.totalWidth(after)
        var rightWidth = ControlBarView.totalWidth(right)
        // The room name gets what is left, but keeps at least 12 cells before the right side gives way.
        if rect.width - 1 - afterWidth - rightWidth - 1 < 12 {
            right = []
            rightWidth = 0
        }
        let nameWidth = max(1, rect.width - 1 - afterWidth - rightWidth - 1)
        let name = DisplayWidth.truncate(state.roomName, toWidth: nameWidth)
        screen.write([StyledRun(" " + name, base)] + after, column: rect.x, row: rect.y, width: rect.width)
        if rightWidth > 0 {
            screen.write(right, column: rect.maxX - rightWidth, row: rect.y, width: rightWidth)
        }
    }

    // MARK: - Notices and overlays

    func drawNotice(_ text: String, into screen: inout Screen, in container: CellRect) {
        guard container.height > 0, container.width > 4 else { return }
        let fitted = DisplayWidth.truncate(text, toWidth: container.width - 4)
        screen.writeCentered(" " + fitted + " ", row: container.maxY - 1, in: container, style: theme.style(.overlay))
    }

    func drawLeaveQuestion(into screen: inout Screen) {
        let style = theme.style(.overlay)
        let hint = "y or Enter leaves, n or Esc stays"
        let width = min(screen.width, DisplayWidth.of(hint) + 6)
        let rect = CellRect(
            x: (screen.width - width) / 2, y: (screen.height - 4) / 2, width: width, height: 4)
        screen.drawPanel(rect, style: style, title: "Leave")
        let inside = rect.inset(by: 1)
        screen.writeCentered(
            Self.leaveQuestion, row: inside.y, in: inside, style: style.overlaid(with: .init(attributes: .bold)))
        screen.writeCentered(hint, row: inside.y + 1, in: inside, style: style)
    }

    /// The roster: everyone with role, microphone, camera, speaking and time in the call, then the newest activity.
    func drawRoster(_ state: RoomState, into screen: inout Screen) {
        let style = theme.style(.overlay)
        let bold = style.overlaid(with: CellStyle(attributes: .bold))
        var rows: [(String, CellStyle)] = []
        for session in state.sessions {
            rows.append((Self.rosterLine(session, state: state), session.isSpeaking ? bold : style))
        }
        rows.append(("", style))
        rows.append(("Activity", bold))
        let room = max(1, screen.height - 4 - rows.count)
        let start = state.callStartedAt ?? .zero
        for entry in state.activity.suffix(room) {
            rows.append(("\(Self.callTime(max(.zero, entry.at - start)))  \(entry.text)", style))
        }
        if state.activity.isEmpty { rows.append(("nothing yet", style)) }
        let width = min(screen.width - 2, max(40, (rows.map { DisplayWidth.of($0.0) }.max() ?? 0) + 4))
        let shown = Array(rows.prefix(max(1, screen.height - 2)))
        let rect = CellRect(
            x: (screen.width - width) / 2, y: max(0, (screen.height - shown.count - 2) / 2),
            width: width, height: shown.count + 2)
        screen.drawPanel(rect, style: style, title: "Roster · \(state.sessions.count)")
        for (offset, row) in shown.enumerated() {
            screen.writeFitted(
                row.0, column: rect.x + 2, row: rect.y + 1 + offset, width: width - 4,
                style: row.1)
        }
    }

    /// "bob ✓  broadcaster  mic on  camera off  speaking  12:03 in the call".
    static func rosterLine(_ session: VideoSession, state: RoomState) -> String {
        var parts = [session.name + (session.isLocal ? " (you)" : "") + (session.id == state.hostID ? " (host)" : "")]
        parts.append(session.role == .audience ? "audience" : "broadcaster")
        if session.role == .broadcaster {
            parts.append(session.audioMuted ? "mic off" : "mic on")
            parts.append(session.videoMuted ? "camera off" : "camera on")
        }
        if session.isSpeaking { parts.append("speaking") }
        if let joined = session.joinedAt { parts.append("\(callTime(max(.zero, state.now - joined))) in the call") }
        return parts.joined(separator: "  ")
    }

    /// The help overlay: the command table's lines, the fixed keys and the chat commands, scrolled to
    /// `state.helpScroll` when they do not fit; the bottom border says where the view is and how to move it.
    func drawHelp(_ state: RoomState, into screen: inout Screen) {
        let style = theme.style(.overlay)
        let keyStyle = style.overlaid(with: CellStyle(attributes: .bold))
        let layout = HelpOverlay.layout(keymap: state.settings.keymap, columns: screen.width, rows: screen.height)
        let first = min(state.helpScroll, layout.maximumScroll)
        let rows = layout.rows[first..<min(layout.rows.count, first + layout.visibleRows)]
        let rect = CellRect(
            x: (screen.width - layout.boxWidth) / 2, y: max(0, (screen.height - rows.count - 2) / 2),
            width: layout.boxWidth, height: rows.count + 2)
        screen.drawPanel(rect, style: style, title: "Keys")
        for (offset, row) in rows.enumerated() {
            let y = rect.y + 1 + offset
            screen.writeFitted(row.keys, column: rect.x + 2, row: y, width: layout.keysWidth, style: keyStyle)
            screen.writeFitted(
                row.text, column: rect.x + 4 + layout.keysWidth, row: y, width: layout.textWidth, style: style)
        }
        let closing =
            layout.maximumScroll == 0
            ? " Esc closes "
            : " \(first + 1)–\(first + rows.count) of \(layout.rows.count) · ↑↓ PgUp PgDn scroll · Esc closes "
        if rect.width > DisplayWidth.of(closing) + 4 {
            screen.write(
                closing, column: rect.maxX - 2 - DisplayWidth.of(closing), row: rect.maxY - 1, style: style)
        } else if rect.width > 8, layout.maximumScroll > 0 {
            let short = first < layout.maximumScroll ? " ↓ more " : " ↑ more "
            screen.write(short, column: rect.maxX - 2 - DisplayWidth.of(short), row: rect.maxY - 1, style: style)
        }
    }
}
