import ParleyMedia

/// How video pixels become cell colours.
public enum VideoColorMode: Hashable, Sendable {
    /// Exact 24-bit colours (direct-colour terminals).
    case trueColor
    /// The nearest of the 240 cube and grey colours of the xterm palette.
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

/// Where a picture lands inside a tile, in tile pixels: one column wide and half a row tall each.
public struct PictureArea: Hashable, Sendable {
    /// Left edge in pixels from the tile's left edge.
    public var x: Int
    /// Top edge in pixels (half rows) from the tile's top edge.
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

/// Draws I420 video frames into screen cells with upper-half blocks: each cell shows two pixels stacked, the top
/// one as the foreground of '▀' and the bottom one as its background.
///
/// Every picture cell is '▀' (or '▄' where only the bottom half is picture, at a letterbox edge), whatever its
/// colours, so text dumps and golden screens of video areas do not depend on the video. (Drawing some cells as
/// ' ', '█' or a swapped '▄' to keep the left neighbour's colour pair saved curses only ~7% of its colour changes
/// on moving video; not worth content-dependent goldens.)
///
/// A cell is about twice as tall as wide, so a w×h-cell tile holds w×2h square pixels; the frame is scaled to fit
/// keeping its aspect and centred, with the rest of the tile in the background colour (letterbox or pillarbox,
/// down to half a cell). Scaling samples the I420 planes directly: each tile pixel averages up to 4×4 source
/// pixels spread over the area it covers. Colour conversion is BT.601 limited range in integer arithmetic, and
/// palette mapping is one lookup in a precomputed table, so there is no search and no allocation per pixel.
/// A value type holding reusable scratch tables; keep one per render loop.
public struct VideoCellRenderer: Sendable {
    /// How pixels become colours.
    public let mode: VideoColorMode

    // Per tile pixel column: up to 4 luma x positions and up to 2 chroma x positions, with their counts. The same
    // for rows. Reused between frames.
    private var columns = SampleTable()
    private var rows = SampleTable()
    // What each pixel of the screen showed last time (two per cell, 0 = nothing yet): a palette index or an RGB
    // value with bit 24 set. Kept for the colour hysteresis below; reset when the screen size changes.
    private var shown: [UInt32] = []
    private var shownWidth = 0

    /// How much closer (weighted squared RGB distance) a new colour must be than the one a pixel already shows
    /// before the pixel changes: about 6 levels on every channel. Camera noise near the boundary between two
    /// palette colours would otherwise make cells flicker between them every frame, which looks bad and makes the
    /// terminal redraw cells that did not really change.
    public static let hysteresis = 9 * 6 * 6

    /// A renderer for one colour mode.
    public init(mode: VideoColorMode) {
        self.mode = mode
    }

    /// Where a `frameWidth`×`frameHeight` picture lands in a tile of `columns`×`rows` cells.
    public static func pictureArea(frameWidth: Int, frameHeight: Int, columns: Int, rows: Int) -> PictureArea {
        let pixelWidth = max(0, columns), pixelHeight = max(0, rows) * 2
        guard frameWidth > 0, frameHeight > 0, pixelWidth > 0, pixelHeight > 0 else {
            return PictureArea(x: 0, y: 0, width: 0, height: 0)
        }
        var width: Int, height: Int
        if pixelWidth * frameHeight <= pixelHeight * frameWidth {
            width = pixelWidth
            height = (frameHeight * pixelWidth * 2 + frameWidth) / (2 * frameWidth)
        } else {
            height = pixelHeight
            width = (frameWidth * pixelHeight * 2 + frameHeight) / (2 * frameHeight)
        }
        width = min(pixelWidth, max(1, width))
        height = min(pixelHeight, max(1, height))
        return PictureArea(x: (pixelWidth - width) / 2, y: (pixelHeight - height) / 2, width: width, height: height)
    }

