import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleyWire

extension RoomScreen {
    /// Draws the tiles of `videoLayout` in order (an inset after the tile it covers), or a message when there is
    /// nobody to show.
    mutating func drawVideo(
        state: RoomState, videoLayout: VideoLayout, frames: [ParticipantID: VideoFrame],
        screens: [ParticipantID: TerminalScreen] = [:], into screen: inout Screen, in container: CellRect
    ) {
        guard !container.isEmpty else { return }
        guard !videoLayout.tiles.isEmpty else {
            let message: String
            switch state.connection {
            case .connecting: message = "Joining \(state.roomName)…"
            case .failed(let reason): message = "Could not join \(state.roomName): \(reason)"
            case .left: message = "You left the call"
            default: message = "Nobody is broadcasting yet"
            }
            let middle = container.y + container.height / 2
            screen.writeCentered(message, row: middle, in: container, style: theme.style(.placeholder))
            return
        }
        for tile in videoLayout.tiles {
            guard let index = state.sessions.firstIndex(where: { $0.id == tile.id }) else { continue }
            drawTile(
                tile, session: state.sessions[index], colorIndex: index, state: state, frame: frames[tile.id],
                share: screens[tile.id], into: &screen)
        }
    }

    /// Draws one tile: border (heavy while speaking, solid corners for the dominant speaker, focused colour when
    /// selected), number, name and mute mark
    /// in the top edge, and inside either the letterboxed picture or a placeholder; stats at the bottom when on.
    mutating func drawTile(
        _ tile: LayoutTile, session: VideoSession, colorIndex: Int, state: RoomState, frame: VideoFrame?,
        share: TerminalScreen? = nil, into screen: inout Screen
    ) {
        let rect = tile.rect.intersection(screen.bounds)
        guard !rect.isEmpty else { return }
        let bordered = Self.hasBorder(width: rect.width, height: rect.height)
        let inner = bordered ? rect.inset(by: 1) : rect
        let background = theme.style(.tileBackground)

        var shareNote: String?
        if session.isTerminal, let share {
            let fit = drawShare(
                share, fullscreen: state.largeShare == session.id, pan: (state.sharePan.column, state.sharePan.row),
                into: &screen, in: inner)
            shareNote = Self.shareFitNote(fit, share: share, shown: inner)
        } else if session.tileContent == .video, let frame, !session.isTerminal {
            videoRenderer.draw(
                frame, into: &screen, in: inner, background: background.background,
                key: Int(session.id.rawValue))
        } else {
            drawPlaceholder(session: session, colorIndex: colorIndex, state: state, into: &screen, in: inner)
        }
        // A camera that is off sends nothing: its tile keeps the placeholder instead of stale figures.
        if state.statsShown, session.tileContent != .videoOff, !session.isTerminal {
            drawStats(session.media, into: &screen, in: inner)
        }

        let selected = state.selected == session.id
        let speaking = session.isSpeaking
        let dominant = state.dominantSpeaker == session.id && state.sessions.count > 2
        let borderStyle = theme.style(
            selected
                ? .tileBorderFocused : dominant ? .tileBorderDominant : speaking ? .tileBorderSpeaking : .tileBorder)
        let lines: BoxLines = dominant ? .dominant : speaking ? .heavy : selected ? .double : .light
        let labelRow: CellRect
        if bordered {
            screen.drawBox(rect, style: borderStyle, lines: lines)
            labelRow = CellRect(x: rect.x + 1, y: rect.y, width: rect.width - 2, height: 1)
        } else {
            labelRow = CellRect(x: rect.x, y: rect.y, width: rect.width, height: 1)
        }
        drawLabel(
            tile: tile, session: session, colorIndex: colorIndex, into: &screen, in: labelRow, base: borderStyle,
            extra: Self.typingNote(session, state: state))
        if bordered, let shareNote {
            _ = screen.writeFitted(
                shareNote, column: rect.x + 1, row: rect.maxY - 1, width: rect.width - 2,
                style: borderStyle.overlaid(with: theme.style(.tileStatus)))
        }
        if bordered, session.isLocal, !session.audioMuted, let level = state.microphoneLevel {
            drawMeter(
                level: level, into: &screen, row: rect.maxY - 1, from: rect.x + 1, width: rect.width - 2,
                base: borderStyle)
        }
    }

    /// " mic ██████·· " on the own tile's bottom edge: the microphone's level in `RoomState.meterSteps` cells.
    func drawMeter(level: Double, into screen: inout Screen, row: Int, from column: Int, width: Int, base: CellStyle) {
        let steps = RoomState.meterSteps
        guard width >= steps + 7 else { return }
        let filled = RoomState.meterStep(level)
        let runs = [
            StyledRun(" mic ", base.overlaid(with: theme.style(.tileName))),
            StyledRun(String(repeating: "█", count: filled), base.overlaid(with: theme.style(.tileBorderSpeaking))),
            StyledRun(String(repeating: "·", count: steps - filled), base.overlaid(with: theme.style(.placeholder))),
            StyledRun(" ", base),
        ]
        screen.write(runs, column: column, row: row, width: steps + 7)
    }

