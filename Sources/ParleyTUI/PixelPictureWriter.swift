import ParleyPictures
import ParleyRoom

/// Works out, screen by screen, which pixel pictures (kitty or sixel) to send, move or take away, and builds the
/// bytes. Pure apart from its scratch: `Terminal` asks for a `Plan` before curses draws (sixel pictures it takes
/// away need curses to repaint their rows), then for the bytes after `doupdate`, then commits.
///
/// Rules:
/// - A picture is sent when its frame, its place or its visible rows change, after curses repainted the screen,
///   and (sixel) when something over it was taken away or a picture under it was sent again.
/// - Covered cells (a dialog, the help, a notice over the tile): a picture covered only in its bottom two rows
///   (statistics, a notice on the edge) is cut above them; covered anywhere else it is taken away until it is
///   clear again. A later tile over an earlier one (an inset) does not count as covering it: kitty stacks it above
///   (`z`), sixel draws it after.
/// - Sixel pictures never reach the screen's last row, where a terminal would scroll after the image.
public struct PixelPictureWriter: Sendable {
    /// The protocol and cell size in use.
    public var canvas: PixelCanvas
    private var shown: [Int: Shown] = [:]
    private var imageIDs: [Int: Int] = [:]
    // Set by `forget`: the next plan sends every picture again.
    private var repaintNext = false
    private var scaler = PixelScaler()
    private var sixel = SixelEncoder()
    private var shared = SharedPictures()

    private struct Shown: Equatable {
        var rect: CellRect
        var timestamp: Int64
        var frameWidth: Int
        var frameHeight: Int
        var id: Int
    }

    /// What one screen needs.
    public struct Plan: Sendable {
        /// Pictures to send: the tile, the cells it shows in (cropped), its stacking order.
        public internal(set) var draw: [(tile: PixelTile, rect: CellRect, order: Int)] = []
        /// Tiles whose picture goes away (kitty: deleted; sixel: its rows repainted by curses).
        public internal(set) var remove: [Int] = []
        /// Screen rows curses must repaint before the pictures go out (sixel only).
        public internal(set) var repaintRows: [Int] = []
        /// Nothing to send or repaint.
        public var isEmpty: Bool { draw.isEmpty && remove.isEmpty && repaintRows.isEmpty }
    }

    /// A writer for a canvas, with nothing shown yet.
    public init(canvas: PixelCanvas) {
        self.canvas = canvas
    }

    /// The cells `tile` can show its picture in on `screen`: the rows from its top that are clear (cut above
    /// covered bottom rows), empty when covered elsewhere. `later` are the rects of tiles drawn after it.
    func visibleRect(of tile: PixelTile, on screen: Screen, later: [CellRect]) -> CellRect {
        var rect = tile.rect.intersection(screen.bounds)
        if canvas.kind == .sixel {
            rect = rect.intersection(CellRect(x: 0, y: 0, width: screen.width, height: screen.height - 1))
        }
        guard !rect.isEmpty else { return rect }
        var clearRows = rect.height
        rows: for row in rect.y..<rect.maxY {
            for column in rect.x..<rect.maxX
            where screen.cells[row * screen.width + column] != tile.placeholder {
                if later.contains(where: { $0.contains(column: column, row: row) }) { continue }
                clearRows = row - rect.y
                break rows
            }
        }
        if clearRows < rect.height && clearRows < tile.rect.height - 2 {
            return CellRect(x: 0, y: 0, width: 0, height: 0)
        }
        rect.height = clearRows
        return rect
    }

    /// What to do for `screen`; `repaintAll` after curses painted the whole screen again.
    public mutating func plan(_ screen: Screen, repaintAll: Bool) -> Plan {
        var plan = Plan()
        let tiles = screen.pixelTiles
        var wanted: [(tile: PixelTile, rect: CellRect, order: Int)] = []
        var next: [Int: CellRect] = [:]  // where each tile's picture will be after this plan
        var seen = Set<Int>()
        for (order, tile) in tiles.enumerated() where !seen.contains(tile.key) {
            seen.insert(tile.key)
            let later = tiles[(order + 1)...].map(\.rect)
            let rect = visibleRect(of: tile, on: screen, later: later)
            guard !rect.isEmpty else { continue }
            wanted.append((tile, rect, order))
            next[tile.key] = rect
        }
        // Pictures that go away or move.
        var vacated: [CellRect] = []
        for (key, old) in shown.sorted(by: { $0.key < $1.key }) where next[key] != old.rect {
            if next[key] == nil { plan.remove.append(key) }
            vacated.append(old.rect)
        }
        var redraw = Set<Int>()
        for entry in wanted {
            let old = shown[entry.tile.key]
            if repaintAll || repaintNext || old == nil || old!.rect != entry.rect
                || old!.timestamp != entry.tile.frame.timestampMicros
                || old!.frameWidth != entry.tile.frame.width || old!.frameHeight != entry.tile.frame.height
            {
                redraw.insert(entry.tile.key)
            }
        }
        if canvas.kind == .sixel {
            // Curses repaints the rows a picture left; every picture on those rows goes out again, and so does
            // every picture over one that goes out again.
            var rows = Set<Int>()
            for rect in vacated { rows.formUnion(rect.y..<rect.maxY) }
            plan.repaintRows = rows.sorted()
            for entry in wanted where (entry.rect.y..<entry.rect.maxY).contains(where: rows.contains) {
                redraw.insert(entry.tile.key)
            }
            for (index, entry) in wanted.enumerated() where redraw.contains(entry.tile.key) {
                for over in wanted[(index + 1)...] where !over.rect.intersection(entry.rect).isEmpty {
                    redraw.insert(over.tile.key)
                }
            }
        }
        plan.draw = wanted.filter { redraw.contains($0.tile.key) }
        return plan
    }

