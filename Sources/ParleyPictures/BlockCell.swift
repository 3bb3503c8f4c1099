import Foundation

/// One quadrant or sextant cell being chosen: its pixels' colours and exact sums (in scratch the caller owns), and
/// the scoring that picks its block character and two colours (see `VideoCellRenderer.drawBlocks`).
///
/// The methods are inlined into the one loop over a picture's cells: together they are the renderer's hot path.
struct BlockCell {
    typealias Sums = (r: Int, g: Int, b: Int, n: Int)
    /// The scratch words one cell needs.
    static let scratchCount = 4 * 6 + 4 * 6 + 8 * 8 + 4 * 4

    let across: Int
    let down: Int
    /// Pattern pixels per cell, and the pattern with all of them set.
    let count: Int
    let full: Int
    /// Sextant cells also try the quadrant characters.
    let quadrantsToo: Bool
    let mode: VideoColorMode
    /// The pattern glyphs (`VideoCellRenderer.quadrantGlyphs` or `sextantGlyphs`).
    let symbols: [Glyph]
    /// What a one-colour cell shows (in its colour on both sides).
    let uniform = Glyph("▀")
    let boxes: BoxReader?
    let frameWidth: Int
    let frameHeight: Int
    /// Source pixels per tile pixel.
    let scaleX: Double
    let scaleY: Double
    let perceptual: UnsafeBufferPointer<UInt8>
    let paletteRGB: UnsafeBufferPointer<UInt8>
    // Per pixel of the cell: red, green, blue, sort key; then exact sums (red, green, blue, pixel count) per pattern
    // pixel, per band, per strip and per quadrant.
    let red: UnsafeMutablePointer<Int>
    let green: UnsafeMutablePointer<Int>
    let blue: UnsafeMutablePointer<Int>
    let order: UnsafeMutablePointer<Int>
    let pixelR: UnsafeMutablePointer<Int>
    let pixelG: UnsafeMutablePointer<Int>
    let pixelB: UnsafeMutablePointer<Int>
    let pixelN: UnsafeMutablePointer<Int>
    let bandR: UnsafeMutablePointer<Int>
    let bandG: UnsafeMutablePointer<Int>
    let bandB: UnsafeMutablePointer<Int>
    let bandN: UnsafeMutablePointer<Int>
    let stripR: UnsafeMutablePointer<Int>
    let stripG: UnsafeMutablePointer<Int>
    let stripB: UnsafeMutablePointer<Int>
    let stripN: UnsafeMutablePointer<Int>
    let quadR: UnsafeMutablePointer<Int>
    let quadG: UnsafeMutablePointer<Int>
    let quadB: UnsafeMutablePointer<Int>
    let quadN: UnsafeMutablePointer<Int>
    /// The cell's sums: the pattern pixels, the bands and the strips each partition exactly this box.
    var cellTotal: Sums = (0, 0, 0, 0)

    /// A cell of `kind` over `scratch` (`scratchCount` words), read from a frame of `frameWidth` x `frameHeight`
    /// drawn into `area`; `boxes` gives exact sums (nil when the tile's cells are smaller than 4x8 source pixels).
    init(
        kind: PictureCells, mode: VideoColorMode, boxes: BoxReader?, frameWidth: Int, frameHeight: Int,
        area: PictureArea, scratch: UnsafeMutablePointer<Int>, perceptual: UnsafeBufferPointer<UInt8>,
        paletteRGB: UnsafeBufferPointer<UInt8>
    ) {
        across = kind.pixelsAcross
        down = kind.pixelsDown
        count = across * down
        full = (1 << count) - 1
        quadrantsToo = kind == .sextants
        self.mode = mode
        symbols = kind == .sextants ? VideoCellRenderer.sextantGlyphs : VideoCellRenderer.quadrantGlyphs
        self.boxes = boxes
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
        scaleX = Double(frameWidth) / Double(max(1, area.width))
        scaleY = Double(frameHeight) / Double(max(1, area.height))
        self.perceptual = perceptual
        self.paletteRGB = paletteRGB
        red = scratch
        green = red + 6
        blue = red + 12
        order = red + 18
        pixelR = red + 24
        pixelG = pixelR + 6
        pixelB = pixelG + 6
        pixelN = pixelB + 6
        bandR = pixelN + 6
        bandG = bandR + 8
        bandB = bandG + 8
        bandN = bandB + 8
        stripR = bandN + 8
        stripG = stripR + 8
        stripB = stripG + 8
        stripN = stripB + 8
        quadR = stripN + 8
        quadG = quadR + 4
        quadB = quadG + 4
        quadN = quadB + 4
    }