    /// Draws a frame scaled into `rect` of the screen (cells outside the screen are skipped), filling what the
    /// picture does not cover with `background`.
    public mutating func draw(_ frame: VideoFrame, into screen: inout Screen, in rect: ScreenRect,
                              background: TerminalColor = .default) {
        let visible = rect.intersection(screen.bounds)
        guard !visible.isEmpty else { return }
        let area = Self.pictureArea(frameWidth: frame.width, frameHeight: frame.height,
                                    columns: rect.width, rows: rect.height)
        columns.fill(source: frame.width, target: area.width)
        rows.fill(source: frame.height, target: area.height)

        let mode = self.mode
        let frameWidth = frame.width, chromaWidth = frame.chromaWidth
        let screenWidth = screen.width
        if shownWidth != screen.width || shown.count != 2 * screen.cells.count {
            shown = [UInt32](repeating: 0, count: 2 * screen.cells.count)
            shownWidth = screen.width
        }
        columns.luma.withUnsafeBufferPointer { colX in
        columns.chroma.withUnsafeBufferPointer { colCX in
        columns.counts.withUnsafeBufferPointer { colN in
        rows.luma.withUnsafeBufferPointer { rowY in
        rows.chroma.withUnsafeBufferPointer { rowCY in
        rows.counts.withUnsafeBufferPointer { rowN in
        frame.y.withUnsafeBufferPointer { lumaPlane in
        frame.u.withUnsafeBufferPointer { uPlane in
        frame.v.withUnsafeBufferPointer { vPlane in
        Palette.levelTable.withUnsafeBufferPointer { levels in
        Palette.greyTable.withUnsafeBufferPointer { greys in
        Self.reciprocals.withUnsafeBufferPointer { reciprocals in
        Palette.rgbTable.withUnsafeBufferPointer { paletteRGB in
        shown.withUnsafeMutableBufferPointer { shown in
        screen.cells.withUnsafeMutableBufferPointer { cells in
            let upper: Character = "▀", lower: Character = "▄", space: Character = " "
            let empty = Cell(space, style: CellStyle(background: background))

            /// Average Y of tile pixel (px, py): up to 4x4 samples spread over the source area it covers.
            @inline(__always)
            func luma(_ px: Int, _ py: Int) -> Int {
                let nx = Int(colN[px &* 2]), ny = Int(rowN[py &* 2])
                var sum = 0
                for j in 0..<ny {
                    let line = Int(rowY[py &* 4 &+ j]) &* frameWidth
                    for i in 0..<nx { sum &+= Int(lumaPlane[line &+ Int(colX[px &* 4 &+ i])]) }
                }
                return (sum &* reciprocals[nx &* ny]) >> 16
            }

            /// Average U and V of tile pixel (px, py): up to 2x2 samples of the half-resolution chroma planes.
            @inline(__always)
            func chroma(_ px: Int, _ py: Int) -> (u: Int, v: Int) {
                let nx = Int(colN[px &* 2 &+ 1]), ny = Int(rowN[py &* 2 &+ 1])
                var sumU = 0, sumV = 0
                for j in 0..<ny {
                    let line = Int(rowCY[py &* 2 &+ j]) &* chromaWidth
                    for i in 0..<nx {
                        let c = line &+ Int(colCX[px &* 2 &+ i])
                        sumU &+= Int(uPlane[c])
                        sumV &+= Int(vPlane[c])
                    }
                }
                let reciprocal = reciprocals[nx &* ny]
                return ((sumU &* reciprocal) >> 16, (sumV &* reciprocal) >> 16)
            }

            @inline(__always)
            func weighted(_ dr: Int, _ dg: Int, _ db: Int) -> Int { 2 &* dr &* dr &+ 4 &* dg &* dg &+ 3 &* db &* db }

            /// The colour of tile pixel (px, py), which lands on screen pixel `slot` (2 per cell, top first).
            @inline(__always)
            func color(_ px: Int, _ py: Int, _ slot: Int) -> TerminalColor {
                let y = luma(px, py), (u, v) = chroma(px, py)
                let c = 76284 &* (y &- 16), d = u &- 128, e = v &- 128
                let r = Self.clamp((c &+ 104595 &* e &+ 32768) >> 16)
                let g = Self.clamp((c &- 25624 &* d &- 53281 &* e &+ 32768) >> 16)
                let b = Self.clamp((c &+ 132252 &* d &+ 32768) >> 16)
                let before = shown[slot]
                if mode == .trueColor {
                    if before != 0 {
                        let pr = Int((before >> 16) & 0xFF), pg = Int((before >> 8) & 0xFF), pb = Int(before & 0xFF)
                        if weighted(r &- pr, g &- pg, b &- pb) <= Self.hysteresis {
                            return .rgb(UInt8(pr), UInt8(pg), UInt8(pb))
                        }
                    }
                    shown[slot] = 1 << 24 | UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
                    return .rgb(UInt8(r), UInt8(g), UInt8(b))
                }
                var index = Int(Palette.nearestIndex(r: r, g: g, b: b, levels: levels, greys: greys))
                if before != 0 && Int(before & 0xFF) != index {
                    let old = Int(before & 0xFF)
                    let distanceOld = weighted(r &- Int(paletteRGB[3 &* old]), g &- Int(paletteRGB[3 &* old &+ 1]),
                                               b &- Int(paletteRGB[3 &* old &+ 2]))
                    let distanceNew = weighted(r &- Int(paletteRGB[3 &* index]), g &- Int(paletteRGB[3 &* index &+ 1]),
                                               b &- Int(paletteRGB[3 &* index &+ 2]))
                    if distanceOld <= distanceNew &+ Self.hysteresis { index = old }
                }
                shown[slot] = 1 << 24 | UInt32(index)
                return .palette(UInt8(truncatingIfNeeded: index))
            }

            @inline(__always)
            func ink(_ px: Int, _ py: Int) -> Int { Self.clamp(((luma(px, py) &- 16) &* 255 &+ 109) / 219) }

            for row in visible.row..<visible.endRow {
                let topY = 2 * (row - rect.row) - area.y, bottomY = topY + 1
                let topInside = topY >= 0 && topY < area.height
                let bottomInside = bottomY >= 0 && bottomY < area.height
                var index = row * screenWidth + visible.column
                for column in visible.column..<visible.endColumn {
                    defer { index += 1 }
                    let px = column - rect.column - area.x
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
                        cells[index] = Cell(Self.shades[level], style: CellStyle(background: background))
                    } else if topInside && bottomInside {
                        cells[index] = Cell(upper, style: CellStyle(foreground: color(px, topY, 2 &* index),
                                                                    background: color(px, bottomY, 2 &* index &+ 1)))
                    } else if topInside {
                        shown[2 &* index &+ 1] = 0
                        cells[index] = Cell(upper, style: CellStyle(foreground: color(px, topY, 2 &* index),
                                                                    background: background))
                    } else {
                        shown[2 &* index] = 0
                        cells[index] = Cell(lower, style: CellStyle(foreground: color(px, bottomY, 2 &* index &+ 1),
                                                                    background: background))
                    }
                }
            }
        }}}}}}}}}}}}}}}
        screen.repairWideCharacters(around: visible)
    }

