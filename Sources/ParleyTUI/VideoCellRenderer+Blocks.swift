// One file, one thing: choosing a block character and its two colours per cell for the quadrant and sextant
// modes. The shape tables, the summed-area scoring and the writer share hot inner loops that are tuned together.
import Foundation
import ParleyRoom

/// The block characters of the quadrant and sextant picture modes, and the shapes of every block character a
/// picture can be read back from.
public enum BlockSymbols {
    /// The quadrant character for each 4-bit pattern (bit 0 top left, 1 top right, 2 bottom left, 3 bottom right;
    /// a set bit shows the foreground).
    public static let quadrants: [Character] = [
        " ", "▘", "▝", "▀", "▖", "▌", "▞", "▛", "▗", "▚", "▐", "▜", "▄", "▙", "▟", "█",
    ]

    /// The sextant character for each 6-bit pattern (bits row by row from the top left, as Unicode numbers the
    /// sextants). Patterns that exist as older block elements use those: ' ', '▌', '▐', '█'.
    public static let sextants: [Character] = (0..<64).map { pattern in
        switch pattern {
        case 0: return " "
        case 21: return "▌"
        case 42: return "▐"
        case 63: return "█"
        default:
            let offset = pattern - 1 - (pattern > 21 ? 1 : 0) - (pattern > 42 ? 1 : 0)
            return Character(Unicode.Scalar(0x1FB00 + UInt32(offset))!)
        }
    }

    /// A part of a cell in the foreground colour: left, top, right, bottom as fractions of the cell, and how much
    /// of it the foreground covers (below 1 for the shade characters).
    public struct Part: Hashable, Sendable {
        public var left, top, right, bottom, coverage: Double
    }

    /// The foreground parts of a block character as a terminal draws it (nil for characters that are not blocks):
    /// half, quadrant, sextant and eighth blocks, shades. A space has none.
    public static func parts(of scalar: Unicode.Scalar) -> [Part]? {
        func box(_ left: Double, _ top: Double, _ right: Double, _ bottom: Double, _ coverage: Double = 1) -> Part {
            Part(left: left, top: top, right: right, bottom: bottom, coverage: coverage)
        }
        func pattern(_ bits: Int, across: Int, down: Int) -> [Part] {
            (0..<(across * down)).compactMap { k in
                guard bits & (1 << k) != 0 else { return nil }
                let column = Double(k % across)
                let row = Double(k / across)
                return box(
                    column / Double(across), row / Double(down), (column + 1) / Double(across),
                    (row + 1) / Double(down))
            }
        }
        let value = scalar.value
        switch value {
        case 0x20: return []
        case 0x2580: return [box(0, 0, 1, 0.5)]
        case 0x2581...0x2588: return [box(0, 1 - Double(value - 0x2580) / 8, 1, 1)]
        case 0x2589...0x258F: return [box(0, 0, Double(0x2590 - value) / 8, 1)]
        case 0x2590: return [box(0.5, 0, 1, 1)]
        case 0x2591...0x2593: return [box(0, 0, 1, 1, Double(value - 0x2590) / 4)]
        case 0x2594: return [box(0, 0, 1, 0.125)]
        case 0x2595: return [box(0.875, 0, 1, 1)]
        case 0x2596...0x259F:
            let bits = quadrants.firstIndex { $0.unicodeScalars.first == scalar } ?? 0
            return pattern(bits, across: 2, down: 2)
        case 0x1FB00...0x1FB3B:
            let bits = sextants.firstIndex { $0.unicodeScalars.first == scalar } ?? 0
            return pattern(bits, across: 2, down: 3)
        default: return nil
        }
    }
}

extension VideoCellRenderer {
    /// Symbol ids past the pattern numbers: `lowerEighths + k` is the lower k/8 block ('▁'…'▇'),
    /// `leftEighths + k` the left k/8 block ('▏'…'▉'), k = 1…7, and in sextant cells `quadrantShapes + q` the
    /// quadrant character of pattern q (`BlockSymbols.quadrants`).
    static let lowerEighths = 64, leftEighths = 72, quadrantShapes = 80

    /// The quadrant patterns a sextant cell also tries: one corner, and the two diagonals. The other quadrants
    /// are halves (a sextant or an eighth block already) or inverses of these.
    static let extraQuadrants = [1, 2, 4, 8, 6, 9]

    /// The glyph of a symbol id: a quadrant or sextant pattern (from `patterns`), or an eighth block.
    @inline(__always)
    static func blockGlyph(_ symbol: Int, patterns: [Glyph]) -> Glyph {
        if symbol < lowerEighths { return patterns[symbol] }
        if symbol < leftEighths { return Glyph(Unicode.Scalar(UInt32(0x2580 + symbol - lowerEighths))!) }
        if symbol < quadrantShapes { return Glyph(Unicode.Scalar(UInt32(0x2590 - (symbol - leftEighths)))!) }
        return quadrantGlyphs[symbol - quadrantShapes]
    }