    /// The pattern (set bits in the foreground) and two colours for a cell whose pixels inside the picture are
    /// `inside` (their colours read, and with `exactSums` the cell's exact sums), given the key its slot in `shown`
    /// held (what the terminal shows now).
    @inline(__always)
    func choose(inside: Int, exactSums: Bool, before: UInt32)
        -> (pattern: Int, foreground: (Int, Int, Int), background: (Int, Int, Int))
    {
        if inside != full {
            // A letterbox edge: the picture's pixels in their mean colour over the tile's background.
            return (inside, mean(inside), (0, 0, 0))
        }
        var (pattern, foreground, back) = VideoCellRenderer.split(
            count: count, red: red, green: green, blue: blue, order: order)
        if exactSums && pattern != 0 {
            pattern = bestExactSymbol(pattern)
            (foreground, back) = exactColors(pattern)
        }
        // Keep the symbol shown before unless the new one is clearly better: camera noise would otherwise reshape
        // flat cells every frame (shimmer, and cells the terminal must redraw).
        guard before & (1 << 24) != 0, before & (1 << 8) == 0 else { return (pattern, foreground, back) }
        let old = Int(before & 0xFF)
        guard old != pattern && (exactSums || old < VideoCellRenderer.lowerEighths) else {
            return (pattern, foreground, back)
        }
        let hysteresis = VideoCellRenderer.patternHysteresis
        let keep =
            exactSums
            ? exactScore(old) + Double(hysteresis &* cellTotal.n) / Double(count) >= exactScore(pattern)
            : score(old) &+ hysteresis >= score(pattern)
        guard keep else { return (pattern, foreground, back) }
        if exactSums {
            (foreground, back) = exactColors(old)
        } else if old == 0 {
            foreground = mean(full)
            back = foreground
        } else {
            foreground = mean(old)
            back = mean(full ^ old)
        }
        return (old, foreground, back)
    }

