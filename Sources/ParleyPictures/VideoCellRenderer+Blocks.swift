// The quadrant and sextant modes: the block characters, the loop over a picture's cells (each chosen by
// `BlockCell`), the two-colour split of a cell's pixels, and the perceptual palette table.
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
        let empty = Cell(" ", style: CellStyle(background: background))
        var scratch = [Int](repeating: 0, count: BlockCell.scratchCount)
        scratch.withUnsafeMutableBufferPointer { scratch in
            Palette.perceptualTable.withUnsafeBufferPointer { perceptual in
                Palette.rgbTable.withUnsafeBufferPointer { paletteRGB in
                    var block = BlockCell(
                        kind: kind, mode: mode, boxes: boxes, frameWidth: frameWidth, frameHeight: frameHeight,
                        area: area, scratch: scratch.baseAddress!, perceptual: perceptual, paletteRGB: paletteRGB)
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
                            let exactSums = inside == full && block.readExact(leftX, topY)
                            if !exactSums {
                                for k in 0..<count where inside & (1 << k) != 0 {
                                    (block.red[k], block.green[k], block.blue[k]) = sampler.rgb(
                                        leftX &+ k % across, topY &+ k / across)
                                }
                            }
                            let slot = 3 &* index
                            guard inside != 0 else {
                                shown[slot] = 0
                                cells[index] = empty
                                continue
                            }
                            let choice = block.choose(inside: inside, exactSums: exactSums, before: shown[slot])
                            cells[index] = block.show(
                                choice.pattern, foreground: choice.foreground, back: choice.background,
                                edge: inside != full, background: background, shown: shown, slot: slot)
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