    /// `BlockSymbols.quadrants` and `.sextants` as glyphs.
    static let quadrantGlyphs = BlockSymbols.quadrants.map { Glyph($0) }
    static let sextantGlyphs = BlockSymbols.sextants.map { Glyph($0) }

    /// Draws quadrant or sextant cells, with eighth blocks where they fit better: see the type's comment.
    ///
    /// A cell inside the picture that covers at least 4x8 source pixels is read as exact sums (`boxes`, nil when
    /// the tile's cells are smaller) over three partitions of its source pixels: its pattern pixels, 8 horizontal
    /// bands and 8 vertical strips.
    /// Every candidate (the pattern the two-colour split finds, each lower eighth, each left eighth) is scored by
    /// the sum over its two parts of |part sum|² / part size, which is the cell's squared error subtracted from
    /// one constant for all three partitions, so the shapes compete exactly. Smaller cells (a picture drawn
    /// larger than its source) are sampled through `sampler` and drawn with patterns only.
    static func drawBlocks(
        _ sampler: PixelSampler, boxes: BoxReader?, frameWidth: Int, frameHeight: Int,
        kind: PictureCells, mode: VideoColorMode, area: PictureArea, rect: CellRect,
        visible: CellRect, screenWidth: Int, background: TerminalColor,
        shown: UnsafeMutableBufferPointer<UInt32>, cells: UnsafeMutableBufferPointer<Cell>
    ) {
        let across = kind.pixelsAcross
        let down = kind.pixelsDown
        let count = across * down
        let full = (1 << count) - 1
        let symbols = kind == .sextants ? sextantGlyphs : quadrantGlyphs
        let empty = Cell(" ", style: CellStyle(background: background))
        let uniform = Glyph("▀")
        let scaleX = Double(frameWidth) / Double(max(1, area.width))
        let scaleY = Double(frameHeight) / Double(max(1, area.height))
        var scratch = [Int](repeating: 0, count: 4 * 6 + 4 * 6 + 8 * 8 + 4 * 4)
        scratch.withUnsafeMutableBufferPointer { scratch in
            Palette.perceptualTable.withUnsafeBufferPointer { perceptual in
                Palette.rgbTable.withUnsafeBufferPointer { paletteRGB in
                    // Per pixel of the cell: red, green, blue, sort key; then exact sums (red, green, blue, pixel count)
                    // per pattern pixel, per band, per strip and per quadrant.
                    let red = scratch.baseAddress!
                    let green = red + 6
                    let blue = red + 12
                    let order = red + 18
                    let pixelR = red + 24
                    let pixelG = pixelR + 6
                    let pixelB = pixelG + 6
                    let pixelN = pixelB + 6
                    let bandR = pixelN + 6
                    let bandG = bandR + 8
                    let bandB = bandG + 8
                    let bandN = bandB + 8
                    let stripR = bandN + 8
                    let stripG = stripR + 8
                    let stripB = stripG + 8
                    let stripN = stripB + 8
                    let quadR = stripN + 8
                    let quadG = quadR + 4
                    let quadB = quadG + 4
                    let quadN = quadB + 4
                    let quadrantsToo = kind == .sextants
                    // The cell's sums: the pattern pixels, the bands and the strips each partition exactly this box.
                    typealias Sums = (r: Int, g: Int, b: Int, n: Int)
                    var cellTotal: Sums = (0, 0, 0, 0)

                    /// A part's term of a partition's score: |weighted sum|² / size (Double: a cell scores up to 21
                    /// candidates, and integer division was a third of this function's time).
                    @inline(__always)
                    func part(_ r: Int, _ g: Int, _ b: Int, _ n: Int) -> Double {
                        n > 0 ? Double(2 &* r &* r &+ 4 &* g &* g &+ 3 &* b &* b) / Double(n) : 0
                    }

                    /// A part's term in 256 colours, where it shows the palette colour its mean maps to (q) rather than
                    /// the mean: 2 S·q − n|q|² (weighted), which is also the part's squared error subtracted from the sum
                    /// of its pixels' |p|², so it ranks shapes by what the terminal will show.
                    @inline(__always)
                    func palettePart(_ r: Int, _ g: Int, _ b: Int, _ n: Int) -> Double {
                        guard n > 0 else { return 0 }
                        // Means rounded through one reciprocal: three integer divisions per part were most of the cost.
                        let reciprocal = 1 / Double(n)
                        let meanR = Int(Double(r) * reciprocal + 0.5)
                        let meanG = Int(Double(g) * reciprocal + 0.5)
                        let meanB = Int(Double(b) * reciprocal + 0.5)
                        let index = 3 &* Int(perceptual[(meanR >> 3) << 11 | (meanG >> 2) << 5 | meanB >> 3])
                        let qr = Int(paletteRGB[index])
                        let qg = Int(paletteRGB[index &+ 1])
                        let qb = Int(paletteRGB[index &+ 2])
                        let red = 2 &* qr &* (2 &* r &- n &* qr)
                        let green = 4 &* qg &* (2 &* g &- n &* qg)
                        let blue = 3 &* qb &* (2 &* b &- n &* qb)
                        return Double(red &+ green &+ blue)
                    }

                    /// Exact score of a foreground part with sums (r, g, b, n), the rest of the cell the background: the
                    /// sum of the two parts' terms, which is the cell's squared error subtracted from a constant (higher
                    /// is better). `count` / the cell's pixel count turns differences into the units of `score`.
                    @inline(__always)
                    func exact(_ r: Int, _ g: Int, _ b: Int, _ n: Int) -> Double {
                        let total = cellTotal
                        return part(r, g, b, n) + part(total.r &- r, total.g &- g, total.b &- b, total.n &- n)
                    }

                    /// The sums over a symbol's foreground part.
                    @inline(__always)
                    func exactParts(_ symbol: Int) -> Sums {
                        var r = 0
                        var g = 0
                        var b = 0
                        var n = 0
                        if symbol < lowerEighths {
                            for k in 0..<count where symbol & (1 << k) != 0 {
                                r &+= pixelR[k]
                                g &+= pixelG[k]
                                b &+= pixelB[k]
                                n &+= pixelN[k]
                            }
                        } else if symbol < leftEighths {
                            for k in (8 - (symbol - lowerEighths))..<8 {
                                r &+= bandR[k]
                                g &+= bandG[k]
                                b &+= bandB[k]
                                n &+= bandN[k]
                            }
                        } else if symbol < quadrantShapes {
                            for k in 0..<(symbol - leftEighths) {
                                r &+= stripR[k]
                                g &+= stripG[k]
                                b &+= stripB[k]
                                n &+= stripN[k]
                            }
                        } else {
                            let q = symbol &- quadrantShapes
                            for k in 0..<4 where q & (1 << k) != 0 {
                                r &+= quadR[k]
                                g &+= quadG[k]
                                b &+= quadB[k]
                                n &+= quadN[k]
                            }
                        }
                        return (r, g, b, n)
                    }

                    /// The score of a symbol as the terminal will show it: `exact`, or in 256 colours the error of the
                    /// palette colours its two parts map to (same units).
                    @inline(__always)
                    func exactScore(_ symbol: Int) -> Double {
                        let f = exactParts(symbol)
                        guard mode == .palette256 else { return exact(f.r, f.g, f.b, f.n) }
                        let total = cellTotal
                        return palettePart(f.r, f.g, f.b, f.n)
                            + palettePart(total.r &- f.r, total.g &- f.g, total.b &- f.b, total.n &- f.n)
                    }

                    /// The foreground and background colours of a symbol from the exact sums.
                    @inline(__always)
                    func exactColors(_ symbol: Int) -> ((Int, Int, Int), (Int, Int, Int)) {
                        let total = cellTotal
                        let f = symbol == 0 ? total : exactParts(symbol)
                        @inline(__always)
                        func average(_ sum: Int, _ n: Int) -> Int { clamp((sum &+ n / 2) / max(1, n)) }
                        let fore = (average(f.r, f.n), average(f.g, f.n), average(f.b, f.n))
                        let rn = total.n &- f.n
                        guard symbol != 0, rn > 0 else { return (fore, fore) }
                        return (
                            fore,
                            (
                                average(total.r &- f.r, rn), average(total.g &- f.g, rn),
                                average(total.b &- f.b, rn)
                            )
                        )
                    }

                    /// Reads the exact sums of the cell whose tile pixels start at (leftX, topY); false when the cell
                    /// covers fewer than 4x8 source pixels (or more than the sums hold exactly).
                    @inline(__always)
                    func readExact(_ leftX: Int, _ topY: Int) -> Bool {
                        guard let boxes else { return false }
                        let x0 = max(0, Int((Double(leftX) * scaleX).rounded()))
                        let x1 = min(frameWidth, Int((Double(leftX &+ across) * scaleX).rounded()))
                        let y0 = max(0, Int((Double(topY) * scaleY).rounded()))
                        let y1 = min(frameHeight, Int((Double(topY &+ down) * scaleY).rounded()))
                        let w = x1 &- x0
                        let h = y1 &- y0
                        guard w >= 4, h >= 8, w &* h <= PlaneSums.maxBoxPixels else { return false }
                        // Every part is a difference of packed sums from the cell's top left corner: each band edge's
                        // and each strip edge's corners are read once, and each pattern pixel's grid point once.
                        let topLeft = boxes.corner(x0, y0)
                        let topRight = boxes.corner(x1, y0)
                        let bottomLeft = boxes.corner(x0, y1)
                        /// The 8 slices of the cell along one axis, from `start` over `length` (each `width` wide the other
                        /// way): `upTo(edge)` is the packed sum from the cell's start to that edge.
                        @inline(__always)
                        func slices(
                            start: Int, length: Int, width: Int, _ r: UnsafeMutablePointer<Int>,
                            _ g: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>,
                            _ n: UnsafeMutablePointer<Int>, upTo: (Int) -> UInt64
                        ) {
                            var before: UInt64 = 0
                            var edge = start
                            for k in 0..<8 {
                                let next = start &+ (k &+ 1) &* length / 8
                                let sum = upTo(next)
                                (r[k], g[k], b[k]) = BoxReader.unpack(sum &- before)
                                n[k] = width &* (next &- edge)
                                before = sum
                                edge = next
                            }
                        }
                        slices(start: y0, length: h, width: w, bandR, bandG, bandB, bandN) {
                            boxes.corner(x1, $0) &- boxes.corner(x0, $0) &- topRight &+ topLeft
                        }
                        slices(start: x0, length: w, width: h, stripR, stripG, stripB, stripN) {
                            boxes.corner($0, y1) &- boxes.corner($0, y0) &- bottomLeft &+ topLeft
                        }
                        // Pattern pixels: `across` is 2 for both quadrants and sextants.
                        let middle = x0 &+ w / 2
                        let middleTop = boxes.corner(middle, y0)
                        var left = topLeft
                        var centre = middleTop
                        var right = topRight
                        var top = y0
                        for j in 0..<down {
                            let bottom = y0 &+ (j &+ 1) &* h / down
                            let nextLeft = boxes.corner(x0, bottom)
                            let nextCentre = boxes.corner(middle, bottom)
                            let nextRight = boxes.corner(x1, bottom)
                            let k = 2 &* j
                            (pixelR[k], pixelG[k], pixelB[k]) = BoxReader.unpack(
                                nextCentre &- centre &- nextLeft &+ left)
                            pixelN[k] = (middle &- x0) &* (bottom &- top)
                            (pixelR[k &+ 1], pixelG[k &+ 1], pixelB[k &+ 1]) = BoxReader.unpack(
                                nextRight &- right &- nextCentre &+ centre)
                            pixelN[k &+ 1] = (x1 &- middle) &* (bottom &- top)
                            left = nextLeft
                            centre = nextCentre
                            right = nextRight
                            top = bottom
                        }
                        for k in 0..<count {
                            red[k] = pixelR[k] / pixelN[k]
                            green[k] = pixelG[k] / pixelN[k]
                            blue[k] = pixelB[k] / pixelN[k]
                        }
                        let all = boxes.corner(x1, y1) &- topRight &- bottomLeft &+ topLeft
                        let s = BoxReader.unpack(all)
                        cellTotal = (s.r, s.g, s.b, w &* h)
                        if quadrantsToo {
                            // The four quadrants (the middle row is band edge 4): top left, top, left, then differences.
                            let half = y0 &+ h / 2
                            let centreCorner = boxes.corner(middle, half)
                            let leftMiddle = boxes.corner(x0, half)
                            let topLeftQuadrant = centreCorner &- middleTop &- leftMiddle &+ topLeft
                            let topHalf = boxes.corner(x1, half) &- topRight &- leftMiddle &+ topLeft
                            let leftHalf = boxes.corner(middle, y1) &- middleTop &- bottomLeft &+ topLeft
                            let topRightQuadrant = topHalf &- topLeftQuadrant
                            let bottomLeftQuadrant = leftHalf &- topLeftQuadrant
                            let bottomRightQuadrant = all &- topHalf &- leftHalf &+ topLeftQuadrant
                            @inline(__always)
                            func store(_ k: Int, _ sum: UInt64, _ width: Int, _ height: Int) {
                                (quadR[k], quadG[k], quadB[k]) = BoxReader.unpack(sum)
                                quadN[k] = width &* height
                            }
                            store(0, topLeftQuadrant, middle &- x0, half &- y0)
                            store(1, topRightQuadrant, x1 &- middle, half &- y0)
                            store(2, bottomLeftQuadrant, middle &- x0, y1 &- half)
                            store(3, bottomRightQuadrant, x1 &- middle, y1 &- half)
                        }
                        return true
                    }

                    /// The colour to show for (r, g, b), given what the slot showed before (0 = nothing).
                    @inline(__always)
                    func color(_ r: Int, _ g: Int, _ b: Int, before: UInt32) -> (TerminalColor, UInt32) {
                        if mode == .trueColor {
                            if before != 0 {
                                let pr = Int((before >> 16) & 0xFF)
                                let pg = Int((before >> 8) & 0xFF)
                                let pb = Int(before & 0xFF)
                                if weighted(r &- pr, g &- pg, b &- pb) <= hysteresis {
                                    return (.rgb(UInt8(pr), UInt8(pg), UInt8(pb)), before)
                                }
                            }
                            return (
                                .rgb(UInt8(r), UInt8(g), UInt8(b)),
                                1 << 24 | UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
                            )
                        }
                        var index = Int(perceptual[(r >> 3) << 11 | (g >> 2) << 5 | b >> 3])
                        if before != 0 && Int(before & 0xFF) != index {
                            let old = Int(before & 0xFF)
                            let distanceOld = weighted(
                                r &- Int(paletteRGB[3 &* old]), g &- Int(paletteRGB[3 &* old &+ 1]),
                                b &- Int(paletteRGB[3 &* old &+ 2]))
                            let distanceNew = weighted(
                                r &- Int(paletteRGB[3 &* index]),
                                g &- Int(paletteRGB[3 &* index &+ 1]),
                                b &- Int(paletteRGB[3 &* index &+ 2]))
                            if distanceOld <= distanceNew &+ hysteresis { index = old }
                        }
                        return (.palette(UInt8(truncatingIfNeeded: index)), 1 << 24 | UInt32(index))
                    }

                    /// How well a pattern fits the cell's pixels: the sum over its two groups of |group sum|² / size
                    /// (weighted), which is the total squared error subtracted from a constant, so higher is better.
                    @inline(__always)
                    func score(_ bits: Int) -> Int {
                        var r = 0
                        var g = 0
                        var b = 0
                        var n = 0
                        var allR = 0
                        var allG = 0
                        var allB = 0
                        for k in 0..<count {
                            allR &+= red[k]
                            allG &+= green[k]
                            allB &+= blue[k]
                            if bits & (1 << k) != 0 {
                                r &+= red[k]
                                g &+= green[k]
                                b &+= blue[k]
                                n &+= 1
                            }
                        }
                        let m = count &- n
                        let restR = allR &- r
                        let restG = allG &- g
                        let restB = allB &- b
                        var total = m > 0 ? (2 &* restR &* restR &+ 4 &* restG &* restG &+ 3 &* restB &* restB) / m : 0
                        if n > 0 { total &+= (2 &* r &* r &+ 4 &* g &* g &+ 3 &* b &* b) / n }
                        return total
                    }

                    @inline(__always)
                    func mean(_ bits: Int) -> (Int, Int, Int) {
                        var r = 0
                        var g = 0
                        var b = 0
                        var n = 0
                        for k in 0..<count where bits & (1 << k) != 0 {
                            r &+= red[k]
                            g &+= green[k]
                            b &+= blue[k]
                            n &+= 1
                        }
                        return ((r &+ n / 2) / n, (g &+ n / 2) / n, (b &+ n / 2) / n)
                    }

                    for row in visible.y..<visible.maxY {
                        var index = row * screenWidth + visible.x
                        let topY = (row - rect.y) * down - area.y
                        for column in visible.x..<visible.maxX {
                            defer { index += 1 }
                            let leftX = (column - rect.x) * across - area.x
                            var inside = 0
                            for k in 0..<count {
                                let px = leftX &+ k % across
                                let py = topY &+ k / across
                                guard px >= 0, px < area.width, py >= 0, py < area.height else { continue }
                                inside |= 1 << k
                            }
                            let exactSums = inside == full && readExact(leftX, topY)
                            if !exactSums {
                                for k in 0..<count where inside & (1 << k) != 0 {
                                    (red[k], green[k], blue[k]) = sampler.rgb(leftX &+ k % across, topY &+ k / across)
                                }
                            }
                            let slot = 3 &* index
                            guard inside != 0 else {
                                shown[slot] = 0
                                cells[index] = empty
                                continue
                            }
                            // The pattern (set bits in the foreground) and the two colours.
                            var pattern: Int
                            var foreground: (Int, Int, Int)
                            var back: (Int, Int, Int)
                            if inside != full {
                                // A letterbox edge: the picture's pixels in their mean colour over the tile's background.
                                pattern = inside
                                foreground = mean(inside)
                                back = (0, 0, 0)
                            } else {
                                (pattern, foreground, back) = split(
                                    count: count, red: red, green: green, blue: blue,
                                    order: order)
                                if exactSums && pattern != 0 {
                                    // Not flat: an eighth block or a quadrant may place the edge better than the pattern's
                                    // grid. The best of each family on exact sums; in 256 colours the family winners then
                                    // compete on the palette colours they will show (scoring every candidate that way cost
                                    // a third of the frame rate for nothing more).
                                    let f = exactParts(pattern)
                                    var best = exact(f.r, f.g, f.b, f.n)
                                    var symbol = pattern
                                    var lowerBest = -Double.infinity
                                    var lowerSymbol = 0
                                    var leftBest = -Double.infinity
                                    var leftSymbol = 0
                                    var quadrantBest = -Double.infinity
                                    var quadrantSymbol = 0
                                    var lower: Sums = (0, 0, 0, 0)
                                    var left: Sums = (0, 0, 0, 0)
                                    for t in (1..<8).reversed() {
                                        let k = 8 - t  // lower k eighths: bands t..<8
                                        lower.r &+= bandR[t]
                                        lower.g &+= bandG[t]
                                        lower.b &+= bandB[t]
                                        lower.n &+= bandN[t]
                                        let s = exact(lower.r, lower.g, lower.b, lower.n)
                                        if s > lowerBest {
                                            lowerBest = s
                                            lowerSymbol = lowerEighths + k
                                        }
                                    }
                                    for k in 1..<8 {  // left k eighths: strips 0..<k
                                        let j = k - 1
                                        left.r &+= stripR[j]
                                        left.g &+= stripG[j]
                                        left.b &+= stripB[j]
                                        left.n &+= stripN[j]
                                        let s = exact(left.r, left.g, left.b, left.n)
                                        if s > leftBest {
                                            leftBest = s
                                            leftSymbol = leftEighths + k
                                        }
                                    }
                                    if quadrantsToo {
                                        for q in extraQuadrants {
                                            let f = exactParts(quadrantShapes &+ q)
                                            let s = exact(f.r, f.g, f.b, f.n)
                                            if s > quadrantBest {
                                                quadrantBest = s
                                                quadrantSymbol = quadrantShapes &+ q
                                            }
                                        }
                                    }
                                    if mode == .palette256 {
                                        best = exactScore(pattern)
                                        @inline(__always)
                                        func consider(_ candidate: Int) {
                                            guard candidate != 0, case let s = exactScore(candidate), s > best else {
                                                return
                                            }
                                            best = s
                                            symbol = candidate
                                        }
                                        consider(lowerSymbol)
                                        consider(leftSymbol)
                                        consider(quadrantSymbol)
                                    } else {
                                        if lowerBest > best {
                                            best = lowerBest
                                            symbol = lowerSymbol
                                        }
                                        if leftBest > best {
                                            best = leftBest
                                            symbol = leftSymbol
                                        }
                                        if quadrantBest > best {
                                            best = quadrantBest
                                            symbol = quadrantSymbol
                                        }
                                    }
                                    pattern = symbol
                                    (foreground, back) = exactColors(symbol)
                                }
                                // Keep the symbol shown before unless the new one is clearly better: camera noise would
                                // otherwise reshape flat cells every frame (shimmer, and cells the terminal must redraw).
                                let before = shown[3 &* index]
                                if before & (1 << 24) != 0, before & (1 << 8) == 0 {
                                    let old = Int(before & 0xFF)
                                    if old != pattern && (exactSums || old < lowerEighths) {
                                        let keep =
                                            exactSums
                                            ? exactScore(old) + Double(patternHysteresis &* cellTotal.n) / Double(count)
                                                >= exactScore(pattern)
                                            : score(old) &+ patternHysteresis >= score(pattern)
                                        if keep {
                                            pattern = old
                                            if exactSums {
                                                (foreground, back) = exactColors(old)
                                            } else if old == 0 {
                                                foreground = mean(full)
                                                back = foreground
                                            } else {
                                                foreground = mean(old)
                                                back = mean(full ^ old)
                                            }
                                        }
                                    }
                                }
                            }
                            let edge = inside != full
                            let key = UInt32(pattern | (edge ? 1 << 8 : 0)) | 1 << 24
                            let same = shown[slot] == key
                            var (backColor, backShown) =
                                edge
                                ? (background, UInt32(0))
                                : color(back.0, back.1, back.2, before: same ? shown[slot &+ 2] : 0)
                            var foreColor = backColor
                            var foreShown = backShown
                            if pattern != 0 {
                                (foreColor, foreShown) = color(
                                    foreground.0, foreground.1, foreground.2,
                                    before: same ? shown[slot &+ 1] : 0)
                            }
                            if !edge && mode == .palette256 && pattern != 0 && pattern < lowerEighths
                                && foreShown != backShown
                            {
                                // Each pixel takes whichever of the two palette colours is nearer to it.
                                let fore = 3 &* Int(foreShown & 0xFF)
                                let back = 3 &* Int(backShown & 0xFF)
                                var assigned = 0
                                for k in 0..<count {
                                    let toFore = weighted(
                                        red[k] &- Int(paletteRGB[fore]), green[k] &- Int(paletteRGB[fore &+ 1]),
                                        blue[k] &- Int(paletteRGB[fore &+ 2]))
                                    let toBack = weighted(
                                        red[k] &- Int(paletteRGB[back]), green[k] &- Int(paletteRGB[back &+ 1]),
                                        blue[k] &- Int(paletteRGB[back &+ 2]))
                                    if toFore < toBack { assigned |= 1 << k }
                                }
                                if assigned & 1 != 0 {
                                    assigned ^= full
                                    swap(&foreColor, &backColor)
                                    swap(&foreShown, &backShown)
                                }
                                pattern = assigned
                            }
                            if !edge && (foreShown == backShown || pattern == 0) {
                                pattern = 0
                                foreColor = backColor
                                foreShown = backShown
                            }
                            shown[slot] = UInt32(pattern | (edge ? 1 << 8 : 0)) | 1 << 24
                            shown[slot &+ 1] = foreShown
                            shown[slot &+ 2] = backShown
                            cells[index] =
                                pattern == 0
                                ? Cell(uniform, style: CellStyle(foreground: backColor, background: backColor))
                                : Cell(
                                    blockGlyph(pattern, patterns: symbols),
                                    style: CellStyle(foreground: foreColor, background: backColor))
                        }
                    }
                }
            }
        }
    }

