import ParleyRoom

/// Where each part of the room screen goes for a terminal size: header, video container, chat pane, chat input,
/// control bar. Pure; the renderer draws into these regions and the shell sends `video` to the reducer as
/// `.container(rect)`, so tile numbers and mouse hit-tests match what is drawn.
///
/// The chat pane is a bottom strip below 120 columns and a right column from 120 columns on. At 80 columns a
/// side column narrow enough to leave useful video (about 24 cells) would wrap every message after a few words,
/// while a full-width strip of 4 lines holds whole messages and costs the video only rows it has to spare: an
/// 80x17 container is already wider than a 16:9 picture needs (it is letterboxed left and right). From 120
/// columns on a 30–48 cell column holds ordinary chat lines unwrapped and keeps the whole height for history,
/// where a bottom strip would either stay 4–8 lines tall or eat into the rows the video grid needs.
public struct RoomScreenLayout: Hashable, Sendable {
    /// Below this size the room screen shows only a message asking for a larger terminal.
    public static let minimumSize = TerminalSize(columns: 80, rows: 24)
    /// From this width on the chat pane is a column on the right instead of a strip at the bottom.
    public static let sideChatMinimumColumns = 120

    /// Where the chat pane sits.
    public enum ChatPlacement: Hashable, Sendable {
        /// A full-width strip between the video and the control bar.
        case bottom
        /// A column on the right, between the header and the control bar.
        case right
    }

    /// The terminal size laid out.
    public let size: TerminalSize
    /// True below ``minimumSize``: every region is empty and the screen shows a message instead.
    public let isTooSmall: Bool
    /// The header row: room, people, connection, call time.
    public let header: CellRect
    /// The video container, in the room core's cells: send it to the reducer as `.container(video)`.
    public let video: CellRect
    /// Where the chat pane sits, nil while the flow views (chat pane and control bar) are hidden.
    public let chatPlacement: ChatPlacement?
    /// The whole chat pane including its title row (and left border on the right), if shown.
    public let chatPane: CellRect?
    /// Where chat history lines go, if shown.
    public let chatLines: CellRect?
    /// The chat input row, while the input is open.
    public let chatInput: CellRect?
    /// The control bar row, if shown.
    public let controlBar: CellRect?

    /// The layout for a terminal size. The input row comes out of the history lines, so opening the chat input
    /// never moves the video container. An open input also shows the flow views (the reducer does the same).
    public init(size: TerminalSize, flowViewsHidden: Bool, chatInputOpen: Bool) {
        self.size = size
        let columns = size.columns
        let rows = size.rows
        let none = CellRect(x: 0, y: 0, width: 0, height: 0)
        guard columns >= Self.minimumSize.columns, rows >= Self.minimumSize.rows else {
            isTooSmall = true
            header = none
            video = CellRect(x: 0, y: 0, width: 0, height: 0)
            chatPlacement = nil
            chatPane = nil
            chatLines = nil
            chatInput = nil
            controlBar = nil
            return
        }
        isTooSmall = false
        header = CellRect(x: 0, y: 0, width: columns, height: 1)
        guard !flowViewsHidden || chatInputOpen else {
            video = CellRect(x: 0, y: 1, width: columns, height: rows - 1)
            chatPlacement = nil
            chatPane = nil
            chatLines = nil
            chatInput = nil
            controlBar = nil
            return
        }
        controlBar = CellRect(x: 0, y: rows - 1, width: columns, height: 1)
        let pane: CellRect
        var lines: CellRect
        if columns >= Self.sideChatMinimumColumns {
            let width = min(48, max(30, columns / 4))
            chatPlacement = .right
            pane = CellRect(x: columns - width, y: 1, width: width, height: rows - 2)
            // Left border, one space, text, one space.
            lines = CellRect(x: pane.x + 2, y: pane.y + 1, width: width - 3, height: pane.height - 1)
            video = CellRect(x: 0, y: 1, width: columns - width, height: rows - 2)
        } else {
            let lineCount = min(8, max(4, (rows - 2) / 5))
            chatPlacement = .bottom
            pane = CellRect(x: 0, y: rows - 2 - lineCount, width: columns, height: lineCount + 1)
            lines = CellRect(x: 1, y: pane.y + 1, width: columns - 2, height: lineCount)
            video = CellRect(x: 0, y: 1, width: columns, height: pane.y - 1)
        }
        chatPane = pane
        if chatInputOpen {
            chatInput = CellRect(x: lines.x, y: lines.maxY - 1, width: lines.width, height: 1)
            lines.height -= 1
        } else {
            chatInput = nil
        }
        chatLines = lines
    }

    /// The layout for a terminal size and what the room state shows (flow views, chat input).
    public init(size: TerminalSize, state: RoomState) {
        self.init(size: size, flowViewsHidden: state.flowViewsHidden, chatInputOpen: state.isChatInputOpen)
    }
}
