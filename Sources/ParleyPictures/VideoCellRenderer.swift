import ParleyMedia
import ParleyRoom

/// How video pixels become cell colours.
public enum VideoColorMode: Hashable, Sendable {
    /// Exact 24-bit colours (direct-colour terminals).
    case trueColor
    /// Colours of the xterm palette's 240 cube and grey entries.
    case palette256
    /// No colour: luminance as shade characters ' ░▒▓█' (8/16-colour terminals, NO_COLOR).
    case shades

    /// The mode that suits a terminal's colour depth.
    public init(depth: ColorDepth) {
        switch depth {
        case .direct: self = .trueColor
        case .palette256: self = .palette256
        case .ansi8, .ansi16, .monochrome: self = .shades
        }
    }
}

/// Which block characters a picture cell is drawn with: how many pixels one cell shows.
public enum PictureCells: String, Hashable, Sendable, CaseIterable {
    /// '▀': two pixels stacked, one colour each (every terminal and font).
    case halfBlocks = "half"
    /// '▖▗▘▝▚▞▙▛▜▟▌▐▀▄': 2x2 pixels in two colours (Unicode block elements, in nearly every font).
    case quadrants = "quadrant"
    /// U+1FB00–1FB3B: 2x3 pixels in two colours (Unicode 13 "symbols for legacy computing"; needs a font or a
    /// terminal that draws them itself).
    case sextants = "sextant"

    /// Pixels across one cell.
    public var pixelsAcross: Int { self == .halfBlocks ? 1 : 2 }
    /// Pixels down one cell.
    public var pixelsDown: Int { self == .sextants ? 3 : 2 }
}

/// Where a picture lands inside a tile, in tile pixels (`PictureCells.pixelsAcross` per column and
/// `pixelsDown` per row).
public struct PictureArea: Hashable, Sendable {
    /// Left edge in pixels from the tile's left edge.
    public var x: Int
    /// Top edge in pixels from the tile's top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// An area from its position and size in pixels.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// Draws I420 video frames into screen cells with block characters.
///
/// Half blocks: each cell shows two pixels stacked, the top one as the foreground of '▀' and the bottom one as its
/// background. Every such cell is '▀' (or '▄' where only the bottom half is picture, at a letterbox edge), whatever
/// its colours, so text dumps and golden screens of video areas do not depend on the video.
///
/// Quadrants and sextants: each cell shows 2x2 or 2x3 pixels in two colours, the character choosing which pixels
/// take the foreground. The two colours are found per cell: the pixels are ordered along the colour channel that
/// varies most, the split of that order leaving the least weighted squared error wins, and one round of 2-means
/// refines it. A cell whose two colours are nearly equal is drawn as one colour ('▀' in two equal colours). In 256
/// colours each colour is then mapped to the palette perceptually (`Palette.perceptualIndex`).
///
/// A cell is about twice as tall as wide; the frame is scaled to fit keeping its aspect and centred, the rest of the
/// tile in the background colour (letterbox or pillarbox, down to one pixel). Scaling samples the I420 planes
/// directly with a box filter as wide as a tile pixel (`SampleTable`). Colour conversion is BT.601 limited range in
/// integer arithmetic, palette mapping a table lookup, so there is no search and no allocation per pixel. A value
/// type holding reusable scratch tables; keep one per render loop.
public struct VideoCellRenderer: Sendable {
    /// How pixels become colours.
    public let mode: VideoColorMode
    /// Which block characters draw the picture (ignored in `.shades`, which always uses one shade per cell).
    public let cells: PictureCells
    /// Pictures go to the terminal in real pixels (kitty, sixel): the cells get placeholders and the screen a
    /// `PixelTile` (ignored in `.shades`).
    public let pixels: Bool

    // Source positions and weights per tile pixel column and row, for the sizes met lately.
    private var tables = SampleTables()
    // What each cell showed last time, for the colour hysteresis below; reset when the screen size changes.
    // Half blocks: 2 values per cell (top, bottom pixel). Quadrants and sextants: 3 per cell (pattern, foreground,
    // background). Colours are a palette index or an RGB value, with bit 24 set; 0 = nothing yet.
    private var shown: [UInt32] = []
    private var shownWidth = 0
    // Block cells: exact box sums of the frame being drawn.
    private var sums = PlaneSums()