    /// How much less squared error (weighted, summed over the cell's pixels) a new pattern must leave than the one
    /// a cell shows before the cell changes shape: one pixel about 6 levels off on every channel.
    static let patternHysteresis = hysteresis

    /// How far apart (weighted squared RGB distance) a cell's two colours must be before it shows two: about 2
    /// levels on every channel. Splitting cells of a gently shaded area into two close colours draws the shading
    /// more smoothly (+1.5 dB on the call picture over a threshold of 6 levels).
    static let splitThreshold = 9 * 2 * 2

    /// The two colours that show a cell's `count` pixels best: the pattern of pixels in the foreground (never
    /// including pixel 0; 0 when one colour will do), the foreground and the background colour.
    @inline(__always)
    static func split(
        count: Int, red: UnsafeMutablePointer<Int>, green: UnsafeMutablePointer<Int>,
        blue: UnsafeMutablePointer<Int>, order: UnsafeMutablePointer<Int>
    )
        -> (pattern: Int, foreground: (Int, Int, Int), background: (Int, Int, Int))
    {
        var minR = 255
        var maxR = 0
        var minG = 255
        var maxG = 0
        var minB = 255
        var maxB = 0
        var sumR = 0
        var sumG = 0
        var sumB = 0
        for k in 0..<count {
            minR = min(minR, red[k])
            maxR = max(maxR, red[k])
            sumR &+= red[k]
            minG = min(minG, green[k])
            maxG = max(maxG, green[k])
            sumG &+= green[k]
            minB = min(minB, blue[k])
            maxB = max(maxB, blue[k])
            sumB &+= blue[k]
        }
        let half = count / 2
        let average = ((sumR + half) / count, (sumG + half) / count, (sumB + half) / count)
        let spreadR = 2 * (maxR - minR) * (maxR - minR)
        let spreadG = 4 * (maxG - minG) * (maxG - minG)
        let spreadB = 3 * (maxB - minB) * (maxB - minB)
        guard max(spreadR, spreadG, spreadB) > splitThreshold else { return (0, average, average) }
        let axis = spreadG >= spreadR && spreadG >= spreadB ? green : spreadR >= spreadB ? red : blue
        // Pixels in order along the axis (insertion sort of at most 6), then the best cut of that order.
        for k in 0..<count {
            var position = k
            while position > 0 && axis[order[position - 1]] > axis[k] {
                order[position] = order[position - 1]
                position -= 1
            }
            order[position] = k
        }
        var aR = 0
        var aG = 0
        var aB = 0
        var bestScore = -1.0
        var pattern = 0
        var bestPattern = 0
        for cut in 1..<count {
            let k = order[cut - 1]
            aR &+= red[k]
            aG &+= green[k]
            aB &+= blue[k]
            pattern |= 1 << k
            let bR = sumR - aR
            let bG = sumG - aG
            let bB = sumB - aB
            let score =
                Double(2 * aR * aR + 4 * aG * aG + 3 * aB * aB) / Double(cut)
                + Double(2 * bR * bR + 4 * bG * bG + 3 * bB * bB) / Double(count - cut)
            if score > bestScore {
                bestScore = score
                bestPattern = pattern
            }
        }
        // One round of 2-means: every pixel to the nearer of the two means.
        func means(_ bits: Int) -> ((Int, Int, Int), (Int, Int, Int)) {
            var r = 0
            var g = 0
            var b = 0
            var n = 0
            for k in 0..<count where bits & (1 << k) != 0 {
                r &+= red[k]
                g &+= green[k]
                b &+= blue[k]
                n &+= 1
            }
            let m = count - n
            return (
                ((r + n / 2) / n, (g + n / 2) / n, (b + n / 2) / n),
                ((sumR - r + m / 2) / m, (sumG - g + m / 2) / m, (sumB - b + m / 2) / m)
            )
        }
        var (inner, outer) = means(bestPattern)
        var refined = 0
        for k in 0..<count {
            let toInner = weighted(red[k] - inner.0, green[k] - inner.1, blue[k] - inner.2)
            let toOuter = weighted(red[k] - outer.0, green[k] - outer.1, blue[k] - outer.2)
            if toInner < toOuter { refined |= 1 << k }
        }
        let full = (1 << count) - 1
        if refined != 0 && refined != full && refined != bestPattern {
            bestPattern = refined
            (inner, outer) = means(refined)
        }
        guard weighted(inner.0 - outer.0, inner.1 - outer.1, inner.2 - outer.2) > splitThreshold else {
            return (0, average, average)
        }
        // Pixel 0 always in the background, so a pattern and its inverse never both occur.
        return bestPattern & 1 == 0 ? (bestPattern, inner, outer) : (full ^ bestPattern, outer, inner)
    }
}