    /// " 2 bob " at the left of the top edge and " mic off " at its right; the name gives way first.
    func drawLabel(
        tile: LayoutTile, session: VideoSession, colorIndex: Int, into screen: inout Screen, in row: CellRect,
        base: CellStyle, extra: String = ""
    ) {
        let nameStyle = base.overlaid(with: theme.participantStyle(colorIndex))
        let plain = base.overlaid(with: theme.style(.tileName))
        let mark = session.audioMuted && !session.isTerminal ? " mic off " : ""
        let markWidth = DisplayWidth.of(mark)
        let number = tile.number.map { " \($0)" } ?? ""
        let suffix = session.isLocal ? " (you)" : extra
        let fixed = DisplayWidth.of(number) + 2  // the spaces around the name
        let showMark = markWidth > 0 && row.width >= fixed + markWidth + 1
        let nameRoom = row.width - fixed - (showMark ? markWidth : 0)
        guard nameRoom > 0 else {
            screen.writeFitted(number, column: row.x, row: row.y, width: row.width, style: plain)
            return
        }
        var name = session.name + suffix
        if DisplayWidth.of(name) > nameRoom { name = DisplayWidth.truncate(session.name, toWidth: nameRoom) }
        let runs = [StyledRun(number + " ", plain), StyledRun(name, nameStyle), StyledRun(" ", plain)]
        screen.write(runs, column: row.x, row: row.y, width: row.width)
        if showMark {
            screen.write(
                mark, column: row.maxX - markWidth, row: row.y,
                style: base.overlaid(with: theme.style(.tileStatus)))
        }
    }

    /// " · bob types" after a shared terminal's name while someone may type in it; for the one who may, whether
    /// their keys go there now.
    static func typingNote(_ session: VideoSession, state: RoomState) -> String {
        guard let controller = session.controlledBy else { return "" }
        if controller == state.localID {
            return state.typingInto == session.id ? " · you type (Ctrl-] to stop)" : " · you may type"
        }
        let name = state.sessions.first { $0.id == controller }?.name ?? "someone"
        return " · \(name) types"
    }

    /// The participant's name and why there is no picture, centred on the tile background.
    func drawPlaceholder(
        session: VideoSession, colorIndex: Int, state: RoomState, into screen: inout Screen, in rect: CellRect
    ) {
        let background = theme.style(.tileBackground)
        screen.fill(rect, style: background)
        guard !rect.isEmpty else { return }
        let reason: String
        switch session.tileContent {
        case .videoOff:
            if session.isLocal, let key = state.settings.keymap.keys(for: .camera).first {
                reason = "camera off (\(KeyName.label(key)) turns it on)"
            } else {
                reason = "camera off"
            }
        case .waitingForVideo, .video:
            if session.isTerminal {
                reason = session.cannotDecrypt ? "can't decrypt: different room secret" : "waiting for the screen…"
            } else if session.cannotDecrypt {
                reason = "can't decrypt: different room secret"
            } else {
                reason = session.connection == .reconnecting ? "reconnecting…" : "waiting for video…"
            }
        }
        let name = session.isLocal ? session.name + " (you)" : session.name
        var lines = [(name, background.overlaid(with: theme.participantStyle(colorIndex)))]
        if rect.height >= 2 { lines.append((reason, background.overlaid(with: theme.style(.placeholder)))) }
        let top = rect.y + (rect.height - lines.count) / 2
        for (offset, line) in lines.enumerated() {
            screen.writeCentered(line.0, row: top + offset, in: rect, style: line.1)
        }
    }

    /// Resolution, frame rate, bitrate and loss on the tile's bottom row (two rows when one is too narrow).
    func drawStats(_ media: MediaInfo, into screen: inout Screen, in rect: CellRect) {
        guard !rect.isEmpty else { return }
        let style = theme.style(.overlay)
        let parts = Self.statsParts(media)
        let oneLine = parts.joined(separator: " ")
        var rows = [oneLine]
        if DisplayWidth.of(oneLine) > rect.width, rect.height >= 2, parts.count >= 4 {
            rows = [parts[0] + " " + parts[1], parts[2...].joined(separator: " ")]
        }
        for (offset, text) in rows.enumerated() {
            let row = rect.maxY - rows.count + offset
            screen.fill(CellRect(x: rect.x, y: row, width: rect.width, height: 1), style: style)
            let fitted = DisplayWidth.truncate(" " + text + " ", toWidth: rect.width)
            screen.write(fitted, column: rect.x, row: row, style: style, clip: rect)
        }
    }