    /// How much closer (weighted squared RGB distance) a new colour must be than the one a pixel already shows
    /// before the pixel changes: about 6 levels on every channel. Camera noise near the boundary between two
    /// palette colours would otherwise make cells flicker between them every frame, which looks bad and makes the
    /// terminal redraw cells that did not really change.
    public static let hysteresis = 9 * 6 * 6

    /// The same for a half-block pixel choosing between two palette colours: how much closer the new one must be.
    /// Between neighbouring palette colours 40 levels apart, `hysteresis` is a band of only about one level of
    /// green, so codec noise flipped pixels between them; three times that keeps about 3 levels. On 300 frames of
    /// the synthetic camera in 149x56 cells: 13 % fewer cells change per frame (1,651 → 1,439) for 0.16 dB of the
    /// drawn picture (docs/benchmarks.md, "What changed for speed"); `PaletteHysteresisTests` keeps the
    /// picture within 0.25 dB of fresh renders.
    static let paletteHysteresis = 3 * hysteresis

    /// A renderer for one colour mode and cell kind.
    public init(mode: VideoColorMode, cells: PictureCells = .halfBlocks, pixels: Bool = false) {
        self.mode = mode
        self.cells = cells
        self.pixels = pixels && mode != .shades
    }

    /// Where a `frameWidth`×`frameHeight` picture lands in a tile of `columns`×`rows` cells, in the pixels of
    /// `cells`.
    public static func pictureArea(
        frameWidth: Int, frameHeight: Int, columns: Int, rows: Int,
        cells: PictureCells = .halfBlocks
    ) -> PictureArea {
        let across = cells.pixelsAcross
        let down = cells.pixelsDown
        let pixelWidth = max(0, columns) * across
        let pixelHeight = max(0, rows) * down
        guard frameWidth > 0, frameHeight > 0, pixelWidth > 0, pixelHeight > 0 else {
            return PictureArea(x: 0, y: 0, width: 0, height: 0)
        }
        // A tile pixel is 1/across of a cell wide and 2/down cell widths tall.
        var width: Int
        var height: Int
        if columns * frameHeight <= 2 * rows * frameWidth {
            width = pixelWidth
            height = (columns * frameHeight * down + frameWidth) / (2 * frameWidth)
        } else {
            height = pixelHeight
            width = (4 * rows * frameWidth * across + frameHeight) / (2 * frameHeight)
        }
        width = min(pixelWidth, max(1, width))
        height = min(pixelHeight, max(1, height))
        return PictureArea(x: (pixelWidth - width) / 2, y: (pixelHeight - height) / 2, width: width, height: height)
    }

