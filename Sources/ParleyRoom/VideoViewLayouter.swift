/// Tuning for ``VideoViewLayouter``: cell shape, the readable minimum tile and the fullscreen strip.
public struct LayoutOptions: Hashable, Sendable {
    /// How many times taller than wide a terminal cell is (2.0 for most fonts).
    public var cellAspect: Double
    /// Narrowest readable grid tile in columns; below it the grid splits into pages.
    public var minimumTileWidth: Int
    /// Shortest readable grid tile in rows; below it the grid splits into pages.
    public var minimumTileHeight: Int
    /// How many small tiles the fullscreen strip holds (the reference shows four).
    public var stripCapacity: Int

    /// Defaults: cells twice as tall as wide, 16x6 minimum tiles, four strip tiles.
    public init(
        cellAspect: Double = 2.0, minimumTileWidth: Int = 16, minimumTileHeight: Int = 6, stripCapacity: Int = 4
    ) {
        self.cellAspect = cellAspect
        self.minimumTileWidth = minimumTileWidth
        self.minimumTileHeight = minimumTileHeight
        self.stripCapacity = stripCapacity
    }
}

/// One video to place: who it is and, once known, its size in pixels.
public struct TileSource: Hashable, Sendable {
    /// The participant shown.
    public var id: ParticipantID
    /// The video's size in pixels; nil until the first frame.
    public var videoSize: VideoSize?

    /// A video to place.
    public init(id: ParticipantID, videoSize: VideoSize? = nil) {
        self.id = id
        self.videoSize = videoSize
    }
}

/// The role a tile plays in the layout.
public enum TileKind: String, Hashable, Sendable {
    /// A tile of the equal grid (or the only tile on screen).
    case grid
    /// The fullscreen participant's large tile.
    case full
    /// A small tile in the strip beside or below the fullscreen tile.
    case strip
    /// The self view inset at the top right over a single peer.
    case corner
}

/// A placed tile: who, where, what kind, and the number the user types to address it.
public struct LayoutTile: Hashable, Sendable {
    /// The participant shown.
    public var id: ParticipantID
    /// Where the tile goes, in screen cells.
    public var rect: CellRect
    /// The tile's role in the layout.
    public var kind: TileKind
    /// The tile's number on the current page (1 = first), or nil when it is not on the current page.
    public var number: Int?

    /// A placed tile.
    public init(id: ParticipantID, rect: CellRect, kind: TileKind, number: Int?) {
        self.id = id
        self.rect = rect
        self.kind = kind
        self.number = number
    }
}

/// The result of a layout: tiles bottom-to-top (an inset comes after the tile it covers) plus paging.
public struct VideoLayout: Hashable, Sendable {
    /// Visible tiles, drawn in this order (later tiles cover earlier ones).
    public var tiles: [LayoutTile]
    /// Participants addressable by number on the current page: element 0 is number 1.
    public var numbered: [ParticipantID]
    /// The page shown, clamped to the available pages.
    public var page: Int
    /// How many pages the grid needs at the readable minimum tile size (at least 1).
    public var pageCount: Int
    /// Tiles per full page.
    public var pageSize: Int
    /// The fullscreen participant when the layout honoured one.
    public var fullscreen: ParticipantID?

    /// An empty layout (nothing to show).
    public static let empty = VideoLayout(tiles: [], numbered: [], page: 0, pageCount: 1, pageSize: 0, fullscreen: nil)

    /// Where a participant's tile is, if visible.
    public func rect(of id: ParticipantID) -> CellRect? {
        tiles.last { $0.id == id }?.rect
    }

    /// The participant a tile number (1-based) addresses on the current page.
    public func participant(numbered number: Int) -> ParticipantID? {
        guard number >= 1, number <= numbered.count else { return nil }
        return numbered[number - 1]
    }

    /// Hit-testing: the participant whose tile covers a screen cell. Like the reference, it answers only when
    /// no tile is fullscreen (a double-click there always returns to the grid).
    public func participant(atColumn column: Int, row: Int) -> ParticipantID? {
        guard fullscreen == nil else { return nil }
        return tiles.last { $0.rect.contains(column: column, row: row) }?.id
    }
}