    /// The bytes that carry out `plan` on an xterm-like terminal (ECMA-48 cursor addressing), for benchmarks.
    public mutating func output(_ plan: Plan) -> [UInt8] { output(plan, capabilities: .xterm) }

    /// The bytes that carry out `plan` (cursor saved first and restored last), or nothing to write.
    mutating func output(_ plan: Plan, capabilities: PictureCapabilities) -> [UInt8] {
        var bytes: [UInt8] = []
        if canvas.kind == .kitty {
            for key in plan.remove { if let id = shown[key]?.id { bytes += KittyGraphics.delete(id: id) } }
        }
        for entry in plan.draw {
            let tile = entry.tile
            let full = tile.rect
            let area = canvas.pictureArea(
                frameWidth: tile.frame.width, frameHeight: tile.frame.height,
                columns: full.width, rows: full.height)
            // Shift the picture by where the visible cells start inside the tile (a tile cut at the screen's edge).
            let shifted = PictureArea(
                x: area.x - (entry.rect.x - full.x) * canvas.cell.width,
                y: area.y - (entry.rect.y - full.y) * canvas.cell.height,
                width: area.width, height: area.height)
            let raster = scaler.raster(
                of: tile.frame, width: entry.rect.width * canvas.cell.width,
                height: entry.rect.height * canvas.cell.height, area: shifted,
                background: tile.background)
            bytes += capabilities.moveTo(entry.rect.y, entry.rect.x) ?? []
            switch canvas.kind {
            case .kitty:
                let id = imageID(for: tile.key)
                // Shared memory when the terminal reads it; the byte stream if storing fails (e.g. /dev/shm full).
                if canvas.sharedMemory, let name = try? shared.store(raster.rgb) {
                    bytes += KittyGraphics.showShared(
                        name: name, width: raster.width, height: raster.height, id: id,
                        columns: entry.rect.width, rows: entry.rect.height,
                        z: entry.order)
                } else {
                    bytes += KittyGraphics.show(
                        raster, id: id, columns: entry.rect.width, rows: entry.rect.height,
                        z: entry.order)
                }
            case .sixel:
                bytes += sixel.encode(raster, colors: canvas.colorRegisters)
            }
        }
        guard !bytes.isEmpty else { return [] }
        return capabilities.saveCursor + bytes + capabilities.restoreCursor
    }

    /// Records that `plan` went out.
    public mutating func commit(_ plan: Plan) {
        repaintNext = false
        for key in plan.remove {
            shown[key] = nil
            imageIDs[key] = nil
        }
        for entry in plan.draw {
            shown[entry.tile.key] = Shown(
                rect: entry.rect, timestamp: entry.tile.frame.timestampMicros,
                frameWidth: entry.tile.frame.width, frameHeight: entry.tile.frame.height,
                id: imageID(for: entry.tile.key))
        }
    }

    /// Marks every picture as needing to go out again (a resize is pending, or the screen was cleared). What is
    /// shown where is kept, so a picture that is gone by the next plan is still taken away (a kitty image stays
    /// on the screen until it is deleted).
    public mutating func forget() {
        repaintNext = true
    }

    /// What to write when the screen closes: kitty's images deleted (sixel pictures go with the screen); shared
    /// memory the terminal did not take is unlinked.
    mutating func closing() -> [UInt8] {
        shared.removeAll()
        return canvas.kind == .kitty && !imageIDs.isEmpty ? KittyGraphics.deleteAll : []
    }

    /// The tile's kitty image id: the smallest one no tile holds (a removed tile's image was deleted with it), so
    /// ids stay as few as the tiles and never collide.
    private mutating func imageID(for key: Int) -> Int {
        if let id = imageIDs[key] { return id }
        let used = Set(imageIDs.values)
        var id = 1
        while used.contains(id) { id += 1 }
        imageIDs[key] = id
        return id
    }
}