extension Palette {
    /// The palette index (16–255) perceptually nearest to a colour: nearest in the OKLab colour space, where equal
    /// distances look about equally different (nearest by RGB distance turns dark saturated colours grey and
    /// skin tones pink). Indexed by red >> 3 << 11 | green >> 2 << 5 | blue >> 3 (64 KiB, built on first use).
    static let perceptualTable: [UInt8] = {
        let candidates = (16..<256).map { index -> (index: UInt8, lab: (Double, Double, Double)) in
            let rgb = rgb(ofIndex: UInt8(index))
            return (UInt8(index), oklab(Int(rgb.r), Int(rgb.g), Int(rgb.b)))
        }
        let greys = candidates.filter { $0.index >= 232 }
        var table = [UInt8](repeating: 0, count: 1 << 16)
        for entry in 0..<(1 << 16) {
            // Each entry stands for the colours whose top bits it holds; it is matched at its bits spread over
            // 0…255, so black and white map to themselves.
            let r = ((entry >> 11) * 255 + 15) / 31
            let g = (((entry >> 5) & 63) * 255 + 31) / 63
            let b = ((entry & 31) * 255 + 15) / 31
            let lab = oklab(r, g, b)
            // Only the cube colours next to the nearest level on each channel can win, and the greys.
            let lr = Int(levelTable[r])
            let lg = Int(levelTable[g])
            let lb = Int(levelTable[b])
            var best = 16
            var bestDistance = Double.infinity
            func consider(_ candidate: (index: UInt8, lab: (Double, Double, Double))) {
                let dl = lab.0 - candidate.lab.0
                let da = lab.1 - candidate.lab.1
                let db = lab.2 - candidate.lab.2
                let distance = dl * dl + da * da + db * db
                if distance < bestDistance {
                    bestDistance = distance
                    best = Int(candidate.index)
                }
            }
            for cr in max(0, lr - 1)...min(5, lr + 1) {
                for cg in max(0, lg - 1)...min(5, lg + 1) {
                    for cb in max(0, lb - 1)...min(5, lb + 1) { consider(candidates[36 * cr + 6 * cg + cb]) }
                }
            }
            for grey in greys { consider(grey) }
            table[entry] = UInt8(best)
        }
        return table
    }()

    /// The nearest palette index (16–255) to a colour, chosen perceptually (see `perceptualTable`).
    public static func perceptualIndex(r: UInt8, g: UInt8, b: UInt8) -> UInt8 {
        perceptualTable[Int(r >> 3) << 11 | Int(g >> 2) << 5 | Int(b >> 3)]
    }

    /// OKLab (Björn Ottosson, 2020) of an sRGB colour.
    static func oklab(_ r: Int, _ g: Int, _ b: Int) -> (Double, Double, Double) {
        func linear(_ value: Int) -> Double {
            let c = Double(value) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let lr = linear(r)
        let lg = linear(g)
        let lb = linear(b)
        let l = cbrt(0.4122214708 * lr + 0.5363325363 * lg + 0.0514459929 * lb)
        let m = cbrt(0.2119034982 * lr + 0.6806995451 * lg + 0.1073969566 * lb)
        let s = cbrt(0.0883024619 * lr + 0.2817188376 * lg + 0.6299787005 * lb)
        return (
            0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
            1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
            0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s
        )
    }
}