/// Port of the reference VideoViewLayouter to character cells: a pure function from tiles and a container to
/// one rectangle per visible tile. It never draws.
public enum VideoViewLayouter {
    /// Lays out the self view (nil when hidden) and the peers (join order) in `container`.
    ///
    /// Alone: self fills. One peer: the peer fills and self is a top-right inset a quarter of the width wide,
    /// keeping its aspect. More: an equal grid, ceil(sqrt(n)) tiles along the longer side, split into pages when
    /// tiles would fall below the readable minimum. With `full` (3 or more tiles): it fills the container but for
    /// a strip of up to four small tiles, along the bottom when the container is taller than wide, else the right.
    /// `fullBesideSelf` takes that layout with one peer too (a shared terminal, which the inset would cover).
    public static func layout(
        self selfTile: TileSource?, peers: [TileSource], full: ParticipantID?, page: Int = 0,
        in container: CellRect, options: LayoutOptions = LayoutOptions(), fullBesideSelf: Bool = false
    ) -> VideoLayout {
        let order = (selfTile.map { [$0] } ?? []) + peers
        guard !order.isEmpty, !container.isEmpty else { return .empty }

        if order.count == 1 {
            let only = order[0]
            return VideoLayout(
                tiles: [LayoutTile(id: only.id, rect: container, kind: .grid, number: 1)],
                numbered: [only.id], page: 0, pageCount: 1, pageSize: 1, fullscreen: nil)
        }

        if order.count == 2, let selfTile, !(fullBesideSelf && full == peers[0].id) {
            let peer = peers[0]
            var tiles = [LayoutTile(id: peer.id, rect: container, kind: .grid, number: 2)]
            if let corner = cornerRect(for: selfTile, in: container, options: options) {
                tiles.append(LayoutTile(id: selfTile.id, rect: corner, kind: .corner, number: 1))
            }
            return VideoLayout(
                tiles: tiles, numbered: [selfTile.id, peer.id], page: 0, pageCount: 1, pageSize: 2, fullscreen: nil)
        }

        let pageSize = self.pageSize(tileCount: order.count, in: container, options: options)
        let pageCount = (order.count + pageSize - 1) / pageSize
        let currentPage = min(max(0, page), pageCount - 1)
        let pageStart = currentPage * pageSize
        let pageOrder = Array(order[pageStart..<min(order.count, pageStart + pageSize)])
        let numbered = pageOrder.map(\.id)
        func number(_ id: ParticipantID) -> Int? {
            numbered.firstIndex(of: id).map { $0 + 1 }
        }

        if order.count >= 3 || fullBesideSelf, let full, let fullIndex = order.firstIndex(where: { $0.id == full }) {
            // The strip starts at the current page so that its tiles mostly carry numbers; paging moves it along.
            let others = order.indices.filter { $0 != fullIndex }
            let firstOnPage = others.firstIndex { $0 >= pageStart } ?? 0
            let rotated = Array(others[firstOnPage...] + others[..<firstOnPage])
            let stripIDs = rotated.prefix(max(0, options.stripCapacity)).map { order[$0].id }
            let (fullRect, stripRects) = fullscreenRects(
                stripCount: stripIDs.count, in: container, options: options)
            var tiles = [LayoutTile(id: full, rect: fullRect, kind: .full, number: number(full))]
            for (id, rect) in zip(stripIDs, stripRects) {
                tiles.append(LayoutTile(id: id, rect: rect, kind: .strip, number: number(id)))
            }
            return VideoLayout(
                tiles: tiles, numbered: numbered, page: currentPage, pageCount: pageCount, pageSize: pageSize,
                fullscreen: full)
        }

        let rects = gridRects(count: pageOrder.count, in: container, options: options)
        let tiles = zip(pageOrder, rects).enumerated().map { index, pair in
            LayoutTile(id: pair.0.id, rect: pair.1, kind: .grid, number: index + 1)
        }
        return VideoLayout(
            tiles: tiles, numbered: numbered, page: currentPage, pageCount: pageCount, pageSize: pageSize,
            fullscreen: nil)
    }

    /// Hit-testing: which participant's tile is at a screen cell; nil on empty space or while a tile is fullscreen.
    public static func hitTest(_ layout: VideoLayout, column: Int, row: Int) -> ParticipantID? {
        layout.participant(atColumn: column, row: row)
    }

    /// Rows and columns of the equal grid for `count` tiles: ceil(sqrt(count)) along the visually longer side.
    public static func gridShape(count: Int, in container: CellRect, cellAspect: Double = 2.0) -> (
        columns: Int, rows: Int
    ) {
        guard count > 0 else { return (0, 0) }
        var long = 1
        while long * long < count { long += 1 }
        let short = (count + long - 1) / long
        let wide = Double(container.width) >= Double(container.height) * cellAspect
        return wide ? (long, short) : (short, long)
    }