    /// Draws a frame scaled into `rect` of the screen (cells outside the screen are skipped), filling what the
    /// picture does not cover with `background`. In pixel mode the cells get blank placeholders and the screen a
    /// `PixelTile` under `key` (the same key for the same tile from frame to frame).
    public mutating func draw(
        _ frame: VideoFrame, into screen: inout Screen, in rect: CellRect,
        background: TerminalColor = .default, key: Int = 0
    ) {
        let visible = rect.intersection(screen.bounds)
        guard !visible.isEmpty else { return }
        if pixels {
            let placeholder = Cell(" ", style: CellStyle(background: background))
            screen.fill(visible, style: placeholder.style)
            let rgb = Palette.rgb(of: background) ?? (0, 0, 0)
            screen.pixelTiles.append(
                PixelTile(
                    key: key, rect: visible, frame: frame,
                    background: PixelTile.RGB(r: rgb.r, g: rgb.g, b: rgb.b),
                    placeholder: placeholder))
            return
        }
        let kind: PictureCells = mode == .shades ? .halfBlocks : cells
        let area = Self.pictureArea(
            frameWidth: frame.width, frameHeight: frame.height,
            columns: rect.width, rows: rect.height, cells: kind)
        let columnTable = tables.table(source: frame.width, chromaSource: frame.chromaWidth, target: area.width)
        let rowTable = tables.table(source: frame.height, chromaSource: frame.chromaHeight, target: area.height)
        let perCell = kind == .halfBlocks ? 2 : 3
        if shownWidth != screen.width || shown.count != perCell * screen.cells.count {
            shown = [UInt32](repeating: 0, count: perCell * screen.cells.count)
            shownWidth = screen.width
        }
        let mode = self.mode
        let frameWidth = frame.width
        let chromaWidth = frame.chromaWidth
        // Exact sums only when a cell covers at least 4x8 source pixels (`drawBlocks`): a picture drawn at or above
        // its source's size (a simulcast layer chosen for the tile) needs no tables.
        let exact =
            kind != .halfBlocks && area.width > 0 && area.height > 0
            && frame.width * kind.pixelsAcross >= 4 * area.width && frame.height * kind.pixelsDown >= 8 * area.height
        if exact { sums.build(frame) }
        let sums = self.sums
        sums.table.withUnsafeBufferPointer { sumTable in
            columnTable.withUnsafeBufferPointer { columnTaps in
                rowTable.withUnsafeBufferPointer { rowTaps in
                    frame.y.withUnsafeBufferPointer { lumaPlane in
                        frame.u.withUnsafeBufferPointer { uPlane in
                            frame.v.withUnsafeBufferPointer { vPlane in
                                shown.withUnsafeMutableBufferPointer { shown in
                                    screen.cells.withUnsafeMutableBufferPointer { screenCells in
                                        let sampler = PixelSampler(
                                            columns: columnTaps, rows: rowTaps, luma: lumaPlane, u: uPlane, v: vPlane,
                                            frameWidth: frameWidth, chromaWidth: chromaWidth)
                                        if kind == .halfBlocks {
                                            let sumCount = PixelSampler.ColumnSums.count(
                                                frameWidth: frameWidth, chromaWidth: chromaWidth)
                                            withUnsafeTemporaryAllocation(of: UInt16.self, capacity: sumCount) {
                                                Self.drawHalfBlocks(
                                                    sampler, mode: mode, area: area, rect: rect, visible: visible,
                                                    screenWidth: screen.width, background: background, shown: shown,
                                                    cells: screenCells,
                                                    columnSums: PixelSampler.ColumnSums(
                                                        $0.baseAddress!, frameWidth: frameWidth,
                                                        chromaWidth: chromaWidth))
                                            }
                                        } else {
                                            let boxes = BoxReader(table: sumTable, stride: frame.width + 1)
                                            Self.drawBlocks(
                                                sampler, boxes: exact ? boxes : nil, frameWidth: frame.width,
                                                frameHeight: frame.height,
                                                kind: kind, mode: mode, area: area, rect: rect, visible: visible,
                                                screenWidth: screen.width, background: background, shown: shown,
                                                cells: screenCells)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        screen.repairWideCharacters(around: visible)
    }

    @inline(__always)
    static func weighted(_ dr: Int, _ dg: Int, _ db: Int) -> Int { 2 &* dr &* dr &+ 4 &* dg &* dg &+ 3 &* db &* db }

    private static func drawHalfBlocks(
        _ sampler: PixelSampler, mode: VideoColorMode, area: PictureArea,
        rect: CellRect, visible: CellRect, screenWidth: Int,
        background: TerminalColor, shown: UnsafeMutableBufferPointer<UInt32>,
        cells: UnsafeMutableBufferPointer<Cell>, columnSums: PixelSampler.ColumnSums
    ) {
        Palette.levelTable.withUnsafeBufferPointer { levels in
            Palette.greyTable.withUnsafeBufferPointer { greys in
                Palette.rgbTable.withUnsafeBufferPointer { paletteRGB in
                    let upper = Glyph("▀")
                    let lower = Glyph("▄")
                    let empty = Cell(Glyph.space, style: CellStyle(background: background))

                    /// The colour shown for a tile pixel of colour `rgb` that lands on screen pixel `slot` (2 per
                    /// cell, top first).
                    @inline(__always)
                    func color(_ rgb: (Int, Int, Int), _ slot: Int) -> TerminalColor {
                        let (r, g, b) = rgb
                        let before = shown[slot]
                        if mode == .trueColor {
                            if before != 0 {
                                let pr = Int((before >> 16) & 0xFF)
                                let pg = Int((before >> 8) & 0xFF)
                                let pb = Int(before & 0xFF)
                                if weighted(r &- pr, g &- pg, b &- pb) <= hysteresis {
                                    return .rgb(UInt8(pr), UInt8(pg), UInt8(pb))
                                }
                            }
                            shown[slot] = 1 << 24 | UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
                            return .rgb(UInt8(r), UInt8(g), UInt8(b))
                        }
                        var index = Int(Palette.nearestIndex(r: r, g: g, b: b, levels: levels, greys: greys))
                        if before != 0 && Int(before & 0xFF) != index {
                            let old = Int(before & 0xFF)
                            let distanceOld = weighted(
                                r &- Int(paletteRGB[3 &* old]), g &- Int(paletteRGB[3 &* old &+ 1]),
                                b &- Int(paletteRGB[3 &* old &+ 2]))
                            let distanceNew = weighted(
                                r &- Int(paletteRGB[3 &* index]), g &- Int(paletteRGB[3 &* index &+ 1]),
                                b &- Int(paletteRGB[3 &* index &+ 2]))
                            if distanceOld <= distanceNew &+ paletteHysteresis { index = old }
                        }
                        shown[slot] = 1 << 24 | UInt32(index)
                        return .palette(UInt8(truncatingIfNeeded: index))
                    }

                    @inline(__always)
                    func ink(_ px: Int, _ py: Int) -> Int {
                        clamp(((sampler.luma(px, py) &- 16) &* 255 &+ 109) / 219)
                    }

                    for row in visible.y..<visible.maxY {
                        let topY = 2 * (row - rect.y) - area.y
                        let bottomY = topY + 1
                        let topInside = topY >= 0 && topY < area.height
                        let bottomInside = bottomY >= 0 && bottomY < area.height
                        let bothInside = topInside && bottomInside && mode != .shades
                        if bothInside {
                            sampler.sumColumns(
                                top: sampler.rowTaps(topY), bottom: sampler.rowTaps(bottomY), into: columnSums)
                        }
                        var index = row * screenWidth + visible.x
                        for column in visible.x..<visible.maxX {
                            defer { index += 1 }
                            let px = column - rect.x - area.x
                            guard px >= 0, px < area.width, topInside || bottomInside else {
                                shown[2 &* index] = 0
                                shown[2 &* index &+ 1] = 0
                                cells[index] = empty
                                continue
                            }
                            if mode == .shades {
                                var total = 0
                                if topInside { total += ink(px, topY) }
                                if bottomInside { total += ink(px, bottomY) }
                                let level = min(4, (total * 5) >> 9)
                                cells[index] = Cell(shadeGlyphs[level], style: CellStyle(background: background))
                            } else if bothInside {
                                let (top, bottom) = sampler.rgbPair(px, columnSums)
                                cells[index] = Cell(
                                    upper,
                                    style: CellStyle(
                                        foreground: color(top, 2 &* index),
                                        background: color(bottom, 2 &* index &+ 1)))
                            } else if topInside {
                                shown[2 &* index &+ 1] = 0
                                cells[index] = Cell(
                                    upper,
                                    style: CellStyle(
                                        foreground: color(sampler.rgb(px, topY), 2 &* index),
                                        background: background))
                            } else {
                                shown[2 &* index] = 0
                                cells[index] = Cell(
                                    lower,
                                    style: CellStyle(
                                        foreground: color(sampler.rgb(px, bottomY), 2 &* index &+ 1),
                                        background: background))
                            }
                        }
                    }
                }
            }
        }
    }

    /// Shade characters from no ink to full ink.
    static let shades: [Character] = [" ", "░", "▒", "▓", "█"]
    static let shadeGlyphs = shades.map { Glyph($0) }

    @inline(__always)
    static func clamp(_ value: Int) -> Int { min(255, max(0, value)) }
}

/// Reads tile pixels out of an I420 frame through the sample tables of both axes.
struct PixelSampler {
    let columns: UnsafeBufferPointer<Int32>
    let rows: UnsafeBufferPointer<Int32>
    let luma: UnsafeBufferPointer<UInt8>
    let u: UnsafeBufferPointer<UInt8>
    let v: UnsafeBufferPointer<UInt8>
    let frameWidth: Int
    let chromaWidth: Int

    /// Where one tile pixel column (or row) reads a plane, and with what weights: always four taps, as the tables
    /// pad unused ones with weight 0 at a valid position, so the sums unroll with no count to read (a third faster
    /// than looping over the used taps alone). Rows hold line offsets into the plane, columns positions in a line.
    struct Taps {
        var at: (Int, Int, Int, Int)
        var weights: (Int, Int, Int, Int)
    }

    /// A tile pixel row's taps in the luma and in the chroma planes, worked out once for every pixel of the row.
    struct RowTaps {
        var luma: Taps
        var chroma: Taps
    }

    /// The taps of table entry `index` (`SampleTable` layout; `base` 0 for luma, 9 for chroma), positions times
    /// `scale`.
    @inline(__always)
    private static func taps(_ table: UnsafeBufferPointer<Int32>, _ index: Int, base: Int, scale: Int) -> Taps {
        let entry = index &* SampleTable.stride &+ base
        return Taps(
            at: (
                Int(table[entry &+ 1]) &* scale, Int(table[entry &+ 2]) &* scale, Int(table[entry &+ 3]) &* scale,
                Int(table[entry &+ 4]) &* scale
            ),
            weights: (Int(table[entry &+ 5]), Int(table[entry &+ 6]), Int(table[entry &+ 7]), Int(table[entry &+ 8])))
    }

    /// The weighted sum of `plane` over four rows and four columns of taps, back in 0…255.
    @inline(__always)
    private static func sum(_ plane: UnsafeBufferPointer<UInt8>, _ rows: Taps, _ columns: Taps) -> Int {
        @inline(__always)
        func line(_ offset: Int) -> Int {
            columns.weights.0 &* Int(plane[offset &+ columns.at.0]) &+ columns.weights.1
                &* Int(plane[offset &+ columns.at.1]) &+ columns.weights.2 &* Int(plane[offset &+ columns.at.2])
                &+ columns.weights.3 &* Int(plane[offset &+ columns.at.3])
        }
        let total =
            line(rows.at.0) &* rows.weights.0 &+ line(rows.at.1) &* rows.weights.1 &+ line(rows.at.2)
            &* rows.weights.2 &+ line(rows.at.3) &* rows.weights.3
        return (total &+ 32768) >> 16
    }

    /// The taps of tile pixel row `py`.
    @inline(__always)
    func rowTaps(_ py: Int) -> RowTaps {
        RowTaps(
            luma: Self.taps(rows, py, base: 0, scale: frameWidth),
            chroma: Self.taps(rows, py, base: 9, scale: chromaWidth))
    }

    /// Weighted Y of tile pixel (px, py).
    @inline(__always)
    func luma(_ px: Int, _ py: Int) -> Int {
        Self.sum(luma, Self.taps(rows, py, base: 0, scale: frameWidth), Self.taps(columns, px, base: 0, scale: 1))
    }

    /// One cell row's sums down the columns, for both of its pixel rows: `lumaTop[c]` is the top pixel row's
    /// weighted sum of luma column `c` over its four tap lines, and so on for the bottom row and both chroma planes.
    /// A tap line's weights sum to 256, so a sum is at most 65,280 and a UInt16 holds it exactly.
    ///
    /// Why: a pixel's value is Σ over rows and columns of weight × sample, and summing down the columns first
    /// (one plain loop along each line of the plane, which the compiler vectorises) leaves four lookups a plane for
    /// each pixel instead of sixteen scattered reads. The sums are the same integers in another order, so the
    /// cells drawn are identical.
    struct ColumnSums {
        let lumaTop: UnsafeMutablePointer<UInt16>
        let lumaBottom: UnsafeMutablePointer<UInt16>
        let uTop: UnsafeMutablePointer<UInt16>
        let vTop: UnsafeMutablePointer<UInt16>
        let uBottom: UnsafeMutablePointer<UInt16>
        let vBottom: UnsafeMutablePointer<UInt16>

        /// Sums in `storage`, which holds at least `ColumnSums.count(frameWidth:chromaWidth:)` values.
        init(_ storage: UnsafeMutablePointer<UInt16>, frameWidth: Int, chromaWidth: Int) {
            lumaTop = storage
            lumaBottom = storage + frameWidth
            uTop = storage + 2 * frameWidth
            vTop = uTop + chromaWidth
            uBottom = vTop + chromaWidth
            vBottom = uBottom + chromaWidth
        }

        /// The values a cell row's sums take.
        static func count(frameWidth: Int, chromaWidth: Int) -> Int { 2 * frameWidth + 4 * chromaWidth }
    }

    /// Fills `sums` for the tile pixel rows `top` and `top + 1`.
    func sumColumns(top: RowTaps, bottom: RowTaps, into sums: ColumnSums) {
        Self.sumColumns(luma, top.luma, count: frameWidth, into: sums.lumaTop)
        Self.sumColumns(luma, bottom.luma, count: frameWidth, into: sums.lumaBottom)
        Self.sumColumns(u, top.chroma, count: chromaWidth, into: sums.uTop)
        Self.sumColumns(v, top.chroma, count: chromaWidth, into: sums.vTop)
        Self.sumColumns(u, bottom.chroma, count: chromaWidth, into: sums.uBottom)
        Self.sumColumns(v, bottom.chroma, count: chromaWidth, into: sums.vBottom)
    }

    private static func sumColumns(
        _ plane: UnsafeBufferPointer<UInt8>, _ rows: Taps, count: Int, into out: UnsafeMutablePointer<UInt16>
    ) {
        guard let base = plane.baseAddress else { return }
        let line0 = base + rows.at.0
        let line1 = base + rows.at.1
        let line2 = base + rows.at.2
        let line3 = base + rows.at.3
        let w0 = UInt16(truncatingIfNeeded: rows.weights.0)
        let w1 = UInt16(truncatingIfNeeded: rows.weights.1)
        let w2 = UInt16(truncatingIfNeeded: rows.weights.2)
        let w3 = UInt16(truncatingIfNeeded: rows.weights.3)
        for column in 0..<count {
            out[column] =
                UInt16(line0[column]) &* w0 &+ UInt16(line1[column]) &* w1 &+ UInt16(line2[column]) &* w2
                &+ UInt16(line3[column]) &* w3
        }
    }

    /// Red, green and blue of tile pixel column `px` in the top and the bottom row of `sums`: four lookups a
    /// plane. The top and bottom values share the column's weights, so each pair goes through one multiplication
    /// in the two 32-bit halves of a word (a weighted sum stays below 2^24).
    @inline(__always)
    func rgbPair(_ px: Int, _ sums: ColumnSums) -> ((Int, Int, Int), (Int, Int, Int)) {
        let lumaColumns = Self.taps(columns, px, base: 0, scale: 1)
        let chromaColumns = Self.taps(columns, px, base: 9, scale: 1)
        @inline(__always)
        func weighted(_ top: UnsafeMutablePointer<UInt16>, _ bottom: UnsafeMutablePointer<UInt16>, _ taps: Taps)
            -> UInt64
        {
            @inline(__always)
            func pair(_ column: Int) -> UInt64 { UInt64(top[column]) | UInt64(bottom[column]) &<< 32 }
            return pair(taps.at.0) &* UInt64(truncatingIfNeeded: taps.weights.0)
                &+ pair(taps.at.1) &* UInt64(truncatingIfNeeded: taps.weights.1)
                &+ pair(taps.at.2) &* UInt64(truncatingIfNeeded: taps.weights.2)
                &+ pair(taps.at.3) &* UInt64(truncatingIfNeeded: taps.weights.3)
        }
        let y = weighted(sums.lumaTop, sums.lumaBottom, lumaColumns)
        let u = weighted(sums.uTop, sums.uBottom, chromaColumns)
        let v = weighted(sums.vTop, sums.vBottom, chromaColumns)
        @inline(__always)
        func top(_ total: UInt64) -> Int { Int(truncatingIfNeeded: ((total & 0xFFFF_FFFF) &+ 32768) &>> 16) }
        @inline(__always)
        func bottom(_ total: UInt64) -> Int { Int(truncatingIfNeeded: ((total &>> 32) &+ 32768) &>> 16) }
        return (Self.convert(top(y), top(u), top(v)), Self.convert(bottom(y), bottom(u), bottom(v)))
    }

    /// Red, green and blue where a row's and a column's taps meet.
    @inline(__always)
    private func rgb(_ row: RowTaps, _ lumaColumns: Taps, _ chromaColumns: Taps) -> (Int, Int, Int) {
        Self.convert(
            Self.sum(luma, row.luma, lumaColumns), Self.sum(u, row.chroma, chromaColumns),
            Self.sum(v, row.chroma, chromaColumns))
    }

    /// Red, green and blue of Y, U and V (BT.601 limited range).
    @inline(__always)
    static func convert(_ y: Int, _ u: Int, _ v: Int) -> (Int, Int, Int) {
        let c = 76284 &* (y &- 16)
        let d = u &- 128
        let e = v &- 128
        return (
            VideoCellRenderer.clamp((c &+ 104595 &* e &+ 32768) >> 16),
            VideoCellRenderer.clamp((c &- 25624 &* d &- 53281 &* e &+ 32768) >> 16),
            VideoCellRenderer.clamp((c &+ 132252 &* d &+ 32768) >> 16)
        )
    }

    /// Red, green and blue of tile pixel (px, py) (BT.601 limited range).
    @inline(__always)
    func rgb(_ px: Int, _ py: Int) -> (Int, Int, Int) {
        rgb(rowTaps(py), Self.taps(columns, px, base: 0, scale: 1), Self.taps(columns, px, base: 9, scale: 1))
    }
}

/// Where to sample the source along one axis, and with what weight, for each target pixel: a box filter as wide
/// as the target pixel (at least one source pixel, which makes enlarging a linear interpolation), with exact
/// overlap weights where the box touches at most 4 source pixels and 4 evenly spread point samples beyond that.
/// Point samples (the way this renderer scaled before) made a picture drawn at nearly its own size look like
/// nearest-neighbour scaling: a 160x120 picture drawn 149 pixels wide lost ~10 dB against an exact box filter.
enum SampleTable {
    /// Int32 values per target pixel: luma count, 4 positions, 4 weights; then the same for the chroma plane.
    static let stride = 18

    /// `stride` values per target pixel. Weights sum to 256; unused slots have weight 0.
    static func make(source: Int, chromaSource: Int, target: Int) -> [Int32] {
        var entries: [Int32] = []
        guard target > 0, source > 0, chromaSource > 0 else { return entries }
        entries.reserveCapacity(stride * target)
        for index in 0..<target {
            append(index: index, source: source, target: target, to: &entries)
            append(index: index, source: chromaSource, target: target, to: &entries)
        }
        return entries
    }

    private static func append(index: Int, source: Int, target: Int, to entries: inout [Int32]) {
        let scale = Double(source) / Double(target)
        let width = max(1, scale)
        let centre = (Double(index) + 0.5) * scale
        let start = centre - width / 2
        let end = centre + width / 2
        let first = Int(start.rounded(.down))
        let last = Int(end.rounded(.up)) - 1
        var taps: [(position: Int, weight: Double)] = []
        if last - first + 1 <= 4 {
            for position in first...last {
                let overlap = min(end, Double(position + 1)) - max(start, Double(position))
                if overlap > 1e-9 { taps.append((position, overlap)) }
            }
        } else {
            for k in 0..<4 { taps.append((Int(start + (Double(k) + 0.5) * width / 4), 1)) }
        }
        // Taps past an edge read the edge pixel: merge them, then round the weights to 256 in all.
        var merged: [(position: Int, weight: Double)] = []
        for tap in taps {
            let position = min(source - 1, max(0, tap.position))
            if let previous = merged.last, previous.position == position {
                merged[merged.count - 1].weight += tap.weight
            } else {
                merged.append((position, tap.weight))
            }
        }
        let total = merged.reduce(0) { $0 + $1.weight }
        var weights = merged.map { Int32(($0.weight / total * 256).rounded()) }
        let heaviest = weights.indices.max { weights[$0] < weights[$1] } ?? 0
        weights[heaviest] += 256 - weights.reduce(0, +)
        entries.append(Int32(merged.count))
        for k in 0..<4 { entries.append(Int32(k < merged.count ? merged[k].position : merged[0].position)) }
        for k in 0..<4 { entries.append(k < merged.count ? weights[k] : 0) }
    }
}

/// The sample tables of the last sizes drawn (a call draws a handful of tiles at a few sizes), so a frame only
/// builds tables when a tile or a picture changes size. Bounded: emptied when `limit` sizes are held.
struct SampleTables: Sendable {
    private struct Key: Hashable { var source, chromaSource, target: Int }
    private var tables: [Key: [Int32]] = [:]
    static let limit = 64

    mutating func table(source: Int, chromaSource: Int, target: Int) -> [Int32] {
        let key = Key(source: source, chromaSource: chromaSource, target: target)
        if let table = tables[key] { return table }
        if tables.count >= Self.limit { tables.removeAll(keepingCapacity: true) }
        let table = SampleTable.make(source: source, chromaSource: chromaSource, target: target)
        tables[key] = table
        return table
    }
}