    /// Shade characters from no ink to full ink.
    static let shades: [Character] = [" ", "░", "▒", "▓", "█"]

    @inline(__always)
    private static func clamp(_ value: Int) -> Int { min(255, max(0, value)) }

    /// 65536 / n rounded, for averaging 1…16 samples with a multiply.
    private static let reciprocals: [Int] = (0...16).map { $0 == 0 ? 0 : (65536 + $0 / 2) / $0 }
}

/// Where to sample the source along one axis for each tile pixel: up to 4 luma positions spread over the source
/// pixels the tile pixel covers (one when enlarging) and up to 2 positions in the half-resolution chroma plane.
struct SampleTable: Sendable {
    /// 4 luma positions per tile pixel (unused slots repeat the first).
    var luma: [Int32] = []
    /// 2 chroma positions per tile pixel.
    var chroma: [Int32] = []
    /// Luma count and chroma count per tile pixel.
    var counts: [Int32] = []

    mutating func fill(source: Int, target: Int) {
        luma.removeAll(keepingCapacity: true)
        chroma.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
        guard target > 0 else { return }
        let chromaSize = (source + 1) / 2
        for index in 0..<target {
            let start = index * source / target
            let end = max(start + 1, (index + 1) * source / target)
            let span = end - start
            let lumaCount = min(4, span)
            for k in 0..<4 {
                let position = k < lumaCount ? start + ((2 * k + 1) * span) / (2 * lumaCount) : start
                luma.append(Int32(min(source - 1, position)))
            }
            let chromaStart = start / 2, chromaSpan = (end - 1) / 2 - chromaStart + 1
            let chromaCount = min(2, chromaSpan)
            for k in 0..<2 {
                let position = k < chromaCount
                    ? chromaStart + ((2 * k + 1) * chromaSpan) / (2 * chromaCount) : chromaStart
                chroma.append(Int32(min(chromaSize - 1, position)))
            }
            counts.append(Int32(lumaCount))
            counts.append(Int32(chromaCount))
        }
    }
}