    /// Tiles per page: the most tiles (up to `tileCount`) whose grid keeps every tile at the readable minimum,
    /// and at least one.
    public static func pageSize(tileCount: Int, in container: CellRect, options: LayoutOptions = LayoutOptions()) -> Int
    {
        guard tileCount > 1 else { return max(1, tileCount) }
        // Tile size shrinks monotonically with the count, so the first count that fits (from the top) is the answer.
        var count = tileCount
        while count > 1 {
            let shape = gridShape(count: count, in: container, cellAspect: options.cellAspect)
            if container.width / shape.columns >= options.minimumTileWidth
                && container.height / shape.rows >= options.minimumTileHeight
            {
                break
            }
            count -= 1
        }
        return count
    }

    /// Equal-grid rectangles for `count` tiles, row by row; a short last row is centred.
    static func gridRects(count: Int, in container: CellRect, options: LayoutOptions) -> [CellRect] {
        let shape = gridShape(count: count, in: container, cellAspect: options.cellAspect)
        guard shape.columns > 0 else { return [] }
        let widths = splitCells(container.width, into: shape.columns)
        let heights = splitCells(container.height, into: shape.rows)
        var rects: [CellRect] = []
        rects.reserveCapacity(count)
        var top = container.y
        for row in 0..<shape.rows {
            let inRow = min(shape.columns, count - row * shape.columns)
            guard inRow > 0 else { break }
            let rowWidth = widths.prefix(inRow).reduce(0, +)
            var left = container.x + (container.width - rowWidth) / 2
            for column in 0..<inRow {
                rects.append(CellRect(x: left, y: top, width: widths[column], height: heights[row]))
                left += widths[column]
            }
            top += heights[row]
        }
        return rects
    }

    /// The self inset over a single peer: top right, a quarter of the width, keeping self's aspect
    /// (or the container's before the first frame). One cell of margin keeps the peer's border visible.
    static func cornerRect(for selfTile: TileSource, in container: CellRect, options: LayoutOptions) -> CellRect? {
        let cellAspect = options.cellAspect > 0 ? options.cellAspect : 2.0
        let containerAspect = Double(container.width) / (Double(container.height) * cellAspect)
        let aspect = selfTile.videoSize?.aspect ?? containerAspect
        var width = container.width / 4
        var height = Int((Double(width) / (aspect * cellAspect)).rounded())
        let maxHeight = container.height - 2
        if height > maxHeight {
            height = maxHeight
            width = min(width, Int((Double(height) * aspect * cellAspect).rounded()))
        }
        guard width >= 4, height >= 2 else { return nil }
        let x = container.maxX - width - (container.width - width >= 1 ? 1 : 0)
        let y = container.y + 1
        return CellRect(x: x, y: y, width: width, height: height)
    }

    /// The fullscreen tile and the strip: strip tiles are a quarter of the container each way (the container's
    /// own shape, like the reference), laid along the bottom of a tall container or down the right of a wide one.
    static func fullscreenRects(stripCount: Int, in container: CellRect, options: LayoutOptions)
        -> (full: CellRect, strip: [CellRect])
    {
        let capacity = max(1, options.stripCapacity)
        guard stripCount > 0 else { return (container, []) }
        let tall = Double(container.height) * options.cellAspect > Double(container.width)
        if tall {
            let stripHeight = container.height / 4
            guard stripHeight >= 1, container.width >= capacity else { return (container, []) }
            let widths = splitCells(container.width, into: capacity)
            let top = container.maxY - stripHeight
            var left = container.x
            var strip: [CellRect] = []
            for index in 0..<stripCount {
                strip.append(CellRect(x: left, y: top, width: widths[index], height: stripHeight))
                left += widths[index]
            }
            let full = CellRect(
                x: container.x, y: container.y, width: container.width, height: container.height - stripHeight)
            return (full, strip)
        } else {
            let stripWidth = container.width / 4
            guard stripWidth >= 1, container.height >= capacity else { return (container, []) }
            let heights = splitCells(container.height, into: capacity)
            let left = container.maxX - stripWidth
            var top = container.y
            var strip: [CellRect] = []
            for index in 0..<stripCount {
                strip.append(CellRect(x: left, y: top, width: stripWidth, height: heights[index]))
                top += heights[index]
            }
            let full = CellRect(
                x: container.x, y: container.y, width: container.width - stripWidth, height: container.height)
            return (full, strip)
        }
    }
}