    /// "640x360", "30fps", "600kb/s", "loss 0.5%", "jitter 3ms"; "no stats yet" before any arrived. The own tile
    /// says which of its camera's sizes are sent ("sends 320x180", "sends 640x360+160x90"), not the camera's size.
    static func statsParts(_ media: MediaInfo) -> [String] {
        guard media.resolution != nil || media.fps > 0 || media.bitrateKbps > 0 else { return ["no stats yet"] }
        var resolution = media.resolution.map { "\($0.width)x\($0.height)" } ?? "?x?"
        if let layers = media.sentLayers {
            resolution =
                layers.isEmpty
                ? "sends no video (nobody watches)"
                : "sends " + layers.map { "\($0.width)x\($0.height)" }.joined(separator: "+")
        }
        let tenths = Int((max(0, media.lossPercent) * 10).rounded())
        var parts = [
            resolution, "\(Int(media.fps.rounded()))fps", "\(Int(media.bitrateKbps.rounded()))kb/s",
            "loss \(tenths / 10).\(tenths % 10)%",
        ]
        if media.jitterMilliseconds > 0 { parts.append("jitter \(Int(media.jitterMilliseconds.rounded()))ms") }
        // Why audio broke, where it did: how long it waits, and what went missing.
        if media.audioDelayMilliseconds > 0 { parts.append("audio \(Int(media.audioDelayMilliseconds.rounded()))ms") }
        if media.audioConcealed > 0 { parts.append("concealed \(media.audioConcealed)") }
        if media.speakerUnderruns > 0 { parts.append("underruns \(media.speakerUnderruns)") }
        // What the own link carries by the relay's feedback: the sender's ceiling on a congested link.
        if let uplink = media.uplinkKbps { parts.append("uplink ~\(Int(uplink.rounded()))kb/s") }
        // What the own downlink carries, when losses showed a limit: the others' pictures are held within it.
        if let downlink = media.downlinkKbps { parts.append("downlink ~\(Int(downlink.rounded()))kb/s") }
        // A remote picture the own downlink holds back: smaller than the tile asks for, or paused.
        if let downlink = media.heldByDownlinkKbps {
            let what = media.heldToSize.map { "held to \($0.width)x\($0.height)" } ?? "paused"
            parts.append("\(what): your downlink ~\(downlink)kb/s")
        }
        // The camera's rate cut to fit it.
        if let held = media.heldToKbps {
            parts.append("video held to \(held)kb/s" + (media.heldToSize.map { " at \($0.width)x\($0.height)" } ?? ""))
        }
        return parts
    }
}

extension RoomScreen {
    /// How many camera pixels a cell mode's picture pixel is made from, across and down, when the layer allows:
    /// the block renderers average every camera pixel that falls in a cell pixel, so a layer twice the drawn size
    /// shows visibly better than one that just covers it (a 1:1 half-block tile drawn from the layer just covering
    /// it measured 7 dB under the full layer, from the next one up 1.5 dB: docs/benchmarks.md, "Simulcast").
    /// Pixel canvases (kitty, sixel) show every pixel they get, so they ask for their size.
    public static let cellSupersampling = 2

    /// The size each broadcasting peer's layer is asked for in `layout`: the drawn size (`drawnSizes`), times
    /// `cellSupersampling` in a cell mode; 0x0 for a peer off screen. The relay forwards the smallest layer at
    /// least this large (the largest when none is).
    public static func layerRequests(
        state: RoomState, layout: VideoLayout, cells: PictureCells = .halfBlocks, pixels: PixelCanvas? = nil
    ) -> [TileSize] {
        let factor = pixels == nil ? cellSupersampling : 1
        return drawnSizes(state: state, layout: layout, cells: cells, pixels: pixels).map {
            TileSize(id: $0.id, width: $0.width * factor, height: $0.height * factor)
        }
    }

    /// A tile at least 6x3 cells gets a border; a smaller one is all picture.
    static func hasBorder(width: Int, height: Int) -> Bool { width >= 6 && height >= 3 }

    /// The pixel size every broadcasting peer is drawn at in `layout` (0x0 for a peer off screen), in the pixels
    /// of `cells` (a sextant tile shows 2x3 pixels per cell, a half-block tile 1x2), or in screen pixels on a
    /// pixel canvas: what the relay needs to forward the smallest simulcast layer that still fills each tile. A
    /// picture not yet seen counts as filling its tile's inside; once its size is known, as the letterboxed area
    /// it really takes.
    public static func drawnSizes(
        state: RoomState, layout: VideoLayout,
        cells: PictureCells = .halfBlocks, pixels: PixelCanvas? = nil
    ) -> [TileSize] {
        state.stage.dropFirst().map { session in
            guard let tile = layout.tiles.last(where: { $0.id == session.id }) else {
                return TileSize(id: session.id.rawValue, width: 0, height: 0)
            }
            let bordered = hasBorder(width: tile.rect.width, height: tile.rect.height)
            let columns = tile.rect.width - (bordered ? 2 : 0)
            let rows = tile.rect.height - (bordered ? 2 : 0)
            guard columns > 0, rows > 0 else { return TileSize(id: session.id.rawValue, width: 0, height: 0) }
            let video = session.videoSize ?? VideoSize(width: columns, height: rows * 2)
            let area =
                pixels?.pictureArea(
                    frameWidth: video.width, frameHeight: video.height, columns: columns,
                    rows: rows)
                ?? VideoCellRenderer.pictureArea(
                    frameWidth: video.width, frameHeight: video.height,
                    columns: columns, rows: rows, cells: cells)
            return TileSize(id: session.id.rawValue, width: area.width, height: area.height)
        }
    }
}