    /// For a cell that is not flat, read as exact sums: the symbol that shows it best, since an eighth block or a
    /// quadrant may place the edge better than the pattern's grid. The best of each family on exact sums; in 256
    /// colours the family winners then compete on the palette colours they will show (scoring every candidate that
    /// way cost a third of the frame rate for nothing more).
    @inline(__always)
    func bestExactSymbol(_ pattern: Int) -> Int {
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
                lowerSymbol = VideoCellRenderer.lowerEighths + k
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
                leftSymbol = VideoCellRenderer.leftEighths + k
            }
        }
        if quadrantsToo {
            for q in VideoCellRenderer.extraQuadrants {
                let f = exactParts(VideoCellRenderer.quadrantShapes &+ q)
                let s = exact(f.r, f.g, f.b, f.n)
                if s > quadrantBest {
                    quadrantBest = s
                    quadrantSymbol = VideoCellRenderer.quadrantShapes &+ q
                }
            }
        }
        if mode == .palette256 {
            best = exactScore(pattern)
            @inline(__always)
            func consider(_ candidate: Int) {
                guard candidate != 0, case let s = exactScore(candidate), s > best else { return }
                best = s
                symbol = candidate
            }
            consider(lowerSymbol)
            consider(leftSymbol)
            consider(quadrantSymbol)
            return symbol
        }
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
        return symbol
    }

    /// The cell as the terminal will show it, for the pattern and colours `choose` found (`edge`: a letterbox edge,
    /// drawn over `background`); keeps what it shows in the slot's three words of `shown` from `slot`.
    @inline(__always)
    func show(
        _ pattern: Int, foreground: (Int, Int, Int), back: (Int, Int, Int), edge: Bool, background: TerminalColor,
        shown: UnsafeMutableBufferPointer<UInt32>, slot: Int
    ) -> Cell {
        var pattern = pattern
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
                foreground.0, foreground.1, foreground.2, before: same ? shown[slot &+ 1] : 0)
        }
        if !edge && mode == .palette256 && pattern != 0 && pattern < VideoCellRenderer.lowerEighths
            && foreShown != backShown
        {
            // Each pixel takes whichever of the two palette colours is nearer to it.
            let fore = 3 &* Int(foreShown & 0xFF)
            let back = 3 &* Int(backShown & 0xFF)
            var assigned = 0
            for k in 0..<count {
                let toFore = VideoCellRenderer.weighted(
                    red[k] &- Int(paletteRGB[fore]), green[k] &- Int(paletteRGB[fore &+ 1]),
                    blue[k] &- Int(paletteRGB[fore &+ 2]))
                let toBack = VideoCellRenderer.weighted(
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
        return pattern == 0
            ? Cell(uniform, style: CellStyle(foreground: backColor, background: backColor))
            : Cell(
                VideoCellRenderer.blockGlyph(pattern, patterns: symbols),
                style: CellStyle(foreground: foreColor, background: backColor))
    }

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
        if symbol < VideoCellRenderer.lowerEighths {
            for k in 0..<count where symbol & (1 << k) != 0 {
                r &+= pixelR[k]
                g &+= pixelG[k]
                b &+= pixelB[k]
                n &+= pixelN[k]
            }
        } else if symbol < VideoCellRenderer.leftEighths {
            for k in (8 - (symbol - VideoCellRenderer.lowerEighths))..<8 {
                r &+= bandR[k]
                g &+= bandG[k]
                b &+= bandB[k]
                n &+= bandN[k]
            }
        } else if symbol < VideoCellRenderer.quadrantShapes {
            for k in 0..<(symbol - VideoCellRenderer.leftEighths) {
                r &+= stripR[k]
                g &+= stripG[k]
                b &+= stripB[k]
                n &+= stripN[k]
            }
        } else {
            let q = symbol &- VideoCellRenderer.quadrantShapes
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
        func average(_ sum: Int, _ n: Int) -> Int { VideoCellRenderer.clamp((sum &+ n / 2) / max(1, n)) }
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
    mutating func readExact(_ leftX: Int, _ topY: Int) -> Bool {
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
        let middle = x0 &+ w / 2
        readPatternPixels(x0, middle, x1, y0, h)
        let all = boxes.corner(x1, y1) &- topRight &- bottomLeft &+ topLeft
        let s = BoxReader.unpack(all)
        cellTotal = (s.r, s.g, s.b, w &* h)
        if quadrantsToo { readQuadrants(x0, middle, x1, y0, y1, all: all) }
        return true
    }

    /// The pattern pixels' means, row by row, of the cell between columns `x0`, `middle`, `x1` from row `y0` over
    /// `h` rows (`across` is 2 for both quadrants and sextants).
    @inline(__always)
    private mutating func readPatternPixels(_ x0: Int, _ middle: Int, _ x1: Int, _ y0: Int, _ h: Int) {
        guard let boxes else { return }
        var left = boxes.corner(x0, y0)
        var centre = boxes.corner(middle, y0)
        var right = boxes.corner(x1, y0)
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
    }

    /// The four quadrants' sums of the cell (the middle row is band edge 4): top left, top, left, then
    /// differences from `all`, the whole cell's sum.
    @inline(__always)
    private mutating func readQuadrants(_ x0: Int, _ middle: Int, _ x1: Int, _ y0: Int, _ y1: Int, all: UInt64) {
        guard let boxes else { return }
        let topLeft = boxes.corner(x0, y0)
        let topRight = boxes.corner(x1, y0)
        let bottomLeft = boxes.corner(x0, y1)
        let middleTop = boxes.corner(middle, y0)
        let half = y0 &+ (y1 &- y0) / 2
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

    /// The colour to show for (r, g, b), given what the slot showed before (0 = nothing).
    @inline(__always)
    func color(_ r: Int, _ g: Int, _ b: Int, before: UInt32) -> (TerminalColor, UInt32) {
        if mode == .trueColor {
            if before != 0 {
                let pr = Int((before >> 16) & 0xFF)
                let pg = Int((before >> 8) & 0xFF)
                let pb = Int(before & 0xFF)
                if VideoCellRenderer.weighted(r &- pr, g &- pg, b &- pb) <= VideoCellRenderer.hysteresis {
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
            let distanceOld = VideoCellRenderer.weighted(
                r &- Int(paletteRGB[3 &* old]), g &- Int(paletteRGB[3 &* old &+ 1]),
                b &- Int(paletteRGB[3 &* old &+ 2]))
            let distanceNew = VideoCellRenderer.weighted(
                r &- Int(paletteRGB[3 &* index]),
                g &- Int(paletteRGB[3 &* index &+ 1]),
                b &- Int(paletteRGB[3 &* index &+ 2]))
            if distanceOld <= distanceNew &+ VideoCellRenderer.hysteresis { index = old }
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
}
