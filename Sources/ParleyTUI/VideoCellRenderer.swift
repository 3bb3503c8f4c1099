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
/// A cell is about twice as tall as wide, so a w×h-cell tile holds w×2h square pixels; the frame is scaled to fit
/// keeping its aspect and centred, with the rest of the tile in the background colour (letterbox or pillarbox,
/// down to half a cell). Scaling samples the I420 planes directly: each tile pixel averages up to 4×4 source
/// pixels spread over the area it covers. Colour conversion is BT.601 limited range in integer arithmetic, and
/// palette mapping is one lookup in a precomputed table, so there is no search and no allocation per pixel.
/// A value type holding reusable scratch tables; keep one per render loop.
public struct VideoCellRenderer: Sendable {
    /// How pixels become colours.
    public let mode: VideoColorMode

    // Per tile pixel column: up to 4 luma x positions, and how many. The same for rows. Reused between frames.
    private var columnSamples: [Int32] = []
    private var columnCounts: [Int32] = []
    private var rowSamples: [Int32] = []
    private var rowCounts: [Int32] = []

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
        Self.fillSamples(&columnSamples, &columnCounts, source: frame.width, target: area.width)
        Self.fillSamples(&rowSamples, &rowCounts, source: frame.height, target: area.height)

        let mode = self.mode
        let frameWidth = frame.width, chromaWidth = frame.chromaWidth
        let screenWidth = screen.width
        columnSamples.withUnsafeBufferPointer { colX in
        columnCounts.withUnsafeBufferPointer { colN in
        rowSamples.withUnsafeBufferPointer { rowY in
        rowCounts.withUnsafeBufferPointer { rowN in
        frame.y.withUnsafeBufferPointer { lumaPlane in
        frame.u.withUnsafeBufferPointer { uPlane in
        frame.v.withUnsafeBufferPointer { vPlane in
        Palette.nearestTable.withUnsafeBufferPointer { nearest in
        screen.cells.withUnsafeMutableBufferPointer { cells in
            let upper: Character = "▀", lower: Character = "▄", space: Character = " "
            let empty = Cell(space, style: CellStyle(background: background))

            /// Average Y, U, V of tile pixel (px, py) of the picture.
            @inline(__always)
            func sample(_ px: Int, _ py: Int) -> (y: Int, u: Int, v: Int) {
                let nx = Int(colN[px]), ny = Int(rowN[py])
                var sumY = 0, sumU = 0, sumV = 0
                for j in 0..<ny {
                    let sy = Int(rowY[py &* 4 &+ j])
                    let lumaRow = sy &* frameWidth
                    let chromaRow = (sy >> 1) &* chromaWidth
                    for i in 0..<nx {
                        let sx = Int(colX[px &* 4 &+ i])
                        sumY &+= Int(lumaPlane[lumaRow &+ sx])
                        let c = chromaRow &+ (sx >> 1)
                        sumU &+= Int(uPlane[c])
                        sumV &+= Int(vPlane[c])
                    }
                }
                let reciprocal = Self.reciprocals[nx &* ny]
                return ((sumY &* reciprocal) >> 16, (sumU &* reciprocal) >> 16, (sumV &* reciprocal) >> 16)
            }

            @inline(__always)
            func color(_ p: (y: Int, u: Int, v: Int)) -> TerminalColor {
                let c = 76284 &* (p.y &- 16), d = p.u &- 128, e = p.v &- 128
                let r = Self.clamp((c &+ 104595 &* e &+ 32768) >> 16)
                let g = Self.clamp((c &- 25624 &* d &- 53281 &* e &+ 32768) >> 16)
                let b = Self.clamp((c &+ 132252 &* d &+ 32768) >> 16)
                if mode == .trueColor { return .rgb(UInt8(r), UInt8(g), UInt8(b)) }
                return .palette(nearest[(r >> 2) << 12 | (g >> 2) << 6 | (b >> 2)])
            }

            @inline(__always)
            func luminance(_ y: Int) -> Int { Self.clamp(((y &- 16) &* 255 &+ 109) / 219) }

            for row in visible.row..<visible.endRow {
                let topY = 2 * (row - rect.row) - area.y, bottomY = topY + 1
                let topInside = topY >= 0 && topY < area.height
                let bottomInside = bottomY >= 0 && bottomY < area.height
                var index = row * screenWidth + visible.column
                for column in visible.column..<visible.endColumn {
                    defer { index += 1 }
                    let px = column - rect.column - area.x
                    guard px >= 0, px < area.width, topInside || bottomInside else {
                        cells[index] = empty
                        continue
                    }
                    if mode == .shades {
                        var ink = 0
                        if topInside { ink += luminance(sample(px, topY).y) }
                        if bottomInside { ink += luminance(sample(px, bottomY).y) }
                        let level = min(4, (ink * 5) >> 9)
                        cells[index] = Cell(Self.shades[level], style: CellStyle(background: background))
                    } else if topInside && bottomInside {
                        let style = CellStyle(foreground: color(sample(px, topY)),
                                              background: color(sample(px, bottomY)))
                        cells[index] = Cell(upper, style: style)
                    } else if topInside {
                        cells[index] = Cell(upper, style: CellStyle(foreground: color(sample(px, topY)),
                                                                    background: background))
                    } else {
                        cells[index] = Cell(lower, style: CellStyle(foreground: color(sample(px, bottomY)),
                                                                    background: background))
                    }
                }
            }
        }}}}}}}}}
        screen.repairWideCharacters(around: visible)
    }

    /// Shade characters from no ink to full ink.
    static let shades: [Character] = [" ", "░", "▒", "▓", "█"]

    @inline(__always)
    private static func clamp(_ value: Int) -> Int { min(255, max(0, value)) }

    /// 65536 / n rounded, for averaging 1…16 samples with a multiply.
    private static let reciprocals: [Int] = (0...16).map { $0 == 0 ? 0 : (65536 + $0 / 2) / $0 }

    /// For each of `target` tile pixels along one axis, up to 4 source positions spread over the source pixels it
    /// covers (one position when enlarging).
    private static func fillSamples(_ samples: inout [Int32], _ counts: inout [Int32], source: Int, target: Int) {
        samples.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
        guard target > 0 else { return }
        for index in 0..<target {
            let start = index * source / target
            let end = max(start + 1, (index + 1) * source / target)
            let span = end - start
            let count = min(4, span)
            counts.append(Int32(count))
            for k in 0..<4 {
                let position = k < count ? start + ((2 * k + 1) * span) / (2 * count) : start
                samples.append(Int32(min(source - 1, position)))
            }
        }
    }
}
